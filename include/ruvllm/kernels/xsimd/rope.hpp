#ifndef RUVLLM_KERNELS_XSIMD_ROPE_HPP
#define RUVLLM_KERNELS_XSIMD_ROPE_HPP

// RoPE kernels of backend::xsimd (see xsimd/arch.hpp on compile flags). Same
// structure as rope-inl.h; contracts: rope_ops<backend::scalar>.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ruvllm/kernels/scalar/rope.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {
namespace rope {

using batch = ::xsimd::batch<float>;
inline constexpr std::size_t lanes = batch::size;
static_assert(lanes % 2 == 0, "pairs of the normal layout must not straddle two vectors");

/// (v0, v1, v2, v3, ...) -> (v1, v0, v3, v2, ...): each 64-bit lane rotated by 32 bits.
[[nodiscard]] inline batch swap_adjacent(batch v) noexcept {
  using wide = ::xsimd::batch<std::uint64_t>;
  const wide w = ::xsimd::bitwise_cast<wide>(v);
  return ::xsimd::bitwise_cast<batch>((w << 32) | (w >> 32));
}

/// Normal layout, one token: v' = v * cos_dup + swap_adjacent(v) * sin_alt,
/// the factors expanded once per token (and 256-pair chunk) for all heads.
inline void normal_token(const float* row, std::size_t head_dim, float* x, std::size_t heads,
                         std::size_t head_stride) noexcept {
  const std::size_t half = head_dim / 2;
  constexpr std::size_t chunk = kernels::detail::rope_expand_chunk;
  alignas(64) float cos_dup[2 * chunk + lanes];
  alignas(64) float sin_alt[2 * chunk + lanes];
  for (std::size_t first = 0; first < half; first += chunk) {
    const std::size_t count = std::min(chunk, half - first);
    const std::size_t len = 2 * count;
    kernels::detail::rope_expand_pairs(row, half, first, count, cos_dup, sin_alt);
    for (std::size_t k = len; k < len + lanes; ++k) cos_dup[k] = sin_alt[k] = 0.0f;
    for (std::size_t h = 0; h < heads; ++h) {
      float* v = x + h * head_stride + 2 * first;
      std::size_t i = 0;
      for (; i + lanes <= len; i += lanes) {
        const batch xv = batch::load_unaligned(v + i);
        ::xsimd::fma(swap_adjacent(xv), batch::load_aligned(sin_alt + i), xv * batch::load_aligned(cos_dup + i))
            .store_unaligned(v + i);
      }
      if (i < len) {
        alignas(64) float tail[lanes] = {};
        std::memcpy(tail, v + i, (len - i) * sizeof(float));
        const batch xv = batch::load_aligned(tail);
        ::xsimd::fma(swap_adjacent(xv), batch::load_aligned(sin_alt + i), xv * batch::load_aligned(cos_dup + i))
            .store_aligned(tail);
        std::memcpy(v + i, tail, (len - i) * sizeof(float));
      }
    }
  }
}

/// NeoX layout, one token: lo = v[0, d/2), hi = v[d/2, d) become
/// lo c - hi s and lo s + hi c.
inline void neox_token(const float* row, std::size_t head_dim, float* x, std::size_t heads,
                       std::size_t head_stride) noexcept {
  const std::size_t half = head_dim / 2;
  const float* cos = row;
  const float* sin = row + half;
  const std::size_t full = half - half % lanes;
  alignas(64) float cos_tail[lanes] = {};
  alignas(64) float sin_tail[lanes] = {};
  std::memcpy(cos_tail, cos + full, (half - full) * sizeof(float));
  std::memcpy(sin_tail, sin + full, (half - full) * sizeof(float));
  for (std::size_t h = 0; h < heads; ++h) {
    float* lo = x + h * head_stride;
    float* hi = lo + half;
    for (std::size_t i = 0; i < full; i += lanes) {
      const batch a = batch::load_unaligned(lo + i);
      const batch b = batch::load_unaligned(hi + i);
      const batch c = batch::load_unaligned(cos + i);
      const batch s = batch::load_unaligned(sin + i);
      ::xsimd::fnma(b, s, a * c).store_unaligned(lo + i);
      ::xsimd::fma(a, s, b * c).store_unaligned(hi + i);
    }
    if (full < half) {
      alignas(64) float ta[lanes] = {};
      alignas(64) float tb[lanes] = {};
      const std::size_t rest = (half - full) * sizeof(float);
      std::memcpy(ta, lo + full, rest);
      std::memcpy(tb, hi + full, rest);
      const batch a = batch::load_aligned(ta);
      const batch b = batch::load_aligned(tb);
      const batch c = batch::load_aligned(cos_tail);
      const batch s = batch::load_aligned(sin_tail);
      ::xsimd::fnma(b, s, a * c).store_aligned(ta);
      ::xsimd::fma(a, s, b * c).store_aligned(tb);
      std::memcpy(lo + full, ta, rest);
      std::memcpy(hi + full, tb, rest);
    }
  }
}

inline void apply(const float* rows, std::size_t head_dim, rope_layout layout, float* x, std::size_t tokens,
                  std::size_t heads, std::size_t head_stride, std::size_t token_stride) noexcept {
  for (std::size_t t = 0; t < tokens; ++t) {
    if (layout == rope_layout::normal)
      normal_token(rows + t * head_dim, head_dim, x + t * token_stride, heads, head_stride);
    else
      neox_token(rows + t * head_dim, head_dim, x + t * token_stride, heads, head_stride);
  }
}

}  // namespace rope
}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct rope_ops<backend::xsimd> {
  /// Rotates a dense [tokens][heads][head_dim] batch in place, token t at
  /// position first_position + t.
  static void rope_apply(const rope_table& table, rope_layout layout, float* x, std::size_t tokens, std::size_t heads,
                         std::size_t first_position) noexcept {
    rope_apply(table, layout, x, tokens, heads, first_position,
               rope_strides{table.head_dim(), heads * table.head_dim()});
  }
  /// Rotates a strided batch in place (head h of token t at
  /// x + t * strides.token + h * strides.head).
  static void rope_apply(const rope_table& table, rope_layout layout, float* x, std::size_t tokens, std::size_t heads,
                         std::size_t first_position, rope_strides strides) noexcept {
    detail::check_rope_args(table, layout, x, tokens, heads, first_position, strides);
    if (tokens == 0 || heads == 0) return;
    xsimd_impl::rope::apply(table.row(first_position), table.head_dim(), layout, x, tokens, heads, strides.head,
                            strides.token);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_ROPE_HPP
