// Highway distance kernels, compiled once per SIMD target. No include
// guard: the toggle below lets hwy/foreach_target.h re-include this file for
// each target, through the umbrella ruvllm/kernels/kernels-inl.h. The
// contract (results, element types, int8 limits) is at the top of
// ruvllm/kernels/scalar/distance.hpp.
//
// Structure: float kernels are templates over the element type, whose only
// difference is the widening load (f16 and bf16 become float in-register).
// The partial vector at the end of a float row is read through a zero-padded
// copy, so no load touches memory past an input and zeros add nothing to any
// sum; integer kernels finish with a scalar loop instead (integers are exact
// in any order). The one-to-many exports run the same inline row body as the
// one-to-one exports, so out[r] has the bits of the one-to-one call.
//
// Highway 1.0.3 facts this relies on (read from its headers):
//  * PromoteTo(float, float16) is VCVTPH2PS on AVX2/AVX3/AVX3_DL; on SSSE3,
//    SSE4 and EMU128 it is emulated and maps f16 inf/NaN to finite values
//    (exponent 31 is rebiased like any other). Every target but those three
//    x86 ones therefore widens with f16_bits_to_float below, including ARM,
//    whose native conversion is untested here. Both paths equal
//    ruvllm::to_float on all 65536 patterns (tested through dot_many on
//    every target; NaN only as NaN). bf16 widening is a 16-bit shift.
//  * int8 products use PromoteTo(int16) + ReorderWidenMulAccumulate, which is
//    PMADDWD on x86 (pairs of int16 products summed into int32 lanes: at most
//    2 * 128 * 128, never saturating). There is no int8 dot op: on AVX3_DL
//    the int8 dot (one-to-one, many and gather) uses VPDPBUSD (VNNI, which
//    that target requires) through intrinsics instead, 64 products per
//    instruction (see vnni_biased_dot); l2sq, l1 and cosine of int8 keep the
//    portable path.
//  * int8 l1 uses |x - y| on biased bytes (two saturating subtractions) and
//    SumsOf8 (PSADBW on x86); hamming uses the per-byte PopulationCount
//    (nibble table; VPOPCNTB on AVX3_DL) and SumsOf8.
//  * The SCALAR target (the g++ 12 fallback) lacks some ops and has one lane:
//    it forwards to the scalar reference.

#if defined(RUVLLM_KERNELS_DISTANCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_DISTANCE_INL_H_
#undef RUVLLM_KERNELS_DISTANCE_INL_H_
#else
#define RUVLLM_KERNELS_DISTANCE_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/scalar/distance.hpp"

// Per-target switch, redefined on every pass and undefined at the end: the
// int8 dot's VNNI path, and the attribute every function that inlines it
// needs (Highway 1.0.3's AVX3_DL attribute string omits avx512vnni).
#if HWY_TARGET == HWY_AVX3_DL && defined(__GNUC__)
#define RUVLLM_DISTANCE_VNNI 1
#define RUVLLM_DISTANCE_ATTR __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#else
#define RUVLLM_DISTANCE_VNNI 0
#define RUVLLM_DISTANCE_ATTR
#endif

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
namespace distance_impl {

// ------------------------------------------------------------ widening loads

/// Floats of the f16 bit patterns in the u32 lanes of `h` (each < 2^16),
/// built like ruvllm::to_float: subnormals through an exact int-to-float
/// conversion (so DAZ cannot flush them), inf kept, NaN made quiet.
template <class DF, class VU>
HWY_INLINE hn::Vec<DF> f16_bits_to_float(DF df, VU h) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const auto magnitude = hn::And(h, hn::Set(du, 0x7FFFu));
  const auto magnitude_i = hn::BitCast(di, magnitude);  // < 2^15: signed compares suffice
  // Rebias the exponent from 15 to 127; for exponent 31 (inf/NaN) rebias
  // twice more to reach 255, and set the quiet bit of NaNs.
  const auto rebias = hn::Set(du, 112u << 23);
  const auto normal = hn::Add(hn::ShiftLeft<13>(magnitude), rebias);
  const auto nan_quiet =
      hn::IfThenElseZero(hn::RebindMask(du, hn::Gt(magnitude_i, hn::Set(di, 0x7C00))), hn::Set(du, 0x0040'0000u));
  const auto special = hn::Or(hn::Add(normal, rebias), nan_quiet);
  const auto subnormal =
      hn::BitCast(du, hn::Mul(hn::ConvertTo(df, magnitude_i), hn::Set(df, 1.0f / 16777216.0f)));  // m * 2^-24
  auto bits = hn::IfThenElse(hn::RebindMask(du, hn::Gt(magnitude_i, hn::Set(di, 0x7BFF))), special, normal);
  bits = hn::IfThenElse(hn::RebindMask(du, hn::Lt(magnitude_i, hn::Set(di, 0x0400))), subnormal, bits);
  return hn::BitCast(df, hn::Or(bits, sign));
}

/// Lanes(df) consecutive elements from p (any alignment), as floats.
template <class DF>
HWY_INLINE hn::Vec<DF> load_float(DF df, const float* HWY_RESTRICT p) {
  return hn::LoadU(df, p);
}

template <class DF>
HWY_INLINE hn::Vec<DF> load_float(DF df, const ruvllm::f16* HWY_RESTRICT p) {
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && \
    !defined(HWY_DISABLE_F16C)
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
#else
  const hn::Rebind<std::uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  return f16_bits_to_float(df, hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p))));
#endif
}

