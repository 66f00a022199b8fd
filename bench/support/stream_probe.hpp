#ifndef RUVLLM_BENCH_SUPPORT_STREAM_PROBE_HPP
#define RUVLLM_BENCH_SUPPORT_STREAM_PROBE_HPP

// A STREAM-like probe of the memory bandwidth, the denominator of every
// bw_frac counter (bench.hpp): memory-bound kernels (GEMV, KV-cache scans)
// can at best reach it, so bw_frac says how much is left. It is measured in
// every process because the machine is shared: a co-tenant moves the
// bandwidth between runs, and a ratio to a figure from another run would
// mix two machines.
//
//  * read: the sum of a 512 MiB buffer of doubles (16x the 32 MiB L3 of the
//    machines we measure on), one contiguous slice per thread. Eight
//    independent accumulators keep even an SSE2 build far from the add
//    latency limit, so the figure is the memory's, not the loop's.
//  * triad: a[i] = b[i] + s * c[i], the three arrays being thirds of the same
//    buffer; bytes counted as STREAM does (3 x 8 per element; the
//    write-allocate read of a is not counted).
// bw_frac divides by read, not triad, because the kernels it judges (GEMV,
// KV-cache and index scans) only read. Read can be the lower figure: on the
// 2-core EPYC we measure on, one thread reads ~16 GB/s but moves ~20 GB/s
// (as counted) in triad, the concurrent write stream adding parallelism.
// Each figure is the best of several passes after a warm-up pass: the best
// pass is the one the co-tenant disturbed least. Passes are timed on the
// clock of bench.hpp (CPU time for one thread, wall time for more), so a
// row's bw_frac compares like with like.
//
// The calling thread works on slice 0 itself, so that Google Benchmark, which
// sizes iteration counts by the calling thread's CPU time, sees the pass.
// The buffer is allocated on first use and kept until exit.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "ruvllm/core/aligned_buffer.hpp"
#include "support/clock.hpp"

namespace ruvllm::bench {

/// Best read and triad bandwidth of this process at one thread count, in GB/s (1e9 bytes).
struct stream_bandwidth {
  double read_gbps = 0.0;
  double triad_gbps = 0.0;
};

namespace detail {

inline constexpr std::size_t stream_buffer_bytes = std::size_t{512} << 20;
inline constexpr int stream_warmup_passes = 1;
inline constexpr int stream_timed_passes = 5;

class stream_buffer {
 public:
  static stream_buffer& get() {
    static stream_buffer buffer;
    return buffer;
  }

  [[nodiscard]] double* data() noexcept { return buffer_.data(); }
  [[nodiscard]] std::size_t size() const noexcept { return buffer_.size(); }
  // Each triad array is a third of the buffer, cut to whole cache lines so
  // all three start 64-byte aligned.
  [[nodiscard]] std::size_t triad_size() const noexcept { return buffer_.size() / 3 / 8 * 8; }

 private:
  stream_buffer() {
    auto allocated = aligned_buffer<double>::allocate(stream_buffer_bytes / sizeof(double));
    if (!allocated) {
      std::fprintf(stderr, "ruvllm bench: cannot allocate the %zu-byte stream probe buffer\n", stream_buffer_bytes);
      std::abort();
    }
    buffer_ = std::move(*allocated);
    // Written explicitly rather than trusting allocate()'s zeroing, which an
    // allocator may satisfy with the shared zero page: reads of that page
    // come from cache and would inflate the probe.
    std::fill(buffer_.begin(), buffer_.end(), 1.0);
  }

  aligned_buffer<double> buffer_;
};

// Splits [0, count) into `threads` contiguous slices and runs
// fn(begin, end) on each, slice 0 on the calling thread. Returns the seconds
// (on clock_seconds(threads)) from the first slice's start to the last
// slice's end, after all threads have met at a latch so that thread creation
// is not counted.
template <class Fn>
double run_sliced(unsigned threads, std::size_t count, Fn fn) {
  if (threads == 0) threads = 1;
  std::latch ready(static_cast<std::ptrdiff_t>(threads));
  std::vector<double> starts(threads), ends(threads);
  const auto work = [&](unsigned t) {
    const std::size_t begin = count * t / threads;
    const std::size_t end = count * (t + 1) / threads;
    ready.arrive_and_wait();
    starts[t] = clock_seconds(threads);
    fn(begin, end);
    ends[t] = clock_seconds(threads);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(work, t);
  work(0);
  for (std::thread& helper : helpers) helper.join();
  return *std::max_element(ends.begin(), ends.end()) - *std::min_element(starts.begin(), starts.end());
}

inline double sum(const double* p, std::size_t n) noexcept {
  double s[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t k = 0; k < 8; ++k) s[k] += p[i + k];
  for (; i < n; ++i) s[0] += p[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

inline void triad(double* a, const double* b, const double* c, double scalar, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
}

}  // namespace detail

/// Bytes one read pass moves.
[[nodiscard]] inline double stream_read_bytes() {
  return static_cast<double>(detail::stream_buffer::get().size() * sizeof(double));
}

/// Bytes one triad pass moves, counted as STREAM does.
[[nodiscard]] inline double stream_triad_bytes() {
  return static_cast<double>(3 * detail::stream_buffer::get().triad_size() * sizeof(double));
}

/// One read pass on `threads` threads; returns its seconds on the bench clock.
inline double stream_read_pass(unsigned threads) {
  detail::stream_buffer& buffer = detail::stream_buffer::get();
  const double* data = buffer.data();
  return detail::run_sliced(threads, buffer.size(), [data](std::size_t begin, std::size_t end) {
    benchmark::DoNotOptimize(detail::sum(data + begin, end - begin));
  });
}

/// One triad pass on `threads` threads; returns its seconds on the bench clock.
inline double stream_triad_pass(unsigned threads) {
  detail::stream_buffer& buffer = detail::stream_buffer::get();
  const std::size_t n = buffer.triad_size();
  double* a = buffer.data();
  const double* b = a + n;
  const double* c = b + n;
  return detail::run_sliced(threads, n, [=](std::size_t begin, std::size_t end) {
    detail::triad(a + begin, b + begin, c + begin, 3.0, end - begin);
    benchmark::ClobberMemory();
  });
}

/// The probe at `threads` threads: measured on the first call for that count
/// (about half a second), then cached for the life of the process.
[[nodiscard]] inline stream_bandwidth stream_probe(unsigned threads) {
  static std::mutex mutex;
  static std::map<unsigned, stream_bandwidth> cache;
  const std::lock_guard lock(mutex);
  if (const auto it = cache.find(threads); it != cache.end()) return it->second;
  for (int pass = 0; pass < detail::stream_warmup_passes; ++pass) {
    (void)stream_read_pass(threads);
    (void)stream_triad_pass(threads);
  }
  double read_seconds = stream_read_pass(threads);
  double triad_seconds = stream_triad_pass(threads);
  for (int pass = 1; pass < detail::stream_timed_passes; ++pass) {
    read_seconds = std::min(read_seconds, stream_read_pass(threads));
    triad_seconds = std::min(triad_seconds, stream_triad_pass(threads));
  }
  const stream_bandwidth result{stream_read_bytes() / read_seconds / 1e9, stream_triad_bytes() / triad_seconds / 1e9};
  cache.emplace(threads, result);
  return result;
}

}  // namespace ruvllm::bench

#endif  // RUVLLM_BENCH_SUPPORT_STREAM_PROBE_HPP
