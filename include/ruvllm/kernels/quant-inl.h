// Highway quant kernels (GGUF blocks, f16/bf16 rows), compiled once per SIMD
// target. No include guard: the toggle below lets hwy/foreach_target.h
// re-include this file for each target, through the umbrella
// ruvllm/kernels/kernels-inl.h. Semantics, formats and preconditions are those
// of the scalar reference in ruvllm/kernels/scalar/quant.hpp.
//
// Integer dots: Highway 1.0.3 has no int8 dot op. The portable path widens
// 16 int8 lanes to int16 (PromoteTo) and multiplies pairs into int32
// (ReorderWidenMulAccumulate, pmaddwd on x86). x86 AVX2 and AVX-512 targets
// multiply u8 x s8 bytes directly (VPMADDUBSW, then VPMADDWD by ones or by a
// K-quant sub-block scale), which halves the work of unpacking and widening:
// exact because no pair of products reaches the int16 limit (the unsigned
// side is a 4- or 6-bit quant, or |w| <= 128 of an int8 weight against an
// activation in [-127, 127]). On AVX3_DL the same primitives
// use VPDPBUSD (u8 x s8 -> int32), the 512-bit form with avx512vnni added to
// the target attribute: Highway's AVX3_DL target string names AVX-VNNI but not
// AVX512-VNNI, and with it compilers emit the 256/128-bit VPDPBUSD in its VEX
// (AVX-VNNI) encoding, which Ice Lake and Zen 4 lack. The AVX2 target
// compiles its wide kernels (quant_wide-inl.h) a second time with AVX-VNNI,
// the VEX forms of Intel's client cores without AVX-512, and picks that copy
// per call where the CPU has it (avx_vnni.hpp). Signed weights use
// |w| . (a * sign(w)), hence the [-127, 127] precondition on activations.
// Every primitive returns the exact int32 partial sums of its group, whichever
// path computes them, so block sums equal the scalar reference's exactly.
//
// Targets without fixed-width 128-bit vectors (HWY_SCALAR, the fallback with
// g++ 12, and scalable SVE/RVV) forward to the scalar reference. f16 rows use
// F16C on x86 AVX2+ targets (bit-identical to ruvllm::to_f16/to_float) and the
// scalar reference elsewhere, because 1.0.3's emulated conversions neither
// round to nearest nor handle inf/NaN. bf16 rows use integer ops everywhere
// (1.0.3's DemoteTo truncates instead of rounding).

#if defined(RUVLLM_KERNELS_QUANT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_QUANT_INL_H_
#undef RUVLLM_KERNELS_QUANT_INL_H_
#else
#define RUVLLM_KERNELS_QUANT_INL_H_
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "hwy/highway.h"
#include "ruvllm/kernels/scalar/quant.hpp"

// Per-target switches, redefined on every pass and undefined at the end.
#if HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE
#define RUVLLM_QUANT_SIMD 0
#else
#define RUVLLM_QUANT_SIMD 1
#endif
#if HWY_TARGET == HWY_AVX3_DL && defined(__GNUC__)
#define RUVLLM_QUANT_VNNI 1
#define RUVLLM_QUANT_ATTR __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#define RUVLLM_QUANT_LAMBDA RUVLLM_QUANT_ATTR
#else
#define RUVLLM_QUANT_VNNI 0
#define RUVLLM_QUANT_ATTR
#define RUVLLM_QUANT_LAMBDA HWY_ATTR
#endif
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define RUVLLM_QUANT_F16C 1
#else
#define RUVLLM_QUANT_F16C 0
#endif
// 256-bit integer vectors (AVX2 and up); 128-bit otherwise.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define RUVLLM_QUANT_WIDE 1
#else
#define RUVLLM_QUANT_WIDE 0
#endif
// 512-bit integer vectors with byte and word ops (AVX-512 BW: AVX3 and up).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define RUVLLM_QUANT_AVX512 1
#else
#define RUVLLM_QUANT_AVX512 0
#endif
// The AVX2 target's second copy of the wide kernels, with AVX-VNNI.
#if HWY_TARGET == HWY_AVX2 && defined(__GNUC__)
#define RUVLLM_QUANT_AVX_VNNI_COPY 1
#else
#define RUVLLM_QUANT_AVX_VNNI_COPY 0
#endif

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if RUVLLM_QUANT_SIMD
namespace quant_simd {

using DU8 = hn::Full128<std::uint8_t>;  // 16 packed bytes: one Q4_0 block, a Q4_K/Q6_K chunk
using DI8 = hn::Full128<std::int8_t>;
using VU8 = hn::Vec<DU8>;
using VI8 = hn::Vec<DI8>;
#if RUVLLM_QUANT_WIDE
using D32 = hn::Full256<std::int32_t>;
#else
using D32 = hn::Full128<std::int32_t>;
#endif
using D16 = hn::Repartition<std::int16_t, D32>;
using DF = hn::Repartition<float, D32>;
using V32 = hn::Vec<D32>;

/// f16 block scale -> float, bit-identical to ruvllm::to_float.
RUVLLM_QUANT_ATTR HWY_INLINE float half_to_float(ruvllm::f16 h) {
#if RUVLLM_QUANT_F16C
  return _cvtsh_ss(h.bits);
#else
  return ruvllm::to_float(h);
#endif
}

#if RUVLLM_QUANT_VNNI
// Sums of u8 x s8 products over each group of four bytes. The narrow inputs
// are widened with zero upper lanes by vector shuffles: GCC 12's
// _mm512_zextsi256_si512 / _mm512_castsi512_si256 trip -Wmaybe-uninitialized.
RUVLLM_QUANT_ATTR HWY_INLINE V32 vnni_dot512(__m512i u8, __m512i s8) {
  const __m512i r = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u8, s8);
  return V32{reinterpret_cast<__m256i>(
      __builtin_shufflevector(reinterpret_cast<__v8di>(r), reinterpret_cast<__v8di>(r), 0, 1, 2, 3))};
}
RUVLLM_QUANT_ATTR HWY_INLINE V32 vnni_dot256(__m256i u8, __m256i s8) {
  const __v4di z = reinterpret_cast<__v4di>(_mm256_setzero_si256());
  return vnni_dot512(
      reinterpret_cast<__m512i>(__builtin_shufflevector(reinterpret_cast<__v4di>(u8), z, 0, 1, 2, 3, 4, 5, 6, 7)),
      reinterpret_cast<__m512i>(__builtin_shufflevector(reinterpret_cast<__v4di>(s8), z, 0, 1, 2, 3, 4, 5, 6, 7)));
}
#endif

#if RUVLLM_QUANT_WIDE
RUVLLM_QUANT_ATTR HWY_INLINE __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
/// Lanes summing to sum(u[i] * s[i]) over 32 bytes, u unsigned, s signed.
RUVLLM_QUANT_ATTR HWY_INLINE V32 u8_dot256(__m256i u8, __m256i s8) {
#if RUVLLM_QUANT_VNNI
  return vnni_dot256(u8, s8);
#else
  return V32{_mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1))};
#endif
}
#endif

#if !RUVLLM_QUANT_WIDE
/// Lanes summing to sum(q[i] * a[i]) over 16 signed bytes (portable path).
RUVLLM_QUANT_ATTR HWY_INLINE V32 dot16_i8(VI8 q, const std::int8_t* HWY_RESTRICT a) {
  const D32 d32;
  const D16 d16;
  const hn::Half<DI8> dh;
  // The widening multiply may split the pair sums between `even` and `odd`
  // (x86 keeps them all in `even`); only their total is used.
  V32 odd = hn::Zero(d32);
  V32 even = hn::ReorderWidenMulAccumulate(d32, hn::PromoteTo(d16, hn::LowerHalf(dh, q)),
                                           hn::PromoteTo(d16, hn::LoadU(dh, a)), hn::Zero(d32), odd);
  even = hn::ReorderWidenMulAccumulate(d32, hn::PromoteTo(d16, hn::UpperHalf(dh, q)),
                                       hn::PromoteTo(d16, hn::LoadU(dh, a + 8)), even, odd);
  return hn::Add(even, odd);
}

/// Lanes summing to sum(q[i] * a[i]) over 16 quants q in [0, 127].
RUVLLM_QUANT_ATTR HWY_INLINE V32 dot16_u8(VU8 q, const std::int8_t* HWY_RESTRICT a) {
  return dot16_i8(hn::BitCast(DI8(), q), a);
}

/// Lanes summing to sum(q[i] * a[i]) over 32 quants q in [0, 127], given as
/// the halves lo (elements 0-15) and hi (16-31).
RUVLLM_QUANT_ATTR HWY_INLINE V32 dot32_u8(VU8 lo, VU8 hi, const std::int8_t* HWY_RESTRICT a) {
  const DI8 di8;
  return hn::Add(dot16_i8(hn::BitCast(di8, lo), a), dot16_i8(hn::BitCast(di8, hi), a + 16));
}
#endif

/// One Q8_0 activation block in the form the Q8_0/Q4_0 block dots consume,
/// prepared once and shared by every weight row of a batch: widened to int16
/// on the portable path, raw bytes for the byte dots; plus the lanes of
/// 8 sum(a), Q4_0's offset term.
struct act32 {
#if RUVLLM_QUANT_WIDE
  __m256i raw;
#else
  hn::Vec<D16> v[4];  // elements 0-7, 8-15, 16-23, 24-31
#endif
  V32 eight_sum;
};

// Built by aggregate initialization: act32's implicit default constructor
// would be compiled without the target's options (GCC 12 on AArch64 then
// refuses to inline the vectors' constructors into it).
RUVLLM_QUANT_ATTR HWY_INLINE act32 prepare_act32(const std::int8_t* HWY_RESTRICT a) {
#if RUVLLM_QUANT_WIDE
  const __m256i raw = load256(a);
  return act32{raw, u8_dot256(_mm256_set1_epi8(8), raw)};
#else
  const D32 d32;
  const D16 d16;
  const hn::Rebind<std::int8_t, D16> d8;
  hn::Vec<D16> v[4];
  V32 odd = hn::Zero(d32), even = hn::Zero(d32);
  for (std::size_t k = 0; k < 4; ++k) {
    v[k] = hn::PromoteTo(d16, hn::LoadU(d8, a + k * 8));
    even = hn::ReorderWidenMulAccumulate(d32, hn::Set(d16, 8), v[k], even, odd);
  }
  return act32{{v[0], v[1], v[2], v[3]}, hn::Add(even, odd)};
#endif
}

#if !RUVLLM_QUANT_WIDE
/// Lanes summing to sum(w[k][i] * a[k][i]) over the int16 parts of a block.
template <std::size_t Parts>
RUVLLM_QUANT_ATTR HWY_INLINE V32 dot_parts(const hn::Vec<D16> (&w)[Parts], const act32& a) {
  const D32 d32;
  // The widening multiply may split the pair sums between `even` and `odd`
  // (x86 keeps them all in `even`); only their total is used.
  V32 odd = hn::Zero(d32), even = hn::Zero(d32);
  for (std::size_t k = 0; k < Parts; ++k) even = hn::ReorderWidenMulAccumulate(d32, w[k], a.v[k], even, odd);
  return hn::Add(even, odd);
}
#endif

/// Lanes summing to sum(w[i] * a[i]) over a Q8_0 block's 32 int8 weights.
RUVLLM_QUANT_ATTR HWY_INLINE V32 dot_q8_0_block(const std::int8_t* HWY_RESTRICT w, const act32& a) {
#if RUVLLM_QUANT_WIDE
  const __m256i wv = load256(w);
  // |w| . (a * sign(w)) = w . a; a * sign(w) fits in int8 because a != -128.
  return u8_dot256(_mm256_abs_epi8(wv), _mm256_sign_epi8(a.raw, wv));
#else
  const D16 d16;
  const hn::Rebind<std::int8_t, D16> d8;
  constexpr std::size_t parts = sizeof(a.v) / sizeof(a.v[0]);
  hn::Vec<D16> wv[parts];
  for (std::size_t k = 0; k < parts; ++k) wv[k] = hn::PromoteTo(d16, hn::LoadU(d8, w + k * (32 / parts)));
  return dot_parts(wv, a);
#endif
}

/// Lanes summing to sum(q[i] * a[i]) over one block's 16 packed nibble
/// bytes (element j in the low nibble of byte j, element j + 16 in the high).
RUVLLM_QUANT_ATTR HWY_INLINE V32 nibble_dot(const std::uint8_t* HWY_RESTRICT qs, const act32& a) {
#if RUVLLM_QUANT_WIDE
  // Both nibble halves in one register (low nibbles in the lower 128 bits):
  // the bytes loaded into both halves, the upper half shifted right by 4 (a
  // per-lane shift, so no cross-lane insert), one mask for both.
  const __m256i packed = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  const __m256i both = _mm256_srlv_epi32(packed, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
  const __m256i nibbles = _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
  return u8_dot256(nibbles, a.raw);
#else
  // Each byte zero-extended to an int16 lane, then split with a mask and a
  // 16-bit shift: one widening per 16 bytes and no 8-bit shift emulation.
  const D16 d16;
  const hn::RebindToUnsigned<D16> du16;
  const hn::Rebind<std::uint8_t, D16> du8;
  const auto mask = hn::Set(d16, 0x0F);
  const auto b0 = hn::BitCast(d16, hn::PromoteTo(du16, hn::LoadU(du8, qs)));
  const auto b1 = hn::BitCast(d16, hn::PromoteTo(du16, hn::LoadU(du8, qs + 8)));
  const hn::Vec<D16> q[4] = {hn::And(b0, mask), hn::And(b1, mask), hn::ShiftRight<4>(b0), hn::ShiftRight<4>(b1)};
  return dot_parts(q, a);
#endif
}

/// Lanes summing to sum((q[i] - 8) * a[i]) over one Q4_0 block: sum(q a) -
/// 8 sum(a) with q in [0, 15].
RUVLLM_QUANT_ATTR HWY_INLINE V32 dot_q4_0_block(const std::uint8_t* HWY_RESTRICT qs, const act32& a) {
  return hn::Sub(nibble_dot(qs, a), a.eight_sum);
}

/// Lanes summing to sum(q[i] * a[i]) over one Q5_0 or Q5_1 block's quants
/// q in [0, 31]: Q4_0's nibbles with the fifth bit of element j (bit j of
/// qh) added as 16 (VPMADDUBSW pair sums at most 2 * 31 * 127, so none
/// saturates).
template <class Block>
RUVLLM_QUANT_ATTR HWY_INLINE V32 five_bit_dot(const Block& w, const act32& a) {
  const std::uint32_t high = scalar::quant_detail::q5_high_bits(w);
#if RUVLLM_QUANT_WIDE
  const __m256i packed = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs)));
  const __m256i both = _mm256_srlv_epi32(packed, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
  const __m256i nibbles = _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
  // Byte j of the register (element j) takes byte j / 8 of qh and keeps bit j % 8.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(high)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040'2010'0804'0201ull));
  const __m256i fifth = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(0x10));
  return u8_dot256(_mm256_or_si256(nibbles, fifth), a.raw);
#else
  const D16 d16;
  const hn::RebindToUnsigned<D16> du16;
  const hn::Rebind<std::uint8_t, D16> du8;
  const auto mask = hn::Set(d16, 0x0F);
  const auto b0 = hn::BitCast(d16, hn::PromoteTo(du16, hn::LoadU(du8, w.qs)));
  const auto b1 = hn::BitCast(d16, hn::PromoteTo(du16, hn::LoadU(du8, w.qs + 8)));
  hn::Vec<D16> q[4] = {hn::And(b0, mask), hn::And(b1, mask), hn::ShiftRight<4>(b0), hn::ShiftRight<4>(b1)};
  // Part k holds elements 8k .. 8k + 7, whose fifth bits are byte k of qh.
  HWY_ALIGN static constexpr std::int16_t lane_bits[8] = {1, 2, 4, 8, 16, 32, 64, 128};
  const auto lane_bit = hn::Load(d16, lane_bits);
  const auto zero = hn::Zero(d16), sixteen = hn::Set(d16, 16);
  for (std::size_t k = 0; k < 4; ++k) {
    const auto set = hn::And(hn::Set(d16, static_cast<std::int16_t>((high >> (8 * k)) & 0xFFu)), lane_bit);
    q[k] = hn::Or(q[k], hn::IfThenElseZero(hn::Ne(set, zero), sixteen));
  }
  return dot_parts(q, a);
