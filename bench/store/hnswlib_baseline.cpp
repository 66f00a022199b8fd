// hnswlib behind the opaque interface of hnswlib_baseline.hpp.

#include "store/hnswlib_baseline.hpp"

#include <hnswlib/hnswlib.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ruvllm::bench::hnswlib_baseline {

struct index {
  std::unique_ptr<hnswlib::InnerProductSpace> space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> alg;
};

index* build(const float* data, std::size_t n, std::size_t dim, std::size_t m, std::size_t ef_construction,
             unsigned threads) {
  auto* ix = new index;
  ix->space = std::make_unique<hnswlib::InnerProductSpace>(dim);
  ix->alg = std::make_unique<hnswlib::HierarchicalNSW<float>>(ix->space.get(), n, m, ef_construction);
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) ix->alg->addPoint(data + i * dim, i);
    return ix;
  }
  // hnswlib's addPoint is thread-safe; its own examples hand out rows from a
  // shared counter like this.
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) ix->alg->addPoint(data + i * dim, i);
    });
  for (auto& w : workers) w.join();
  return ix;
}

void set_ef(index* ix, std::size_t ef) { ix->alg->setEf(ef); }

void search(index* ix, const float* query, std::size_t k, std::uint64_t* out) {
  auto result = ix->alg->searchKnn(query, k);
  std::size_t n = result.size();
  while (!result.empty()) {
    out[--n] = result.top().second;
    result.pop();
  }
}

void save(index* ix, const char* path) { ix->alg->saveIndex(path); }

index* load(const char* path, std::size_t dim) {
  auto* ix = new index;
  ix->space = std::make_unique<hnswlib::InnerProductSpace>(dim);
  ix->alg = std::make_unique<hnswlib::HierarchicalNSW<float>>(ix->space.get(), std::string(path));
  return ix;
}

void destroy(index* ix) { delete ix; }

}  // namespace ruvllm::bench::hnswlib_baseline
