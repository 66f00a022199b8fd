#ifndef RUVLLM_BENCH_SUPPORT_STREAM_PROBE_HPP
#define RUVLLM_BENCH_SUPPORT_STREAM_PROBE_HPP

// A STREAM-like probe of the memory bandwidth, the denominator of every
// bw_frac counter (bench.hpp): memory-bound kernels (GEMV, KV-cache scans)
// can at best reach it, so bw_frac says how much is left. It is measured in
// the same process as the rows it judges because the machine is shared: a
// co-tenant moves the bandwidth between runs, and a ratio to a figure from
// another run would mix two machines.
//
//  * read: the sum of a 512 MiB buffer (larger than the L3 of the machines
//    we measure on: 32 MiB on the EPYCs, and an Intel VM that reports 300
//    MiB; in 2 MiB pages where the kernel gives them, as the inputs it
//    judges: huge_page_bytes below), one contiguous slice per thread, with
//    the widest vector loads the CPU runs (AVX-512, AVX2, else the
//    baseline), once without software prefetch, once prefetching 48 KiB
//    ahead into L2, and once with the GEMV kernels' two streams
//    (prefetch_ahead: 8 KiB ahead into L1 and 16 KiB into L2); the best of
//    the three counts. (On a Zen 4 guest the
//    three read within 3% of each other, ~23.5 GB/s at one thread, while a
//    1B Q8_0 decode step read ~27: there the probe understates the limit
//    and bw_frac can exceed 1.) The figure must be the memory's, not the loop's: an
//    SSE2 loop of eight double accumulators read only 10 GB/s on one
//    Sapphire Rapids core where AVX-512 loads with prefetches read 16.5
//    (and a quantized GEMV read 14), which made every bw_frac there look
//    40% better than it was.
//  * triad: a[i] = b[i] + s * c[i], the three arrays being thirds of the same
//    buffer; bytes counted as STREAM does (3 x 8 per element; the
//    write-allocate read of a is not counted).
// bw_frac divides by read, not triad, because the kernels it judges (GEMV,
// KV-cache and index scans) only read.
// Each figure is the best of several passes after a warm-up pass: the best
// pass is the one the co-tenant disturbed least. Passes are timed on the
// clock of bench.hpp (CPU time for one thread, wall time for more), so a
// row's bw_frac compares like with like. A figure is kept for
// probe_max_age and then measured again on the next use, so rows that run
// for minutes (a model's decode) are judged against the bandwidth of their
// own minutes, not of the start of the run.
//
// The calling thread works on slice 0 itself, so that Google Benchmark, which
// sizes iteration counts by the calling thread's CPU time, sees the pass.
// The buffer is allocated on first use and kept until exit.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <latch>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ruvllm/core/x86_intrinsics.hpp"
#include "ruvllm/memory/page_memory.hpp"
#include "support/clock.hpp"