#endif
}

/// Lanes summing to sum((q[i] - 16) * a[i]) over one Q5_0 block.
RUVLLM_QUANT_ATTR HWY_INLINE V32 dot_q5_0_block(const block_q5_0& w, const act32& a) {
  return hn::Sub(five_bit_dot(w, a), hn::Add(a.eight_sum, a.eight_sum));
}

/// The IQ4_NL table values (iq4_nl_values, loaded as `table`) of the 16 low
/// or high nibbles of `packed`: one byte shuffle. IQ4_NL blocks and IQ4_XS
/// sub-blocks hold elements 0-15 in the low nibbles, 16-31 in the high.
template <bool High>
RUVLLM_QUANT_ATTR HWY_INLINE VI8 iq4_nl_lookup(VI8 table, VU8 packed) {
  const DU8 du8;
  const VU8 nibbles = High ? hn::ShiftRight<4>(packed) : hn::And(packed, hn::Set(du8, 0x0F));
  return hn::TableLookupBytes(table, hn::BitCast(DI8(), nibbles));
}

/// Lanes summing to sum(v[i] * a[i]) over one IQ4_NL block's table values
/// v, then Q8_0's dot of signed weights.
RUVLLM_QUANT_ATTR HWY_INLINE V32 dot_iq4_nl_block(const block_iq4_nl& w, const act32& a) {
  const DI8 di8;
  const VI8 table = hn::LoadU(di8, iq4_nl_values);
  const VU8 packed = hn::LoadU(DU8(), w.qs);
  HWY_ALIGN std::int8_t values[32];
  hn::Store(iq4_nl_lookup<false>(table, packed), di8, values);
  hn::Store(iq4_nl_lookup<true>(table, packed), di8, values + 16);
  return dot_q8_0_block(values, a);
}

/// Where rows_of_32 finds activation block b: an array of Q8_0 blocks ...
struct q8_0_block_source {
  const block_q8_0* HWY_RESTRICT a;
  RUVLLM_QUANT_ATTR HWY_INLINE act32 prepare(std::size_t b) const { return prepare_act32(a[b].qs); }
  RUVLLM_QUANT_ATTR HWY_INLINE float scale(std::size_t b) const { return half_to_float(a[b].d); }
};

/// ... or q8_0_quads (block b's two 16-value halves gathered into one run).
struct q8_0_quad_source {
  const q8_0_quad* HWY_RESTRICT a;
  RUVLLM_QUANT_ATTR HWY_INLINE act32 prepare(std::size_t b) const {
    HWY_ALIGN std::int8_t qs[32];
    const q8_0_quad& q = a[b / 4];
    std::memcpy(qs, q.lo + 16 * (b % 4), 16);
    std::memcpy(qs + 16, q.hi + 16 * (b % 4), 16);
    return prepare_act32(qs);
  }
  RUVLLM_QUANT_ATTR HWY_INLINE float scale(std::size_t b) const { return a[b / 4].d[4 * (b % 4)]; }
};

/// out[k] = dot(row k, a) for R rows of 32-element blocks (Q8_0, Q4_0, Q4_1,
/// Q5_0 or Q5_1 weights; a minimum adds its term per block): each activation
/// block is prepared once for the R rows. Every row accumulates in its own
/// two float vectors (even and odd blocks), so its result does not depend on
/// R or on which rows share the batch.
template <std::size_t R, class Block, class Source, class BlockDot>
RUVLLM_QUANT_ATTR HWY_INLINE void rows_of_32(const Block* HWY_RESTRICT w, std::size_t row_stride, const Source& a,
                                             std::size_t nb, float* HWY_RESTRICT out, BlockDot block_dot) {
  const DF df;
  const Block* row[R];
  for (std::size_t k = 0; k < R; ++k) row[k] = scalar::quant_detail::row_at(w, row_stride, k);
  hn::Vec<DF> acc[R][2];
  for (std::size_t k = 0; k < R; ++k) acc[k][0] = acc[k][1] = hn::Zero(df);
  const auto step = [&](std::size_t b, std::size_t slot) RUVLLM_QUANT_LAMBDA {
    const act32 act = a.prepare(b);
    const float da = a.scale(b);
    for (std::size_t k = 0; k < R; ++k) {
      const auto scale = hn::Set(df, half_to_float(row[k][b].d) * da);
      acc[k][slot] = hn::MulAdd(hn::ConvertTo(df, block_dot(row[k][b], act)), scale, acc[k][slot]);
      if constexpr (std::is_same_v<Block, block_q4_1> || std::is_same_v<Block, block_q5_1>) {
        // + (m_w d_a) sum(a), the lanes of eight_sum adding to 8 sum(a).
        const auto min_scale = hn::Set(df, half_to_float(row[k][b].m) * da * 0.125f);
        acc[k][slot] = hn::MulAdd(hn::ConvertTo(df, act.eight_sum), min_scale, acc[k][slot]);
      }
    }
  };
  std::size_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    step(b, 0);
    step(b + 1, 1);
  }
  if (b < nb) step(b, 0);
  for (std::size_t k = 0; k < R; ++k) out[k] = hn::GetLane(hn::SumOfLanes(df, hn::Add(acc[k][0], acc[k][1])));
}

/// All rows, four at a time, then the remainder one at a time.
template <class Block, class Source, class BlockDot>
RUVLLM_QUANT_ATTR HWY_INLINE void all_rows_of_32(const Block* HWY_RESTRICT w, std::size_t row_stride, std::size_t rows,
                                                 const Source& a, std::size_t n, float* HWY_RESTRICT out,
                                                 BlockDot block_dot) {
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    rows_of_32<4>(scalar::quant_detail::row_at(w, row_stride, r), row_stride, a, n / 32, out + r, block_dot);
  }
  for (; r < rows; ++r) {
    rows_of_32<1>(scalar::quant_detail::row_at(w, row_stride, r), row_stride, a, n / 32, out + r, block_dot);
  }
}

#if RUVLLM_QUANT_VNNI
// ------------------------------------------- AVX-512 VNNI rows over quads
// Four weight blocks (one activation quad) per step. Their quant bytes are
// gathered from the raw rows by a two-register byte permute (VPERMT2B) into
// the chunk order of q8_0_quad, and their f16 scales by a zero-masking byte
// permute into the upper half of the matching 32-bit lanes; so one VPDPBUSD
// pair and one float multiply-add serve 128 weights, and each row keeps a
// single 16-lane float accumulator whose lanes 4j .. 4j + 3 collect block j of
// each quad. Per row and quad the arithmetic is fixed (integer dot from the
// quad's offset term, then acc += float(dot) * (d_w * d_a) lane-wise, then one
// horizontal sum at the end), so a row's result depends on nothing but the
// row and the activations: not on which rows share a call, nor on the GEMM's
// tiling (quad_gemm computes every (row, token) the same way).
//
// Measured on Zen 5 (why the code looks as it does):
//  * the f16 scales cost more than the quants: VPERMW + VCVTPH2PS per quad
//    and row held an L2-resident GEMV to ~45 GB/s of Q4_0, a byte permute
//    plus two integer ops (f16_scales below) to ~55;
//  * the 8 bytes past a Q4_0 quad's first 64 come in by a broadcast load: a
//    byte-masked load there halved the streaming rate;
//  * the GEMV reads rows one at a time under gemv_plan::rows_l1, the plan
//    for Zen 5 (gemv_plan.hpp; Q4_0 rows go in pairs under pairs_l1_l2, see
//    quad_row_pair): the activations are reloaded from L1 for every row
//    (rows of up to eight quads keep them in registers: resident_quad_rows),
//    but the weights stay one sequential stream, which
//    the hardware prefetchers and line_prefetcher (target-inl.h) follow. Over
//    a 1 GiB Q4_0 matrix of 2048 columns at one thread (a plain AVX-512
//    read ~30 GB/s), one row at a time under an L1 stream 8 KiB ahead read
//    24-26.5 GB/s (the hardware prefetchers alone 23-24); four rows side by
//    side, which loses the hardware prefetchers, 18-19 under 48 KiB (L2)
//    and 4 KiB (L1) streams. Long rows used to go eight at a time, each row
//    with its own L1 stream, which shared the activation loads among eight
//    rows and was 11% faster on a 1B Q8_0 decode on Zen 5 than one row at a
//    time under the L1 stream alone; on Zen 4, one row at a time under L1
//    and L2 streams decoded 1B Q8_0 2.0x and 1B Q4_0 1.12x as fast as the
//    groups of eight.
namespace vnni {

/// The weight formats met by quad activations.
enum class quad_weights { q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl };

/// Whether a format's blocks carry a minimum (x = d q + m).
template <quad_weights F>
inline constexpr bool has_minimum = F == quad_weights::q4_1 || F == quad_weights::q5_1;

/// Whether a format packs its quants as nibbles (every format but Q8_0).
template <quad_weights F>
inline constexpr bool packs_nibbles = F != quad_weights::q8_0;

/// Bytes of the four blocks one quad step reads.
template <quad_weights F>
inline constexpr std::size_t quad_bytes = F == quad_weights::q8_0     ? 4 * sizeof(block_q8_0)
                                          : F == quad_weights::q4_0   ? 4 * sizeof(block_q4_0)
                                          : F == quad_weights::iq4_nl ? 4 * sizeof(block_iq4_nl)
                                          : F == quad_weights::q4_1   ? 4 * sizeof(block_q4_1)
                                          : F == quad_weights::q5_0   ? 4 * sizeof(block_q5_0)
                                                                      : 4 * sizeof(block_q5_1);

struct permute_tables {
  std::uint8_t q4_qs[64];   // Q4_0: the 16 quant bytes of block j (at 18j + 2) into chunk j
  std::uint8_t q4_d[64];    // Q4_0: block j's f16 scale (bytes 18j, 18j + 1) into bytes 2-3 of lanes 4j .. 4j + 3
  std::uint8_t q8_lo[64];   // Q8_0: bytes 0-15 of block j (at 34j + 2) into chunk j
  std::uint8_t q8_hi[64];   // Q8_0: bytes 16-31 (at 34j + 18), read from the registers at +8 and +72
  std::uint8_t q8_d[64];    // Q8_0: block j's f16 scale (bytes 34j, 34j + 1), as q4_d
  std::uint8_t q5_qs[64];   // Q5_0: the 16 quant bytes of block j (at 22j + 6) into chunk j
  std::uint8_t q5_d[64];    // Q5_0: block j's f16 scale (bytes 22j, 22j + 1), as q4_d
  std::uint8_t q5_qh[64];   // Q5_0: bytes 0-7 the low 16 bits of each block's qh (at 22j + 2), 8-15 the high
  std::uint8_t q51_qs[64];  // Q5_1: as q5_qs, block j's quant bytes at 24j + 8
  std::uint8_t q51_d[64];   // Q5_1: as q5_d, d at 24j
  std::uint8_t q51_m[64];   // Q5_1: as q5_d, the minimum m at 24j + 2
  std::uint8_t q51_qh[64];  // Q5_1: as q5_qh, qh at 24j + 4
  std::uint8_t q41_qs[64];  // Q4_1: as q5_qs, block j's quant bytes at 20j + 4
  std::uint8_t q41_d[64];   // Q4_1: as q5_d, d at 20j
  std::uint8_t q41_m[64];   // Q4_1: as q5_d, the minimum m at 20j + 2
};

inline constexpr permute_tables make_permute_tables() {
  permute_tables t{};
  for (std::size_t j = 0; j < 4; ++j) {
    for (std::size_t i = 0; i < 16; ++i) {
      t.q4_qs[16 * j + i] = static_cast<std::uint8_t>(18 * j + 2 + i);
      t.q8_lo[16 * j + i] = static_cast<std::uint8_t>(34 * j + 2 + i);
      t.q8_hi[16 * j + i] = static_cast<std::uint8_t>(34 * j + 18 + i - 8);
    }
    for (std::size_t i = 0; i < 4; ++i) {
      const std::size_t lane = 4 * (4 * j + i);
      t.q4_d[lane + 2] = static_cast<std::uint8_t>(18 * j);
      t.q4_d[lane + 3] = static_cast<std::uint8_t>(18 * j + 1);
      t.q8_d[lane + 2] = static_cast<std::uint8_t>(34 * j);
      t.q8_d[lane + 3] = static_cast<std::uint8_t>(34 * j + 1);
      t.q5_d[lane + 2] = static_cast<std::uint8_t>(22 * j);
      t.q5_d[lane + 3] = static_cast<std::uint8_t>(22 * j + 1);
    }
    for (std::size_t i = 0; i < 4; ++i) {
      const std::size_t lane = 4 * (4 * j + i);
      t.q51_d[lane + 2] = static_cast<std::uint8_t>(24 * j);
      t.q51_d[lane + 3] = static_cast<std::uint8_t>(24 * j + 1);
      t.q51_m[lane + 2] = static_cast<std::uint8_t>(24 * j + 2);
      t.q51_m[lane + 3] = static_cast<std::uint8_t>(24 * j + 3);
      t.q41_d[lane + 2] = static_cast<std::uint8_t>(20 * j);
      t.q41_d[lane + 3] = static_cast<std::uint8_t>(20 * j + 1);
      t.q41_m[lane + 2] = static_cast<std::uint8_t>(20 * j + 2);
      t.q41_m[lane + 3] = static_cast<std::uint8_t>(20 * j + 3);
    }
    for (std::size_t i = 0; i < 16; ++i) {
      t.q5_qs[16 * j + i] = static_cast<std::uint8_t>(22 * j + 6 + i);
      t.q51_qs[16 * j + i] = static_cast<std::uint8_t>(24 * j + 8 + i);
      t.q41_qs[16 * j + i] = static_cast<std::uint8_t>(20 * j + 4 + i);
    }
    for (std::size_t i = 0; i < 2; ++i) {
      t.q5_qh[2 * j + i] = static_cast<std::uint8_t>(22 * j + 2 + i);
      t.q5_qh[8 + 2 * j + i] = static_cast<std::uint8_t>(22 * j + 4 + i);
      t.q51_qh[2 * j + i] = static_cast<std::uint8_t>(24 * j + 4 + i);
      t.q51_qh[8 + 2 * j + i] = static_cast<std::uint8_t>(24 * j + 6 + i);
    }
  }
  return t;
}

alignas(64) inline constexpr permute_tables tables = make_permute_tables();

/// Bytes 2-3 of every 32-bit lane: where the scale permutes put each f16.
inline constexpr std::uint64_t upper_halves = 0xCCCC'CCCC'CCCC'CCCCull;

/// The index vectors and constants of one kernel call (hoisted out of loops).
struct constants {
  __m512i qs_lo, qs_hi, d_index, nibble_mask, sign_bit, f16_bits, qh_index, fifth_bit, m_index, values;
};

template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE constants load_constants() {
  constants c{};  // the indices a format does not use stay zero
  if constexpr (F == quad_weights::q4_0 || F == quad_weights::iq4_nl) {
    static_assert(sizeof(block_iq4_nl) == sizeof(block_q4_0) && offsetof(block_iq4_nl, qs) == offsetof(block_q4_0, qs));
    c.qs_lo = _mm512_load_si512(tables.q4_qs);
    c.qs_hi = c.qs_lo;
    c.d_index = _mm512_load_si512(tables.q4_d);
    // IQ4_NL: the table values + 128 (1..241, unsigned) in every 128-bit lane.
    alignas(16) std::uint8_t biased[16];
    for (std::size_t i = 0; i < 16; ++i) biased[i] = static_cast<std::uint8_t>(iq4_nl_values[i] + 128);
    c.values = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(biased)));
  } else if constexpr (F == quad_weights::q5_0) {
    c.qs_lo = _mm512_load_si512(tables.q5_qs);
    c.qs_hi = c.qs_lo;
    c.d_index = _mm512_load_si512(tables.q5_d);
    c.qh_index = _mm512_load_si512(tables.q5_qh);
  } else if constexpr (F == quad_weights::q4_1) {
    c.qs_lo = _mm512_load_si512(tables.q41_qs);
    c.qs_hi = c.qs_lo;
    c.d_index = _mm512_load_si512(tables.q41_d);
    c.m_index = _mm512_load_si512(tables.q41_m);
  } else if constexpr (F == quad_weights::q5_1) {
    c.qs_lo = _mm512_load_si512(tables.q51_qs);
    c.qs_hi = c.qs_lo;
    c.d_index = _mm512_load_si512(tables.q51_d);
    c.qh_index = _mm512_load_si512(tables.q51_qh);
    c.m_index = _mm512_load_si512(tables.q51_m);
  } else {
    c.qs_lo = _mm512_load_si512(tables.q8_lo);
    c.qs_hi = _mm512_load_si512(tables.q8_hi);
    c.d_index = _mm512_load_si512(tables.q8_d);
  }
  c.nibble_mask = _mm512_set1_epi8(0x0F);
  c.sign_bit = _mm512_set1_epi8(static_cast<char>(0x80));
  c.f16_bits = _mm512_set1_epi32(static_cast<int>(0x8FFF'FFFFu));
  c.fifth_bit = _mm512_set1_epi8(0x10);
  return c;
}

/// f16 scales h in the upper half of each 32-bit lane -> the float h * 2^-112,
/// exactly: an arithmetic shift right by 3 puts h's exponent and mantissa in
/// the float's bits 13-27 and its sign in bits 28-31, of which the mask keeps
/// bit 31 alone. For every finite h (subnormals and zeros included, which
/// become float subnormals and zeros) the result is h * 2^-112 exactly; the
/// activation scales carry the 2^112 (load_quad), so d_w * d_a rounds once,
/// to the same float as the plain product. (An inf or NaN f16 scale, which no
/// quantizer writes, would read as a finite value here.)
RUVLLM_QUANT_ATTR HWY_INLINE __m512 f16_scales(__m512i halves, const constants& c) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_srai_epi32(halves, 3), c.f16_bits));
}

