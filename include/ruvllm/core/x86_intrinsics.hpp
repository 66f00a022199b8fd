#ifndef RUVLLM_CORE_X86_INTRINSICS_HPP
#define RUVLLM_CORE_X86_INTRINSICS_HPP

// The one place <immintrin.h> is read. GCC 12's AVX-512 intrinsic headers
// start shifts and conversions from an `_mm512_undefined_*()` value, which
// -Wmaybe-uninitialized reports wherever such an intrinsic is inlined (GCC bug
// 105593, fixed in GCC 13). Warnings are classified by the location they point
// to, inside the intrinsic header, so silencing them while the header is first
// read keeps -Werror builds with AVX-512 targets clean without hiding anything
// in the caller's own code. Every ruvllm header that may be the first to pull
// in x86 intrinsics (directly, or through Highway or xsimd) includes this one
// first, so include guards keep the silenced copy.
#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif
#endif

#endif  // RUVLLM_CORE_X86_INTRINSICS_HPP
