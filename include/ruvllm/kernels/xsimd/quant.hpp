#ifndef RUVLLM_KERNELS_XSIMD_QUANT_HPP
#define RUVLLM_KERNELS_XSIMD_QUANT_HPP

// Quant kernels of backend::xsimd (see xsimd/arch.hpp on compile flags).
// xsimd 8.1 has no int8 dot product, so quants are widened to int32 lanes on
// load and multiplied there; each block's int32 sum is exact, and the float
// accumulation is the reference's own expression, so results equal the
// scalar reference's. Q8_0/Q4_0/Q8_K quantizers and Q8_0/Q4_0 dequantizers are
// vectorized too; K-quant quantizers and dequantizers and the f16/bf16
// row conversions run the scalar reference. Semantics and preconditions:
// kernels/scalar/quant.hpp.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ruvllm/core/precision.hpp"
#include "ruvllm/kernels/scalar/quant.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {
namespace quant {

using i32 = ::xsimd::batch<std::int32_t>;
using f32 = ::xsimd::batch<float>;

/// sum(w[i] * a[i]) over count int8 values (a multiple of 16), widened to
/// int32 lanes on load.
[[nodiscard]] inline std::int32_t dot_i8(const std::int8_t* w, const std::int8_t* a, std::size_t count) noexcept {
  i32 acc(0);
  for (std::size_t k = 0; k < count; k += i32::size) acc += i32::load_unaligned(w + k) * i32::load_unaligned(a + k);
  return ::xsimd::hadd(acc);
}

/// Largest |x[i]| over count floats (a multiple of 16).
[[nodiscard]] inline float max_abs(const float* x, std::size_t count) noexcept {
  f32 m(0.0f);
  // NaNs passed over, as the scalar reference's std::max does.
  for (std::size_t k = 0; k < count; k += f32::size) {
    const f32 a = ::xsimd::abs(f32::load_unaligned(x + k));
    m = ::xsimd::max(m, ::xsimd::select(a == a, a, f32(0.0f)));
  }
  alignas(64) float lanes[f32::size];
  m.store_aligned(lanes);
  return *std::max_element(lanes, lanes + f32::size);
}

/// The first x[i] with |x[i]| == amax, as ggml's strict-> scan finds it.
[[nodiscard]] inline float first_of_magnitude(const float* x, std::size_t count, float amax) noexcept {
  for (std::size_t i = 0; i < count; ++i) {
    if (std::fabs(x[i]) == amax) return x[i];
  }
  return 0.0f;
}

/// The 32 quants of a Q4_0 block minus 8, in element order.
inline void unpack_q4_0(const block_q4_0& b, std::int8_t* q) noexcept {
  for (std::size_t j = 0; j < 16; ++j) {
    q[j] = static_cast<std::int8_t>((b.qs[j] & 0x0F) - 8);
    q[j + 16] = static_cast<std::int8_t>((b.qs[j] >> 4) - 8);
  }
}

/// The 256 quants of a Q6_K block minus 32, in element order.
inline void unpack_q6_k(const block_q6_k& b, std::int8_t* q) noexcept {
  for (std::size_t half = 0; half < 2; ++half, q += 128) {
    const std::uint8_t* ql = b.ql + 64 * half;
    const std::uint8_t* qh = b.qh + 32 * half;
    for (std::size_t l = 0; l < 32; ++l) {
      q[l] = static_cast<std::int8_t>(((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32);
      q[l + 32] = static_cast<std::int8_t>(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
      q[l + 64] = static_cast<std::int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      q[l + 96] = static_cast<std::int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
  }
}

inline float dot_q8_0_q8_0(const block_q8_0* w, const block_q8_0* a, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) {
    const std::int32_t sumi = dot_i8(w[b].qs, a[b].qs, 32);
    sum += static_cast<float>(sumi) * (to_float(w[b].d) * to_float(a[b].d));
  }
  return sum;
}

/// A Q5_0 or IQ4_NL block's dot with 32 activation quants whose scale is
/// d_a (see scalar::quant_detail::value_block_dot).
template <class Block>
inline float value_block_dot(const Block& w, const std::int8_t* a, float d_a) noexcept {
  alignas(64) std::int8_t q[32];
  for (std::size_t j = 0; j < 32; ++j) q[j] = static_cast<std::int8_t>(scalar::quant_detail::signed_value(w, j));
  return static_cast<float>(dot_i8(q, a, 32)) * (to_float(w.d) * d_a);
}

/// A Q4_1 or Q5_1 block's dot with 32 activation quants whose scale is d_a
/// (see scalar::quant_detail::min_block_dot).
template <class Block>
inline float min_block_dot(const Block& w, const std::int8_t* a, float d_a) noexcept {
  alignas(64) std::int8_t q[32], ones[32];
  for (std::size_t j = 0; j < 32; ++j) {
    q[j] = static_cast<std::int8_t>(scalar::quant_detail::quant_of(w, j));
    ones[j] = 1;
  }
  return static_cast<float>(dot_i8(q, a, 32)) * (to_float(w.d) * d_a) +
         static_cast<float>(dot_i8(ones, a, 32)) * (to_float(w.m) * d_a);
}

/// out[r] = the sum of block_dot(block, its quad activations, d_a) over row
/// r's blocks (the Q5_0 / Q4_1 / Q5_1 quad rows).
template <class Block>
inline void block_quad_rows(const Block* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a, std::size_t n,
                            float* out, float (*block_dot)(const Block&, const std::int8_t*, float) noexcept) noexcept {
  RUVLLM_ASSERT(n % 32 == 0);
  for (std::size_t r = 0; r < rows; ++r) {
    const Block* row = scalar::quant_detail::row_at(w, row_stride, r);
    float sum = 0.0f;
    for (std::size_t b = 0; b < n / 32; ++b) {
      alignas(64) std::int8_t qs[32];
      float d;
      scalar::quant_detail::quad_block(a, b, qs, d);
      sum += block_dot(row[b], qs, d);
    }
    out[r] = sum;
  }
}

template <class Block>
inline float min_dot(const Block* w, const block_q8_0* a, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) sum += min_block_dot(w[b], a[b].qs, to_float(a[b].d));
  return sum;
}

template <class Block>
inline float value_dot(const Block* w, const block_q8_0* a, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t b = 0; b < n / 32; ++b) sum += value_block_dot(w[b], a[b].qs, to_float(a[b].d));
  return sum;
}

inline float dot_q4_0_q8_0(const block_q4_0* w, const block_q8_0* a, std::size_t n) noexcept {
  float sum = 0.0f;
  alignas(64) std::int8_t q[32];
  for (std::size_t b = 0; b < n / 32; ++b) {
    unpack_q4_0(w[b], q);
    const std::int32_t sumi = dot_i8(q, a[b].qs, 32);
    sum += static_cast<float>(sumi) * to_float(w[b].d) * to_float(a[b].d);
  }
  return sum;
}

/// The Q4_K / Q5_K dot: sub-block j's 32 quants come from
/// unpack(block, j, q); scales, mins and the float expression are shared.
template <class Block, class Unpack>
inline float dot_scale_min_q8_k(const Block* w, const block_q8_k* a, std::size_t n, Unpack unpack) noexcept {
  float sum = 0.0f;
  alignas(64) std::int8_t q[32];
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    std::uint8_t sc[8], m[8];
    scalar::quant_detail::k_scales_mins(w[b], sc, m);
    std::int32_t mins = 0, scaled = 0;
    for (std::size_t j = 0; j < 8; ++j) mins += m[j] * (a[b].bsums[2 * j] + a[b].bsums[2 * j + 1]);
    for (std::size_t j = 0; j < 8; ++j) {
      unpack(w[b], j, q);
      scaled += sc[j] * dot_i8(q, a[b].qs + 32 * j, 32);
    }
    const float d = to_float(w[b].d) * a[b].d;
    const float dmin = to_float(w[b].dmin) * a[b].d;
    sum += d * static_cast<float>(scaled) - dmin * static_cast<float>(mins);
  }
  return sum;
}

inline float dot_q4_k_q8_k(const block_q4_k* w, const block_q8_k* a, std::size_t n) noexcept {
  return dot_scale_min_q8_k(w, a, n, [](const block_q4_k& b, std::size_t j, std::int8_t* q) {
    const std::uint8_t* packed = b.qs + 32 * (j / 2);
    for (std::size_t l = 0; l < 32; ++l)
      q[l] = static_cast<std::int8_t>((j % 2 == 0) ? (packed[l] & 0x0F) : (packed[l] >> 4));
  });
}

inline float dot_q5_k_q8_k(const block_q5_k* w, const block_q8_k* a, std::size_t n) noexcept {
  return dot_scale_min_q8_k(w, a, n, [](const block_q5_k& b, std::size_t j, std::int8_t* q) {
    for (std::size_t l = 0; l < 32; ++l) q[l] = static_cast<std::int8_t>(scalar::quant_detail::k_quant(b, 32 * j + l));
  });
}

/// The Q2_K dot: Q4_K's expression over 16 sub-blocks of 16.
inline float dot_q2_k_q8_k(const block_q2_k* w, const block_q8_k* a, std::size_t n) noexcept {
  float sum = 0.0f;
  alignas(64) std::int8_t q[qk_k];
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    for (std::size_t e = 0; e < qk_k; ++e) q[e] = static_cast<std::int8_t>(scalar::quant_detail::k_quant(w[b], e));
    std::int32_t mins = 0, scaled = 0;
    for (std::size_t g = 0; g < qk_k / 16; ++g) {
      mins += (w[b].scales[g] >> 4) * a[b].bsums[g];
      scaled += (w[b].scales[g] & 0x0F) * dot_i8(q + 16 * g, a[b].qs + 16 * g, 16);
    }
    const float d = to_float(w[b].d) * a[b].d;
    const float dmin = to_float(w[b].dmin) * a[b].d;
    sum += d * static_cast<float>(scaled) - dmin * static_cast<float>(mins);
  }
  return sum;
}

