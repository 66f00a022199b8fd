#ifndef RUVLLM_KERNELS_XSIMD_HPP
#define RUVLLM_KERNELS_XSIMD_HPP

// backend::xsimd: kernels written with xsimd for the architecture this unit
// is compiled for (SSE2 without -march flags, AVX2 or AVX-512 with
// -march=native). The code sits in an inline namespace named after that
// architecture, so units built with different flags never merge each other's
// inline functions.

#include <xsimd/xsimd.hpp>

#include <cstddef>

#include "ruvllm/core/backend.hpp"

#if XSIMD_WITH_AVX512BW
#define RUVLLM_XSIMD_ARCH_NS xsimd_avx512bw
#elif XSIMD_WITH_AVX512F
#define RUVLLM_XSIMD_ARCH_NS xsimd_avx512f
#elif XSIMD_WITH_FMA3_AVX2
#define RUVLLM_XSIMD_ARCH_NS xsimd_fma3_avx2
#elif XSIMD_WITH_AVX2
#define RUVLLM_XSIMD_ARCH_NS xsimd_avx2
#elif XSIMD_WITH_AVX
#define RUVLLM_XSIMD_ARCH_NS xsimd_avx
#elif XSIMD_WITH_SSE4_2
#define RUVLLM_XSIMD_ARCH_NS xsimd_sse4_2
#elif XSIMD_WITH_SSE2
#define RUVLLM_XSIMD_ARCH_NS xsimd_sse2
#elif XSIMD_WITH_NEON64
#define RUVLLM_XSIMD_ARCH_NS xsimd_neon64
#else
#define RUVLLM_XSIMD_ARCH_NS xsimd_generic
#endif

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {

/// Sum of a[i] * b[i]; any alignment. Same accumulator structure as the
/// Highway kernel, with a scalar loop for the last partial vector.
[[nodiscard]] inline float dot(const float* a, const float* b, std::size_t n) noexcept {
  using batch = ::xsimd::batch<float>;
  constexpr std::size_t lanes = batch::size;
  batch acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    acc0 = ::xsimd::fma(batch::load_unaligned(a + i), batch::load_unaligned(b + i), acc0);
    acc1 = ::xsimd::fma(batch::load_unaligned(a + i + lanes), batch::load_unaligned(b + i + lanes), acc1);
    acc2 = ::xsimd::fma(batch::load_unaligned(a + i + 2 * lanes), batch::load_unaligned(b + i + 2 * lanes), acc2);
    acc3 = ::xsimd::fma(batch::load_unaligned(a + i + 3 * lanes), batch::load_unaligned(b + i + 3 * lanes), acc3);
  }
  for (; i + lanes <= n; i += lanes)
    acc0 = ::xsimd::fma(batch::load_unaligned(a + i), batch::load_unaligned(b + i), acc0);
  float sum = ::xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

[[nodiscard]] inline const char* arch_name() noexcept { return ::xsimd::default_arch::name(); }

}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct ops<backend::xsimd> {
  [[nodiscard]] static float dot(const float* a, const float* b, std::size_t n) noexcept {
    return xsimd_impl::dot(a, b, n);
  }
};

}  // namespace ruvllm::kernels

inline const char* ruvllm::backend::xsimd::target_name() noexcept { return kernels::xsimd_impl::arch_name(); }

#endif  // RUVLLM_KERNELS_XSIMD_HPP
