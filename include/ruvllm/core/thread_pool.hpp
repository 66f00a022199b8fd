#ifndef RUVLLM_CORE_THREAD_POOL_HPP
#define RUVLLM_CORE_THREAD_POOL_HPP

// A small pool of persistent worker threads for data-parallel kernel loops
// (GEMV rows, attention heads). The calling thread always takes part, so a
// pool of N threads starts N - 1 workers.
//
// Built for a shared edge machine, where another process may hold a core:
//  * Work is claimed in chunks: each thread takes the chunks of its own
//    contiguous share first (detail::home_ranges), then the unclaimed ones
//    of the others', so a worker that is descheduled simply claims less;
//    nobody waits at a per-operation barrier for a thread that is not
//    running (the failure that makes a 2-thread llama.cpp decode collapse to
//    ~1 token/s beside a busy co-tenant).
//  * Idle workers spin for a bounded time (back-to-back kernel calls find
//    them awake) and then block on a futex (std::atomic::wait), so an idle
//    pool costs no CPU.
//  * run(): the one unavoidable wait is for a chunk already claimed by a
//    worker that was then descheduled. When the caller waits longer than
//    options::straggler_wait for such a chunk, that worker sits out the next
//    jobs (1, 2, 4, ... up to max_backoff_jobs), so a pool under a co-tenant
//    degrades to the speed of the threads that actually run instead of
//    stalling every call.
//  * run_replicated(): for jobs whose chunks are pure functions writing only
//    their own slice of one output array (GEMV rows, attention heads), even
//    that wait goes away. Workers compute a chunk into a private staging
//    buffer and publish it with a compare-and-swap; when a claimed chunk is
//    late (the worker was descheduled mid-chunk: a co-tenant's time slice is
//    milliseconds, a chunk microseconds), the caller takes the chunk over and
//    computes it itself, and the late worker's result is discarded when it
//    resumes. A step therefore never waits for a thread that is not running:
//    a descheduled worker costs about one chunk of recomputation, and a
//    worker that runs contributes whatever it finishes.
//  * run_replicated() also checks that the workers pay for themselves: it
//    measures the chunks completed per second over windows of jobs with the
//    workers and without them (the caller alone, the workers asleep), keeps
//    the workers only when they are clearly faster, and tests again from
//    time to time (options::adaptive). A caller whose jobs repeat in steps
//    (a decode step) marks each step's end with end_step(), and the windows
//    then hold whole steps.
//    A worker that only gets a sliver of a shared core, or that the OS packs
//    onto the caller's core, then sleeps instead of slowing the caller down.
//    Together this is what keeps a 2-thread decode at least as fast as a
//    1-thread one when another process holds a core.
//  * An idle worker that the OS put on the caller's CPU yields while it
//    spins, so the caller runs at once instead of after the worker's time
//    slice. A worker on any other CPU does not: there a yield hands the CPU
//    to whatever else runs on it (a co-tenant) for a whole time slice,
//    milliseconds in which the worker misses every job it was spinning for.
//    Measured beside a co-tenant spinning on the other core (2-thread over
//    1-thread decode in alternating windows, the median of 12 pairs per
//    run; 110M and 1B models in Q8_0 and Q4_0, runs of the variants
//    interleaved): yielding always, 0.96-1.07 over 27 runs (median 0.99),
//    the adaptive probe benching the workers for much of each run; never
//    yielding, 0.90-1.31 (median 1.10); yielding only on the caller's CPU,
//    0.91-1.25 over 15 runs (median 1.09).
//
// Thread-safety: run() / run_replicated() may be called by one thread at a
// time (the owner); concurrent calls from several threads are serialized by
// the caller's design, not by a lock. A run() body may run on any pool thread
// and must be safe to call concurrently for disjoint ranges.
// run_replicated() bodies additionally may run *after* the call returned, on
// a worker that was descheduled inside them (their result is then dropped):
// they must be trivially copyable (the pool copies them, so they capture by
// value), write nothing but the staging slice they are given, and read only
// memory that stays allocated until quiesce() returns. Such a late body can
// read inputs the owner is already rewriting; the values it computes from
// them are discarded, never published. ThreadSanitizer would report those
// stale reads, so under TSan the default options wait for late chunks
// instead of recomputing them (options::replicate), which keeps every other
// race visible; the recomputation protocol itself is tested under TSan with
// bodies that read constant data.
// Allocation: the constructor allocates the workers and their staging
// buffers; run() and run_replicated() never allocate.
// Errors: none at run time. The C++ runtime aborts if the OS refuses to
// create a thread (std::thread cannot report it without exceptions).

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "ruvllm/core/config.hpp"
#include "ruvllm/core/x86_intrinsics.hpp"

#if defined(__SANITIZE_THREAD__)
#define RUVLLM_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RUVLLM_DETAIL_TSAN 1
#endif
#endif
#ifndef RUVLLM_DETAIL_TSAN
#define RUVLLM_DETAIL_TSAN 0
#endif

