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
#include <cstdint>
#include <type_traits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ruvllm/kernels/gemv_plan.hpp"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {

inline const char* target_name() { return hwy::TargetName(HWY_TARGET); }

/// Calls f(std::integral_constant<gemv_plan, P>{}) for the plan P in use
/// (gemv_plan.hpp): one branch per kernel call, and loops compiled for each
/// plan.
template <class F>
HWY_INLINE void with_gemv_plan(F&& f) {
  if (gemv_plan_in_use() == gemv_plan::rows_l1)
    f(std::integral_constant<gemv_plan, gemv_plan::rows_l1>{});
  else
    f(std::integral_constant<gemv_plan, gemv_plan::pairs_l1_l2>{});
}

/// Whether a plan runs the L2 stream besides the L1 one.
template <gemv_plan Plan>
inline constexpr bool prefetches_into_l2 = Plan == gemv_plan::pairs_l1_l2;

/// The lines of `bytes` bytes from l1 into L1 and, when the plan runs it,
/// from l2 into L2 (prefetcht0 and prefetcht1 on x86), a line of each at a time.
template <gemv_plan Plan>
HWY_INLINE void prefetch_lines(std::uintptr_t l1, std::uintptr_t l2, std::size_t bytes) {
  for (std::size_t k = 0; k < bytes; k += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(l1 + k), 0, 3);
    if constexpr (prefetches_into_l2<Plan>) __builtin_prefetch(reinterpret_cast<const void*>(l2 + k), 0, 2);
  }
}

/// Software prefetch for a kernel that streams its weights in order (GEMV
/// reads one row after another, so the weights of a call are one sequential
/// stream), issued once per step of its loop: the lines of the step's
/// `step_bytes` bytes at `at`, 8 KiB ahead into L1 and, under
/// gemv_plan::pairs_l1_l2, 16 KiB ahead into L2 (prefetcht1 on x86; on Zen 5
/// the L1 stream alone is faster, see gemv_plan.hpp; the notes below are
/// Zen 4's). The hardware prefetchers follow the stream too;
/// these run far enough ahead of them to overlap DRAM latency with the
/// kernel's arithmetic, and the L2 stream keeps more lines in flight than
/// L1's miss buffers allow. Consecutive steps cover the stream without gaps:
/// a step prefetches ceil(step_bytes / 64) consecutive lines from its own
/// start, and the next step starts at most that many lines later.
///   * Two unconditional instructions per line and step, no bookkeeping: a
///     stream that tracked how far it had prefetched (kept within the
///     call's bytes) cost ~20 instructions per Q4_0 step of 72 bytes, which
///     on a Zen 4 EPYC guest (one thread; a plain AVX-512 read 26-27 GB/s
///     there) held GEMV over 1 GiB of 2048 columns to 20.4 GB/s of Q4_0 and
///     23.4 of Q8_0, where these read 23.8 and 27.3 (and an L2-resident
///     Q4_0 GEMV computes at only ~24: the kernel's arithmetic is the limit
///     there); f16 at 768 / 2048 / 8192 columns 18.9 / 19.7 / 12.4 GB/s
///     with the tracked stream over each call's first 32 KiB only, 23-27 /
///     23-27 / 16-21 with these over all of it.
///   * Both streams are needed: the L2 stream alone read Q4_0 at 10.8 GB/s,
///     and a stream covering only the first of a Q8_0 step's three lines
///     at 10.4, far below no software prefetch at all (15-20).
///   * The distances, from decode steps at one thread on the same Zen 4
///     guest: into L1 32 KiB ahead instead of 8 lost 10%; into L2 24 or 32
///     KiB ahead was within noise of 16. On the Zen 5 guest under rows_l1
///     (weights in 2 MiB pages, as a model file maps there) 32 KiB into L1
///     did not hold up either: in one hour it read the GEMV benchmark's 1
///     GiB matrices of 2048 columns 8-26% faster than 8 KiB (medians of 8
///     interleaved runs) and decoded 1B Q4_0 / Q8_0 4-13% faster, but the
///     110M model 5% / 22% slower at one / two threads (likely because its
///     calls are short and each prefetched 32 KiB past its end; not
///     checked); an hour later the same binaries read the matrices at
///     0.94-1.04 of 8 KiB. A 32 KiB line_prefetcher bounded to each call's
///     rows read them at 0.80-0.89 of 8 KiB (not examined; a call's first
///     32 KiB then go without software prefetch). Prefetching a call's
///     first 8 KiB too, at its start (the lines before the stream's first),
///     was within the host's noise on the Zen 5 guest: faster in 19 of 36
///     alternating decode pairs (f16, Q8_0 and Q4_0; 110M and 1B; one and
///     two threads; three rounds).
/// The addresses are formed as integers: the lines prefetched may lie past
/// the weights (a prefetch never faults, and past the end of a call they
/// usually hold the next call's tensor).
inline constexpr std::size_t prefetch_l1_distance = std::size_t{8} << 10, prefetch_l2_distance = std::size_t{16} << 10;

