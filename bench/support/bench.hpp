#ifndef RUVLLM_BENCH_SUPPORT_BENCH_HPP
#define RUVLLM_BENCH_SUPPORT_BENCH_HPP

// The support API of ruvllm's benchmarks (Google Benchmark 1.7.1). Header-only
// so that each executable compiles it with its own flags, the -march=native
// ones included. Every figure is printed beside its baseline from the same
// run and exported as plain counters (never rate counters, so the console and
// the JSON show the same number).
//
// Row names: row_name(), baseline_of()
//   Our rows are area/kernel/precision/shape/threads:N, e.g.
//   "kernels/dot/f32/768/threads:1"; a baseline row is "baseline/" followed by
//   the name of the row it is measured for, e.g.
//   "baseline/kernels/dot/f32/768/threads:1". Rows without a precision or
//   shape (probes) drop those parts: "baseline/stream/read/threads:2".
//   Register with benchmark::RegisterBenchmark(name.c_str(), fn). Never call
//   Arg(), Range(), Threads(), UseRealTime(), MinTime(), Iterations() or
//   Repetitions() on a row: each appends "/768", "/threads:N", "/real_time",
//   ... to the name and breaks the convention (pass repetitions on the
//   command line instead).
//   N counts the threads our code runs on (the library runs on the threads it
//   is given; Google Benchmark's own threads are not used). Keep the calling
//   thread busy with one share of the work: Google Benchmark sizes the
//   iteration count by the calling thread's CPU time.
//
// Timing: timed_loop(state, body, threads = 1)
//   Runs the benchmark loop calling body() and measures it. Every counter
//   below derives from that time per iteration, so call timed_loop exactly
//   once per run of the benchmark function, before setting counters. The
//   clock depends on how many threads the row's work runs on:
//    * 1: the calling thread's CPU time (Google Benchmark's CPU column). It
//      leaves out the time a co-tenant held our core, which wall time counts:
//      at load 4 on 2 cores, the scalar dot at D=768 varied by 15% in wall
//      time across repetitions and by 2% in CPU time.
//    * more: wall time (the Time column), the only clock that covers the
//      helper threads.
//   PauseTiming() is not subtracted: keep per-iteration setup out of body.
//
// Speedup: record_baseline(state, name) and set_speedup(state, name, body)
//   speedup = baseline seconds per iteration / our seconds per iteration, on
//   the same shape and in the same process; > 1 means we are faster. Only our
//   rows export it. Both sides call their helper after timed_loop:
//    * a baseline row calls record_baseline(state, its own name): the registry
//      keeps the latest time per iteration under that name;
//    * our row calls set_speedup(state, baseline name, baseline body): it takes
//      the latest recorded time of that baseline; if there is none yet (the
//      baseline is registered after us, filtered out, or not yet drawn under
//      --benchmark_enable_random_interleaving) it runs baseline body directly
//      for a calibrated ~50 ms, on the clock of the baseline's thread count
//      (optional 4th argument, default 1), and records that.
//   Only the baseline side is remembered: a row's counters are final once it
//   returns, so a baseline measured later cannot fix an earlier row, and the
//   fallback guarantees every row has one. With --benchmark_repetitions=N each
//   repetition of our row uses the most recent baseline measurement, so
//   interleaved repetitions pair with neighbours in time. Google Benchmark
//   calls each function several times while sizing the iteration count; every
//   call overwrites the previous record, so the one that is reported (the
//   last) leaves the final value.
//
// Bandwidth: set_bandwidth_counters(state, bytes_moved_per_iteration, threads)
//   GBps = bytes / seconds per iteration / 1e9; bw_frac = GBps / the read
//   bandwidth of the STREAM-like probe at the same thread count (see
//   stream_probe.hpp: measured once per process and thread count, on first
//   use, outside any timed loop). bw_frac > 1 means the data came from caches.
//   set_bracketed_bandwidth_counters divides by probes taken just before and
//   just after the row's own loop instead, and exports the core's clock of
//   the same moments (core_GHz).
//
// Inputs: random_floats(n, seed), aligned and reproducible.
//
// Context: support/main.cpp is every executable's main; it adds
//   highway_target, xsimd_arch (of that executable's flags) and load_average
//   (/proc/loadavg at start) to the JSON context.
//
// Thread-safety: the helpers may be called from any thread; the registry and
// the probe cache are locked. Errors (a counter helper without timed_loop, a
// failed allocation) abort with a message: a benchmark must not report
// numbers it did not measure.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "ruvllm/core/aligned_buffer.hpp"
#include "ruvllm/kernels/avx_vnni.hpp"
#include "ruvllm/kernels/gemv_plan.hpp"
#include "support/clock.hpp"
#include "support/stream_probe.hpp"