namespace ruvllm {

namespace detail {
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  // The builtin rather than _mm_pause: <immintrin.h> is left to the kernel
  // headers, which read it with GCC 12's false warnings silenced.
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// The CPU the calling thread runs on, or -1 where the OS does not say
/// (glibc reads it from the thread's rseq area: a load, no system call).
inline int current_cpu() noexcept {
#if defined(__linux__)
  return ::sched_getcpu();
#else
  return -1;
#endif
}

/// Which chunks of a job each of its `threads` threads takes first: thread r
/// (0 the caller, then the participating workers in order) owns the
/// contiguous chunks [begin(r), end(r)), about chunks / threads of them, and
/// claims them in order, from a cursor on its own cache line, before it
/// takes any other thread's. Each thread then reads one run of memory (a
/// kernel's software prefetch running past the end of one chunk lands on
/// the start of the thread's next), where claiming from one shared counter
/// interleaved the threads' chunks, and every job of a repeating sequence
/// gives a thread the same rows. A thread that runs out of its own chunks
/// takes the next unclaimed one of the others', so a descheduled or slow
/// thread still costs only the chunks it holds. Two threads on the Zen 5
/// guest (three interleaved runs of two gemv_bench binaries): Q4_0 GEMV over
/// 1 GiB in 128 KiB chunks (pool.run) 43.5-44.2 GB/s against 39.6-40.5 from
/// the shared counter, 11008 x 4096 Q4_0 95-96 against 66-87.
struct home_ranges {
  std::size_t chunks = 0, threads = 1;
  [[nodiscard]] constexpr std::size_t begin(std::size_t r) const noexcept { return r * chunks / threads; }
  [[nodiscard]] constexpr std::size_t end(std::size_t r) const noexcept { return begin(r + 1); }
};

/// How long run_replicated's adaptive probe keeps the way it chose before it
/// measures again, in windows (see thread_pool's helper_probe). Each
/// measurement spends two of its four windows without the workers, so on a
/// quiet machine, where they win every time, re-measuring after 32 windows
/// ran 2 windows in 36 at the speed of one thread. A decisive win (the
/// workers at least 25% faster) therefore doubles the next settled run, up
/// to 128 windows (2.6 s at the default 20 ms windows): 2 in 132, and a
/// co-tenant arriving during a long settled run is still caught within
/// seconds, while run_replicated's take-over keeps the caller from waiting
/// on a descheduled worker meanwhile. (Measured as the share of a 2-thread
/// decode's jobs run without the workers: 1.8-2.6% where two threads beat
/// one by 40-50%, 5% on a 1B Q8_0 decode where they won by only ~20%.) A
/// narrow win settles 32 windows and starts the doubling over; losses back
/// off 1, 2, 4 ... 64 windows without the workers, as the workers stay close
/// to useless while a co-tenant stays.
class probe_schedule {
 public:
  static constexpr double keep_ratio = 1.03;      // workers kept when at least this much faster
  static constexpr double decisive_ratio = 1.25;  // ... and the next settled run doubles at this
  static constexpr std::uint32_t on_first = 32, on_max = 128, off_max = 64;

  /// After a measurement of `rate_on` and `rate_off` (work per second with
  /// and without the workers): whether the workers run, for settle() windows.
  bool decide(double rate_on, double rate_off) noexcept {
    on_ = rate_on >= keep_ratio * rate_off;
    const bool decisive = rate_on >= decisive_ratio * rate_off;
    settle_ = !on_ ? off_next_ : decisive ? on_next_ : on_first;
    off_next_ = on_ ? 1 : std::min(off_next_ * 2, off_max);
    on_next_ = decisive ? std::min(on_next_ * 2, on_max) : on_first;
    return on_;
  }
  [[nodiscard]] bool workers_on() const noexcept { return on_; }
  [[nodiscard]] std::uint32_t settle() const noexcept { return settle_; }