/// One row's four blocks of a quad, unpacked: unsigned quant bytes in the
/// quad's chunk order (Q4_0, Q4_1: nibbles 0..15; Q5_0, Q5_1: 0..31; Q8_0:
/// w + 128; IQ4_NL: table value + 128) and the four weight scales (times
/// 2^-112, see f16_scales) in the quad's lanes.
template <quad_weights F>
struct unpacked {
  __m512i lo, hi;
  __m512 d;
};
/// Formats with a minimum add their blocks' minima (times 2^-112, as d).
struct unpacked_with_minimum {
  __m512i lo, hi;
  __m512 d, m;
};
template <>
struct unpacked<quad_weights::q4_1> : unpacked_with_minimum {};
template <>
struct unpacked<quad_weights::q5_1> : unpacked_with_minimum {};

/// Mask of the bytes [from, from + 64) that lie below `valid`.
HWY_INLINE __mmask64 bytes_below(std::size_t from, std::size_t valid) {
  if (valid <= from) return 0;
  const std::size_t k = valid - from;
  return k >= 64 ? ~__mmask64{0} : ((__mmask64{1} << k) - 1);
}

/// v, kept in a register. A quad's weights feed two or three byte permutes;
/// VPERMT2B overwrites its table, and GCC then re-reads the weights from
/// memory for each further permute instead of copying the register. Those
/// reloads cross a cache line 8 times in 9 (72- and 88-byte quads), and
/// loads were what limited the quad loops: per Q4_0 quad, four of
/// activations, the weights and their last 8 bytes (quad_pair_reader now
/// saves one per two quads, for 2-3% more: the loop is now near its
/// vector operations' pace as well). On a Zen 5 guest (AVX3_DL), held
/// against re-read: a copy of the Q4_0 row loop over 4096 columns took
/// 1.26-1.28 ns per quad against 1.38-1.44 with rows in L1, 1.40-1.42
/// against 1.58-1.65 from L3; GEMV 4096 x 4096 from L3 at one thread
/// (medians of 5-15 interleaved pairs) Q4_0 +15%, IQ4_NL +9-15%, Q5_0
/// +6-13%, Q4_1 +9%, Q5_1 +6%; 1B Q4_0 decode (three interleaved pairs)
/// bw_frac 0.69-0.74 -> 0.80-0.82 at one thread, 0.63-0.64 -> 0.70-0.73
/// at two with the probe at 52-63 GB/s.
RUVLLM_QUANT_ATTR HWY_INLINE __m512i in_register(__m512i v) {
  __asm__("" : "+v"(v));
  return v;
}

/// A Q4_0 or IQ4_NL quad (72 bytes) unpacked from registers: qs_index finds
/// its quant bytes in the 128-byte table (t0, t1), d_index its scales in
/// `scales`.
template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE void unpack_nibble_quants(__m512i t0, __m512i t1, __m512i qs_index, const constants& c,
                                                       __m512i& lo, __m512i& hi) {
  const __m512i qs = _mm512_permutex2var_epi8(t0, qs_index, t1);
  lo = _mm512_and_si512(qs, c.nibble_mask);
  hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), c.nibble_mask);
  if constexpr (F == quad_weights::iq4_nl) {
    // IQ4_NL: the nibbles index the table; its values + 128 pair with the
    // quad's -128 sum(a), as Q8_0's w + 128 do.
    lo = _mm512_shuffle_epi8(c.values, lo);
    hi = _mm512_shuffle_epi8(c.values, hi);
  }
}

template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE unpacked<F> unpack_nibble_quad(__m512i t0, __m512i t1, __m512i qs_index, __m512i scales,
                                                            __m512i d_index, const constants& c) {
  unpacked<F> u;
  unpack_nibble_quants<F>(t0, t1, qs_index, c, u.lo, u.hi);
  u.d = f16_scales(_mm512_maskz_permutexvar_epi8(upper_halves, d_index, scales), c);
  return u;
}

/// Unpacks the blocks at p. `valid` bytes of them exist (quad_bytes<F> for a
/// whole quad, fewer for the last, partial one): the rest read as zero, so
/// scales and quants of missing blocks are 0 and nothing past the row is read.
/// HalfLoads reads a whole Q8_0 quad's 128 bytes as four 32-byte loads, the
/// same bytes: the GEMV streams faster that way on Zen 5 (one thread, 2048
/// columns, interleaved runs: 1 GiB 32.5-37.4 GB/s against 29.8-33.7, from
/// L3 72-81 against 69-75; decode 1B Q8_0 33.1-33.9 tok/s against
/// 30.4-31.4, 110M 335-355 against 256-303). The GEMM tile, whose rows come
/// from L2, is as fast either way (0.165-0.174 ns per row, token and block)
/// and keeps the 64-byte loads.
template <quad_weights F, bool Whole, bool HalfLoads = false>
RUVLLM_QUANT_ATTR HWY_INLINE unpacked<F> unpack(const std::uint8_t* p, const constants& c, std::size_t valid) {
  unpacked<F> u;
  if constexpr (F == quad_weights::q4_1) {
    // 80 bytes: 64 in one register, the last 16 in one load.
    __m512i z0, z1;
    if constexpr (Whole) {
      z0 = in_register(_mm512_loadu_si512(p));
      z1 = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 64)));
    } else {
      z0 = _mm512_maskz_loadu_epi8(bytes_below(0, valid), p);
      z1 = _mm512_maskz_loadu_epi8(bytes_below(64, valid), p + 64);
    }
    const __m512i qs = _mm512_permutex2var_epi8(z0, c.qs_lo, z1);
    u.lo = _mm512_and_si512(qs, c.nibble_mask);
    u.hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), c.nibble_mask);
    u.d = f16_scales(_mm512_maskz_permutex2var_epi8(upper_halves, z0, c.d_index, z1), c);
    u.m = f16_scales(_mm512_maskz_permutex2var_epi8(upper_halves, z0, c.m_index, z1), c);
  } else if constexpr (F == quad_weights::q5_0 || F == quad_weights::q5_1) {
    // Q5_0: 88 bytes, 64 in one register, the last 24 as a 16- and an
    // 8-byte load; Q5_1: 96, the last 32 in one load (nothing past the quad
    // is read).
    __m512i z0, z1;
    if constexpr (Whole && F == quad_weights::q5_1) {
      z0 = in_register(_mm512_loadu_si512(p));
      z1 = _mm512_castsi256_si512(load256(p + 64));
    } else if constexpr (Whole) {
      z0 = in_register(_mm512_loadu_si512(p));
      const __m256i tail =
          _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 64))),
                                  _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 80)), 1);
      z1 = _mm512_castsi256_si512(tail);
    } else {
      z0 = _mm512_maskz_loadu_epi8(bytes_below(0, valid), p);
      z1 = _mm512_maskz_loadu_epi8(bytes_below(64, valid), p + 64);
    }
    const __m512i qs = _mm512_permutex2var_epi8(z0, c.qs_lo, z1);
    // The fifth bits as byte masks: bits 16j .. 16j + 15 of the low mask are
    // bits 0-15 of block j's qh (values 0-15 of chunk j), of the high mask
    // bits 16-31; one permute gathers them (missing blocks read as zero).
    const __m128i qh = _mm512_castsi512_si128(_mm512_permutex2var_epi8(z0, c.qh_index, z1));
    const auto low_bits = static_cast<__mmask64>(_mm_cvtsi128_si64(qh));
    const auto high_bits = static_cast<__mmask64>(_mm_extract_epi64(qh, 1));
    const __m512i lo = _mm512_and_si512(qs, c.nibble_mask);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), c.nibble_mask);
    u.lo = _mm512_mask_add_epi8(lo, low_bits, lo, c.fifth_bit);
    u.hi = _mm512_mask_add_epi8(hi, high_bits, hi, c.fifth_bit);
    u.d = f16_scales(_mm512_maskz_permutex2var_epi8(upper_halves, z0, c.d_index, z1), c);
    if constexpr (F == quad_weights::q5_1)
      u.m = f16_scales(_mm512_maskz_permutex2var_epi8(upper_halves, z0, c.m_index, z1), c);
  } else if constexpr (F == quad_weights::q4_0 || F == quad_weights::iq4_nl) {
    // 72 bytes: 64 in one register, the last 8 broadcast into another (the
    // permute reads only its first 8 bytes).
    __m512i z0, z1;
    if constexpr (Whole) {
      std::int64_t tail;
      std::memcpy(&tail, p + 64, sizeof tail);
      z0 = in_register(_mm512_loadu_si512(p));
      z1 = _mm512_set1_epi64(tail);
    } else {
      z0 = _mm512_maskz_loadu_epi8(bytes_below(0, valid), p);
      z1 = _mm512_setzero_si512();
    }
    u = unpack_nibble_quad<F>(z0, z1, c.qs_lo, z0, c.d_index, c);
  } else {
    // 136 bytes: values 0-15 of each block lie in bytes [0, 128), values
    // 16-31 in [8, 136), each range taken as two registers. A whole quad is
    // read once, as [0, 64), [64, 128) and a broadcast of the last 8 bytes,
    // and the [8, 136) registers are shifted out of those by a quadword:
    // reading [8, 72) and [72, 136) again cost a quarter of the DRAM
    // streaming rate on Zen 5.
    __m512i z0, z1, z2, z3;
    if constexpr (Whole) {
      std::int64_t tail;
      std::memcpy(&tail, p + 128, sizeof tail);
      if constexpr (HalfLoads) {
        z0 = _mm512_inserti64x4(_mm512_castsi256_si512(load256(p)), load256(p + 32), 1);
        z1 = _mm512_inserti64x4(_mm512_castsi256_si512(load256(p + 64)), load256(p + 96), 1);
      } else {
        z0 = _mm512_loadu_si512(p);
        z1 = _mm512_loadu_si512(p + 64);
      }
      z2 = _mm512_alignr_epi64(z1, z0, 1);
      z3 = _mm512_alignr_epi64(_mm512_set1_epi64(tail), z1, 1);
    } else {
      z0 = _mm512_maskz_loadu_epi8(bytes_below(0, valid), p);
      z1 = _mm512_maskz_loadu_epi8(bytes_below(64, valid), p + 64);
      z2 = _mm512_maskz_loadu_epi8(bytes_below(8, valid), p + 8);
      z3 = _mm512_maskz_loadu_epi8(bytes_below(72, valid), p + 72);
    }
    u.lo = _mm512_xor_si512(_mm512_permutex2var_epi8(z0, c.qs_lo, z1), c.sign_bit);
    u.hi = _mm512_xor_si512(_mm512_permutex2var_epi8(z2, c.qs_hi, z3), c.sign_bit);
    u.d = f16_scales(_mm512_maskz_permutex2var_epi8(upper_halves, z0, c.d_index, z1), c);
  }
  return u;
}

/// acc + float(the quad's dot from its offset term) * scale, lane-wise: the
/// integer dot of weights (w_lo, w_hi) with activations (a_lo, a_hi) starts
/// from `offset`, the weights' offset times the activation sums.
RUVLLM_QUANT_ATTR HWY_INLINE __m512 scaled_quad_dot(__m512i w_lo, __m512i w_hi, __m512i offset, __m512i a_lo,
                                                    __m512i a_hi, __m512 scale, __m512 acc) {
  __m512i sums = _mm512_dpbusd_epi32(offset, w_lo, a_lo);
  sums = _mm512_dpbusd_epi32(sums, w_hi, a_hi);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scale, acc);
}

/// Whether quad_row reads two whole quads per step (quad_pair_reader).
template <quad_weights F>
inline constexpr bool reads_quad_pairs = F == quad_weights::q4_0 || F == quad_weights::iq4_nl;

/// Two whole Q4_0 / IQ4_NL quads (144 bytes) from three loads, [0, 64),
/// [64, 128) and [128, 144), where unpack reads each quad as a 64-byte load
/// and an 8-byte one: one load slot less per two quads (see in_register),
/// and a quarter fewer line-crossing 64-byte loads. The second quad starts
/// at byte 8 of (z1, z2), so its indices are the first's plus 8, its scales
/// all in z1. Zen 5 guest, one thread, 4096 columns, quad_rows through the
/// dispatch (best / 10th percentile of 40 interleaved runs, ns per quad):
/// Q4_0 16 rows (L1) 1.19 / 1.22 against 1.23 / 1.25, 128 rows (L2) 1.24 /
/// 1.28 against 1.28 / 1.29, 2048 rows (L3) 1.36 against 1.36; IQ4_NL
/// 1.34-1.35 against 1.36-1.38 in L1 and L2. From DRAM the difference is
/// below the host's noise.
/// Two of the three loads cross a line for three pairs in four, and such a
/// 64-byte load costs about two aligned ones (0.33 against 0.18 ns in L1).
/// Reading each pair from the three whole lines it lies in instead (rows
/// 16-byte aligned: the pair's offset in its first line added to every
/// index, the odd quad's scales from a second permute) was slower in decode:
/// 110M Q4_0 at one thread bw_frac 0.60-0.82 against 0.91-1.02 over three
/// alternating rounds, 1B within noise; the aligned loads do not pay for
/// the added permute and index arithmetic. Nor did reading (z0, z1) as four
/// 32-byte loads, as Q8_0's HalfLoads rows do, with the arithmetic
/// unchanged: GEMV over 1 GiB at 2048 and 8192 columns within noise
/// (medians 1.01-1.08 over five alternating rounds, faster in 3 of 5), and
/// decode over four rounds 1B Q4_0 0.94x at one thread and 0.97x at two,
/// 110M 0.97x / 1.09x.
template <quad_weights F>
struct quad_pair_reader {
  __m512i qs_odd, d_odd;

  RUVLLM_QUANT_ATTR HWY_INLINE explicit quad_pair_reader(const constants& c) {
    const __m512i eight = _mm512_set1_epi8(8);
    qs_odd = _mm512_add_epi8(c.qs_lo, eight);
    d_odd = _mm512_add_epi8(c.d_index, eight);
  }