template <class DF>
HWY_INLINE hn::Vec<DF> load_float(DF df, const ruvllm::bf16* HWY_RESTRICT p) {
  const hn::Rebind<std::uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  return hn::BitCast(df,
                     hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p)))));
}

/// The last n - i (< one vector of) elements of a and b, zero-padded into
/// aligned stack buffers large enough for any target's vector.
template <class T>
struct float_tail {
  HWY_ALIGN T a[HWY_MAX_BYTES / sizeof(float)];
  HWY_ALIGN T b[HWY_MAX_BYTES / sizeof(float)];
  float_tail(const T* pa, const T* pb, std::size_t count) : a{}, b{} {
    std::memcpy(a, pa, count * sizeof(T));
    std::memcpy(b, pb, count * sizeof(T));
  }
};

template <class D>
HWY_INLINE float sum_lanes(D d, hn::Vec<D> v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// ------------------------------------------------------------ float kernels
// Four accumulators per sum hide the FMA latency (a D = 768 row is 24 FMAs
// deep per accumulator on AVX2).

template <class T>
HWY_INLINE float dot(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d), acc2 = hn::Zero(d), acc3 = hn::Zero(d);
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    acc0 = hn::MulAdd(load_float(d, a + i), load_float(d, b + i), acc0);
    acc1 = hn::MulAdd(load_float(d, a + i + lanes), load_float(d, b + i + lanes), acc1);
    acc2 = hn::MulAdd(load_float(d, a + i + 2 * lanes), load_float(d, b + i + 2 * lanes), acc2);
    acc3 = hn::MulAdd(load_float(d, a + i + 3 * lanes), load_float(d, b + i + 3 * lanes), acc3);
  }
  for (; i + lanes <= n; i += lanes) acc0 = hn::MulAdd(load_float(d, a + i), load_float(d, b + i), acc0);
  if (i < n) {
    const float_tail<T> tail(a + i, b + i, n - i);
    acc1 = hn::MulAdd(load_float(d, tail.a), load_float(d, tail.b), acc1);
  }
  return sum_lanes(d, hn::Add(hn::Add(acc0, acc1), hn::Add(acc2, acc3)));
}

template <class T>
HWY_INLINE float l2sq(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d), acc2 = hn::Zero(d), acc3 = hn::Zero(d);
  const auto step = [d](const T* pa, const T* pb, hn::Vec<decltype(d)> acc) HWY_ATTR {
    const auto diff = hn::Sub(load_float(d, pa), load_float(d, pb));
    return hn::MulAdd(diff, diff, acc);
  };
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    acc0 = step(a + i, b + i, acc0);
    acc1 = step(a + i + lanes, b + i + lanes, acc1);
    acc2 = step(a + i + 2 * lanes, b + i + 2 * lanes, acc2);
    acc3 = step(a + i + 3 * lanes, b + i + 3 * lanes, acc3);
  }
  for (; i + lanes <= n; i += lanes) acc0 = step(a + i, b + i, acc0);
  if (i < n) {
    const float_tail<T> tail(a + i, b + i, n - i);
    acc1 = step(tail.a, tail.b, acc1);
  }
  return sum_lanes(d, hn::Add(hn::Add(acc0, acc1), hn::Add(acc2, acc3)));
}

template <class T>
HWY_INLINE float l1(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  auto acc0 = hn::Zero(d), acc1 = hn::Zero(d), acc2 = hn::Zero(d), acc3 = hn::Zero(d);
  const auto step = [d](const T* pa, const T* pb, hn::Vec<decltype(d)> acc)
                        HWY_ATTR { return hn::Add(acc, hn::Abs(hn::Sub(load_float(d, pa), load_float(d, pb)))); };
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    acc0 = step(a + i, b + i, acc0);
    acc1 = step(a + i + lanes, b + i + lanes, acc1);
    acc2 = step(a + i + 2 * lanes, b + i + 2 * lanes, acc2);
    acc3 = step(a + i + 3 * lanes, b + i + 3 * lanes, acc3);
  }
  for (; i + lanes <= n; i += lanes) acc0 = step(a + i, b + i, acc0);
  if (i < n) {
    const float_tail<T> tail(a + i, b + i, n - i);
    acc1 = step(tail.a, tail.b, acc1);
  }
  return sum_lanes(d, hn::Add(hn::Add(acc0, acc1), hn::Add(acc2, acc3)));
}