/// The Q3_K / Q6_K / IQ4_XS dot: unpack(block, q) gives the 256 signed
/// weights (quants less the format's bias, or table values), scale(block, g)
/// the signed scale of 16-element group g.
template <class Block, class Unpack, class Scale>
inline float dot_signed_scales_q8_k(const Block* w, const block_q8_k* a, std::size_t n, Unpack unpack,
                                    Scale scale) noexcept {
  float sum = 0.0f;
  alignas(64) std::int8_t q[qk_k];
  for (std::size_t b = 0; b < n / qk_k; ++b) {
    unpack(w[b], q);
    std::int32_t total = 0;
    for (std::size_t g = 0; g < qk_k / 16; ++g) total += scale(w[b], g) * dot_i8(q + 16 * g, a[b].qs + 16 * g, 16);
    sum += to_float(w[b].d) * a[b].d * static_cast<float>(total);
  }
  return sum;
}

inline float dot_q3_k_q8_k(const block_q3_k* w, const block_q8_k* a, std::size_t n) noexcept {
  return dot_signed_scales_q8_k(
      w, a, n,
      [](const block_q3_k& b, std::int8_t* q) {
        for (std::size_t e = 0; e < qk_k; ++e) q[e] = static_cast<std::int8_t>(scalar::quant_detail::k_quant(b, e) - 4);
      },
      [](const block_q3_k& b, std::size_t g) { return scalar::quant_detail::q3_k_scale(b.scales, g); });
}

