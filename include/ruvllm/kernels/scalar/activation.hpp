#ifndef RUVLLM_KERNELS_SCALAR_ACTIVATION_HPP
#define RUVLLM_KERNELS_SCALAR_ACTIVATION_HPP

// Scalar reference activation kernels: softmax, SiLU, GELU and SwiGLU. They
// are the results every SIMD backend is tested against, so they favour the
// obvious loop over speed; the formulas below are shared by every backend.
//
// Logistic functions are evaluated as
//   sigmoid(z) = (z >= 0 ? 1 : e) / (1 + e),  e = exp(-|z|),
// so exp never overflows (its argument is <= 0) and no 1 - (almost 1)
// cancellation occurs for negative z:
//   silu(x) = x * sigmoid(x)
//   gelu(x) = 0.5 x (1 + tanh(u)) = x * sigmoid(2u),  u = sqrt(2/pi) (x + 0.044715 x^3)
// GELU is the tanh approximation ggml's gelu uses; the identity
// 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)) turns it into the logistic form,
// which keeps full relative accuracy in the negative tail where 1 + tanh(u)
// cancels (at x = -5, 1 + tanh(u) ~ 2.9e-4 loses ~12 bits).

#include <cmath>
#include <cstddef>
#include <limits>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/config.hpp"
#include "ruvllm/kernels/scalar/norm.hpp"  // detail::same_or_disjoint

namespace ruvllm::kernels {

/// Activation entry points of backend B (one specialization per backend).
template <Backend B>
struct activation_ops;

namespace detail {

// GELU's 2u = x * (gelu_k0 + gelu_k1 * x^2): 2 sqrt(2/pi) and 2 sqrt(2/pi) * 0.044715.
inline constexpr float gelu_k0 = 1.5957691216057308f;
inline constexpr float gelu_k1 = 0.07135481627260025f;

inline void check_softmax_args([[maybe_unused]] const float* x, [[maybe_unused]] const float* y,
                               [[maybe_unused]] std::size_t rows, [[maybe_unused]] std::size_t n,
                               [[maybe_unused]] float scale) noexcept {
  RUVLLM_ASSERT(rows == 0 || n == 0 || (x != nullptr && y != nullptr));
  RUVLLM_ASSERT(scale > 0.0f && scale <= std::numeric_limits<float>::max());
  RUVLLM_ASSERT(rows == 0 || n <= std::numeric_limits<std::size_t>::max() / sizeof(float) / rows);
  RUVLLM_ASSERT(same_or_disjoint(x, y, rows * n));
}

inline void check_unary_args([[maybe_unused]] const float* x, [[maybe_unused]] const float* y,
                             [[maybe_unused]] std::size_t n) noexcept {
  RUVLLM_ASSERT(n == 0 || (x != nullptr && y != nullptr));
  RUVLLM_ASSERT(same_or_disjoint(x, y, n));
}

inline void check_swiglu_args([[maybe_unused]] const float* gate, [[maybe_unused]] const float* up,
                              [[maybe_unused]] const float* out, [[maybe_unused]] std::size_t n) noexcept {
  check_unary_args(gate, out, n);
  RUVLLM_ASSERT(n == 0 || up != nullptr);
  RUVLLM_ASSERT(same_or_disjoint(up, out, n));
}

}  // namespace detail

namespace scalar {

/// Softmax of `rows` contiguous rows of n floats: y = exp((x - max x) * scale) / sum,
/// the softmax of scale * x. A row whose every element is -inf comes out uniform (1/n), the
/// limit of equal logits.
inline void softmax_rows(const float* x, float* y, std::size_t rows, std::size_t n, float scale) noexcept {
  if (n == 0) return;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float max = xr[0];
    for (std::size_t i = 1; i < n; ++i)
      if (xr[i] > max) max = xr[i];
    if (!(max > -std::numeric_limits<float>::infinity())) {
      for (std::size_t i = 0; i < n; ++i) yr[i] = 1.0f / static_cast<float>(n);
      continue;
    }
    // (x - max) * scale rather than x * scale - max * scale: a subtraction
    // followed by a multiply cannot be contracted into an FMA, so every
    // backend and compiler flag computes the same arguments, and the max
    // element gets exactly exp(0) = 1.
    float sum = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
      const float e = std::exp((xr[i] - max) * scale);
      yr[i] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;  // sum >= 1: the max element contributes exp(0)
    for (std::size_t i = 0; i < n; ++i) yr[i] *= inv;
  }
}

/// x * sigmoid(x) in the overflow-free logistic form (see the top of this file).
[[nodiscard]] inline float silu(float x) noexcept {
  const float e = std::exp(-std::fabs(x));
  return (x >= 0.0f ? x : x * e) / (1.0f + e);
}

/// ggml's tanh-approximation GELU, as x * sigmoid(2u) (see the top of this file).
[[nodiscard]] inline float gelu(float x) noexcept {
  const float z = x * (kernels::detail::gelu_k0 + kernels::detail::gelu_k1 * (x * x));
  const float e = std::exp(-std::fabs(z));
  return (z >= 0.0f ? x : x * e) / (1.0f + e);
}

inline void silu(const float* x, float* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = silu(x[i]);
}

inline void gelu(const float* x, float* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = gelu(x[i]);
}

inline void swiglu(const float* gate, const float* up, float* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = silu(gate[i]) * up[i];
}

}  // namespace scalar