// The cosine sums: sum a*b, sum a*a and sum b*b, each only if asked, in one
// pass. Each sum has its own four accumulators (twelve in all: the FMA
// latency, not the load ports, bounds two-accumulator versions); a sum's
// accumulation does not depend on which others run beside it, so the query
// norm computed alone for cosine_many has the bits cosine computes for it.
template <bool AB, bool AA, bool BB, class T>
HWY_INLINE void cosine_sums(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, std::size_t n, float* ab_out,
                            float* aa_out, float* bb_out) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  auto ab0 = hn::Zero(d), ab1 = hn::Zero(d), ab2 = hn::Zero(d), ab3 = hn::Zero(d);
  auto aa0 = hn::Zero(d), aa1 = hn::Zero(d), aa2 = hn::Zero(d), aa3 = hn::Zero(d);
  auto bb0 = hn::Zero(d), bb1 = hn::Zero(d), bb2 = hn::Zero(d), bb3 = hn::Zero(d);
  using V = hn::Vec<decltype(d)>;
  const auto accumulate = [](V x, V y, V& ab, V& aa, V& bb) HWY_ATTR {
    if constexpr (AB) ab = hn::MulAdd(x, y, ab);
    if constexpr (AA) aa = hn::MulAdd(x, x, aa);
    if constexpr (BB) bb = hn::MulAdd(y, y, bb);
  };
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    accumulate(load_float(d, a + i), load_float(d, b + i), ab0, aa0, bb0);
    accumulate(load_float(d, a + i + lanes), load_float(d, b + i + lanes), ab1, aa1, bb1);
    accumulate(load_float(d, a + i + 2 * lanes), load_float(d, b + i + 2 * lanes), ab2, aa2, bb2);
    accumulate(load_float(d, a + i + 3 * lanes), load_float(d, b + i + 3 * lanes), ab3, aa3, bb3);
  }
  for (; i + lanes <= n; i += lanes) accumulate(load_float(d, a + i), load_float(d, b + i), ab0, aa0, bb0);
  if (i < n) {
    const float_tail<T> tail(a + i, b + i, n - i);
    accumulate(load_float(d, tail.a), load_float(d, tail.b), ab1, aa1, bb1);
  }
  if constexpr (AB) *ab_out = sum_lanes(d, hn::Add(hn::Add(ab0, ab1), hn::Add(ab2, ab3)));
  if constexpr (AA) *aa_out = sum_lanes(d, hn::Add(hn::Add(aa0, aa1), hn::Add(aa2, aa3)));
  if constexpr (BB) *bb_out = sum_lanes(d, hn::Add(hn::Add(bb0, bb1), hn::Add(bb2, bb3)));
}

template <class T>
HWY_INLINE float cosine(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, std::size_t n) {
  float ab = 0.0f, aa = 0.0f, bb = 0.0f;
  cosine_sums<true, true, true>(a, b, n, &ab, &aa, &bb);
  return kernels::distance_detail::cosine_from_sums(ab, aa, bb);
}

template <class T>
HWY_INLINE void cosine_many(const T* HWY_RESTRICT query, const T* HWY_RESTRICT rows, std::size_t n,
                            std::size_t row_count, std::size_t row_stride, float* HWY_RESTRICT out) {
  float qq = 0.0f;
  cosine_sums<false, true, false>(query, query, n, nullptr, &qq, nullptr);
  for (std::size_t r = 0; r < row_count; ++r) {
    float ab = 0.0f, bb = 0.0f;
    cosine_sums<true, false, true>(query, rows + r * row_stride, n, &ab, nullptr, &bb);
    out[r] = kernels::distance_detail::cosine_from_sums(ab, qq, bb);
  }
}

// -------------------------------------------------------------- int8 kernels
// Lanes(d16) int8 elements per step, sign-extended to int16; products summed
// in pairs into int32 lanes. Both ReorderWidenMulAccumulate outputs are
// added at the end (x86 uses only the first; other targets split even/odd).

struct i8_tags {
  hn::ScalableTag<std::int16_t> d16;
  hn::Rebind<std::int8_t, hn::ScalableTag<std::int16_t>> d8;
  hn::Repartition<std::int32_t, hn::ScalableTag<std::int16_t>> d32;
};

template <class D16, class D8>
HWY_INLINE hn::Vec<D16> load_i16(D16 d16, D8 d8, const std::int8_t* HWY_RESTRICT p) {
  return hn::PromoteTo(d16, hn::LoadU(d8, p));
}

template <class D32>
HWY_INLINE std::int32_t sum_i32(D32 d32, hn::Vec<D32> v) {
  return hn::GetLane(hn::SumOfLanes(d32, v));
}

/// Sums of a*b, and optionally a*a and b*b, exact in int32 under
/// int8_dot_max_length.
template <bool WithAB, bool WithAA, bool WithBB>
HWY_INLINE void i8_products(const std::int8_t* HWY_RESTRICT a, const std::int8_t* HWY_RESTRICT b, std::size_t n,
                            std::int32_t* ab_out, std::int32_t* aa_out, std::int32_t* bb_out) {
  const i8_tags t;
  const std::size_t lanes = hn::Lanes(t.d16);
  auto ab0 = hn::Zero(t.d32), ab1 = hn::Zero(t.d32), aa0 = hn::Zero(t.d32), aa1 = hn::Zero(t.d32),
       bb0 = hn::Zero(t.d32), bb1 = hn::Zero(t.d32);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = load_i16(t.d16, t.d8, a + i);
    const auto y = load_i16(t.d16, t.d8, b + i);
    if constexpr (WithAB) ab0 = hn::ReorderWidenMulAccumulate(t.d32, x, y, ab0, ab1);
    if constexpr (WithAA) aa0 = hn::ReorderWidenMulAccumulate(t.d32, x, x, aa0, aa1);
    if constexpr (WithBB) bb0 = hn::ReorderWidenMulAccumulate(t.d32, y, y, bb0, bb1);
  }
  std::int32_t ab = WithAB ? sum_i32(t.d32, hn::Add(ab0, ab1)) : 0;
  std::int32_t aa = WithAA ? sum_i32(t.d32, hn::Add(aa0, aa1)) : 0;
  std::int32_t bb = WithBB ? sum_i32(t.d32, hn::Add(bb0, bb1)) : 0;
  for (; i < n; ++i) {
    ab += std::int32_t{a[i]} * b[i];
    aa += std::int32_t{a[i]} * a[i];
    bb += std::int32_t{b[i]} * b[i];
  }
  if constexpr (WithAB) *ab_out = ab;
  if constexpr (WithAA) *aa_out = aa;
  if constexpr (WithBB) *bb_out = bb;
}