inline float dot_iq4_xs_q8_k(const block_iq4_xs* w, const block_q8_k* a, std::size_t n) noexcept {
  return dot_signed_scales_q8_k(
      w, a, n,
      [](const block_iq4_xs& b, std::int8_t* q) {
        for (std::size_t e = 0; e < qk_k; ++e)
          q[e] = static_cast<std::int8_t>(scalar::quant_detail::iq4_xs_value(b, e));
      },
      [](const block_iq4_xs& b, std::size_t g) { return scalar::quant_detail::iq4_xs_scale(b, g / 2); });
}

inline float dot_q6_k_q8_k(const block_q6_k* w, const block_q8_k* a, std::size_t n) noexcept {
  return dot_signed_scales_q8_k(
      w, a, n, [](const block_q6_k& b, std::int8_t* q) { unpack_q6_k(b, q); },
      [](const block_q6_k& b, std::size_t g) { return static_cast<int>(b.scales[g]); });
}

inline void quantize_q8_0(const float* x, block_q8_0* y, std::size_t n) noexcept {
  for (std::size_t b = 0; b < n / 32; ++b, x += 32) {
    const float d = max_abs(x, 32) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = to_f16(d);
    if (!(std::fabs(id) <= std::numeric_limits<float>::max())) {
      std::memset(y[b].qs, 0, sizeof y[b].qs);
      continue;
    }
    for (std::size_t k = 0; k < 32; k += f32::size) {
      // xsimd::round is roundf: ties away from zero, like ggml.
      ::xsimd::batch_cast<std::int32_t>(::xsimd::round(f32::load_unaligned(x + k) * f32(id)))
          .store_unaligned(y[b].qs + k);
    }
  }
}

