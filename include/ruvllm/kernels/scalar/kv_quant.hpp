#ifndef RUVLLM_KERNELS_SCALAR_KV_QUANT_HPP
#define RUVLLM_KERNELS_SCALAR_KV_QUANT_HPP

// KV-cache quantizers and dequantizers (the kv_quant family): f16, q8_0,
// KIVI-4 and KIVI-2, in the page layouts of ruvllm/kernels/paged_kv_view.hpp.
// The kv layer writes new tokens with them and migrates blocks between tiers
// (e.g. dequantize an f16 page-head into a float scratch, quantize it to
// KIVI-2); tests use them to build pages. Scalar references, and the contract
// every backend's kv_quant_ops shares.
//
// Rounding (identical on every backend, because each step is an IEEE
// operation that compilers cannot contract into an FMA):
//  * f16: to_f16 (nearest, ties to even).
//  * q8_0 (per 32 channels of one token): amax = max |x|; d = the smallest
//    f16 >= amax / 127 (rounded up, so no code clips); code =
//    rint(x * (1 / d)) clamped to [-127, 127] (nearest, ties to even, in the
//    default rounding mode), 0 when d == 0. |x - d * code| <= d / 2 (up to
//    one rounding of x / d). Unlike ggml's quantize_row_q8_0 (which rounds d
//    to nearest and codes with the unrounded d), d is rounded up: the stored
//    d is then the one every code was computed with, and the bound holds for
//    the stored values. The blocks are GGUF Q8_0 blocks either way.
//  * KIVI (asymmetric min/max per group of G, codes in [0, L], L = 2^Bits - 1):
//    zero = the largest f16 <= min; scale = the smallest f16 >=
//    (max - zero) / L (in double); code = rint((x - zero) * (1 / scale))
//    clamped to [0, L] (0 when scale == 0, which means every x == zero).
//    Rounding zero down and scale up keeps [min, max] inside
//    [zero, zero + L * scale], so |x - (zero + scale * code)| <= scale / 2 for
//    every element (up to the float rounding of x - zero and of the product),
//    which plain nearest rounding of zero and scale to f16 would break for
//    groups far from 0 (|min| >> max - min).
// Dequantization: q8_0 x = d * code; KIVI x = zero + scale * code (one
// multiply and one add; a compiler may fuse them, so backends agree to an ulp
// of the result, not bit for bit).
//
// Preconditions: finite inputs with |x| <= 65504 / 2 (scale and zero must be
// finite f16); head_dim and groups as kv_format_check accepts; a KIVI key
// page-head is written in whole groups (first_token % G == 0; a last partial
// group quantizes only the tokens given and stores code 0 for the others, so
// appending to it later means requantizing it from the original values).
// Nothing allocates; pointers may be null only when nothing is read or written.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/config.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/core/precision.hpp"
#include "ruvllm/kernels/paged_kv_view.hpp"

