#ifndef RUVLLM_KERNELS_SCALAR_QUANT_HPP
#define RUVLLM_KERNELS_SCALAR_QUANT_HPP

// Scalar reference for the quant kernel family: GGUF block formats (Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, and Q8_K
// for activations),
// f16/bf16 rows, and the dot
// products of a quantized weight row with quantized activations. Every SIMD
// backend is tested against these functions, so they favour the obvious loop
// and spell out ggml's arithmetic (formats and rounding read from ggml's
// ggml-quants.c; the code is ours).
//
// Conventions shared by every entry point:
//  * n counts elements and must be a multiple of the format's block size
//    (32 for Q8_0 and Q4_0-Q5_1, 256 for the K-quants); RUVLLM_ASSERT checks it in
//    debug builds. The *_checked wrappers (quant_checked below) validate it at
//    API boundaries and return ruvllm::result instead.
//  * Nothing allocates; outputs are written in full, never read.
//  * Inputs to quantizers must be finite. The f16 block scales of Q8_0/Q4_0/
//    Q4_K/Q6_K overflow (become inf) once a block's largest magnitude exceeds
//    what the format can scale to (about 8.3e6 for Q8_0, 5.2e5 for Q4_0, 6e7
//    for Q4_K, 2.6e8 for Q6_K), exactly as in ggml; the checked wrappers report
//    that instead of returning such blocks.
//
// Bit compatibility with ggml's reference quantizers (quantize_row_*_ref):
//  * Q8_0: d = amax / 127, q = roundf(x * (1/d)) (ties away from zero), the
//    scale stored as f16 of the unrounded d. Same bytes as ggml.
//  * Q4_0: d = m / -8 where m is the first element of largest magnitude,
//    q = min(15, trunc(x * (1/d) + 8.5)). Same bytes as ggml; an all-zero
//    block therefore stores d = -0 (0x8000) and nibbles 8, as ggml does.
//  * Q8_K: iscale = -127 / m, q = min(127, nearest_int(iscale * x)),
//    d = 1 / iscale, bsums = sums of 16 quants. Same bytes as ggml, and bsums
//    are also written for all-zero blocks (ggml leaves them unset).
//  * Q5_0: as Q4_0 with d = m / -16 and q = min(31, trunc(x / d + 16.5)).
//    Q4_1 / Q5_1: d = (max - min) / 15 or 31, m = min, q = trunc((x - min)
//    / d + 0.5). Same bytes as ggml.
//  * IQ4_NL: the search of llama.cpp's quantizer (quantize_iq4_nl without
//    an importance matrix): x^2-weighted least squares over 15 scales
//    around max / -127, each element the nearest table value, then
//    requantization against the unrounded scale. IQ4_XS: the same fit per
//    32-element sub-block, its scale stored as a 6-bit multiple of
//    -max / 32 (quantize_iq4_xs). Bytes agree with ggml as for the
//    K-quants below.
//  * Q2_K / Q3_K / Q4_K / Q5_K / Q6_K: ggml's reference search
//    (make_qkx2_quants with weights av_x + |x| for Q4_K and Q5_K, with
//    weights |x| and absolute residuals for Q2_K; make_q3_quants' refinement
//    for Q3_K; make_qx_quants with weights x^2 for Q6_K), then the
//    same scale packing and requantization, so the error is that of ggml's
//    reference quantizer. Bytes agree with ggml when both are compiled
//    without fused multiply-add contraction; they are not promised to.
//  * Where ggml's arithmetic is undefined (1/d overflowing for blocks whose
//    magnitudes are all below ~3.7e-37, a float-to-int8 conversion of inf or
//    NaN), these functions write the quants of zero (q = 0, or nibble 8) with
//    ggml's scale, which is then 0 or a denormal that f16 rounds to 0.
//
// Dequantizers are ggml's formulas (Q4_1 / Q5_1: x = d*q + m; Q2_K / Q4_K /
// Q5_K: x = d*sc*q - dmin*m; Q3_K / Q6_K: x = d*sc*q); every product
// involved is exact
// in float, so the results are ggml's bit for bit however a compiler
// contracts or reorders them.
//
// Dot products follow llama.cpp's generic CPU code: exact int32 sums of
// quant products per block (K-quants: per super-block, weighted by the 4-, 6-
// or 8-bit sub-block scales, with Q2_K's, Q4_K's and Q5_K's min term from
// the activation bsums), then one float multiply-accumulate per block; Q4_1 /
// Q5_1 add m_w d_a sum(a) per block, which llama.cpp takes from its Q8_1
// activations' f16 d_a sum(a) (we keep Q8_0 activations for every 32-element
// format, so that term can differ from llama.cpp's by the f16 rounding).
// Activation quants must lie in [-127, 127], which every activation
// quantizer here guarantees (-128 is excluded because SIMD backends take |a|
// of it).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/core/precision.hpp"

