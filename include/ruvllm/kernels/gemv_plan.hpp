#ifndef RUVLLM_KERNELS_GEMV_PLAN_HPP
#define RUVLLM_KERNELS_GEMV_PLAN_HPP

// How backend::highway's GEMV kernels stream weights from memory: which
// software prefetch runs ahead of the loads, and whether rows go in pairs
// that share each activation load. A decode step is one pass over the
// weights, so this choice sets its speed, and the best one differs between
// cores of the same SIMD target (Highway dispatches AVX3_DL on both Zen 4
// and Zen 5). Measured at one thread over 1 GiB of weights in matrices of
// 4096 rows (GB/s of weights; a plain AVX-512 read of the same machine in
// brackets; ranges over repeated runs on a shared host):
//
//                  Zen 4 EPYC guest [23-27]     Zen 5 EPYC guest [34-40]
//   f16 768 cols   pairs_l1_l2 25-26.5          pairs_l1_l2 28-29, rows_l1 35.7-37.6
//   f16 2048       pairs_l1_l2 26.8-29          pairs_l1_l2 23-30, rows_l1 36.2-36.9
//   f16 8192       pairs_l1_l2 25.4-28.6        pairs_l1_l2 26-31.5, rows_l1 29.4-31.1
//   Q8_0 2048      pairs_l1_l2 27.3             pairs_l1_l2 27-32, rows_l1 30-34
//   Q4_0 2048      pairs_l1_l2 25.2-25.5        pairs_l1_l2 30-31.4, rows_l1 33.4-36.8
//
// On the Zen 4 guest (model_bench decode with --gemv_plan, two rounds of
// each plan alternating, tok/s at one thread) pairs_l1_l2 was the faster
// plan for the 1B models, Q4_0 37.1-39.7 against rows_l1's 24.4-25.9, Q8_0
// 18.5-21.7 against 16.9-17.6, f16 9.1-10.4 against 7.0-9.4; on the 110M
// ones the plans were within the host's noise (f16 86-88 against 92-94,
// Q4_0 270-285 against 280-281), and so were all rows at two threads. On
// the Zen 5 guest a 1B decode at one thread ran f16 at 16.4-17.1 tok/s
// under rows_l1 against 13.2-13.6 under pairs_l1_l2, Q4_0 at 55.7-63.2 against 54.6-59.8 and Q8_0 at 30.6-32.5
// against 28.4-30; 110M f16 at 163-172 against 105-122. Zen 5's hardware
// prefetchers follow one sequential stream well and the L2 software stream
// only takes load slots from it, while paired rows (two streams) lose the
// hardware prefetchers. Zen 4 needed both software streams (the L2 stream
// alone read Q4_0 at 10.8 GB/s, no software prefetch 15-20) and gained from
// pairs (notes in target-inl.h, matmul-inl.h and quant-inl.h). The exception
// on Zen 5: a 110M Q4_0 model (62 MB, partly served by the 32 MB L3, which
// co-tenants share) decoded at 474-503 tok/s under rows_l1 against 517-558
// under pairs_l1_l2; rows_l1 is kept for the models that do not fit in cache.
// Two Zen 5 variants of the Q4_0 rows that shared each activation load
// between two rows were faster than one row at a time from cache (1.13-1.19
// ns per quad against 1.21-1.35) and slower from DRAM (1 GiB of 2048
// columns, one thread, medians of interleaved runs): adjacent rows, each
// with its own L1 stream, 20.0-23.4 GB/s against 26.2-28.5; rows half a work
// item apart (two streams in different pages) 21.1-26.8 against 24.5-27.2,
// and with L2 streams instead 23.5-24.5. One stream per thread stays.
// Two layouts that share the activation loads and keep a single stream
// gained nothing from DRAM either (Q4_0, 1 GiB, one thread, medians of
// interleaved runs against one row at a time): adjacent rows read side by
// side under one L1 stream following the later row, 25.0-25.7 GB/s against
// 26.0-27.6 at 2048 columns and 21.8-22.1 against 23.3-24.1 at 8192; and the
// quads of four rows interleaved in memory (the layout a repacked copy of
// the weights would have), one stream and one load of each quad's
// activations for all four rows, 27.6-33.2 against 30.2-32.6 at 2048
// columns and 22.7-30.0 against 29.2-30.4 at 8192. So a repacked copy would
// not pay for giving up weights used in place from the map. What long
// rows did need was line_prefetcher's lines as non-temporal ones
// (target-inl.h); the quantized rows_l1 figures above predate that.
//
// The default comes from CPUID: rows_l1 on AMD family 1Ah (Zen 5) and later,
// pairs_l1_l2 everywhere else. use_gemv_plan() overrides it for the whole
// program (bench/gemv_bench's gemv_plan rows compare the plans in one run,
// and every benchmark takes --gemv_plan=NAME; a user tuning for a core not
// measured here can do the same). Every plan
// gives the same bits: a row's arithmetic is the same paired or alone, and
// prefetches change no values.

#include <atomic>
#include <cstdint>
#include <string_view>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace ruvllm::kernels {

enum class gemv_plan : std::uint8_t {
  /// Prefetch 8 KiB ahead into L1 and 16 KiB ahead into L2; dense and Q4_0
  /// rows in pairs (Q8_0 one at a time: pairs slowed it on Zen 4).
  pairs_l1_l2,
  /// One row at a time, prefetch 8 KiB ahead into L1 only (non-temporal for
  /// the quantized rows, see line_prefetcher in target-inl.h).
  rows_l1,
};

[[nodiscard]] constexpr std::string_view gemv_plan_name(gemv_plan plan) noexcept {
  return plan == gemv_plan::rows_l1 ? "rows_l1" : "pairs_l1_l2";
}

/// The plan measured best on this CPU (see the file comment).
[[nodiscard]] inline gemv_plan detected_gemv_plan() noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  unsigned max_leaf = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &max_leaf, &ebx, &ecx, &edx) == 0 || max_leaf < 1) return gemv_plan::pairs_l1_l2;
  // "AuthenticAMD" in ebx, edx, ecx.
  const bool amd = ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u;
  unsigned eax = 0;
  if (!amd || __get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return gemv_plan::pairs_l1_l2;
  const unsigned base_family = (eax >> 8) & 0xfu;
  const unsigned family = base_family == 0xfu ? base_family + ((eax >> 20) & 0xffu) : base_family;
  if (family >= 0x1au) return gemv_plan::rows_l1;
#endif
  return gemv_plan::pairs_l1_l2;
}

namespace detail {
inline std::atomic<gemv_plan>& gemv_plan_state() noexcept {
  static std::atomic<gemv_plan> plan{detected_gemv_plan()};
  return plan;
}
}  // namespace detail

/// The plan GEMV calls use now.
[[nodiscard]] inline gemv_plan gemv_plan_in_use() noexcept {
  return detail::gemv_plan_state().load(std::memory_order_relaxed);
}

/// Makes every later GEMV call of backend::highway use `plan`. Safe to call
/// at any time from any thread; a call already running finishes under the
/// plan it started with (results are the same bits either way).
inline void use_gemv_plan(gemv_plan plan) noexcept { detail::gemv_plan_state().store(plan, std::memory_order_relaxed); }

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_GEMV_PLAN_HPP
