#ifndef RUVLLM_KERNELS_XSIMD_DISTANCE_HPP
#define RUVLLM_KERNELS_XSIMD_DISTANCE_HPP

// Distance kernels of backend::xsimd (see xsimd/arch.hpp on compile flags).
// Same overloads and contract as distance_ops<backend::scalar>
// (ruvllm/kernels/scalar/distance.hpp).
//
// xsimd 8.1 has no f16 or bf16 batches, no widening integer conversions, no
// integer dot product and no popcount, so the kernels build them from
// same-width integer operations:
//  * f16/bf16: a batch of u32 words holds two halves per lane; the low
//    halves (even elements) and the high halves (odd elements) are widened
//    in place to two float batches: bf16 by shifting, f16 by rebuilding the
//    float bits like ruvllm::to_float (equal on all 65536 patterns;
//    subnormals through an exact int-to-float conversion). xsimd has no
//    F16C wrapper: with 256-bit batches and F16C (-march=native on AVX2) f16
//    is widened by the VCVTPH2PS intrinsic instead. Sums do not depend on
//    the order, so the even/odd split costs nothing. The last partial step
//    (< 2 batches of elements) goes through the scalar helper
//    ruvllm::to_float, one element at a time.
//  * int8: a batch of int16 words holds two int8 per lane; arithmetic shifts
//    sign-extend the even and odd elements, products are exact in int16
//    (|x * y| <= 2^14) or uint16 ((x - y)^2 <= 255^2), and the same shift
//    trick widens pairs of them to 32-bit lanes before accumulating. (xsimd
//    8.1 multiplies int16 with a scalar loop on plain SSE2; with SSE4.1/AVX2
//    it is one instruction.)
//  * hamming: a SWAR popcount per 64-bit lane, byte counts accumulated for
//    up to 31 steps before they are summed into 64-bit lanes.
// Integer tails run a scalar loop (exact in any order).

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "ruvllm/core/config.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/scalar/distance.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"
#include "ruvllm/kernels/xsimd/half.hpp"

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {
namespace distance_impl {

using batch_f = ::xsimd::batch<float>;
using batch_i32 = ::xsimd::batch<std::int32_t>;
using batch_u32 = ::xsimd::batch<std::uint32_t>;
using batch_i16 = ::xsimd::batch<std::int16_t>;
using batch_u64 = ::xsimd::batch<std::uint64_t>;
inline constexpr std::size_t lanes = batch_f::size;

// ------------------------------------------------------------ widening loads
// load_pair(p, lo, hi) reads 2 * lanes elements from p (any alignment) as two
// float batches; which element lands in which lane is unspecified.

inline void load_pair(const float* p, batch_f& lo, batch_f& hi) noexcept {
  lo = batch_f::load_unaligned(p);
  hi = batch_f::load_unaligned(p + lanes);
}

/// u32 lanes each holding two consecutive 16-bit values (element 2k in the
/// low half: x86 and ARM are little-endian).
inline batch_u32 load_u16_pairs(const std::uint16_t* p) noexcept {
  return ::xsimd::bitwise_cast<batch_u32>(::xsimd::batch<std::uint16_t>::load_unaligned(p));
}

inline void load_pair(const f16* p, batch_f& lo, batch_f& hi) noexcept {
#if XSIMD_WITH_AVX && !XSIMD_WITH_AVX512F && defined(__F16C__)
  // 256-bit batches on a CPU with F16C (every AVX2 one): VCVTPH2PS, which
  // equals ruvllm::to_float, is 8x faster than rebuilding the bits below.
  lo = batch_f(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  hi = batch_f(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8))));
#else
  const auto words = ::xsimd::bitwise_cast<batch_i32>(load_u16_pairs(reinterpret_cast<const std::uint16_t*>(p)));
  lo = f16_bits_to_float(words & batch_i32(0xFFFF));
  hi = f16_bits_to_float(::xsimd::bitwise_cast<batch_i32>(::xsimd::bitwise_cast<batch_u32>(words) >> 16));
#endif
}

