// Runtime dispatch of the Highway kernels, and the build modes that decide
// where they are compiled.
//
// Modes (choose one per program; build every unit with the same flags):
//  * default, header-only: every unit that includes this header compiles all
//    kernels for every target Highway supports and defines the entry points
//    inline. Zero setup; the slowest to compile (~1 s per target per unit).
//  * one implementation unit: define RUVLLM_KERNELS_SEPARATE in every unit and
//    additionally RUVLLM_KERNELS_IMPLEMENTATION in exactly one. The others see
//    only declarations (and never parse Highway), so kernels compile once.
//  * RUVLLM_STATIC_DISPATCH (with -march=native -DHWY_WANT_AVX3_DL on x86):
//    only the target the compiler was told about is compiled and calls are
//    direct; libhwy is not needed for target detection. Combines with either
//    mode above.
// Runtime dispatch needs libhwy (hwy::hwy) for CPU detection; the
// ruvllm::ruvllm CMake target links it.
//
// Highway 1.0.3 allows one foreach_target.h expansion per unit, so this is
// the only header that runs it, over the umbrella kernels-inl.h. The file is
// laid out in three parts so that the generated single header, which names
// itself in HWY_TARGET_INCLUDE, can re-include everything: a guarded
// prologue, the toggle-guarded kernel bodies, and the exports, which only the
// final pass (HWY_ONCE) may see.

#ifndef RUVLLM_KERNELS_DISPATCH_HPP
#define RUVLLM_KERNELS_DISPATCH_HPP

#include <cstddef>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/x86_intrinsics.hpp"
#include "ruvllm/kernels/avx_vnni.hpp"
#include "ruvllm/kernels/gemv_plan.hpp"
// Scalar references, which per-target bodies may forward to (Highway's
// SCALAR target lacks several ops).
#include "ruvllm/kernels/scalar.hpp"

#if defined(RUVLLM_KERNELS_IMPLEMENTATION) || !defined(RUVLLM_KERNELS_SEPARATE)
#define RUVLLM_KERNELS_EXPAND 1
#else
#define RUVLLM_KERNELS_EXPAND 0
#endif

#if defined(RUVLLM_KERNELS_IMPLEMENTATION)
#define RUVLLM_KERNEL_API
#else
#define RUVLLM_KERNEL_API inline
#endif

// True outside Highway's per-target re-inclusion passes.
#define RUVLLM_KERNELS_FINAL_PASS (!RUVLLM_KERNELS_EXPAND || HWY_ONCE)

// Every dispatched kernel, once: X(return type, name, (parameters), (arguments)).
// Each name has a per-target definition in a kernels/*-inl.h file; the
// family entry points in kernels/highway/*.hpp call dispatch::name.
#define RUVLLM_KERNELS_EXPORTED(X)    \
  /* target-inl.h */                  \
  X(const char*, target_name, (), ()) \
  /* distance-inl.h */                \
  RUVLLM_DISTANCE_EXPORTED(X)         \
  /* matmul-inl.h */                  \
  RUVLLM_MATMUL_EXPORTED(X)           \
  /* norm-inl.h */                    \
  RUVLLM_NORM_EXPORTED(X)             \
  /* activation-inl.h */              \
  RUVLLM_ACTIVATION_EXPORTED(X)       \
  /* rope-inl.h */                    \
  RUVLLM_ROPE_EXPORTED(X)             \
  /* quant-inl.h */                   \
  RUVLLM_QUANT_EXPORTED(X)            \
  /* attention-inl.h */               \
  RUVLLM_ATTENTION_EXPORTED(X)        \
  /* kv_quant-inl.h */                \
  RUVLLM_KV_QUANT_EXPORTED(X)

#if RUVLLM_KERNELS_EXPAND
// GCC 12's AVX-512 intrinsic headers start many operations from an
// `_mm512_undefined_*()` value, which -Wmaybe-uninitialized reports wherever
// such an intrinsic is inlined (GCC bug 105593, fixed in GCC 13). Warnings
// are classified by the location they point to, inside the intrinsic
// headers, so reading <immintrin.h> here first with them off (Highway reads
// it next) keeps -Werror builds of the kernels clean without hiding anything
// in other code.
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
// Highway's SVE targets are left out: several kernels keep vectors in
// arrays, members and lambda captures, which SVE's sizeless vector types
// cannot be, so AArch64 runs the NEON target. A program that sets
// HWY_DISABLED_TARGETS itself must list them too, and one that includes
// Highway's headers before ruvllm's has fixed its targets already (the
// SVE ones then fail to compile).
#if defined(__aarch64__) && !defined(HWY_DISABLED_TARGETS)
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
#if defined(RUVLLM_STATIC_DISPATCH) && !defined(HWY_COMPILE_ONLY_STATIC)
#define HWY_COMPILE_ONLY_STATIC 1
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ruvllm/kernels/kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#endif

#endif  // RUVLLM_KERNELS_DISPATCH_HPP

#if RUVLLM_KERNELS_EXPAND
#include "ruvllm/kernels/kernels-inl.h"
#endif

#if RUVLLM_KERNELS_FINAL_PASS
#ifndef RUVLLM_KERNELS_DISPATCH_EXPORTS_HPP
#define RUVLLM_KERNELS_DISPATCH_EXPORTS_HPP

namespace ruvllm::kernels {

#if RUVLLM_KERNELS_EXPAND && !defined(RUVLLM_STATIC_DISPATCH)
#define RUVLLM_DETAIL_EXPORT(R, NAME, PARAMS, ARGS) HWY_EXPORT(NAME);
RUVLLM_KERNELS_EXPORTED(RUVLLM_DETAIL_EXPORT)
#undef RUVLLM_DETAIL_EXPORT
#endif

/// Entry points that pick the kernel for this CPU. Each call costs one
/// indirect jump (~1.3 ns): call once per batch of rows, never per element.
namespace dispatch {
#if !RUVLLM_KERNELS_EXPAND
#define RUVLLM_DETAIL_ENTRY(R, NAME, PARAMS, ARGS) R NAME PARAMS noexcept;
#elif defined(RUVLLM_STATIC_DISPATCH)
#define RUVLLM_DETAIL_ENTRY(R, NAME, PARAMS, ARGS) \
  RUVLLM_KERNEL_API R NAME PARAMS noexcept { return HWY_STATIC_DISPATCH(NAME) ARGS; }
#else
#define RUVLLM_DETAIL_ENTRY(R, NAME, PARAMS, ARGS) \
  RUVLLM_KERNEL_API R NAME PARAMS noexcept { return HWY_DYNAMIC_DISPATCH(NAME) ARGS; }
#endif
RUVLLM_KERNELS_EXPORTED(RUVLLM_DETAIL_ENTRY)
#undef RUVLLM_DETAIL_ENTRY
}  // namespace dispatch

}  // namespace ruvllm::kernels

#if RUVLLM_KERNELS_EXPAND
RUVLLM_KERNEL_API const char* ruvllm::backend::highway::target_name() noexcept {
  return kernels::dispatch::target_name();
}
#endif

#endif  // RUVLLM_KERNELS_DISPATCH_EXPORTS_HPP
#endif  // RUVLLM_KERNELS_FINAL_PASS
