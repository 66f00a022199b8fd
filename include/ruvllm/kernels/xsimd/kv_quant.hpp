#ifndef RUVLLM_KERNELS_XSIMD_KV_QUANT_HPP
#define RUVLLM_KERNELS_XSIMD_KV_QUANT_HPP

// KV quantizers of backend::xsimd (see xsimd/arch.hpp on compile flags), and
// the f16 widening the xsimd attention kernels share. Contract:
// ruvllm/kernels/scalar/kv_quant.hpp. As in the Highway version, bytes equal
// the scalar reference's: the same min/max, the same scalar per-group
// scale/zero, codes from the same IEEE steps (xsimd::nearbyint rounds to
// nearest even in the default rounding mode, like std::rint). xsimd 8 has no
// f16 conversion: f16 is narrowed with ruvllm::to_f16 and widened with the
// bit manipulation below; packing codes into planes is a scalar pass.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/paged_kv_view.hpp"
#include "ruvllm/kernels/scalar/kv_quant.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"
#include "ruvllm/kernels/xsimd/half.hpp"

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {
namespace kv_x {

using vf = ::xsimd::batch<float>;
using vi = ::xsimd::batch<std::int32_t>;
inline constexpr std::size_t lanes = vf::size;

/// dst[0, n) = the n (a multiple of lanes) f16 values at p.
inline void widen_f16(const std::byte* p, std::size_t n, float* dst) noexcept {
  alignas(64) std::int32_t h[lanes];
  for (std::size_t i = 0; i < n; i += lanes) {
    for (std::size_t j = 0; j < lanes; ++j) {
      std::uint16_t u;
      std::memcpy(&u, p + 2 * (i + j), 2);
      h[j] = u;
    }
    f16_bits_to_float(vi::load_aligned(h)).store_unaligned(dst + i);
  }
}

/// Codes clamp(rint((x - zero) * inv), lo, hi) of lanes floats, into out.
template <class T>
inline void codes_of(vf x, vf zero, vf inv, float lo, float hi, T* out) noexcept {
  const vf c = ::xsimd::min(::xsimd::max(::xsimd::nearbyint((x - zero) * inv), vf(lo)), vf(hi));
  alignas(64) float tmp[lanes];
  c.store_aligned(tmp);
  for (std::size_t l = 0; l < lanes; ++l) out[l] = static_cast<T>(tmp[l]);
}

inline void q8_0_block(const float* x, std::byte* block) noexcept {
  vf amax(0.0f);
  for (std::size_t i = 0; i < 32; i += lanes) amax = ::xsimd::max(amax, ::xsimd::abs(vf::load_unaligned(x + i)));
  alignas(64) float a[lanes];
  amax.store_aligned(a);
  const f16 scale = kv_quant_detail::q8_0_scale_for(*std::max_element(a, a + lanes));
  const float s = to_float(scale);
  const vf inv(s > 0.0f ? 1.0f / s : 0.0f);
  kv_quant_detail::store_f16(block, scale);
  auto* qs = reinterpret_cast<std::int8_t*>(block + 2);
  for (std::size_t i = 0; i < 32; i += lanes)
    codes_of(vf::load_unaligned(x + i), vf(0.0f), inv, -127.0f, 127.0f, qs + i);
}

inline void pack_planes(const std::uint8_t* codes, std::size_t stride, std::size_t n, unsigned bits, std::size_t plane,
                        std::uint8_t* out) noexcept {
  std::memset(out, 0, plane);
  for (std::size_t i = 0; i < n; ++i)
    out[i % plane] = static_cast<std::uint8_t>(out[i % plane] | (codes[i * stride] << (bits * (i / plane))));
}

inline void kivi_value_block(unsigned bits, std::size_t G, const float* x, std::byte* block) noexcept {
  float mn = x[0], mx = x[0];
  std::size_t i = 0;
  if (G >= lanes) {
    vf vmin = vf::load_unaligned(x), vmax = vmin;
    for (i = lanes; i + lanes <= G; i += lanes) {
      const vf v = vf::load_unaligned(x + i);
      vmin = ::xsimd::min(vmin, v);
      vmax = ::xsimd::max(vmax, v);
    }
    alignas(64) float lo[lanes], hi[lanes];
    vmin.store_aligned(lo);
    vmax.store_aligned(hi);
    mn = *std::min_element(lo, lo + lanes);
    mx = *std::max_element(hi, hi + lanes);
  }
  for (; i < G; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  const kv_quant_detail::kivi_params p = kv_quant_detail::kivi_params_for(mn, mx, bits);
  kv_quant_detail::store_f16(block, p.scale);
  kv_quant_detail::store_f16(block + 2, p.zero);
  const float zero = to_float(p.zero), levels = static_cast<float>((1u << bits) - 1u);
  alignas(64) std::uint8_t codes[kv_max_head_dim];
  for (i = 0; i + lanes <= G; i += lanes)
    codes_of(vf::load_unaligned(x + i), vf(zero), vf(p.inv_scale), 0.0f, levels, codes + i);
  for (; i < G; ++i) codes[i] = static_cast<std::uint8_t>(kv_quant_detail::kivi_code(x[i], zero, p.inv_scale, levels));
  pack_planes(codes, 1, G, bits, G * bits / 8, reinterpret_cast<std::uint8_t*>(block + 4));
}

/// The KIVI key blocks of one group of n tokens, channels in lanes.
inline void kivi_key_group(unsigned bits, std::size_t G, const float* x, std::size_t stride, std::size_t n,
                           std::size_t D, std::byte* group) noexcept {
  const std::size_t S = kv_kivi_block_bytes(bits, G), plane = G * bits / 8;
  const float levels = static_cast<float>((1u << bits) - 1u);
  alignas(64) float zero[lanes], inv[lanes], mn[lanes], mx[lanes];
  alignas(64) std::uint8_t codes[kv_max_tokens_per_page * lanes];  // [token][lane]
  for (std::size_t c0 = 0; c0 < D; c0 += lanes) {
    vf vmin = vf::load_unaligned(x + c0), vmax = vmin;
    for (std::size_t t = 1; t < n; ++t) {
      const vf v = vf::load_unaligned(x + t * stride + c0);
      vmin = ::xsimd::min(vmin, v);
      vmax = ::xsimd::max(vmax, v);
    }
    vmin.store_aligned(mn);
    vmax.store_aligned(mx);
    for (std::size_t l = 0; l < lanes; ++l) {
      const kv_quant_detail::kivi_params p = kv_quant_detail::kivi_params_for(mn[l], mx[l], bits);
      std::byte* block = group + S * (c0 + l);
      kv_quant_detail::store_f16(block, p.scale);
      kv_quant_detail::store_f16(block + 2, p.zero);
      zero[l] = to_float(p.zero);
      inv[l] = p.inv_scale;
    }
    const vf vz = vf::load_aligned(zero), vinv = vf::load_aligned(inv);
    for (std::size_t t = 0; t < n; ++t)
      codes_of(vf::load_unaligned(x + t * stride + c0), vz, vinv, 0.0f, levels, codes + t * lanes);
    for (std::size_t l = 0; l < lanes; ++l)
      pack_planes(codes + l, lanes, n, bits, plane, reinterpret_cast<std::uint8_t*>(group + S * (c0 + l) + 4));
  }
}

inline void quantize(kv_format_desc f, kv_role r, const float* src, std::size_t src_stride, std::size_t first_token,
                     std::size_t tokens, std::size_t D, std::byte* dst) noexcept {
  switch (f.format) {
    case kv_format::f32:
      for (std::size_t t = 0; t < tokens; ++t)
        std::memcpy(dst + 4 * (first_token + t) * D, src + t * src_stride, D * sizeof(float));
      return;
    case kv_format::f16:
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t c = 0; c < D; ++c)
          kv_quant_detail::store_f16(dst + 2 * ((first_token + t) * D + c), to_f16(src[t * src_stride + c]));
      return;
    case kv_format::q8_0: {
      const std::size_t row = D / 32 * sizeof(block_q8_0);
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t b = 0; b < D / 32; ++b)
          q8_0_block(src + t * src_stride + 32 * b, dst + (first_token + t) * row + b * sizeof(block_q8_0));
      return;
    }
    case kv_format::kivi4:
    case kv_format::kivi2: {
      const unsigned bits = kv_bits(f.format);
      const std::size_t G = f.group, S = kv_kivi_block_bytes(bits, G);
      if (r == kv_role::key) {
        for (std::size_t t0 = 0; t0 < tokens; t0 += G)
          kivi_key_group(bits, G, src + t0 * src_stride, src_stride, std::min(G, tokens - t0), D,
                         dst + S * ((first_token + t0) / G) * D);
      } else {
        for (std::size_t t = 0; t < tokens; ++t)
          for (std::size_t j = 0; j < D / G; ++j)
            kivi_value_block(bits, G, src + t * src_stride + j * G, dst + S * ((first_token + t) * (D / G) + j));
      }
      return;
    }
  }
}

inline void dequantize(kv_format_desc f, kv_role r, const std::byte* src, std::size_t first_token, std::size_t tokens,
                       std::size_t D, float* dst, std::size_t dst_stride) noexcept {
  if (f.format == kv_format::f32) {
    for (std::size_t t = 0; t < tokens; ++t)
      std::memcpy(dst + t * dst_stride, src + 4 * (first_token + t) * D, D * sizeof(float));
    return;
  }
  if (f.format == kv_format::f16) {
    for (std::size_t t = 0; t < tokens; ++t) widen_f16(src + 2 * (first_token + t) * D, D, dst + t * dst_stride);
    return;
  }
  if (f.format == kv_format::q8_0) {
    const std::size_t row = D / 32 * sizeof(block_q8_0);
    alignas(64) float codes[32];
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t b = 0; b < D / 32; ++b) {
        const std::byte* block = src + (first_token + t) * row + b * sizeof(block_q8_0);
        const vf scale(to_float(kv_quant_detail::load_f16(block)));
        const auto* qs = reinterpret_cast<const std::int8_t*>(block + 2);
        for (std::size_t i = 0; i < 32; ++i) codes[i] = static_cast<float>(qs[i]);
        for (std::size_t i = 0; i < 32; i += lanes)
          (scale * vf::load_aligned(codes + i)).store_unaligned(dst + t * dst_stride + 32 * b + i);
      }
    return;
  }
  // KIVI: the scalar reference's arithmetic (one code at a time).
  scalar::dequantize_page_head(f, r, src, first_token, tokens, D, dst, dst_stride);
}

}  // namespace kv_x
}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct kv_quant_ops<backend::xsimd> {
  /// Quantizes `tokens` tokens of one page-head (see scalar::quantize_page_head).
  static void kv_quantize_page_head(kv_format_desc f, kv_role r, const float* src, std::size_t src_stride,
                                    std::size_t first_token, std::size_t tokens, std::size_t head_dim,
                                    std::byte* dst) noexcept {
    RUVLLM_ASSERT(kv_quant_detail::page_args_ok(f, r, first_token, head_dim));
    xsimd_impl::kv_x::quantize(f, r, src, src_stride, first_token, tokens, head_dim, dst);
  }
  /// Dequantizes `tokens` tokens of one page-head (see scalar::dequantize_page_head).
  static void kv_dequantize_page_head(kv_format_desc f, kv_role r, const std::byte* src, std::size_t first_token,
                                      std::size_t tokens, std::size_t head_dim, float* dst,
                                      std::size_t dst_stride) noexcept {
    RUVLLM_ASSERT(kv_quant_detail::page_args_ok(f, r, 0, head_dim));
    xsimd_impl::kv_x::dequantize(f, r, src, first_token, tokens, head_dim, dst, dst_stride);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_KV_QUANT_HPP