inline void load_pair(const bf16* p, batch_f& lo, batch_f& hi) noexcept {
  const batch_u32 words = load_u16_pairs(reinterpret_cast<const std::uint16_t*>(p));
  lo = ::xsimd::bitwise_cast<batch_f>(words << 16);
  hi = ::xsimd::bitwise_cast<batch_f>(words & batch_u32(0xFFFF'0000u));
}

// ------------------------------------------------------------ float kernels
// Each step reads 2 * lanes elements; the remaining < 2 * lanes run the
// scalar loop of the reference (kernels::distance_detail::widen).

inline constexpr std::size_t step = 2 * lanes;

template <class T>
[[nodiscard]] float dot(const T* a, const T* b, std::size_t n) noexcept {
  batch_f acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
  batch_f x0, x1, y0, y1;
  std::size_t i = 0;
  for (; i + 2 * step <= n; i += 2 * step) {
    load_pair(a + i, x0, x1);
    load_pair(b + i, y0, y1);
    acc0 = ::xsimd::fma(x0, y0, acc0);
    acc1 = ::xsimd::fma(x1, y1, acc1);
    load_pair(a + i + step, x0, x1);
    load_pair(b + i + step, y0, y1);
    acc2 = ::xsimd::fma(x0, y0, acc2);
    acc3 = ::xsimd::fma(x1, y1, acc3);
  }
  for (; i + step <= n; i += step) {
    load_pair(a + i, x0, x1);
    load_pair(b + i, y0, y1);
    acc0 = ::xsimd::fma(x0, y0, acc0);
    acc1 = ::xsimd::fma(x1, y1, acc1);
  }
  float sum = ::xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
  for (; i < n; ++i) sum += distance_detail::widen(a[i]) * distance_detail::widen(b[i]);
  return sum;
}

template <class T>
[[nodiscard]] float l2sq(const T* a, const T* b, std::size_t n) noexcept {
  batch_f acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
  batch_f x0, x1, y0, y1;
  std::size_t i = 0;
  for (; i + 2 * step <= n; i += 2 * step) {
    load_pair(a + i, x0, x1);
    load_pair(b + i, y0, y1);
    acc0 = ::xsimd::fma(x0 - y0, x0 - y0, acc0);
    acc1 = ::xsimd::fma(x1 - y1, x1 - y1, acc1);
    load_pair(a + i + step, x0, x1);
    load_pair(b + i + step, y0, y1);
    acc2 = ::xsimd::fma(x0 - y0, x0 - y0, acc2);
    acc3 = ::xsimd::fma(x1 - y1, x1 - y1, acc3);
  }
  for (; i + step <= n; i += step) {
    load_pair(a + i, x0, x1);
    load_pair(b + i, y0, y1);
    acc0 = ::xsimd::fma(x0 - y0, x0 - y0, acc0);
    acc1 = ::xsimd::fma(x1 - y1, x1 - y1, acc1);
  }
  float sum = ::xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
  for (; i < n; ++i) {
    const float d = distance_detail::widen(a[i]) - distance_detail::widen(b[i]);
    sum += d * d;
  }
  return sum;
}

template <class T>
[[nodiscard]] float l1(const T* a, const T* b, std::size_t n) noexcept {
  batch_f acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
  batch_f x0, x1, y0, y1;
  std::size_t i = 0;
  for (; i + 2 * step <= n; i += 2 * step) {
    load_pair(a + i, x0, x1);
    load_pair(b + i, y0, y1);
    acc0 += ::xsimd::abs(x0 - y0);
    acc1 += ::xsimd::abs(x1 - y1);
    load_pair(a + i + step, x0, x1);
    load_pair(b + i + step, y0, y1);
    acc2 += ::xsimd::abs(x0 - y0);
    acc3 += ::xsimd::abs(x1 - y1);
  }
  for (; i + step <= n; i += step) {
    load_pair(a + i, x0, x1);
    load_pair(b + i, y0, y1);
    acc0 += ::xsimd::abs(x0 - y0);
    acc1 += ::xsimd::abs(x1 - y1);
  }
  float sum = ::xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
  for (; i < n; ++i) sum += std::fabs(distance_detail::widen(a[i]) - distance_detail::widen(b[i]));
  return sum;
}

// The cosine sums: sum a*b, sum a*a and sum b*b, each only if asked, in one
// pass with four accumulators per sum (two load_pair steps per iteration),
// so FMA latency does not bound it. A sum's accumulation does not depend on
// which others run beside it: cosine_many's query norm, computed alone, has
// the bits cosine computes for it.
template <bool AB, bool AA, bool BB, class T>
void cosine_sums(const T* a, const T* b, std::size_t n, float* ab_out, float* aa_out, float* bb_out) noexcept {
  batch_f ab0(0.0f), ab1(0.0f), ab2(0.0f), ab3(0.0f), aa0(0.0f), aa1(0.0f), aa2(0.0f), aa3(0.0f), bb0(0.0f), bb1(0.0f),
      bb2(0.0f), bb3(0.0f);
  batch_f x0, x1, y0, y1;
  const auto accumulate = [](const batch_f& x, const batch_f& y, batch_f& ab, batch_f& aa, batch_f& bb) noexcept {
    if constexpr (AB) ab = ::xsimd::fma(x, y, ab);
    if constexpr (AA) aa = ::xsimd::fma(x, x, aa);
    if constexpr (BB) bb = ::xsimd::fma(y, y, bb);
  };
  std::size_t i = 0;
  for (; i + 2 * step <= n; i += 2 * step) {
    load_pair(a + i, x0, x1);
    load_pair(b + i, y0, y1);
    accumulate(x0, y0, ab0, aa0, bb0);
    accumulate(x1, y1, ab1, aa1, bb1);
    load_pair(a + i + step, x0, x1);
    load_pair(b + i + step, y0, y1);
    accumulate(x0, y0, ab2, aa2, bb2);
    accumulate(x1, y1, ab3, aa3, bb3);
  }
  for (; i + step <= n; i += step) {
    load_pair(a + i, x0, x1);
    load_pair(b + i, y0, y1);
    accumulate(x0, y0, ab0, aa0, bb0);
    accumulate(x1, y1, ab1, aa1, bb1);
  }
  float sab = ::xsimd::hadd((ab0 + ab1) + (ab2 + ab3));
  float saa = ::xsimd::hadd((aa0 + aa1) + (aa2 + aa3));
  float sbb = ::xsimd::hadd((bb0 + bb1) + (bb2 + bb3));
  for (; i < n; ++i) {
    const float x = distance_detail::widen(a[i]), y = distance_detail::widen(b[i]);
    sab += x * y;
    saa += x * x;
    sbb += y * y;
  }
  if constexpr (AB) *ab_out = sab;
  if constexpr (AA) *aa_out = saa;
  if constexpr (BB) *bb_out = sbb;
}

template <class T>
[[nodiscard]] float cosine(const T* a, const T* b, std::size_t n) noexcept {
  float ab = 0.0f, aa = 0.0f, bb = 0.0f;
  cosine_sums<true, true, true>(a, b, n, &ab, &aa, &bb);
  return distance_detail::cosine_from_sums(ab, aa, bb);
}

template <class T>
void cosine_many(const T* query, const T* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                 float* out) noexcept {
  float qq = 0.0f;
  cosine_sums<false, true, false>(query, query, n, nullptr, &qq, nullptr);
  for (std::size_t r = 0; r < row_count; ++r) {
    float ab = 0.0f, bb = 0.0f;
    cosine_sums<true, false, true>(query, rows + r * row_stride, n, &ab, nullptr, &bb);
    out[r] = distance_detail::cosine_from_sums(ab, qq, bb);
  }
}

// ------------------------------------------------------------- int8 kernels
// i16_lanes int16 words = 2 * i16_lanes int8 elements per step.

inline constexpr std::size_t i16_lanes = batch_i16::size;
inline constexpr std::size_t i8_step = 2 * i16_lanes;

/// The even (low byte) and odd (high byte) elements of 2 * i16_lanes int8
/// at p, sign-extended to int16.
inline void load_i8_pair(const std::int8_t* p, batch_i16& even, batch_i16& odd) noexcept {
  const auto words = ::xsimd::bitwise_cast<batch_i16>(::xsimd::batch<std::int8_t>::load_unaligned(p));
  even = (words << 8) >> 8;
  odd = words >> 8;
}

/// Sum of the two signed int16 halves of each 32-bit lane, in int32.
inline batch_i32 sum_i16_halves(batch_i16 v) noexcept {
  const auto words = ::xsimd::bitwise_cast<batch_i32>(v);
  return ((words << 16) >> 16) + (words >> 16);
}

/// Sum of the two unsigned 16-bit halves of each 32-bit lane, in uint32.
inline batch_u32 sum_u16_halves(batch_i16 v) noexcept {
  const auto words = ::xsimd::bitwise_cast<batch_u32>(v);
  return (words & batch_u32(0xFFFFu)) + (words >> 16);
}

/// Sums of a*b, a*a and b*b (each only if asked), exact in int32 under
/// int8_dot_max_length.
template <bool WithAB, bool WithAA, bool WithBB>
void i8_products(const std::int8_t* a, const std::int8_t* b, std::size_t n, std::int32_t* ab_out, std::int32_t* aa_out,
                 std::int32_t* bb_out) noexcept {
  batch_i32 ab(0), aa(0), bb(0);
  batch_i16 xe, xo, ye, yo;
  std::size_t i = 0;
  for (; i + i8_step <= n; i += i8_step) {
    load_i8_pair(a + i, xe, xo);
    load_i8_pair(b + i, ye, yo);
    // One product per int16 lane (|x * y| <= 2^14); a pair of them is added
    // only after widening, since 2 * 2^14 overflows int16.
    if constexpr (WithAB) ab += sum_i16_halves(xe * ye) + sum_i16_halves(xo * yo);
    if constexpr (WithAA) aa += sum_i16_halves(xe * xe) + sum_i16_halves(xo * xo);
    if constexpr (WithBB) bb += sum_i16_halves(ye * ye) + sum_i16_halves(yo * yo);
  }
  std::int32_t sab = WithAB ? ::xsimd::hadd(ab) : 0;
  std::int32_t saa = WithAA ? ::xsimd::hadd(aa) : 0;
  std::int32_t sbb = WithBB ? ::xsimd::hadd(bb) : 0;
  for (; i < n; ++i) {
    sab += std::int32_t{a[i]} * b[i];
    saa += std::int32_t{a[i]} * a[i];
    sbb += std::int32_t{b[i]} * b[i];
  }
  if constexpr (WithAB) *ab_out = sab;
  if constexpr (WithAA) *aa_out = saa;
  if constexpr (WithBB) *bb_out = sbb;
}

[[nodiscard]] inline std::int32_t dot_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  std::int32_t ab = 0;
  i8_products<true, false, false>(a, b, n, &ab, nullptr, nullptr);
  return ab;
}

[[nodiscard]] inline std::int32_t l2sq_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  // (x - y)^2 <= 255^2 fits uint16 (not int16): widen as unsigned.
  batch_u32 acc(0u);
  batch_i16 xe, xo, ye, yo;
  std::size_t i = 0;
  for (; i + i8_step <= n; i += i8_step) {
    load_i8_pair(a + i, xe, xo);
    load_i8_pair(b + i, ye, yo);
    const batch_i16 de = xe - ye, d_o = xo - yo;
    acc += sum_u16_halves(de * de) + sum_u16_halves(d_o * d_o);
  }
  auto sum = static_cast<std::int32_t>(::xsimd::hadd(acc));
  for (; i < n; ++i) {
    const std::int32_t d = std::int32_t{a[i]} - b[i];
    sum += d * d;
  }
  return sum;
}

