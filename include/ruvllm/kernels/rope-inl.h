// Highway RoPE kernels, compiled once per SIMD target. No include guard: the
// toggle below lets hwy/foreach_target.h re-include this file for each
// target, through the umbrella ruvllm/kernels/kernels-inl.h.

#if defined(RUVLLM_KERNELS_ROPE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_ROPE_INL_H_
#undef RUVLLM_KERNELS_ROPE_INL_H_
#else
#define RUVLLM_KERNELS_ROPE_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace rope_detail {

constexpr std::size_t max_lanes = HWY_MAX_BYTES / sizeof(float);

// Normal layout, one token: v' = v * cos_dup + Reverse2(v) * sin_alt, where
// cos_dup = (c0, c0, c1, c1, ...) and sin_alt = (-s0, s0, -s1, s1, ...) are
// expanded once per token and chunk into a stack buffer and reused by every
// head. Vectors hold an even number of lanes, so a pair never straddles two.
template <class D>
HWY_INLINE void normal_token(D d, const float* HWY_RESTRICT row, std::size_t head_dim, float* x, std::size_t heads,
                             std::size_t head_stride) {
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t half = head_dim / 2;
  constexpr std::size_t chunk = ruvllm::kernels::detail::rope_expand_chunk;
  HWY_ALIGN float cos_dup[2 * chunk + max_lanes];
  HWY_ALIGN float sin_alt[2 * chunk + max_lanes];
  for (std::size_t first = 0; first < half; first += chunk) {
    const std::size_t count = std::min(chunk, half - first);
    const std::size_t len = 2 * count;
    ruvllm::kernels::detail::rope_expand_pairs(row, half, first, count, cos_dup, sin_alt);
    // The last, partial vector reads these lanes: make them defined.
    for (std::size_t k = len; k < len + lanes; ++k) cos_dup[k] = sin_alt[k] = 0.0f;
    for (std::size_t h = 0; h < heads; ++h) {
      float* v = x + h * head_stride + 2 * first;
      std::size_t i = 0;
      for (; i + lanes <= len; i += lanes) {
        const auto xv = hn::LoadU(d, v + i);
        const auto rotated =
            hn::MulAdd(hn::Reverse2(d, xv), hn::Load(d, sin_alt + i), hn::Mul(xv, hn::Load(d, cos_dup + i)));
        hn::StoreU(rotated, d, v + i);
      }
      if (i < len) {
        HWY_ALIGN float tail[max_lanes] = {};
        std::memcpy(tail, v + i, (len - i) * sizeof(float));
        const auto xv = hn::Load(d, tail);
        hn::Store(hn::MulAdd(hn::Reverse2(d, xv), hn::Load(d, sin_alt + i), hn::Mul(xv, hn::Load(d, cos_dup + i))), d,
                  tail);
        std::memcpy(v + i, tail, (len - i) * sizeof(float));
      }
    }
  }
}

// NeoX layout, one token: the halves lo = v[0, d/2) and hi = v[d/2, d) become
// lo c - hi s and lo s + hi c, with c and s read straight from the table row.
template <class D>
HWY_INLINE void neox_token(D d, const float* HWY_RESTRICT row, std::size_t head_dim, float* x, std::size_t heads,
                           std::size_t head_stride) {
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t half = head_dim / 2;
  const float* cos = row;
  const float* sin = row + half;
  const std::size_t full = half - half % lanes;
  // The partial vector's factors, padded once per token.
  HWY_ALIGN float cos_tail[max_lanes] = {};
  HWY_ALIGN float sin_tail[max_lanes] = {};
  std::memcpy(cos_tail, cos + full, (half - full) * sizeof(float));
  std::memcpy(sin_tail, sin + full, (half - full) * sizeof(float));
  for (std::size_t h = 0; h < heads; ++h) {
    float* lo = x + h * head_stride;
    float* hi = lo + half;
    for (std::size_t i = 0; i < full; i += lanes) {
      const auto a = hn::LoadU(d, lo + i);
      const auto b = hn::LoadU(d, hi + i);
      const auto c = hn::LoadU(d, cos + i);
      const auto s = hn::LoadU(d, sin + i);
      hn::StoreU(hn::NegMulAdd(b, s, hn::Mul(a, c)), d, lo + i);
      hn::StoreU(hn::MulAdd(a, s, hn::Mul(b, c)), d, hi + i);
    }
    if (full < half) {
      HWY_ALIGN float ta[max_lanes] = {};
      HWY_ALIGN float tb[max_lanes] = {};
      const std::size_t rest = (half - full) * sizeof(float);
      std::memcpy(ta, lo + full, rest);
      std::memcpy(tb, hi + full, rest);
      const auto a = hn::Load(d, ta);
      const auto b = hn::Load(d, tb);
      const auto c = hn::Load(d, cos_tail);
      const auto s = hn::Load(d, sin_tail);
      hn::Store(hn::NegMulAdd(b, s, hn::Mul(a, c)), d, ta);
      hn::Store(hn::MulAdd(a, s, hn::Mul(b, c)), d, tb);
      std::memcpy(lo + full, ta, rest);
      std::memcpy(hi + full, tb, rest);
    }
  }
}

}  // namespace rope_detail

/// Rotates `heads` vectors of each of `tokens` tokens in place; `rows` is the
/// table row of the first token's position (contract: rope_ops<backend::scalar>).
inline void rope_apply_f32(const float* rows, std::size_t head_dim, rope_layout layout, float* x, std::size_t tokens,
                           std::size_t heads, std::size_t head_stride, std::size_t token_stride) {
#if HWY_TARGET == HWY_SCALAR
  ruvllm::kernels::scalar::rope_apply(rows, head_dim, layout, x, tokens, heads, head_stride, token_stride);
#else
  const hn::ScalableTag<float> d;
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* row = rows + t * head_dim;
    float* xt = x + t * token_stride;
    if (layout == rope_layout::normal)
      rope_detail::normal_token(d, row, head_dim, xt, heads, head_stride);
    else
      rope_detail::neox_token(d, row, head_dim, xt, heads, head_stride);
  }
#endif
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_ROPE_INL_H_ toggle