namespace ruvllm::bench {

/// Best read and triad bandwidth of this process at one thread count, in GB/s (1e9 bytes).
struct stream_bandwidth {
  double read_gbps = 0.0;
  double triad_gbps = 0.0;
};

namespace detail {

/// Reports a benchmark set-up failure and stops the process.
[[noreturn]] inline void fail(const std::string& message) {
  std::fprintf(stderr, "ruvllm bench: %s\n", message.c_str());
  std::abort();
}

}  // namespace detail

/// At least `bytes` zero bytes (whole 2 MiB pages) in memory::page_memory,
/// 2 MiB-aligned with MADV_HUGEPAGE, for a benchmark's large read-only
/// inputs (a synthetic model's GGUF image, the GEMV plan weights) and the
/// stream probe's buffer; fails the run if the system refuses. That is what
/// a model file gets: on Linux 6.x a read-only mapping of a large file
/// starts on a 2 MiB boundary, and where the file system keeps large
/// page-cache folios it is mapped through 2 MiB pages (ext4 on 6.18: a 1 GiB
/// file, freshly written or read cold, was all FilePmdMapped). Heap memory
/// (operator new, whose large blocks glibc maps with 4 KiB pages when
/// transparent huge pages are "madvise") costs a TLB miss per 4 KiB
/// instead, in a VM a two-level page walk: on a Zen 5 guest at one thread,
/// over 1 GiB of Q4_0 rows of 2048 columns, the GEMV read 24.7-28.6 GB/s
/// through 4 KiB pages and 32.5-36.7 through 2 MiB ones, a plain read
/// 29.5-36.1 and 39.0-42.8. Inputs and probe share the page size, so
/// bw_frac compares like with like.
[[nodiscard]] inline memory::page_memory huge_page_bytes(std::size_t bytes) {
  const std::size_t page = memory::huge_page_bytes;
  auto allocated = memory::page_memory::allocate((std::max<std::size_t>(bytes, 1) + page - 1) / page * page);
  if (!allocated) detail::fail(allocated.error().describe());
  return std::move(*allocated);
}

namespace detail {

inline constexpr std::size_t stream_buffer_bytes = std::size_t{512} << 20;
inline constexpr int stream_warmup_passes = 1;
inline constexpr int stream_timed_passes = 5;

/// Software prefetch of a read pass: bytes ahead of the loads into L1 and
/// into L2 (0: no such stream), and the plan's row name in the benchmarks.
struct read_prefetch {
  std::size_t l1 = 0, l2 = 0;
  const char* name = "";
};
inline constexpr read_prefetch read_prefetch_plans[] = {
    {0, 0, "read_no_prefetch"}, {0, std::size_t{48} << 10, "read_l2_48k"}, {8 << 10, 16 << 10, "read"}};
inline constexpr std::chrono::seconds probe_max_age{30};

class stream_buffer {
 public:
  static stream_buffer& get() {
    static stream_buffer buffer;
    return buffer;
  }

  [[nodiscard]] double* data() noexcept { return reinterpret_cast<double*>(buffer_.data()); }
  [[nodiscard]] std::size_t size() const noexcept { return stream_buffer_bytes / sizeof(double); }
  // Each triad array is a third of the buffer, cut to whole cache lines so
  // all three start 64-byte aligned.
  [[nodiscard]] std::size_t triad_size() const noexcept { return size() / 3 / 8 * 8; }

 private:
  stream_buffer() : buffer_(huge_page_bytes(stream_buffer_bytes)) {
    // Written explicitly: page_memory's zero pages may be the shared zero
    // page until written, whose reads come from cache and would inflate the
    // probe.
    std::fill(data(), data() + size(), 1.0);
  }

