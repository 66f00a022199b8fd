// Highway activation kernels (softmax, SiLU, GELU, SwiGLU), compiled once
// per SIMD target. No include guard: the toggle below lets
// hwy/foreach_target.h re-include this file for each target, through the
// umbrella ruvllm/kernels/kernels-inl.h. The formulas are those of
// kernels/scalar/activation.hpp; exp is Highway's contrib Exp (max error 1
// ulp; returns 0 below -104, and every argument here is <= 0).

#if defined(RUVLLM_KERNELS_ACTIVATION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_ACTIVATION_INL_H_
#undef RUVLLM_KERNELS_ACTIVATION_INL_H_
#else
#define RUVLLM_KERNELS_ACTIVATION_INL_H_
#endif

#include <cstddef>
#include <cstring>
#include <limits>

#include "hwy/highway.h"
// Highway's contrib headers are per-target too: included inside the toggle,
// they are compiled for the same target as the code below.
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace activation_detail {

template <class D>
using vec = hn::Vec<D>;

// (x or x * e) / (1 + e) with e = exp(-|z|): x * sigmoid(z), where z has x's sign.
template <class D>
HWY_INLINE vec<D> times_sigmoid(D d, vec<D> x, vec<D> z) {
  const auto e = hn::Exp(d, hn::Neg(hn::Abs(z)));
  // An explicit compare, not IfNegativeThenElse: Highway 1.0.3's SSSE3
  // IfNegativeThenElse blends whole bit patterns (and/andnot), not by sign.
  const auto negative = hn::Lt(z, hn::Zero(d));
  return hn::Div(hn::IfThenElse(negative, hn::Mul(x, e), x), hn::Add(hn::Set(d, 1.0f), e));
}

template <class D>
HWY_INLINE vec<D> silu(D d, vec<D> x) {
  return times_sigmoid(d, x, x);
}

template <class D>
HWY_INLINE vec<D> gelu(D d, vec<D> x) {
  const auto k0 = hn::Set(d, ruvllm::kernels::detail::gelu_k0);
  const auto k1 = hn::Set(d, ruvllm::kernels::detail::gelu_k1);
  const auto z = hn::Mul(x, hn::MulAdd(k1, hn::Mul(x, x), k0));
  return times_sigmoid(d, x, z);
}

// y[i] = f(a[i], b[i]) for n floats: full vectors in place, the rest through
// copies padded with `pad` whose results are copied back. Outputs may equal
// an input (each vector is loaded before it is stored). Lambdas passed as f
// carry HWY_ATTR, which clang needs to inline intrinsics into them.
template <class D, class F>
HWY_INLINE void map2(D d, const float* a, const float* b, float* y, std::size_t n, float pad, F f) {
  const std::size_t lanes = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    // Two independent chains per iteration keep the exp latency covered.
    const auto r0 = f(hn::LoadU(d, a + i), hn::LoadU(d, b + i));
    const auto r1 = f(hn::LoadU(d, a + i + lanes), hn::LoadU(d, b + i + lanes));
    hn::StoreU(r0, d, y + i);
    hn::StoreU(r1, d, y + i + lanes);
  }
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN float ta[HWY_MAX_BYTES / sizeof(float)];
    HWY_ALIGN float tb[HWY_MAX_BYTES / sizeof(float)];
    for (std::size_t k = 0; k < HWY_MAX_BYTES / sizeof(float); ++k) ta[k] = tb[k] = pad;
    const std::size_t rest = (n - i) * sizeof(float);
    std::memcpy(ta, a + i, rest);
    std::memcpy(tb, b + i, rest);
    hn::Store(f(hn::Load(d, ta), hn::Load(d, tb)), d, ta);
    std::memcpy(y + i, ta, rest);
  }
}

// Largest element of one row; the tail is padded with -inf.
template <class D>
HWY_INLINE float row_max(D d, const float* HWY_RESTRICT x, std::size_t n) {
  const std::size_t lanes = hn::Lanes(d);
  const auto lowest = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto m0 = lowest;
  auto m1 = lowest;
  auto m2 = lowest;
  auto m3 = lowest;
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    m0 = hn::Max(m0, hn::LoadU(d, x + i));
    m1 = hn::Max(m1, hn::LoadU(d, x + i + lanes));
    m2 = hn::Max(m2, hn::LoadU(d, x + i + 2 * lanes));
    m3 = hn::Max(m3, hn::LoadU(d, x + i + 3 * lanes));
  }
  for (; i + lanes <= n; i += lanes) m0 = hn::Max(m0, hn::LoadU(d, x + i));
  if (i < n) {
    HWY_ALIGN float tail[HWY_MAX_BYTES / sizeof(float)];
    for (float& t : tail) t = -std::numeric_limits<float>::infinity();
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    m1 = hn::Max(m1, hn::Load(d, tail));
  }
  // Reduced by hand: MaxOfLanes on EMU128 (Highway 1.0.3) starts from
  // -FLT_MAX, which would turn a row of only -inf into a finite max.
  HWY_ALIGN float lane_max[HWY_MAX_BYTES / sizeof(float)];
  hn::Store(hn::Max(hn::Max(m0, m1), hn::Max(m2, m3)), d, lane_max);
  float max = lane_max[0];
  for (std::size_t k = 1; k < lanes; ++k) max = lane_max[k] > max ? lane_max[k] : max;
  return max;
}