#if RUVLLM_DISTANCE_VNNI
// VPDPBUSD multiplies unsigned bytes by signed bytes and adds each group of
// four products to an int32 lane. The unsigned operand is b with its sign
// bit flipped (the byte b + 128), so the lanes sum to dot(a, b) + 128 *
// sum(a), and the bias 128 * sum(a) is subtracted at the end. A lane holds at
// most n / 16 * 255 * 128 (no wrap under int8_dot_max_length); the sum over
// lanes and the bias are taken modulo 2^32, so their difference is the exact
// dot whenever that fits int32 (the family's precondition). A partial last
// step reads its bytes through a zeroing mask (no load past the inputs);
// masked-off lanes are a = 0, b + 128 = 128, and add nothing.

RUVLLM_DISTANCE_ATTR HWY_INLINE __mmask64 vnni_mask(std::size_t count) {
  return count >= 64 ? ~__mmask64{0} : (__mmask64{1} << count) - 1;
}

RUVLLM_DISTANCE_ATTR HWY_INLINE std::uint32_t vnni_sum_lanes(__m512i v) {
  const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  const __m128i q = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  alignas(16) std::uint32_t lanes[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), q);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];  // unsigned: wraps modulo 2^32
}

/// 128 * sum(a), modulo 2^32: the bias vnni_biased_dot adds.
RUVLLM_DISTANCE_ATTR HWY_INLINE std::uint32_t vnni_bias(const std::int8_t* HWY_RESTRICT a, std::size_t n) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i acc = _mm512_setzero_si512();
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512(a + i));
  if (i < n) acc = _mm512_dpbusd_epi32(acc, ones, _mm512_maskz_loadu_epi8(vnni_mask(n - i), a + i));
  return 128u * vnni_sum_lanes(acc);
}

/// sum a[i] * (b[i] + 128), modulo 2^32.
RUVLLM_DISTANCE_ATTR HWY_INLINE std::uint32_t vnni_biased_dot(const std::int8_t* HWY_RESTRICT a,
                                                              const std::int8_t* HWY_RESTRICT b, std::size_t n) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  // Two accumulators: VPDPBUSD's latency is longer than its issue interval.
  __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
  std::size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    acc0 = _mm512_dpbusd_epi32(acc0, _mm512_xor_si512(_mm512_loadu_si512(b + i), flip), _mm512_loadu_si512(a + i));
    acc1 = _mm512_dpbusd_epi32(acc1, _mm512_xor_si512(_mm512_loadu_si512(b + i + 64), flip),
                               _mm512_loadu_si512(a + i + 64));
  }
  for (; i < n; i += 64) {
    const __mmask64 m = vnni_mask(n - i);
    acc0 = _mm512_dpbusd_epi32(acc0, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, b + i), flip),
                               _mm512_maskz_loadu_epi8(m, a + i));
  }
  return vnni_sum_lanes(_mm512_add_epi32(acc0, acc1));
}

RUVLLM_DISTANCE_ATTR HWY_INLINE std::int32_t vnni_unbias(std::uint32_t biased_dot, std::uint32_t bias) {
  return static_cast<std::int32_t>(biased_dot - bias);  // modular (C++20): exact when the dot fits int32
}
#endif  // RUVLLM_DISTANCE_VNNI

RUVLLM_DISTANCE_ATTR HWY_INLINE std::int32_t dot_i8(const std::int8_t* HWY_RESTRICT a,
                                                    const std::int8_t* HWY_RESTRICT b, std::size_t n) {
#if RUVLLM_DISTANCE_VNNI
  return vnni_unbias(vnni_biased_dot(a, b, n), vnni_bias(a, n));
#else
  // Two independent accumulator pairs: PMADDWD has a 5-cycle latency.
  const i8_tags t;
  const std::size_t lanes = hn::Lanes(t.d16);
  auto s0 = hn::Zero(t.d32), s1 = hn::Zero(t.d32), s2 = hn::Zero(t.d32), s3 = hn::Zero(t.d32);
  std::size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    s0 = hn::ReorderWidenMulAccumulate(t.d32, load_i16(t.d16, t.d8, a + i), load_i16(t.d16, t.d8, b + i), s0, s1);
    s2 = hn::ReorderWidenMulAccumulate(t.d32, load_i16(t.d16, t.d8, a + i + lanes),
                                       load_i16(t.d16, t.d8, b + i + lanes), s2, s3);
  }
  for (; i + lanes <= n; i += lanes)
    s0 = hn::ReorderWidenMulAccumulate(t.d32, load_i16(t.d16, t.d8, a + i), load_i16(t.d16, t.d8, b + i), s0, s1);
  std::int32_t sum = sum_i32(t.d32, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)));
  for (; i < n; ++i) sum += std::int32_t{a[i]} * b[i];
  return sum;
#endif
}