namespace ruvllm::kernels {

/// Quant entry points of backend B (one specialization per backend), reached
/// through kernels::ops<B>.
template <Backend B>
struct quant_ops;

/// Four consecutive Q8_0 activation blocks (128 values), laid out once per
/// product so that every weight row reads them with whole 64-byte loads: the
/// row kernels of Q8_0 and Q4_0 weights take activations in this form
/// (quantize_q8_0_quads / pack_q8_0_quads make it). Chunk j (bytes 16j ..
/// 16j + 15 of lo and hi, int32 lanes 4j .. 4j + 3 of the rest) belongs to
/// block j of the four:
///  * lo / hi: values 0-15 / 16-31 of block j -- the order in which a Q4_0
///    block's low / high nibbles hold its elements, so a nibble unpack lines
///    up with them without shuffles;
///  * neg8_sum / neg128_sum: lane 4j holds -8 / -128 times the sum of block
///    j's values, the other three lanes 0. An unsigned-times-signed byte dot
///    (VPDPBUSD) starts from these: Q4_0's nibbles q give sum(q a) - 8 sum(a),
///    and Q8_0's w + 128 (w XOR 0x80) give sum(w a) + 128 sum(a);
///  * d: block j's scale (as float) in all four lanes 4j .. 4j + 3.
/// A product over n values uses ceil(n / 128) quads; the blocks past n / 32 in
/// the last quad are zero (values, sums and scales), so they add nothing.
struct alignas(64) q8_0_quad {
  std::int8_t lo[64];
  std::int8_t hi[64];
  std::int32_t neg8_sum[16];
  std::int32_t neg128_sum[16];
  float d[16];
};
static_assert(sizeof(q8_0_quad) == 320);

/// Quads holding n activation values (n % 32 == 0).
[[nodiscard]] constexpr std::size_t q8_0_quads(std::size_t n) noexcept { return (n / 32 + 3) / 4; }

namespace scalar {

namespace quant_detail {

inline constexpr std::size_t qk8_0 = precision::q8_0::block_size;
inline constexpr std::size_t qk4_0 = precision::q4_0::block_size;
inline constexpr std::size_t qk5_0 = precision::q5_0::block_size;

/// Largest |x| ggml's nearest_int is defined for (its magic-number trick
/// needs |x| < 2^22).
inline constexpr float nearest_int_limit = 4194303.0f;

/// ggml's nearest_int: round to nearest, ties to even (in the default
/// rounding mode). Saturates at ±(2^22 - 1) and maps NaN to 0 where ggml's
/// trick is undefined; every caller clamps to a narrower range afterwards.
/// The clamp also keeps a compiler from fusing a caller's x = a * b into the
/// addition below, which would round differently.
[[nodiscard]] inline int nearest_int(float x) noexcept {
  if (!(x == x)) return 0;
  x = x > nearest_int_limit ? nearest_int_limit : (x < -nearest_int_limit ? -nearest_int_limit : x);
  // Adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits.
  const float shifted = x + 12582912.0f;
  std::uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return static_cast<int>(bits & 0x007F'FFFFu) - 0x0040'0000;
}

/// The first of x[0..n) with the largest magnitude (0 when all are zero),
/// found as ggml's strict-greater scans find it: the block's signed scale is
/// derived from it.
[[nodiscard]] inline float first_of_largest_magnitude(const float* x, std::size_t n) noexcept {
  float amax = 0.0f, max = 0.0f;
  for (std::size_t j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

/// Q4_0's quant of p = x / d: min(15, trunc(p + 8.5)). p <= 8 (1 + 2^-22)
/// for finite inputs, so clamping it to 7.5 first changes nothing (both give
/// 15) but stops a compiler from fusing p = x * id into the addition.
[[nodiscard]] inline std::uint8_t q4_0_nibble(float p) noexcept {
  p = p < 7.5f ? p : 7.5f;
  const int q = static_cast<int>(p + 8.5f);
  return static_cast<std::uint8_t>(q < 15 ? q : 15);
}

/// Q5_0's quant of p = x / d: min(31, trunc(p + 16.5)), ggml's rule; the
/// clamp to 15.5 changes nothing (both give 31) but stops a compiler from
/// fusing p = x * id into the addition, as in q4_0_nibble.
[[nodiscard]] inline std::uint8_t q5_0_quant(float p) noexcept {
  p = p < 15.5f ? p : 15.5f;
  const int q = static_cast<int>(p + 16.5f);
  return static_cast<std::uint8_t>(q < 31 ? q : 31);
}

/// The fifth bits of a Q5_0 or Q5_1 block (bit j for element j).
template <class Block>
[[nodiscard]] inline std::uint32_t q5_high_bits(const Block& b) noexcept {
  return static_cast<std::uint32_t>(b.qh[0]) | (static_cast<std::uint32_t>(b.qh[1]) << 8) |
         (static_cast<std::uint32_t>(b.qh[2]) << 16) | (static_cast<std::uint32_t>(b.qh[3]) << 24);
}

/// The 5-bit Q5_0 or Q5_1 quant (0..31) of element j (0..31).
template <class Block>
[[nodiscard]] inline int q5_quant_of(const Block& b, std::size_t j) noexcept {
  const unsigned low = j < 16 ? (b.qs[j] & 0x0Fu) : (b.qs[j - 16] >> 4);
  return static_cast<int>(low | (((q5_high_bits(b) >> j) & 1u) << 4));
}

/// The 4-bit Q4_1 quant (0..15) of element j (0..31).
[[nodiscard]] inline int q4_1_quant_of(const block_q4_1& b, std::size_t j) noexcept {
  return static_cast<int>(j < 16 ? (b.qs[j] & 0x0Fu) : (b.qs[j - 16] >> 4));
}
/// The quant of element j of a block with a minimum (Q4_1, Q5_1).
[[nodiscard]] inline int quant_of(const block_q4_1& b, std::size_t j) noexcept { return q4_1_quant_of(b, j); }
[[nodiscard]] inline int quant_of(const block_q5_1& b, std::size_t j) noexcept { return q5_quant_of(b, j); }

/// Packs 32 quants in [0, 31] into a Q5_0 or Q5_1 block's qs and qh.
template <class Block>
inline void q5_pack(const std::uint8_t* q, Block& out) noexcept {
  std::uint32_t high = 0;
  for (std::size_t j = 0; j < 16; ++j) {
    out.qs[j] = static_cast<std::uint8_t>((q[j] & 0x0Fu) | ((q[j + 16] & 0x0Fu) << 4));
    high |= static_cast<std::uint32_t>(q[j] >> 4) << j;
    high |= static_cast<std::uint32_t>(q[j + 16] >> 4) << (j + 16);
  }
  for (std::size_t k = 0; k < 4; ++k) out.qh[k] = static_cast<std::uint8_t>(high >> (8 * k));
}

/// The 6-bit scale and min of sub-block j (0..7) of a Q4_K super-block:
/// sub-blocks 0-3 keep them in the low 6 bits of bytes j and j + 4; sub-blocks
/// 4-7 keep their low 4 bits in byte j + 4 and their top 2 bits in the top
/// bits of bytes j - 4 (scale) and j (min).
inline void q4_k_scale_min(const std::uint8_t* scales, std::size_t j, std::uint8_t& sc, std::uint8_t& m) noexcept {
  if (j < 4) {
    sc = scales[j] & 63u;
    m = scales[j + 4] & 63u;
  } else {
    sc = static_cast<std::uint8_t>((scales[j + 4] & 0x0Fu) | ((scales[j - 4] >> 6) << 4));
    m = static_cast<std::uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

/// Unpacks all eight scales and mins of a Q4_K or Q5_K super-block (the
/// same packing).
template <class Block>
inline void k_scales_mins(const Block& b, std::uint8_t* sc, std::uint8_t* m) noexcept {
  for (std::size_t j = 0; j < 8; ++j) q4_k_scale_min(b.scales, j, sc[j], m[j]);
}
/// The 4-bit Q4_K quant (0..15) of element e (0..255): within each group of
/// 64 elements, the low nibbles of 32 qs bytes hold elements 0-31 and the
/// high nibbles 32-63.
[[nodiscard]] inline int k_quant(const block_q4_k& b, std::size_t e) noexcept {
  const std::size_t g = e / 64, h = (e / 32) % 2, l = e % 32;
  return static_cast<int>((b.qs[32 * g + l] >> (4 * h)) & 0x0Fu);
}

/// The 5-bit Q5_K quant (0..31) of element e (0..255): within each group of
/// 64 elements, the low nibbles of 32 qs bytes hold elements 0-31 and the
/// high nibbles 32-63, as in Q4_K; the fifth bit of element 64g + 32h + l
/// is bit 2g + h of qh[l].
[[nodiscard]] inline int k_quant(const block_q5_k& b, std::size_t e) noexcept {
  const std::size_t g = e / 64, h = (e / 32) % 2, l = e % 32;
  const unsigned low = (b.qs[32 * g + l] >> (4 * h)) & 0x0Fu;
  const unsigned high = (b.qh[l] >> (2 * g + h)) & 1u;
  return static_cast<int>(low | (high << 4));
}

/// The 6-bit Q6_K quant (0..63) of element e (0..255) of a super-block: the
/// low 4 bits sit in ql, the high 2 in qh; each 128-element half uses 64 ql
/// bytes (elements l and l+64 share byte l, l+32 and l+96 share byte l+32) and
/// 32 qh bytes (bits 0-1, 2-3, 4-5, 6-7 for l, l+32, l+64, l+96).
[[nodiscard]] inline int q6_k_quant(const block_q6_k& b, std::size_t e) noexcept {
  const std::size_t half = e / 128, r = e % 128, group = r / 32, l = r % 32;
  const std::uint8_t low_byte = b.ql[half * 64 + l + (group & 1u) * 32];
  const unsigned low = (group < 2) ? (low_byte & 0x0Fu) : (low_byte >> 4);
  const unsigned high = (b.qh[half * 32 + l] >> (2 * group)) & 3u;
  return static_cast<int>(low | (high << 4));
}

/// The 2-bit quant (0..3) of element e (0..255) in a Q2_K or Q3_K
/// super-block's qs: each 128-element half packs element 32k + l into bits
/// 2k and 2k + 1 of byte l of its 32 bytes.
[[nodiscard]] inline int two_bit_quant(const std::uint8_t* qs, std::size_t e) noexcept {
  const std::size_t half = e / 128, k = (e % 128) / 32, l = e % 32;
  return (qs[32 * half + l] >> (2 * k)) & 3;
}

/// The Q2_K quant (0..3) of element e (0..255).
[[nodiscard]] inline int k_quant(const block_q2_k& b, std::size_t e) noexcept { return two_bit_quant(b.qs, e); }

/// The 3-bit Q3_K quant (0..7; the value is q - 4) of element e (0..255):
/// two bits from qs, the third from bit e / 32 of hmask[e % 32].
[[nodiscard]] inline int k_quant(const block_q3_k& b, std::size_t e) noexcept {
  return two_bit_quant(b.qs, e) | (((b.hmask[e % 32] >> (e / 32)) & 1) << 2);
}

/// The signed scale (-32..31) of Q3_K sub-block j (0..15): low four bits
/// from nibble j / 8 of scales[j % 8], top two from bits 2 (j / 4) of
/// scales[8 + j % 4].
[[nodiscard]] inline int q3_k_scale(const std::uint8_t* scales, std::size_t j) noexcept {
  const int low = (scales[j % 8] >> (4 * (j / 8))) & 0x0F;
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

/// ggml's best_index_int8 over iq4_nl_values: the index of the table value
/// nearest to v, ties to the larger. Comparing 2v with the sums of
/// neighbouring values keeps the midpoints exact; NaN gives index 0.
[[nodiscard]] inline std::uint8_t nearest_iq4_nl_index(float v) noexcept {
  const float twice = v + v;
  std::size_t index = 0;
  for (std::size_t step = 8; step > 0; step /= 2) {
    const std::size_t j = index + step;
    if (twice >= static_cast<float>(iq4_nl_values[j - 1] + iq4_nl_values[j])) index = j;
  }
  return static_cast<std::uint8_t>(index);
}

/// The table value (-127..113) of element j (0..31) of an IQ4_NL block.
[[nodiscard]] inline int iq4_nl_value(const block_iq4_nl& b, std::size_t j) noexcept {
  return iq4_nl_values[(b.qs[j % 16] >> (4 * (j / 16))) & 0x0F];
}

/// The signed scale (-32..31) of IQ4_XS sub-block j (0..7): low four bits
/// from nibble j % 2 of scales_l[j / 2], top two from bits 2j of scales_h.
[[nodiscard]] inline int iq4_xs_scale(const block_iq4_xs& b, std::size_t j) noexcept {
  const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F;
  const int high = (b.scales_h >> (2 * j)) & 3;
  return (low | (high << 4)) - 32;
}

/// The table value (-127..113) of element e (0..255) of an IQ4_XS super-block.
[[nodiscard]] inline int iq4_xs_value(const block_iq4_xs& b, std::size_t e) noexcept {
  return iq4_nl_values[(b.qs[16 * (e / 32) + e % 16] >> (4 * ((e / 16) % 2))) & 0x0F];
}

/// Packs 256 quants in [0, 3] into a Q2_K or Q3_K qs (see two_bit_quant).
inline void pack_two_bit(const std::uint8_t* L, std::uint8_t* qs) noexcept {
  for (std::size_t half = 0; half < 2; ++half) {
    const std::uint8_t* q = L + 128 * half;
    for (std::size_t l = 0; l < 32; ++l) {
      qs[32 * half + l] = static_cast<std::uint8_t>(q[l] | (q[l + 32] << 2) | (q[l + 64] << 4) | (q[l + 96] << 6));
    }
  }
}

/// How a scale search weighs a residual: squared, or absolute (ggml's
/// use_mad, which Q2_K's search takes).
enum class residual { squared, absolute };

/// ggml's make_qkx2_quants: fits x[i] ~ scale * L[i] - min with L in
/// [0, nmax] and min >= 0 by a weighted least-squares search over nstep + 1
/// candidate inverse scales; returns the scale and stores the min. L receives
/// the best quants. n <= 32.
inline float fit_scale_min(std::size_t n, int nmax, const float* x, const float* w, std::uint8_t* L, float& the_min,
                           float rmin, float rdelta, int nstep, residual norm = residual::squared) noexcept {
  const auto error_of = [norm](float diff) { return norm == residual::absolute ? std::fabs(diff) : diff * diff; };
  float min = x[0], max = x[0];
  float sum_w = 0.0f, sum_x = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    for (std::size_t i = 0; i < n; ++i) L[i] = 0;
    the_min = -min;
    return 0.0f;
  }
  const auto quant = [nmax](float v) { return static_cast<std::uint8_t>(std::clamp(nearest_int(v), 0, nmax)); };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    L[i] = quant(iscale * (x[i] - min));
    best_error += w[i] * error_of(scale * static_cast<float>(L[i]) + min - x[i]);
  }
  std::uint8_t trial[32];
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
      trial[i] = quant(iscale * (x[i] - min));
      const float l = static_cast<float>(trial[i]);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0.0f)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0.0f) {
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
      error += w[i] * error_of(this_scale * static_cast<float>(trial[i]) + this_min - x[i]);
    }
    if (error < best_error) {
      std::copy(trial, trial + n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  the_min = -min;
  return scale;
}

/// ggml's make_qx_quants with x^2 weights (rmse_type 1): symmetric quants
/// L in [0, 2 nmax) (stored with the +nmax offset) and the least-squares
/// scale, searched over 19 inverse scales around -nmax / m. n <= 16.
inline float fit_symmetric_scale(std::size_t n, int nmax, const float* x, std::int8_t* L) noexcept {
  float max = 0.0f, amax = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < 1e-15f) {  // ggml's GROUP_MAX_EPS: treat as all zero
    for (std::size_t i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const auto quant = [nmax](float v) { return std::clamp(nearest_int(v), -nmax, nmax - 1); };
  float iscale = -static_cast<float>(nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const int l = quant(iscale * x[i]);
    L[i] = static_cast<std::int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    sumlx = suml2 = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
      const int l = quant(iscale * x[i]);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      for (std::size_t i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(quant(iscale * x[i]) + nmax);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

/// ggml's make_q3_quants with its rmse refinement: symmetric quants L in
/// [0, 2 nmax) (stored with the +nmax offset) starting from the scale
/// -nmax / m (m the first element of largest magnitude), then up to five
/// passes that move single quants where that raises the x^2-weighted fit;
/// returns the least-squares scale. The expressions keep ggml's order of
/// float operations.
inline float fit_refined_symmetric_scale(std::size_t n, int nmax, const float* x, std::int8_t* L) noexcept {
  const float max = first_of_largest_magnitude(x, n);
  if (std::fabs(max) < 1e-15f) {  // ggml's GROUP_MAX_EPS: treat as all zero
    for (std::size_t i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const auto quant = [nmax](float v) { return std::clamp(nearest_int(v), -nmax, nmax - 1); };
  const float iscale = -static_cast<float>(nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const int l = quant(iscale * x[i]);
    L[i] = static_cast<std::int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const auto old_l = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * old_l;
      if (!(slx > 0.0f)) continue;
      float sl2 = suml2 - w * old_l * old_l;
      const int new_l = quant(x[i] * sl2 / slx);
      if (new_l == L[i]) continue;
      slx += w * x[i] * static_cast<float>(new_l);
      sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
      if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<std::int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (std::size_t i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/// Row r of a weight matrix whose rows start row_stride bytes apart.
template <class Block>
[[nodiscard]] inline const Block* row_at(const Block* w, std::size_t row_stride, std::size_t r) noexcept {
  return reinterpret_cast<const Block*>(reinterpret_cast<const unsigned char*>(w) + r * row_stride);
}

/// The prefill form of a rows kernel, token by token: y[t * y_stride + r] =
/// rows_of's result for row r and token t, whose activations are the
/// per_token blocks (or quads) at a + t * per_token. The GEMM of every
/// backend and target without a tile kernel of its own; a tile kernel must
/// give the same bits.
template <class W, class A, class Rows>
inline void gemm_by_rows(Rows rows_of, const W* w, std::size_t row_stride, std::size_t rows, const A* a,
                         std::size_t per_token, std::size_t tokens, std::size_t n, float* y,
                         std::size_t y_stride) noexcept {
  for (std::size_t t = 0; t < tokens; ++t) rows_of(w, row_stride, rows, a + t * per_token, n, y + t * y_stride);
}

}  // namespace quant_detail

// ---------------------------------------------------------------- quantizers

/// f32 -> Q8_0, byte-identical to ggml's quantize_row_q8_0_ref (see the file
/// comment); n % 32 == 0.
inline void quantize_q8_0(const float* x, block_q8_0* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk8_0 == 0);
  for (std::size_t b = 0; b < n / quant_detail::qk8_0; ++b, x += quant_detail::qk8_0) {
    float amax = 0.0f;
    for (std::size_t j = 0; j < quant_detail::qk8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = to_f16(d);
    const bool usable = std::fabs(id) <= std::numeric_limits<float>::max();
    for (std::size_t j = 0; j < quant_detail::qk8_0; ++j) {
      // A NaN product (a NaN value, or an infinite one, whose block has id
      // 0) quantizes to 0, where ggml's cast of it is undefined.
      const float p = x[j] * id;
      y[b].qs[j] = usable && p == p ? static_cast<std::int8_t>(std::round(p)) : std::int8_t{0};
    }
  }
}

/// f32 -> Q4_0, byte-identical to ggml's quantize_row_q4_0_ref; n % 32 == 0.
inline void quantize_q4_0(const float* x, block_q4_0* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk4_0 == 0);
  for (std::size_t b = 0; b < n / quant_detail::qk4_0; ++b, x += quant_detail::qk4_0) {
    const float d = quant_detail::first_of_largest_magnitude(x, quant_detail::qk4_0) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = to_f16(d);
    const bool usable = std::fabs(id) <= std::numeric_limits<float>::max();
    for (std::size_t j = 0; j < 16; ++j) {
      const std::uint8_t lo = usable ? quant_detail::q4_0_nibble(x[j] * id) : std::uint8_t{8};
      const std::uint8_t hi = usable ? quant_detail::q4_0_nibble(x[j + 16] * id) : std::uint8_t{8};
      y[b].qs[j] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
  }
}

/// f32 -> Q5_0, byte-identical to ggml's quantize_row_q5_0_ref: d = max /
/// -16 where max is the first element of largest magnitude, q = min(31,
/// trunc(x / d + 16.5)). n % 32 == 0.
inline void quantize_q5_0(const float* x, block_q5_0* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk5_0 == 0);
  for (std::size_t b = 0; b < n / quant_detail::qk5_0; ++b, x += quant_detail::qk5_0) {
    const float d = quant_detail::first_of_largest_magnitude(x, quant_detail::qk5_0) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = to_f16(d);
    const bool usable = std::fabs(id) <= std::numeric_limits<float>::max();
    std::uint8_t q[32];
    for (std::size_t j = 0; j < 32; ++j) q[j] = usable ? quant_detail::q5_0_quant(x[j] * id) : std::uint8_t{16};
    quant_detail::q5_pack(q, y[b]);
  }
}

namespace quant_detail {

/// ggml's Q4_1 / Q5_1 reference rule for one block of 32: d = (max - min) /
/// top, m = min, q = trunc((x - min) / d + 0.5), at most top in exact
/// arithmetic and clamped there so a rounding past it cannot wrap. Stores d
/// and m; the quants go to q.
template <class Block>
inline void quantize_min_block(const float* x, int top, Block& out, std::uint8_t* q) noexcept {
  const auto [lowest, highest] = std::minmax_element(x, x + 32);
  const float min = *lowest, d = (*highest - min) / static_cast<float>(top);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  out.d = to_f16(d);
  out.m = to_f16(min);
  const bool usable = std::fabs(id) <= std::numeric_limits<float>::max();
  for (std::size_t j = 0; j < 32; ++j) {
    const float p = usable ? (x[j] - min) * id : 0.0f;
    const int l = static_cast<int>(std::min(p, static_cast<float>(top)) + 0.5f);
    q[j] = static_cast<std::uint8_t>(std::min(l, top));
  }
}

}  // namespace quant_detail

/// f32 -> Q4_1, byte-identical to ggml's quantize_row_q4_1_ref (d = (max -
/// min) / 15, see quantize_min_block). n % 32 == 0.
inline void quantize_q4_1(const float* x, block_q4_1* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk4_0 == 0);
  for (std::size_t b = 0; b < n / quant_detail::qk4_0; ++b, x += quant_detail::qk4_0) {
    std::uint8_t q[32];
    quant_detail::quantize_min_block(x, 15, y[b], q);
    for (std::size_t j = 0; j < 16; ++j) y[b].qs[j] = static_cast<std::uint8_t>(q[j] | (q[j + 16] << 4));
  }
}

/// f32 -> Q5_1, byte-identical to ggml's quantize_row_q5_1_ref (d = (max -
/// min) / 31, see quantize_min_block). n % 32 == 0.
inline void quantize_q5_1(const float* x, block_q5_1* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk5_0 == 0);
  for (std::size_t b = 0; b < n / quant_detail::qk5_0; ++b, x += quant_detail::qk5_0) {
    std::uint8_t q[32];
    quant_detail::quantize_min_block(x, 31, y[b], q);
    quant_detail::q5_pack(q, y[b]);
  }
}

/// f32 -> Q8_K (activations for the K-quant dots), byte-identical to ggml's
/// quantize_row_q8_K_ref, bsums included; n % 256 == 0.
inline void quantize_q8_k(const float* x, block_q8_k* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b, x += qk_k) {
    const float max = quant_detail::first_of_largest_magnitude(x, qk_k);
    block_q8_k& out = y[b];
    if (max == 0.0f) {
      out.d = 0.0f;
      std::memset(out.qs, 0, sizeof out.qs);
      std::memset(out.bsums, 0, sizeof out.bsums);
      continue;
    }
    const float iscale = -127.0f / max;
    out.d = 1.0f / iscale;
    if (!(std::fabs(iscale) <= std::numeric_limits<float>::max())) {  // |max| < ~3.7e-37
      std::memset(out.qs, 0, sizeof out.qs);
      std::memset(out.bsums, 0, sizeof out.bsums);
      continue;
    }
    for (std::size_t j = 0; j < qk_k; ++j) {
      out.qs[j] = static_cast<std::int8_t>(std::min(127, quant_detail::nearest_int(iscale * x[j])));
    }
    for (std::size_t g = 0; g < qk_k / 16; ++g) {
      int sum = 0;
      for (std::size_t j = 0; j < 16; ++j) sum += out.qs[16 * g + j];
      out.bsums[g] = static_cast<std::int16_t>(sum);
    }
  }
}

namespace quant_detail {

/// The part ggml's Q4_K and Q5_K reference quantizers share: per 32-element
/// sub-block a weighted scale/min fit to quants in [0, nmax] (ggml's
/// make_qkx2_quants with the format's search parameters), the eight 6-bit
/// scales and mins packed into `scales` relative to the two f16 super-block
/// scales d and dmin, then each sub-block requantized against the stored
/// scales into L (a sub-block whose stored scale is zero keeps the fit's
/// quants, as ggml does).
template <class Block>
inline void quantize_k_scales_mins(const float* x, Block& out, std::uint8_t* L, int nmax, float rmin,
                                   int nstep) noexcept {
  float weights[32], scales[8], mins[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (std::size_t j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0.0f;
    for (std::size_t l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32.0f);
    for (std::size_t l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = fit_scale_min(32, nmax, xs, weights, L + 32 * j, mins[j], rmin, 0.1f, nstep);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  std::memset(out.scales, 0, sizeof out.scales);
  for (std::size_t j = 0; j < 8; ++j) {
    // ggml stores the int in a uint8_t first; a (never observed) negative
    // scale would wrap there, so clamp both ends instead.
    const auto ls = static_cast<std::uint8_t>(std::clamp(nearest_int(inv_scale * scales[j]), 0, 63));
    const auto lm = static_cast<std::uint8_t>(std::clamp(nearest_int(inv_min * mins[j]), 0, 63));
    if (j < 4) {
      out.scales[j] = ls;
      out.scales[j + 4] = lm;
    } else {
      out.scales[j + 4] = static_cast<std::uint8_t>((ls & 0x0Fu) | ((lm & 0x0Fu) << 4));
      out.scales[j - 4] = static_cast<std::uint8_t>(out.scales[j - 4] | ((ls >> 4) << 6));
      out.scales[j] = static_cast<std::uint8_t>(out.scales[j] | ((lm >> 4) << 6));
    }
  }
  out.d = to_f16(max_scale / 63.0f);
  out.dmin = to_f16(max_min / 63.0f);
  const float d = to_float(out.d), dmin = to_float(out.dmin);
  for (std::size_t j = 0; j < 8; ++j) {
    std::uint8_t sc, m;
    q4_k_scale_min(out.scales, j, sc, m);
    const float ds = d * static_cast<float>(sc);
    if (ds == 0.0f) continue;
    const float dm = dmin * static_cast<float>(m);
    for (std::size_t l = 0; l < 32; ++l) {
      L[32 * j + l] = static_cast<std::uint8_t>(std::clamp(nearest_int((x[32 * j + l] + dm) / ds), 0, nmax));
    }
  }
}

}  // namespace quant_detail

/// f32 -> Q4_K with ggml's reference search (quantize_row_q4_K_ref): per
/// 32-element sub-block a weighted scale/min fit, 6-bit scales and mins
/// relative to two f16 super-block scales, then requantization against the
/// stored scales. Not a hot path (weights are quantized offline); every
/// backend runs this function. n % 256 == 0.
inline void quantize_q4_k(const float* x, block_q4_k* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b, x += qk_k) {
    std::uint8_t L[qk_k];
    block_q4_k& out = y[b];
    quant_detail::quantize_k_scales_mins(x, out, L, 15, -1.0f, 20);
    for (std::size_t g = 0; g < 4; ++g) {
      for (std::size_t l = 0; l < 32; ++l) {
        out.qs[32 * g + l] = static_cast<std::uint8_t>(L[64 * g + l] | (L[64 * g + 32 + l] << 4));
      }
    }
  }
}

/// f32 -> Q5_K with ggml's reference search (quantize_row_q5_K_ref): Q4_K's
/// fit with 32 levels (and ggml's Q5_K search parameters), the fifth bits
/// into qh. Not a hot path; every backend runs this function. n % 256 == 0.
inline void quantize_q5_k(const float* x, block_q5_k* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b, x += qk_k) {
    std::uint8_t L[qk_k];
    block_q5_k& out = y[b];
    quant_detail::quantize_k_scales_mins(x, out, L, 31, -0.5f, 15);
    std::memset(out.qh, 0, sizeof out.qh);
    for (std::size_t g = 0; g < 4; ++g) {
      for (std::size_t l = 0; l < 32; ++l) {
        const std::uint8_t lo = L[64 * g + l], hi = L[64 * g + 32 + l];
        out.qs[32 * g + l] = static_cast<std::uint8_t>((lo & 0x0Fu) | ((hi & 0x0Fu) << 4));
        out.qh[l] = static_cast<std::uint8_t>(out.qh[l] | ((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
      }
    }
  }
}

/// f32 -> Q6_K with ggml's reference search (quantize_row_q6_K_ref): per
/// 16-element sub-block a symmetric x^2-weighted scale fit, int8 scales
/// relative to one f16 super-block scale, then requantization. Not a hot
/// path; every backend runs this function. n % 256 == 0.
inline void quantize_q6_k(const float* x, block_q6_k* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b, x += qk_k) {
    std::int8_t L[qk_k];
    float scales[qk_k / 16];
    for (std::size_t g = 0; g < qk_k / 16; ++g)
      scales[g] = quant_detail::fit_symmetric_scale(16, 32, x + 16 * g, L + 16 * g);
    const float max_scale = quant_detail::first_of_largest_magnitude(scales, qk_k / 16);
    block_q6_k& out = y[b];
    if (std::fabs(max_scale) < 1e-15f) {
      std::memset(&out, 0, sizeof out);
      continue;
    }
    const float iscale = -128.0f / max_scale;
    out.d = to_f16(1.0f / iscale);
    for (std::size_t g = 0; g < qk_k / 16; ++g) {
      out.scales[g] = static_cast<std::int8_t>(std::min(127, quant_detail::nearest_int(iscale * scales[g])));
    }
    const float d = to_float(out.d);
    for (std::size_t g = 0; g < qk_k / 16; ++g) {
      const float ds = d * static_cast<float>(out.scales[g]);
      if (ds == 0.0f) continue;  // keep the fit's quants, as ggml does
      for (std::size_t l = 0; l < 16; ++l) {
        L[16 * g + l] =
            static_cast<std::int8_t>(std::clamp(quant_detail::nearest_int(x[16 * g + l] / ds), -32, 31) + 32);
      }
    }
    for (std::size_t half = 0; half < 2; ++half) {
      const std::int8_t* q = L + 128 * half;
      std::uint8_t* ql = out.ql + 64 * half;
      std::uint8_t* qh = out.qh + 32 * half;
      for (std::size_t l = 0; l < 32; ++l) {
        const auto u = [&](std::size_t e) { return static_cast<unsigned>(q[e]); };
        ql[l] = static_cast<std::uint8_t>((u(l) & 0x0Fu) | ((u(l + 64) & 0x0Fu) << 4));
        ql[l + 32] = static_cast<std::uint8_t>((u(l + 32) & 0x0Fu) | ((u(l + 96) & 0x0Fu) << 4));
        qh[l] = static_cast<std::uint8_t>((u(l) >> 4) | ((u(l + 32) >> 4) << 2) | ((u(l + 64) >> 4) << 4) |
                                          ((u(l + 96) >> 4) << 6));
      }
    }
  }
}

namespace quant_detail {

/// The scale of llama.cpp's IQ4_NL search for the 32 values at x (the first
/// stage of quantize_row_iq4_nl_impl, no importance matrix): weights x^2 and
/// the scale d = sum(w q x) / sum(w q^2) of the best of 16 fits (table
/// indices nearest x / d for d = max / 127, then for the inverse scales
/// (k - 127) / max, k = -7..7, max the first element of largest magnitude);
/// 0 for blocks below ggml's GROUP_MAX_EPS.
[[nodiscard]] inline float fit_iq4_nl_scale(const float* x) noexcept {
  const float max = first_of_largest_magnitude(x, 32);
  if (std::fabs(max) < 1e-15f) return 0.0f;
  // The fit of the indices nearest x * id: sum(w q x) and sum(w q^2).
  const auto fit = [x](float id, float& sumqx, float& sumq2) {
    sumqx = sumq2 = 0.0f;
    for (std::size_t j = 0; j < 32; ++j) {
      const auto q = static_cast<float>(iq4_nl_values[nearest_iq4_nl_index(id * x[j])]);
      const float w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
  };
  float sumqx, sumq2;
  fit(1.0f / (-max / static_cast<float>(iq4_nl_values[0])), sumqx, sumq2);
  float d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int step = -7; step <= 7; ++step) {
    fit(static_cast<float>(step + iq4_nl_values[0]) / max, sumqx, sumq2);
    if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

/// The 16 bytes of table indices nearest x * id for 32 values (element j
/// in the low nibble of byte j, j + 16 in the high).
inline void pack_iq4_nl_indices(const float* x, float id, std::uint8_t* qs) noexcept {
  for (std::size_t j = 0; j < 16; ++j)
    qs[j] = static_cast<std::uint8_t>(nearest_iq4_nl_index(id * x[j]) | (nearest_iq4_nl_index(id * x[j + 16]) << 4));
}

}  // namespace quant_detail

/// f32 -> IQ4_NL with the search of llama.cpp's quantizer (quantize_iq4_nl,
/// no importance matrix): per block the scale of fit_iq4_nl_scale, then the
/// indices nearest x / d for that d, stored with d as f16. Blocks below
/// ggml's GROUP_MAX_EPS store d = 0 and index 8 (the value nearest 0). Not
/// a hot path; every backend runs this function. n % 32 == 0.
inline void quantize_iq4_nl(const float* x, block_iq4_nl* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % 32 == 0);
  for (std::size_t b = 0; b < n / 32; ++b, x += 32) {
    const float d = quant_detail::fit_iq4_nl_scale(x);
    y[b].d = to_f16(d);
    quant_detail::pack_iq4_nl_indices(x, d != 0.0f ? 1.0f / d : 0.0f, y[b].qs);
  }
}

/// f32 -> IQ4_XS with the search of llama.cpp's quantizer (quantize_iq4_xs,
/// no importance matrix): each sub-block of 32 takes fit_iq4_nl_scale's
/// scale, which is then stored as a 6-bit multiple l in [-32, 31] of the
/// super-block scale d = -m / 32 (m the first sub-block scale of largest
/// magnitude); the indices are those nearest x / (d l), with d unrounded
/// as in ggml. An all-zero super-block stores d = -0 (0x8000), l = 0 and
/// index 8, as ggml does. Not a hot path; every backend runs this function.
/// n % 256 == 0.
inline void quantize_iq4_xs(const float* x, block_iq4_xs* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b, x += qk_k) {
    float scales[qk_k / 32];
    for (std::size_t j = 0; j < qk_k / 32; ++j) scales[j] = quant_detail::fit_iq4_nl_scale(x + 32 * j);
    const float d = -quant_detail::first_of_largest_magnitude(scales, qk_k / 32) / 32.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block_iq4_xs& out = y[b];
    out.d = to_f16(d);
    out.scales_h = 0;
    std::memset(out.scales_l, 0, sizeof out.scales_l);
    for (std::size_t j = 0; j < qk_k / 32; ++j) {
      const int l = std::clamp(quant_detail::nearest_int(id * scales[j]), -32, 31);
      const float dl = d * static_cast<float>(l);
      quant_detail::pack_iq4_nl_indices(x + 32 * j, dl != 0.0f ? 1.0f / dl : 0.0f, out.qs + 16 * j);
      const auto stored = static_cast<unsigned>(l + 32);
      out.scales_l[j / 2] = static_cast<std::uint8_t>(out.scales_l[j / 2] | ((stored & 0x0Fu) << (4 * (j % 2))));
      out.scales_h = static_cast<std::uint16_t>(out.scales_h | ((stored >> 4) << (2 * j)));
    }
  }
}

/// f32 -> Q2_K with ggml's reference search (quantize_row_q2_K_ref): per
/// 16-element sub-block a |x|-weighted scale/min fit to quants in [0, 3]
/// (absolute residuals), 4-bit scales and mins relative to two f16
/// super-block scales, then requantization against the stored scales. Not a
/// hot path; every backend runs this function. n % 256 == 0.
inline void quantize_q2_k(const float* x, block_q2_k* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  using quant_detail::nearest_int;
  for (std::size_t b = 0; b < n / qk_k; ++b, x += qk_k) {
    std::uint8_t L[qk_k];
    float weights[16], scales[qk_k / 16], mins[qk_k / 16];
    float max_scale = 0.0f, max_min = 0.0f;
    for (std::size_t j = 0; j < qk_k / 16; ++j) {
      for (std::size_t l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = quant_detail::fit_scale_min(16, 3, x + 16 * j, weights, L + 16 * j, mins[j], -0.5f, 0.1f, 15,
                                              quant_detail::residual::absolute);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    block_q2_k& out = y[b];
    // ggml stores the ints in uint8_t; a (never observed) negative or
    // oversized level would wrap or spill into the other nibble there, so
    // both are clamped to [0, 15].
    const auto level = [](float v) { return static_cast<std::uint8_t>(std::clamp(nearest_int(v), 0, 15)); };
    const float inv_scale = max_scale > 0.0f ? 15.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 15.0f / max_min : 0.0f;
    for (std::size_t j = 0; j < qk_k / 16; ++j) {
      out.scales[j] = static_cast<std::uint8_t>(level(inv_scale * scales[j]) | (level(inv_min * mins[j]) << 4));
    }
    out.d = to_f16(max_scale > 0.0f ? max_scale / 15.0f : 0.0f);
    out.dmin = to_f16(max_min > 0.0f ? max_min / 15.0f : 0.0f);
    const float d = to_float(out.d), dmin = to_float(out.dmin);
    for (std::size_t j = 0; j < qk_k / 16; ++j) {
      const float ds = d * static_cast<float>(out.scales[j] & 0x0F);
      if (ds == 0.0f) continue;  // keep the fit's quants, as ggml does
      const float dm = dmin * static_cast<float>(out.scales[j] >> 4);
      for (std::size_t l = 0; l < 16; ++l) {
        L[16 * j + l] = static_cast<std::uint8_t>(std::clamp(nearest_int((x[16 * j + l] + dm) / ds), 0, 3));
      }
    }
    quant_detail::pack_two_bit(L, out.qs);
  }
}

/// f32 -> Q3_K with ggml's reference search (quantize_row_q3_K_ref): per
/// 16-element sub-block a refined symmetric x^2-weighted fit to quants in
/// [-4, 3], 6-bit signed scales relative to one f16 super-block scale, then
/// requantization. Not a hot path; every backend runs this function.
/// n % 256 == 0.
inline void quantize_q3_k(const float* x, block_q3_k* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  using quant_detail::nearest_int;
  for (std::size_t b = 0; b < n / qk_k; ++b, x += qk_k) {
    std::int8_t L[qk_k];
    float scales[qk_k / 16];
    for (std::size_t j = 0; j < qk_k / 16; ++j)
      scales[j] = quant_detail::fit_refined_symmetric_scale(16, 4, x + 16 * j, L + 16 * j);
    const float max_scale = quant_detail::first_of_largest_magnitude(scales, qk_k / 16);
    block_q3_k& out = y[b];
    std::memset(out.scales, 0, sizeof out.scales);
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (std::size_t j = 0; j < qk_k / 16; ++j) {
        const int l = std::clamp(nearest_int(iscale * scales[j]), -32, 31) + 32;
        out.scales[j % 8] = static_cast<std::uint8_t>(out.scales[j % 8] | ((l & 0x0F) << (4 * (j / 8))));
        out.scales[8 + j % 4] = static_cast<std::uint8_t>(out.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      out.d = to_f16(1.0f / iscale);
    } else {
      out.d = to_f16(0.0f);
    }
    const float d = to_float(out.d);
    for (std::size_t j = 0; j < qk_k / 16; ++j) {
      const float ds = d * static_cast<float>(quant_detail::q3_k_scale(out.scales, j));
      if (ds == 0.0f) continue;  // keep the fit's quants, as ggml does
      for (std::size_t l = 0; l < 16; ++l) {
        L[16 * j + l] = static_cast<std::int8_t>(std::clamp(nearest_int(x[16 * j + l] / ds), -4, 3) + 4);
      }
    }
    std::uint8_t low[qk_k];
    std::memset(out.hmask, 0, sizeof out.hmask);
    for (std::size_t e = 0; e < qk_k; ++e) {
      const auto q = static_cast<unsigned>(L[e]);
      out.hmask[e % 32] = static_cast<std::uint8_t>(out.hmask[e % 32] | ((q >> 2) << (e / 32)));
      low[e] = static_cast<std::uint8_t>(q & 3u);
    }
    quant_detail::pack_two_bit(low, out.qs);
  }
}

// -------------------------------------------------------------- dequantizers

/// Q8_0 -> f32: x = d * q. n % 32 == 0.
inline void dequantize_q8_0(const block_q8_0* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk8_0 == 0);
  for (std::size_t b = 0; b < n / quant_detail::qk8_0; ++b) {
    const float d = to_float(x[b].d);
    for (std::size_t j = 0; j < quant_detail::qk8_0; ++j) *y++ = static_cast<float>(x[b].qs[j]) * d;
  }
}

/// Q4_0 -> f32: x = d * (q - 8). n % 32 == 0.
inline void dequantize_q4_0(const block_q4_0* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk4_0 == 0);
  for (std::size_t b = 0; b < n / quant_detail::qk4_0; ++b, y += quant_detail::qk4_0) {
    const float d = to_float(x[b].d);
    for (std::size_t j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((x[b].qs[j] & 0x0F) - 8) * d;
      y[j + 16] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
    }
  }
}

/// Q5_0 -> f32: x = d * (q - 16). n % 32 == 0.
inline void dequantize_q5_0(const block_q5_0* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk5_0 == 0);
  for (std::size_t b = 0; b < n / quant_detail::qk5_0; ++b, y += quant_detail::qk5_0) {
    const float d = to_float(x[b].d);
    for (std::size_t j = 0; j < 32; ++j) y[j] = static_cast<float>(quant_detail::q5_quant_of(x[b], j) - 16) * d;
  }
}

/// IQ4_NL -> f32: x = d * iq4_nl_values[q] (exact). n % 32 == 0.
inline void dequantize_iq4_nl(const block_iq4_nl* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % 32 == 0);
  for (std::size_t b = 0; b < n / 32; ++b, y += 32) {
    const float d = to_float(x[b].d);
    for (std::size_t j = 0; j < 32; ++j) y[j] = d * static_cast<float>(quant_detail::iq4_nl_value(x[b], j));
  }
}

namespace quant_detail {
/// Q4_1 / Q5_1 -> f32, ggml's formula: x = q * d + m (q * d exact).
template <class Block>
inline void dequantize_min_blocks(const Block* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % 32 == 0);
  for (std::size_t b = 0; b < n / 32; ++b, y += 32) {
    const float d = to_float(x[b].d), m = to_float(x[b].m);
    for (std::size_t j = 0; j < 32; ++j) y[j] = static_cast<float>(quant_of(x[b], j)) * d + m;
  }
}
}  // namespace quant_detail

/// Q4_1 -> f32: x = q * d + m. n % 32 == 0.
inline void dequantize_q4_1(const block_q4_1* x, float* y, std::size_t n) noexcept {
  quant_detail::dequantize_min_blocks(x, y, n);
}
/// Q5_1 -> f32: x = q * d + m. n % 32 == 0.
inline void dequantize_q5_1(const block_q5_1* x, float* y, std::size_t n) noexcept {
  quant_detail::dequantize_min_blocks(x, y, n);
}

/// Q4_K -> f32, ggml's formula exactly: x = (d*sc) * q - (dmin*m). n % 256 == 0.
inline void dequantize_q4_k(const block_q4_k* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    const float d = to_float(x[b].d), dmin = to_float(x[b].dmin);
    std::uint8_t sc[8], m[8];
    quant_detail::k_scales_mins(x[b], sc, m);
    for (std::size_t g = 0; g < 4; ++g) {
      const std::uint8_t* q = x[b].qs + 32 * g;
      const float d1 = d * static_cast<float>(sc[2 * g]), m1 = dmin * static_cast<float>(m[2 * g]);
      const float d2 = d * static_cast<float>(sc[2 * g + 1]), m2 = dmin * static_cast<float>(m[2 * g + 1]);
      for (std::size_t l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (std::size_t l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

/// Q5_K -> f32, ggml's formula exactly: x = (d*sc) * q - (dmin*m). n % 256 == 0.
inline void dequantize_q5_k(const block_q5_k* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    const float d = to_float(x[b].d), dmin = to_float(x[b].dmin);
    std::uint8_t sc[8], m[8];
    quant_detail::k_scales_mins(x[b], sc, m);
    for (std::size_t e = 0; e < qk_k; ++e) {
      *y++ = d * static_cast<float>(sc[e / 32]) * static_cast<float>(quant_detail::k_quant(x[b], e)) -
             dmin * static_cast<float>(m[e / 32]);
    }
  }
}

/// Q2_K -> f32, ggml's formula exactly: x = (d*sc) * q - (dmin*m). n % 256 == 0.
inline void dequantize_q2_k(const block_q2_k* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    const float d = to_float(x[b].d), dmin = to_float(x[b].dmin);
    for (std::size_t e = 0; e < qk_k; ++e) {
      const std::uint8_t sc = x[b].scales[e / 16];
      *y++ = d * static_cast<float>(sc & 0x0F) * static_cast<float>(quant_detail::k_quant(x[b], e)) -
             dmin * static_cast<float>(sc >> 4);
    }
  }
}

/// Q3_K -> f32, ggml's formula: x = (d * sc) * (q - 4). n % 256 == 0.
inline void dequantize_q3_k(const block_q3_k* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    const float d = to_float(x[b].d);
    for (std::size_t e = 0; e < qk_k; ++e) {
      *y++ = d * static_cast<float>(quant_detail::q3_k_scale(x[b].scales, e / 16)) *
             static_cast<float>(quant_detail::k_quant(x[b], e) - 4);
    }
  }
}

/// IQ4_XS -> f32, ggml's formula: x = (d * (ls - 32)) * value (exact).
/// n % 256 == 0.
inline void dequantize_iq4_xs(const block_iq4_xs* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    const float d = to_float(x[b].d);
    for (std::size_t e = 0; e < qk_k; ++e) {
      *y++ = d * static_cast<float>(quant_detail::iq4_xs_scale(x[b], e / 32)) *
             static_cast<float>(quant_detail::iq4_xs_value(x[b], e));
    }
  }
}

/// Q6_K -> f32, ggml's formula: x = (d * sc) * (q - 32). n % 256 == 0.
inline void dequantize_q6_k(const block_q6_k* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    const float d = to_float(x[b].d);
    for (std::size_t e = 0; e < qk_k; ++e) {
      *y++ = d * static_cast<float>(x[b].scales[e / 16]) * static_cast<float>(quant_detail::q6_k_quant(x[b], e) - 32);
    }
  }
}

/// Q8_K -> f32: x = d * q. n % 256 == 0.
inline void dequantize_q8_k(const block_q8_k* x, float* y, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    for (std::size_t j = 0; j < qk_k; ++j) *y++ = x[b].d * static_cast<float>(x[b].qs[j]);
  }
}

// ------------------------------------------------------ f16 / bf16 rows

/// f32 -> f16 row with ruvllm::to_f16 (ties to even; see core/half.hpp).
inline void convert_f32_to_f16(const float* x, f16* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = to_f16(x[i]);
}
/// f16 -> f32 row (exact).
inline void convert_f16_to_f32(const f16* x, float* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = to_float(x[i]);
}
/// f32 -> bf16 row with ruvllm::to_bf16 (ties to even, denormals to ±0).
inline void convert_f32_to_bf16(const float* x, bf16* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = to_bf16(x[i]);
}
/// bf16 -> f32 row (exact).
inline void convert_bf16_to_f32(const bf16* x, float* y, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = to_float(x[i]);
}

// -------------------------------------------------------------- dot products

/// Q8_0 weights . Q8_0 activations (ggml_vec_dot_q8_0_q8_0): per block the
/// exact int sum of q_w * q_a, then sum += sumi * (d_w * d_a). n % 32 == 0.
[[nodiscard]] inline float dot_q8_0_q8_0(const block_q8_0* w, const block_q8_0* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk8_0 == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / quant_detail::qk8_0; ++b) {
    int sumi = 0;
    for (std::size_t j = 0; j < quant_detail::qk8_0; ++j) sumi += w[b].qs[j] * a[b].qs[j];
    sum += static_cast<float>(sumi) * (to_float(w[b].d) * to_float(a[b].d));
  }
  return sum;
}

/// Q4_0 weights . Q8_0 activations (ggml_vec_dot_q4_0_q8_0): per block the
/// exact int sum of (q_w - 8) * q_a, then sum += sumi * d_w * d_a. n % 32 == 0.
[[nodiscard]] inline float dot_q4_0_q8_0(const block_q4_0* w, const block_q8_0* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk4_0 == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / quant_detail::qk4_0; ++b) {
    int sumi = 0;
    for (std::size_t j = 0; j < 16; ++j) {
      sumi += ((w[b].qs[j] & 0x0F) - 8) * a[b].qs[j];
      sumi += ((w[b].qs[j] >> 4) - 8) * a[b].qs[j + 16];
    }
    sum += static_cast<float>(sumi) * to_float(w[b].d) * to_float(a[b].d);
  }
  return sum;
}

namespace quant_detail {

/// The signed integer weight of element j: Q5_0's q - 16, IQ4_NL's table value.
[[nodiscard]] inline int signed_value(const block_q5_0& b, std::size_t j) noexcept { return q5_quant_of(b, j) - 16; }
[[nodiscard]] inline int signed_value(const block_iq4_nl& b, std::size_t j) noexcept { return iq4_nl_value(b, j); }

/// One Q5_0 or IQ4_NL block's dot with 32 activation quants of scale d_a:
/// the exact int sum of value * q_a times (d_w * d_a), the product of the
/// scales rounded first as ggml does.
template <class Block>
[[nodiscard]] inline float value_block_dot(const Block& w, const std::int8_t* qs, float d_a) noexcept {
  int sumi = 0;
  for (std::size_t j = 0; j < 32; ++j) sumi += signed_value(w, j) * qs[j];
  return static_cast<float>(sumi) * (to_float(w.d) * d_a);
}

/// The sum of value_block_dot over the blocks.
template <class Block>
[[nodiscard]] inline float value_dot(const Block* w, const block_q8_0* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % 32 == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) sum += value_block_dot(w[b], a[b].qs, to_float(a[b].d));
  return sum;
}

}  // namespace quant_detail

/// Q5_0 weights . Q8_0 activations (ggml_vec_dot_q5_0_q8_0): per block the
/// exact int sum of (q_w - 16) * q_a, then sum += sumi * (d_w * d_a), the
/// product of the scales rounded first as ggml does. n % 32 == 0.
[[nodiscard]] inline float dot_q5_0_q8_0(const block_q5_0* w, const block_q8_0* a, std::size_t n) noexcept {
  return quant_detail::value_dot(w, a, n);
}

/// IQ4_NL weights . Q8_0 activations (ggml_vec_dot_iq4_nl_q8_0): as Q5_0's,
/// over the table values. n % 32 == 0.
[[nodiscard]] inline float dot_iq4_nl_q8_0(const block_iq4_nl* w, const block_q8_0* a, std::size_t n) noexcept {
  return quant_detail::value_dot(w, a, n);
}

namespace quant_detail {

/// One Q4_1 or Q5_1 block's dot with 32 activation quants of scale d_a:
/// the exact sums of q * a and of a, then (d_w d_a) * sum(q a) + (m_w d_a)
/// * sum(a), each factor's product rounded once (ggml's dots with Q8_1
/// activations take m_w times that block's f16 d_a * sum(a) instead).
template <class Block>
[[nodiscard]] inline float min_block_dot(const Block& w, const std::int8_t* a, float d_a) noexcept {
  int sumi = 0, sum_a = 0;
  for (std::size_t j = 0; j < 32; ++j) {
    sumi += quant_of(w, j) * a[j];
    sum_a += a[j];
  }
  return static_cast<float>(sumi) * (to_float(w.d) * d_a) + static_cast<float>(sum_a) * (to_float(w.m) * d_a);
}

/// The sum of min_block_dot over the blocks, with Q8_0 blocks or quads.
template <class Block>
[[nodiscard]] inline float min_dot(const Block* w, const block_q8_0* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % 32 == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) sum += min_block_dot(w[b], a[b].qs, to_float(a[b].d));
  return sum;
}

}  // namespace quant_detail

/// Q4_1 weights . Q8_0 activations (see min_block_dot). n % 32 == 0.
[[nodiscard]] inline float dot_q4_1_q8_0(const block_q4_1* w, const block_q8_0* a, std::size_t n) noexcept {
  return quant_detail::min_dot(w, a, n);
}
/// Q5_1 weights . Q8_0 activations (see min_block_dot). n % 32 == 0.
[[nodiscard]] inline float dot_q5_1_q8_0(const block_q5_1* w, const block_q8_0* a, std::size_t n) noexcept {
  return quant_detail::min_dot(w, a, n);
}

namespace quant_detail {

/// The exact integer parts of one Q4_K or Q5_K . Q8_K super-block: sum over
/// sub-blocks of sc_j * sum(q * q_a), and sum of m_j times the activation sums
/// of sub-block j (from bsums).
struct k_block_sums {
  std::int32_t scaled;
  std::int32_t mins;
};

template <class Block>
[[nodiscard]] inline k_block_sums k_q8_k_sums(const Block& w, const block_q8_k& a) noexcept {
  std::uint8_t sc[8], m[8];
  k_scales_mins(w, sc, m);
  k_block_sums s{0, 0};
  for (std::size_t j = 0; j < 8; ++j) {
    s.mins += m[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
    int sum = 0;
    for (std::size_t l = 0; l < 32; ++l) sum += k_quant(w, 32 * j + l) * a.qs[32 * j + l];
    s.scaled += sc[j] * sum;
  }
  return s;
}

/// Q2_K's integer parts: as Q4_K's over 16 sub-blocks of 16, whose mins
/// pair with one activation block sum each.
[[nodiscard]] inline k_block_sums k_q8_k_sums(const block_q2_k& w, const block_q8_k& a) noexcept {
  k_block_sums s{0, 0};
  for (std::size_t j = 0; j < qk_k / 16; ++j) {
    s.mins += (w.scales[j] >> 4) * a.bsums[j];
    int sum = 0;
    for (std::size_t l = 0; l < 16; ++l) sum += k_quant(w, 16 * j + l) * a.qs[16 * j + l];
    s.scaled += (w.scales[j] & 0x0F) * sum;
  }
  return s;
}

/// The exact integer sum of one Q3_K or Q6_K . Q8_K super-block: over the
/// 16-element sub-blocks, sc_g * sum((q - bias) * q_a) with the signed
/// sub-block scale sc_g and the format's bias (4 or 32).
[[nodiscard]] inline std::int32_t k_q8_k_sum(const block_q3_k& w, const block_q8_k& a) noexcept {
  std::int32_t total = 0;
  for (std::size_t g = 0; g < qk_k / 16; ++g) {
    int sum = 0;
    for (std::size_t l = 0; l < 16; ++l) sum += (k_quant(w, 16 * g + l) - 4) * a.qs[16 * g + l];
    total += q3_k_scale(w.scales, g) * sum;
  }
  return total;
}
/// IQ4_XS's: over the 32-element sub-blocks, (ls - 32) * sum(value * q_a);
/// at most 8 * 32 * 32 * 127 * 128 in magnitude, well inside int32.
[[nodiscard]] inline std::int32_t k_q8_k_sum(const block_iq4_xs& w, const block_q8_k& a) noexcept {
  std::int32_t total = 0;
  for (std::size_t j = 0; j < qk_k / 32; ++j) {
    int sum = 0;
    for (std::size_t l = 0; l < 32; ++l) sum += iq4_xs_value(w, 32 * j + l) * a.qs[32 * j + l];
    total += iq4_xs_scale(w, j) * sum;
  }
  return total;
}
[[nodiscard]] inline std::int32_t k_q8_k_sum(const block_q6_k& w, const block_q8_k& a) noexcept {
  std::int32_t total = 0;
  for (std::size_t g = 0; g < qk_k / 16; ++g) {
    int sum = 0;
    for (std::size_t l = 0; l < 16; ++l) sum += (q6_k_quant(w, 16 * g + l) - 32) * a.qs[16 * g + l];
    total += w.scales[g] * sum;
  }
  return total;
}

/// The Q2_K / Q4_K / Q5_K dot from their exact integer parts: per super-block
/// sum += (d_w d_a) * scaled - (dmin_w d_a) * mins.
template <class Block>
[[nodiscard]] inline float scale_min_dot(const Block* w, const block_q8_k* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    const k_block_sums s = k_q8_k_sums(w[b], a[b]);
    const float d = to_float(w[b].d) * a[b].d;
    const float dmin = to_float(w[b].dmin) * a[b].d;
    sum += d * static_cast<float>(s.scaled) - dmin * static_cast<float>(s.mins);
  }
  return sum;
}

/// The Q3_K / Q6_K / IQ4_XS dot: per super-block sum += (d_w d_a) * (exact integer
/// sum of k_q8_k_sum).
template <class Block>
[[nodiscard]] inline float scale_dot(const Block* w, const block_q8_k* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % qk_k == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    sum += to_float(w[b].d) * a[b].d * static_cast<float>(k_q8_k_sum(w[b], a[b]));
  }
  return sum;
}

}  // namespace quant_detail

/// Q2_K weights . Q8_K activations (ggml_vec_dot_q2_K_q8_K): Q4_K's
/// expression over 16 sub-blocks of 16. n % 256 == 0.
[[nodiscard]] inline float dot_q2_k_q8_k(const block_q2_k* w, const block_q8_k* a, std::size_t n) noexcept {
  return quant_detail::scale_min_dot(w, a, n);
}

/// Q3_K weights . Q8_K activations (ggml_vec_dot_q3_K_q8_K): per super-block
/// sum += (d_w d_a) * sum over sub-blocks of sc (q - 4) q_a. n % 256 == 0.
[[nodiscard]] inline float dot_q3_k_q8_k(const block_q3_k* w, const block_q8_k* a, std::size_t n) noexcept {
  return quant_detail::scale_dot(w, a, n);
}

/// IQ4_XS weights . Q8_K activations (ggml_vec_dot_iq4_xs_q8_K, which rounds
/// per sub-block): per super-block sum += (d_w d_a) * the exact integer sum
/// over sub-blocks of (ls - 32) value q_a. n % 256 == 0.
[[nodiscard]] inline float dot_iq4_xs_q8_k(const block_iq4_xs* w, const block_q8_k* a, std::size_t n) noexcept {
  return quant_detail::scale_dot(w, a, n);
}

/// Q4_K weights . Q8_K activations (ggml_vec_dot_q4_K_q8_K), with the exact
/// integer sums above. n % 256 == 0.
[[nodiscard]] inline float dot_q4_k_q8_k(const block_q4_k* w, const block_q8_k* a, std::size_t n) noexcept {
  return quant_detail::scale_min_dot(w, a, n);
}

/// Q5_K weights . Q8_K activations (ggml_vec_dot_q5_K_q8_K): Q4_K's
/// expression over the 5-bit quants. n % 256 == 0.
[[nodiscard]] inline float dot_q5_k_q8_k(const block_q5_k* w, const block_q8_k* a, std::size_t n) noexcept {
  return quant_detail::scale_min_dot(w, a, n);
}

/// Q6_K weights . Q8_K activations (ggml_vec_dot_q6_K_q8_K): per super-block
/// sum += (d_w d_a) * (exact integer sum above). n % 256 == 0.
[[nodiscard]] inline float dot_q6_k_q8_k(const block_q6_k* w, const block_q8_k* a, std::size_t n) noexcept {
  return quant_detail::scale_dot(w, a, n);
}

/// Batch forms: out[r] = dot(row r, a) for r < rows, where row r starts
/// r * row_stride bytes after w (row_stride >= the row's bytes and a multiple
/// of the block's alignment).
inline void dot_q8_0_q8_0_rows(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q8_0_q8_0(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q4_0_q8_0_rows(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q4_0_q8_0(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_iq4_nl_q8_0_rows(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_iq4_nl_q8_0(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q5_0_q8_0_rows(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q5_0_q8_0(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q4_1_q8_0_rows(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q4_1_q8_0(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q5_1_q8_0_rows(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q5_1_q8_0(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q2_k_q8_k_rows(const block_q2_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q2_k_q8_k(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q3_k_q8_k_rows(const block_q3_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q3_k_q8_k(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_iq4_xs_q8_k_rows(const block_iq4_xs* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_iq4_xs_q8_k(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q4_k_q8_k_rows(const block_q4_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q4_k_q8_k(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q5_k_q8_k_rows(const block_q5_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q5_k_q8_k(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q6_k_q8_k_rows(const block_q6_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q6_k_q8_k(quant_detail::row_at(w, row_stride, r), a, n);
}

// ------------------------------------------------ Q8_0 activations as quads

/// Lays out n / 32 Q8_0 blocks as q8_0_quads(n) quads (see q8_0_quad).
inline void pack_q8_0_quads(const block_q8_0* a, std::size_t n, q8_0_quad* out) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk8_0 == 0);
  const std::size_t nb = n / quant_detail::qk8_0;
  for (std::size_t q = 0; q < q8_0_quads(n); ++q) {
    q8_0_quad& o = out[q];
    o = q8_0_quad{};
    for (std::size_t j = 0; j < 4 && 4 * q + j < nb; ++j) {
      const block_q8_0& b = a[4 * q + j];
      std::int32_t sum = 0;
      for (std::size_t i = 0; i < 16; ++i) {
        o.lo[16 * j + i] = b.qs[i];
        o.hi[16 * j + i] = b.qs[16 + i];
        sum += b.qs[i] + b.qs[16 + i];
      }
      o.neg8_sum[4 * j] = -8 * sum;
      o.neg128_sum[4 * j] = -128 * sum;
      for (std::size_t i = 0; i < 4; ++i) o.d[4 * j + i] = to_float(b.d);
    }
  }
}

/// f32 -> Q8_0 quads: the blocks of quantize_q8_0 (ggml's bytes), laid out
/// by pack_q8_0_quads; n % 32 == 0.
inline void quantize_q8_0_quads(const float* x, q8_0_quad* out, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk8_0 == 0);
  block_q8_0 blocks[4];
  for (std::size_t q = 0; q < q8_0_quads(n); ++q) {
    const std::size_t count = std::min<std::size_t>(4, n / quant_detail::qk8_0 - 4 * q);
    quantize_q8_0(x + 128 * q, blocks, count * quant_detail::qk8_0);
    pack_q8_0_quads(blocks, count * quant_detail::qk8_0, out + q);
  }
}

namespace quant_detail {
/// Block b of quad-laid-out activations as the values and scale of a Q8_0 block.
inline void quad_block(const q8_0_quad* a, std::size_t b, std::int8_t (&qs)[32], float& d) noexcept {
  const q8_0_quad& q = a[b / 4];
  const std::size_t j = b % 4;
  for (std::size_t i = 0; i < 16; ++i) {
    qs[i] = q.lo[16 * j + i];
    qs[16 + i] = q.hi[16 * j + i];
  }
  d = q.d[4 * j];
}
}  // namespace quant_detail

/// dot_q8_0_q8_0 with quad activations (same arithmetic, same result).
[[nodiscard]] inline float dot_q8_0_quads(const block_q8_0* w, const q8_0_quad* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk8_0 == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / quant_detail::qk8_0; ++b) {
    std::int8_t qs[32];
    float d;
    quant_detail::quad_block(a, b, qs, d);
    int sumi = 0;
    for (std::size_t j = 0; j < quant_detail::qk8_0; ++j) sumi += w[b].qs[j] * qs[j];
    sum += static_cast<float>(sumi) * (to_float(w[b].d) * d);
  }
  return sum;
}

/// dot_q4_0_q8_0 with quad activations (same arithmetic, same result).
[[nodiscard]] inline float dot_q4_0_quads(const block_q4_0* w, const q8_0_quad* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % quant_detail::qk4_0 == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / quant_detail::qk4_0; ++b) {
    std::int8_t qs[32];
    float d;
    quant_detail::quad_block(a, b, qs, d);
    int sumi = 0;
    for (std::size_t j = 0; j < 16; ++j) {
      sumi += ((w[b].qs[j] & 0x0F) - 8) * qs[j];
      sumi += ((w[b].qs[j] >> 4) - 8) * qs[j + 16];
    }
    sum += static_cast<float>(sumi) * to_float(w[b].d) * d;
  }
  return sum;
}

namespace quant_detail {
/// value_dot with quad activations (same arithmetic, same result).
template <class Block>
[[nodiscard]] inline float value_dot_quads(const Block* w, const q8_0_quad* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % 32 == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) {
    std::int8_t qs[32];
    float d;
    quad_block(a, b, qs, d);
    sum += value_block_dot(w[b], qs, d);
  }
  return sum;
}
}  // namespace quant_detail

/// dot_q5_0_q8_0 with quad activations (same arithmetic, same result).
[[nodiscard]] inline float dot_q5_0_quads(const block_q5_0* w, const q8_0_quad* a, std::size_t n) noexcept {
  return quant_detail::value_dot_quads(w, a, n);
}

/// dot_iq4_nl_q8_0 with quad activations (same arithmetic, same result).
[[nodiscard]] inline float dot_iq4_nl_quads(const block_iq4_nl* w, const q8_0_quad* a, std::size_t n) noexcept {
  return quant_detail::value_dot_quads(w, a, n);
}

namespace quant_detail {
/// min_dot with quad activations (same arithmetic, same result).
template <class Block>
[[nodiscard]] inline float min_dot_quads(const Block* w, const q8_0_quad* a, std::size_t n) noexcept {
  RUVLLM_ASSERT(n % 32 == 0);
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) {
    std::int8_t qs[32];
    float d;
    quad_block(a, b, qs, d);
    sum += min_block_dot(w[b], qs, d);
  }
  return sum;
}
}  // namespace quant_detail

/// dot_q4_1_q8_0 with quad activations (same arithmetic, same result).
[[nodiscard]] inline float dot_q4_1_quads(const block_q4_1* w, const q8_0_quad* a, std::size_t n) noexcept {
  return quant_detail::min_dot_quads(w, a, n);
}
/// dot_q5_1_q8_0 with quad activations (same arithmetic, same result).
[[nodiscard]] inline float dot_q5_1_quads(const block_q5_1* w, const q8_0_quad* a, std::size_t n) noexcept {
  return quant_detail::min_dot_quads(w, a, n);
}

/// out[r] = dot(row r, a) for r < rows with quad activations, rows as in
/// dot_q8_0_q8_0_rows.
inline void dot_q8_0_quad_rows(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q8_0_quads(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q4_0_quad_rows(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q4_0_quads(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_iq4_nl_quad_rows(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_iq4_nl_quads(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q5_0_quad_rows(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q5_0_quads(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q4_1_quad_rows(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q4_1_quads(quant_detail::row_at(w, row_stride, r), a, n);
}
inline void dot_q5_1_quad_rows(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                               std::size_t n, float* out) noexcept {
  for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q5_1_quads(quant_detail::row_at(w, row_stride, r), a, n);
}

/// The prefill form: y[t * y_stride + r] = dot(row r, token t) for r < rows
/// and t < tokens, token t's activations being the q8_0_quads(n) quads at
/// a + t * q8_0_quads(n). Each result is the rows form's for that token.
inline void gemm_q8_0_quads(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                            std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q8_0_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y, y_stride);
}
inline void gemm_q4_0_quads(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                            std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q4_0_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y, y_stride);
}
inline void gemm_iq4_nl_quads(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_iq4_nl_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y, y_stride);
}
inline void gemm_q5_0_quads(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                            std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q5_0_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y, y_stride);
}
inline void gemm_q4_1_quads(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                            std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q4_1_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y, y_stride);
}
inline void gemm_q5_1_quads(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                            std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q5_1_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y, y_stride);
}
/// The prefill form of the K-quant rows: token t's activations are the n /
/// 256 Q8_K blocks at a + t * (n / 256).
inline void gemm_q2_k_q8_k(const block_q2_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                           std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q2_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
}
inline void gemm_q3_k_q8_k(const block_q3_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                           std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q3_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
}
inline void gemm_iq4_xs_q8_k(const block_iq4_xs* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_iq4_xs_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
}
inline void gemm_q4_k_q8_k(const block_q4_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                           std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q4_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
}
inline void gemm_q5_k_q8_k(const block_q5_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                           std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q5_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
}
inline void gemm_q6_k_q8_k(const block_q6_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                           std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
  quant_detail::gemm_by_rows(dot_q6_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
}

}  // namespace scalar

namespace detail {

/// Checked, non-hot-path wrappers over a backend's quant entry points (Ops =
/// quant_ops<B>): each validates its arguments, returns ruvllm::error naming
/// the bad value and the limit, and otherwise calls the unchecked entry
/// point. Only error results allocate. On an error from a quantizer's
/// post-check (a non-finite block scale) the output has been written and must
/// be discarded.
template <class Ops>
struct quant_checked {
 private:
  static result<void> check_length(std::string_view fn, std::string_view format, std::size_t n, std::size_t block) {
    if (n % block != 0) {
      return make_error(errc::invalid_argument, fn, ": n = ", n, " is not a multiple of the ", format, " block size ",
                        block);
    }
    return {};
  }

  template <class P>
  static result<void> check_quantize(std::string_view fn, const float* x, const void* y, std::size_t n) {
    RUVLLM_TRY(check_length(fn, P::name, n, P::block_size));
    if (n != 0 && (x == nullptr || y == nullptr)) return make_error(errc::invalid_argument, fn, ": null row pointer");
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(x[i])) {
        return make_error(errc::invalid_argument, fn, ": element ", i, " = ", x[i], " is not finite");
      }
    }
    return {};
  }

  static result<void> check_scale(std::string_view fn, std::string_view format, std::size_t block, f16 scale) {
    if (!std::isfinite(to_float(scale))) {
      return make_error(errc::out_of_range, fn, ": block ", block, " needs a scale beyond the f16 range of ", format,
                        " (65504); its values are too large for this format");
    }
    return {};
  }

  template <class P, class Block>
  static result<void> check_rows(std::string_view fn, const Block* w, std::size_t row_stride, std::size_t rows,
                                 std::size_t n) {
    RUVLLM_TRY(check_length(fn, P::name, n, P::block_size));
    if (rows > 1 && row_stride < row_bytes<P>(n)) {
      return make_error(errc::invalid_argument, fn, ": row_stride = ", row_stride, " is smaller than a row of ", n,
                        " elements (", row_bytes<P>(n), " bytes)");
    }
    if (row_stride % alignof(Block) != 0) {
      return make_error(errc::invalid_argument, fn, ": row_stride = ", row_stride, " is not a multiple of ",
                        alignof(Block), " (the alignment of a ", P::name, " block)");
    }
    if (reinterpret_cast<std::uintptr_t>(w) % alignof(Block) != 0) {
      return make_error(errc::invalid_argument, fn, ": the first row is not aligned to ", alignof(Block), " bytes");
    }
    return {};
  }

 public:
  /// Ops::quantize_q8_0 after checking n % 32, finite inputs, then finite scales.
  static result<void> quantize_q8_0_checked(const float* x, block_q8_0* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q8_0>("quantize_q8_0", x, y, n));
    Ops::quantize_q8_0(x, y, n);
    for (std::size_t b = 0; b < n / 32; ++b) RUVLLM_TRY(check_scale("quantize_q8_0", "q8_0", b, y[b].d));
    return {};
  }
  /// Ops::quantize_q4_0 after checking n % 32, finite inputs, then finite scales.
  static result<void> quantize_q4_0_checked(const float* x, block_q4_0* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q4_0>("quantize_q4_0", x, y, n));
    Ops::quantize_q4_0(x, y, n);
    for (std::size_t b = 0; b < n / 32; ++b) RUVLLM_TRY(check_scale("quantize_q4_0", "q4_0", b, y[b].d));
    return {};
  }
  /// Ops::quantize_iq4_nl after checking n % 32, finite inputs, then finite scales.
  static result<void> quantize_iq4_nl_checked(const float* x, block_iq4_nl* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::iq4_nl>("quantize_iq4_nl", x, y, n));
    Ops::quantize_iq4_nl(x, y, n);
    for (std::size_t b = 0; b < n / 32; ++b) RUVLLM_TRY(check_scale("quantize_iq4_nl", "iq4_nl", b, y[b].d));
    return {};
  }
  /// Ops::quantize_q5_0 after checking n % 32, finite inputs, then finite scales.
  static result<void> quantize_q5_0_checked(const float* x, block_q5_0* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q5_0>("quantize_q5_0", x, y, n));
    Ops::quantize_q5_0(x, y, n);
    for (std::size_t b = 0; b < n / 32; ++b) RUVLLM_TRY(check_scale("quantize_q5_0", "q5_0", b, y[b].d));
    return {};
  }
  /// Ops::quantize_q4_1 after checking n % 32, finite inputs, then finite scales.
  static result<void> quantize_q4_1_checked(const float* x, block_q4_1* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q4_1>("quantize_q4_1", x, y, n));
    Ops::quantize_q4_1(x, y, n);
    for (std::size_t b = 0; b < n / 32; ++b) {
      RUVLLM_TRY(check_scale("quantize_q4_1", "q4_1", b, y[b].d));
      RUVLLM_TRY(check_scale("quantize_q4_1", "q4_1", b, y[b].m));
    }
    return {};
  }
  /// Ops::quantize_q5_1 after checking n % 32, finite inputs, then finite scales.
  static result<void> quantize_q5_1_checked(const float* x, block_q5_1* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q5_1>("quantize_q5_1", x, y, n));
    Ops::quantize_q5_1(x, y, n);
    for (std::size_t b = 0; b < n / 32; ++b) {
      RUVLLM_TRY(check_scale("quantize_q5_1", "q5_1", b, y[b].d));
      RUVLLM_TRY(check_scale("quantize_q5_1", "q5_1", b, y[b].m));
    }
    return {};
  }
  /// Ops::quantize_q2_k after checking n % 256, finite inputs, then finite scales.
  static result<void> quantize_q2_k_checked(const float* x, block_q2_k* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q2_k>("quantize_q2_k", x, y, n));
    Ops::quantize_q2_k(x, y, n);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
      RUVLLM_TRY(check_scale("quantize_q2_k", "q2_k", b, y[b].d));
      RUVLLM_TRY(check_scale("quantize_q2_k", "q2_k", b, y[b].dmin));
    }
    return {};
  }
  /// Ops::quantize_q4_k after checking n % 256, finite inputs, then finite scales.
  static result<void> quantize_q4_k_checked(const float* x, block_q4_k* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q4_k>("quantize_q4_k", x, y, n));
    Ops::quantize_q4_k(x, y, n);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
      RUVLLM_TRY(check_scale("quantize_q4_k", "q4_k", b, y[b].d));
      RUVLLM_TRY(check_scale("quantize_q4_k", "q4_k", b, y[b].dmin));
    }
    return {};
  }
  /// Ops::quantize_q5_k after checking n % 256, finite inputs, then finite scales.
  static result<void> quantize_q5_k_checked(const float* x, block_q5_k* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q5_k>("quantize_q5_k", x, y, n));
    Ops::quantize_q5_k(x, y, n);
    for (std::size_t b = 0; b < n / qk_k; ++b) {
      RUVLLM_TRY(check_scale("quantize_q5_k", "q5_k", b, y[b].d));
      RUVLLM_TRY(check_scale("quantize_q5_k", "q5_k", b, y[b].dmin));
    }
    return {};
  }
  /// Ops::quantize_q3_k after checking n % 256, finite inputs, then finite scales.
  static result<void> quantize_q3_k_checked(const float* x, block_q3_k* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q3_k>("quantize_q3_k", x, y, n));
    Ops::quantize_q3_k(x, y, n);
    for (std::size_t b = 0; b < n / qk_k; ++b) RUVLLM_TRY(check_scale("quantize_q3_k", "q3_k", b, y[b].d));
    return {};
  }
  /// Ops::quantize_iq4_xs after checking n % 256, finite inputs, then finite scales.
  static result<void> quantize_iq4_xs_checked(const float* x, block_iq4_xs* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::iq4_xs>("quantize_iq4_xs", x, y, n));
    Ops::quantize_iq4_xs(x, y, n);
    for (std::size_t b = 0; b < n / qk_k; ++b) RUVLLM_TRY(check_scale("quantize_iq4_xs", "iq4_xs", b, y[b].d));
    return {};
  }
  /// Ops::quantize_q6_k after checking n % 256, finite inputs, then finite scales.
  static result<void> quantize_q6_k_checked(const float* x, block_q6_k* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q6_k>("quantize_q6_k", x, y, n));
    Ops::quantize_q6_k(x, y, n);
    for (std::size_t b = 0; b < n / qk_k; ++b) RUVLLM_TRY(check_scale("quantize_q6_k", "q6_k", b, y[b].d));
    return {};
  }
  /// Ops::quantize_q8_k after checking n % 256 and finite inputs.
  static result<void> quantize_q8_k_checked(const float* x, block_q8_k* y, std::size_t n) {
    RUVLLM_TRY(check_quantize<precision::q8_k>("quantize_q8_k", x, y, n));
    Ops::quantize_q8_k(x, y, n);
    return {};
  }

  /// Ops::dequantize_q8_0 after checking n % 32.
  static result<void> dequantize_q8_0_checked(const block_q8_0* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q8_0", "q8_0", n, 32));
    Ops::dequantize_q8_0(x, y, n);
    return {};
  }
  /// Ops::dequantize_q4_0 after checking n % 32.
  static result<void> dequantize_q4_0_checked(const block_q4_0* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q4_0", "q4_0", n, 32));
    Ops::dequantize_q4_0(x, y, n);
    return {};
  }
  /// Ops::dequantize_iq4_nl after checking n % 32.
  static result<void> dequantize_iq4_nl_checked(const block_iq4_nl* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_iq4_nl", "iq4_nl", n, 32));
    Ops::dequantize_iq4_nl(x, y, n);
    return {};
  }
  /// Ops::dequantize_q5_0 after checking n % 32.
  static result<void> dequantize_q5_0_checked(const block_q5_0* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q5_0", "q5_0", n, 32));
    Ops::dequantize_q5_0(x, y, n);
    return {};
  }
  /// Ops::dequantize_q4_1 after checking n % 32.
  static result<void> dequantize_q4_1_checked(const block_q4_1* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q4_1", "q4_1", n, 32));
    Ops::dequantize_q4_1(x, y, n);
    return {};
  }
  /// Ops::dequantize_q5_1 after checking n % 32.
  static result<void> dequantize_q5_1_checked(const block_q5_1* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q5_1", "q5_1", n, 32));
    Ops::dequantize_q5_1(x, y, n);
    return {};
  }
  /// Ops::dequantize_q2_k after checking n % 256.
  static result<void> dequantize_q2_k_checked(const block_q2_k* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q2_k", "q2_k", n, qk_k));
    Ops::dequantize_q2_k(x, y, n);
    return {};
  }
  /// Ops::dequantize_q3_k after checking n % 256.
  static result<void> dequantize_q3_k_checked(const block_q3_k* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q3_k", "q3_k", n, qk_k));
    Ops::dequantize_q3_k(x, y, n);
    return {};
  }
  /// Ops::dequantize_iq4_xs after checking n % 256.
  static result<void> dequantize_iq4_xs_checked(const block_iq4_xs* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_iq4_xs", "iq4_xs", n, qk_k));
    Ops::dequantize_iq4_xs(x, y, n);
    return {};
  }
  /// Ops::dequantize_q4_k after checking n % 256.
  static result<void> dequantize_q4_k_checked(const block_q4_k* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q4_k", "q4_k", n, qk_k));
    Ops::dequantize_q4_k(x, y, n);
    return {};
  }
  /// Ops::dequantize_q5_k after checking n % 256.
  static result<void> dequantize_q5_k_checked(const block_q5_k* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q5_k", "q5_k", n, qk_k));
    Ops::dequantize_q5_k(x, y, n);
    return {};
  }
  /// Ops::dequantize_q6_k after checking n % 256.
  static result<void> dequantize_q6_k_checked(const block_q6_k* x, float* y, std::size_t n) {
    RUVLLM_TRY(check_length("dequantize_q6_k", "q6_k", n, qk_k));
    Ops::dequantize_q6_k(x, y, n);
    return {};
  }

  /// Ops::dot_q8_0_q8_0 after checking n % 32.
  static result<float> dot_q8_0_q8_0_checked(const block_q8_0* w, const block_q8_0* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q8_0_q8_0", "q8_0", n, 32));
    return Ops::dot_q8_0_q8_0(w, a, n);
  }
  /// Ops::dot_q4_0_q8_0 after checking n % 32.
  static result<float> dot_q4_0_q8_0_checked(const block_q4_0* w, const block_q8_0* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q4_0_q8_0", "q4_0", n, 32));
    return Ops::dot_q4_0_q8_0(w, a, n);
  }
  /// Ops::dot_iq4_nl_q8_0 after checking n % 32.
  static result<float> dot_iq4_nl_q8_0_checked(const block_iq4_nl* w, const block_q8_0* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_iq4_nl_q8_0", "iq4_nl", n, 32));
    return Ops::dot_iq4_nl_q8_0(w, a, n);
  }
  /// Ops::dot_q5_0_q8_0 after checking n % 32.
  static result<float> dot_q5_0_q8_0_checked(const block_q5_0* w, const block_q8_0* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q5_0_q8_0", "q5_0", n, 32));
    return Ops::dot_q5_0_q8_0(w, a, n);
  }
  /// Ops::dot_q4_1_q8_0 after checking n % 32.
  static result<float> dot_q4_1_q8_0_checked(const block_q4_1* w, const block_q8_0* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q4_1_q8_0", "q4_1", n, 32));
    return Ops::dot_q4_1_q8_0(w, a, n);
  }
  /// Ops::dot_q5_1_q8_0 after checking n % 32.
  static result<float> dot_q5_1_q8_0_checked(const block_q5_1* w, const block_q8_0* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q5_1_q8_0", "q5_1", n, 32));
    return Ops::dot_q5_1_q8_0(w, a, n);
  }
  /// Ops::dot_q2_k_q8_k after checking n % 256.
  static result<float> dot_q2_k_q8_k_checked(const block_q2_k* w, const block_q8_k* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q2_k_q8_k", "q2_k", n, qk_k));
    return Ops::dot_q2_k_q8_k(w, a, n);
  }
  /// Ops::dot_q3_k_q8_k after checking n % 256.
  static result<float> dot_q3_k_q8_k_checked(const block_q3_k* w, const block_q8_k* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q3_k_q8_k", "q3_k", n, qk_k));
    return Ops::dot_q3_k_q8_k(w, a, n);
  }
  /// Ops::dot_iq4_xs_q8_k after checking n % 256.
  static result<float> dot_iq4_xs_q8_k_checked(const block_iq4_xs* w, const block_q8_k* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_iq4_xs_q8_k", "iq4_xs", n, qk_k));
    return Ops::dot_iq4_xs_q8_k(w, a, n);
  }
  /// Ops::dot_q4_k_q8_k after checking n % 256.
  static result<float> dot_q4_k_q8_k_checked(const block_q4_k* w, const block_q8_k* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q4_k_q8_k", "q4_k", n, qk_k));
    return Ops::dot_q4_k_q8_k(w, a, n);
  }
  /// Ops::dot_q5_k_q8_k after checking n % 256.
  static result<float> dot_q5_k_q8_k_checked(const block_q5_k* w, const block_q8_k* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q5_k_q8_k", "q5_k", n, qk_k));
    return Ops::dot_q5_k_q8_k(w, a, n);
  }
  /// Ops::dot_q6_k_q8_k after checking n % 256.
  static result<float> dot_q6_k_q8_k_checked(const block_q6_k* w, const block_q8_k* a, std::size_t n) {
    RUVLLM_TRY(check_length("dot_q6_k_q8_k", "q6_k", n, qk_k));
    return Ops::dot_q6_k_q8_k(w, a, n);
  }

  /// Ops::dot_q8_0_q8_0_rows after checking n, the stride and the alignment.
  static result<void> dot_q8_0_q8_0_rows_checked(const block_q8_0* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_0* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q8_0>("dot_q8_0_q8_0_rows", w, row_stride, rows, n));
    Ops::dot_q8_0_q8_0_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_q4_0_q8_0_rows after checking n, the stride and the alignment.
  static result<void> dot_q4_0_q8_0_rows_checked(const block_q4_0* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_0* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q4_0>("dot_q4_0_q8_0_rows", w, row_stride, rows, n));
    Ops::dot_q4_0_q8_0_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_iq4_nl_q8_0_rows after checking n, the stride and the alignment.
  static result<void> dot_iq4_nl_q8_0_rows_checked(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows,
                                                   const block_q8_0* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::iq4_nl>("dot_iq4_nl_q8_0_rows", w, row_stride, rows, n));
    Ops::dot_iq4_nl_q8_0_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_q5_0_q8_0_rows after checking n, the stride and the alignment.
  static result<void> dot_q5_0_q8_0_rows_checked(const block_q5_0* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_0* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q5_0>("dot_q5_0_q8_0_rows", w, row_stride, rows, n));
    Ops::dot_q5_0_q8_0_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_q4_1_q8_0_rows after checking n, the stride and the alignment.
  static result<void> dot_q4_1_q8_0_rows_checked(const block_q4_1* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_0* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q4_1>("dot_q4_1_q8_0_rows", w, row_stride, rows, n));
    Ops::dot_q4_1_q8_0_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_q5_1_q8_0_rows after checking n, the stride and the alignment.
  static result<void> dot_q5_1_q8_0_rows_checked(const block_q5_1* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_0* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q5_1>("dot_q5_1_q8_0_rows", w, row_stride, rows, n));
    Ops::dot_q5_1_q8_0_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_q2_k_q8_k_rows after checking n, the stride and the alignment.
  static result<void> dot_q2_k_q8_k_rows_checked(const block_q2_k* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_k* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q2_k>("dot_q2_k_q8_k_rows", w, row_stride, rows, n));
    Ops::dot_q2_k_q8_k_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_q3_k_q8_k_rows after checking n, the stride and the alignment.
  static result<void> dot_q3_k_q8_k_rows_checked(const block_q3_k* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_k* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q3_k>("dot_q3_k_q8_k_rows", w, row_stride, rows, n));
    Ops::dot_q3_k_q8_k_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_iq4_xs_q8_k_rows after checking n, the stride and the alignment.
  static result<void> dot_iq4_xs_q8_k_rows_checked(const block_iq4_xs* w, std::size_t row_stride, std::size_t rows,
                                                   const block_q8_k* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::iq4_xs>("dot_iq4_xs_q8_k_rows", w, row_stride, rows, n));
    Ops::dot_iq4_xs_q8_k_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_q4_k_q8_k_rows after checking n, the stride and the alignment.
  static result<void> dot_q4_k_q8_k_rows_checked(const block_q4_k* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_k* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q4_k>("dot_q4_k_q8_k_rows", w, row_stride, rows, n));
    Ops::dot_q4_k_q8_k_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_q5_k_q8_k_rows after checking n, the stride and the alignment.
  static result<void> dot_q5_k_q8_k_rows_checked(const block_q5_k* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_k* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q5_k>("dot_q5_k_q8_k_rows", w, row_stride, rows, n));
    Ops::dot_q5_k_q8_k_rows(w, row_stride, rows, a, n, out);
    return {};
  }
  /// Ops::dot_q6_k_q8_k_rows after checking n, the stride and the alignment.
  static result<void> dot_q6_k_q8_k_rows_checked(const block_q6_k* w, std::size_t row_stride, std::size_t rows,
                                                 const block_q8_k* a, std::size_t n, float* out) {
    RUVLLM_TRY(check_rows<precision::q6_k>("dot_q6_k_q8_k_rows", w, row_stride, rows, n));
    Ops::dot_q6_k_q8_k_rows(w, row_stride, rows, a, n, out);
    return {};
  }
};

}  // namespace detail

/// Scalar quant entry points: the reference (see the file comment for the
/// formats, rounding and preconditions). Each entry point's doc is on the
/// scalar:: function it calls; backends share the semantics.
template <>
struct quant_ops<backend::scalar> : detail::quant_checked<quant_ops<backend::scalar>> {
  static void quantize_q8_0(const float* x, block_q8_0* y, std::size_t n) noexcept { scalar::quantize_q8_0(x, y, n); }
  static void quantize_q4_0(const float* x, block_q4_0* y, std::size_t n) noexcept { scalar::quantize_q4_0(x, y, n); }
  static void quantize_iq4_nl(const float* x, block_iq4_nl* y, std::size_t n) noexcept {
    scalar::quantize_iq4_nl(x, y, n);
  }
  static void quantize_q5_0(const float* x, block_q5_0* y, std::size_t n) noexcept { scalar::quantize_q5_0(x, y, n); }
  static void quantize_q4_1(const float* x, block_q4_1* y, std::size_t n) noexcept { scalar::quantize_q4_1(x, y, n); }
  static void quantize_q5_1(const float* x, block_q5_1* y, std::size_t n) noexcept { scalar::quantize_q5_1(x, y, n); }
  static void quantize_q2_k(const float* x, block_q2_k* y, std::size_t n) noexcept { scalar::quantize_q2_k(x, y, n); }
  static void quantize_q3_k(const float* x, block_q3_k* y, std::size_t n) noexcept { scalar::quantize_q3_k(x, y, n); }
  static void quantize_iq4_xs(const float* x, block_iq4_xs* y, std::size_t n) noexcept {
    scalar::quantize_iq4_xs(x, y, n);
  }
  static void quantize_q4_k(const float* x, block_q4_k* y, std::size_t n) noexcept { scalar::quantize_q4_k(x, y, n); }
  static void quantize_q5_k(const float* x, block_q5_k* y, std::size_t n) noexcept { scalar::quantize_q5_k(x, y, n); }
  static void quantize_q6_k(const float* x, block_q6_k* y, std::size_t n) noexcept { scalar::quantize_q6_k(x, y, n); }
  static void quantize_q8_k(const float* x, block_q8_k* y, std::size_t n) noexcept { scalar::quantize_q8_k(x, y, n); }

  static void dequantize_q8_0(const block_q8_0* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q8_0(x, y, n);
  }
  static void dequantize_q4_0(const block_q4_0* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q4_0(x, y, n);
  }
  static void dequantize_iq4_nl(const block_iq4_nl* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_iq4_nl(x, y, n);
  }
  static void dequantize_q5_0(const block_q5_0* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q5_0(x, y, n);
  }
  static void dequantize_q4_1(const block_q4_1* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q4_1(x, y, n);
  }
  static void dequantize_q5_1(const block_q5_1* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q5_1(x, y, n);
  }
  static void dequantize_q2_k(const block_q2_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q2_k(x, y, n);
  }
  static void dequantize_q3_k(const block_q3_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q3_k(x, y, n);
  }
  static void dequantize_iq4_xs(const block_iq4_xs* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_iq4_xs(x, y, n);
  }
  static void dequantize_q4_k(const block_q4_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q4_k(x, y, n);
  }
  static void dequantize_q5_k(const block_q5_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q5_k(x, y, n);
  }
  static void dequantize_q6_k(const block_q6_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q6_k(x, y, n);
  }
  static void dequantize_q8_k(const block_q8_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q8_k(x, y, n);
  }

  static void convert_f32_to_f16(const float* x, f16* y, std::size_t n) noexcept {
    scalar::convert_f32_to_f16(x, y, n);
  }
  static void convert_f16_to_f32(const f16* x, float* y, std::size_t n) noexcept {
    scalar::convert_f16_to_f32(x, y, n);
  }
  static void convert_f32_to_bf16(const float* x, bf16* y, std::size_t n) noexcept {
    scalar::convert_f32_to_bf16(x, y, n);
  }
  static void convert_bf16_to_f32(const bf16* x, float* y, std::size_t n) noexcept {
    scalar::convert_bf16_to_f32(x, y, n);
  }

  [[nodiscard]] static float dot_q8_0_q8_0(const block_q8_0* w, const block_q8_0* a, std::size_t n) noexcept {
    return scalar::dot_q8_0_q8_0(w, a, n);
  }
  [[nodiscard]] static float dot_q4_0_q8_0(const block_q4_0* w, const block_q8_0* a, std::size_t n) noexcept {
    return scalar::dot_q4_0_q8_0(w, a, n);
  }
  [[nodiscard]] static float dot_iq4_nl_q8_0(const block_iq4_nl* w, const block_q8_0* a, std::size_t n) noexcept {
    return scalar::dot_iq4_nl_q8_0(w, a, n);
  }
  [[nodiscard]] static float dot_q5_0_q8_0(const block_q5_0* w, const block_q8_0* a, std::size_t n) noexcept {
    return scalar::dot_q5_0_q8_0(w, a, n);
  }
  [[nodiscard]] static float dot_q4_1_q8_0(const block_q4_1* w, const block_q8_0* a, std::size_t n) noexcept {
    return scalar::dot_q4_1_q8_0(w, a, n);
  }
  [[nodiscard]] static float dot_q5_1_q8_0(const block_q5_1* w, const block_q8_0* a, std::size_t n) noexcept {
    return scalar::dot_q5_1_q8_0(w, a, n);
  }
  [[nodiscard]] static float dot_q2_k_q8_k(const block_q2_k* w, const block_q8_k* a, std::size_t n) noexcept {
    return scalar::dot_q2_k_q8_k(w, a, n);
  }
  [[nodiscard]] static float dot_q3_k_q8_k(const block_q3_k* w, const block_q8_k* a, std::size_t n) noexcept {
    return scalar::dot_q3_k_q8_k(w, a, n);
  }
  [[nodiscard]] static float dot_iq4_xs_q8_k(const block_iq4_xs* w, const block_q8_k* a, std::size_t n) noexcept {
    return scalar::dot_iq4_xs_q8_k(w, a, n);
  }
  [[nodiscard]] static float dot_q4_k_q8_k(const block_q4_k* w, const block_q8_k* a, std::size_t n) noexcept {
    return scalar::dot_q4_k_q8_k(w, a, n);
  }
  [[nodiscard]] static float dot_q5_k_q8_k(const block_q5_k* w, const block_q8_k* a, std::size_t n) noexcept {
    return scalar::dot_q5_k_q8_k(w, a, n);
  }
  [[nodiscard]] static float dot_q6_k_q8_k(const block_q6_k* w, const block_q8_k* a, std::size_t n) noexcept {
    return scalar::dot_q6_k_q8_k(w, a, n);
  }

  static void dot_q8_0_q8_0_rows(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q8_0_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q4_0_q8_0_rows(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q4_0_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_iq4_nl_q8_0_rows(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                   std::size_t n, float* out) noexcept {
    scalar::dot_iq4_nl_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q5_0_q8_0_rows(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q5_0_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q4_1_q8_0_rows(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q4_1_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q5_1_q8_0_rows(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q5_1_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q2_k_q8_k_rows(const block_q2_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q2_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q3_k_q8_k_rows(const block_q3_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q3_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_iq4_xs_q8_k_rows(const block_iq4_xs* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                   std::size_t n, float* out) noexcept {
    scalar::dot_iq4_xs_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q4_k_q8_k_rows(const block_q4_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q4_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q5_k_q8_k_rows(const block_q5_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q5_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q6_k_q8_k_rows(const block_q6_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q6_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }

  static void pack_q8_0_quads(const block_q8_0* a, std::size_t n, q8_0_quad* out) noexcept {
    scalar::pack_q8_0_quads(a, n, out);
  }
  static void quantize_q8_0_quads(const float* x, q8_0_quad* out, std::size_t n) noexcept {
    scalar::quantize_q8_0_quads(x, out, n);
  }
  static void dot_q8_0_quad_rows(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q8_0_quad_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q4_0_quad_rows(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q4_0_quad_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_iq4_nl_quad_rows(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                   std::size_t n, float* out) noexcept {
    scalar::dot_iq4_nl_quad_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q5_0_quad_rows(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q5_0_quad_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q4_1_quad_rows(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q4_1_quad_rows(w, row_stride, rows, a, n, out);
  }
  static void dot_q5_1_quad_rows(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    scalar::dot_q5_1_quad_rows(w, row_stride, rows, a, n, out);
  }
  static void gemm_q8_0_quads(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q8_0_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_q4_0_quads(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q4_0_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_iq4_nl_quads(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_iq4_nl_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_q5_0_quads(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q5_0_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_q4_1_quads(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q4_1_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_q5_1_quads(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q5_1_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_q2_k_q8_k(const block_q2_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q2_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_q3_k_q8_k(const block_q3_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q3_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_iq4_xs_q8_k(const block_iq4_xs* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                               std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_iq4_xs_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_q4_k_q8_k(const block_q4_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q4_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_q5_k_q8_k(const block_q5_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q5_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  static void gemm_q6_k_q8_k(const block_q6_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::gemm_q6_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
};

}  // namespace ruvllm::kernels

// The quant family's dispatched kernels (listed in RUVLLM_KERNELS_EXPORTED by
// ruvllm/kernels/dispatch.hpp, which includes this header), in the form
// X(return type, name, (parameters), (arguments)). Each name is defined per
// target in quant-inl.h and called by kernels/highway/quant.hpp.
#define RUVLLM_DETAIL_QUANT_ROW(X, NAME, IN, OUT) X(void, NAME, (const IN* x, OUT* y, std::size_t n), (x, y, n))
#define RUVLLM_DETAIL_QUANT_ROWS(X, NAME, W, A)                                                                \
  X(void, NAME, (const W* w, std::size_t row_stride, std::size_t rows, const A* a, std::size_t n, float* out), \
    (w, row_stride, rows, a, n, out))
#define RUVLLM_DETAIL_QUANT_GEMM(X, NAME, W, A)                                                                     \
  X(void, NAME,                                                                                                     \
    (const W* w, std::size_t row_stride, std::size_t rows, const A* a, std::size_t tokens, std::size_t n, float* y, \
     std::size_t y_stride),                                                                                         \
    (w, row_stride, rows, a, tokens, n, y, y_stride))
#define RUVLLM_QUANT_EXPORTED(X)                                                                            \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_quantize_q8_0, float, ruvllm::block_q8_0)                                \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_quantize_q4_0, float, ruvllm::block_q4_0)                                \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_quantize_q8_k, float, ruvllm::block_q8_k)                                \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_dequantize_q8_0, ruvllm::block_q8_0, float)                              \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_dequantize_q4_0, ruvllm::block_q4_0, float)                              \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_dequantize_q4_k, ruvllm::block_q4_k, float)                              \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_dequantize_q6_k, ruvllm::block_q6_k, float)                              \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_convert_f32_to_f16, float, ruvllm::f16)                                  \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_convert_f16_to_f32, ruvllm::f16, float)                                  \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_convert_f32_to_bf16, float, ruvllm::bf16)                                \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_convert_bf16_to_f32, ruvllm::bf16, float)                                \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q8_0_q8_0_rows, ruvllm::block_q8_0, ruvllm::block_q8_0)             \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q4_0_q8_0_rows, ruvllm::block_q4_0, ruvllm::block_q8_0)             \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_iq4_nl_q8_0_rows, ruvllm::block_iq4_nl, ruvllm::block_q8_0)         \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q5_0_q8_0_rows, ruvllm::block_q5_0, ruvllm::block_q8_0)             \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q4_1_q8_0_rows, ruvllm::block_q4_1, ruvllm::block_q8_0)             \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q5_1_q8_0_rows, ruvllm::block_q5_1, ruvllm::block_q8_0)             \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q2_k_q8_k_rows, ruvllm::block_q2_k, ruvllm::block_q8_k)             \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q3_k_q8_k_rows, ruvllm::block_q3_k, ruvllm::block_q8_k)             \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_iq4_xs_q8_k_rows, ruvllm::block_iq4_xs, ruvllm::block_q8_k)         \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q4_k_q8_k_rows, ruvllm::block_q4_k, ruvllm::block_q8_k)             \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q5_k_q8_k_rows, ruvllm::block_q5_k, ruvllm::block_q8_k)             \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q6_k_q8_k_rows, ruvllm::block_q6_k, ruvllm::block_q8_k)             \
  RUVLLM_DETAIL_QUANT_ROW(X, quant_quantize_q8_0_quads, float, ruvllm::kernels::q8_0_quad)                  \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q8_0_quad_rows, ruvllm::block_q8_0, ruvllm::kernels::q8_0_quad)     \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q4_0_quad_rows, ruvllm::block_q4_0, ruvllm::kernels::q8_0_quad)     \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_iq4_nl_quad_rows, ruvllm::block_iq4_nl, ruvllm::kernels::q8_0_quad) \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q5_0_quad_rows, ruvllm::block_q5_0, ruvllm::kernels::q8_0_quad)     \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q4_1_quad_rows, ruvllm::block_q4_1, ruvllm::kernels::q8_0_quad)     \
  RUVLLM_DETAIL_QUANT_ROWS(X, quant_dot_q5_1_quad_rows, ruvllm::block_q5_1, ruvllm::kernels::q8_0_quad)     \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q8_0_quads, ruvllm::block_q8_0, ruvllm::kernels::q8_0_quad)        \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q4_0_quads, ruvllm::block_q4_0, ruvllm::kernels::q8_0_quad)        \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_iq4_nl_quads, ruvllm::block_iq4_nl, ruvllm::kernels::q8_0_quad)    \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q5_0_quads, ruvllm::block_q5_0, ruvllm::kernels::q8_0_quad)        \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q4_1_quads, ruvllm::block_q4_1, ruvllm::kernels::q8_0_quad)        \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q5_1_quads, ruvllm::block_q5_1, ruvllm::kernels::q8_0_quad)        \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q2_k_q8_k, ruvllm::block_q2_k, ruvllm::block_q8_k)                 \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q3_k_q8_k, ruvllm::block_q3_k, ruvllm::block_q8_k)                 \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_iq4_xs_q8_k, ruvllm::block_iq4_xs, ruvllm::block_q8_k)             \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q4_k_q8_k, ruvllm::block_q4_k, ruvllm::block_q8_k)                 \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q5_k_q8_k, ruvllm::block_q5_k, ruvllm::block_q8_k)                 \
  RUVLLM_DETAIL_QUANT_GEMM(X, quant_gemm_q6_k_q8_k, ruvllm::block_q6_k, ruvllm::block_q8_k)

#endif  // RUVLLM_KERNELS_SCALAR_QUANT_HPP
