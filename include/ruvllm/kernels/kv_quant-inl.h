// Highway KV quantizers and dequantizers (f16, q8_0, KIVI), compiled once per
// SIMD target, plus the widening loads the attention kernels share. No
// include guard: the toggle below lets hwy/foreach_target.h re-include this
// file for each target (through kernels-inl.h, and attention-inl.h, which
// includes it first). The contract, rounding included, is at the top of
// ruvllm/kernels/scalar/kv_quant.hpp; the layouts at the top of
// ruvllm/kernels/paged_kv_view.hpp.
//
// Quantized bytes equal the scalar reference's bit for bit: every step is the
// same IEEE operation (min/max, x - zero, * (1 / scale), round to nearest
// even, clamp), and the per-group scale/zero are computed by the same scalar
// function (kv_quant_detail::kivi_params_for / q8_0_scale_for) from the same
// min/max. What is vectorized: the min/max and amax reductions, the codes,
// f16 narrowing (VCVTPS2PH on AVX2/AVX3, which equals ruvllm::to_f16; the
// SSSE3/SSE4 emulation truncates, so those targets narrow with to_f16), and
// every dequantization. Packing codes into planes stays a scalar pass over a
// small code tile.

#if defined(RUVLLM_KERNELS_KV_QUANT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_KV_QUANT_INL_H_
#undef RUVLLM_KERNELS_KV_QUANT_INL_H_
#else
#define RUVLLM_KERNELS_KV_QUANT_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/paged_kv_view.hpp"
#include "ruvllm/kernels/scalar/kv_quant.hpp"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
namespace kv_simd {

#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && \
    !defined(HWY_DISABLE_F16C)
inline constexpr bool native_f16 = true;  // VCVTPH2PS / VCVTPS2PH: bit-exact to_float / to_f16
#else
inline constexpr bool native_f16 = false;
#endif

// ------------------------------------------------------------ widening loads

/// Floats of the f16 bit patterns in the low 16 bits of the u32 lanes of h,
/// bit for bit ruvllm::to_float: subnormals through an exact int-to-float
/// conversion (so DAZ cannot flush them), inf kept, NaN made quiet.
template <class D, class VU>
HWY_INLINE hn::Vec<D> f16_bits_to_f32(D df, VU h) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const auto mag = hn::And(h, hn::Set(du, 0x7FFFu));
  const auto mag_i = hn::BitCast(di, mag);
  const auto rebias = hn::Set(du, 112u << 23);  // exponent 15 -> 127
  const auto normal = hn::Add(hn::ShiftLeft<13>(mag), rebias);
  const auto quiet =
      hn::IfThenElseZero(hn::RebindMask(du, hn::Gt(mag_i, hn::Set(di, 0x7C00))), hn::Set(du, 0x0040'0000u));
  const auto special = hn::Or(hn::Add(normal, rebias), quiet);  // exponent 31 -> 255
  const auto subnormal = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, mag_i), hn::Set(df, 1.0f / 16777216.0f)));
  auto bits = hn::IfThenElse(hn::RebindMask(du, hn::Gt(mag_i, hn::Set(di, 0x7BFF))), special, normal);
  bits = hn::IfThenElse(hn::RebindMask(du, hn::Lt(mag_i, hn::Set(di, 0x0400))), subnormal, bits);
  return hn::BitCast(df, hn::Or(bits, sign));
}

/// Lanes(d) f16 values from p (any alignment), widened exactly.
template <class D>
HWY_INLINE hn::Vec<D> load_f16(D d, const std::byte* HWY_RESTRICT p) {
  if constexpr (native_f16) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  } else {
    const hn::Rebind<std::uint16_t, D> d16;
    const hn::RebindToUnsigned<D> du;
    return f16_bits_to_f32(d, hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p))));
  }
}

/// Lanes(d) int8 codes from p, as floats.
template <class D>
HWY_INLINE hn::Vec<D> load_i8(D d, const std::byte* HWY_RESTRICT p) {
  const hn::Rebind<std::int8_t, D> d8;
  const hn::RebindToSigned<D> di;
  return hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const std::int8_t*>(p))));
}

