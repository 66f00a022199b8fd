#ifndef RUVLLM_KERNELS_XSIMD_ARCH_HPP
#define RUVLLM_KERNELS_XSIMD_ARCH_HPP

// The architecture xsimd kernels are compiled for in this unit (SSE2 without
// -march flags, AVX2 or AVX-512 with -march=native). Every xsimd kernel sits
// in the inline namespace RUVLLM_XSIMD_ARCH_NS named after it, so units built
// with different flags never merge each other's inline functions.

#include "ruvllm/core/x86_intrinsics.hpp"
#include <xsimd/xsimd.hpp>

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

namespace ruvllm::kernels::xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {
[[nodiscard]] inline const char* arch_name() noexcept { return ::xsimd::default_arch::name(); }
}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace ruvllm::kernels::xsimd_impl

inline const char* ruvllm::backend::xsimd::target_name() noexcept { return kernels::xsimd_impl::arch_name(); }

#endif  // RUVLLM_KERNELS_XSIMD_ARCH_HPP
