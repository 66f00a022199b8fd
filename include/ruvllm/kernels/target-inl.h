// Per-target identification, compiled once per SIMD target like every
// kernel. Highway 1.0.3 has no DispatchedTarget(), so the dispatched function
// itself reports which target it was compiled for.

#if defined(RUVLLM_KERNELS_TARGET_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_TARGET_INL_H_
#undef RUVLLM_KERNELS_TARGET_INL_H_
#else
#define RUVLLM_KERNELS_TARGET_INL_H_
#endif

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {

inline const char* target_name() { return hwy::TargetName(HWY_TARGET); }

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_TARGET_INL_H_ toggle