[[nodiscard]] inline std::int32_t l1_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  // |d| = (d ^ s) - s with s = d >> 15 (all ones for negative d): branch-
  // free, and xsimd 8.1 has no integer abs on every architecture.
  const auto abs16 = [](batch_i16 d) noexcept {
    const batch_i16 s = d >> 15;
    return (d ^ s) - s;
  };
  batch_u32 acc(0u);
  batch_i16 xe, xo, ye, yo;
  std::size_t i = 0;
  for (; i + i8_step <= n; i += i8_step) {
    load_i8_pair(a + i, xe, xo);
    load_i8_pair(b + i, ye, yo);
    acc += sum_u16_halves(abs16(xe - ye)) + sum_u16_halves(abs16(xo - yo));
  }
  auto sum = static_cast<std::int32_t>(::xsimd::hadd(acc));
  for (; i < n; ++i) {
    const std::int32_t d = std::int32_t{a[i]} - b[i];
    sum += d < 0 ? -d : d;
  }
  return sum;
}

[[nodiscard]] inline float cosine_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  std::int32_t ab = 0, aa = 0, bb = 0;
  i8_products<true, true, true>(a, b, n, &ab, &aa, &bb);
  return distance_detail::cosine_from_sums(ab, aa, bb);
}

inline void cosine_many_i8(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                           std::size_t row_stride, float* out) noexcept {
  std::int32_t qq = 0;
  i8_products<false, true, false>(query, query, n, nullptr, &qq, nullptr);
  for (std::size_t r = 0; r < row_count; ++r) {
    std::int32_t ab = 0, bb = 0;
    i8_products<true, false, true>(query, rows + r * row_stride, n, &ab, nullptr, &bb);
    out[r] = distance_detail::cosine_from_sums(ab, qq, bb);
  }
}

