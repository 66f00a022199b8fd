#ifndef RUVLLM_KERNELS_XSIMD_ARCH_HPP
#define RUVLLM_KERNELS_XSIMD_ARCH_HPP

// The architecture xsimd kernels are compiled for in this unit (SSE2 without
// -march flags, AVX2 or AVX-512 with -march=native). Every xsimd kernel sits
// in the inline namespace RUVLLM_XSIMD_ARCH_NS named after it, so units built
// with different flags never merge each other's inline functions.

// GCC 12's AVX-512 intrinsic headers start shifts and conversions from an
// `_mm512_undefined_*()` value, which -Wmaybe-uninitialized reports wherever
// such an intrinsic is inlined (GCC bug 105593, fixed in GCC 13). Warnings
// are classified by the location they point to, so silencing them while
// <immintrin.h> is first read keeps -march=native -Werror builds of these
// headers clean without hiding anything in the caller's own code.
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
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