inline void quantize_q4_0(const float* x, block_q4_0* y, std::size_t n) noexcept {
  alignas(64) std::int32_t q[32];
  for (std::size_t b = 0; b < n / 32; ++b, x += 32) {
    const float amax = max_abs(x, 32);
    const float max = amax > 0.0f ? first_of_magnitude(x, 32, amax) : 0.0f;
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = to_f16(d);
    if (!(std::fabs(id) <= std::numeric_limits<float>::max())) {
      std::memset(y[b].qs, 0x88, sizeof y[b].qs);
      continue;
    }
    for (std::size_t k = 0; k < 32; k += f32::size) {
      // min(15, trunc(min(p, 7.5) + 8.5)): see scalar::quant_detail::q4_0_nibble.
      const f32 t = ::xsimd::min(f32::load_unaligned(x + k) * f32(id), f32(7.5f)) + f32(8.5f);
      ::xsimd::min(::xsimd::batch_cast<std::int32_t>(t), i32(15)).store_aligned(q + k);
    }
    for (std::size_t j = 0; j < 16; ++j) y[b].qs[j] = static_cast<std::uint8_t>(q[j] | (q[j + 16] << 4));
  }
}

inline void quantize_q8_k(const float* x, block_q8_k* y, std::size_t n) noexcept {
  alignas(64) std::int32_t q[qk_k];
  for (std::size_t b = 0; b < n / qk_k; ++b, x += qk_k) {
    block_q8_k& out = y[b];
    const float amax = max_abs(x, qk_k);
    const float iscale = amax > 0.0f ? -127.0f / first_of_magnitude(x, qk_k, amax) : 0.0f;
    out.d = amax > 0.0f ? 1.0f / iscale : 0.0f;
    if (amax == 0.0f || !(std::fabs(iscale) <= std::numeric_limits<float>::max())) {
      std::memset(out.qs, 0, sizeof out.qs);
      std::memset(out.bsums, 0, sizeof out.bsums);
      continue;
    }
    const f32 limit(scalar::quant_detail::nearest_int_limit);
    for (std::size_t k = 0; k < qk_k; k += f32::size) {
      // nearest_int: ties to even, saturated like the reference.
      const f32 p = ::xsimd::min(::xsimd::max(f32::load_unaligned(x + k) * f32(iscale), -limit), limit);
      ::xsimd::min(::xsimd::batch_cast<std::int32_t>(::xsimd::nearbyint(p)), i32(127)).store_aligned(q + k);
    }
    for (std::size_t g = 0; g < qk_k / 16; ++g) {
      std::int32_t sum = 0;
      for (std::size_t j = 0; j < 16; ++j) {
        out.qs[16 * g + j] = static_cast<std::int8_t>(q[16 * g + j]);
        sum += q[16 * g + j];
      }
      out.bsums[g] = static_cast<std::int16_t>(sum);
    }
  }
}