HWY_INLINE std::int32_t l2sq_i8(const std::int8_t* HWY_RESTRICT a, const std::int8_t* HWY_RESTRICT b, std::size_t n) {
  // Differences fit int16 (|a - b| <= 255); a pair of squares fits int32.
  const i8_tags t;
  const std::size_t lanes = hn::Lanes(t.d16);
  auto s0 = hn::Zero(t.d32), s1 = hn::Zero(t.d32), s2 = hn::Zero(t.d32), s3 = hn::Zero(t.d32);
  std::size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto d0 = hn::Sub(load_i16(t.d16, t.d8, a + i), load_i16(t.d16, t.d8, b + i));
    const auto d1 = hn::Sub(load_i16(t.d16, t.d8, a + i + lanes), load_i16(t.d16, t.d8, b + i + lanes));
    s0 = hn::ReorderWidenMulAccumulate(t.d32, d0, d0, s0, s1);
    s2 = hn::ReorderWidenMulAccumulate(t.d32, d1, d1, s2, s3);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto d0 = hn::Sub(load_i16(t.d16, t.d8, a + i), load_i16(t.d16, t.d8, b + i));
    s0 = hn::ReorderWidenMulAccumulate(t.d32, d0, d0, s0, s1);
  }
  std::int32_t sum = sum_i32(t.d32, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)));
  for (; i < n; ++i) {
    const std::int32_t diff = std::int32_t{a[i]} - b[i];
    sum += diff * diff;
  }
  return sum;
}

HWY_INLINE std::int32_t l1_i8(const std::int8_t* HWY_RESTRICT a, const std::int8_t* HWY_RESTRICT b, std::size_t n) {
  // Flipping the sign bit maps int8 onto uint8 in order (x + 128), so
  // |a - b| is the difference of the biased bytes: one of the two saturating
  // subtractions is zero and the other is the distance. Full-width bytes,
  // summed in groups of eight into u64 lanes.
  const hn::ScalableTag<std::uint8_t> d8;
  const hn::Repartition<std::uint64_t, decltype(d8)> d64;
  const std::size_t lanes = hn::Lanes(d8);
  const auto* ua = reinterpret_cast<const std::uint8_t*>(a);
  const auto* ub = reinterpret_cast<const std::uint8_t*>(b);
  // The lambda builds its constant itself: SVE vectors cannot be captured.
  const auto step = [d8](const std::uint8_t* pa, const std::uint8_t* pb) HWY_ATTR {
    const auto bias = hn::Set(d8, std::uint8_t{0x80});
    const auto x = hn::Xor(hn::LoadU(d8, pa), bias);
    const auto y = hn::Xor(hn::LoadU(d8, pb), bias);
    return hn::SumsOf8(hn::Or(hn::SaturatedSub(x, y), hn::SaturatedSub(y, x)));
  };
  auto s0 = hn::Zero(d64), s1 = hn::Zero(d64);
  std::size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    s0 = hn::Add(s0, step(ua + i, ub + i));
    s1 = hn::Add(s1, step(ua + i + lanes, ub + i + lanes));
  }
  for (; i + lanes <= n; i += lanes) s0 = hn::Add(s0, step(ua + i, ub + i));
  std::uint64_t sum = hn::GetLane(hn::SumOfLanes(d64, hn::Add(s0, s1)));
  for (; i < n; ++i) {
    const std::int32_t diff = std::int32_t{a[i]} - b[i];
    sum += static_cast<std::uint64_t>(diff < 0 ? -diff : diff);
  }
  return static_cast<std::int32_t>(sum);
}

HWY_INLINE float cosine_from_i8_sums(std::int32_t ab, std::int32_t aa, std::int32_t bb) {
  return kernels::distance_detail::cosine_from_sums(static_cast<double>(ab), static_cast<double>(aa),
                                                    static_cast<double>(bb));
}

// ------------------------------------------------------------------ hamming

HWY_INLINE std::uint64_t hamming(const std::uint64_t* HWY_RESTRICT a, const std::uint64_t* HWY_RESTRICT b,
                                 std::size_t words) {
  const hn::ScalableTag<std::uint64_t> d64;
  const hn::Repartition<std::uint8_t, decltype(d64)> d8;
  const std::size_t lanes = hn::Lanes(d64);
  const auto step = [d64, d8](const std::uint64_t* pa, const std::uint64_t* pb) HWY_ATTR {
    const auto x = hn::Xor(hn::LoadU(d64, pa), hn::LoadU(d64, pb));
    return hn::SumsOf8(hn::PopulationCount(hn::BitCast(d8, x)));
  };
  auto s0 = hn::Zero(d64), s1 = hn::Zero(d64);
  std::size_t i = 0;
  for (; i + 2 * lanes <= words; i += 2 * lanes) {
    s0 = hn::Add(s0, step(a + i, b + i));
    s1 = hn::Add(s1, step(a + i + lanes, b + i + lanes));
  }
  for (; i + lanes <= words; i += lanes) s0 = hn::Add(s0, step(a + i, b + i));
  std::uint64_t sum = hn::GetLane(hn::SumOfLanes(d64, hn::Add(s0, s1)));
  for (; i < words; ++i) sum += static_cast<std::uint64_t>(std::popcount(a[i] ^ b[i]));
  return sum;
}

}  // namespace distance_impl
#endif  // HWY_TARGET != HWY_SCALAR

// ------------------------------------------------------------------ exports
// One function per entry of RUVLLM_KERNELS_EXPORTED in dispatch.hpp; the
// names carry the element type because a dispatch table holds one function.

