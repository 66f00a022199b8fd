#ifndef RUVLLM_BENCH_SUPPORT_CLOCK_HPP
#define RUVLLM_BENCH_SUPPORT_CLOCK_HPP

// The clock every benchmark figure is measured on (see "Timing" in
// bench.hpp): for work on one thread, that thread's CPU time, which leaves
// out the time a co-tenant held our core; for work on more threads, wall
// time, the only clock that covers the helper threads.

#include <time.h>

#include <chrono>

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

#endif  // RUVLLM_BENCH_SUPPORT_CLOCK_HPP
