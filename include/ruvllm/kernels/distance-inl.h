// Highway distance kernels, compiled once per SIMD target. No include
// guard: the toggle below lets hwy/foreach_target.h re-include this file for
// each target, through the umbrella ruvllm/kernels/kernels-inl.h.

#if defined(RUVLLM_KERNELS_DISTANCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_DISTANCE_INL_H_
#undef RUVLLM_KERNELS_DISTANCE_INL_H_
#else
#define RUVLLM_KERNELS_DISTANCE_INL_H_
#endif

#include <cstddef>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Sum of a[i] * b[i]; any alignment, any n. Four accumulators hide the FMA
/// latency; the partial vector at the end is read through a zero-padded copy
/// so no load touches memory past a or b.
inline float dot_f32(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  auto acc0 = hn::Zero(d);
  auto acc1 = hn::Zero(d);
  auto acc2 = hn::Zero(d);
  auto acc3 = hn::Zero(d);
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    acc0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc0);
    acc1 = hn::MulAdd(hn::LoadU(d, a + i + lanes), hn::LoadU(d, b + i + lanes), acc1);
    acc2 = hn::MulAdd(hn::LoadU(d, a + i + 2 * lanes), hn::LoadU(d, b + i + 2 * lanes), acc2);
    acc3 = hn::MulAdd(hn::LoadU(d, a + i + 3 * lanes), hn::LoadU(d, b + i + 3 * lanes), acc3);
  }
  for (; i + lanes <= n; i += lanes) acc0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc0);
  if (i < n) {
    HWY_ALIGN float tail_a[HWY_MAX_BYTES / sizeof(float)] = {};
    HWY_ALIGN float tail_b[HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(tail_a, a + i, (n - i) * sizeof(float));
    std::memcpy(tail_b, b + i, (n - i) * sizeof(float));
    acc1 = hn::MulAdd(hn::Load(d, tail_a), hn::Load(d, tail_b), acc1);
  }
  acc0 = hn::Add(hn::Add(acc0, acc1), hn::Add(acc2, acc3));
  return hn::GetLane(hn::SumOfLanes(d, acc0));
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_DISTANCE_INL_H_ toggle