namespace distance_impl {

#if HWY_TARGET == HWY_SCALAR
// One lane and missing ops: on this target the scalar reference is the kernel.
template <class T>
HWY_INLINE float dot(const T* a, const T* b, std::size_t n) {
  return scalar::dot(a, b, n);
}
template <class T>
HWY_INLINE float l2sq(const T* a, const T* b, std::size_t n) {
  return scalar::l2sq(a, b, n);
}
template <class T>
HWY_INLINE float l1(const T* a, const T* b, std::size_t n) {
  return scalar::l1(a, b, n);
}
template <class T>
HWY_INLINE float cosine(const T* a, const T* b, std::size_t n) {
  return scalar::cosine(a, b, n);
}
template <class T>
HWY_INLINE void cosine_many(const T* query, const T* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                            float* out) {
  scalar::cosine_many(query, rows, n, row_count, row_stride, out);
}
HWY_INLINE std::int32_t dot_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  return scalar::dot(a, b, n);
}
HWY_INLINE std::int32_t l2sq_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  return scalar::l2sq(a, b, n);
}
HWY_INLINE std::int32_t l1_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) { return scalar::l1(a, b, n); }
HWY_INLINE float cosine_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  return scalar::cosine(a, b, n);
}
HWY_INLINE void cosine_many_i8(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                               std::size_t row_stride, float* out) {
  scalar::cosine_many(query, rows, n, row_count, row_stride, out);
}
HWY_INLINE std::uint64_t hamming(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) {
  return scalar::hamming(a, b, words);
}
#else
HWY_INLINE float cosine_i8(const std::int8_t* HWY_RESTRICT a, const std::int8_t* HWY_RESTRICT b, std::size_t n) {
  std::int32_t ab = 0, aa = 0, bb = 0;
  i8_products<true, true, true>(a, b, n, &ab, &aa, &bb);
  return cosine_from_i8_sums(ab, aa, bb);
}
HWY_INLINE void cosine_many_i8(const std::int8_t* HWY_RESTRICT query, const std::int8_t* HWY_RESTRICT rows,
                               std::size_t n, std::size_t row_count, std::size_t row_stride, float* HWY_RESTRICT out) {
  std::int32_t qq = 0;
  i8_products<false, true, false>(query, query, n, nullptr, &qq, nullptr);
  for (std::size_t r = 0; r < row_count; ++r) {
    std::int32_t ab = 0, bb = 0;
    i8_products<true, false, true>(query, rows + r * row_stride, n, &ab, nullptr, &bb);
    out[r] = cosine_from_i8_sums(ab, qq, bb);
  }
}
#endif  // HWY_TARGET == HWY_SCALAR

/// out[r] = Kernel(query, row r): the one-to-one body, inlined, once per row.
template <auto Kernel, class T, class R>
HWY_INLINE void each_row(const T* HWY_RESTRICT query, const T* HWY_RESTRICT rows, std::size_t n, std::size_t row_count,
                         std::size_t row_stride, R* HWY_RESTRICT out) {
  for (std::size_t r = 0; r < row_count; ++r) out[r] = Kernel(query, rows + r * row_stride, n);
}

// ---- gathers
// The rows of a gather are scattered (graph neighbours), so the hardware
// prefetcher cannot guess them, and one row's compute (~10 ns at 128
// floats) is far shorter than a DRAM miss (~100 ns): rows are requested about
// 96 cache lines ahead of the one being computed (two 768-float rows, four
// 768-half rows, seven 768-byte rows, twelve 128-float rows). Measured on
// 50k random 768-element rows (10 per call, one thread, Zen 5): 32 lines
// ahead left f16 rows at ~1.4x and int8 rows at ~1.1x the time per row of
// 96; more than 96 gained nothing.

/// Requests the `bytes` bytes at p into the caches. Always inlined: GCC 12
/// judges a function whose only statements are prefetches to have no side
/// effects and deletes the calls it does not inline (a lambda in this place
/// once lost every prefetch that way).
HWY_INLINE void prefetch_bytes(const void* p, std::size_t bytes) {
  const auto* c = static_cast<const char*>(p);
  for (std::size_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o);
}

/// The prefetch schedule of one gather: construction requests the first
/// rows, before(r) the row `ahead` places after r.
template <class T>
struct gather_prefetch {
  const T* const* rows;
  std::size_t count, bytes, ahead;
  HWY_INLINE gather_prefetch(const T* const* r, std::size_t n, std::size_t row_count)
      : rows(r), count(row_count), bytes(n * sizeof(T)) {
    constexpr std::size_t lines_in_flight = 96;
    const std::size_t lines = (bytes + 63) / 64;
    ahead = lines == 0 ? 1 : std::max<std::size_t>(1, lines_in_flight / lines);
    for (std::size_t i = 0; i < ahead && i < count; ++i) prefetch_bytes(rows[i], bytes);
  }
  HWY_INLINE void before(std::size_t r) const {
    if (r + ahead < count) prefetch_bytes(rows[r + ahead], bytes);
  }
};

/// out[r] = Kernel(query, rows[r]): the one-to-one body once per row.
template <auto Kernel, class T, class R>
HWY_INLINE void each_gathered(const T* HWY_RESTRICT query, const T* const* HWY_RESTRICT rows, std::size_t n,
                              std::size_t row_count, R* HWY_RESTRICT out) {
  const gather_prefetch<T> prefetch(rows, n, row_count);
  for (std::size_t r = 0; r < row_count; ++r) {
    prefetch.before(r);
    out[r] = Kernel(query, rows[r], n);
  }
}

// The int8 dot in its three forms. With VNNI the query's bias (vnni_bias)
// is computed once per call, not per row; the results are exact either way.
RUVLLM_DISTANCE_ATTR HWY_INLINE void dot_i8_rows(const std::int8_t* HWY_RESTRICT query,
                                                 const std::int8_t* HWY_RESTRICT rows, std::size_t n,
                                                 std::size_t row_count, std::size_t row_stride,
                                                 std::int32_t* HWY_RESTRICT out) {
#if RUVLLM_DISTANCE_VNNI
  if (row_count == 0) return;
  const std::uint32_t bias = vnni_bias(query, n);
  for (std::size_t r = 0; r < row_count; ++r)
    out[r] = vnni_unbias(vnni_biased_dot(query, rows + r * row_stride, n), bias);
#else
  each_row<dot_i8>(query, rows, n, row_count, row_stride, out);
#endif
}