// y[i] = exp((x[i] - max) * scale) for one row, the reference's rounding
// (see scalar/activation.hpp); returns the sum of y. The tail's -inf padding
// contributes exp(-inf) = 0.
template <class D>
HWY_INLINE float exp_row(D d, const float* x, float* y, std::size_t n, float scale, float max) {
  const std::size_t lanes = hn::Lanes(d);
  const auto vs = hn::Set(d, scale);
  const auto vm = hn::Set(d, max);
  auto sum0 = hn::Zero(d);
  auto sum1 = hn::Zero(d);
  std::size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto e0 = hn::Exp(d, hn::Mul(hn::Sub(hn::LoadU(d, x + i), vm), vs));
    const auto e1 = hn::Exp(d, hn::Mul(hn::Sub(hn::LoadU(d, x + i + lanes), vm), vs));
    hn::StoreU(e0, d, y + i);
    hn::StoreU(e1, d, y + i + lanes);
    sum0 = hn::Add(sum0, e0);
    sum1 = hn::Add(sum1, e1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto e = hn::Exp(d, hn::Mul(hn::Sub(hn::LoadU(d, x + i), vm), vs));
    hn::StoreU(e, d, y + i);
    sum0 = hn::Add(sum0, e);
  }
  if (i < n) {
    HWY_ALIGN float tail[HWY_MAX_BYTES / sizeof(float)];
    for (float& t : tail) t = -std::numeric_limits<float>::infinity();
    std::memcpy(tail, x + i, (n - i) * sizeof(float));
    const auto e = hn::Exp(d, hn::Mul(hn::Sub(hn::Load(d, tail), vm), vs));
    hn::Store(e, d, tail);
    std::memcpy(y + i, tail, (n - i) * sizeof(float));
    sum1 = hn::Add(sum1, e);
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1)));
}

}  // namespace activation_detail

/// Softmax of `rows` rows (contract: activation_ops<backend::scalar>). x and
/// y may alias exactly, hence no HWY_RESTRICT.
inline void activation_softmax_f32(const float* x, float* y, std::size_t rows, std::size_t n, float scale) {
#if HWY_TARGET == HWY_SCALAR
  ruvllm::kernels::scalar::softmax_rows(x, y, rows, n, scale);
#else
  if (n == 0) return;
  const hn::ScalableTag<float> d;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float max = activation_detail::row_max(d, xr, n);
    if (!(max > -std::numeric_limits<float>::infinity())) {
      for (std::size_t i = 0; i < n; ++i) yr[i] = 1.0f / static_cast<float>(n);
      continue;
    }
    const float sum = activation_detail::exp_row(d, xr, yr, n, scale, max);
    const auto inv = hn::Set(d, 1.0f / sum);
    activation_detail::map2(d, yr, yr, yr, n, 0.0f, [inv](auto v, auto) HWY_ATTR { return hn::Mul(v, inv); });
  }
#endif
}

/// y[i] = silu(x[i]) (contract: activation_ops<backend::scalar>).
inline void activation_silu_f32(const float* x, float* y, std::size_t n) {
#if HWY_TARGET == HWY_SCALAR
  ruvllm::kernels::scalar::silu(x, y, n);
#else
  const hn::ScalableTag<float> d;
  activation_detail::map2(d, x, x, y, n, 0.0f, [d](auto v, auto) HWY_ATTR { return activation_detail::silu(d, v); });
#endif
}

/// y[i] = gelu(x[i]), tanh approximation (contract: activation_ops<backend::scalar>).
inline void activation_gelu_f32(const float* x, float* y, std::size_t n) {
#if HWY_TARGET == HWY_SCALAR
  ruvllm::kernels::scalar::gelu(x, y, n);
#else
  const hn::ScalableTag<float> d;
  activation_detail::map2(d, x, x, y, n, 0.0f, [d](auto v, auto) HWY_ATTR { return activation_detail::gelu(d, v); });
#endif
}

/// out[i] = silu(gate[i]) * up[i] (contract: activation_ops<backend::scalar>).
inline void activation_swiglu_f32(const float* gate, const float* up, float* out, std::size_t n) {
#if HWY_TARGET == HWY_SCALAR
  ruvllm::kernels::scalar::swiglu(gate, up, out, n);
#else
  const hn::ScalableTag<float> d;
  activation_detail::map2(d, gate, up, out, n, 0.0f,
                          [d](auto g, auto u) HWY_ATTR { return hn::Mul(activation_detail::silu(d, g), u); });
#endif
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_ACTIVATION_INL_H_ toggle