/// Lanes(d) consecutive KIVI codes from `bytes` (bits [shift, shift + bits)
/// of each byte; mask = 2^bits - 1), as floats: one widening load, a shift
/// and a mask for Lanes(d) codes of one plane.
template <class D>
HWY_INLINE hn::Vec<D> load_codes(D d, const std::uint8_t* HWY_RESTRICT bytes, int shift,
                                 hn::Vec<hn::RebindToUnsigned<D>> mask) {
  const hn::Rebind<std::uint8_t, D> d8;
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const auto wide = hn::PromoteTo(du, hn::LoadU(d8, bytes));
  return hn::ConvertTo(d, hn::BitCast(di, hn::And(hn::ShiftRightSame(wide, shift), mask)));
}

/// The 32 bits at p (an f16 pair, or an f16 and two code bytes).
HWY_INLINE std::uint32_t load_u32(const std::byte* p) {
  std::uint32_t x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

// -------------------------------------------------------------- quantizers

using DF = hn::ScalableTag<float>;

/// n floats (n a multiple of Lanes) to f16.
HWY_INLINE void narrow_f16(const float* HWY_RESTRICT x, std::size_t n, std::byte* HWY_RESTRICT dst) {
  if constexpr (native_f16) {
    const DF d;
    const hn::Rebind<hwy::float16_t, DF> dh;
    for (std::size_t c = 0; c < n; c += hn::Lanes(d))
      hn::StoreU(hn::DemoteTo(dh, hn::LoadU(d, x + c)), dh, reinterpret_cast<hwy::float16_t*>(dst + 2 * c));
  } else {
    for (std::size_t c = 0; c < n; ++c) kv_quant_detail::store_f16(dst + 2 * c, to_f16(x[c]));
  }
}

/// Codes clamp(rint((x - zero) * inv), lo, hi) of Lanes(d) floats, as int32.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> codes_of(D d, hn::Vec<D> x, hn::Vec<D> zero, hn::Vec<D> inv, float lo,
                                                   float hi) {
  const auto c = hn::Round(hn::Mul(hn::Sub(x, zero), inv));
  return hn::ConvertTo(hn::RebindToSigned<D>(), hn::Min(hn::Max(c, hn::Set(d, lo)), hn::Set(d, hi)));
}

/// One q8_0 block from 32 consecutive floats.
HWY_INLINE void q8_0_block(const float* HWY_RESTRICT x, std::byte* HWY_RESTRICT block) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  auto amax = hn::Zero(d);
  for (std::size_t i = 0; i < 32; i += L) amax = hn::Max(amax, hn::Abs(hn::LoadU(d, x + i)));
  const f16 scale = kv_quant_detail::q8_0_scale_for(hn::GetLane(hn::MaxOfLanes(d, amax)));
  const float s = to_float(scale);
  const auto inv = hn::Set(d, s > 0.0f ? 1.0f / s : 0.0f);
  kv_quant_detail::store_f16(block, scale);
  const hn::Rebind<std::int8_t, DF> d8;
  for (std::size_t i = 0; i < 32; i += L) {
    const auto q = codes_of(d, hn::LoadU(d, x + i), hn::Zero(d), inv, -127.0f, 127.0f);
    hn::StoreU(hn::DemoteTo(d8, q), d8, reinterpret_cast<std::int8_t*>(block + 2 + i));
  }
}

/// Packs the n (<= group) codes[i] (at a stride) of one KIVI block into its planes.
HWY_INLINE void pack_planes(const std::uint8_t* codes, std::size_t stride, std::size_t n, unsigned bits,
                            std::size_t plane, std::uint8_t* HWY_RESTRICT out) {
  std::memset(out, 0, plane);
  for (std::size_t i = 0; i < n; ++i)
    out[i % plane] = static_cast<std::uint8_t>(out[i % plane] | (codes[i * stride] << (bits * (i / plane))));
}