 private:
  bool on_ = true;
  std::uint32_t settle_ = 0;
  std::uint32_t on_next_ = on_first, off_next_ = 1;
};
}  // namespace detail

/// Tuning of thread_pool; the defaults suit decode-step kernels of 10 µs to 10 ms.
struct thread_pool_options {
  /// How long an idle worker spins before blocking.
  std::chrono::microseconds spin{200};
  /// run(): how long the caller waits for a claimed chunk before blaming its worker.
  std::chrono::microseconds straggler_wait{300};
  /// run(): longest exclusion of a straggling worker, in jobs.
  std::uint32_t max_backoff_jobs = 64;
  /// run_replicated(): whether the caller recomputes a chunk a worker holds
  /// for too long (see the file comment; off under ThreadSanitizer by default).
  bool replicate = !RUVLLM_DETAIL_TSAN;
  /// run_replicated(): the caller waits for a claimed chunk at least this
  /// long, and at least twice its own mean chunk time, before taking it over.
  std::chrono::microseconds replicate_after{20};
  /// run_replicated(): floats of staging per worker; bounds chunk * per_item.
  std::size_t staging_floats = 16384;
  /// run_replicated(): measure whether the workers speed jobs up and run
  /// without them when they do not (see the file comment and helper_probe).
  bool adaptive = true;
  /// run_replicated(): a measuring window is at least this many jobs ...
  std::uint32_t probe_jobs = 64;
  /// ... and this long.
  std::chrono::microseconds probe_time{20000};
  /// Checking run_replicated bodies (tests): when nonzero, the pool keeps
  /// the last late_replays jobs it shared with its workers and, before and
  /// after every later job, runs each of their chunks again as every worker
  /// would if it had been descheduled inside it, results dropped (see
  /// thread_pool::replay_late_chunks). Each job then costs two runs of the
  /// kept jobs per worker; 0 (the default) costs one test of a counter.
  std::uint32_t late_replays = 0;
};

/// Counters for tests and diagnostics (monotonic, caller-owned).
struct thread_pool_stats {
  std::uint64_t jobs = 0;
  std::uint64_t chunks_by_caller = 0;
  std::uint64_t chunks_by_workers = 0;
  std::uint64_t straggler_waits = 0;    // run(): jobs where the caller waited past straggler_wait
  std::uint64_t exclusions = 0;         // run(): workers benched after a straggler wait
  std::uint64_t chunks_recomputed = 0;  // run_replicated(): claimed chunks the caller took over
  std::uint64_t solo_jobs = 0;          // run_replicated(): jobs run without the workers (adaptive)
  std::uint64_t spin_yields = 0;        // idle workers' yields to a caller on their CPU
};

/// Persistent worker threads plus the caller; see the file comment.
class thread_pool {
 public:
  /// Largest run_replicated body, in bytes (it is copied into the job).
  static constexpr std::size_t max_body_bytes = 256;
  /// Most chunks of one run_replicated job (larger jobs get larger chunks).
  static constexpr std::size_t max_replicated_chunks = 4096;
  /// After end_step() was called once, a probe window that has gone this
  /// many times options::probe_jobs jobs without a mark closes anyway.
  static constexpr std::uint64_t max_unmarked_window = 16;

  /// Most threads a pool runs, the caller included: a job's participants
  /// are one bit per worker in a 64-bit word.
  static constexpr std::size_t max_threads = 64;

  /// A pool of `threads` threads in total, clamped to [1, max_threads] (the
  /// caller is one; size() tells how many run). A constructor cannot return
  /// an error, and more threads than a machine has cores only slow the
  /// jobs: callers that take a count from users check it against
  /// max_threads themselves, as examples/ruvllm-run does.
  explicit thread_pool(std::size_t threads, thread_pool_options options = {})
      : options_(options), slots_(std::clamp<std::size_t>(threads, 1, max_threads) - 1) {
    options_.staging_floats = std::max<std::size_t>(options_.staging_floats, 1);
    if (!slots_.empty()) chunk_state_ = std::make_unique<std::atomic<std::uint64_t>[]>(max_replicated_chunks);
    cursors_ = std::make_unique<claim_cursor[]>(slots_.size() + 1);
    for (auto& slot : slots_) slot.staging = std::make_unique<float[]>(options_.staging_floats);
    if (options_.late_replays > 0 && !slots_.empty()) {
      replays_ = std::make_unique<replayable_job[]>(options_.late_replays);
      replay_staging_ = std::make_unique<float[]>(options_.staging_floats);
    }
    workers_.reserve(slots_.size());
    for (std::size_t w = 0; w < slots_.size(); ++w) workers_.emplace_back([this, w] { worker_loop(w); });
  }

  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  ~thread_pool() {
    stop_.store(true, std::memory_order_relaxed);
    epoch_.fetch_add(2, std::memory_order_release);
    epoch_.notify_all();
    for (auto& t : workers_) t.join();
  }

  /// Threads that can run a job, the caller included.
  [[nodiscard]] std::size_t size() const noexcept { return slots_.size() + 1; }

