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

/// Software prefetch of a weight-streaming call's bytes into L1, one cache
/// line per instruction, kept a fixed distance ahead of the bytes consumed so
/// far. GEMV kernels read one row at a time (the quantized ones with long
/// rows excepted, vnni::group_row in quant-inl.h), so the weights are one
/// sequential stream: the hardware prefetchers follow it, and this stream
/// runs far enough ahead of them to overlap DRAM latency with the kernels'
/// arithmetic. Measured on Zen 5, GEMV over a 1 GiB matrix of 2048 columns
/// (a plain AVX-512 read of it: ~30 GB/s at one thread, ~50-58 at two):
///   * Q4_0 one row at a time, 8 KiB ahead: 24-26.5 GB/s at one thread,
///     48-50 at two (4 and 16 KiB within noise of 8); the hardware
///     prefetchers alone 23-24 at one thread;
///   * Q4_0 four rows side by side, which loses the hardware prefetchers,
///     with 48 KiB (L2) and 4 KiB (L1) software streams: 18-19 and 35-36;
///     even a bare read of four side-by-side rows stays near 24 at one
///     thread with those streams;
///   * Q8_0 one row at a time 23.5-24.4 at one thread, four rows 16-18.
/// Positions are offsets into the call's bytes, so no pointer is ever formed
/// past them (a matrix may be smaller than the distance).
/// Bytes a call over `rows` rows of `row_bytes` bytes, `stride_bytes` apart,
/// spans: from the first row's first byte to the last row's last.
[[nodiscard]] constexpr std::size_t call_bytes(std::size_t rows, std::size_t stride_bytes,
                                               std::size_t row_bytes) noexcept {
  return rows == 0 ? 0 : (rows - 1) * stride_bytes + row_bytes;
}

struct weight_prefetcher {
  static constexpr std::size_t distance = std::size_t{8} << 10;

  const char* base;
  std::size_t bytes;
  std::size_t next = distance;

  /// Over `rows` rows of `row_bytes` bytes, `stride_bytes` apart from
  /// `first_row`: the call's bytes end with the last row's last byte.
  /// With `limit`, only the call's first `limit` bytes are prefetched.
  weight_prefetcher(const void* first_row, std::size_t rows, std::size_t stride_bytes, std::size_t row_bytes,
                    std::size_t limit = ~std::size_t{0})
      : base(static_cast<const char*>(first_row)), bytes(std::min(call_bytes(rows, stride_bytes, row_bytes), limit)) {}

  /// `consumed_at` points into the call's bytes (or one past them).
  HWY_INLINE void advance(const void* consumed_at) {
    const auto consumed = static_cast<std::size_t>(static_cast<const char*>(consumed_at) - base);
    const std::size_t to = consumed + distance < bytes ? consumed + distance : bytes;
    for (; next < to; next += 64) hwy::Prefetch(base + next);
  }
};

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_TARGET_INL_H_ toggle
