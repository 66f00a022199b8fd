#ifndef RUVLLM_KERNELS_XSIMD_ACTIVATION_HPP
#define RUVLLM_KERNELS_XSIMD_ACTIVATION_HPP

// Activation kernels of backend::xsimd (see xsimd/arch.hpp on compile
// flags). Same structure and formulas as activation-inl.h; contracts:
// activation_ops<backend::scalar>. xsimd's exp returns 0 below about -87.7
// (it flushes results that would be denormal), which only moves outputs
// below ~|x| * FLT_MIN.

#include <cstddef>
#include <cstring>
#include <limits>

#include "ruvllm/kernels/scalar/activation.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {
namespace activation {

using batch = ::xsimd::batch<float>;
inline constexpr std::size_t lanes = batch::size;

/// (x or x * e) / (1 + e) with e = exp(-|z|): x * sigmoid(z), z of x's sign.
[[nodiscard]] inline batch times_sigmoid(batch x, batch z) noexcept {
  const batch e = ::xsimd::exp(-::xsimd::abs(z));
  return ::xsimd::select(z >= batch(0.0f), x, x * e) / (batch(1.0f) + e);
}

[[nodiscard]] inline batch silu(batch x) noexcept { return times_sigmoid(x, x); }

[[nodiscard]] inline batch gelu(batch x) noexcept {
  const batch z = x * ::xsimd::fma(batch(kernels::detail::gelu_k1), x * x, batch(kernels::detail::gelu_k0));
  return times_sigmoid(x, z);
}

/// y[i] = f(a[i], b[i]): full vectors in place, the rest through copies padded
/// with `pad`. Outputs may equal an input.
template <class F>
inline void map2(const float* a, const float* b, float* y, std::size_t n, float pad, F f) noexcept {
  std::size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    // Two independent chains per iteration keep the exp latency covered.
    const batch r0 = f(batch::load_unaligned(a + i), batch::load_unaligned(b + i));
    const batch r1 = f(batch::load_unaligned(a + i + lanes), batch::load_unaligned(b + i + lanes));
    r0.store_unaligned(y + i);
    r1.store_unaligned(y + i + lanes);
  }
  for (; i + lanes <= n; i += lanes)
    f(batch::load_unaligned(a + i), batch::load_unaligned(b + i)).store_unaligned(y + i);
  if (i < n) {
    alignas(64) float ta[lanes];
    alignas(64) float tb[lanes];
    for (std::size_t k = 0; k < lanes; ++k) ta[k] = tb[k] = pad;
    const std::size_t rest = (n - i) * sizeof(float);
    std::memcpy(ta, a + i, rest);
    std::memcpy(tb, b + i, rest);
    f(batch::load_aligned(ta), batch::load_aligned(tb)).store_aligned(ta);
    std::memcpy(y + i, ta, rest);
  }
}

[[nodiscard]] inline float row_max(const float* x, std::size_t n) noexcept {
  const batch lowest(-std::numeric_limits<float>::infinity());
  batch m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    m0 = ::xsimd::max(m0, batch::load_unaligned(x + i));
    m1 = ::xsimd::max(m1, batch::load_unaligned(x + i + lanes));
    m2 = ::xsimd::max(m2, batch::load_unaligned(x + i + 2 * lanes));
    m3 = ::xsimd::max(m3, batch::load_unaligned(x + i + 3 * lanes));
  }
  for (; i + lanes <= n; i += lanes) m0 = ::xsimd::max(m0, batch::load_unaligned(x + i));
  alignas(64) float lane_max[lanes];
  ::xsimd::max(::xsimd::max(m0, m1), ::xsimd::max(m2, m3)).store_aligned(lane_max);
  float max = -std::numeric_limits<float>::infinity();
  for (const float m : lane_max)
    if (m > max) max = m;
  for (; i < n; ++i)
    if (x[i] > max) max = x[i];
  return max;
}

