#ifndef RUVLLM_CORE_HALF_HPP
#define RUVLLM_CORE_HALF_HPP

// 16-bit float storage: IEEE binary16 (f16) and bfloat16 (bf16), as they sit in
// GGUF tensors and block structs, and the scalar conversions to and from float.
//
// The conversions are bit-identical to the x86 instructions the SIMD kernels
// use, over every input (all 2^16 halves, all 2^32 floats), so a row converted
// by a kernel and the same row converted by scalar tail or reference code are
// the same bytes, and test expectations need no NaN or denormal special cases:
//   to_f16   == F16C VCVTPS2PH with imm8 = _MM_FROUND_TO_NEAREST_INT
//   to_float(f16)  == F16C VCVTPH2PS
//   to_bf16  == AVX512-BF16 VCVTNEPS2BF16
//   to_float(bf16) == the 16-bit left shift every bf16 widening kernel uses
// They are pure bit manipulation, so they are constexpr, do not depend on the
// thread's MXCSR (rounding mode, FTZ, DAZ), and give the same bits on any CPU.
//
// Rounding: to nearest, ties to even, in both narrowing directions. Overflow
// gives ±inf (f16: |x| >= 65520, the midpoint between 65504 and 2^16; bf16:
// |x| >= the midpoint between 0x1.fep127 and 2^128).
//
// NaNs (the sign is kept in every direction; a NaN never turns into inf):
//   to_f16:   the top 10 mantissa bits are kept (the low 13 are dropped, not
//             rounded) and the quiet bit (0x0200) is set. A signalling NaN
//             therefore comes out quiet, and one whose payload lies only in the
//             low 13 bits comes out as the default ±0x7E00.
//   to_float(f16): the 10 payload bits move to the top of the float mantissa
//             and the quiet bit (0x0040'0000) is set: an f16 sNaN comes out
//             quiet, a quiet NaN keeps its payload. Hence f16 -> float -> f16
//             is the identity on every pattern except signalling NaNs, which
//             come back with 0x0200 set and otherwise the same bits.
//   to_bf16:  the top 7 mantissa bits are kept (truncated, since rounding could
//             carry into the exponent) and the quiet bit (0x0040) is set.
//   to_float(bf16): a plain shift, so a bf16 sNaN stays an sNaN in float; no
//             instruction is involved, and kernels widen bf16 the same way.
//
// Denormals:
//   to_f16:   results in the f16 subnormal range (below 2^-14) are rounded
//             correctly, never flushed (VCVTPS2PH ignores MXCSR.FTZ). Float
//             denormal inputs are far below half of the smallest f16 subnormal,
//             so they give ±0 whether or not DAZ would apply.
//   to_float(f16): f16 subnormals become exact normal floats (VCVTPH2PS
//             ignores MXCSR.DAZ).
//   to_bf16:  float denormal inputs (|x| < 2^-126, biased exponent 0) become
//             ±0, because VCVTNEPS2BF16 always treats denormal inputs as zero.
//             So a bf16 subnormal widened to float and narrowed again becomes
//             ±0; every other non-NaN bf16 survives that round trip.
//   to_float(bf16): bf16 subnormals give the float denormals of the same bits;
//             arithmetic under DAZ will then read them as zero.
//
// Versus ggml (GGUF): for f16, ggml on x86 with F16C converts with the same
// instructions, so the results are equal; its portable fallback returns ±0x7E00
// for every NaN, dropping the payload, which is the only difference from ours.
// For bf16, the NaN rule and normal rounding equal ggml_compute_fp32_to_bf16.
// That function first flushed float denormals to ±0 exactly like this one (it
// was documented as binary identical to Zen 4's VCVTNEPS2BF16); later ggml
// versions dropped the flush and round them to bf16 subnormals instead, so they
// differ from ours, and from ggml's own AVX512-BF16 path, only for
// 0 < |x| < 2^-126. gguf-py, which writes BF16 GGUF files from f32, still
// flushes and therefore agrees with to_bf16 bit for bit.

#include <bit>
#include <cstdint>
#include <type_traits>

namespace ruvllm {

/// IEEE 754 binary16 storage: 1 sign, 5 exponent, 10 mantissa bits. Only a
/// container for the bits (no arithmetic), so that block structs mapped
/// straight from a GGUF file keep ggml's layout. == compares bits: +0 and -0
/// differ, and a NaN equals itself.
struct f16 {
  std::uint16_t bits;

  friend constexpr bool operator==(f16, f16) noexcept = default;
};

/// bfloat16 storage: the top half of an IEEE binary32 (1 sign, 8 exponent,
/// 7 mantissa bits). Same contract as f16.
struct bf16 {
  std::uint16_t bits;