  RUVLLM_QUANT_ATTR HWY_INLINE void read(const std::uint8_t* p, const constants& c, unpacked<F>& even,
                                         unpacked<F>& odd) const {
    const __m512i z0 = in_register(_mm512_loadu_si512(p));
    const __m512i z1 = in_register(_mm512_loadu_si512(p + 64));
    const __m512i z2 = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 128)));
    even = unpack_nibble_quad<F>(z0, z1, c.qs_lo, z0, c.d_index, c);
    odd = unpack_nibble_quad<F>(z1, z2, qs_odd, z1, d_odd, c);
  }

  /// acc plus the dots of the two quads at p with activations whose quants
  /// are (lo0, hi0) and (lo1, hi1) and whose quad_pair_scales are `scales`.
  /// The eight blocks' d_w * d_a come from one byte permute of their scales
  /// and one multiply by the pair's activation scales, then one permute per
  /// quad spreads them over its lanes; read() and quad_dot form each quad's
  /// with a permute and a multiply of its own, which cost more than the
  /// spreading: three fewer vector operations per pair. The products and
  /// sums are the same, in the same order. Zen 5 guest, one thread, rows
  /// from L2 through the dispatch, ten alternating pairs per length: median
  /// 1.035x at 2048 columns, 1.08x at 768, 1.06x at 8192 (the host's slow
  /// spells gave pairs of 0.7 and 1.5 either way). Decode (model_bench, three
  /// rounds alternating): cached_GBps faster in 6 of 9 pairs, tok/s in 5 of
  /// 9, within the host's noise.
  RUVLLM_QUANT_ATTR HWY_INLINE __m512 dot_pair(const std::uint8_t* p, const constants& c, __m512i lo0, __m512i hi0,
                                               __m512i lo1, __m512i hi1, __m512i scales, __m512 acc) const {
    const __m512i z0 = in_register(_mm512_loadu_si512(p));
    const __m512i z1 = in_register(_mm512_loadu_si512(p + 64));
    const __m512i z2 = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 128)));
    __m512i even_lo, even_hi, odd_lo, odd_hi;
    unpack_nibble_quants<F>(z0, z1, c.qs_lo, c, even_lo, even_hi);
    unpack_nibble_quants<F>(z1, z2, qs_odd, c, odd_lo, odd_hi);
    // Block j's f16 scale into the upper half of lane j (j < 8, as in
    // quad_pair_scales), then d_w * d_a there. The multiply is masked to
    // those lanes: lanes 8-15 of `scales` hold the integer offsets, whose
    // bits read as subnormal floats, and a multiply with subnormal operands
    // halved the whole GEMV's rate (1B Q4_0 decode, one thread, 22 tok/s
    // against 34-40).
    const __m512i halves = _mm512_maskz_permutex2var_epi8(0xCCCC'CCCCull, z0, pair_d, z1);
    const __m512 d = _mm512_maskz_mul_ps(0x00FF, f16_scales(halves, c), _mm512_castsi512_ps(scales));
    const __m512i block = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i odd_block = _mm512_add_epi32(block, _mm512_set1_epi32(4));
    const __m512i eight = _mm512_set1_epi32(8);
    const __m512i even_offset = _mm512_maskz_permutexvar_epi32(0x1111, _mm512_add_epi32(block, eight), scales);
    const __m512i odd_offset = _mm512_maskz_permutexvar_epi32(0x1111, _mm512_add_epi32(odd_block, eight), scales);
    acc = scaled_quad_dot(even_lo, even_hi, even_offset, lo0, hi0, _mm512_permutexvar_ps(block, d), acc);
    return scaled_quad_dot(odd_lo, odd_hi, odd_offset, lo1, hi1, _mm512_permutexvar_ps(odd_block, d), acc);
  }

 private:
  /// Byte indices into (z0, z1) of the eight scales of a quad pair, for
  /// bytes 4j + 2 and 4j + 3 (j < 8): block j of the even quad at 18 j, of
  /// the odd one at 72 + 18 (j - 4).
  static constexpr std::array<std::uint8_t, 64> pair_d_bytes = [] {
    std::array<std::uint8_t, 64> b{};
    for (std::size_t j = 0; j < 8; ++j) {
      const std::size_t at = j < 4 ? 18 * j : 72 + 18 * (j - 4);
      b[4 * j + 2] = static_cast<std::uint8_t>(at);
      b[4 * j + 3] = static_cast<std::uint8_t>(at + 1);
    }
    return b;
  }();
  __m512i pair_d = _mm512_loadu_si512(pair_d_bytes.data());
};

/// One quad's activations in registers; d carries the 2^112 of f16_scales.
/// For the minima (Q4_1, Q5_1), neg8 holds -8 sum(a) in lane 4j (block j)
/// and d_min is -d / 8, so their product is d sum(a).
struct quad_regs {
  __m512i lo, hi, offset, neg8;
  __m512 d, d_min;
};

/// The activation sums a format's weight offset multiplies, for the formats
/// that read them as stored: Q4_0 -8 sum(a), Q8_0 and IQ4_NL -128 sum(a)
/// (their values carry +128 as unsigned bytes).
template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE const std::int32_t* stored_offsets(const q8_0_quad& q) {
  static_assert(F == quad_weights::q4_0 || F == quad_weights::q8_0 || F == quad_weights::iq4_nl);
  return F == quad_weights::q4_0 ? q.neg8_sum : q.neg128_sum;
}

template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE quad_regs load_quad(const q8_0_quad& q) {
  quad_regs r;
  r.lo = _mm512_load_si512(q.lo);
  r.hi = _mm512_load_si512(q.hi);
  // The weights' offset times the activation sums: Q4_0 -8, Q5_0 -16, Q8_0
  // and IQ4_NL -128 (their values carry +128 as unsigned bytes); Q4_1 and
  // Q5_1 have none (their minima take the activation sums instead).
  r.neg8 = _mm512_load_si512(q.neg8_sum);
  if constexpr (F == quad_weights::q5_0) {
    r.offset = _mm512_slli_epi32(r.neg8, 1);
  } else if constexpr (has_minimum<F>) {
    r.offset = _mm512_setzero_si512();
  } else {
    r.offset = _mm512_load_si512(stored_offsets<F>(q));
  }
  // Exact: activation scales are f16 values (< 2^16), so the product stays
  // below 2^128.
  r.d = _mm512_mul_ps(_mm512_load_ps(q.d), _mm512_set1_ps(0x1p112f));
  r.d_min = _mm512_mul_ps(r.d, _mm512_set1_ps(-0.125f));
  return r;
}

/// The activation scales (times 2^112, as load_quad gives them) and weight
/// offsets of two consecutive quads in one vector, for the rows_l1 rows of
/// the formats without minima that the GEMV reads most (Q4_0, IQ4_NL, Q8_0;
/// Q5_0 and the formats with minima keep load_quad): block j of the
/// even quad at d[j] and offset[j], of the odd one at d[4 + j] and
/// offset[4 + j]. load_quad reads these from two 64-byte vectors per quad,
/// each holding every value four times (its lanes' layout); one vector per
/// pair, expanded by two permutes per quad, leaves a quad's activation loads
/// at its two quant vectors plus half of this. The loads saved are what the
/// GEMV's rate from DRAM goes with (see line_prefetcher in target-inl.h), not
/// its arithmetic: in a timing-only copy of the Q4_0 row loop (Zen 5 guest,
/// 1 GiB in 2 MiB pages, twelve passes alternating the variants in one
/// process) this layout read 4.8-5.4% faster at 2048 columns and 10.7-13.4%
/// at 8192 at one thread (10-12 of 12 pairs faster), 7.8% / 11.2-12.1% at
/// two, while removing arithmetic changed nothing: the high nibbles by one
/// GFNI affine instead of a shift and a mask, 6% fewer cycles per quad from
/// L1, read 0.4-1.2% faster, and two accumulators 1.1-2.6% slower. The
/// values are those load_quad gives, so the results are the same bits. In
/// the library's GEMV (gemv_bench's plan rows, two rounds alternating the
/// two builds) Q4_0 read 29.1-30.9 GB/s against 26.8-28.9 at 2048 columns
/// and one thread, 29.5-30.0 against 22.0-25.9 at 8192; Q8_0 28.9-34.0
/// against 25.5-28.4 at 2048, 28.5-30.4 against 23.3-23.8 at 8192, and
/// 53.8-60.2 against 44.1-55.1 at two threads.
struct alignas(64) quad_pair_scales {
  float d[8];
  std::int32_t offset[8];
};

/// The formats whose rows_l1 rows take quad_pair_scales.
template <quad_weights F>
inline constexpr bool takes_pair_scales =
    F == quad_weights::q4_0 || F == quad_weights::iq4_nl || F == quad_weights::q8_0;

/// Most quad pairs quad_row takes its scales from quad_pair_scales for:
/// rows of up to 32768 columns (8 KiB on the stack); longer rows load them
/// per quad.
inline constexpr std::size_t max_scale_pairs = 128;

/// The quad_pair_scales of the `pairs` pairs of quads at a.
template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE void pack_pair_scales(const q8_0_quad* HWY_RESTRICT a, std::size_t pairs,
                                                   quad_pair_scales* HWY_RESTRICT out) {
  static_assert(takes_pair_scales<F>);
  // Lanes 4j of the even quad's vector into lanes j and 8 + j, of the odd
  // one's into lanes 4 + j and 12 + j: the scales keep lanes 0-7, the
  // offsets lanes 8-15.
  const __m512i pick = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
  for (std::size_t p = 0; p < pairs; ++p) {
    const q8_0_quad& even = a[2 * p];
    const q8_0_quad& odd = a[2 * p + 1];
    const __m512 d = _mm512_mul_ps(_mm512_permutex2var_ps(_mm512_load_ps(even.d), pick, _mm512_load_ps(odd.d)),
                                   _mm512_set1_ps(0x1p112f));
    const __m512i offsets = _mm512_permutex2var_epi32(_mm512_load_si512(stored_offsets<F>(even)), pick,
                                                      _mm512_load_si512(stored_offsets<F>(odd)));
    _mm512_store_si512(out + p, _mm512_mask_blend_epi32(0xFF00, _mm512_castps_si512(d), offsets));
  }
}

/// load_quad's registers for the even (Odd false) or odd quad of a pair
/// whose activation quants are lo and hi, its scales and offsets expanded
/// from the pair's quad_pair_scales.
template <bool Odd>
RUVLLM_QUANT_ATTR HWY_INLINE quad_regs quad_of_pair(__m512i lo, __m512i hi, __m512i scales) {
  // Lane i of the quad takes block i / 4: d from lane i / 4 (+ 4 when odd),
  // the offset from lane 8 + i / 4 (+ 4) into lanes 4j only, as load_quad's.
  const __m512i block = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m512i d_index = Odd ? _mm512_add_epi32(block, _mm512_set1_epi32(4)) : block;
  quad_regs r;
  r.lo = lo;
  r.hi = hi;
  r.d = _mm512_castsi512_ps(_mm512_permutexvar_epi32(d_index, scales));
  r.offset = _mm512_maskz_permutexvar_epi32(0x1111, _mm512_add_epi32(d_index, _mm512_set1_epi32(8)), scales);
  r.neg8 = _mm512_setzero_si512();
  r.d_min = _mm512_setzero_ps();
  return r;
}

/// quad_of_pair with the quants loaded from q.
template <bool Odd>
RUVLLM_QUANT_ATTR HWY_INLINE quad_regs load_quad_of_pair(const q8_0_quad& q, __m512i scales) {
  return quad_of_pair<Odd>(_mm512_load_si512(q.lo), _mm512_load_si512(q.hi), scales);
}

/// acc + float(dot of one row's quad with the activations) * (d_w * d_a), lane-wise.
template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE __m512 quad_dot(const unpacked<F>& w, const quad_regs& a, __m512 acc) {
  acc = scaled_quad_dot(w.lo, w.hi, a.offset, a.lo, a.hi, _mm512_mul_ps(w.d, a.d), acc);
  // Q4_1, Q5_1: + float(-8 sum(a)) * (m_w * d_a) / -8.
  if constexpr (has_minimum<F>) acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a.neg8), _mm512_mul_ps(w.m, a.d_min), acc);
  return acc;
}

