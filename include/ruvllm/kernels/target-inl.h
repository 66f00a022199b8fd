// Per-target identification and the helpers every kernel file shares,
// compiled once per SIMD target like every kernel. Highway 1.0.3 has no
// DispatchedTarget(), so the dispatched function itself reports which target
// it was compiled for.

#if defined(RUVLLM_KERNELS_TARGET_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_TARGET_INL_H_
#undef RUVLLM_KERNELS_TARGET_INL_H_
#else
#define RUVLLM_KERNELS_TARGET_INL_H_
#endif

#include <cstddef>

#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {

inline const char* target_name() { return hwy::TargetName(HWY_TARGET); }

/// Software prefetch of a weight-streaming call's bytes, in two sequential
/// streams kept ahead of an estimate of the bytes consumed so far: into L2
/// ~48 KiB ahead (L2 tracks more misses in flight than L1, and bandwidth x
/// latency is tens of KiB), then into L1 ~4 KiB ahead, one cache line per
/// instruction. GEMV kernels read groups of rows side by side, and four
/// interleaved row streams lose the hardware prefetchers: on Zen 5 a Q4_0
/// GEMV streamed from DRAM at ~45-55% of the bandwidth on the hardware
/// prefetchers alone, ~65% with one stream into L1, ~75-85% with both; L2
/// distances from 24 to 192 KiB measured alike. Positions are offsets into
/// the call's bytes, so no pointer is ever formed past them (a matrix may be
/// smaller than the distances).
struct weight_prefetcher {
  const char* base;
  std::size_t bytes;
  std::size_t far, near;
  std::size_t next_far, next_near;

  /// `consumed_at` points into the call's bytes (or one past them).
  HWY_INLINE void advance(const void* consumed_at) {
    const auto consumed = static_cast<std::size_t>(static_cast<const char*>(consumed_at) - base);
    const std::size_t to_far = consumed + far < bytes ? consumed + far : bytes;
    for (; next_far < to_far; next_far += 64) prefetch_l2(base + next_far);
    const std::size_t to_near = consumed + near < bytes ? consumed + near : bytes;
    for (; next_near < to_near; next_near += 64) hwy::Prefetch(base + next_near);
  }
  static HWY_INLINE void prefetch_l2(const char* p) {
#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
    __builtin_prefetch(p, 0, 2);
#else
    hwy::Prefetch(p);
#endif
  }
};

/// The prefetcher of a call over [base, base + bytes) that reads groups of
/// `group_bytes` (rows side by side): the distances are the measured ones
/// plus a group's span, since a group's last row is read that far ahead of
/// the bytes-consumed estimate.
HWY_INLINE weight_prefetcher make_weight_prefetcher(const void* base, std::size_t bytes, std::size_t group_bytes) {
  const std::size_t far = (std::size_t{48} << 10) + group_bytes, near = (std::size_t{4} << 10) + group_bytes;
  return weight_prefetcher{static_cast<const char*>(base), bytes, far, near, far, near};
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_TARGET_INL_H_ toggle