/// The scalar reference. Every backend's activation_ops has these entry
/// points with the same contract:
///  * outputs may equal an input (in place) but must not otherwise overlap it;
///  * inputs are finite, except that softmax accepts -inf (masked logits);
///  * no allocation; preconditions are checked by RUVLLM_ASSERT in debug builds.
/// Call each once per batch (all rows, the whole FFN width): each call of a
/// runtime-dispatched backend costs one indirect jump.
template <>
struct activation_ops<backend::scalar> {
  /// Numerically stable softmax of one row of n floats into y (y may equal x):
  /// y = exp((x - max x) * scale) / sum. `scale` (finite, > 0) is the inverse
  /// temperature, or 1/sqrt(d) for attention scores. A row of only -inf comes
  /// out uniform.
  static void softmax(const float* x, float* y, std::size_t n, float scale = 1.0f) noexcept {
    softmax_rows(x, y, 1, n, scale);
  }
  /// Softmax of one row in place.
  static void softmax(float* x, std::size_t n, float scale = 1.0f) noexcept { softmax_rows(x, x, 1, n, scale); }
  /// Softmax of each of `rows` contiguous rows of n floats (row r at x + r * n).
  static void softmax_rows(const float* x, float* y, std::size_t rows, std::size_t n, float scale = 1.0f) noexcept {
    detail::check_softmax_args(x, y, rows, n, scale);
    scalar::softmax_rows(x, y, rows, n, scale);
  }
  /// y[i] = silu(x[i]) = x[i] / (1 + exp(-x[i])), for n floats.
  static void silu(const float* x, float* y, std::size_t n) noexcept {
    detail::check_unary_args(x, y, n);
    scalar::silu(x, y, n);
  }
  /// y[i] = gelu(x[i]), ggml's tanh approximation
  /// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), for n floats.
  static void gelu(const float* x, float* y, std::size_t n) noexcept {
    detail::check_unary_args(x, y, n);
    scalar::gelu(x, y, n);
  }
  /// Fused SwiGLU: out[i] = silu(gate[i]) * up[i], for n floats (out may equal
  /// gate or up).
  static void swiglu(const float* gate, const float* up, float* out, std::size_t n) noexcept {
    detail::check_swiglu_args(gate, up, out, n);
    scalar::swiglu(gate, up, out, n);
  }
};

}  // namespace ruvllm::kernels

// The dispatched activation kernels, for RUVLLM_KERNELS_EXPORTED in dispatch.hpp.
#define RUVLLM_ACTIVATION_EXPORTED(X)                                                                       \
  X(void, activation_softmax_f32, (const float* x, float* y, std::size_t rows, std::size_t n, float scale), \
    (x, y, rows, n, scale))                                                                                 \
  X(void, activation_silu_f32, (const float* x, float* y, std::size_t n), (x, y, n))                        \
  X(void, activation_gelu_f32, (const float* x, float* y, std::size_t n), (x, y, n))                        \
  X(void, activation_swiglu_f32, (const float* gate, const float* up, float* out, std::size_t n), (gate, up, out, n))

#endif  // RUVLLM_KERNELS_SCALAR_ACTIVATION_HPP