namespace ruvllm::bench {

// ---------------------------------------------------------------- row names

/// Parts joined by '/', then "/threads:N".
[[nodiscard]] inline std::string join_name(std::initializer_list<std::string_view> parts, unsigned threads) {
  std::string name;
  for (const std::string_view part : parts) {
    name.append(part);
    name.push_back('/');
  }
  return name + "threads:" + std::to_string(threads);
}

/// "area/kernel/precision/shape/threads:N", the name of one of our rows.
[[nodiscard]] inline std::string row_name(std::string_view area, std::string_view kernel, std::string_view precision,
                                          std::string_view shape, unsigned threads) {
  return join_name({area, kernel, precision, shape}, threads);
}

/// The name of the baseline row measured for `row`.
[[nodiscard]] inline std::string baseline_of(std::string_view row) { return "baseline/" + std::string(row); }

/// A shape as it appears in names: extents joined by 'x', e.g. "4096x768".
[[nodiscard]] inline std::string shape(std::initializer_list<std::size_t> extents) {
  std::string s;
  for (const std::size_t e : extents) {
    if (!s.empty()) s.push_back('x');
    s += std::to_string(e);
  }
  return s;
}

// ------------------------------------------------------------------- timing

namespace detail {

// The last timed_loop of this thread, tagged with its state so that a
// counter helper called without a loop of its own cannot pick up a stale time.
struct loop_record {
  const benchmark::State* state = nullptr;
  benchmark::IterationCount iterations = 0;
  double seconds_per_iteration = 0.0;
};

inline thread_local loop_record last_loop;

}  // namespace detail

/// Runs the benchmark loop, calling body() once per iteration, for work on
/// `threads` threads; returns the seconds per iteration and remembers them
/// for this state.
template <class Body>
double timed_loop(benchmark::State& state, Body&& body, unsigned threads = 1) {
  const double start = detail::clock_seconds(threads);
  for (auto _ : state) body();
  // A one-iteration sizing run may read as zero time; the clamp keeps the
  // counters finite until the reported run replaces them.
  const double elapsed = std::max(detail::clock_seconds(threads) - start, 1e-9);
  const auto iterations = std::max<benchmark::IterationCount>(state.iterations(), 1);
  const double seconds = elapsed / static_cast<double>(iterations);
  detail::last_loop = {&state, state.iterations(), seconds};
  return seconds;
}

/// Seconds per iteration of the timed_loop that just ran on this state.
[[nodiscard]] inline double seconds_per_iteration(const benchmark::State& state) {
  const detail::loop_record& last = detail::last_loop;
  if (last.state != &state || last.iterations != state.iterations())
    detail::fail("a counter helper was called on a state whose loop did not run through timed_loop");
  return last.seconds_per_iteration;
}

/// Seconds per call of body(), for work on `threads` threads, measured
/// directly: the call count grows until one timing spans min_seconds, as
/// Google Benchmark sizes its iteration counts.
template <class Body>
[[nodiscard]] double measure_seconds_per_call(Body&& body, unsigned threads = 1, double min_seconds = 0.05) {
  std::int64_t calls = 1;
  for (;;) {
    const double start = detail::clock_seconds(threads);
    for (std::int64_t i = 0; i < calls; ++i) body();
    const double elapsed = detail::clock_seconds(threads) - start;
    if (elapsed >= min_seconds) return elapsed / static_cast<double>(calls);
    // Aim 40% past the target so that the next attempt is usually the last.
    const double growth = elapsed > 0.0 ? 1.4 * min_seconds / elapsed : 10.0;
    calls = std::max(calls + 1, static_cast<std::int64_t>(static_cast<double>(calls) * std::min(growth, 10.0)));
  }
}

// ------------------------------------------------------------------- inputs

/// n floats uniform in [-1, 1], 64-byte aligned, from a fixed seed so that
/// every run measures the same data.
[[nodiscard]] inline aligned_buffer<float> random_floats(std::size_t n, std::uint64_t seed) {
  auto allocated = aligned_buffer<float>::allocate(n);
  if (!allocated) detail::fail("cannot allocate " + std::to_string(n) + " benchmark inputs");
  aligned_buffer<float> values = std::move(*allocated);
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : values) v = uniform(engine);
  return values;
}