// ------------------------------------------------------------------ hamming

/// Per-byte popcounts (0..8) of each 64-bit lane.
inline batch_u64 byte_popcounts(batch_u64 x) noexcept {
  x = x - ((x >> 1) & batch_u64(0x5555'5555'5555'5555ull));
  x = (x & batch_u64(0x3333'3333'3333'3333ull)) + ((x >> 2) & batch_u64(0x3333'3333'3333'3333ull));
  return (x + (x >> 4)) & batch_u64(0x0F0F'0F0F'0F0F'0F0Full);
}

/// Sum of the eight bytes of each 64-bit lane.
inline batch_u64 sum_bytes(batch_u64 x) noexcept {
  x = (x & batch_u64(0x00FF'00FF'00FF'00FFull)) + ((x >> 8) & batch_u64(0x00FF'00FF'00FF'00FFull));
  x = (x & batch_u64(0x0000'FFFF'0000'FFFFull)) + ((x >> 16) & batch_u64(0x0000'FFFF'0000'FFFFull));
  return (x & batch_u64(0xFFFF'FFFFull)) + (x >> 32);
}

[[nodiscard]] inline std::uint64_t hamming(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) noexcept {
  constexpr std::size_t word_lanes = batch_u64::size;
  // A byte count grows by at most 8 per step: 31 steps stay below 256.
  constexpr std::size_t steps_per_block = 31;
  const std::size_t full = words - words % word_lanes;
  batch_u64 total(0ull);
  std::size_t i = 0;
  while (i < full) {
    const std::size_t block_end = full - i > steps_per_block * word_lanes ? i + steps_per_block * word_lanes : full;
    batch_u64 counts(0ull);
    for (; i < block_end; i += word_lanes)
      counts += byte_popcounts(batch_u64::load_unaligned(a + i) ^ batch_u64::load_unaligned(b + i));
    total += sum_bytes(counts);
  }
  std::uint64_t sum = ::xsimd::hadd(total);
  for (; i < words; ++i) sum += static_cast<std::uint64_t>(std::popcount(a[i] ^ b[i]));
  return sum;
}

}  // namespace distance_impl
}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct distance_ops<backend::xsimd> {
  // ---- dot
  /// Dot product of two f32 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float dot(const float* a, const float* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::dot(a, b, n);
  }
  /// Dot product of two f16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float dot(const f16* a, const f16* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::dot(a, b, n);
  }
  /// Dot product of two bf16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float dot(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::dot(a, b, n);
  }
  /// Dot product of two int8 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static std::int32_t dot(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_dot_max_length);
    return xsimd_impl::distance_impl::dot_i8(a, b, n);
  }
  // ---- l2sq
  /// Squared Euclidean distance of two f32 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l2sq(const float* a, const float* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::l2sq(a, b, n);
  }
  /// Squared Euclidean distance of two f16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l2sq(const f16* a, const f16* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::l2sq(a, b, n);
  }
  /// Squared Euclidean distance of two bf16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l2sq(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::l2sq(a, b, n);
  }
  /// Squared Euclidean distance of two int8 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static std::int32_t l2sq(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_l2sq_max_length);
    return xsimd_impl::distance_impl::l2sq_i8(a, b, n);
  }
  // ---- l1
  /// Manhattan distance of two f32 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l1(const float* a, const float* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::l1(a, b, n);
  }
  /// Manhattan distance of two f16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l1(const f16* a, const f16* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::l1(a, b, n);
  }
  /// Manhattan distance of two bf16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l1(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::l1(a, b, n);
  }
  /// Manhattan distance of two int8 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static std::int32_t l1(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_l1_max_length);
    return xsimd_impl::distance_impl::l1_i8(a, b, n);
  }
  // ---- cosine
  /// Cosine similarity of two f32 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float cosine(const float* a, const float* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::cosine(a, b, n);
  }
  /// Cosine similarity of two f16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float cosine(const f16* a, const f16* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::cosine(a, b, n);
  }
  /// Cosine similarity of two bf16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float cosine(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return xsimd_impl::distance_impl::cosine(a, b, n);
  }
  /// Cosine similarity of two int8 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float cosine(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_dot_max_length);
    return xsimd_impl::distance_impl::cosine_i8(a, b, n);
  }
  // ---- dot_many
  /// dot of a f32 query against each of row_count rows, row_stride elements apart.
  static void dot_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                       std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::dot(query, rows + r * row_stride, n);
  }
  /// dot of a f16 query against each of row_count rows, row_stride elements apart.
  static void dot_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                       float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::dot(query, rows + r * row_stride, n);
  }
  /// dot of a bf16 query against each of row_count rows, row_stride elements apart.
  static void dot_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count,
                       std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::dot(query, rows + r * row_stride, n);
  }
  /// dot of a int8 query against each of row_count rows, row_stride elements apart.
  static void dot_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                       std::size_t row_stride, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_dot_max_length);
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::dot_i8(query, rows + r * row_stride, n);
  }
  // ---- l2sq_many
  /// l2sq of a f32 query against each of row_count rows, row_stride elements apart.
  static void l2sq_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::l2sq(query, rows + r * row_stride, n);
  }
  /// l2sq of a f16 query against each of row_count rows, row_stride elements apart.
  static void l2sq_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                        float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::l2sq(query, rows + r * row_stride, n);
  }
  /// l2sq of a bf16 query against each of row_count rows, row_stride elements apart.
  static void l2sq_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::l2sq(query, rows + r * row_stride, n);
  }
  /// l2sq of a int8 query against each of row_count rows, row_stride elements apart.
  static void l2sq_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_l2sq_max_length);
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::l2sq_i8(query, rows + r * row_stride, n);
  }
  // ---- l1_many
  /// l1 of a f32 query against each of row_count rows, row_stride elements apart.
  static void l1_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                      std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::l1(query, rows + r * row_stride, n);
  }
  /// l1 of a f16 query against each of row_count rows, row_stride elements apart.
  static void l1_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                      float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::l1(query, rows + r * row_stride, n);
  }
  /// l1 of a bf16 query against each of row_count rows, row_stride elements apart.
  static void l1_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                      float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::l1(query, rows + r * row_stride, n);
  }
  /// l1 of a int8 query against each of row_count rows, row_stride elements apart.
  static void l1_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                      std::size_t row_stride, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_l1_max_length);
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::l1_i8(query, rows + r * row_stride, n);
  }
  // ---- cosine_many
  /// cosine of a f32 query against each of row_count rows, row_stride elements apart.
  static void cosine_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    xsimd_impl::distance_impl::cosine_many(query, rows, n, row_count, row_stride, out);
  }
  /// cosine of a f16 query against each of row_count rows, row_stride elements apart.
  static void cosine_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    xsimd_impl::distance_impl::cosine_many(query, rows, n, row_count, row_stride, out);
  }
  /// cosine of a bf16 query against each of row_count rows, row_stride elements apart.
  static void cosine_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    xsimd_impl::distance_impl::cosine_many(query, rows, n, row_count, row_stride, out);
  }
  /// cosine of a int8 query against each of row_count rows, row_stride elements apart.
  static void cosine_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_dot_max_length);
    xsimd_impl::distance_impl::cosine_many_i8(query, rows, n, row_count, row_stride, out);
  }

  // ---- hamming over std::uint64_t words
  /// Number of differing bits of `words` 64-bit words.
  [[nodiscard]] static std::uint64_t hamming(const std::uint64_t* a, const std::uint64_t* b,
                                             std::size_t words) noexcept {
    return xsimd_impl::distance_impl::hamming(a, b, words);
  }
  /// Hamming distance of query against each of row_count rows, row_stride words apart.
  static void hamming_many(const std::uint64_t* query, const std::uint64_t* rows, std::size_t words,
                           std::size_t row_count, std::size_t row_stride, std::uint64_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(words, row_count, row_stride));
    for (std::size_t r = 0; r < row_count; ++r)
      out[r] = xsimd_impl::distance_impl::hamming(query, rows + r * row_stride, words);
  }
  // ---- dot_gather
  /// dot of a f32 query against each row rows[r].
  static void dot_gather(const float* query, const float* const* rows, std::size_t n, std::size_t row_count,
                         float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::dot(query, rows[r], n);
  }
  /// dot of a f16 query against each row rows[r].
  static void dot_gather(const f16* query, const f16* const* rows, std::size_t n, std::size_t row_count,
                         float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::dot(query, rows[r], n);
  }
  /// dot of a bf16 query against each row rows[r].
  static void dot_gather(const bf16* query, const bf16* const* rows, std::size_t n, std::size_t row_count,
                         float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::dot(query, rows[r], n);
  }
  /// dot of a i8 query against each row rows[r].
  static void dot_gather(const std::int8_t* query, const std::int8_t* const* rows, std::size_t n, std::size_t row_count,
                         std::int32_t* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || (rows != nullptr && n <= int8_dot_max_length));
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::dot_i8(query, rows[r], n);
  }
  // ---- l2sq_gather
  /// l2sq of a f32 query against each row rows[r].
  static void l2sq_gather(const float* query, const float* const* rows, std::size_t n, std::size_t row_count,
                          float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::l2sq(query, rows[r], n);
  }
  /// l2sq of a f16 query against each row rows[r].
  static void l2sq_gather(const f16* query, const f16* const* rows, std::size_t n, std::size_t row_count,
                          float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::l2sq(query, rows[r], n);
  }
  /// l2sq of a bf16 query against each row rows[r].
  static void l2sq_gather(const bf16* query, const bf16* const* rows, std::size_t n, std::size_t row_count,
                          float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::l2sq(query, rows[r], n);
  }
  /// l2sq of a i8 query against each row rows[r].
  static void l2sq_gather(const std::int8_t* query, const std::int8_t* const* rows, std::size_t n,
                          std::size_t row_count, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || (rows != nullptr && n <= int8_l2sq_max_length));
    for (std::size_t r = 0; r < row_count; ++r) out[r] = xsimd_impl::distance_impl::l2sq_i8(query, rows[r], n);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_DISTANCE_HPP