namespace ruvllm::kernels {

/// KV quantizer entry points of backend B (one specialization per backend);
/// the contract is at the top of ruvllm/kernels/scalar/kv_quant.hpp.
template <Backend B>
struct kv_quant_ops;

namespace kv_quant_detail {

/// The f16 one step toward -inf (+inf) from a finite h.
[[nodiscard]] constexpr f16 f16_next_down(f16 h) noexcept {
  if ((h.bits & 0x7FFFu) == 0) return f16{0x8001u};  // +-0 -> -smallest subnormal
  return f16{static_cast<std::uint16_t>((h.bits & 0x8000u) != 0 ? h.bits + 1u : h.bits - 1u)};
}
[[nodiscard]] constexpr f16 f16_next_up(f16 h) noexcept {
  if ((h.bits & 0x7FFFu) == 0) return f16{0x0001u};
  return f16{static_cast<std::uint16_t>((h.bits & 0x8000u) != 0 ? h.bits - 1u : h.bits + 1u)};
}

/// The largest f16 <= x.
[[nodiscard]] constexpr f16 f16_at_most(float x) noexcept {
  const f16 h = to_f16(x);
  return to_float(h) > x ? f16_next_down(h) : h;
}

/// The smallest f16 >= x (x >= 0, in double so that narrowing to float
/// cannot round it down first).
[[nodiscard]] constexpr f16 f16_at_least(double x) noexcept {
  const f16 h = to_f16(static_cast<float>(x));
  return static_cast<double>(to_float(h)) < x ? f16_next_up(h) : h;
}

/// KIVI scale and zero for a group with minimum mn and maximum mx.
struct kivi_params {
  f16 scale;
  f16 zero;
  float inv_scale;  // 1 / scale, 0 when scale == 0
};

[[nodiscard]] constexpr kivi_params kivi_params_for(float mn, float mx, unsigned bits) noexcept {
  // + 0.0f turns a -0 minimum into +0, so every backend stores the same zero
  // whichever of two equal signed zeros its min reduction returned.
  const f16 zero = f16_at_most(mn + 0.0f);
  const double levels = static_cast<double>((1u << bits) - 1u);
  const f16 scale = f16_at_least((static_cast<double>(mx) - static_cast<double>(to_float(zero))) / levels);
  const float s = to_float(scale);
  return {scale, zero, s > 0.0f ? 1.0f / s : 0.0f};
}

/// A KIVI code: rint((x - zero) * inv) clamped to [0, levels].
[[nodiscard]] inline std::uint32_t kivi_code(float x, float zero, float inv, float levels) noexcept {
  const float c = std::rint((x - zero) * inv);
  return static_cast<std::uint32_t>(std::clamp(c, 0.0f, levels));
}

/// q8_0 scale for a block with max |x| = amax.
[[nodiscard]] constexpr f16 q8_0_scale_for(float amax) noexcept {
  return f16_at_least(static_cast<double>(amax) / 127.0);
}

[[nodiscard]] inline std::int8_t q8_0_code(float x, float inv) noexcept {
  return static_cast<std::int8_t>(std::clamp(std::rint(x * inv), -127.0f, 127.0f));
}

[[nodiscard]] inline f16 load_f16(const std::byte* p) noexcept {
  f16 h;
  std::memcpy(&h, p, sizeof h);
  return h;
}
inline void store_f16(std::byte* p, f16 h) noexcept { std::memcpy(p, &h, sizeof h); }

/// Plane P: the code bytes of a KIVI block of `group` elements.
[[nodiscard]] constexpr std::size_t kivi_plane(unsigned bits, std::size_t group) noexcept { return group * bits / 8; }

/// Quantizes the n (<= group) values x[i * stride] into the KIVI block at
/// `block` (scale, zero, planar codes; elements n .. group - 1 get code 0).
inline void kivi_quantize_block(unsigned bits, std::size_t group, const float* x, std::size_t stride, std::size_t n,
                                std::byte* block) noexcept {
  RUVLLM_ASSERT(n >= 1 && n <= group);
  float mn = x[0], mx = x[0];
  for (std::size_t i = 1; i < n; ++i) {
    mn = std::min(mn, x[i * stride]);
    mx = std::max(mx, x[i * stride]);
  }
  const kivi_params p = kivi_params_for(mn, mx, bits);
  store_f16(block, p.scale);
  store_f16(block + 2, p.zero);
  const std::size_t plane = kivi_plane(bits, group);
  auto* codes = reinterpret_cast<std::uint8_t*>(block + 4);
  std::memset(codes, 0, plane);
  const float zero = to_float(p.zero);
  const auto levels = static_cast<float>((1u << bits) - 1u);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t c = kivi_code(x[i * stride], zero, p.inv_scale, levels);
    codes[i % plane] = static_cast<std::uint8_t>(codes[i % plane] | (c << (bits * (i / plane))));
  }
}

/// The code of element i of a KIVI block's planar codes.
[[nodiscard]] inline std::uint32_t kivi_code_at(const std::uint8_t* codes, unsigned bits, std::size_t plane,
                                                std::size_t i) noexcept {
  return (std::uint32_t{codes[i % plane]} >> (bits * (i / plane))) & ((1u << bits) - 1u);
}

/// Writes the n first elements of the KIVI block at `block` to x[i * stride].
inline void kivi_dequantize_block(unsigned bits, std::size_t group, const std::byte* block, float* x,
                                  std::size_t stride, std::size_t n) noexcept {
  const float scale = to_float(load_f16(block));
  const float zero = to_float(load_f16(block + 2));
  const auto* codes = reinterpret_cast<const std::uint8_t*>(block + 4);
  const std::size_t plane = kivi_plane(bits, group);
  for (std::size_t i = 0; i < n; ++i)
    x[i * stride] = zero + scale * static_cast<float>(kivi_code_at(codes, bits, plane, i));
}

/// Quantizes 32 consecutive values into a q8_0 block.
inline void q8_0_quantize_block(const float* x, std::byte* block) noexcept {
  float amax = 0.0f;
  for (std::size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const f16 d = q8_0_scale_for(amax);
  const float df = to_float(d);
  const float inv = df > 0.0f ? 1.0f / df : 0.0f;
  store_f16(block, d);
  auto* qs = reinterpret_cast<std::int8_t*>(block + 2);
  for (std::size_t i = 0; i < 32; ++i) qs[i] = q8_0_code(x[i], inv);
}

inline void q8_0_dequantize_block(const std::byte* block, float* x) noexcept {
  const float d = to_float(load_f16(block));
  const auto* qs = reinterpret_cast<const std::int8_t*>(block + 2);
  for (std::size_t i = 0; i < 32; ++i) x[i] = d * static_cast<float>(qs[i]);
}

/// The preconditions of the page-head forms.
[[nodiscard]] inline bool page_args_ok(kv_format_desc f, kv_role r, std::size_t first_token,
                                       std::size_t head_dim) noexcept {
  const bool kivi = f.format == kv_format::kivi4 || f.format == kv_format::kivi2;
  return head_dim % kv_head_dim_multiple == 0 && (!kivi || f.group > 0) &&
         (!kivi || (r == kv_role::key ? first_token % f.group == 0 : head_dim % f.group == 0)) &&
         (f.format != kv_format::q8_0 || head_dim % 32 == 0);
}

}  // namespace kv_quant_detail

namespace scalar {

/// Quantizes n (1..Group) values x[i * stride] into one KIVI block (codes of
/// elements n .. Group - 1 are 0). Rounding as in the file comment.
template <int Bits, std::size_t Group>
void quantize_kivi(const float* x, std::size_t stride, std::size_t n, block_kivi<Bits, Group>& out) noexcept {
  kv_quant_detail::kivi_quantize_block(Bits, Group, x, stride, n, reinterpret_cast<std::byte*>(&out));
}

/// The first n values of a KIVI block, to x[i * stride].
template <int Bits, std::size_t Group>
void dequantize_kivi(const block_kivi<Bits, Group>& in, float* x, std::size_t stride, std::size_t n) noexcept {
  kv_quant_detail::kivi_dequantize_block(Bits, Group, reinterpret_cast<const std::byte*>(&in), x, stride, n);
}

/// Quantizes 32 values into a q8_0 block (scale rounded up; see the file comment).
inline void quantize_q8_0_kv(const float* x, block_q8_0& out) noexcept {
  kv_quant_detail::q8_0_quantize_block(x, reinterpret_cast<std::byte*>(&out));
}

/// The 32 values of a q8_0 block.
inline void dequantize_q8_0_kv(const block_q8_0& in, float* x) noexcept {
  kv_quant_detail::q8_0_dequantize_block(reinterpret_cast<const std::byte*>(&in), x);
}

/// Writes tokens first_token .. first_token + tokens - 1 of one page-head in
/// format f and role r (layouts: paged_kv_view.hpp) from src, a [token][dim]
/// float matrix whose token t (relative to first_token) starts at
/// src + t * src_stride. Only those tokens' bytes are written (for KIVI keys,
/// the groups they span).
inline void quantize_page_head(kv_format_desc f, kv_role r, const float* src, std::size_t src_stride,
                               std::size_t first_token, std::size_t tokens, std::size_t head_dim,
                               std::byte* dst) noexcept {
  namespace d = kv_quant_detail;
  RUVLLM_ASSERT(d::page_args_ok(f, r, first_token, head_dim));
  const std::size_t D = head_dim;
  switch (f.format) {
    case kv_format::f32: {
      for (std::size_t t = 0; t < tokens; ++t)
        std::memcpy(dst + 4 * (first_token + t) * D, src + t * src_stride, D * sizeof(float));
      return;
    }
    case kv_format::f16: {
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t c = 0; c < D; ++c)
          d::store_f16(dst + 2 * ((first_token + t) * D + c), to_f16(src[t * src_stride + c]));
      return;
    }
    case kv_format::q8_0: {
      const std::size_t row = D / 32 * sizeof(block_q8_0);
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t b = 0; b < D / 32; ++b)
          d::q8_0_quantize_block(src + t * src_stride + 32 * b, dst + (first_token + t) * row + b * sizeof(block_q8_0));
      return;
    }
    case kv_format::kivi4:
    case kv_format::kivi2: {
      const unsigned bits = kv_bits(f.format);
      const std::size_t G = f.group, S = kv_kivi_block_bytes(bits, G);
      if (r == kv_role::key) {
        for (std::size_t t0 = 0; t0 < tokens; t0 += G) {
          const std::size_t n = std::min(G, tokens - t0), j = (first_token + t0) / G;
          for (std::size_t c = 0; c < D; ++c)
            d::kivi_quantize_block(bits, G, src + t0 * src_stride + c, src_stride, n, dst + S * (j * D + c));
        }
      } else {
        for (std::size_t t = 0; t < tokens; ++t)
          for (std::size_t j = 0; j < D / G; ++j)
            d::kivi_quantize_block(bits, G, src + t * src_stride + j * G, 1, G,
                                   dst + S * ((first_token + t) * (D / G) + j));
      }
      return;
    }
  }
}

