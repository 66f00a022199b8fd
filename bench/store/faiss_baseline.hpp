#ifndef RUVLLM_BENCH_STORE_FAISS_BASELINE_HPP
#define RUVLLM_BENCH_STORE_FAISS_BASELINE_HPP

// FAISS IndexHNSWFlat (Debian's libfaiss-dev, a static library built for
// baseline x86-64) as a baseline of the store benchmarks, behind an opaque
// interface so that only its unit sees the FAISS headers and OpenMP.

#include <cstddef>
#include <cstdint>

namespace ruvllm::bench::faiss_baseline {

struct index;

/// IndexHNSWFlat with the inner-product metric over normalized vectors
/// (cosine), M and efConstruction as given; built on `threads` OpenMP threads.
index* build(const float* data, std::size_t n, std::size_t dim, std::size_t m, std::size_t ef_construction,
             unsigned threads = 1);
void set_ef(index* ix, std::size_t ef);
/// Writes the labels of the k nearest to out, closest first (one thread).
void search(index* ix, const float* query, std::size_t k, std::uint64_t* out);
void save(index* ix, const char* path);
index* load(const char* path);
void destroy(index* ix);

}  // namespace ruvllm::bench::faiss_baseline

#endif  // RUVLLM_BENCH_STORE_FAISS_BASELINE_HPP