RUVLLM_QUANT_ATTR HWY_INLINE float sum_lanes(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1));
  const __m128 q = _mm_add_ps(_mm256_extractf128_ps(h, 0), _mm256_extractf128_ps(h, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}

/// *out = dot(the row at w, a). With PairScales (formats of
/// takes_pair_scales), `pair_scales` holds the scales of the row's first
/// (nb / 4) / 2 quad pairs (pack_pair_scales) and the pairs take them from
/// there; without, every quad loads its own (load_quad).
template <quad_weights F, gemv_plan Plan, bool PairScales = false>
RUVLLM_QUANT_ATTR HWY_INLINE void quad_row(const std::uint8_t* HWY_RESTRICT w, const q8_0_quad* HWY_RESTRICT a,
                                           std::size_t nb, float* HWY_RESTRICT out, const constants& c,
                                           const quad_pair_scales* HWY_RESTRICT pair_scales = nullptr) {
  static_assert(!PairScales || takes_pair_scales<F>);
  constexpr std::size_t step = quad_bytes<F>;
  const std::size_t whole = nb / 4, rest = nb % 4;
  __m512 acc = _mm512_setzero_ps();
  line_prefetcher ahead(w);  // rows_l1's stream; pairs_l1_l2 keeps prefetch_ahead
  // Before reading `quads` quads from quad q on.
  const auto prefetch = [&](std::size_t q, std::size_t quads) RUVLLM_QUANT_LAMBDA {
    if constexpr (Plan == gemv_plan::rows_l1)
      ahead.until(w + (q + quads) * step);
    else
      prefetch_ahead<Plan>(w + q * step, quads * step);
  };
  // The activations of quads q and q + 1 (q even).
  const auto activation_pair = [&](std::size_t q, quad_regs& even, quad_regs& odd) RUVLLM_QUANT_LAMBDA {
    if constexpr (PairScales) {
      const __m512i scales = _mm512_load_si512(pair_scales + q / 2);
      even = load_quad_of_pair<false>(a[q], scales);
      odd = load_quad_of_pair<true>(a[q + 1], scales);
    } else {
      even = load_quad<F>(a[q]);
      odd = load_quad<F>(a[q + 1]);
    }
  };
  std::size_t q = 0;
  if constexpr (reads_quad_pairs<F>) {
    const quad_pair_reader<F> reader(c);
    for (; q + 2 <= whole; q += 2) {
      prefetch(q, 2);
      if constexpr (PairScales) {
        acc = reader.dot_pair(w + q * step, c, _mm512_load_si512(a[q].lo), _mm512_load_si512(a[q].hi),
                              _mm512_load_si512(a[q + 1].lo), _mm512_load_si512(a[q + 1].hi),
                              _mm512_load_si512(pair_scales + q / 2), acc);
      } else {
        unpacked<F> even, odd;
        reader.read(w + q * step, c, even, odd);
        quad_regs a_even, a_odd;
        activation_pair(q, a_even, a_odd);
        acc = quad_dot(even, a_even, acc);
        acc = quad_dot(odd, a_odd, acc);
      }
    }
  } else if constexpr (PairScales) {
    // Q8_0 reads its quads one at a time (see unpack) and takes their
    // scales a pair at a time.
    for (; q + 2 <= whole; q += 2) {
      quad_regs a_even, a_odd;
      activation_pair(q, a_even, a_odd);
      prefetch(q, 1);
      acc = quad_dot(unpack<F, true, true>(w + q * step, c, step), a_even, acc);
      prefetch(q + 1, 1);
      acc = quad_dot(unpack<F, true, true>(w + (q + 1) * step, c, step), a_odd, acc);
    }
  }
  for (; q < whole; ++q) {
    prefetch(q, 1);
    acc = quad_dot(unpack<F, true, F == quad_weights::q8_0>(w + q * step, c, step), load_quad<F>(a[q]), acc);
  }
  if (rest != 0) acc = quad_dot(unpack<F, false>(w + whole * step, c, rest * (step / 4)), load_quad<F>(a[whole]), acc);
  *out = sum_lanes(acc);
}

/// out[0], out[1] = dot(the rows at w and w + stride, a): quad_row's
/// arithmetic for each row (so the same bits), with each quad's activations
/// loaded once for both (under gemv_plan::pairs_l1_l2). An L1-resident Q4_0
/// step is bound by its 64-byte loads (one per cycle on Zen 4): a row's quad
/// takes two of weights and four of activations. On a Zen 4 EPYC guest at one thread, over 1 GiB of 768 /
/// 2048 columns, pairs read Q4_0 at 24.5-24.7 / 25.2-25.5 GB/s against
/// 22.6-23.1 / 23.1-23.5 one row at a time, and a 1B Q4_0 decode step ran
/// 42.3-43.9 tok/s against 35.8-41.8. Q8_0 reads 136 bytes of weights per
/// four activation loads and goes one row at a time: pairs were within noise
/// over 768 / 2048 columns and slowed a 1B Q8_0 decode from ~27.5 to ~22
/// tok/s (two streams 2-8.5 KiB apart). The two rows are two streams, each
/// prefetched as its own.
template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE void quad_row_pair(const std::uint8_t* HWY_RESTRICT w, std::size_t stride,
                                                const q8_0_quad* HWY_RESTRICT a, std::size_t nb,
                                                float* HWY_RESTRICT out, const constants& c) {
  constexpr std::size_t step = quad_bytes<F>;
  const std::size_t whole = nb / 4, rest = nb % 4;
  const std::uint8_t* w1 = w + stride;
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  for (std::size_t q = 0; q < whole; ++q) {
    prefetch_ahead<gemv_plan::pairs_l1_l2>(w + q * step, step);
    prefetch_ahead<gemv_plan::pairs_l1_l2>(w1 + q * step, step);
    // Both rows read the activations: held in registers, loaded once.
    quad_regs x = load_quad<F>(a[q]);
    x.lo = in_register(x.lo);
    x.hi = in_register(x.hi);
    x.offset = in_register(x.offset);
    x.neg8 = in_register(x.neg8);
    acc0 = quad_dot(unpack<F, true>(w + q * step, c, step), x, acc0);
    acc1 = quad_dot(unpack<F, true>(w1 + q * step, c, step), x, acc1);
  }
  if (rest != 0) {
    const quad_regs x = load_quad<F>(a[whole]);
    acc0 = quad_dot(unpack<F, false>(w + whole * step, c, rest * (step / 4)), x, acc0);
    acc1 = quad_dot(unpack<F, false>(w1 + whole * step, c, rest * (step / 4)), x, acc1);
  }
  out[0] = sum_lanes(acc0);
  out[1] = sum_lanes(acc1);
}

/// Most whole quads a row may have for resident_quad_rows: 1151 columns.
/// Its activation quants then take 16 registers and the pair scales 4, of
/// the 32 AVX-512 has.
inline constexpr std::size_t max_resident_quads = 8;

/// quad_row<F, rows_l1, true> over `rows` rows of nb blocks, nb / 4 ==
/// Quads, with the activations of the whole quads held in registers for all
/// the rows: per quad, the loop loads only its weights. The activation
/// loads, not the arithmetic, are what a row's rate from DRAM goes with (see
/// line_prefetcher in target-inl.h); short rows are where they can go: a
/// 110M model's projections and output matrix have 768 columns, six quads.
/// Zen 5 guest, two builds alternating in seven rounds (110M decode, one
/// and two threads): Q4_0 was faster in 13 of 14 pairs, one thread 346-556
/// tok/s against 390-489, two 710-968 against 584-783 (bw_frac 0.69-0.88
/// against 0.54-0.72); Q8_0 (three rounds) two threads bw_frac 0.93-1.10
/// against 0.78-0.88, one thread within noise. GEMV alone over 1 GiB of 768
/// columns (gemv_bench's plan rows, same rounds) was faster in only four of
/// seven pairs at each thread count, within this host's noise: Q4_0 medians
/// 28.0 / 46.1 GB/s against 21.0 / 41.2. Called through
/// resident_rows_by_length, not inlined; measured so against the kernels
/// without it (seven rounds), 110M Q4_0 two threads was faster in 7 of 7
/// pairs (1.01-1.18x tok/s), Q8_0 in 3 of 3. Each row's arithmetic is
/// quad_row's, quad by quad in the same order, so the results are the same
/// bits.
template <quad_weights F, std::size_t Quads>
RUVLLM_QUANT_ATTR HWY_INLINE void resident_quad_rows(const std::uint8_t* HWY_RESTRICT base, std::size_t row_stride,
                                                     std::size_t rows, const q8_0_quad* HWY_RESTRICT a, std::size_t nb,
                                                     float* HWY_RESTRICT out, const constants& c,
                                                     const quad_pair_scales* HWY_RESTRICT pair_scales) {
  static_assert(takes_pair_scales<F> && Quads >= 1 && Quads <= max_resident_quads);
  constexpr std::size_t step = quad_bytes<F>, pairs = Quads / 2;
  const std::size_t rest = nb % 4;
  __m512i lo[Quads], hi[Quads], scales[pairs + 1];
#pragma GCC unroll 8
  for (std::size_t q = 0; q < Quads; ++q) {
    lo[q] = _mm512_load_si512(a[q].lo);
    hi[q] = _mm512_load_si512(a[q].hi);
  }
#pragma GCC unroll 8
  for (std::size_t p = 0; p < pairs; ++p) scales[p] = _mm512_load_si512(pair_scales + p);
  // An odd last whole quad goes alone, as in quad_row, with load_quad's registers.
  const quad_regs lone = Quads % 2 != 0 ? load_quad<F>(a[Quads - 1]) : quad_regs{};
  const quad_pair_reader<F> reader(c);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint8_t* w = base + r * row_stride;
    line_prefetcher ahead(w);
    __m512 acc = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (std::size_t p = 0; p < pairs; ++p) {
      const std::uint8_t* at = w + 2 * p * step;
      if constexpr (reads_quad_pairs<F>) {
        ahead.until(at + 2 * step);
        acc = reader.dot_pair(at, c, lo[2 * p], hi[2 * p], lo[2 * p + 1], hi[2 * p + 1], scales[p], acc);
      } else {
        ahead.until(at + step);
        const unpacked<F> even = unpack<F, true, true>(at, c, step);
        ahead.until(at + 2 * step);
        const unpacked<F> odd = unpack<F, true, true>(at + step, c, step);
        acc = quad_dot(even, quad_of_pair<false>(lo[2 * p], hi[2 * p], scales[p]), acc);
        acc = quad_dot(odd, quad_of_pair<true>(lo[2 * p + 1], hi[2 * p + 1], scales[p]), acc);
      }
    }
    if constexpr (Quads % 2 != 0) {
      ahead.until(w + Quads * step);
      acc = quad_dot(unpack<F, true, F == quad_weights::q8_0>(w + (Quads - 1) * step, c, step), lone, acc);
    }
    if (rest != 0)
      acc = quad_dot(unpack<F, false>(w + Quads * step, c, rest * (step / 4)), load_quad<F>(a[Quads]), acc);
    out[r] = sum_lanes(acc);
  }
}

/// resident_quad_rows for the rows of a matrix of n columns, nb / 4 of them
/// whole quads, 1 to max_resident_quads. Not inlined, so that all_quad_rows'
/// loop for longer rows compiles as it does without it (the same
/// instructions, checked in the AVX3_DL object). Inlined into that loop's
/// function, it changed the loop's registers, load order and alignment, and
/// 1B Q4_0 decode (2048 columns, never resident) was slower in 6 of 6
/// alternating pairs at two threads; not inlined, 4 of 7 pairs were faster
/// (median 1.03x).
template <quad_weights F, std::size_t... Q>
RUVLLM_QUANT_ATTR HWY_NOINLINE void resident_rows_by_length(std::index_sequence<Q...>, const void* w,
                                                            std::size_t row_stride, std::size_t rows,
                                                            const q8_0_quad* a, std::size_t n, float* out) {
  const auto* base = static_cast<const std::uint8_t*>(w);
  const constants c = load_constants<F>();
  const std::size_t nb = n / 32;
  quad_pair_scales scales[max_resident_quads / 2];
  pack_pair_scales<F>(a, nb / 8, scales);
  static_cast<void>((
      (nb / 4 == Q + 1 && (resident_quad_rows<F, Q + 1>(base, row_stride, rows, a, nb, out, c, scales), true)) || ...));
}

template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE void all_quad_rows(const void* w, std::size_t row_stride, std::size_t rows,
                                                const q8_0_quad* a, std::size_t n, float* out) {
  const std::size_t nb = n / 32;
  if constexpr (takes_pair_scales<F>)
    if (nb / 4 >= 1 && nb / 4 <= max_resident_quads && gemv_plan_in_use() == gemv_plan::rows_l1)
      return resident_rows_by_length<F>(std::make_index_sequence<max_resident_quads>{}, w, row_stride, rows, a, n, out);
  const auto* base = static_cast<const std::uint8_t*>(w);
  const constants c = load_constants<F>();
  with_gemv_plan([&](auto plan) RUVLLM_QUANT_LAMBDA {
    constexpr gemv_plan Plan = decltype(plan)::value;
    std::size_t r = 0;
    if constexpr (packs_nibbles<F> && Plan == gemv_plan::pairs_l1_l2)
      for (; r + 2 <= rows; r += 2) quad_row_pair<F>(base + r * row_stride, row_stride, a, nb, out + r, c);
    if constexpr (takes_pair_scales<F> && Plan == gemv_plan::rows_l1) {
      const std::size_t pairs = nb / 4 / 2;
      if (pairs <= max_scale_pairs) {
        quad_pair_scales scales[max_scale_pairs];
        pack_pair_scales<F>(a, pairs, scales);
        for (; r < rows; ++r) quad_row<F, Plan, true>(base + r * row_stride, a, nb, out + r, c, scales);
      }
    }
    for (; r < rows; ++r) quad_row<F, Plan>(base + r * row_stride, a, nb, out + r, c);
  });
}

/// Y[t][r] for a tile of rows x tokens. Four rows at a time are unpacked
/// once per K block of up to kb_quads quads into a stack buffer, then every
/// pair of tokens runs over them with 4 x 2 float accumulators (partial sums
/// of a K block parked in `parked` between blocks). Each weight byte is
/// unpacked once per call instead of once per token.
template <quad_weights F>
RUVLLM_QUANT_ATTR HWY_INLINE void quad_gemm(const void* w, std::size_t row_stride, std::size_t rows,
                                            const q8_0_quad* HWY_RESTRICT a, std::size_t tokens, std::size_t n,
                                            float* HWY_RESTRICT y, std::size_t y_stride) {
  constexpr std::size_t R = 4, kb_quads = 8, token_block = 64;
  const constants c = load_constants<F>();
  constexpr std::size_t step = quad_bytes<F>;
  const std::size_t nb = n / 32, nq = q8_0_quads(n);
  const auto* base = static_cast<const std::uint8_t*>(w);
  HWY_ALIGN unpacked<F> u[R][kb_quads];
  HWY_ALIGN __m512 parked[R][token_block];
  for (std::size_t r0 = 0; r0 < rows; r0 += R) {
    const std::size_t nr = std::min(R, rows - r0);
    for (std::size_t t0 = 0; t0 < tokens; t0 += token_block) {
      const std::size_t nt = std::min(token_block, tokens - t0);
      for (std::size_t k0 = 0; k0 < nq; k0 += kb_quads) {
        const std::size_t kq = std::min(kb_quads, nq - k0);
        const bool first = k0 == 0, last = k0 + kq == nq;
        for (std::size_t k = 0; k < nr; ++k) {
          const std::uint8_t* row = base + (r0 + k) * row_stride;
          for (std::size_t q = 0; q < kq; ++q) {
            const std::size_t blocks = std::min<std::size_t>(4, nb - 4 * (k0 + q));
            u[k][q] = blocks == 4 ? unpack<F, true>(row + (k0 + q) * step, c, step)
                                  : unpack<F, false>(row + (k0 + q) * step, c, blocks * (step / 4));
          }
        }
        // Rows past nr reuse row 0's unpacked blocks; their results are dropped.
        for (std::size_t k = nr; k < R; ++k)
          for (std::size_t q = 0; q < kq; ++q) u[k][q] = u[0][q];
        std::size_t t = 0;
        const auto run = [&](auto tokens_now) RUVLLM_QUANT_LAMBDA {
          constexpr std::size_t T = decltype(tokens_now)::value;
          __m512 acc[R][T];
          for (std::size_t k = 0; k < R; ++k)
            for (std::size_t j = 0; j < T; ++j) acc[k][j] = first ? _mm512_setzero_ps() : parked[k][t + j];
          for (std::size_t q = 0; q < kq; ++q) {
            for (std::size_t j = 0; j < T; ++j) {
              const quad_regs act = load_quad<F>(a[(t0 + t + j) * nq + k0 + q]);
              for (std::size_t k = 0; k < R; ++k) acc[k][j] = quad_dot(u[k][q], act, acc[k][j]);
            }
          }
          for (std::size_t k = 0; k < R; ++k)
            for (std::size_t j = 0; j < T; ++j) {
              if (last) {
                if (k < nr) y[(t0 + t + j) * y_stride + r0 + k] = sum_lanes(acc[k][j]);
              } else {
                parked[k][t + j] = acc[k][j];
              }
            }
        };
        for (; t + 2 <= nt; t += 2) run(std::integral_constant<std::size_t, 2>{});
        if (t < nt) run(std::integral_constant<std::size_t, 1>{});
      }
    }
  }
}

}  // namespace vnni
#endif  // RUVLLM_QUANT_VNNI

/// The 16 six-bit quants (0..63) of Q6_K sub-group `group` (0..3, elements
/// 32 group + l0 + [0, 16) of a 128-element half) from that half's ql/qh.
RUVLLM_QUANT_ATTR HWY_INLINE void q6_k_unpack16(const std::uint8_t* ql, const std::uint8_t* qh, std::size_t l0,
                                                VU8 (&q)[4]) {
  const DU8 du8;
  const VU8 m4 = hn::Set(du8, 0x0F), m2 = hn::Set(du8, 0x03);
  const VU8 l_a = hn::LoadU(du8, ql + l0), l_b = hn::LoadU(du8, ql + 32 + l0), h = hn::LoadU(du8, qh + l0);
  q[0] = hn::Or(hn::And(l_a, m4), hn::ShiftLeft<4>(hn::And(h, m2)));
  q[1] = hn::Or(hn::And(l_b, m4), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2>(h), m2)));
  q[2] = hn::Or(hn::ShiftRight<4>(l_a), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<4>(h), m2)));
  q[3] = hn::Or(hn::ShiftRight<4>(l_b), hn::ShiftLeft<4>(hn::ShiftRight<6>(h)));
}