  /// Calls body(begin, end, thread) over [0, n) in chunks of `grain` items
  /// (the last may be shorter); `thread` is 0 for the caller and 1.. for
  /// workers. Returns when every chunk has run. Does not allocate.
  template <class Body>
  void run(std::size_t n, std::size_t grain, Body&& body) {
    if (n == 0) return;
    grain = std::max<std::size_t>(grain, 1);
    const std::size_t chunks = (n + grain - 1) / grain;
    using body_type = std::remove_reference_t<Body>;
    const auto invoke = [](const void* ctx, std::size_t begin, std::size_t end, std::size_t thread, float*) {
      (*static_cast<body_type*>(const_cast<void*>(ctx)))(begin, end, thread);
    };
    const late_replay_points replays(*this);
    ++job_count_;
    const std::uint64_t participants = eligible_workers();
    if (chunks == 1 || participants == 0) {
      for (std::size_t c = 0; c < chunks; ++c) body(c * grain, std::min(n, (c + 1) * grain), std::size_t{0});
      stats_.jobs++;
      stats_.chunks_by_caller += chunks;
      return;
    }
    const detail::home_ranges homes{chunks, participant_count(participants)};
    const std::uint64_t epoch =
        publish(+invoke, static_cast<const void*>(&body), n, grain, participants, nullptr, 0, homes);
    std::uint64_t mine = 0;
    std::size_t begin = 0, end = 0;
    while (claim(epoch, homes, 0, n, grain, begin, end)) {
      body(begin, end, std::size_t{0});
      ++mine;
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
    wait_for_stragglers();
    stats_.jobs++;
    stats_.chunks_by_caller += mine;
    stats_.chunks_by_workers += chunks - mine;
  }

  /// Calls body(begin, end, thread, dst) over [0, n) in chunks of `grain`
  /// items (the last may be shorter), or, when the caller runs the job alone
  /// (a one-thread pool, or the workers benched by options::adaptive), once
  /// over all of [0, n): bodies must accept any range. `thread` is as for
  /// run() (a chunk the caller takes over runs as thread 0) and dst points at
  /// (end - begin) * per_item floats that end up as
  /// out[begin * per_item ...]: the caller's chunks
  /// write out directly, a worker's are staged and copied. Returns when out
  /// holds every chunk's result. Body must be trivially copyable and at most
  /// max_body_bytes; what else it must honour (it may run again, late, and be
  /// discarded) is in the file comment. Chunks are capped so that a chunk's
  /// output fits a worker's staging buffer and a job has at most
  /// max_replicated_chunks. Does not allocate.
  template <class Body>
  void run_replicated(std::size_t n, std::size_t grain, float* out, std::size_t per_item, const Body& body) {
    static_assert(std::is_trivially_copyable_v<Body>, "run_replicated: the body is copied; capture by value");
    static_assert(sizeof(Body) <= max_body_bytes && alignof(Body) <= alignof(std::max_align_t),
                  "run_replicated: body larger than thread_pool::max_body_bytes");
    if (n == 0) return;
    per_item = std::max<std::size_t>(per_item, 1);
    grain = std::clamp<std::size_t>(grain, 1, std::max<std::size_t>(options_.staging_floats / per_item, 1));
    grain = std::max(grain, (n + max_replicated_chunks - 1) / max_replicated_chunks);
    const std::size_t chunks = (n + grain - 1) / grain;
    const late_replay_points replays(*this);
    ++job_count_;
    // The probe's clock; a pool that never probes does not read it.
    const auto start = slots_.empty() ? std::chrono::steady_clock::time_point{} : std::chrono::steady_clock::now();
    const bool solo = !probe_.workers_on && !slots_.empty();
    if (chunks == 1 || slots_.empty() || grain * per_item > options_.staging_floats || solo) {
      // The caller alone: one call over the whole range (a kernel then
      // streams its data in one go, prefetching across chunk boundaries).
      body(std::size_t{0}, n, std::size_t{0}, out);
      stats_.jobs++;
      stats_.chunks_by_caller += chunks;
      stats_.solo_jobs += solo;
      if (!slots_.empty()) probe_job(chunks, start);
      return;
    }
    const auto invoke = [](const void* ctx, std::size_t begin, std::size_t end, std::size_t thread, float* dst) {
      (*static_cast<const Body*>(ctx))(begin, end, thread, dst);
    };
    // The body's bytes travel in atomic words, so a late worker copying them
    // while the next job is published reads a torn copy (rejected by the
    // epoch check) rather than racing.
    std::uint64_t words[max_body_bytes / 8] = {};
    std::memcpy(words, &body, sizeof(Body));
    for (std::size_t i = 0; i < (sizeof(Body) + 7) / 8; ++i) job_.body[i].store(words[i], std::memory_order_relaxed);
    const std::uint64_t all = (std::uint64_t{1} << slots_.size()) - 1;  // slots_.size() < max_threads
    const detail::home_ranges homes{chunks, participant_count(all)};
    const std::uint64_t epoch = publish(+invoke, nullptr, n, grain, all, out, per_item, homes);
    if (replays_ != nullptr) keep_for_replay(+invoke, words, n, grain);
    std::uint64_t mine = 0;
    std::size_t begin = 0, end = 0;
    while (claim(epoch, homes, 0, n, grain, begin, end)) {
      body(begin, end, std::size_t{0}, out + begin * per_item);
      chunk_state_[begin / grain].store(state_word(epoch, chunk_done), std::memory_order_relaxed);
      ++mine;
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
    const std::uint64_t recomputed = finish_replicated(epoch, n, grain, out, per_item, body, start, mine);
    stats_.jobs++;
    stats_.chunks_by_caller += mine + recomputed;
    stats_.chunks_by_workers += chunks - mine - recomputed;
    stats_.chunks_recomputed += recomputed;
    probe_job(chunks, start);
  }

  /// Marks the end of one step of a repeating sequence of run_replicated
  /// jobs (a decode step: the same projections and attention every token).
  /// Once a pool has seen a mark, the adaptive probe closes its measuring
  /// windows only at marks, so every window holds whole steps. Without
  /// marks a window ends after any job, and the probe compares windows of
  /// different mixes of jobs (a step's large FFN jobs against its small
  /// attention jobs) as if they were the same work; on a 1B model a window
  /// is less than one step. Measured beside a co-tenant spinning on the
  /// other core (2-thread over 1-thread decode, alternating windows, 12
  /// runs over 110M q4_0, 1B q8_0 and 1B q4_0): mean 0.987, worst 0.941
  /// with marks; 0.974, worst 0.923 without. Caller-owned, like run().
  void end_step() noexcept {
    if (!options_.adaptive || slots_.empty()) return;
    probe_.steps = true;
    if (const auto now = std::chrono::steady_clock::now(); window_full(now)) close_window(now);
  }

  /// Waits until no worker is inside a body, e.g. a late run_replicated
  /// chunk (bounded by the time the OS takes to run that worker again).
  /// Call it before freeing memory a run_replicated body reads; no body of
  /// an earlier job runs after it returns (options::late_replays included).
  void quiesce() noexcept {
    wait_until_no_worker_in_chunk();
    replay_count_ = replay_next_ = 0;
  }

  [[nodiscard]] thread_pool_stats stats() const noexcept {
    thread_pool_stats s = stats_;
    for (const auto& slot : slots_) s.spin_yields += slot.spin_yields.load(std::memory_order_relaxed);
    return s;
  }
  [[nodiscard]] const thread_pool_options& options() const noexcept { return options_; }

 private:
  using invoke_fn = void (*)(const void*, std::size_t, std::size_t, std::size_t, float*);

  struct alignas(64) worker_slot {
    std::atomic<bool> in_chunk{false};          // set while claiming or running chunks
    std::uint64_t benched_until_job = 0;        // caller-owned: sits out run() jobs up to this one
    std::uint32_t backoff = 1;                  // caller-owned
    std::unique_ptr<float[]> staging;           // worker-owned: run_replicated chunk results
    std::atomic<std::uint64_t> spin_yields{0};  // worker-written, read by stats()
  };

  // A run_replicated job as options::late_replays keeps it.
  struct replayable_job {
    invoke_fn invoke = nullptr;
    std::size_t n = 0, grain = 1;
    alignas(std::max_align_t) unsigned char body[max_body_bytes] = {};  // as worker_loop's copy
  };

  struct job_descriptor {
    std::atomic<invoke_fn> invoke{nullptr};
    std::atomic<const void*> ctx{nullptr};  // run(): the caller's body; run_replicated(): null (body below)
    std::atomic<std::size_t> n{0};
    std::atomic<std::size_t> grain{1};
    std::atomic<std::uint64_t> participants{0};
    std::atomic<float*> out{nullptr};  // run_replicated() only
    std::atomic<std::size_t> per_item{0};
    std::atomic<std::uint64_t> body[max_body_bytes / 8] = {};
  };

  // The adaptive choice of run_replicated (caller-owned). A measurement is
  // four windows in the order with, without, without, with the workers
  // (ABBA), so a bandwidth or scheduling drift that is linear over the four
  // cancels out of the comparison instead of deciding it; the comparison is
  // the chunks completed per second of wall time, gaps between jobs
  // included. The workers are kept only when they are clearly (3%) faster:
  // on a tie the caller alone is as fast and leaves the other core to
  // whoever holds it. Then the chosen way runs a while (detail::probe_schedule:
  // 32 .. 128 windows with the workers, 1 .. 64 without) before the next
  // measurement.
  struct helper_probe {
    static constexpr bool measuring_order[] = {true, false, false, true};  // workers_on per window
    bool measuring = true;
    bool workers_on = true;
    std::uint8_t window = 0;  // within a measurement
    std::uint64_t jobs = 0, chunks = 0;
    std::chrono::steady_clock::time_point start{};
    double chunks_of[2] = {}, seconds_of[2] = {};  // [workers_on]
    std::uint32_t settle_left = 0;                 // windows left in the settled mode
    detail::probe_schedule schedule;
    bool steps = false;  // end_step() was called: windows close at marks
  };

  // A window runs from the start of its first job to the end of its last, so
  // the gaps between jobs count and the idle time before a window does not.
  void probe_job(std::size_t chunks, std::chrono::steady_clock::time_point job_start) noexcept {
    if (!options_.adaptive) return;
    helper_probe& p = probe_;
    const auto now = std::chrono::steady_clock::now();
    if (p.jobs == 0) p.start = job_start;
    ++p.jobs;
    p.chunks += chunks;
    if (!window_full(now)) return;
    // With step marks the window waits for the step's end; a caller that
    // stopped marking still gets its windows closed after many more jobs.
    if (p.steps && p.jobs < max_unmarked_window * options_.probe_jobs) return;
    close_window(now);
  }

  [[nodiscard]] bool window_full(std::chrono::steady_clock::time_point now) const noexcept {
    return probe_.jobs >= options_.probe_jobs && now - probe_.start >= options_.probe_time;
  }

  void close_window(std::chrono::steady_clock::time_point now) noexcept {
    helper_probe& p = probe_;
    const double seconds = std::chrono::duration<double>(now - p.start).count();
    const std::uint64_t window_chunks = p.chunks;
    p.jobs = 0;
    p.chunks = 0;
    if (!p.measuring) {
      if (--p.settle_left > 0) return;
      p.measuring = true;
      p.window = 0;
      p.chunks_of[0] = p.chunks_of[1] = p.seconds_of[0] = p.seconds_of[1] = 0.0;
      p.workers_on = helper_probe::measuring_order[0];
      return;
    }
    p.chunks_of[p.workers_on] += static_cast<double>(window_chunks);
    p.seconds_of[p.workers_on] += seconds;
    if (++p.window < std::size(helper_probe::measuring_order)) {
      p.workers_on = helper_probe::measuring_order[p.window];
      return;
    }
    const double rate_on = p.chunks_of[1] / p.seconds_of[1], rate_off = p.chunks_of[0] / p.seconds_of[0];
    p.workers_on = p.schedule.decide(rate_on, rate_off);
    p.measuring = false;
    p.settle_left = p.schedule.settle();
  }

  // run_replicated chunk states: the job's epoch in the high bits, so a state
  // left by an older job reads as "not yet claimed by a worker".
  static constexpr std::uint64_t chunk_claimed = 1, chunk_committing = 2, chunk_done = 3;
  static constexpr std::uint64_t state_word(std::uint64_t epoch, std::uint64_t state) noexcept {
    return (epoch << 2) | state;
  }

  // A claim cursor holds the job's epoch in its high half so a worker that
  // is still finishing an old job can never claim a chunk of a new one.
  static constexpr std::uint64_t pack(std::uint64_t epoch, std::uint64_t chunk) noexcept {
    return (epoch << 32) | chunk;
  }

  // Publishes a job like a seqlock: odd epoch while the descriptor changes,
  // so a worker that wakes late never acts on a half-written one.
  std::uint64_t publish(invoke_fn invoke, const void* ctx, std::size_t n, std::size_t grain, std::uint64_t participants,
                        float* out, std::size_t per_item, const detail::home_ranges& homes) noexcept {
    const std::uint64_t writing = epoch_.fetch_add(1, std::memory_order_acq_rel) + 1;
    caller_cpu_.store(detail::current_cpu(), std::memory_order_relaxed);
    job_.invoke.store(invoke, std::memory_order_relaxed);
    job_.ctx.store(ctx, std::memory_order_relaxed);
    job_.n.store(n, std::memory_order_relaxed);
    job_.grain.store(grain, std::memory_order_relaxed);
    job_.participants.store(participants, std::memory_order_relaxed);
    job_.out.store(out, std::memory_order_relaxed);
    job_.per_item.store(per_item, std::memory_order_relaxed);
    const std::uint64_t epoch = writing + 1;
    for (std::size_t r = 0; r < homes.threads; ++r)
      cursors_[r].next.store(pack(epoch, homes.begin(r)), std::memory_order_relaxed);
    pending_.store(homes.chunks, std::memory_order_relaxed);
    // seq_cst pairs with the sleeper's increment-then-recheck: one of the two
    // sides always sees the other, so no wake-up is lost.
    epoch_.store(epoch, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) epoch_.notify_all();
    return epoch;
  }

  static std::size_t participant_count(std::uint64_t participants) noexcept {
    return static_cast<std::size_t>(std::popcount(participants)) + 1;
  }

  // Thread `rank` of a job claims its own chunks (detail::home_ranges), then
  // the others', each range from its front.
  bool claim(std::uint64_t epoch, const detail::home_ranges& homes, std::size_t rank, std::size_t n, std::size_t grain,
             std::size_t& begin, std::size_t& end) noexcept {
    const std::uint64_t tag = epoch & 0xFFFFFFFFu;
    for (std::size_t i = 0; i < homes.threads; ++i) {
      const std::size_t r = rank + i < homes.threads ? rank + i : rank + i - homes.threads;
      std::atomic<std::uint64_t>& cursor = cursors_[r].next;
      const std::uint64_t range_end = homes.end(r);
      std::uint64_t v = cursor.load(std::memory_order_relaxed);
      for (;;) {
        if ((v >> 32) != tag) return false;  // the job is over
        const std::uint64_t chunk = v & 0xFFFFFFFFu;
        if (chunk >= range_end) break;
        if (cursor.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) {
          begin = static_cast<std::size_t>(chunk * grain);
          end = std::min(n, begin + grain);
          return true;
        }
      }
    }
    return false;
  }

  std::uint64_t eligible_workers() noexcept {
    std::uint64_t mask = 0;
    for (std::size_t w = 0; w < slots_.size(); ++w)
      if (job_count_ > slots_[w].benched_until_job) mask |= std::uint64_t{1} << w;
    return mask;
  }

  void wait_for_stragglers() noexcept {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    const auto start = std::chrono::steady_clock::now();
    bool blamed = false;
    std::uint32_t spins = 0;
    while (pending_.load(std::memory_order_acquire) != 0) {
      if (blamed) {
        // The straggler may share this core: give it the CPU.
        std::this_thread::yield();
        continue;
      }
      detail::cpu_relax();
      if ((++spins & 63) != 0) continue;
      if (std::chrono::steady_clock::now() - start < options_.straggler_wait) continue;
      blamed = true;
      stats_.straggler_waits++;
      for (auto& slot : slots_) {
        if (!slot.in_chunk.load(std::memory_order_relaxed)) continue;
        slot.benched_until_job = job_count_ + slot.backoff;
        slot.backoff = std::min(slot.backoff * 2, options_.max_backoff_jobs);
        stats_.exclusions++;
      }
    }
    if (!blamed)
      for (auto& slot : slots_) slot.backoff = std::max<std::uint32_t>(1, slot.backoff / 2);
  }

  void keep_for_replay(invoke_fn invoke, const std::uint64_t (&body)[max_body_bytes / 8], std::size_t n,
                       std::size_t grain) noexcept {
    replayable_job& job = replays_[replay_next_];
    replay_next_ = (replay_next_ + 1) % options_.late_replays;
    replay_count_ = std::min<std::size_t>(replay_count_ + 1, options_.late_replays);
    job.invoke = invoke;
    job.n = n;
    job.grain = grain;
    std::memcpy(job.body, body, sizeof(job.body));
  }

  void wait_until_no_worker_in_chunk() const noexcept {
    for (const auto& slot : slots_)
      while (slot.in_chunk.load(std::memory_order_acquire)) std::this_thread::yield();
  }

  // The points of a job where options::late_replays replays: before the job
  // (after the owner wrote its inputs) and after it (before the owner reads
  // its outputs).
  class late_replay_points {
   public:
    explicit late_replay_points(thread_pool& pool) noexcept : pool_(pool) { pool_.replay_late_chunks(); }
    ~late_replay_points() { pool_.replay_late_chunks(); }
    late_replay_points(const late_replay_points&) = delete;
    late_replay_points& operator=(const late_replay_points&) = delete;

   private:
    thread_pool& pool_;
  };

  // options::late_replays: a body may run late, as a worker that was
  // descheduled inside it, until quiesce(); this runs every kept job's
  // chunks once more as each worker, at the edges of every later job
  // (late_replay_points), where the owner's code has moved on. A body that
  // writes anything but its staging slice and its own thread's state then
  // gives a wrong result every time, not only when the OS happens to
  // deschedule a worker there.
  // The workers are quiesced first: the replay stands in for them on this
  // thread, which keeps it deterministic and race-free (ThreadSanitizer
  // included). It does not model a late body overlapping the middle of a
  // job's own chunks, which only the real pool's timing produces.
  void replay_late_chunks() noexcept {
    if (replay_count_ == 0) return;
    wait_until_no_worker_in_chunk();
    for (std::size_t j = 0; j < replay_count_; ++j) {
      const replayable_job& job = replays_[j];
      for (std::size_t begin = 0; begin < job.n; begin += job.grain)
        for (std::size_t w = 1; w <= slots_.size(); ++w)
          job.invoke(job.body, begin, std::min(job.n, begin + job.grain), w, replay_staging_.get());
    }
  }

  // The caller's end of run_replicated: waits for the workers' chunks, and
  // takes over those still claimed after the wait; returns how many it took.
  template <class Body>
  std::uint64_t finish_replicated(std::uint64_t epoch, std::size_t n, std::size_t grain, float* out,
                                  std::size_t per_item, const Body& body, std::chrono::steady_clock::time_point start,
                                  std::uint64_t mine) noexcept {
    if (pending_.load(std::memory_order_acquire) == 0) return 0;
    const auto now = std::chrono::steady_clock::now();
    // Twice the caller's mean chunk time: a worker that is running finishes
    // its chunk within about one.
    const auto mean = mine > 0 ? (now - start) / static_cast<std::int64_t>(mine) : (now - start);
    const auto patience = std::max<std::chrono::steady_clock::duration>(options_.replicate_after, 2 * mean);
    std::uint32_t spins = 0;
    while (pending_.load(std::memory_order_acquire) != 0) {
      detail::cpu_relax();
      if ((++spins & 31) != 0) continue;
      if (options_.replicate && std::chrono::steady_clock::now() - now >= patience) break;
      if (!options_.replicate && (spins & 1023) == 0) std::this_thread::yield();
    }
    std::uint64_t taken = 0;
    const std::size_t chunks = (n + grain - 1) / grain;
    if (pending_.load(std::memory_order_acquire) != 0) {
      for (std::size_t c = 0; c < chunks; ++c) {
        std::atomic<std::uint64_t>& state = chunk_state_[c];
        std::uint64_t s = state.load(std::memory_order_acquire);
        const bool current = (s >> 2) == (epoch & (~std::uint64_t{0} >> 2));
        // A chunk of this job is done, or its worker is copying it out: skip.
        if (current && (s & 3) != chunk_claimed) continue;
        if (!state.compare_exchange_strong(s, state_word(epoch, chunk_done), std::memory_order_acq_rel)) continue;
        const std::size_t begin = c * grain, end = std::min(n, begin + grain);
        body(begin, end, std::size_t{0}, out + begin * per_item);
        ++taken;
        pending_.fetch_sub(1, std::memory_order_acq_rel);
      }
    }
    // Left: chunks whose workers were copying them out (a few hundred
    // nanoseconds, unless the OS stops a worker right there).
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    return taken;
  }

  void worker_loop(std::size_t w) noexcept {
    std::uint64_t seen = 0;
    worker_slot& slot = slots_[w];
    // A worker-local copy of a run_replicated body (storage for an implicitly
    // created object of the body's trivially copyable type).
    alignas(std::max_align_t) unsigned char body[max_body_bytes];
    for (;;) {
      const std::uint64_t epoch = wait_for_job(seen, slot);
      if (stop_.load(std::memory_order_relaxed)) return;
      seen = epoch;
      // Copy the descriptor, then confirm it was not republished meanwhile.
      const auto invoke = job_.invoke.load(std::memory_order_relaxed);
      const void* ctx = job_.ctx.load(std::memory_order_relaxed);
      const std::size_t n = job_.n.load(std::memory_order_relaxed);
      const std::size_t grain = job_.grain.load(std::memory_order_relaxed);
      const std::uint64_t participants = job_.participants.load(std::memory_order_relaxed);
      float* const out = job_.out.load(std::memory_order_relaxed);
      const std::size_t per_item = job_.per_item.load(std::memory_order_relaxed);
      if (ctx == nullptr) {
        for (std::size_t i = 0; i < max_body_bytes / 8; ++i) {
          const std::uint64_t word = job_.body[i].load(std::memory_order_relaxed);
          std::memcpy(body + 8 * i, &word, 8);
        }
      }
      if (epoch_.load(std::memory_order_acquire) != epoch) continue;
      if ((participants & (std::uint64_t{1} << w)) == 0) continue;
      const std::size_t rank =
          1 + static_cast<std::size_t>(std::popcount(participants & ((std::uint64_t{1} << w) - 1)));
      const detail::home_ranges homes{(n + grain - 1) / std::max<std::size_t>(grain, 1),
                                      participant_count(participants)};
      std::size_t begin = 0, end = 0;
      for (;;) {
        slot.in_chunk.store(true, std::memory_order_relaxed);
        if (!claim(epoch, homes, rank, n, grain, begin, end)) break;
        if (ctx != nullptr) {
          invoke(ctx, begin, end, w + 1, nullptr);
          pending_.fetch_sub(1, std::memory_order_acq_rel);
          continue;
        }
        // run_replicated: mark the chunk claimed unless the caller took it
        // over already, compute it in staging, then publish it unless the
        // caller took it over meanwhile.
        // A state of this job or a later one means the caller took the chunk
        // over (and, for a later one, this worker is late).
        std::atomic<std::uint64_t>& state = chunk_state_[begin / grain];
        std::uint64_t s = state.load(std::memory_order_acquire);
        if ((s >> 2) >= (epoch & (~std::uint64_t{0} >> 2))) continue;
        if (!state.compare_exchange_strong(s, state_word(epoch, chunk_claimed), std::memory_order_acq_rel)) continue;
        invoke(body, begin, end, w + 1, slot.staging.get());
        std::uint64_t claimed = state_word(epoch, chunk_claimed);
        if (!state.compare_exchange_strong(claimed, state_word(epoch, chunk_committing), std::memory_order_acq_rel))
          continue;
        std::memcpy(out + begin * per_item, slot.staging.get(), (end - begin) * per_item * sizeof(float));
        state.store(state_word(epoch, chunk_done), std::memory_order_release);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
      }
      slot.in_chunk.store(false, std::memory_order_release);
    }
  }

  // Returns the first even (published) epoch after `seen`.
  std::uint64_t wait_for_job(std::uint64_t seen, worker_slot& slot) noexcept {
    const auto start = std::chrono::steady_clock::now();
    std::uint32_t spins = 0;
    for (;;) {
      const std::uint64_t e = epoch_.load(std::memory_order_acquire);
      if (e != seen && (e & 1) == 0) return e;
      if (stop_.load(std::memory_order_relaxed)) return e;
      if ((++spins & 63) == 0) {
        if (std::chrono::steady_clock::now() - start > options_.spin) {
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          // Re-check after announcing: a job published before the increment
          // would otherwise be missed with no notify coming.
          if (epoch_.load(std::memory_order_seq_cst) == e) epoch_.wait(e, std::memory_order_acquire);
          sleepers_.fetch_sub(1, std::memory_order_acq_rel);
          spins = 0;
          continue;
        }
        // Only the caller is worth a yield (see the file comment). Where
        // the OS does not say, both sides read -1 and the worker yields.
        if (detail::current_cpu() == caller_cpu_.load(std::memory_order_relaxed)) {
          slot.spin_yields.fetch_add(1, std::memory_order_relaxed);
          std::this_thread::yield();
        }
      }
      detail::cpu_relax();
    }
  }

  thread_pool_options options_;
  std::vector<worker_slot> slots_;
  std::vector<std::thread> workers_;
  job_descriptor job_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> chunk_state_;
  alignas(64) std::atomic<std::uint64_t> epoch_{0};
  // Claim cursors, one per thread of a job (by rank), each on its own line:
  // a thread claiming its own chunks touches no line another thread writes.
  struct alignas(64) claim_cursor {
    std::atomic<std::uint64_t> next{0};
  };
  std::unique_ptr<claim_cursor[]> cursors_;
  alignas(64) std::atomic<std::size_t> pending_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  // The CPU of the caller's last publish (detail::current_cpu); -1 before
  // the first, which only the "OS does not say" case matches.
  std::atomic<int> caller_cpu_{-1};
  std::uint64_t job_count_ = 0;  // caller-owned
  thread_pool_stats stats_{};    // caller-owned
  helper_probe probe_{};         // caller-owned
  // options::late_replays (caller-owned): a ring of the last jobs shared
  // with the workers, and the staging their replayed chunks write.
  std::unique_ptr<replayable_job[]> replays_;
  std::size_t replay_count_ = 0, replay_next_ = 0;
  std::unique_ptr<float[]> replay_staging_;
};

}  // namespace ruvllm

#undef RUVLLM_DETAIL_TSAN

#endif  // RUVLLM_CORE_THREAD_POOL_HPP
