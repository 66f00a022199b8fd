// A minimal ruvllm consumer: policy types, the error model and the dot
// kernel through two backends. Exits non-zero if anything disagrees.

#include "ruvllm/ruvllm.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

struct consumer_config {
  using backend = ruvllm::backend::highway;
  using weights = ruvllm::precision::q8_0;
  using eviction = ruvllm::eviction::hysteresis<ruvllm::eviction::lfu>;
};
static_assert(ruvllm::Backend<consumer_config::backend>);
static_assert(ruvllm::Precision<consumer_config::weights>);
static_assert(ruvllm::EvictionPolicy<consumer_config::eviction>);

static ruvllm::result<float> checked_dot(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    return ruvllm::make_error(ruvllm::errc::invalid_argument, "length ", b.size(), " differs from ", a.size());
  return ruvllm::kernels::ops<consumer_config::backend>::dot(a.data(), b.data(), a.size());
}

int main() {
  std::vector<float> a(1000), b(1000);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 13) - 6.0f;
    b[i] = static_cast<float>(i % 7) * 0.5f;
  }
  auto fast = checked_dot(a, b);
  const float reference = ruvllm::kernels::ops<ruvllm::backend::scalar>::dot(a.data(), b.data(), a.size());
  if (!fast || std::fabs(*fast - reference) > 1e-3f * std::fabs(reference) + 1e-3f) {
    std::printf("dot mismatch\n");
    return 1;
  }
  auto mismatch = checked_dot(a, std::vector<float>(3));
  if (mismatch || mismatch.error().code() != ruvllm::errc::invalid_argument) {
    std::printf("expected an invalid_argument error\n");
    return 1;
  }
  std::printf("consumer ok: target %s, dot %.3f, error \"%s\"\n", ruvllm::backend::highway::target_name(),
              static_cast<double>(*fast), mismatch.error().describe().c_str());
  return 0;
}