#if !RUVLLM_QUANT_WIDE
/// One Q4_K or Q5_K . Q8_K super-block, the same float expression as the
/// reference; Q5_K adds the fifth bit of each quant (bit 2g + h of qh[l] for
/// element 64g + 32h + l) as 16.
template <class Block>
RUVLLM_QUANT_ATTR HWY_INLINE float scale_min_block(const Block& w, const block_q8_k& a) {
  const D32 d32;
  const DU8 du8;
  std::uint8_t sc[8], m[8];
  scalar::quant_detail::k_scales_mins(w, sc, m);
  std::int32_t mins = 0;
  for (std::size_t j = 0; j < 8; ++j) mins += m[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
  V32 acc = hn::Zero(d32);
  const VU8 mask = hn::Set(du8, 0x0F);
  // The quants of 16 elements (l = from .. from + 15 of a group) from their
  // packed bytes p, lower or upper nibbles, plus Q5_K's bit `bit` of qh[l].
  const auto quants = [&](VU8 p, bool upper, std::size_t from, unsigned bit) RUVLLM_QUANT_LAMBDA {
    VU8 q = upper ? hn::ShiftRight<4>(p) : hn::And(p, mask);
    if constexpr (std::is_same_v<Block, block_q5_k>) {
      const VU8 set = hn::And(hn::LoadU(du8, w.qh + from), hn::Set(du8, static_cast<std::uint8_t>(1u << bit)));
      q = hn::Or(q, hn::IfThenElseZero(hn::Ne(set, hn::Zero(du8)), hn::Set(du8, 0x10)));
    }
    return q;
  };
  for (std::size_t g = 0; g < 4; ++g) {
    const std::uint8_t* q = w.qs + 32 * g;
    const std::int8_t* q8 = a.qs + 64 * g;
    const VU8 p0 = hn::LoadU(du8, q), p1 = hn::LoadU(du8, q + 16);
    for (unsigned h = 0; h < 2; ++h) {
      const auto bit = static_cast<unsigned>(2 * g + h);
      const V32 sums = dot32_u8(quants(p0, h == 1, 0, bit), quants(p1, h == 1, 16, bit), q8 + 32 * h);
      acc = hn::Add(acc, hn::Mul(sums, hn::Set(d32, sc[2 * g + h])));
    }
  }
  const std::int32_t scaled = hn::GetLane(hn::SumOfLanes(d32, acc));
  const float d = half_to_float(w.d) * a.d;
  const float dmin = half_to_float(w.dmin) * a.d;
  return d * static_cast<float>(scaled) - dmin * static_cast<float>(mins);
}

/// One Q6_K . Q8_K super-block: sum(sc (q - 32) a) = sum(sc q a) - 32 sum(sc
/// bsum), the same float expression as the reference.
RUVLLM_QUANT_ATTR HWY_INLINE float q6_k_block(const block_q6_k& w, const block_q8_k& a) {
  const D32 d32;
  V32 acc = hn::Zero(d32);
  for (std::size_t half = 0; half < 2; ++half) {
    const std::int8_t* q8 = a.qs + 128 * half;
    const std::int8_t* sc = w.scales + 8 * half;
    for (std::size_t l0 = 0; l0 < 32; l0 += 16) {
      VU8 q[4];
      q6_k_unpack16(w.ql + 64 * half, w.qh + 32 * half, l0, q);
      for (std::size_t g = 0; g < 4; ++g)
        acc = hn::Add(acc, hn::Mul(dot16_u8(q[g], q8 + 32 * g + l0), hn::Set(d32, sc[2 * g + l0 / 16])));
    }
  }
  std::int32_t bias = 0;
  for (std::size_t g = 0; g < qk_k / 16; ++g) bias += w.scales[g] * a.bsums[g];
  const std::int32_t total = hn::GetLane(hn::SumOfLanes(d32, acc)) - 32 * bias;
  return half_to_float(w.d) * a.d * static_cast<float>(total);
}

/// The 16 two-bit quants (0..3) of elements 32 k + l0 + [0, 16) of a
/// 128-element half of a Q2_K or Q3_K super-block, from the 16 qs bytes at
/// packed (that half's bytes l0 ..).
RUVLLM_QUANT_ATTR HWY_INLINE VU8 two_bit_quants(VU8 packed, int k) {
  return hn::And(hn::ShiftRightSame(packed, 2 * k), hn::Set(DU8(), 3));
}

/// One Q2_K . Q8_K super-block, the same float expression as the reference.
RUVLLM_QUANT_ATTR HWY_INLINE float q2_k_block(const block_q2_k& w, const block_q8_k& a) {
  const D32 d32;
  const DU8 du8;
  V32 acc = hn::Zero(d32);
  for (std::size_t half = 0; half < 2; ++half) {
    for (std::size_t l0 = 0; l0 < 32; l0 += 16) {
      const VU8 packed = hn::LoadU(du8, w.qs + 32 * half + l0);
      for (int k = 0; k < 4; ++k) {
        const std::size_t e = 128 * half + 32 * static_cast<std::size_t>(k) + l0;
        const V32 sums = dot16_u8(two_bit_quants(packed, k), a.qs + e);
        acc = hn::Add(acc, hn::Mul(sums, hn::Set(d32, w.scales[e / 16] & 0x0F)));
      }
    }
  }
  std::int32_t mins = 0;
  for (std::size_t j = 0; j < qk_k / 16; ++j) mins += (w.scales[j] >> 4) * a.bsums[j];
  const std::int32_t scaled = hn::GetLane(hn::SumOfLanes(d32, acc));
  const float d = half_to_float(w.d) * a.d;
  const float dmin = half_to_float(w.dmin) * a.d;
  return d * static_cast<float>(scaled) - dmin * static_cast<float>(mins);
}

/// One Q3_K . Q8_K super-block: sum(sc (q - 4) a) = sum(sc q a) - 4 sum(sc
/// bsum) with q = the two bits from qs plus 4 times the hmask bit, the
/// same float expression as the reference.
RUVLLM_QUANT_ATTR HWY_INLINE float q3_k_block(const block_q3_k& w, const block_q8_k& a) {
  const D32 d32;
  const DU8 du8;
  std::int32_t sc[qk_k / 16];
  for (std::size_t j = 0; j < qk_k / 16; ++j) sc[j] = scalar::quant_detail::q3_k_scale(w.scales, j);
  V32 acc = hn::Zero(d32);
  for (std::size_t l0 = 0; l0 < 32; l0 += 16) {
    const VU8 high = hn::LoadU(du8, w.hmask + l0);
    for (std::size_t half = 0; half < 2; ++half) {
      const VU8 packed = hn::LoadU(du8, w.qs + 32 * half + l0);
      for (int k = 0; k < 4; ++k) {
        const int chunk = 4 * static_cast<int>(half) + k;  // element 32 chunk + l: bit chunk of hmask[l]
        const VU8 third = hn::ShiftLeft<2>(hn::And(hn::ShiftRightSame(high, chunk), hn::Set(du8, 1)));
        const std::size_t e = 32 * static_cast<std::size_t>(chunk) + l0;
        const V32 sums = dot16_u8(hn::Or(two_bit_quants(packed, k), third), a.qs + e);
        acc = hn::Add(acc, hn::Mul(sums, hn::Set(d32, sc[e / 16])));
      }
    }
  }
  std::int32_t bias = 0;
  for (std::size_t j = 0; j < qk_k / 16; ++j) bias += sc[j] * a.bsums[j];
  const std::int32_t total = hn::GetLane(hn::SumOfLanes(d32, acc)) - 4 * bias;
  return half_to_float(w.d) * a.d * static_cast<float>(total);
}

/// One IQ4_XS . Q8_K super-block: per 32-element sub-block the table values
/// (iq4_nl_lookup) dotted with the activations, times the sub-block's signed
/// scale; the same float expression as the reference.
RUVLLM_QUANT_ATTR HWY_INLINE float iq4_xs_block(const block_iq4_xs& w, const block_q8_k& a) {
  const D32 d32;
  const VI8 table = hn::LoadU(DI8(), iq4_nl_values);
  V32 acc = hn::Zero(d32);
  for (std::size_t j = 0; j < qk_k / 32; ++j) {
    const VU8 packed = hn::LoadU(DU8(), w.qs + 16 * j);
    const V32 sums = hn::Add(dot16_i8(iq4_nl_lookup<false>(table, packed), a.qs + 32 * j),
                             dot16_i8(iq4_nl_lookup<true>(table, packed), a.qs + 32 * j + 16));
    acc = hn::Add(acc, hn::Mul(sums, hn::Set(d32, scalar::quant_detail::iq4_xs_scale(w, j))));
  }
  const std::int32_t total = hn::GetLane(hn::SumOfLanes(d32, acc));
  return half_to_float(w.d) * a.d * static_cast<float>(total);
}

/// out[r] = the sum over row r's super-blocks of block_dot(block, its activations).
template <class Block, class BlockDot>
RUVLLM_QUANT_ATTR HWY_INLINE void superblock_rows(const Block* HWY_RESTRICT w, std::size_t row_stride, std::size_t rows,
                                                  const block_q8_k* HWY_RESTRICT a, std::size_t n,
                                                  float* HWY_RESTRICT out, BlockDot block_dot) {
  for (std::size_t r = 0; r < rows; ++r) {
    const Block* row = scalar::quant_detail::row_at(w, row_stride, r);
    float sum = 0.0f;
    for (std::size_t b = 0; b < n / qk_k; ++b) sum += block_dot(row[b], a[b]);
    out[r] = sum;
  }
}
#else
// The kernels in the widest integer registers: K-quant rows and tiles, and on
// AVX2 and AVX3 (no VNNI) Q4_0 / Q8_0 ones too.
#define RUVLLM_QUANT_WIDE_NS kwide
#define RUVLLM_QUANT_DOT4 RUVLLM_QUANT_VNNI
#define RUVLLM_QUANT_WIDE_ENTRY HWY_INLINE
#include "ruvllm/kernels/quant_wide-inl.h"
#undef RUVLLM_QUANT_WIDE_NS
#undef RUVLLM_QUANT_DOT4
#undef RUVLLM_QUANT_WIDE_ENTRY
#if RUVLLM_QUANT_AVX_VNNI_COPY
// The same kernels with AVX-VNNI (see avx_vnni.hpp): VPDPBUSD for VPMADDUBSW
// and its VPMADDWD (and add), VPDPWSSD for the K-quant scales. Highway's
// AVX2 ops inline into these functions (their target is a superset), but
// these cannot inline into the AVX2 target's kernels, which call them
// through the non-inlined entry forms after checking the CPU. Zen 5 forced
// to the AVX2 target, one thread, against the plain copy: GEMM tiles
// (4096 x 4096 x 128 tokens) Q4_0 1.18x, Q8_0 1.20x, Q4_K 1.31x, Q6_K
// 1.27x; GEMV from L3 Q4_0 1.06x, Q4_K 1.20x; a 1B model's pp512 in the
// Q4_K_M mix 64-66 tok/s against 50, decode 48 against 40.
#undef RUVLLM_QUANT_ATTR
#undef RUVLLM_QUANT_LAMBDA
#define RUVLLM_QUANT_ATTR __attribute__((target(HWY_TARGET_STR ",avxvnni")))
#define RUVLLM_QUANT_LAMBDA RUVLLM_QUANT_ATTR
#define RUVLLM_QUANT_WIDE_NS kwide_avx_vnni
#define RUVLLM_QUANT_DOT4 1
#define RUVLLM_QUANT_WIDE_ENTRY HWY_NOINLINE
#include "ruvllm/kernels/quant_wide-inl.h"
#undef RUVLLM_QUANT_WIDE_NS
#undef RUVLLM_QUANT_DOT4
#undef RUVLLM_QUANT_WIDE_ENTRY
#undef RUVLLM_QUANT_ATTR
#undef RUVLLM_QUANT_LAMBDA
#define RUVLLM_QUANT_ATTR
#define RUVLLM_QUANT_LAMBDA HWY_ATTR
// Form (rows or gemm) of Format over ARGS in the copy this CPU runs best.
#define RUVLLM_QUANT_WIDE_CALL(FORM, FORMAT, ARGS)                                                       \
  (avx_vnni_in_use() ? quant_simd::kwide_avx_vnni::FORM##_entry<quant_simd::kwide_avx_vnni::FORMAT> ARGS \
                     : quant_simd::kwide::FORM##_entry<quant_simd::kwide::FORMAT>                        \
                           ARGS)
#else
#define RUVLLM_QUANT_WIDE_CALL(FORM, FORMAT, ARGS) quant_simd::kwide::FORM##_entry<quant_simd::kwide::FORMAT> ARGS
#endif
#endif  // RUVLLM_QUANT_WIDE

/// roundf of every lane: ties away from zero, exact. p's only use is Abs, so
/// no compiler contracts a producing multiply into a later add.
template <class D, class V>
RUVLLM_QUANT_ATTR HWY_INLINE V round_half_away(D d, V p) {
  const V a = hn::Abs(p);
  const V t = hn::Trunc(a);
  const V r = hn::Add(t, hn::IfThenElseZero(hn::Ge(hn::Sub(a, t), hn::Set(d, 0.5f)), hn::Set(d, 1.0f)));
  return hn::CopySignToAbs(r, p);
}

/// p with its NaN lanes as 0. A Q8_0 product x * id is NaN for a NaN value,
/// or an infinite one (whose block has id 0), and quantizes to 0 on every
/// backend (see scalar::quantize_q8_0).
template <class V>
RUVLLM_QUANT_ATTR HWY_INLINE V zero_nan(V p) {
  return hn::IfThenElseZero(hn::Eq(p, p), p);
}

/// |v| with NaN lanes as 0: the largest |x| of a block passes over NaNs, as
/// the scalar reference's std::max does (Max's NaN result is target-defined).
template <class V>
RUVLLM_QUANT_ATTR HWY_INLINE V magnitude(V v) {
  return zero_nan(hn::Abs(v));
}

/// Largest |x[i]| over count floats (a multiple of the lane count), NaNs passed over.
template <class D>
RUVLLM_QUANT_ATTR HWY_INLINE float max_abs(D d, const float* HWY_RESTRICT x, std::size_t count) {
  auto m = hn::Zero(d);
  for (std::size_t k = 0; k < count; k += hn::Lanes(d)) m = hn::Max(m, magnitude(hn::LoadU(d, x + k)));
  return hn::GetLane(hn::MaxOfLanes(d, m));
}

/// The first x[i] with |x[i]| == amax (> 0), as ggml's strict-> scan finds it.
template <class D>
RUVLLM_QUANT_ATTR HWY_INLINE float first_of_magnitude(D d, const float* HWY_RESTRICT x, std::size_t count, float amax) {
  const auto target = hn::Set(d, amax);
  for (std::size_t k = 0; k < count; k += hn::Lanes(d)) {
    const auto hit = hn::Eq(hn::Abs(hn::LoadU(d, x + k)), target);
    if (!hn::AllFalse(d, hit)) return x[k + static_cast<std::size_t>(hn::FindFirstTrue(d, hit))];
  }
  return 0.0f;  // unreachable for finite inputs
}

/// y[k] = float(q_k) * d - m for k < count (a multiple of the lane count),
/// with load(k) giving the int32 quants q_k.. of the next lanes. Callers pass
/// products q * d that are exact in float, so the fused multiply-subtract
/// rounds exactly like ggml's separate multiply and subtract.
template <class Load>
RUVLLM_QUANT_ATTR HWY_INLINE void scale_group(const Load& load, std::size_t count, float d, float m, float* y) {
  const DF df;
  const auto vd = hn::Set(df, d), vm = hn::Set(df, m);
  for (std::size_t k = 0; k < count; k += hn::Lanes(df)) {
    hn::StoreU(hn::MulSub(hn::ConvertTo(df, load(k)), vd, vm), df, y + k);
  }
}

/// v folded by `op` (an associative, commutative lane-wise operation) down
/// to its lowest 128 bits.
template <class D, class Op>
RUVLLM_QUANT_ATTR HWY_INLINE auto fold_to_128(D d, hn::Vec<D> v, Op op) {
  if constexpr (hn::MaxLanes(d) * sizeof(hn::TFromD<D>) > 16) {
    const hn::Half<D> dh;
    return fold_to_128(dh, op(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)), op);
  } else {
    return v;
  }
}

/// Lane j of the result: `op` over all lanes of v_j (four 128-bit vectors),
/// the four reductions interleaved so they share their shuffles.
template <class D, class V, class Op>
RUVLLM_QUANT_ATTR HWY_INLINE V across_four(D d, V v0, V v1, V v2, V v3, Op op) {
  const V u01 = op(hn::InterleaveLower(d, v0, v1), hn::InterleaveUpper(d, v0, v1));
  const V u23 = op(hn::InterleaveLower(d, v2, v3), hn::InterleaveUpper(d, v2, v3));
  return op(hn::ConcatLowerLower(d, u23, u01), hn::ConcatUpperUpper(d, u23, u01));
}

/// The four block scales of a quad rounded through f16, as a block's d field
/// stores them and the quad's d lanes read them back.
template <class D4>
RUVLLM_QUANT_ATTR HWY_INLINE hn::Vec<D4> through_f16(D4 d4, hn::Vec<D4> scales) {
#if RUVLLM_QUANT_F16C
  const hn::Rebind<hwy::float16_t, D4> dh;
  return hn::PromoteTo(d4, hn::DemoteTo(dh, scales));
#else
  HWY_ALIGN float lane[4];
  hn::Store(scales, d4, lane);
  for (float& s : lane) s = ruvllm::to_float(ruvllm::to_f16(s));
  return hn::Load(d4, lane);
#endif
}

