// FAISS behind the opaque interface of faiss_baseline.hpp.

#include "store/faiss_baseline.hpp"

#include <faiss/IndexHNSW.h>
#include <faiss/index_io.h>
#include <omp.h>

#include <memory>

namespace ruvllm::bench::faiss_baseline {

struct index {
  std::unique_ptr<faiss::Index> owner;  // an IndexHNSWFlat, built or read
  faiss::IndexHNSW* alg = nullptr;
};

index* build(const float* data, std::size_t n, std::size_t dim, std::size_t m, std::size_t ef_construction,
             unsigned threads) {
  omp_set_num_threads(static_cast<int>(threads));
  auto* ix = new index;
  auto flat =
      std::make_unique<faiss::IndexHNSWFlat>(static_cast<int>(dim), static_cast<int>(m), faiss::METRIC_INNER_PRODUCT);
  ix->alg = flat.get();
  ix->owner = std::move(flat);
  ix->alg->hnsw.efConstruction = static_cast<int>(ef_construction);
  ix->alg->add(static_cast<faiss::Index::idx_t>(n), data);
  omp_set_num_threads(1);
  return ix;
}

void set_ef(index* ix, std::size_t ef) { ix->alg->hnsw.efSearch = static_cast<int>(ef); }

void search(index* ix, const float* query, std::size_t k, std::uint64_t* out) {
  float distances[256];
  faiss::Index::idx_t labels[256];
  ix->alg->search(1, query, static_cast<faiss::Index::idx_t>(k), distances, labels);
  for (std::size_t i = 0; i < k; ++i) out[i] = static_cast<std::uint64_t>(labels[i]);
}

void save(index* ix, const char* path) { faiss::write_index(ix->owner.get(), path); }

index* load(const char* path) {
  auto* ix = new index;
  ix->owner.reset(faiss::read_index(path));
  ix->alg = dynamic_cast<faiss::IndexHNSW*>(ix->owner.get());
  return ix;
}

void destroy(index* ix) { delete ix; }

}  // namespace ruvllm::bench::faiss_baseline
