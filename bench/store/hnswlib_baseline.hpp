#ifndef RUVLLM_BENCH_STORE_HNSWLIB_BASELINE_HPP
#define RUVLLM_BENCH_STORE_HNSWLIB_BASELINE_HPP

// hnswlib (Debian's libhnswlib-dev, header-only) as a baseline of the store
// benchmarks, behind an opaque interface: its unit is compiled with
// -march=native (as hnswlib is meant to be built) while the benchmark unit
// uses runtime dispatch like any consumer of ruvllm.

#include <cstddef>
#include <cstdint>

namespace ruvllm::bench::hnswlib_baseline {

struct index;

/// Inner-product space over normalized vectors (cosine), M and
/// ef_construction as in hnswlib; addPoint from `threads` threads.
index* build(const float* data, std::size_t n, std::size_t dim, std::size_t m, std::size_t ef_construction,
             unsigned threads = 1);
void set_ef(index* ix, std::size_t ef);
/// Writes the labels of the k nearest to out, closest first.
void search(index* ix, const float* query, std::size_t k, std::uint64_t* out);
void save(index* ix, const char* path);
index* load(const char* path, std::size_t dim);
void destroy(index* ix);

}  // namespace ruvllm::bench::hnswlib_baseline

#endif  // RUVLLM_BENCH_STORE_HNSWLIB_BASELINE_HPP