// ------------------------------------------------------------------ speedup

namespace detail {

struct baseline_registry {
  std::mutex mutex;
  std::map<std::string, double, std::less<>> seconds_per_iteration;
};

inline baseline_registry& baselines() {
  static baseline_registry registry;
  return registry;
}

inline void store_baseline(std::string_view name, double seconds) {
  baseline_registry& r = baselines();
  const std::lock_guard lock(r.mutex);
  r.seconds_per_iteration.insert_or_assign(std::string(name), seconds);
}

}  // namespace detail

/// Baseline side: records this row's time per iteration under `name` (the
/// row's own name) for the rows compared with it.
inline void record_baseline(const benchmark::State& state, std::string_view name) {
  detail::store_baseline(name, seconds_per_iteration(state));
}

/// Our side: exports speedup = baseline time / our time, taking the latest
/// record of `baseline_name` or, if none exists yet, measuring
/// baseline_body() (one baseline iteration, on baseline_threads threads) now
/// and recording it.
template <class Body>
void set_speedup(benchmark::State& state, std::string_view baseline_name, Body&& baseline_body,
                 unsigned baseline_threads = 1) {
  const double ours = seconds_per_iteration(state);
  double baseline = 0.0;
  {
    detail::baseline_registry& r = detail::baselines();
    const std::lock_guard lock(r.mutex);
    if (const auto it = r.seconds_per_iteration.find(baseline_name); it != r.seconds_per_iteration.end())
      baseline = it->second;
  }
  if (baseline <= 0.0) {
    baseline = measure_seconds_per_call(baseline_body, baseline_threads);
    detail::store_baseline(baseline_name, baseline);
  }
  state.counters["speedup"] = benchmark::Counter(baseline / ours);
}

// ---------------------------------------------------------------- bandwidth

namespace detail {
/// GBps and bw_frac against `read_gbps`.
inline void export_bandwidth(benchmark::State& state, double bytes_moved_per_iteration, double read_gbps) {
  const double gbps = bytes_moved_per_iteration / seconds_per_iteration(state) / 1e9;
  state.counters["GBps"] = benchmark::Counter(gbps);
  state.counters["bw_frac"] = benchmark::Counter(gbps / read_gbps);
}
}  // namespace detail

/// Exports GBps and bw_frac (see the top of this file) for a row whose
/// iterations move bytes_moved_per_iteration bytes on `threads` threads.
inline void set_bandwidth_counters(benchmark::State& state, double bytes_moved_per_iteration, unsigned threads) {
  detail::export_bandwidth(state, bytes_moved_per_iteration, stream_probe(threads).read_gbps);
}

/// Exports core_GHz: the mean of `ghz_before`, core_clock_ghz() taken just
/// before the row's timed_loop, and the clock now (clock.hpp says what it
/// shows).
inline void set_core_clock_counter(benchmark::State& state, double ghz_before) {
  state.counters["core_GHz"] = benchmark::Counter((ghz_before + core_clock_ghz()) / 2.0);
}

