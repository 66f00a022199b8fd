#ifndef RUVLLM_CORE_THREAD_POOL_HPP
#define RUVLLM_CORE_THREAD_POOL_HPP

// A small pool of persistent worker threads for data-parallel kernel loops
// (GEMV rows, attention heads). The calling thread always takes part, so a
// pool of N threads starts N - 1 workers.
//
// Built for a shared edge machine, where another process may hold a core:
//  * Work is claimed in chunks from a shared counter, so a worker that is
//    descheduled simply claims less; nobody waits at a per-operation barrier
//    for a thread that is not running (the failure that makes a 2-thread
//    llama.cpp decode collapse to ~1 token/s beside a busy co-tenant).
//  * Idle workers spin for a bounded time (back-to-back kernel calls find
//    them awake) and then block on a futex (std::atomic::wait), so an idle
//    pool costs no CPU.
//  * The one unavoidable wait is for a chunk already claimed by a worker that
//    was then descheduled. When the caller waits longer than
//    options::straggler_wait for such a chunk, that worker sits out the next
//    jobs (1, 2, 4, ... up to max_backoff_jobs), so a pool under a co-tenant
//    degrades to the speed of the threads that actually run instead of
//    stalling every call.
//
// Thread-safety: run() may be called by one thread at a time (the owner);
// concurrent calls from several threads are serialized by the caller's
// design, not by a lock. The body may run on any pool thread and must be
// safe to call concurrently for disjoint ranges.
// Allocation: the constructor allocates the workers; run() never allocates.
// Errors: none at run time. The C++ runtime aborts if the OS refuses to
// create a thread (std::thread cannot report it without exceptions).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "ruvllm/core/config.hpp"