inline void dequantize_q8_0(const block_q8_0* x, float* y, std::size_t n) noexcept {
  for (std::size_t b = 0; b < n / 32; ++b, y += 32) {
    const f32 d(to_float(x[b].d));
    for (std::size_t k = 0; k < 32; k += f32::size) (f32::load_unaligned(x[b].qs + k) * d).store_unaligned(y + k);
  }
}

inline void dequantize_q4_0(const block_q4_0* x, float* y, std::size_t n) noexcept {
  alignas(64) std::int8_t q[32];
  for (std::size_t b = 0; b < n / 32; ++b, y += 32) {
    unpack_q4_0(x[b], q);
    const f32 d(to_float(x[b].d));
    for (std::size_t k = 0; k < 32; k += f32::size) (f32::load_unaligned(q + k) * d).store_unaligned(y + k);
  }
}

}  // namespace quant
}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct quant_ops<backend::xsimd> : detail::quant_checked<quant_ops<backend::xsimd>> {
  /// f32 -> Q8_0, ggml's bytes; n % 32 == 0.
  static void quantize_q8_0(const float* x, block_q8_0* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    xsimd_impl::quant::quantize_q8_0(x, y, n);
  }
  /// f32 -> Q4_0, ggml's bytes; n % 32 == 0.
  static void quantize_q4_0(const float* x, block_q4_0* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    xsimd_impl::quant::quantize_q4_0(x, y, n);
  }
  /// f32 -> Q4_K with ggml's reference search (scalar); n % 256 == 0.
  static void quantize_iq4_nl(const float* x, block_iq4_nl* y, std::size_t n) noexcept {
    scalar::quantize_iq4_nl(x, y, n);
  }
  static void quantize_q5_0(const float* x, block_q5_0* y, std::size_t n) noexcept { scalar::quantize_q5_0(x, y, n); }
  static void quantize_q4_1(const float* x, block_q4_1* y, std::size_t n) noexcept { scalar::quantize_q4_1(x, y, n); }
  static void quantize_q5_1(const float* x, block_q5_1* y, std::size_t n) noexcept { scalar::quantize_q5_1(x, y, n); }
  static void quantize_q4_k(const float* x, block_q4_k* y, std::size_t n) noexcept { scalar::quantize_q4_k(x, y, n); }
  /// f32 -> Q6_K with ggml's reference search (scalar); n % 256 == 0.
  static void quantize_q2_k(const float* x, block_q2_k* y, std::size_t n) noexcept { scalar::quantize_q2_k(x, y, n); }
  static void quantize_q3_k(const float* x, block_q3_k* y, std::size_t n) noexcept { scalar::quantize_q3_k(x, y, n); }
  static void quantize_iq4_xs(const float* x, block_iq4_xs* y, std::size_t n) noexcept {
    scalar::quantize_iq4_xs(x, y, n);
  }
  static void quantize_q5_k(const float* x, block_q5_k* y, std::size_t n) noexcept { scalar::quantize_q5_k(x, y, n); }
  static void quantize_q6_k(const float* x, block_q6_k* y, std::size_t n) noexcept { scalar::quantize_q6_k(x, y, n); }
  /// f32 -> Q8_K activations with bsums, ggml's bytes; n % 256 == 0.
  static void quantize_q8_k(const float* x, block_q8_k* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    xsimd_impl::quant::quantize_q8_k(x, y, n);
  }

  /// Q8_0 -> f32; n % 32 == 0.
  static void dequantize_q8_0(const block_q8_0* x, float* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    xsimd_impl::quant::dequantize_q8_0(x, y, n);
  }
  /// Q4_0 -> f32; n % 32 == 0.
  static void dequantize_q4_0(const block_q4_0* x, float* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    xsimd_impl::quant::dequantize_q4_0(x, y, n);
  }
  /// Q4_K -> f32 (scalar); n % 256 == 0.
  static void dequantize_iq4_nl(const block_iq4_nl* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_iq4_nl(x, y, n);
  }
  static void dequantize_q5_0(const block_q5_0* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q5_0(x, y, n);
  }
  /// Q4_K -> f32 (scalar); n % 256 == 0.
  static void dequantize_q4_1(const block_q4_1* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q4_1(x, y, n);
  }
  /// Q4_K -> f32 (scalar); n % 256 == 0.
  static void dequantize_q5_1(const block_q5_1* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q5_1(x, y, n);
  }
  static void dequantize_q4_k(const block_q4_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q4_k(x, y, n);
  }
  /// Q6_K -> f32 (scalar); n % 256 == 0.
  static void dequantize_q2_k(const block_q2_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q2_k(x, y, n);
  }
  static void dequantize_q3_k(const block_q3_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q3_k(x, y, n);
  }
  static void dequantize_iq4_xs(const block_iq4_xs* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_iq4_xs(x, y, n);
  }
  static void dequantize_q5_k(const block_q5_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q5_k(x, y, n);
  }
  static void dequantize_q6_k(const block_q6_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q6_k(x, y, n);
  }
  /// Q8_K -> f32 (scalar); n % 256 == 0.
  static void dequantize_q8_k(const block_q8_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q8_k(x, y, n);
  }

  /// f32 -> f16 row (scalar); any n.
  static void convert_f32_to_f16(const float* x, f16* y, std::size_t n) noexcept {
    scalar::convert_f32_to_f16(x, y, n);
  }
  /// f16 -> f32 row (scalar); any n.
  static void convert_f16_to_f32(const f16* x, float* y, std::size_t n) noexcept {
    scalar::convert_f16_to_f32(x, y, n);
  }
  /// f32 -> bf16 row (scalar); any n.
  static void convert_f32_to_bf16(const float* x, bf16* y, std::size_t n) noexcept {
    scalar::convert_f32_to_bf16(x, y, n);
  }
  /// bf16 -> f32 row (scalar); any n.
  static void convert_bf16_to_f32(const bf16* x, float* y, std::size_t n) noexcept {
    scalar::convert_bf16_to_f32(x, y, n);
  }

  /// One Q8_0 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_q8_0_q8_0(const block_q8_0* w, const block_q8_0* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    return xsimd_impl::quant::dot_q8_0_q8_0(w, a, n);
  }
  /// One Q4_0 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_q4_0_q8_0(const block_q4_0* w, const block_q8_0* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    return xsimd_impl::quant::dot_q4_0_q8_0(w, a, n);
  }
  /// One Q5_0 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_iq4_nl_q8_0(const block_iq4_nl* w, const block_q8_0* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    return xsimd_impl::quant::value_dot(w, a, n);
  }
  [[nodiscard]] static float dot_q5_0_q8_0(const block_q5_0* w, const block_q8_0* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    return xsimd_impl::quant::value_dot(w, a, n);
  }
  /// One Q4_1 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_q4_1_q8_0(const block_q4_1* w, const block_q8_0* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    return xsimd_impl::quant::min_dot(w, a, n);
  }
  /// One Q5_1 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_q5_1_q8_0(const block_q5_1* w, const block_q8_0* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    return xsimd_impl::quant::min_dot(w, a, n);
  }
  /// One Q4_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q4_k_q8_k(const block_q4_k* w, const block_q8_k* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    return xsimd_impl::quant::dot_q4_k_q8_k(w, a, n);
  }
  /// One Q2_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q2_k_q8_k(const block_q2_k* w, const block_q8_k* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    return xsimd_impl::quant::dot_q2_k_q8_k(w, a, n);
  }
  /// One Q3_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q3_k_q8_k(const block_q3_k* w, const block_q8_k* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    return xsimd_impl::quant::dot_q3_k_q8_k(w, a, n);
  }
  /// One IQ4_XS weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_iq4_xs_q8_k(const block_iq4_xs* w, const block_q8_k* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    return xsimd_impl::quant::dot_iq4_xs_q8_k(w, a, n);
  }
  /// One Q5_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q5_k_q8_k(const block_q5_k* w, const block_q8_k* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    return xsimd_impl::quant::dot_q5_k_q8_k(w, a, n);
  }
  /// One Q6_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q6_k_q8_k(const block_q6_k* w, const block_q8_k* a, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    return xsimd_impl::quant::dot_q6_k_q8_k(w, a, n);
  }

  /// out[r] = dot(row r, a); row r starts r * row_stride bytes after w.
  static void dot_q8_0_q8_0_rows(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q8_0_q8_0(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// Q4_0 rows . Q8_0 activations, as dot_q8_0_q8_0_rows.
  static void dot_q4_0_q8_0_rows(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q4_0_q8_0(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// Q5_0 rows . Q8_0 activations, as dot_q8_0_q8_0_rows.
  static void dot_iq4_nl_q8_0_rows(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                   std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r)
      out[r] = dot_iq4_nl_q8_0(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  static void dot_q5_0_q8_0_rows(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q5_0_q8_0(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// Q4_1 rows . Q8_0 activations, as dot_q8_0_q8_0_rows.
  static void dot_q4_1_q8_0_rows(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q4_1_q8_0(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// Q5_1 rows . Q8_0 activations, as dot_q8_0_q8_0_rows.
  static void dot_q5_1_q8_0_rows(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q5_1_q8_0(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// Q4_K rows . Q8_K activations, as dot_q8_0_q8_0_rows.
  static void dot_q4_k_q8_k_rows(const block_q4_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q4_k_q8_k(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// Q2_K rows . Q8_K activations, as dot_q8_0_q8_0_rows.
  static void dot_q2_k_q8_k_rows(const block_q2_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q2_k_q8_k(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// Q3_K rows . Q8_K activations, as dot_q8_0_q8_0_rows.
  static void dot_q3_k_q8_k_rows(const block_q3_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q3_k_q8_k(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// IQ4_XS rows . Q8_K activations, as dot_q8_0_q8_0_rows.
  static void dot_iq4_xs_q8_k_rows(const block_iq4_xs* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                   std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r)
      out[r] = dot_iq4_xs_q8_k(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// Q5_K rows . Q8_K activations, as dot_q8_0_q8_0_rows.
  static void dot_q5_k_q8_k_rows(const block_q5_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q5_k_q8_k(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }
  /// Q6_K rows . Q8_K activations, as dot_q8_0_q8_0_rows.
  static void dot_q6_k_q8_k_rows(const block_q6_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    for (std::size_t r = 0; r < rows; ++r) out[r] = dot_q6_k_q8_k(scalar::quant_detail::row_at(w, row_stride, r), a, n);
  }

  /// Quad activations: the reference's arithmetic over each block's values
  /// (results equal the scalar reference's).
  static void pack_q8_0_quads(const block_q8_0* a, std::size_t n, q8_0_quad* out) noexcept {
    scalar::pack_q8_0_quads(a, n, out);
  }
  static void quantize_q8_0_quads(const float* x, q8_0_quad* out, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    block_q8_0 blocks[4];
    for (std::size_t q = 0; q < q8_0_quads(n); ++q) {
      const std::size_t count = std::min<std::size_t>(4, n / 32 - 4 * q);
      quantize_q8_0(x + 128 * q, blocks, count * 32);
      scalar::pack_q8_0_quads(blocks, count * 32, out + q);
    }
  }
  static void dot_q8_0_quad_rows(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    for (std::size_t r = 0; r < rows; ++r) {
      const block_q8_0* row = scalar::quant_detail::row_at(w, row_stride, r);
      float sum = 0.0f;
      for (std::size_t b = 0; b < n / 32; ++b) {
        alignas(64) std::int8_t qs[32];
        float d;
        scalar::quant_detail::quad_block(a, b, qs, d);
        sum += static_cast<float>(xsimd_impl::quant::dot_i8(row[b].qs, qs, 32)) * (to_float(row[b].d) * d);
      }
      out[r] = sum;
    }
  }
  static void dot_q4_0_quad_rows(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    for (std::size_t r = 0; r < rows; ++r) {
      const block_q4_0* row = scalar::quant_detail::row_at(w, row_stride, r);
      float sum = 0.0f;
      for (std::size_t b = 0; b < n / 32; ++b) {
        alignas(64) std::int8_t qs[32], q[32];
        float d;
        scalar::quant_detail::quad_block(a, b, qs, d);
        xsimd_impl::quant::unpack_q4_0(row[b], q);
        sum += static_cast<float>(xsimd_impl::quant::dot_i8(q, qs, 32)) * to_float(row[b].d) * d;
      }
      out[r] = sum;
    }
  }
  static void dot_iq4_nl_quad_rows(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                   std::size_t n, float* out) noexcept {
    xsimd_impl::quant::block_quad_rows(w, row_stride, rows, a, n, out,
                                       xsimd_impl::quant::value_block_dot<block_iq4_nl>);
  }
  static void dot_q5_0_quad_rows(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    xsimd_impl::quant::block_quad_rows(w, row_stride, rows, a, n, out, xsimd_impl::quant::value_block_dot<block_q5_0>);
  }
  static void dot_q4_1_quad_rows(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    xsimd_impl::quant::block_quad_rows(w, row_stride, rows, a, n, out, xsimd_impl::quant::min_block_dot<block_q4_1>);
  }
  static void dot_q5_1_quad_rows(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    xsimd_impl::quant::block_quad_rows(w, row_stride, rows, a, n, out, xsimd_impl::quant::min_block_dot<block_q5_1>);
  }
  static void gemm_q8_0_quads(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q8_0_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                       y_stride);
  }
  static void gemm_q4_0_quads(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q4_0_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                       y_stride);
  }
  static void gemm_iq4_nl_quads(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_iq4_nl_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                       y_stride);
  }
  static void gemm_q5_0_quads(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q5_0_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                       y_stride);
  }
  static void gemm_q4_1_quads(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q4_1_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                       y_stride);
  }
  static void gemm_q5_1_quads(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q5_1_quad_rows, w, row_stride, rows, a, q8_0_quads(n), tokens, n, y,
                                       y_stride);
  }
  static void gemm_q4_k_q8_k(const block_q4_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q4_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
  }
  static void gemm_q2_k_q8_k(const block_q2_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q2_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
  }
  static void gemm_q3_k_q8_k(const block_q3_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q3_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
  }
  static void gemm_iq4_xs_q8_k(const block_iq4_xs* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                               std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_iq4_xs_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
  }
  static void gemm_q5_k_q8_k(const block_q5_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q5_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
  }
  static void gemm_q6_k_q8_k(const block_q6_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    scalar::quant_detail::gemm_by_rows(dot_q6_k_q8_k_rows, w, row_stride, rows, a, n / qk_k, tokens, n, y, y_stride);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_QUANT_HPP
