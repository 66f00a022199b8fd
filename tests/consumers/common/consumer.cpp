// A minimal ruvllm consumer: policy types, the error model, and the float and
// Q4_0 / Q4_K dot kernels through two backends. Exits non-zero if anything
// disagrees.
//
// With RUVLLM_CONSUMER_ALL_KERNELS the program is its own kernels
// implementation unit (see ruvllm/kernels/dispatch.hpp), so the consumer's
// compiler generates every kernel for every target, not only those called.

#ifdef RUVLLM_CONSUMER_ALL_KERNELS
#define RUVLLM_KERNELS_SEPARATE
#define RUVLLM_KERNELS_IMPLEMENTATION
#endif
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

/// The SIMD dot within float rounding of the scalar reference's (both sum
/// the same exact integers per block), and both within quantization error of
/// the float dot.
template <class Weights, class Activations, class Quantize, class QuantizeActivation, class Dot, class ScalarDot>
static bool quantized_dot_agrees(const std::vector<float>& w, const std::vector<float>& x, Quantize quantize,
                                 QuantizeActivation quantize_activation, Dot dot, ScalarDot scalar_dot) {
  std::vector<typename Weights::block_type> wq(w.size() / Weights::block_size);
  std::vector<typename Activations::block_type> xq(x.size() / Activations::block_size);
  quantize(w.data(), wq.data(), w.size());
  quantize_activation(x.data(), xq.data(), x.size());
  const float fast = dot(wq.data(), xq.data(), w.size());
  const float reference = scalar_dot(wq.data(), xq.data(), w.size());
  double exact = 0.0, magnitude = 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    exact += static_cast<double>(w[i]) * x[i];
    magnitude += std::fabs(static_cast<double>(w[i]) * x[i]);
  }
  return std::fabs(fast - reference) <= 1e-5 * magnitude && std::fabs(reference - exact) <= 0.05 * magnitude;
}

int main() {
  using fast_ops = ruvllm::kernels::ops<consumer_config::backend>;
  using scalar_ops = ruvllm::kernels::ops<ruvllm::backend::scalar>;
  {
    std::vector<float> w(1024), x(1024);
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] = std::sin(0.37f * static_cast<float>(i));
      x[i] = std::cos(0.11f * static_cast<float>(i));
    }
    const bool q4_0 = quantized_dot_agrees<ruvllm::precision::q4_0, ruvllm::precision::q8_0>(
        w, x, fast_ops::quantize_q4_0, fast_ops::quantize_q8_0, fast_ops::dot_q4_0_q8_0, scalar_ops::dot_q4_0_q8_0);
    const bool q4_k = quantized_dot_agrees<ruvllm::precision::q4_k, ruvllm::precision::q8_k>(
        w, x, fast_ops::quantize_q4_k, fast_ops::quantize_q8_k, fast_ops::dot_q4_k_q8_k, scalar_ops::dot_q4_k_q8_k);
    if (!q4_0 || !q4_k) {
      std::printf("quantized dot mismatch: q4_0 %d, q4_k %d\n", q4_0, q4_k);
      return 1;
    }
  }
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