RUVLLM_DISTANCE_ATTR HWY_INLINE void dot_i8_gathered(const std::int8_t* HWY_RESTRICT query,
                                                     const std::int8_t* const* HWY_RESTRICT rows, std::size_t n,
                                                     std::size_t row_count, std::int32_t* HWY_RESTRICT out) {
#if RUVLLM_DISTANCE_VNNI
  if (row_count == 0) return;
  const std::uint32_t bias = vnni_bias(query, n);
  const gather_prefetch<std::int8_t> prefetch(rows, n, row_count);
  for (std::size_t r = 0; r < row_count; ++r) {
    prefetch.before(r);
    out[r] = vnni_unbias(vnni_biased_dot(query, rows[r], n), bias);
  }
#else
  each_gathered<dot_i8>(query, rows, n, row_count, out);
#endif
}

}  // namespace distance_impl

// dot
inline float distance_dot_f32(const float* a, const float* b, std::size_t n) { return distance_impl::dot(a, b, n); }
inline float distance_dot_f16(const ruvllm::f16* a, const ruvllm::f16* b, std::size_t n) {
  return distance_impl::dot(a, b, n);
}
inline float distance_dot_bf16(const ruvllm::bf16* a, const ruvllm::bf16* b, std::size_t n) {
  return distance_impl::dot(a, b, n);
}
RUVLLM_DISTANCE_ATTR inline std::int32_t distance_dot_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  return distance_impl::dot_i8(a, b, n);
}
inline void distance_dot_many_f32(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                                  std::size_t row_stride, float* out) {
  distance_impl::each_row<distance_impl::dot<float>>(query, rows, n, row_count, row_stride, out);
}
inline void distance_dot_many_f16(const ruvllm::f16* query, const ruvllm::f16* rows, std::size_t n,
                                  std::size_t row_count, std::size_t row_stride, float* out) {
  distance_impl::each_row<distance_impl::dot<ruvllm::f16>>(query, rows, n, row_count, row_stride, out);
}
inline void distance_dot_many_bf16(const ruvllm::bf16* query, const ruvllm::bf16* rows, std::size_t n,
                                   std::size_t row_count, std::size_t row_stride, float* out) {
  distance_impl::each_row<distance_impl::dot<ruvllm::bf16>>(query, rows, n, row_count, row_stride, out);
}
RUVLLM_DISTANCE_ATTR inline void distance_dot_many_i8(const std::int8_t* query, const std::int8_t* rows, std::size_t n,
                                                      std::size_t row_count, std::size_t row_stride,
                                                      std::int32_t* out) {
  distance_impl::dot_i8_rows(query, rows, n, row_count, row_stride, out);
}

// l2sq
inline float distance_l2sq_f32(const float* a, const float* b, std::size_t n) { return distance_impl::l2sq(a, b, n); }
inline float distance_l2sq_f16(const ruvllm::f16* a, const ruvllm::f16* b, std::size_t n) {
  return distance_impl::l2sq(a, b, n);
}
inline float distance_l2sq_bf16(const ruvllm::bf16* a, const ruvllm::bf16* b, std::size_t n) {
  return distance_impl::l2sq(a, b, n);
}
inline std::int32_t distance_l2sq_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  return distance_impl::l2sq_i8(a, b, n);
}
inline void distance_l2sq_many_f32(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                                   std::size_t row_stride, float* out) {
  distance_impl::each_row<distance_impl::l2sq<float>>(query, rows, n, row_count, row_stride, out);
}
inline void distance_l2sq_many_f16(const ruvllm::f16* query, const ruvllm::f16* rows, std::size_t n,
                                   std::size_t row_count, std::size_t row_stride, float* out) {
  distance_impl::each_row<distance_impl::l2sq<ruvllm::f16>>(query, rows, n, row_count, row_stride, out);
}
inline void distance_l2sq_many_bf16(const ruvllm::bf16* query, const ruvllm::bf16* rows, std::size_t n,
                                    std::size_t row_count, std::size_t row_stride, float* out) {
  distance_impl::each_row<distance_impl::l2sq<ruvllm::bf16>>(query, rows, n, row_count, row_stride, out);
}
inline void distance_l2sq_many_i8(const std::int8_t* query, const std::int8_t* rows, std::size_t n,
                                  std::size_t row_count, std::size_t row_stride, std::int32_t* out) {
  distance_impl::each_row<distance_impl::l2sq_i8>(query, rows, n, row_count, row_stride, out);
}

// dot gather
inline void distance_dot_gather_f32(const float* query, const float* const* rows, std::size_t n, std::size_t row_count,
                                    float* out) {
  distance_impl::each_gathered<distance_impl::dot<float>>(query, rows, n, row_count, out);
}
inline void distance_dot_gather_f16(const ruvllm::f16* query, const ruvllm::f16* const* rows, std::size_t n,
                                    std::size_t row_count, float* out) {
  distance_impl::each_gathered<distance_impl::dot<ruvllm::f16>>(query, rows, n, row_count, out);
}
inline void distance_dot_gather_bf16(const ruvllm::bf16* query, const ruvllm::bf16* const* rows, std::size_t n,
                                     std::size_t row_count, float* out) {
  distance_impl::each_gathered<distance_impl::dot<ruvllm::bf16>>(query, rows, n, row_count, out);
}
RUVLLM_DISTANCE_ATTR inline void distance_dot_gather_i8(const std::int8_t* query, const std::int8_t* const* rows,
                                                        std::size_t n, std::size_t row_count, std::int32_t* out) {
  distance_impl::dot_i8_gathered(query, rows, n, row_count, out);
}

