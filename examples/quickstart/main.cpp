// The shortest real use of ruvllm: pick policy types, then call a kernel
// through the Backend policy. Prints the SIMD target chosen on this CPU.

#include <cmath>
#include <cstdio>
#include <vector>

#include "ruvllm/ruvllm.hpp"

namespace {

// A configuration is a set of types; every choice is checked by a concept.
struct edge_config {
  using backend = ruvllm::backend::highway;
  using weights = ruvllm::precision::q4_0;
  using kv_tiers = ruvllm::tiers<ruvllm::tier<ruvllm::precision::f16, 256>, ruvllm::tier<ruvllm::precision::q8_0, 2048>,
                                 ruvllm::tier<ruvllm::precision::kivi<2>>>;
  using eviction = ruvllm::eviction::hysteresis<ruvllm::eviction::lru>;
};
static_assert(ruvllm::Backend<edge_config::backend>);
static_assert(ruvllm::Precision<edge_config::weights>);
static_assert(ruvllm::CacheTiers<edge_config::kv_tiers>);
static_assert(ruvllm::EvictionPolicy<edge_config::eviction>);

template <ruvllm::Backend B>
float dot(const std::vector<float>& a, const std::vector<float>& b) {
  using ops = ruvllm::kernels::ops<B>;
  return ops::dot(a.data(), b.data(), a.size());
}

}  // namespace

int main() {
  constexpr std::size_t dim = 768;
  std::vector<float> query(dim), key(dim);
  for (std::size_t i = 0; i < dim; ++i) {
    query[i] = std::sin(0.01f * static_cast<float>(i));
    key[i] = std::cos(0.013f * static_cast<float>(i));
  }
  const float fast = dot<edge_config::backend>(query, key);
  const float reference = dot<ruvllm::backend::scalar>(query, key);

  std::printf("ruvllm %d.%d.%d\n", RUVLLM_VERSION_MAJOR, RUVLLM_VERSION_MINOR, RUVLLM_VERSION_PATCH);
  std::printf("highway target chosen at run time: %s\n", ruvllm::backend::highway::target_name());
  std::printf("dot(query, key) over %zu dims: %.6f (highway), %.6f (scalar reference)\n", dim,
              static_cast<double>(fast), static_cast<double>(reference));
  std::printf("weights %s: %zu elements per %zu-byte block\n", edge_config::weights::name.data(),
              edge_config::weights::block_size, edge_config::weights::bytes_per_block);
  return 0;
}
