#ifndef RUVLLM_BENCH_SUPPORT_CLOCK_HPP
#define RUVLLM_BENCH_SUPPORT_CLOCK_HPP

// The clock every benchmark figure is measured on (see "Timing" in
// bench.hpp): for work on one thread, that thread's CPU time, which leaves
// out the time a co-tenant held our core; for work on more threads, wall
// time, the only clock that covers the helper threads.

#include <time.h>

#include <chrono>
#include <cstdint>

namespace ruvllm::bench::detail {

/// Seconds on the clock for work on `threads` threads; only differences
/// taken on the same thread are meaningful.
inline double clock_seconds(unsigned threads) noexcept {
  if (threads <= 1) {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace ruvllm::bench::detail

namespace ruvllm::bench {

/// The calling thread's core clock as the work sees it, in GHz: a chain of
/// dependent integer adds (one cycle each) timed on the wall clock over
/// about 10 ms, 0 on CPUs without the chain below. It is below the core's
/// nominal clock when the core runs slower or when the hypervisor gives the
/// vCPU to another guest for part of the time, which a Firecracker guest
/// does not see as steal time (/proc/stat reports none) and which CPU-time
/// clocks count as ours. On the 2-vCPU Zen 5 guest we measure on it read
/// 3.1-3.5 and, minutes apart, 1.8-2.1, while the memory probe read the
/// same: compute-bound rows (GEMV from cache, prefill) then run up to ~1.8x
/// slower and memory-bound ones in part, so rows that export it (model
/// decode) can be compared across such periods.
[[nodiscard]] inline double core_clock_ghz() noexcept {
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__GNUC__)
#if defined(__x86_64__)
#define RUVLLM_BENCH_ADD "add $1, %0\n\t"
#else
#define RUVLLM_BENCH_ADD "add %0, %0, #1\n\t"
#endif
#define RUVLLM_BENCH_ADD4 RUVLLM_BENCH_ADD RUVLLM_BENCH_ADD RUVLLM_BENCH_ADD RUVLLM_BENCH_ADD
  constexpr std::uint64_t rounds = std::uint64_t{1} << 21;
  std::uint64_t chain = 0;
  const auto start = std::chrono::steady_clock::now();
  // Sixteen adds per round, each waiting for the previous one; the loop's
  // own counter is a separate chain the core runs alongside.
  for (std::uint64_t r = 0; r < rounds; ++r)
    __asm__ volatile(RUVLLM_BENCH_ADD4 RUVLLM_BENCH_ADD4 RUVLLM_BENCH_ADD4 RUVLLM_BENCH_ADD4 : "+r"(chain));
#undef RUVLLM_BENCH_ADD4
#undef RUVLLM_BENCH_ADD
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(chain) / ns;
#else
  return 0.0;
#endif
}

}  // namespace ruvllm::bench

#endif  // RUVLLM_BENCH_SUPPORT_CLOCK_HPP