/// Reads tokens first_token .. first_token + tokens - 1 of one page-head in
/// format f and role r into dst, a [token][dim] float matrix with token t
/// (relative to first_token) at dst + t * dst_stride.
inline void dequantize_page_head(kv_format_desc f, kv_role r, const std::byte* src, std::size_t first_token,
                                 std::size_t tokens, std::size_t head_dim, float* dst,
                                 std::size_t dst_stride) noexcept {
  namespace d = kv_quant_detail;
  RUVLLM_ASSERT(f.format == kv_format::f32 || f.format == kv_format::f16 || f.format == kv_format::q8_0 ||
                r == kv_role::value || f.group > 0);
  const std::size_t D = head_dim;
  switch (f.format) {
    case kv_format::f32: {
      for (std::size_t t = 0; t < tokens; ++t)
        std::memcpy(dst + t * dst_stride, src + 4 * (first_token + t) * D, D * sizeof(float));
      return;
    }
    case kv_format::f16: {
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t c = 0; c < D; ++c)
          dst[t * dst_stride + c] = to_float(d::load_f16(src + 2 * ((first_token + t) * D + c)));
      return;
    }
    case kv_format::q8_0: {
      const std::size_t row = D / 32 * sizeof(block_q8_0);
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t b = 0; b < D / 32; ++b)
          d::q8_0_dequantize_block(src + (first_token + t) * row + b * sizeof(block_q8_0),
                                   dst + t * dst_stride + 32 * b);
      return;
    }
    case kv_format::kivi4:
    case kv_format::kivi2: {
      const unsigned bits = kv_bits(f.format);
      const std::size_t G = f.group, S = kv_kivi_block_bytes(bits, G), plane = d::kivi_plane(bits, G);
      for (std::size_t t = 0; t < tokens; ++t) {
        const std::size_t tt = first_token + t;
        for (std::size_t c = 0; c < D; ++c) {
          const std::byte* block = r == kv_role::key ? src + S * ((tt / G) * D + c) : src + S * (tt * (D / G) + c / G);
          const std::size_t i = r == kv_role::key ? tt % G : c % G;
          const float scale = to_float(d::load_f16(block));
          const float zero = to_float(d::load_f16(block + 2));
          const auto code = d::kivi_code_at(reinterpret_cast<const std::uint8_t*>(block + 4), bits, plane, i);
          dst[t * dst_stride + c] = zero + scale * static_cast<float>(code);
        }
      }
      return;
    }
  }
}

}  // namespace scalar