template <gemv_plan Plan>
HWY_INLINE void prefetch_ahead(const void* at, std::size_t step_bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(at);
  prefetch_lines<Plan>(a + prefetch_l1_distance, a + prefetch_l2_distance, step_bytes);
}

/// prefetch_ahead's L1 stream under gemv_plan::rows_l1 for a kernel reading
/// one run of bytes in steps that are not whole lines: a cursor that
/// prefetches each line once. prefetch_ahead issues every line a step
/// touches from the step's own start, so such steps re-issue the lines they
/// share (a Q4_0 quad of 72 bytes: two prefetches per 1.125 lines, Q8_0's
/// 136 bytes three per 2.125). The same lines, issued once each: over 1 GiB
/// of 2048 columns (Zen 5 guest, one thread, six interleaved runs) Q4_0 read
/// 35.2 GB/s against 33.7 (median), Q8_0 33.4 against 32.7; one-thread
/// decode of 1B Q4_0 58.5-60.4 tok/s against 56.0-56.5, 110M Q4_0 572-596
/// against 528-585, Q8_0 within noise. (pairs_l1_l2 keeps prefetch_ahead:
/// on Zen 4, where it was measured, a tracked stream cost more than the
/// repeats; see prefetch_l1_distance.)
///
/// What the cursor costs where the kernel, not memory, sets the pace: in a
/// copy of the AVX3_DL Q4_0 row loop on the same Zen 5 guest (4096 columns,
/// 7-run medians), rows resident in L1 took 14-23% longer per quad with it
/// than without software prefetch, rows from L3 13-27% longer; one prefetch
/// per step, with no loop (the line at step + 8 KiB, missing one line in
/// nine), cost 0-5% / 2-14%, and over 1 GiB it gained as much as the cursor
/// at one thread (+5% against none; two prefetches per step +0%). That cost
/// is what two threads meet when the host gives them 70-85 GB/s; in the
/// full GEMV and decode benchmarks the difference stayed below this host's
/// run-to-run noise (paired runs 0.65-1.40), so the cursor stays. Each
/// prefetch takes a load slot (~1.125 per Q4_0 quad), which the quad loops
/// were bound by (see in_register in quant-inl.h). (These figures predate
/// in_register: that loop then also re-read its weights once per quad.)
///
/// Into L2 instead (prefetcht1 32 or 64 KiB ahead, no L1 stream), the Q4_0
/// rows read 1 GiB at 0.71-0.77 of a plain AVX-512 read where this stream
/// gave 0.75-0.85 (Zen 5 guest, one thread, runs interleaved). A synthetic
/// loop with the same weight loads and arithmetic but no activation loads
/// read at 0.85-0.92 with the L2 stream and 0.74-0.85 with this one, and so
/// did the Q4_0 rows with their activations held in registers (0.86-0.92
/// with the L2 stream; with the loads kept and only their 2^112 multiply
/// dropped, 0.79-0.82): the four L1-resident activation loads per quad,
/// not the weights' own loads or arithmetic, are what the slower DRAM rate
/// goes with (not their addresses: reading the same two quads for every
/// step changed nothing). A long row's activations do not fit in registers,
/// so this stream stays (rows of up to 1151 columns hold them there:
/// resident_quad_rows in quant-inl.h).
///
/// The lines come in as non-temporal ones (prefetchnta on x86; PLDL1STRM on
/// AArch64, not measured there), so the stream passing through L1 leaves
/// the activations the kernel reloads for every row in place. Long rows
/// showed it: a row's Q4_0 activations take 4 KiB at 2048 columns and 16 KiB
/// at 8192 (a 1B model's FFN down projection). With ordinary prefetches rows
/// of 8192 columns read 3-14% slower than rows of 2048, but as fast when a
/// timing-only copy of the kernel cycled through the first 4 KiB of the
/// activations along each row. Over 1 GiB (Zen 5 guest, one thread, medians
/// of 3 in five rounds alternating the two binaries) this stream read Q4_0
/// at 27.9-33.4 GB/s against 24.6-29.4 at 2048 columns and 25.1-29.0
/// against 21.0-24.4 at 8192; Q8_0 at 29.8-34.6 against 26.1-29.7 (2048)
/// and 24.4-32.4 against 20.9-27.2 (8192). It was faster in 18 of the 20
/// pairs, by 13-22% between the medians. The Q4_K and Q6_K rows moved
/// within the host's noise (28.3-35.2 against 26.9-37.3 GB/s over four
/// rounds) and gained in each round's ratio to the same run's L1 + L2
/// streams (pairs_l1_l2): Q4_K 1.29-1.51 against 1.09-1.33. prefetch_ahead
/// keeps ordinary prefetches: with non-temporal ones the f16 rows read 4-12%
/// slower (medians of three alternating rounds).
class line_prefetcher {
 public:
  /// Follows the run starting at `run`.
  explicit line_prefetcher(const void* run) noexcept
      : next_((reinterpret_cast<std::uintptr_t>(run) + prefetch_l1_distance) & ~std::uintptr_t{63}) {}

