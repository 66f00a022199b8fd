// Highway normalization kernels (RMSNorm, LayerNorm), compiled once per
// SIMD target. No include guard: the toggle below lets hwy/foreach_target.h
// re-include this file for each target, through the umbrella
// ruvllm/kernels/kernels-inl.h.

#if defined(RUVLLM_KERNELS_NORM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_NORM_INL_H_
#undef RUVLLM_KERNELS_NORM_INL_H_
#else
#define RUVLLM_KERNELS_NORM_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace norm_detail {

// Sum of (x[i] - center)^2 over one row. Four accumulators hide the FMA
// latency; the partial vector at the end goes through a copy padded with
// `center`, whose lanes add exactly zero, so no load passes the row's end.
template <class D>
HWY_INLINE float sum_squares(D d, const float* HWY_RESTRICT x, std::size_t n, float center) {
  const std::size_t lanes = hn::Lanes(d);
  const auto c = hn::Set(d, center);
  auto acc0 = hn::Zero(d);
  auto acc1 = hn::Zero(d);
  auto acc2 = hn::Zero(d);
  auto acc3 = hn::Zero(d);
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    const auto v0 = hn::Sub(hn::LoadU(d, x + i), c);
    const auto v1 = hn::Sub(hn::LoadU(d, x + i + lanes), c);
    const auto v2 = hn::Sub(hn::LoadU(d, x + i + 2 * lanes), c);
    const auto v3 = hn::Sub(hn::LoadU(d, x + i + 3 * lanes), c);
    acc0 = hn::MulAdd(v0, v0, acc0);
    acc1 = hn::MulAdd(v1, v1, acc1);
    acc2 = hn::MulAdd(v2, v2, acc2);
    acc3 = hn::MulAdd(v3, v3, acc3);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::Sub(hn::LoadU(d, x + i), c);
    acc0 = hn::MulAdd(v, v, acc0);
  }
  if (i < n) {
    HWY_ALIGN float tail[HWY_MAX_BYTES / sizeof(float)];
    for (float& t : tail) t = center;
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    const auto v = hn::Sub(hn::Load(d, tail), c);
    acc1 = hn::MulAdd(v, v, acc1);
  }
  acc0 = hn::Add(hn::Add(acc0, acc1), hn::Add(acc2, acc3));
  return hn::GetLane(hn::SumOfLanes(d, acc0));
}

// Plain sum of one row, same structure (zero padding).
template <class D>
HWY_INLINE float sum(D d, const float* HWY_RESTRICT x, std::size_t n) {
  const std::size_t lanes = hn::Lanes(d);
  auto acc0 = hn::Zero(d);
  auto acc1 = hn::Zero(d);
  auto acc2 = hn::Zero(d);
  auto acc3 = hn::Zero(d);
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    acc0 = hn::Add(acc0, hn::LoadU(d, x + i));
    acc1 = hn::Add(acc1, hn::LoadU(d, x + i + lanes));
    acc2 = hn::Add(acc2, hn::LoadU(d, x + i + 2 * lanes));
    acc3 = hn::Add(acc3, hn::LoadU(d, x + i + 3 * lanes));
  }
  for (; i + lanes <= n; i += lanes) acc0 = hn::Add(acc0, hn::LoadU(d, x + i));
  if (i < n) {
    HWY_ALIGN float tail[HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    acc1 = hn::Add(acc1, hn::Load(d, tail));
  }
  acc0 = hn::Add(hn::Add(acc0, acc1), hn::Add(acc2, acc3));
  return hn::GetLane(hn::SumOfLanes(d, acc0));
}

// y[i] = f(x[i], w[i], b[i]) over one row: full vectors in place, the rest
// through zero-padded copies whose results are copied back. x and y may be
// the same pointer (each vector is loaded before it is stored). Lambdas passed
// as f carry HWY_ATTR, which clang needs to inline intrinsics into them.
template <class D, class F>
HWY_INLINE void map_row(D d, const float* x, const float* w, const float* b, float* y, std::size_t n, F f) {
  const std::size_t lanes = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(f(hn::LoadU(d, x + i), hn::LoadU(d, w + i), hn::LoadU(d, b + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN float tx[HWY_MAX_BYTES / sizeof(float)] = {};
    HWY_ALIGN float tw[HWY_MAX_BYTES / sizeof(float)] = {};
    HWY_ALIGN float tb[HWY_MAX_BYTES / sizeof(float)] = {};
    const std::size_t rest = (n - i) * sizeof(float);
    std::memcpy(tx, x + i, rest);
    std::memcpy(tw, w + i, rest);
    std::memcpy(tb, b + i, rest);
    hn::Store(f(hn::Load(d, tx), hn::Load(d, tw), hn::Load(d, tb)), d, tx);
    std::memcpy(y + i, tx, rest);
  }
}

}  // namespace norm_detail

/// RMSNorm of `rows` rows (contract: norm_ops<backend::scalar>). x and y may
/// alias exactly, hence no HWY_RESTRICT on them.
inline void norm_rms_f32(const float* x, const float* weight, float* y, std::size_t rows, std::size_t n, float eps) {
#if HWY_TARGET == HWY_SCALAR
  ruvllm::kernels::scalar::rms_norm_rows(x, weight, y, rows, n, eps);
#else
  if (n == 0) return;
  const hn::ScalableTag<float> d;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float sum = norm_detail::sum_squares(d, xr, n, 0.0f);
    const auto scale = hn::Set(d, 1.0f / std::sqrt(sum / static_cast<float>(n) + eps));
    // Same rounding order as the reference, (x * scale) * w; the weight row
    // is passed twice because RMSNorm has no bias.
    norm_detail::map_row(d, xr, weight, weight, yr, n,
                         [scale](auto v, auto w, auto) HWY_ATTR { return hn::Mul(hn::Mul(v, scale), w); });
  }
#endif
}

/// LayerNorm of `rows` rows (contract: norm_ops<backend::scalar>).
inline void norm_layer_f32(const float* x, const float* weight, const float* bias, float* y, std::size_t rows,
                           std::size_t n, float eps) {
#if HWY_TARGET == HWY_SCALAR
  ruvllm::kernels::scalar::layer_norm_rows(x, weight, bias, y, rows, n, eps);
#else
  if (n == 0) return;
  const hn::ScalableTag<float> d;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float mean = norm_detail::sum(d, xr, n) / static_cast<float>(n);
    const float sq = norm_detail::sum_squares(d, xr, n, mean);
    const auto scale = hn::Set(d, 1.0f / std::sqrt(sq / static_cast<float>(n) + eps));
    const auto center = hn::Set(d, mean);
    norm_detail::map_row(d, xr, weight, bias, yr, n, [scale, center](auto v, auto w, auto b) HWY_ATTR {
      return hn::MulAdd(hn::Mul(hn::Sub(v, center), scale), w, b);
    });
  }
#endif
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_NORM_INL_H_ toggle
