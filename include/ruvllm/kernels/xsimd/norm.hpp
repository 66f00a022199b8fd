#ifndef RUVLLM_KERNELS_XSIMD_NORM_HPP
#define RUVLLM_KERNELS_XSIMD_NORM_HPP

// Normalization kernels of backend::xsimd (see xsimd/arch.hpp on compile
// flags). Same structure as norm-inl.h; contracts: norm_ops<backend::scalar>.

#include <cmath>
#include <cstddef>
#include <cstring>

#include "ruvllm/kernels/scalar/norm.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {
namespace norm {

using batch = ::xsimd::batch<float>;
inline constexpr std::size_t lanes = batch::size;

/// Sum of (x[i] - center)^2; four accumulators, and the partial vector at the
/// end read through a copy padded with `center` (which adds exactly zero).
[[nodiscard]] inline float sum_squares(const float* x, std::size_t n, float center) noexcept {
  const batch c(center);
  batch acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    const batch v0 = batch::load_unaligned(x + i) - c;
    const batch v1 = batch::load_unaligned(x + i + lanes) - c;
    const batch v2 = batch::load_unaligned(x + i + 2 * lanes) - c;
    const batch v3 = batch::load_unaligned(x + i + 3 * lanes) - c;
    acc0 = ::xsimd::fma(v0, v0, acc0);
    acc1 = ::xsimd::fma(v1, v1, acc1);
    acc2 = ::xsimd::fma(v2, v2, acc2);
    acc3 = ::xsimd::fma(v3, v3, acc3);
  }
  for (; i + lanes <= n; i += lanes) {
    const batch v = batch::load_unaligned(x + i) - c;
    acc0 = ::xsimd::fma(v, v, acc0);
  }
  if (i < n) {
    alignas(64) float tail[lanes];
    for (float& t : tail) t = center;
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    const batch v = batch::load_aligned(tail) - c;
    acc1 = ::xsimd::fma(v, v, acc1);
  }
  return ::xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
}

/// Plain sum, same structure (zero padding).
[[nodiscard]] inline float sum(const float* x, std::size_t n) noexcept {
  batch acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    acc0 += batch::load_unaligned(x + i);
    acc1 += batch::load_unaligned(x + i + lanes);
    acc2 += batch::load_unaligned(x + i + 2 * lanes);
    acc3 += batch::load_unaligned(x + i + 3 * lanes);
  }
  for (; i + lanes <= n; i += lanes) acc0 += batch::load_unaligned(x + i);
  if (i < n) {
    alignas(64) float tail[lanes] = {};
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    acc1 += batch::load_aligned(tail);
  }
  return ::xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
}

/// y[i] = f(x[i], w[i], b[i]): full vectors in place, the rest through
/// zero-padded copies. x and y may be the same pointer.
template <class F>
inline void map_row(const float* x, const float* w, const float* b, float* y, std::size_t n, F f) noexcept {
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    f(batch::load_unaligned(x + i), batch::load_unaligned(w + i), batch::load_unaligned(b + i)).store_unaligned(y + i);
  if (i < n) {
    alignas(64) float tx[lanes] = {};
    alignas(64) float tw[lanes] = {};
    alignas(64) float tb[lanes] = {};
    const std::size_t rest = (n - i) * sizeof(float);
    std::memcpy(tx, x + i, rest);
    std::memcpy(tw, w + i, rest);
    std::memcpy(tb, b + i, rest);
    f(batch::load_aligned(tx), batch::load_aligned(tw), batch::load_aligned(tb)).store_aligned(tx);
    std::memcpy(y + i, tx, rest);
  }
}

inline void rms_norm_rows(const float* x, const float* weight, float* y, std::size_t rows, std::size_t n,
                          float eps) noexcept {
  if (n == 0) return;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const batch scale(1.0f / std::sqrt(sum_squares(xr, n, 0.0f) / static_cast<float>(n) + eps));
    // (x * scale) * w, the reference's rounding order; no bias, so w twice.
    map_row(xr, weight, weight, y + r * n, n, [scale](batch v, batch w, batch) { return (v * scale) * w; });
  }
}

inline void layer_norm_rows(const float* x, const float* weight, const float* bias, float* y, std::size_t rows,
                            std::size_t n, float eps) noexcept {
  if (n == 0) return;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float mean = sum(xr, n) / static_cast<float>(n);
    const batch scale(1.0f / std::sqrt(sum_squares(xr, n, mean) / static_cast<float>(n) + eps));
    const batch center(mean);
    map_row(xr, weight, bias, y + r * n, n,
            [scale, center](batch v, batch w, batch b) { return ::xsimd::fma((v - center) * scale, w, b); });
  }
}

}  // namespace norm
}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct norm_ops<backend::xsimd> {
  /// RMSNorm of one row: y = x / sqrt(mean(x^2) + eps) * weight.
  static void rms_norm(const float* x, const float* weight, float* y, std::size_t n, float eps) noexcept {
    rms_norm_rows(x, weight, y, 1, n, eps);
  }
  /// RMSNorm of `rows` contiguous rows of n floats.
  static void rms_norm_rows(const float* x, const float* weight, float* y, std::size_t rows, std::size_t n,
                            float eps) noexcept {
    detail::check_rms_norm_args(x, weight, y, rows, n, eps);
    xsimd_impl::norm::rms_norm_rows(x, weight, y, rows, n, eps);
  }
  /// LayerNorm of one row: y = (x - mean) / sqrt(var + eps) * weight + bias.
  static void layer_norm(const float* x, const float* weight, const float* bias, float* y, std::size_t n,
                         float eps) noexcept {
    layer_norm_rows(x, weight, bias, y, 1, n, eps);
  }
  /// LayerNorm of `rows` contiguous rows of n floats.
  static void layer_norm_rows(const float* x, const float* weight, const float* bias, float* y, std::size_t rows,
                              std::size_t n, float eps) noexcept {
    detail::check_layer_norm_args(x, weight, bias, y, rows, n, eps);
    xsimd_impl::norm::layer_norm_rows(x, weight, bias, y, rows, n, eps);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_NORM_HPP