  friend constexpr bool operator==(bf16, bf16) noexcept = default;
};

// Block structs (block_q8_0 = {f16 d; int8_t qs[32];} is 34 bytes) and
// memory-mapped tensors depend on these.
static_assert(sizeof(f16) == 2 && alignof(f16) == 2);
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2);
static_assert(std::is_trivially_copyable_v<f16> && std::is_standard_layout_v<f16> && std::is_aggregate_v<f16>);
static_assert(std::is_trivially_copyable_v<bf16> && std::is_standard_layout_v<bf16> && std::is_aggregate_v<bf16>);

/// Nearest f16 to x, ties to even; NaN and denormal rules in the file comment.
[[nodiscard]] constexpr f16 to_f16(float x) noexcept {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7FFF'FFFFu;
  if (a > 0x7F80'0000u) {  // NaN
    return f16{static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu))};
  }
  if (a >= 0x477F'F000u) {  // >= 65520: the tie goes to 2^16, whose even mantissa is inf
    return f16{static_cast<std::uint16_t>(sign | 0x7C00u)};
  }
  if (a >= 0x3880'0000u) {  // f16 normal range, [2^-14, 65520)
    // Adding just under half an f16 ulp, plus the kept lsb, rounds ties to
    // even; a carry out of the mantissa correctly bumps the exponent.
    const std::uint32_t rounded = (a + 0x0FFFu + ((a >> 13) & 1u)) >> 13;
    return f16{static_cast<std::uint16_t>(sign | (rounded - (112u << 10)))};
  }
  if (a <= 0x3300'0000u) {  // <= 2^-25, half the smallest subnormal: ties go to 0
    return f16{static_cast<std::uint16_t>(sign)};
  }
  // Subnormal result in units of 2^-24: the 24-bit significand shifted right
  // by 126 - exponent (14..24), rounded as above. Rounding up from 0x3FF
  // yields 0x400, which is the encoding of the smallest normal.
  const std::uint32_t significand = (a & 0x007F'FFFFu) | 0x0080'0000u;
  const std::uint32_t shift = 126u - (a >> 23);
  const std::uint32_t rounded = (significand + ((1u << (shift - 1)) - 1u) + ((significand >> shift) & 1u)) >> shift;
  return f16{static_cast<std::uint16_t>(sign | rounded)};
}

/// The float equal to h (exact); NaN rule in the file comment.
[[nodiscard]] constexpr float to_float(f16 h) noexcept {
  const std::uint32_t sign = (std::uint32_t{h.bits} & 0x8000u) << 16;
  const std::uint32_t exponent = (std::uint32_t{h.bits} >> 10) & 0x1Fu;
  const std::uint32_t mantissa = std::uint32_t{h.bits} & 0x03FFu;
  if (exponent == 0x1Fu) {  // inf, or NaN made quiet
    const std::uint32_t quiet = mantissa != 0 ? 0x0040'0000u : 0u;
    return std::bit_cast<float>(sign | 0x7F80'0000u | quiet | (mantissa << 13));
  }
  if (exponent != 0) {
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) {
    return std::bit_cast<float>(sign);
  }
  // Subnormal mantissa * 2^-24 with its top set bit at position p is the
  // normal float 2^(p - 24) * 1.f: biased exponent p + 103.
  const auto top = static_cast<std::uint32_t>(31 - std::countl_zero(mantissa));
  const std::uint32_t fraction = (mantissa << (23u - top)) & 0x007F'FFFFu;
  return std::bit_cast<float>(sign | ((top + 103u) << 23) | fraction);
}

/// Nearest bf16 to x, ties to even, float denormals to ±0; NaN rule in the
/// file comment.
[[nodiscard]] constexpr bf16 to_bf16(float x) noexcept {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t a = u & 0x7FFF'FFFFu;
  if (a > 0x7F80'0000u) {  // NaN
    return bf16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  }
  if (a < 0x0080'0000u) {  // zero or denormal
    return bf16{static_cast<std::uint16_t>((u >> 16) & 0x8000u)};
  }
  // Same exponent range as float, so only the mantissa is rounded; a carry
  // from the largest finite values gives inf, as round-to-nearest requires.
  return bf16{static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)};
}

/// The float equal to b (exact: bf16 is the top half of a float).
[[nodiscard]] constexpr float to_float(bf16 b) noexcept { return std::bit_cast<float>(std::uint32_t{b.bits} << 16); }

}  // namespace ruvllm

#endif  // RUVLLM_CORE_HALF_HPP