  /// Prefetches into L1 every line up to prefetch_l1_distance past
  /// `read_until`, the end of the bytes the next step reads.
  HWY_INLINE void until(const void* read_until) noexcept {
    const std::uintptr_t upto = reinterpret_cast<std::uintptr_t>(read_until) + prefetch_l1_distance;
    for (; next_ < upto; next_ += 64) __builtin_prefetch(reinterpret_cast<const void*>(next_), 0, 0);
  }

 private:
  std::uintptr_t next_;
};

/// prefetch_ahead for a kernel that reads rows two at a time, side by side
/// (rows r and r + 1, then r + 2 and r + 3, ...): one of these follows the
/// even rows and one the odd rows, each through the whole call. Consumption
/// advances along both rows at once, so a line 8 / 16 KiB ahead of it lies
/// 4 / 8 KiB further along the same row, or in the row two further down once
/// that passes the row's end. prefetch_ahead's linear addresses would instead
/// land in the partner row near row lengths of 8 or 16 KiB, on lines being
/// read already: over 1 GiB of f16 rows (Zen 4 guest, one thread) two-row
/// GEMV read 16 GB/s with them at 4096 and 8192 columns, where it reads 24.6-29.2
/// with these at every length from 768 to 8192 columns.
class row_pair_prefetcher {
 public:
  /// Follows rows first_row, first_row + 2, ... of the rows at `rows`,
  /// `row_bytes` long and `stride_bytes` apart. The address is formed as an
  /// integer: first_row may lie past the last row when there is none to follow.
  row_pair_prefetcher(const void* rows, std::size_t first_row, std::size_t row_bytes, std::size_t stride_bytes) noexcept
      : row_bytes_(row_bytes), skip_(2 * stride_bytes - row_bytes) {
    const auto row = reinterpret_cast<std::uintptr_t>(rows) + first_row * stride_bytes;
    l1_ = start(row, prefetch_l1_distance / 2, stride_bytes);
    l2_ = start(row, prefetch_l2_distance / 2, stride_bytes);
  }

  /// Prefetches the lines `step_bytes` long at both distances, then moves
  /// past them.
  HWY_INLINE void step(std::size_t step_bytes) noexcept {
    prefetch_lines<gemv_plan::pairs_l1_l2>(l1_.at, l2_.at, step_bytes);
    skip(step_bytes);
  }

  /// Moves past bytes read without prefetching (a row's tail), so the
  /// cursors stay in step with the rows.
  HWY_INLINE void skip(std::size_t bytes) noexcept {
    advance(l1_, bytes);
    advance(l2_, bytes);
  }

 private:
  struct cursor {
    std::uintptr_t at;
    std::size_t left_in_row;
  };

  cursor start(std::uintptr_t row, std::size_t ahead, std::size_t stride_bytes) const noexcept {
    // Rows of no bytes are never stepped through: a cursor that never
    // reaches a row's end.
    if (row_bytes_ == 0) return {row, SIZE_MAX};
    const std::size_t rows_ahead = ahead / row_bytes_, into_row = ahead % row_bytes_;
    return {row + rows_ahead * 2 * stride_bytes + into_row, row_bytes_ - into_row};
  }

  HWY_INLINE void advance(cursor& c, std::size_t bytes) const noexcept {
    c.at += bytes;
    while (bytes >= c.left_in_row) {
      bytes -= c.left_in_row;
      c.at += skip_;
      c.left_in_row = row_bytes_;
    }
    c.left_in_row -= bytes;
  }

  std::size_t row_bytes_, skip_;
  cursor l1_{}, l2_{};
};

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_TARGET_INL_H_ toggle