namespace ruvllm {

namespace detail {
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace detail

/// Tuning of thread_pool; the defaults suit decode-step kernels of 10 µs to 10 ms.
struct thread_pool_options {
  /// How long an idle worker spins before blocking.
  std::chrono::microseconds spin{200};
  /// How long the caller waits for a claimed chunk before blaming its worker.
  std::chrono::microseconds straggler_wait{300};
  /// Longest exclusion of a straggling worker, in jobs.
  std::uint32_t max_backoff_jobs = 64;
};

/// Counters for tests and diagnostics (monotonic, relaxed).
struct thread_pool_stats {
  std::uint64_t jobs = 0;
  std::uint64_t chunks_by_caller = 0;
  std::uint64_t chunks_by_workers = 0;
  std::uint64_t straggler_waits = 0;  // jobs where the caller waited past straggler_wait
  std::uint64_t exclusions = 0;       // workers benched after a straggler wait
};

/// Persistent worker threads plus the caller; see the file comment.
class thread_pool {
 public:
  /// A pool of `threads` threads in total (at least 1; the caller is one).
  explicit thread_pool(std::size_t threads, thread_pool_options options = {})
      : options_(options), slots_(std::max<std::size_t>(threads, 1) - 1) {
    RUVLLM_ASSERT(slots_.size() < 64);
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
    const auto invoke = [](const void* ctx, std::size_t begin, std::size_t end, std::size_t thread) {
      (*static_cast<body_type*>(const_cast<void*>(ctx)))(begin, end, thread);
    };
    ++job_count_;
    const std::uint64_t participants = eligible_workers();
    if (chunks == 1 || participants == 0) {
      for (std::size_t c = 0; c < chunks; ++c) body(c * grain, std::min(n, (c + 1) * grain), std::size_t{0});
      stats_.jobs++;
      stats_.chunks_by_caller += chunks;
      return;
    }
    // Publish the job like a seqlock: odd epoch while the descriptor changes,
    // so a worker that wakes late never acts on a half-written one.
    const std::uint64_t writing = epoch_.fetch_add(1, std::memory_order_acq_rel) + 1;
    job_.invoke.store(+invoke, std::memory_order_relaxed);
    job_.ctx.store(static_cast<const void*>(&body), std::memory_order_relaxed);
    job_.n.store(n, std::memory_order_relaxed);
    job_.grain.store(grain, std::memory_order_relaxed);
    job_.participants.store(participants, std::memory_order_relaxed);
    const std::uint64_t epoch = writing + 1;
    next_.store(pack(epoch, 0), std::memory_order_relaxed);
    pending_.store(chunks, std::memory_order_relaxed);
    // seq_cst pairs with the sleeper's increment-then-recheck: one of the two
    // sides always sees the other, so no wake-up is lost.
    epoch_.store(epoch, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) epoch_.notify_all();

    std::uint64_t mine = 0;
    std::size_t begin = 0, end = 0;
    while (claim(epoch, n, grain, begin, end)) {
      body(begin, end, std::size_t{0});
      ++mine;
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
    wait_for_stragglers();
    stats_.jobs++;
    stats_.chunks_by_caller += mine;
    stats_.chunks_by_workers += chunks - mine;
  }

  [[nodiscard]] thread_pool_stats stats() const noexcept { return stats_; }

 private:
  struct alignas(64) worker_slot {
    std::atomic<bool> in_chunk{false};    // set while running a chunk
    std::uint64_t benched_until_job = 0;  // caller-owned: sits out jobs up to this one
    std::uint32_t backoff = 1;            // caller-owned
  };

  struct job_descriptor {
    std::atomic<void (*)(const void*, std::size_t, std::size_t, std::size_t)> invoke{nullptr};
    std::atomic<const void*> ctx{nullptr};
    std::atomic<std::size_t> n{0};
    std::atomic<std::size_t> grain{1};
    std::atomic<std::uint64_t> participants{0};
  };

  // The claim counter holds the job's epoch in its high half so a worker that
  // is still finishing an old job can never claim a chunk of a new one.
  static constexpr std::uint64_t pack(std::uint64_t epoch, std::uint64_t chunk) noexcept {
    return (epoch << 32) | chunk;
  }

  bool claim(std::uint64_t epoch, std::size_t n, std::size_t grain, std::size_t& begin, std::size_t& end) noexcept {
    std::uint64_t v = next_.load(std::memory_order_relaxed);
    const std::uint64_t tag = epoch & 0xFFFFFFFFu;
    for (;;) {
      if ((v >> 32) != tag) return false;
      const std::uint64_t chunk = v & 0xFFFFFFFFu;
      if (chunk * grain >= n) return false;
      if (next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        begin = static_cast<std::size_t>(chunk * grain);
        end = std::min(n, begin + grain);
        return true;
      }
    }
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

  void worker_loop(std::size_t w) noexcept {
    std::uint64_t seen = 0;
    worker_slot& slot = slots_[w];
    for (;;) {
      const std::uint64_t epoch = wait_for_job(seen);
      if (stop_.load(std::memory_order_relaxed)) return;
      seen = epoch;
      // Copy the descriptor, then confirm it was not republished meanwhile.
      const auto invoke = job_.invoke.load(std::memory_order_relaxed);
      const void* ctx = job_.ctx.load(std::memory_order_relaxed);
      const std::size_t n = job_.n.load(std::memory_order_relaxed);
      const std::size_t grain = job_.grain.load(std::memory_order_relaxed);
      const std::uint64_t participants = job_.participants.load(std::memory_order_relaxed);
      if (epoch_.load(std::memory_order_acquire) != epoch) continue;
      if ((participants & (std::uint64_t{1} << w)) == 0) continue;
      std::size_t begin = 0, end = 0;
      for (;;) {
        slot.in_chunk.store(true, std::memory_order_relaxed);
        if (!claim(epoch, n, grain, begin, end)) break;
        invoke(ctx, begin, end, w + 1);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
      }
      slot.in_chunk.store(false, std::memory_order_relaxed);
    }
  }

  // Returns the first even (published) epoch after `seen`.
  std::uint64_t wait_for_job(std::uint64_t seen) noexcept {
    const auto start = std::chrono::steady_clock::now();
    std::uint32_t spins = 0;
    for (;;) {
      const std::uint64_t e = epoch_.load(std::memory_order_acquire);
      if (e != seen && (e & 1) == 0) return e;
      if (stop_.load(std::memory_order_relaxed)) return e;
      if ((++spins & 63) == 0 && std::chrono::steady_clock::now() - start > options_.spin) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        // Re-check after announcing: a job published before the increment
        // would otherwise be missed with no notify coming.
        if (epoch_.load(std::memory_order_seq_cst) == e) epoch_.wait(e, std::memory_order_acquire);
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
        spins = 0;
        continue;
      }
      detail::cpu_relax();
    }
  }

  thread_pool_options options_;
  std::vector<worker_slot> slots_;
  std::vector<std::thread> workers_;
  job_descriptor job_;
  alignas(64) std::atomic<std::uint64_t> epoch_{0};
  alignas(64) std::atomic<std::uint64_t> next_{0};
  alignas(64) std::atomic<std::size_t> pending_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::uint64_t job_count_ = 0;  // caller-owned
  thread_pool_stats stats_{};    // caller-owned
};

}  // namespace ruvllm

#endif  // RUVLLM_CORE_THREAD_POOL_HPP