/// backend::scalar's KV quantizers; every backend's kv_quant_ops has these
/// entry points with the contract at the top of this file.
template <>
struct kv_quant_ops<backend::scalar> {
  /// Quantizes `tokens` tokens of one page-head (see scalar::quantize_page_head).
  static void kv_quantize_page_head(kv_format_desc f, kv_role r, const float* src, std::size_t src_stride,
                                    std::size_t first_token, std::size_t tokens, std::size_t head_dim,
                                    std::byte* dst) noexcept {
    scalar::quantize_page_head(f, r, src, src_stride, first_token, tokens, head_dim, dst);
  }
  /// Dequantizes `tokens` tokens of one page-head (see scalar::dequantize_page_head).
  static void kv_dequantize_page_head(kv_format_desc f, kv_role r, const std::byte* src, std::size_t first_token,
                                      std::size_t tokens, std::size_t head_dim, float* dst,
                                      std::size_t dst_stride) noexcept {
    scalar::dequantize_page_head(f, r, src, first_token, tokens, head_dim, dst, dst_stride);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_SCALAR_KV_QUANT_HPP

// The dispatched KV quantizers, for RUVLLM_KERNELS_EXPORTED in dispatch.hpp.
#define RUVLLM_KV_QUANT_EXPORTED(X)                                                                                \
  X(void, kv_quantize_page_head,                                                                                   \
    (ruvllm::kernels::kv_format_desc f, ruvllm::kernels::kv_role r, const float* src, std::size_t src_stride,      \
     std::size_t first_token, std::size_t tokens, std::size_t head_dim, std::byte* dst),                           \
    (f, r, src, src_stride, first_token, tokens, head_dim, dst))                                                   \
  X(void, kv_dequantize_page_head,                                                                                 \
    (ruvllm::kernels::kv_format_desc f, ruvllm::kernels::kv_role r, const std::byte* src, std::size_t first_token, \
     std::size_t tokens, std::size_t head_dim, float* dst, std::size_t dst_stride),                                \
    (f, r, src, first_token, tokens, head_dim, dst, dst_stride))