/// One KIVI value block: G consecutive channels of one token.
HWY_INLINE void kivi_value_block(unsigned bits, std::size_t G, const float* HWY_RESTRICT x,
                                 std::byte* HWY_RESTRICT block) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  auto vmin = hn::Set(d, x[0]), vmax = vmin;
  std::size_t i = 0;
  for (; i + L <= G; i += L) {
    const auto v = hn::LoadU(d, x + i);
    vmin = hn::Min(vmin, v);
    vmax = hn::Max(vmax, v);
  }
  float mn = hn::GetLane(hn::MinOfLanes(d, vmin)), mx = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (std::size_t t = i; t < G; ++t) {
    mn = std::min(mn, x[t]);
    mx = std::max(mx, x[t]);
  }
  const kv_quant_detail::kivi_params p = kv_quant_detail::kivi_params_for(mn, mx, bits);
  kv_quant_detail::store_f16(block, p.scale);
  kv_quant_detail::store_f16(block + 2, p.zero);
  const float zero = to_float(p.zero), levels = static_cast<float>((1u << bits) - 1u);
  HWY_ALIGN std::uint8_t codes[kv_max_head_dim];
  const hn::Rebind<std::uint8_t, DF> d8;
  const auto vz = hn::Set(d, zero), vi = hn::Set(d, p.inv_scale);
  for (i = 0; i + L <= G; i += L)
    hn::StoreU(hn::DemoteTo(d8, codes_of(d, hn::LoadU(d, x + i), vz, vi, 0.0f, levels)), d8, codes + i);
  for (; i < G; ++i) codes[i] = static_cast<std::uint8_t>(kv_quant_detail::kivi_code(x[i], zero, p.inv_scale, levels));
  pack_planes(codes, 1, G, bits, G * bits / 8, reinterpret_cast<std::uint8_t*>(block + 4));
}

/// The KIVI key blocks of one group of n tokens (rows at a stride), all
/// channels: min/max and codes across channels in lanes.
HWY_INLINE void kivi_key_group(unsigned bits, std::size_t G, const float* HWY_RESTRICT x, std::size_t stride,
                               std::size_t n, std::size_t D, std::byte* HWY_RESTRICT group) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t S = kv_kivi_block_bytes(bits, G), plane = G * bits / 8;
  const float levels = static_cast<float>((1u << bits) - 1u);
  const hn::Rebind<std::uint8_t, DF> d8;
  HWY_ALIGN float zero[HWY_MAX_BYTES / sizeof(float)];
  HWY_ALIGN float inv[HWY_MAX_BYTES / sizeof(float)];
  HWY_ALIGN float mn[HWY_MAX_BYTES / sizeof(float)];
  HWY_ALIGN float mx[HWY_MAX_BYTES / sizeof(float)];
  HWY_ALIGN std::uint8_t codes[kv_max_tokens_per_page * (HWY_MAX_BYTES / sizeof(float))];  // [token][lane]
  for (std::size_t c0 = 0; c0 < D; c0 += L) {
    auto vmin = hn::LoadU(d, x + c0), vmax = vmin;
    for (std::size_t t = 1; t < n; ++t) {
      const auto v = hn::LoadU(d, x + t * stride + c0);
      vmin = hn::Min(vmin, v);
      vmax = hn::Max(vmax, v);
    }
    hn::Store(vmin, d, mn);
    hn::Store(vmax, d, mx);
    for (std::size_t l = 0; l < L; ++l) {
      const kv_quant_detail::kivi_params p = kv_quant_detail::kivi_params_for(mn[l], mx[l], bits);
      std::byte* block = group + S * (c0 + l);
      kv_quant_detail::store_f16(block, p.scale);
      kv_quant_detail::store_f16(block + 2, p.zero);
      zero[l] = to_float(p.zero);
      inv[l] = p.inv_scale;
    }
    const auto vz = hn::Load(d, zero), vi = hn::Load(d, inv);
    for (std::size_t t = 0; t < n; ++t)
      hn::StoreU(hn::DemoteTo(d8, codes_of(d, hn::LoadU(d, x + t * stride + c0), vz, vi, 0.0f, levels)), d8,
                 codes + t * L);
    for (std::size_t l = 0; l < L; ++l)
      pack_planes(codes + l, L, n, bits, plane, reinterpret_cast<std::uint8_t*>(group + S * (c0 + l) + 4));
  }
}

// ------------------------------------------------------------ page-heads