// l2sq gather
inline void distance_l2sq_gather_f32(const float* query, const float* const* rows, std::size_t n, std::size_t row_count,
                                     float* out) {
  distance_impl::each_gathered<distance_impl::l2sq<float>>(query, rows, n, row_count, out);
}
inline void distance_l2sq_gather_f16(const ruvllm::f16* query, const ruvllm::f16* const* rows, std::size_t n,
                                     std::size_t row_count, float* out) {
  distance_impl::each_gathered<distance_impl::l2sq<ruvllm::f16>>(query, rows, n, row_count, out);
}
inline void distance_l2sq_gather_bf16(const ruvllm::bf16* query, const ruvllm::bf16* const* rows, std::size_t n,
                                      std::size_t row_count, float* out) {
  distance_impl::each_gathered<distance_impl::l2sq<ruvllm::bf16>>(query, rows, n, row_count, out);
}
inline void distance_l2sq_gather_i8(const std::int8_t* query, const std::int8_t* const* rows, std::size_t n,
                                    std::size_t row_count, std::int32_t* out) {
  distance_impl::each_gathered<distance_impl::l2sq_i8>(query, rows, n, row_count, out);
}

// l1
inline float distance_l1_f32(const float* a, const float* b, std::size_t n) { return distance_impl::l1(a, b, n); }
inline float distance_l1_f16(const ruvllm::f16* a, const ruvllm::f16* b, std::size_t n) {
  return distance_impl::l1(a, b, n);
}
inline float distance_l1_bf16(const ruvllm::bf16* a, const ruvllm::bf16* b, std::size_t n) {
  return distance_impl::l1(a, b, n);
}
inline std::int32_t distance_l1_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  return distance_impl::l1_i8(a, b, n);
}
inline void distance_l1_many_f32(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                                 std::size_t row_stride, float* out) {
  distance_impl::each_row<distance_impl::l1<float>>(query, rows, n, row_count, row_stride, out);
}
inline void distance_l1_many_f16(const ruvllm::f16* query, const ruvllm::f16* rows, std::size_t n,
                                 std::size_t row_count, std::size_t row_stride, float* out) {
  distance_impl::each_row<distance_impl::l1<ruvllm::f16>>(query, rows, n, row_count, row_stride, out);
}
inline void distance_l1_many_bf16(const ruvllm::bf16* query, const ruvllm::bf16* rows, std::size_t n,
                                  std::size_t row_count, std::size_t row_stride, float* out) {
  distance_impl::each_row<distance_impl::l1<ruvllm::bf16>>(query, rows, n, row_count, row_stride, out);
}
inline void distance_l1_many_i8(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                                std::size_t row_stride, std::int32_t* out) {
  distance_impl::each_row<distance_impl::l1_i8>(query, rows, n, row_count, row_stride, out);
}

// cosine
inline float distance_cosine_f32(const float* a, const float* b, std::size_t n) {
  return distance_impl::cosine(a, b, n);
}
inline float distance_cosine_f16(const ruvllm::f16* a, const ruvllm::f16* b, std::size_t n) {
  return distance_impl::cosine(a, b, n);
}
inline float distance_cosine_bf16(const ruvllm::bf16* a, const ruvllm::bf16* b, std::size_t n) {
  return distance_impl::cosine(a, b, n);
}
inline float distance_cosine_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  return distance_impl::cosine_i8(a, b, n);
}
inline void distance_cosine_many_f32(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                                     std::size_t row_stride, float* out) {
  distance_impl::cosine_many(query, rows, n, row_count, row_stride, out);
}
inline void distance_cosine_many_f16(const ruvllm::f16* query, const ruvllm::f16* rows, std::size_t n,
                                     std::size_t row_count, std::size_t row_stride, float* out) {
  distance_impl::cosine_many(query, rows, n, row_count, row_stride, out);
}
inline void distance_cosine_many_bf16(const ruvllm::bf16* query, const ruvllm::bf16* rows, std::size_t n,
                                      std::size_t row_count, std::size_t row_stride, float* out) {
  distance_impl::cosine_many(query, rows, n, row_count, row_stride, out);
}
inline void distance_cosine_many_i8(const std::int8_t* query, const std::int8_t* rows, std::size_t n,
                                    std::size_t row_count, std::size_t row_stride, float* out) {
  distance_impl::cosine_many_i8(query, rows, n, row_count, row_stride, out);
}

// hamming
inline std::uint64_t distance_hamming_u64(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) {
  return distance_impl::hamming(a, b, words);
}
inline void distance_hamming_many_u64(const std::uint64_t* query, const std::uint64_t* rows, std::size_t words,
                                      std::size_t row_count, std::size_t row_stride, std::uint64_t* out) {
  distance_impl::each_row<distance_impl::hamming>(query, rows, words, row_count, row_stride, out);
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#undef RUVLLM_DISTANCE_VNNI
#undef RUVLLM_DISTANCE_ATTR

#endif  // RUVLLM_KERNELS_DISTANCE_INL_H_ toggle