/// What a row that brackets its timed loop measured just before it
/// (bracket_row): the read bandwidth and the calling core's clock.
struct row_bracket {
  double read_gbps = 0.0;
  double core_ghz = 0.0;
};

/// Takes the "before" half of a bracket at `threads` threads; call it just
/// before the row's timed_loop.
[[nodiscard]] inline row_bracket bracket_row(unsigned threads) {
  const double ghz = core_clock_ghz();
  return {stream_read_now(threads), ghz};
}

/// As set_bandwidth_counters, but against the read bandwidth of the row's own
/// seconds: `before` is bracket_row(threads) taken just before the row's
/// timed_loop, a second probe is taken now, and bw_frac divides by their
/// mean (exported as probe_GBps). On a shared host the probe moves by a
/// third between minutes (25-39 GB/s at one thread within ten minutes on the
/// 2-vCPU guest we measure on), more than the changes a row is meant to
/// judge, so rows read against a target (model decode) pay ~0.4 s per call
/// for a denominator from the same seconds. core_GHz is the mean of the
/// calling core's clock before and after (core_clock_ghz in clock.hpp): a
/// row that ran while the host gave the core less time shows it there,
/// which the memory probe alone does not.
inline void set_bracketed_bandwidth_counters(benchmark::State& state, double bytes_moved_per_iteration,
                                             unsigned threads, const row_bracket& before) {
  const double probe = (before.read_gbps + stream_read_now(threads)) / 2.0;
  detail::export_bandwidth(state, bytes_moved_per_iteration, probe);
  state.counters["probe_GBps"] = benchmark::Counter(probe);
  set_core_clock_counter(state, before.core_ghz);
}

// ------------------------------------------------------------------ context

/// The 1, 5 and 15 minute load averages, as `uptime` prints them.
[[nodiscard]] inline std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(file >> one >> five >> fifteen)) return "unavailable";
  return one + ", " + five + ", " + fifteen;
}

/// Takes --gemv_plan=rows_l1|pairs_l1_l2 out of argv and makes every GEMV
/// use that plan instead of the one detected for this CPU: how a plan is
/// compared on a core kernels/gemv_plan.hpp has no figures for. False, after
/// saying why, for a value that names no plan.
[[nodiscard]] inline bool take_gemv_plan_flag(int& argc, char** argv) {
  constexpr std::string_view flag = "--gemv_plan=";
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, flag.size()) != flag) {
      argv[kept++] = argv[i];
      continue;
    }
    const std::string_view name = arg.substr(flag.size());
    if (name == kernels::gemv_plan_name(kernels::gemv_plan::rows_l1)) {
      kernels::use_gemv_plan(kernels::gemv_plan::rows_l1);
    } else if (name == kernels::gemv_plan_name(kernels::gemv_plan::pairs_l1_l2)) {
      kernels::use_gemv_plan(kernels::gemv_plan::pairs_l1_l2);
    } else {
      std::fprintf(stderr, "--gemv_plan=%.*s: the plans are rows_l1 and pairs_l1_l2\n", static_cast<int>(name.size()),
                   name.data());
      return false;
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return true;
}

/// The body of every benchmark executable's main (support/main.cpp): the
/// standard flags and --gemv_plan (take_gemv_plan_flag), plus the load
/// average, the GEMV plan in use (kernels/gemv_plan.hpp) and whether the
/// AVX2 target's quant kernels use AVX-VNNI (kernels/avx_vnni.hpp) in the
/// JSON context.
inline int run_benchmarks(int argc, char** argv) {
  if (!take_gemv_plan_flag(argc, argv)) return 1;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("load_average", load_average());
  benchmark::AddCustomContext("gemv_plan", std::string(kernels::gemv_plan_name(kernels::gemv_plan_in_use())));
  benchmark::AddCustomContext("avx2_uses_avx_vnni", kernels::avx_vnni_in_use() ? "yes" : "no");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace ruvllm::bench

#endif  // RUVLLM_BENCH_SUPPORT_BENCH_HPP