inline void quantize(kv_format_desc f, kv_role r, const float* src, std::size_t src_stride, std::size_t first_token,
                     std::size_t tokens, std::size_t D, std::byte* dst) {
  switch (f.format) {
    case kv_format::f32:
      for (std::size_t t = 0; t < tokens; ++t)
        std::memcpy(dst + 4 * (first_token + t) * D, src + t * src_stride, D * sizeof(float));
      return;
    case kv_format::f16:
      for (std::size_t t = 0; t < tokens; ++t) narrow_f16(src + t * src_stride, D, dst + 2 * (first_token + t) * D);
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
                       std::size_t D, float* dst, std::size_t dst_stride) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  switch (f.format) {
    case kv_format::f32:
      for (std::size_t t = 0; t < tokens; ++t)
        std::memcpy(dst + t * dst_stride, src + 4 * (first_token + t) * D, D * sizeof(float));
      return;
    case kv_format::f16:
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t c = 0; c < D; c += L)
          hn::StoreU(load_f16(d, src + 2 * ((first_token + t) * D + c)), d, dst + t * dst_stride + c);
      return;
    case kv_format::q8_0: {
      const std::size_t row = D / 32 * sizeof(block_q8_0);
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t b = 0; b < D / 32; ++b) {
          const std::byte* block = src + (first_token + t) * row + b * sizeof(block_q8_0);
          const auto scale = hn::Set(d, to_float(kv_quant_detail::load_f16(block)));
          for (std::size_t i = 0; i < 32; i += L)
            hn::StoreU(hn::Mul(scale, load_i8(d, block + 2 + i)), d, dst + t * dst_stride + 32 * b + i);
        }
      return;
    }
    case kv_format::kivi4:
    case kv_format::kivi2: {
      const unsigned bits = kv_bits(f.format);
      const std::size_t G = f.group, S = kv_kivi_block_bytes(bits, G), plane = G * bits / 8;
      // Codes in planes of P = plane consecutive elements: 4 lanes at a time
      // (P is a multiple of 4), the element run of a block along channels
      // (values) or tokens (keys).
      const hn::CappedTag<float, 4> d4;
      const hn::RebindToUnsigned<decltype(d4)> du4;
      const auto mask = hn::Set(du4, (1u << bits) - 1u);
      const auto block_values = [&](const std::byte* block, std::size_t i0, std::size_t count, float* out,
                                    std::size_t out_stride) HWY_ATTR {
        // Elements i0 .. i0 + count of the block to out[(i - i0) * out_stride].
        const auto scale = hn::Set(d4, to_float(kv_quant_detail::load_f16(block)));
        const auto zero = hn::Set(d4, to_float(kv_quant_detail::load_f16(block + 2)));
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(block + 4);
        HWY_ALIGN float tmp[4];
        for (std::size_t i = i0 / 4 * 4; i < i0 + count; i += 4) {
          const auto v = hn::Add(
              zero, hn::Mul(scale, load_codes(d4, bytes + i % plane, static_cast<int>(bits * (i / plane)), mask)));
          if (out_stride == 1 && i >= i0 && i + 4 <= i0 + count) {
            hn::StoreU(v, d4, out + (i - i0));
          } else {
            hn::Store(v, d4, tmp);
            for (std::size_t e = std::max(i, i0); e < std::min(i + 4, i0 + count); ++e)
              out[(e - i0) * out_stride] = tmp[e - i];
          }
        }
      };
      if (r == kv_role::value) {
        for (std::size_t t = 0; t < tokens; ++t)
          for (std::size_t j = 0; j < D / G; ++j)
            block_values(src + S * ((first_token + t) * (D / G) + j), 0, G, dst + t * dst_stride + j * G, 1);
      } else {
        for (std::size_t t = first_token; t < first_token + tokens;) {
          const std::size_t j = t / G, count = std::min((j + 1) * G, first_token + tokens) - t;
          for (std::size_t c = 0; c < D; ++c)
            block_values(src + S * (j * D + c), t % G, count, dst + (t - first_token) * dst_stride + c, dst_stride);
          t += count;
        }
      }
      return;
    }
  }
}

}  // namespace kv_simd
#endif  // HWY_TARGET != HWY_SCALAR

// ------------------------------------------------------------------ exports
// One per dispatch-table entry in dispatch.hpp (RUVLLM_KERNELS_EXPORTED).

inline void kv_quantize_page_head(kv_format_desc f, kv_role r, const float* src, std::size_t src_stride,
                                  std::size_t first_token, std::size_t tokens, std::size_t head_dim, std::byte* dst) {
#if HWY_TARGET == HWY_SCALAR
  scalar::quantize_page_head(f, r, src, src_stride, first_token, tokens, head_dim, dst);
#else
  kv_simd::quantize(f, r, src, src_stride, first_token, tokens, head_dim, dst);
#endif
}

inline void kv_dequantize_page_head(kv_format_desc f, kv_role r, const std::byte* src, std::size_t first_token,
                                    std::size_t tokens, std::size_t head_dim, float* dst, std::size_t dst_stride) {
#if HWY_TARGET == HWY_SCALAR
  scalar::dequantize_page_head(f, r, src, first_token, tokens, head_dim, dst, dst_stride);
#else
  kv_simd::dequantize(f, r, src, first_token, tokens, head_dim, dst, dst_stride);
#endif
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_KV_QUANT_INL_H_ toggle