/// Up to four Q8_0 blocks' scales side by side, lane j for block j of the
/// `count` blocks at x (missing blocks read as zeros): d = amax / 127, and
/// the inverse the values are multiplied by, 0 where it is not finite (a
/// subnormal scale: such blocks keep zero quants, as in
/// scalar::quantize_q8_0). One reduction shuffle sequence, division pair and
/// f16 conversion serves four blocks, and neighbouring calls' chains overlap.
struct q8_0_scales {
  hn::Vec<hn::Full128<float>> d, inverse;
};
RUVLLM_QUANT_ATTR HWY_INLINE q8_0_scales q8_0_block_scales(const float* HWY_RESTRICT x, std::size_t count) {
  const hn::CappedTag<float, 16> df;
  const hn::Full128<float> d4;
  const auto max = [](auto a, auto b) RUVLLM_QUANT_LAMBDA { return hn::Max(a, b); };
  hn::Vec<decltype(d4)> amax[4];
  for (std::size_t j = 0; j < 4; ++j) {
    auto m = hn::Zero(df);
    if (j < count)
      for (std::size_t k = 0; k < 32; k += hn::Lanes(df)) m = hn::Max(m, magnitude(hn::LoadU(df, x + 32 * j + k)));
    amax[j] = fold_to_128(df, m, max);
  }
  const auto d = hn::Div(across_four(d4, amax[0], amax[1], amax[2], amax[3], max), hn::Set(d4, 127.0f));
  const auto id = hn::IfThenElseZero(hn::Ne(d, hn::Zero(d4)), hn::Div(hn::Set(d4, 1.0f), d));
  return {d, hn::IfThenElseZero(hn::Le(hn::Abs(id), hn::Set(d4, std::numeric_limits<float>::max())), id)};
}

/// The 32 values of a Q8_0 block at x quantized with `inverse`: values 0-15
/// to `first`, 16-31 to `second`. Returns lanes summing to the stored bytes.
RUVLLM_QUANT_ATTR HWY_INLINE auto quantize_q8_0_values(const float* HWY_RESTRICT x, float inverse,
                                                       std::int8_t* HWY_RESTRICT first,
                                                       std::int8_t* HWY_RESTRICT second) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<std::int8_t, decltype(df)> d8;
  const auto vid = hn::Set(df, inverse);
  auto sum = hn::Zero(di);
  for (std::size_t k = 0; k < 32; k += hn::Lanes(df)) {
    // A whole number r in [-128, 127] reads exactly from the low mantissa
    // bits of 1.5 * 2^23 + r: two operations where a checked float-to-int
    // conversion takes five.
    const auto r =
        hn::Min(hn::Max(round_half_away(df, zero_nan(hn::Mul(hn::LoadU(df, x + k), vid))), hn::Set(df, -128.0f)),
                hn::Set(df, 127.0f));
    const auto v = hn::Sub(hn::BitCast(di, hn::Add(r, hn::Set(df, 0x1.8p23f))), hn::Set(di, 0x4B40'0000));
    hn::StoreU(hn::DemoteTo(d8, v), d8, k < 16 ? first + k : second + k - 16);
    sum = hn::Add(sum, v);
  }
  return sum;
}
}  // namespace quant_simd
#endif  // RUVLLM_QUANT_SIMD

// ------------------------------------------------------------------ quantize

RUVLLM_QUANT_ATTR inline void quant_quantize_q8_0(const float* HWY_RESTRICT x, block_q8_0* HWY_RESTRICT y,
                                                  std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::quantize_q8_0(x, y, n);
#else
  const hn::Full128<float> d4;
  const std::size_t nb = n / 32;
  for (std::size_t b0 = 0; b0 < nb; b0 += 4, x += 128) {
    const std::size_t count = std::min<std::size_t>(4, nb - b0);
    const quant_simd::q8_0_scales s = quant_simd::q8_0_block_scales(x, count);
    HWY_ALIGN float d[4], inverse[4];
    hn::Store(s.d, d4, d);
    hn::Store(s.inverse, d4, inverse);
    for (std::size_t j = 0; j < count; ++j) {
      block_q8_0& block = y[b0 + j];
      block.d = ruvllm::to_f16(d[j]);
      (void)quant_simd::quantize_q8_0_values(x + 32 * j, inverse[j], block.qs, block.qs + 16);
    }
  }
#endif
}

RUVLLM_QUANT_ATTR inline void quant_quantize_q4_0(const float* HWY_RESTRICT x, block_q4_0* HWY_RESTRICT y,
                                                  std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::quantize_q4_0(x, y, n);
#else
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<std::uint8_t, decltype(df)> du8;
  for (std::size_t b = 0; b < n / 32; ++b, x += 32) {
    const float amax = quant_simd::max_abs(df, x, 32);
    const float max = amax > 0.0f ? quant_simd::first_of_magnitude(df, x, 32, amax) : 0.0f;
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = ruvllm::to_f16(d);
    if (!(std::fabs(id) <= std::numeric_limits<float>::max())) {
      std::memset(y[b].qs, 0x88, sizeof y[b].qs);
      continue;
    }
    const auto vid = hn::Set(df, id);
    // min(15, trunc(min(p, 7.5) + 8.5)): see scalar::quant_detail::q4_0_nibble.
    const auto nibbles = [&](const float* p) RUVLLM_QUANT_LAMBDA {
      const auto t = hn::Add(hn::Min(hn::Mul(hn::LoadU(df, p), vid), hn::Set(df, 7.5f)), hn::Set(df, 8.5f));
      return hn::Min(hn::ConvertTo(di, t), hn::Set(di, 15));
    };
    for (std::size_t j = 0; j < 16; j += hn::Lanes(df)) {
      const auto packed = hn::Or(nibbles(x + j), hn::ShiftLeft<4>(nibbles(x + 16 + j)));
      hn::StoreU(hn::DemoteTo(du8, packed), du8, y[b].qs + j);
    }
  }
#endif
}

RUVLLM_QUANT_ATTR inline void quant_quantize_q8_k(const float* HWY_RESTRICT x, block_q8_k* HWY_RESTRICT y,
                                                  std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::quantize_q8_k(x, y, n);
#else
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<std::int8_t, decltype(df)> d8;
  for (std::size_t b = 0; b < n / qk_k; ++b, x += qk_k) {
    block_q8_k& out = y[b];
    const float amax = quant_simd::max_abs(df, x, qk_k);
    if (amax == 0.0f) {
      out.d = 0.0f;
      std::memset(out.qs, 0, sizeof out.qs);
      std::memset(out.bsums, 0, sizeof out.bsums);
      continue;
    }
    const float max = quant_simd::first_of_magnitude(df, x, qk_k, amax);
    const float iscale = -127.0f / max;
    out.d = 1.0f / iscale;
    if (!(std::fabs(iscale) <= std::numeric_limits<float>::max())) {
      std::memset(out.qs, 0, sizeof out.qs);
      std::memset(out.bsums, 0, sizeof out.bsums);
      continue;
    }
    const auto vis = hn::Set(df, iscale);
    const auto limit = hn::Set(df, scalar::quant_detail::nearest_int_limit);
    for (std::size_t g = 0; g < qk_k / 16; ++g) {
      auto sum = hn::Zero(di);
      for (std::size_t k = 16 * g; k < 16 * g + 16; k += hn::Lanes(df)) {
        // nearest_int: ties to even, saturated like the reference.
        const auto p = hn::Min(hn::Max(hn::Mul(hn::LoadU(df, x + k), vis), hn::Neg(limit)), limit);
        const auto q = hn::Min(hn::ConvertTo(di, hn::Round(p)), hn::Set(di, 127));
        sum = hn::Add(sum, q);
        hn::StoreU(hn::DemoteTo(d8, q), d8, out.qs + k);
      }
      out.bsums[g] = static_cast<std::int16_t>(hn::GetLane(hn::SumOfLanes(di, sum)));
    }
  }
#endif
}

// ---------------------------------------------------------------- dequantize

