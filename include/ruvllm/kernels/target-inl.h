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

#include <algorithm>
#include <cstddef>

#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {

inline const char* target_name() { return hwy::TargetName(HWY_TARGET); }

/// Software prefetch of a weight-streaming call's bytes, one cache line per
/// instruction, in two streams kept fixed distances ahead of the bytes
/// consumed so far: into L1 8 KiB ahead, and into L2 (prefetcht1 on x86)
/// 16 KiB ahead. GEMV kernels read one row at a time, so the weights are one
/// sequential stream: the hardware prefetchers follow it, and these streams
/// run far enough ahead of them to overlap DRAM latency with the kernels'
/// arithmetic.
///   * The L2 stream keeps more lines in flight than L1's miss buffers
///     allow. In 110M / 1B decode steps on a Zen 4 EPYC guest at one thread
///     (a plain AVX-512 read ~23 GB/s there), against the L1 stream alone:
///     Q4_0 +26% / +31%, Q8_0 +14%; at two threads 110M Q4_0 +23%, Q8_0 +15%.
///     Prefetching into L1 32 KiB ahead instead lost 10%, and an L2 stream
///     24 or 32 KiB ahead was within noise of 16.
///   * The L1 stream alone, on Zen 5, GEMV over a 1 GiB matrix of 2048
///     columns (a plain AVX-512 read ~30 GB/s at one thread, ~50-58 at
///     two): Q4_0 24-26.5 GB/s at one thread, 48-50 at two (4 and 16 KiB
///     within noise of 8); the hardware prefetchers alone 23-24 at one
///     thread. Four rows side by side (which loses the hardware
///     prefetchers) with 48 KiB (L2) and 4 KiB (L1) streams read only 18-19
///     and 35-36.
/// Positions are offsets into the call's bytes, so no pointer is ever formed
/// past them (a matrix may be smaller than the distances).
/// Bytes a call over `rows` rows of `row_bytes` bytes, `stride_bytes` apart,
/// spans: from the first row's first byte to the last row's last.
[[nodiscard]] constexpr std::size_t call_bytes(std::size_t rows, std::size_t stride_bytes,
                                               std::size_t row_bytes) noexcept {
  return rows == 0 ? 0 : (rows - 1) * stride_bytes + row_bytes;
}

struct weight_prefetcher {
  static constexpr std::size_t l1_distance = std::size_t{8} << 10;
  static constexpr std::size_t l2_distance = std::size_t{16} << 10;

  const char* base;
  std::size_t bytes;
  std::size_t next_l1 = l1_distance;
  std::size_t next_l2 = l2_distance;

  /// Over `rows` rows of `row_bytes` bytes, `stride_bytes` apart from
  /// `first_row`: the call's bytes end with the last row's last byte.
  /// With `limit`, only the call's first `limit` bytes are prefetched.
  weight_prefetcher(const void* first_row, std::size_t rows, std::size_t stride_bytes, std::size_t row_bytes,
                    std::size_t limit = ~std::size_t{0})
      : base(static_cast<const char*>(first_row)), bytes(std::min(call_bytes(rows, stride_bytes, row_bytes), limit)) {}

  /// `consumed_at` points into the call's bytes (or one past them).
  HWY_INLINE void advance(const void* consumed_at) {
    const auto consumed = static_cast<std::size_t>(static_cast<const char*>(consumed_at) - base);
    // Locality 3: prefetcht0 on x86 (L1); 2: prefetcht1 (L2), PLDL2KEEP on Arm.
    run_ahead<3>(next_l1, consumed + l1_distance);
    run_ahead<2>(next_l2, consumed + l2_distance);
  }

 private:
  template <int Locality>
  HWY_INLINE void run_ahead(std::size_t& next, std::size_t to) const {
    for (to = to < bytes ? to : bytes; next < to; next += 64) __builtin_prefetch(base + next, 0, Locality);
  }
};

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_TARGET_INL_H_ toggle
