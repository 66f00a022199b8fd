#ifndef RUVLLM_KERNELS_XSIMD_HALF_HPP
#define RUVLLM_KERNELS_XSIMD_HALF_HPP

// f16 -> f32 widening in xsimd batches, for the kernels of backend::xsimd
// (xsimd 8.1 has no f16 batches and no F16C wrapper).

#include <cstdint>

#include "ruvllm/kernels/xsimd/arch.hpp"

namespace ruvllm::kernels::xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {

/// Floats of the f16 bit patterns in the lanes of h (each < 2^16), bit for
/// bit ruvllm::to_float: the float bits are rebuilt, subnormals come from an
/// exact int-to-float conversion. Lanes are picked by float selects on
/// exact float comparisons of the magnitudes: xsimd 8.1's integer select
/// for AVX512BW does not compile unoptimized with GCC 12, whose
/// _mm512_mask_blend_epi8 / _epi16 are macros there that cannot convert
/// xsimd batches (and the select compiles every element size's case).
[[nodiscard]] inline ::xsimd::batch<float> f16_bits_to_float(::xsimd::batch<std::int32_t> h) noexcept {
  using vf = ::xsimd::batch<float>;
  using vi = ::xsimd::batch<std::int32_t>;
  const vi sign = (h & vi(0x8000)) << 16;
  const vi magnitude = h & vi(0x7FFF);
  const vf magnitude_f = ::xsimd::to_float(magnitude);  // exact: below 2^15
  // Rebias the exponent from 15 to 127; exponent 31 (inf/NaN) twice more
  // to reach 255, with the quiet bit set for NaNs.
  const vi rebias(112 << 23);
  const vi normal = (magnitude << 13) + rebias;
  const vf quiet = ::xsimd::select(magnitude_f > vf(31744.0f), ::xsimd::bitwise_cast<vf>(vi(0x0040'0000)), vf(0.0f));
  const vf special = ::xsimd::bitwise_cast<vf>((normal + rebias) | ::xsimd::bitwise_cast<vi>(quiet));
  const vf subnormal = magnitude_f * vf(1.0f / 16777216.0f);  // m * 2^-24
  vf value = ::xsimd::select(magnitude_f > vf(31743.0f), special, ::xsimd::bitwise_cast<vf>(normal));
  value = ::xsimd::select(magnitude_f < vf(1024.0f), subnormal, value);
  return ::xsimd::bitwise_cast<vf>(::xsimd::bitwise_cast<vi>(value) | sign);
}

}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace ruvllm::kernels::xsimd_impl

#endif  // RUVLLM_KERNELS_XSIMD_HALF_HPP