RUVLLM_QUANT_ATTR inline void quant_dequantize_q8_0(const block_q8_0* HWY_RESTRICT x, float* HWY_RESTRICT y,
                                                    std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::dequantize_q8_0(x, y, n);
#else
  const quant_simd::D32 d32;
  const hn::Rebind<std::int8_t, decltype(d32)> d8;
  for (std::size_t b = 0; b < n / 32; ++b, y += 32) {
    const std::int8_t* qs = x[b].qs;
    quant_simd::scale_group([&](std::size_t k)
                                RUVLLM_QUANT_LAMBDA { return hn::PromoteTo(d32, hn::LoadU(d8, qs + k)); },
                            32, quant_simd::half_to_float(x[b].d), 0.0f, y);
  }
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dequantize_q4_0(const block_q4_0* HWY_RESTRICT x, float* HWY_RESTRICT y,
                                                    std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::dequantize_q4_0(x, y, n);
#else
  const quant_simd::D32 d32;
  const quant_simd::DU8 du8;
  const quant_simd::DI8 di8;
  const hn::Rebind<std::int8_t, decltype(d32)> d8;
  for (std::size_t b = 0; b < n / 32; ++b, y += 32) {
    HWY_ALIGN std::int8_t q[32];
    const auto packed = hn::LoadU(du8, x[b].qs);
    const auto eight = hn::Set(du8, 8);
    hn::Store(hn::BitCast(di8, hn::Sub(hn::And(packed, hn::Set(du8, 0x0F)), eight)), di8, q);
    hn::Store(hn::BitCast(di8, hn::Sub(hn::ShiftRight<4>(packed), eight)), di8, q + 16);
    quant_simd::scale_group([&](std::size_t k) RUVLLM_QUANT_LAMBDA { return hn::PromoteTo(d32, hn::LoadU(d8, q + k)); },
                            32, quant_simd::half_to_float(x[b].d), 0.0f, y);
  }
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dequantize_q4_k(const block_q4_k* HWY_RESTRICT x, float* HWY_RESTRICT y,
                                                    std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::dequantize_q4_k(x, y, n);
#else
  const quant_simd::D32 d32;
  const quant_simd::DU8 du8;
  const hn::Rebind<std::uint8_t, decltype(d32)> d8;
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    const float d = quant_simd::half_to_float(x[b].d), dmin = quant_simd::half_to_float(x[b].dmin);
    std::uint8_t sc[8], m[8];
    scalar::quant_detail::k_scales_mins(x[b], sc, m);
    for (std::size_t g = 0; g < 4; ++g, y += 64) {
      HWY_ALIGN std::uint8_t q[64];
      for (std::size_t h = 0; h < 32; h += 16) {
        const auto packed = hn::LoadU(du8, x[b].qs + 32 * g + h);
        hn::Store(hn::And(packed, hn::Set(du8, 0x0F)), du8, q + h);
        hn::Store(hn::ShiftRight<4>(packed), du8, q + 32 + h);
      }
      // d1 * q - m1 with d1 * q exact, so the fused form rounds like ggml's.
      const auto load = [&](std::size_t k) RUVLLM_QUANT_LAMBDA { return hn::PromoteTo(d32, hn::LoadU(d8, q + k)); };
      quant_simd::scale_group(load, 32, d * static_cast<float>(sc[2 * g]), dmin * static_cast<float>(m[2 * g]), y);
      const auto load_hi = [&](std::size_t k)
                               RUVLLM_QUANT_LAMBDA { return hn::PromoteTo(d32, hn::LoadU(d8, q + 32 + k)); };
      quant_simd::scale_group(load_hi, 32, d * static_cast<float>(sc[2 * g + 1]),
                              dmin * static_cast<float>(m[2 * g + 1]), y + 32);
    }
  }
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dequantize_q6_k(const block_q6_k* HWY_RESTRICT x, float* HWY_RESTRICT y,
                                                    std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::dequantize_q6_k(x, y, n);
#else
  const quant_simd::D32 d32;
  const quant_simd::DU8 du8;
  const hn::Rebind<std::uint8_t, decltype(d32)> d8;
  for (std::size_t b = 0; b < n / qk_k; ++b, y += qk_k) {
    HWY_ALIGN std::uint8_t q[qk_k];
    for (std::size_t half = 0; half < 2; ++half) {
      for (std::size_t l0 = 0; l0 < 32; l0 += 16) {
        quant_simd::VU8 v[4];
        quant_simd::q6_k_unpack16(x[b].ql + 64 * half, x[b].qh + 32 * half, l0, v);
        for (std::size_t g = 0; g < 4; ++g) hn::Store(v[g], du8, q + 128 * half + 32 * g + l0);
      }
    }
    const float d = ruvllm::to_float(x[b].d);
    for (std::size_t g = 0; g < qk_k / 16; ++g) {
      // (d * sc) * (q - 32): both products exact, as in ggml.
      const auto load = [&](std::size_t k) RUVLLM_QUANT_LAMBDA {
        return hn::Sub(hn::PromoteTo(d32, hn::LoadU(d8, q + 16 * g + k)), hn::Set(d32, 32));
      };
      quant_simd::scale_group(load, 16, d * static_cast<float>(x[b].scales[g]), 0.0f, y + 16 * g);
    }
  }
#endif
}

// ------------------------------------------------------- f16 / bf16 rows

RUVLLM_QUANT_ATTR inline void quant_convert_f32_to_f16(const float* HWY_RESTRICT x, ruvllm::f16* HWY_RESTRICT y,
                                                       std::size_t n) {
#if !RUVLLM_QUANT_SIMD || !RUVLLM_QUANT_F16C
  scalar::convert_f32_to_f16(x, y, n);
#else
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, x + i)), dh, reinterpret_cast<hwy::float16_t*>(y + i));
  }
  scalar::convert_f32_to_f16(x + i, y + i, n - i);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_convert_f16_to_f32(const ruvllm::f16* HWY_RESTRICT x, float* HWY_RESTRICT y,
                                                       std::size_t n) {
#if !RUVLLM_QUANT_SIMD || !RUVLLM_QUANT_F16C
  scalar::convert_f16_to_f32(x, y, n);
#else
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(x + i))), df, y + i);
  }
  scalar::convert_f16_to_f32(x + i, y + i, n - i);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_convert_f32_to_bf16(const float* HWY_RESTRICT x, ruvllm::bf16* HWY_RESTRICT y,
                                                        std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::convert_f32_to_bf16(x, y, n);
#else
  const hn::CappedTag<float, 16> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    // ruvllm::to_bf16 lane-wise: round to nearest even; NaN keeps its top
    // bits and turns quiet; denormals become ±0.
    const auto u = hn::BitCast(du, hn::LoadU(df, x + i));
    const auto a = hn::BitCast(di, hn::And(u, hn::Set(du, 0x7FFF'FFFFu)));
    const auto top = hn::ShiftRight<16>(u);
    const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(u, hn::Set(du, 0x7FFFu)), hn::And(top, hn::Set(du, 1u))));
    const auto is_nan = hn::RebindMask(du, hn::Gt(a, hn::Set(di, 0x7F80'0000)));
    const auto is_tiny = hn::RebindMask(du, hn::Lt(a, hn::Set(di, 0x0080'0000)));
    const auto bits = hn::IfThenElse(is_nan, hn::Or(top, hn::Set(du, 0x0040u)),
                                     hn::IfThenElse(is_tiny, hn::And(top, hn::Set(du, 0x8000u)), rounded));
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, bits)), du16, reinterpret_cast<std::uint16_t*>(y + i));
  }
  scalar::convert_f32_to_bf16(x + i, y + i, n - i);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_convert_bf16_to_f32(const ruvllm::bf16* HWY_RESTRICT x, float* HWY_RESTRICT y,
                                                        std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::convert_bf16_to_f32(x, y, n);
#else
  const hn::CappedTag<float, 16> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto wide = hn::PromoteTo(du, hn::LoadU(du16, reinterpret_cast<const std::uint16_t*>(x + i)));
    hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(wide)), df, y + i);
  }
  scalar::convert_bf16_to_f32(x + i, y + i, n - i);
#endif
}

// -------------------------------------------------------------- dot products

RUVLLM_QUANT_ATTR inline void quant_dot_q8_0_q8_0_rows(const block_q8_0* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_0* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q8_0_q8_0_rows(w, row_stride, rows, a, n, out);
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_block_source{a}, n, out,
                             [](const block_q8_0& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::dot_q8_0_block(w_b.qs, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q4_0_q8_0_rows(const block_q4_0* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_0* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q4_0_q8_0_rows(w, row_stride, rows, a, n, out);
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_block_source{a}, n, out,
                             [](const block_q4_0& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::dot_q4_0_block(w_b.qs, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q5_0_q8_0_rows(const block_q5_0* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_0* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q5_0_q8_0_rows(w, row_stride, rows, a, n, out);
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_block_source{a}, n, out,
                             [](const block_q5_0& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::dot_q5_0_block(w_b, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_iq4_nl_q8_0_rows(const block_iq4_nl* HWY_RESTRICT w, std::size_t row_stride,
                                                         std::size_t rows, const block_q8_0* HWY_RESTRICT a,
                                                         std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_iq4_nl_q8_0_rows(w, row_stride, rows, a, n, out);
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_block_source{a}, n, out,
                             [](const block_iq4_nl& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::dot_iq4_nl_block(w_b, act); });
#endif
}
RUVLLM_QUANT_ATTR inline void quant_dot_q4_1_q8_0_rows(const block_q4_1* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_0* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q4_1_q8_0_rows(w, row_stride, rows, a, n, out);
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_block_source{a}, n, out,
                             [](const block_q4_1& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::nibble_dot(w_b.qs, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q5_1_q8_0_rows(const block_q5_1* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_0* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q5_1_q8_0_rows(w, row_stride, rows, a, n, out);
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_block_source{a}, n, out,
                             [](const block_q5_1& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::five_bit_dot(w_b, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q4_k_q8_k_rows(const block_q4_k* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q4_k_q8_k_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q4_k_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::superblock_rows(w, row_stride, rows, a, n, out,
                              [](const block_q4_k& w_b, const block_q8_k& a_b)
                                  RUVLLM_QUANT_LAMBDA { return quant_simd::scale_min_block(w_b, a_b); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q5_k_q8_k_rows(const block_q5_k* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q5_k_q8_k_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q5_k_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::superblock_rows(w, row_stride, rows, a, n, out,
                              [](const block_q5_k& w_b, const block_q8_k& a_b)
                                  RUVLLM_QUANT_LAMBDA { return quant_simd::scale_min_block(w_b, a_b); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q2_k_q8_k_rows(const block_q2_k* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q2_k_q8_k_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q2_k_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::superblock_rows(w, row_stride, rows, a, n, out,
                              [](const block_q2_k& w_b, const block_q8_k& a_b)
                                  RUVLLM_QUANT_LAMBDA { return quant_simd::q2_k_block(w_b, a_b); });
#endif
}
RUVLLM_QUANT_ATTR inline void quant_dot_q3_k_q8_k_rows(const block_q3_k* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q3_k_q8_k_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q3_k_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::superblock_rows(w, row_stride, rows, a, n, out,
                              [](const block_q3_k& w_b, const block_q8_k& a_b)
                                  RUVLLM_QUANT_LAMBDA { return quant_simd::q3_k_block(w_b, a_b); });
#endif
}
RUVLLM_QUANT_ATTR inline void quant_dot_iq4_xs_q8_k_rows(const block_iq4_xs* HWY_RESTRICT w, std::size_t row_stride,
                                                         std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                         std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_iq4_xs_q8_k_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, iq4_xs_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::superblock_rows(w, row_stride, rows, a, n, out,
                              [](const block_iq4_xs& w_b, const block_q8_k& a_b)
                                  RUVLLM_QUANT_LAMBDA { return quant_simd::iq4_xs_block(w_b, a_b); });
#endif
}
RUVLLM_QUANT_ATTR inline void quant_dot_q6_k_q8_k_rows(const block_q6_k* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                       std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q6_k_q8_k_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q6_k_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::superblock_rows(w, row_stride, rows, a, n, out,
                              [](const block_q6_k& w_b, const block_q8_k& a_b)
                                  RUVLLM_QUANT_LAMBDA { return quant_simd::q6_k_block(w_b, a_b); });
#endif
}

// ----------------------------------------------- Q8_0 activations as quads

/// Q8_0 quads straight from floats: the bytes quantize_q8_0 and
/// pack_q8_0_quads give, without the blocks in between. The decode step
/// quantizes every GEMV input on the calling thread while the workers wait,
/// and block by block, then packed, 2048 values took ~1 us on Zen 5: each
/// block's scale is a chain of a horizontal maximum, two divisions and an f16
/// round trip that its quants wait for. Here a first pass finds the scales of
/// a run of quads (q8_0_block_scales, a quad's four blocks side by side), so
/// the chains of neighbouring quads overlap, and a second pass quantizes the
/// run from L1.
RUVLLM_QUANT_ATTR inline void quant_quantize_q8_0_quads(const float* HWY_RESTRICT x, q8_0_quad* HWY_RESTRICT out,
                                                        std::size_t n) {
#if !RUVLLM_QUANT_SIMD
  scalar::quantize_q8_0_quads(x, out, n);
#else
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Full128<float> d4;  // one lane per block of a quad
  const hn::RebindToSigned<decltype(d4)> di4;
  constexpr std::size_t run = 8;  // quads per pass: 4 KiB of x
  const auto add = [](auto a, auto b) RUVLLM_QUANT_LAMBDA { return hn::Add(a, b); };
  const std::size_t nb = n / 32, nq = q8_0_quads(n);
  for (std::size_t q0 = 0; q0 < nq; q0 += run, x += 128 * run, out += run) {
    const std::size_t quads = std::min(run, nq - q0), blocks = std::min(4 * run, nb - 4 * q0);
    HWY_ALIGN float inverse[4 * run];
    for (std::size_t q = 0; q < quads; ++q) {
      const quant_simd::q8_0_scales s =
          quant_simd::q8_0_block_scales(x + 128 * q, std::min<std::size_t>(4, blocks - 4 * q));
      hn::Store(s.inverse, d4, inverse + 4 * q);
      auto scale = quant_simd::through_f16(d4, s.d);
      for (std::size_t j = 0; j < 4; ++j) {
        hn::Store(hn::Broadcast<0>(scale), d4, out[q].d + 4 * j);
        scale = hn::Shuffle0321(scale);  // the next block's scale into lane 0
      }
    }
    for (std::size_t q = 0; q < quads; ++q) {
      q8_0_quad& o = out[q];
      hn::Vec<decltype(di4)> sums[4];
      for (std::size_t j = 0; j < 4; ++j) {
        const std::size_t b = 4 * q + j;
        if (b < blocks) {
          sums[j] = quant_simd::fold_to_128(
              di, quant_simd::quantize_q8_0_values(x + 32 * b, inverse[b], o.lo + 16 * j, o.hi + 16 * j), add);
        } else {  // past n: zero values, sums and (above) scales
          std::memset(o.lo + 16 * j, 0, 16);
          std::memset(o.hi + 16 * j, 0, 16);
          sums[j] = hn::Zero(di4);
        }
      }
      const auto total = quant_simd::across_four(di4, sums[0], sums[1], sums[2], sums[3], add);
      HWY_ALIGN std::int32_t neg8[4], neg128[4];
      hn::Store(hn::Mul(total, hn::Set(di4, -8)), di4, neg8);
      hn::Store(hn::Mul(total, hn::Set(di4, -128)), di4, neg128);
      for (std::size_t j = 0; j < 4; ++j) {
        const std::int32_t lane8[4] = {neg8[j], 0, 0, 0}, lane128[4] = {neg128[j], 0, 0, 0};
        std::memcpy(o.neg8_sum + 4 * j, lane8, sizeof lane8);
        std::memcpy(o.neg128_sum + 4 * j, lane128, sizeof lane128);
      }
    }
  }
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q8_0_quad_rows(const block_q8_0* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const q8_0_quad* HWY_RESTRICT a, std::size_t n,
                                                       float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q8_0_quad_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_VNNI
  quant_simd::vnni::all_quad_rows<quant_simd::vnni::quad_weights::q8_0>(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q8_0_pair_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_quad_source{a}, n, out,
                             [](const block_q8_0& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::dot_q8_0_block(w_b.qs, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q4_0_quad_rows(const block_q4_0* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const q8_0_quad* HWY_RESTRICT a, std::size_t n,
                                                       float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q4_0_quad_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_VNNI
  quant_simd::vnni::all_quad_rows<quant_simd::vnni::quad_weights::q4_0>(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q4_0_pair_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_quad_source{a}, n, out,
                             [](const block_q4_0& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::dot_q4_0_block(w_b.qs, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q5_0_quad_rows(const block_q5_0* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const q8_0_quad* HWY_RESTRICT a, std::size_t n,
                                                       float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q5_0_quad_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_VNNI
  quant_simd::vnni::all_quad_rows<quant_simd::vnni::quad_weights::q5_0>(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q5_0_pair_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_quad_source{a}, n, out,
                             [](const block_q5_0& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::dot_q5_0_block(w_b, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_iq4_nl_quad_rows(const block_iq4_nl* HWY_RESTRICT w, std::size_t row_stride,
                                                         std::size_t rows, const q8_0_quad* HWY_RESTRICT a,
                                                         std::size_t n, float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_iq4_nl_quad_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_VNNI
  quant_simd::vnni::all_quad_rows<quant_simd::vnni::quad_weights::iq4_nl>(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, iq4_nl_pair_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_quad_source{a}, n, out,
                             [](const block_iq4_nl& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::dot_iq4_nl_block(w_b, act); });
#endif
}
RUVLLM_QUANT_ATTR inline void quant_dot_q4_1_quad_rows(const block_q4_1* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const q8_0_quad* HWY_RESTRICT a, std::size_t n,
                                                       float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q4_1_quad_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_VNNI
  quant_simd::vnni::all_quad_rows<quant_simd::vnni::quad_weights::q4_1>(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q4_1_pair_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_quad_source{a}, n, out,
                             [](const block_q4_1& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::nibble_dot(w_b.qs, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_dot_q5_1_quad_rows(const block_q5_1* HWY_RESTRICT w, std::size_t row_stride,
                                                       std::size_t rows, const q8_0_quad* HWY_RESTRICT a, std::size_t n,
                                                       float* HWY_RESTRICT out) {
#if !RUVLLM_QUANT_SIMD
  scalar::dot_q5_1_quad_rows(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_VNNI
  quant_simd::vnni::all_quad_rows<quant_simd::vnni::quad_weights::q5_1>(w, row_stride, rows, a, n, out);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(rows, q5_1_pair_format, (w, row_stride, rows, a, n, out));
#else
  quant_simd::all_rows_of_32(w, row_stride, rows, quant_simd::q8_0_quad_source{a}, n, out,
                             [](const block_q5_1& w_b, const quant_simd::act32& act)
                                 RUVLLM_QUANT_LAMBDA { return quant_simd::five_bit_dot(w_b, act); });
#endif
}

RUVLLM_QUANT_ATTR inline void quant_gemm_q8_0_quads(const block_q8_0* HWY_RESTRICT w, std::size_t row_stride,
                                                    std::size_t rows, const q8_0_quad* HWY_RESTRICT a,
                                                    std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                    std::size_t y_stride) {
#if RUVLLM_QUANT_VNNI
  quant_simd::vnni::quad_gemm<quant_simd::vnni::quad_weights::q8_0>(w, row_stride, rows, a, tokens, n, y, y_stride);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q8_0_pair_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q8_0_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                     y_stride);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_gemm_q4_0_quads(const block_q4_0* HWY_RESTRICT w, std::size_t row_stride,
                                                    std::size_t rows, const q8_0_quad* HWY_RESTRICT a,
                                                    std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                    std::size_t y_stride) {
#if RUVLLM_QUANT_VNNI
  quant_simd::vnni::quad_gemm<quant_simd::vnni::quad_weights::q4_0>(w, row_stride, rows, a, tokens, n, y, y_stride);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q4_0_pair_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q4_0_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                     y_stride);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_gemm_q5_0_quads(const block_q5_0* HWY_RESTRICT w, std::size_t row_stride,
                                                    std::size_t rows, const q8_0_quad* HWY_RESTRICT a,
                                                    std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                    std::size_t y_stride) {
#if RUVLLM_QUANT_VNNI
  quant_simd::vnni::quad_gemm<quant_simd::vnni::quad_weights::q5_0>(w, row_stride, rows, a, tokens, n, y, y_stride);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q5_0_pair_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q5_0_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                     y_stride);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_gemm_iq4_nl_quads(const block_iq4_nl* HWY_RESTRICT w, std::size_t row_stride,
                                                      std::size_t rows, const q8_0_quad* HWY_RESTRICT a,
                                                      std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                      std::size_t y_stride) {
#if RUVLLM_QUANT_VNNI
  quant_simd::vnni::quad_gemm<quant_simd::vnni::quad_weights::iq4_nl>(w, row_stride, rows, a, tokens, n, y, y_stride);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, iq4_nl_pair_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_iq4_nl_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                     y_stride);
#endif
}
RUVLLM_QUANT_ATTR inline void quant_gemm_q4_1_quads(const block_q4_1* HWY_RESTRICT w, std::size_t row_stride,
                                                    std::size_t rows, const q8_0_quad* HWY_RESTRICT a,
                                                    std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                    std::size_t y_stride) {
#if RUVLLM_QUANT_VNNI
  quant_simd::vnni::quad_gemm<quant_simd::vnni::quad_weights::q4_1>(w, row_stride, rows, a, tokens, n, y, y_stride);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q4_1_pair_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q4_1_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                     y_stride);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_gemm_q5_1_quads(const block_q5_1* HWY_RESTRICT w, std::size_t row_stride,
                                                    std::size_t rows, const q8_0_quad* HWY_RESTRICT a,
                                                    std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                    std::size_t y_stride) {
#if RUVLLM_QUANT_VNNI
  quant_simd::vnni::quad_gemm<quant_simd::vnni::quad_weights::q5_1>(w, row_stride, rows, a, tokens, n, y, y_stride);
#elif RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q5_1_pair_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q5_1_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                     y_stride);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_gemm_q4_k_q8_k(const block_q4_k* HWY_RESTRICT w, std::size_t row_stride,
                                                   std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                   std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                   std::size_t y_stride) {
#if RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q4_k_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q4_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y,
                                     y_stride);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_gemm_q5_k_q8_k(const block_q5_k* HWY_RESTRICT w, std::size_t row_stride,
                                                   std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                   std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                   std::size_t y_stride) {
#if RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q5_k_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q5_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y,
                                     y_stride);
#endif
}

RUVLLM_QUANT_ATTR inline void quant_gemm_q2_k_q8_k(const block_q2_k* HWY_RESTRICT w, std::size_t row_stride,
                                                   std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                   std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                   std::size_t y_stride) {
#if RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q2_k_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q2_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y,
                                     y_stride);
#endif
}
RUVLLM_QUANT_ATTR inline void quant_gemm_q3_k_q8_k(const block_q3_k* HWY_RESTRICT w, std::size_t row_stride,
                                                   std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                   std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                   std::size_t y_stride) {
#if RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q3_k_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q3_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y,
                                     y_stride);
#endif
}
RUVLLM_QUANT_ATTR inline void quant_gemm_iq4_xs_q8_k(const block_iq4_xs* HWY_RESTRICT w, std::size_t row_stride,
                                                     std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                     std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                     std::size_t y_stride) {
#if RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, iq4_xs_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_iq4_xs_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y,
                                     y_stride);
#endif
}
RUVLLM_QUANT_ATTR inline void quant_gemm_q6_k_q8_k(const block_q6_k* HWY_RESTRICT w, std::size_t row_stride,
                                                   std::size_t rows, const block_q8_k* HWY_RESTRICT a,
                                                   std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                   std::size_t y_stride) {
#if RUVLLM_QUANT_WIDE
  RUVLLM_QUANT_WIDE_CALL(gemm, q6_k_format, (w, row_stride, rows, a, tokens, n, y, y_stride));
#else
  scalar::quant_detail::gemm_by_rows(quant_dot_q6_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y,
                                     y_stride);
#endif
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#undef RUVLLM_QUANT_SIMD
#undef RUVLLM_QUANT_VNNI
#undef RUVLLM_QUANT_ATTR
#undef RUVLLM_QUANT_LAMBDA
#undef RUVLLM_QUANT_F16C
#undef RUVLLM_QUANT_WIDE
#undef RUVLLM_QUANT_AVX512
#undef RUVLLM_QUANT_AVX_VNNI_COPY
#undef RUVLLM_QUANT_WIDE_CALL

#endif  // RUVLLM_KERNELS_QUANT_INL_H_ toggle