  memory::page_memory buffer_;
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

// Sums of the bytes [p, p + 8 n) as 64-bit lanes, with the software prefetch
// of `ahead` in front of the loads (the baseline prefetches into L2 only, at
// the larger of the two distances). Independent
// accumulators (eight here, four vectors below) keep the add latency out of
// the figure.
inline std::uint64_t sum_baseline(const double* p, std::size_t n, read_prefetch ahead) noexcept {
  const auto* w = reinterpret_cast<const std::uint64_t*>(p);
  const std::size_t far = std::max(ahead.l1, ahead.l2);
  std::uint64_t s[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (far != 0) __builtin_prefetch(w + i + far / 8, 0, 2);
    for (std::size_t k = 0; k < 8; ++k) s[k] += w[i + k];
  }
  for (; i < n; ++i) s[0] += w[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) inline std::uint64_t sum_avx512(const double* p, std::size_t n,
                                                                   read_prefetch ahead) noexcept {
  const auto* c = reinterpret_cast<const char*>(p);
  const std::size_t bytes = n * 8, whole = bytes / 256 * 256;
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (std::size_t i = 0; i < whole; i += 256) {
    if (ahead.l1 != 0)
      for (std::size_t o = 0; o < 256; o += 64) _mm_prefetch(c + i + ahead.l1 + o, _MM_HINT_T0);
    if (ahead.l2 != 0)
      for (std::size_t o = 0; o < 256; o += 64) _mm_prefetch(c + i + ahead.l2 + o, _MM_HINT_T1);
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(c + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(c + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(c + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(c + i + 192));
  }
  const std::uint64_t rest = sum_baseline(p + whole / 8, n - whole / 8, {});
  return static_cast<std::uint64_t>(
             _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)))) +
         rest;
}

__attribute__((target("avx2"))) inline std::uint64_t sum_avx2(const double* p, std::size_t n,
                                                              read_prefetch ahead) noexcept {
  const auto* c = reinterpret_cast<const char*>(p);
  const std::size_t bytes = n * 8, whole = bytes / 128 * 128;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (std::size_t i = 0; i < whole; i += 128) {
    if (ahead.l1 != 0)
      for (std::size_t o = 0; o < 128; o += 64) _mm_prefetch(c + i + ahead.l1 + o, _MM_HINT_T0);
    if (ahead.l2 != 0)
      for (std::size_t o = 0; o < 128; o += 64) _mm_prefetch(c + i + ahead.l2 + o, _MM_HINT_T1);
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(c + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(c + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(c + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(c + i + 96)));
  }
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + sum_baseline(p + whole / 8, n - whole / 8, {});
}
#endif

/// The sum with the widest loads this CPU runs.
inline std::uint64_t sum(const double* p, std::size_t n, read_prefetch ahead) noexcept {
#if defined(__x86_64__) && defined(__GNUC__)
  static const int width = __builtin_cpu_supports("avx512f") ? 512 : __builtin_cpu_supports("avx2") ? 256 : 0;
  if (width == 512) return sum_avx512(p, n, ahead);
  if (width == 256) return sum_avx2(p, n, ahead);
#endif
  return sum_baseline(p, n, ahead);
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

/// One read pass on `threads` threads, with the software prefetch `ahead`
/// in front of the loads; returns its seconds on the bench clock.
inline double stream_read_pass(unsigned threads, detail::read_prefetch ahead) {
  detail::stream_buffer& buffer = detail::stream_buffer::get();
  const double* data = buffer.data();
  return detail::run_sliced(threads, buffer.size(), [data, ahead](std::size_t begin, std::size_t end) {
    benchmark::DoNotOptimize(detail::sum(data + begin, end - begin, ahead));
  });
}

/// A read pass with each of read_prefetch_plans; returns the fastest one's seconds.
inline double stream_read_best_pass(unsigned threads) {
  double best = std::numeric_limits<double>::infinity();
  for (const detail::read_prefetch& plan : detail::read_prefetch_plans)
    best = std::min(best, stream_read_pass(threads, plan));
  return best;
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

/// The read bandwidth at `threads` threads measured now, in GB/s: warm-up
/// passes, then the best of stream_timed_passes passes (about 0.2 s). The
/// probe's read figure, and the one rows that bracket their timed loop take
/// (bench.hpp, set_bracketed_bandwidth_counters).
[[nodiscard]] inline double stream_read_now(unsigned threads) {
  for (int pass = 0; pass < detail::stream_warmup_passes; ++pass) (void)stream_read_best_pass(threads);
  double seconds = stream_read_best_pass(threads);
  for (int pass = 1; pass < detail::stream_timed_passes; ++pass)
    seconds = std::min(seconds, stream_read_best_pass(threads));
  return stream_read_bytes() / seconds / 1e9;
}

/// The probe at `threads` threads: measured on the first call for that count
/// (about a second), then reused until it is older than probe_max_age.
[[nodiscard]] inline stream_bandwidth stream_probe(unsigned threads) {
  struct entry {
    stream_bandwidth bandwidth;
    std::chrono::steady_clock::time_point measured;
  };
  static std::mutex mutex;
  static std::map<unsigned, entry> cache;
  const std::lock_guard lock(mutex);
  const auto now = std::chrono::steady_clock::now();
  if (const auto it = cache.find(threads); it != cache.end() && now - it->second.measured < detail::probe_max_age)
    return it->second.bandwidth;
  const double read_gbps = stream_read_now(threads);
  for (int pass = 0; pass < detail::stream_warmup_passes; ++pass) (void)stream_triad_pass(threads);
  double triad_seconds = stream_triad_pass(threads);
  for (int pass = 1; pass < detail::stream_timed_passes; ++pass)
    triad_seconds = std::min(triad_seconds, stream_triad_pass(threads));
  const stream_bandwidth result{read_gbps, stream_triad_bytes() / triad_seconds / 1e9};
  cache[threads] = entry{result, std::chrono::steady_clock::now()};
  return result;
}

}  // namespace ruvllm::bench

#endif  // RUVLLM_BENCH_SUPPORT_STREAM_PROBE_HPP