/// y[i] = exp((x[i] - max) * scale), the reference's rounding; returns the
/// sum of y. The tail's -inf padding contributes exp(-inf) = 0.
[[nodiscard]] inline float exp_row(const float* x, float* y, std::size_t n, float scale, float max) noexcept {
  const batch vs(scale), vm(max);
  batch sum0(0.0f), sum1(0.0f);
  std::size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const batch e0 = ::xsimd::exp((batch::load_unaligned(x + i) - vm) * vs);
    const batch e1 = ::xsimd::exp((batch::load_unaligned(x + i + lanes) - vm) * vs);
    e0.store_unaligned(y + i);
    e1.store_unaligned(y + i + lanes);
    sum0 += e0;
    sum1 += e1;
  }
  for (; i + lanes <= n; i += lanes) {
    const batch e = ::xsimd::exp((batch::load_unaligned(x + i) - vm) * vs);
    e.store_unaligned(y + i);
    sum0 += e;
  }
  if (i < n) {
    alignas(64) float tail[lanes];
    for (float& t : tail) t = -std::numeric_limits<float>::infinity();
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    const batch e = ::xsimd::exp((batch::load_aligned(tail) - vm) * vs);
    e.store_aligned(tail);
    std::memcpy(y + i, tail, (n - i) * sizeof(float));
    sum1 += e;
  }
  return ::xsimd::hadd(sum0 + sum1);
}

inline void softmax_rows(const float* x, float* y, std::size_t rows, std::size_t n, float scale) noexcept {
  if (n == 0) return;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float max = row_max(xr, n);
    if (!(max > -std::numeric_limits<float>::infinity())) {
      for (std::size_t i = 0; i < n; ++i) yr[i] = 1.0f / static_cast<float>(n);
      continue;
    }
    const batch inv(1.0f / exp_row(xr, yr, n, scale, max));
    map2(yr, yr, yr, n, 0.0f, [inv](batch v, batch) { return v * inv; });
  }
}

}  // namespace activation
}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct activation_ops<backend::xsimd> {
  /// Stable softmax of one row of n floats into y (y may equal x), of scale * x.
  static void softmax(const float* x, float* y, std::size_t n, float scale = 1.0f) noexcept {
    softmax_rows(x, y, 1, n, scale);
  }
  /// Softmax of one row in place.
  static void softmax(float* x, std::size_t n, float scale = 1.0f) noexcept { softmax_rows(x, x, 1, n, scale); }
  /// Softmax of each of `rows` contiguous rows of n floats.
  static void softmax_rows(const float* x, float* y, std::size_t rows, std::size_t n, float scale = 1.0f) noexcept {
    detail::check_softmax_args(x, y, rows, n, scale);
    xsimd_impl::activation::softmax_rows(x, y, rows, n, scale);
  }
  /// y[i] = silu(x[i]) for n floats.
  static void silu(const float* x, float* y, std::size_t n) noexcept {
    detail::check_unary_args(x, y, n);
    xsimd_impl::activation::map2(x, x, y, n, 0.0f, [](auto v, auto) { return xsimd_impl::activation::silu(v); });
  }
  /// y[i] = gelu(x[i]) (tanh approximation) for n floats.
  static void gelu(const float* x, float* y, std::size_t n) noexcept {
    detail::check_unary_args(x, y, n);
    xsimd_impl::activation::map2(x, x, y, n, 0.0f, [](auto v, auto) { return xsimd_impl::activation::gelu(v); });
  }
  /// out[i] = silu(gate[i]) * up[i] for n floats.
  static void swiglu(const float* gate, const float* up, float* out, std::size_t n) noexcept {
    detail::check_swiglu_args(gate, up, out, n);
    xsimd_impl::activation::map2(gate, up, out, n, 0.0f,
                                 [](auto g, auto u) { return xsimd_impl::activation::silu(g) * u; });
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_ACTIVATION_HPP
