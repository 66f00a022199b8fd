// thread_pool: every item runs exactly once per job, across many jobs and
// pool sizes; a worker that stalls is benched instead of stalling later jobs.
// Catch2 assertions are not thread-safe, so bodies only record what they see
// and the test thread checks it after run() returns.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "ruvllm/core/thread_pool.hpp"
#include "support/property.hpp"

namespace thread_pool_test {

/// Keeps the calling thread busy (not asleep) for `time`, as a kernel chunk.
void busy_for(std::chrono::microseconds time) {
  const auto until = std::chrono::steady_clock::now() + time;
  while (std::chrono::steady_clock::now() < until) {
  }
}

TEST_CASE("thread_pool runs every item exactly once", "[core][thread_pool]") {
  for (std::size_t threads : {1u, 2u, 3u}) {
    ruvllm::thread_pool pool(threads);
    CHECK(pool.size() == threads);
    ruvllm::test::check_property(51, 60, [&](ruvllm::test::rng& gen, std::size_t) {
      const std::size_t n = gen.uniform_index(0, 5000);
      const std::size_t grain = gen.uniform_index(1, 300);
      std::vector<std::atomic<int>> hits(n);
      std::atomic<std::size_t> max_thread{0};
      std::atomic<int> bad_ranges{0};
      pool.run(n, grain, [&](std::size_t begin, std::size_t end, std::size_t thread) {
        if (!(begin < end && end <= n && end - begin <= grain)) bad_ranges.fetch_add(1);
        for (std::size_t i = begin; i < end && i < n; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
        std::size_t seen = max_thread.load();
        while (thread > seen && !max_thread.compare_exchange_weak(seen, thread)) {
        }
      });
      REQUIRE(bad_ranges.load() == 0);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
      REQUIRE(max_thread.load() < threads);
    });
  }
}

TEST_CASE("thread_pool clamps its thread count to [1, max_threads] and runs jobs at the limit", "[core][thread_pool]") {
  CHECK(ruvllm::thread_pool(0).size() == 1);
  ruvllm::thread_pool pool(ruvllm::thread_pool::max_threads + 1000);
  REQUIRE(pool.size() == ruvllm::thread_pool::max_threads);
  // Every thread index of the largest pool is a valid participant: a job
  // with a chunk for each covers every item once and names no thread past
  // the last.
  const std::size_t n = 4 * ruvllm::thread_pool::max_threads;
  std::vector<std::atomic<int>> hits(n);
  std::atomic<int> bad{0};
  pool.run(n, 1, [&](std::size_t begin, std::size_t end, std::size_t thread) {
    if (thread >= pool.size()) bad.fetch_add(1);
    for (std::size_t i = begin; i < end; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
  });
  CHECK(bad.load() == 0);
  for (std::size_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
  std::vector<float> out(n, -1.0f);
  pool.run_replicated(n, 1, out.data(), 1, [](std::size_t begin, std::size_t end, std::size_t, float* dst) {
    for (std::size_t i = begin; i < end; ++i) dst[i - begin] = static_cast<float>(i);
  });
  for (std::size_t i = 0; i < n; ++i) REQUIRE(out[i] == static_cast<float>(i));
}

TEST_CASE("home_ranges split a job's chunks into contiguous near-equal shares", "[core][thread_pool]") {
  for (std::size_t threads = 1; threads <= 64; ++threads) {
    for (std::size_t chunks : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{63},
                               std::size_t{64}, std::size_t{65}, std::size_t{1000}, std::size_t{4096}}) {
      const ruvllm::detail::home_ranges homes{chunks, threads};
      REQUIRE(homes.begin(0) == 0);
      REQUIRE(homes.end(threads - 1) == chunks);
      for (std::size_t r = 0; r < threads; ++r) {
        REQUIRE(homes.end(r) >= homes.begin(r));
        if (r + 1 < threads) REQUIRE(homes.begin(r + 1) == homes.end(r));
        const std::size_t size = homes.end(r) - homes.begin(r);
        REQUIRE(size >= chunks / threads);
        REQUIRE(size <= (chunks + threads - 1) / threads);
      }
    }
  }
}

TEST_CASE("thread_pool threads take their own chunks first, in order, then the others'", "[core][thread_pool]") {
  // No worker is ever benched (straggler_wait of minutes), so every job has
  // all threads as participants and thread t owns home_ranges{chunks,
  // threads} range t. Whatever the timing, each thread claims from its own
  // cursor until that range is exhausted and only then from the others',
  // and a cursor hands out its range in order.
  ruvllm::thread_pool_options options;
  options.straggler_wait = std::chrono::minutes(10);
  for (std::size_t threads : {2u, 3u}) {
    ruvllm::thread_pool pool(threads, options);
    ruvllm::test::check_property(52, 200, [&](ruvllm::test::rng& gen, std::size_t) {
      const std::size_t chunks = gen.uniform_index(2, 200);
      const bool slow = gen.uniform_index(0, 1) == 1;  // chunks long enough for the workers to join
      std::vector<std::atomic<int>> hits(chunks);
      std::vector<std::vector<std::size_t>> order(threads);  // per thread, in the order it ran them
      pool.run(chunks, 1, [&](std::size_t begin, std::size_t, std::size_t thread) {
        hits[begin].fetch_add(1, std::memory_order_relaxed);
        order[thread].push_back(begin);
        if (slow) {
          busy_for(std::chrono::microseconds(20));
        }
      });
      for (std::size_t c = 0; c < chunks; ++c) REQUIRE(hits[c].load() == 1);
      const ruvllm::detail::home_ranges homes{chunks, threads};
      const auto range_of = [&](std::size_t c) {
        std::size_t r = 0;
        while (c >= homes.end(r)) ++r;
        return r;
      };
      for (std::size_t t = 0; t < threads; ++t) {
        bool left_home = false;
        std::vector<std::size_t> last(threads, 0);
        std::vector<bool> seen(threads, false);
        for (const std::size_t c : order[t]) {
          const std::size_t r = range_of(c);
          if (r != t) left_home = true;
          INFO("thread " << t << " ran chunk " << c << " of range " << r << " of " << chunks << " chunks");
          REQUIRE(!(r == t && left_home));     // its own chunks come first
          REQUIRE((!seen[r] || c > last[r]));  // each range in order
          seen[r] = true;
          last[r] = c;
        }
      }
    });
  }
}

TEST_CASE("thread_pool results are visible to the caller after run", "[core][thread_pool]") {
  ruvllm::thread_pool pool(2);
  std::vector<double> out(10000);  // plain, non-atomic writes by any thread
  for (int round = 0; round < 50; ++round) {
    pool.run(out.size(), 64, [&](std::size_t begin, std::size_t end, std::size_t) {
      for (std::size_t i = begin; i < end; ++i) out[i] = static_cast<double>(i) * round;
    });
    double sum = std::accumulate(out.begin(), out.end(), 0.0);
    REQUIRE(sum == Approx(round * 9999.0 * 10000.0 / 2.0));
  }
}

TEST_CASE("thread_pool workers share the work when idle cores exist", "[core][thread_pool]") {
  ruvllm::thread_pool pool(2);
  // Long enough per chunk that the worker wakes and claims some; on a loaded
  // machine the worker may wait for a time slice, so the jobs go on (up to
  // seconds) until it has run.
  std::uint64_t jobs = 0;
  while (jobs < 20 || (pool.stats().chunks_by_workers == 0 && jobs < 2000)) {
    pool.run(64, 1, [](std::size_t, std::size_t, std::size_t) { busy_for(std::chrono::microseconds(100)); });
    ++jobs;
  }
  const auto stats = pool.stats();
  CHECK(stats.jobs == jobs);
  CHECK(stats.chunks_by_caller + stats.chunks_by_workers == jobs * 64);
  CHECK(stats.chunks_by_workers > 0);
}

#if defined(__linux__)
/// Pins the calling thread to one CPU for its lifetime, then restores the
/// thread's previous CPU mask. Threads it starts meanwhile keep the pin.
class pinned_thread {
 public:
  explicit pinned_thread(int cpu) {
    REQUIRE(::sched_getaffinity(0, sizeof saved_, &saved_) == 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);
  }
  pinned_thread(const pinned_thread&) = delete;
  pinned_thread& operator=(const pinned_thread&) = delete;
  ~pinned_thread() { ::sched_setaffinity(0, sizeof saved_, &saved_); }

 private:
  cpu_set_t saved_{};
};

/// Jobs of 64 chunks of ~20 us each with a 100 us pause after each, so an
/// idle worker spins between them: until `done(pool)` (at most 2000 jobs),
/// then `jobs_after` more.
template <class Done>
void run_paused_jobs(ruvllm::thread_pool& pool, int jobs_after, Done done) {
  const auto paused_job = [&pool] {
    pool.run(64, 1, [](std::size_t, std::size_t, std::size_t) { busy_for(std::chrono::microseconds(20)); });
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  };
  for (int job = 0; job < 2000 && !done(pool); ++job) paused_job();
  for (int job = 0; job < jobs_after; ++job) paused_job();
}

TEST_CASE("thread_pool idle workers yield only to a caller on their own CPU", "[core][thread_pool]") {
  cpu_set_t allowed;
  REQUIRE(::sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  if (cpus.size() < 2) {
    WARN("one CPU available: the two placements cannot be made");
    return;
  }
  SECTION("a worker on another CPU spins without yielding") {
    // A yield there would hand that CPU to a co-tenant for a time slice.
    std::unique_ptr<ruvllm::thread_pool> pool;
    {
      const pinned_thread on_worker_cpu(cpus[1]);
      pool = std::make_unique<ruvllm::thread_pool>(2);  // the worker inherits CPU 1's pin
    }
    const pinned_thread on_caller_cpu(cpus[0]);
    run_paused_jobs(*pool, 20, [](const ruvllm::thread_pool& p) { return p.stats().chunks_by_workers > 0; });
    CHECK(pool->stats().chunks_by_workers > 0);
    CHECK(pool->stats().spin_yields == 0);
  }
  SECTION("a worker on the caller's CPU yields while it spins") {
    const pinned_thread both(cpus[0]);
    ruvllm::thread_pool pool(2);
    run_paused_jobs(pool, 0, [](const ruvllm::thread_pool& p) { return p.stats().spin_yields > 0; });
    CHECK(pool.stats().spin_yields > 0);
  }
}
#endif

TEST_CASE("thread_pool benches a worker that stalls inside a chunk", "[core][thread_pool]") {
  ruvllm::thread_pool_options options;
  options.straggler_wait = std::chrono::microseconds(500);
  ruvllm::thread_pool pool(2, options);
  std::atomic<bool> stalled{false};
  pool.run(64, 1, [](std::size_t, std::size_t, std::size_t) {});  // wakes the worker
  // The first chunk a worker takes sleeps 30 ms, as if descheduled; the
  // others take ~20 us, so the job lasts long enough for the worker to join.
  pool.run(400, 1, [&](std::size_t, std::size_t, std::size_t thread) {
    if (thread != 0 && !stalled.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    busy_for(std::chrono::microseconds(20));
  });
  if (!stalled.load()) {
    WARN("the worker never woke during the job; nothing to bench");
    return;
  }
  auto stats = pool.stats();
  // At least this stall (a loaded machine may add its own).
  CHECK(stats.straggler_waits >= 1);
  CHECK(stats.exclusions >= 1);
  // While benched, the next job runs on the caller alone.
  const auto before = stats.chunks_by_workers;
  std::atomic<int> on_workers{0};
  pool.run(100, 1, [&](std::size_t, std::size_t, std::size_t thread) {
    if (thread != 0) on_workers.fetch_add(1);
  });
  CHECK(on_workers.load() == 0);
  CHECK(pool.stats().chunks_by_workers == before);
  // After the bench the worker takes part again (given up to seconds of jobs
  // to get a time slice on a loaded machine).
  for (int job = 0; job < 2000 && pool.stats().chunks_by_workers == before; ++job)
    pool.run(64, 1, [](std::size_t, std::size_t, std::size_t) { busy_for(std::chrono::microseconds(50)); });
  CHECK(pool.stats().chunks_by_workers > before);
}

TEST_CASE("thread_pool of one thread runs inline", "[core][thread_pool]") {
  ruvllm::thread_pool pool(1);
  std::size_t calls = 0;
  pool.run(10, 3, [&](std::size_t begin, std::size_t end, std::size_t thread) {
    CHECK(thread == 0);  // safe: a one-thread pool runs on the test thread
    CHECK(begin == calls * 3);
    CHECK(end == std::min<std::size_t>(10, begin + 3));
    ++calls;
  });
  CHECK(calls == 4);
  pool.run(0, 3, [&](std::size_t, std::size_t, std::size_t) { ++calls; });
  CHECK(calls == 4);
}

namespace {
/// The value run_replicated bodies write for item i, slot j.
float replicated_value(std::size_t i, std::size_t j) { return static_cast<float>(3 * i + j) + 0.5f; }
}  // namespace

TEST_CASE("thread_pool run_replicated writes every item's slice exactly", "[core][thread_pool]") {
  for (std::size_t threads : {1u, 2u, 3u}) {
    ruvllm::thread_pool_options options;
    options.replicate = true;
    options.adaptive = false;  // the workers always take part
    options.staging_floats = 512;
    ruvllm::thread_pool pool(threads, options);
    ruvllm::test::check_property(52, 40, [&](ruvllm::test::rng& gen, std::size_t) {
      const std::size_t n = gen.uniform_index(0, 3000);
      const std::size_t grain = gen.uniform_index(1, 200);
      const std::size_t per_item = gen.uniform_index(1, 9);
      std::vector<float> out(n * per_item, -1.0f);
      std::atomic<int> bad_ranges{0};
      std::atomic<int>* bad = &bad_ranges;
      pool.run_replicated(n, grain, out.data(), per_item,
                          [=](std::size_t begin, std::size_t end, std::size_t thread, float* dst) {
                            // A worker's chunk never exceeds its staging buffer (the
                            // caller may get any range when it runs the job alone).
                            if (!(begin < end && end <= n && thread < threads)) bad->fetch_add(1);
                            if (thread != 0 && (end - begin) * per_item > 512) bad->fetch_add(1);
                            for (std::size_t i = begin; i < end; ++i)
                              for (std::size_t j = 0; j < per_item; ++j)
                                dst[(i - begin) * per_item + j] = replicated_value(i, j);
                          });
      REQUIRE(bad_ranges.load() == 0);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < per_item; ++j) REQUIRE(out[i * per_item + j] == replicated_value(i, j));
    });
    pool.quiesce();
  }
}

TEST_CASE("thread_pool late_replays runs kept jobs' chunks again as every worker until quiesce",
          "[core][thread_pool]") {
  // The bodies break run_replicated's contract on purpose: they mark a shared
  // table (by thread and chunk) with their job's bit, so the test can see
  // every replayed chunk. replicate = false: the real workers are never late,
  // so every mark after a job returned is a replay.
  ruvllm::thread_pool_options options;
  options.replicate = false;
  options.adaptive = false;
  options.late_replays = 2;
  options.staging_floats = 64;
  static constexpr std::size_t threads = 3, n = 40, grain = 8, chunks = 5;
  struct mark_table {
    std::atomic<unsigned> by[threads][chunks];
    void clear() {
      for (auto& row : by)
        for (auto& m : row) m.store(0);
    }
    [[nodiscard]] bool every_worker_chunk_is(unsigned bits) const {
      for (std::size_t c = 0; c < chunks; ++c) {
        if (by[0][c].load() != 0) return false;  // replays run as workers only
        for (std::size_t t = 1; t < threads; ++t)
          if (by[t][c].load() != bits) return false;
      }
      return true;
    }
  };
  auto marks = std::make_unique<mark_table>();
  marks->clear();
  ruvllm::thread_pool pool(threads, options);
  std::vector<float> out(n);
  const auto job = [&](unsigned id, std::size_t items) {
    mark_table* m = marks.get();
    pool.run_replicated(items, grain, out.data(), 1,
                        [m, id](std::size_t begin, std::size_t end, std::size_t thread, float* dst) {
                          m->by[thread][begin / grain].fetch_or(1u << id);
                          for (std::size_t i = begin; i < end; ++i) dst[i - begin] = replicated_value(i, id);
                        });
    for (std::size_t i = 0; i < items; ++i) REQUIRE(out[i] == replicated_value(i, id));
  };
  const auto plain_job = [&] { pool.run(4, 1, [](std::size_t, std::size_t, std::size_t) {}); };

  job(1, n);
  marks->clear();
  std::fill(out.begin(), out.end(), -1.0f);
  plain_job();
  CHECK(marks->every_worker_chunk_is(1u << 1));
  CHECK(std::count(out.begin(), out.end(), -1.0f) == static_cast<long>(n));  // replays write staging only

  job(2, n);
  marks->clear();
  plain_job();
  CHECK(marks->every_worker_chunk_is((1u << 1) | (1u << 2)));

  job(3, n);      // the oldest kept job (1) leaves the ring of two
  job(4, grain);  // one chunk: the caller runs it alone, no worker can be late
  marks->clear();
  plain_job();
  CHECK(marks->every_worker_chunk_is((1u << 2) | (1u << 3)));

  pool.quiesce();  // no earlier body runs after quiesce
  marks->clear();
  plain_job();
  job(5, n);
  marks->clear();
  plain_job();
  CHECK(marks->every_worker_chunk_is(1u << 5));
}

TEST_CASE("thread_pool run_replicated does not wait for a descheduled worker", "[core][thread_pool]") {
  for (const bool replicate : {true, false}) {
    ruvllm::thread_pool_options options;
    options.replicate = replicate;
    ruvllm::thread_pool pool(2, options);
    std::atomic<int> stalls{0};
    std::atomic<bool> release{false}, late_finished{false}, timed_out{false};
    const std::thread::id caller = std::this_thread::get_id();
    std::vector<float> out(400, -1.0f);
    struct context {
      std::atomic<int>* stalls;
      std::atomic<bool>* release;
      std::atomic<bool>* late_finished;
      std::atomic<bool>* timed_out;
      const std::thread::id* caller;
      bool replicate;
    } ctx{&stalls, &release, &late_finished, &timed_out, &caller, replicate};
    // Wake the worker: it spins between back-to-back jobs.
    pool.run_replicated(64, 1, out.data(), 1, [](std::size_t begin, std::size_t end, std::size_t, float* dst) {
      for (std::size_t i = begin; i < end; ++i) dst[i - begin] = 0.0f;
    });
    // The first chunk a worker takes stalls, as if descheduled. With
    // replication it waits until the job has returned (so the job must not
    // wait for it; after 10 s it gives up and reports that) and then writes
    // garbage, which must never reach out. Without, it sleeps 10 ms and the
    // caller waits for its (correct) result.
    pool.run_replicated(out.size(), 1, out.data(), 1,
                        [ctx](std::size_t begin, std::size_t end, std::size_t, float* dst) {
                          bool stalled = false;
                          if (std::this_thread::get_id() != *ctx.caller && ctx.stalls->fetch_add(1) == 0) {
                            stalled = true;
                            if (ctx.replicate) {
                              const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                              while (!ctx.release->load()) {
                                if (std::chrono::steady_clock::now() > give_up) {
                                  ctx.timed_out->store(true);
                                  break;
                                }
                                std::this_thread::sleep_for(std::chrono::microseconds(100));
                              }
                            } else {
                              std::this_thread::sleep_for(std::chrono::milliseconds(10));
                            }
                          }
                          // ~20 us per item, so the job lasts long enough for the worker to wake.
                          busy_for(std::chrono::microseconds(20));
                          for (std::size_t i = begin; i < end; ++i)
                            dst[i - begin] = stalled && ctx.replicate ? -7.0f : replicated_value(i, 0);
                          if (stalled) ctx.late_finished->store(true);
                        });
    release.store(true);
    for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == replicated_value(i, 0));
    pool.quiesce();
    CHECK_FALSE(timed_out.load());
    if (stalls.load() == 0) {
      WARN("the worker never woke during the job; nothing was stalled");
      continue;
    }
    CHECK(late_finished.load());  // quiesce waited for the late chunk
    if (replicate) {
      CHECK(pool.stats().chunks_recomputed >= 1);
    } else {
      CHECK(pool.stats().chunks_recomputed == 0);
    }
    // The late result was discarded, then and afterwards.
    for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == replicated_value(i, 0));
    // The pool keeps working, the worker included.
    for (int job = 0; job < 20; ++job) {
      std::fill(out.begin(), out.end(), -1.0f);
      pool.run_replicated(out.size(), 4, out.data(), 1,
                          [](std::size_t begin, std::size_t end, std::size_t, float* dst) {
                            busy_for(std::chrono::microseconds(20));
                            for (std::size_t i = begin; i < end; ++i) dst[i - begin] = replicated_value(i, 0);
                          });
      for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == replicated_value(i, 0));
    }
    CHECK(pool.stats().chunks_by_workers > 0);
  }
}

TEST_CASE("thread_pool run_replicated stays exact when workers stall at random", "[core][thread_pool]") {
  // Workers stall now and then for up to a few milliseconds (as a co-tenant
  // would make them), across many back-to-back jobs of different shapes:
  // every job's output is exact, and late chunks of earlier jobs never touch
  // a later job's output or accounting.
  ruvllm::thread_pool_options options;
  options.replicate = true;
  options.replicate_after = std::chrono::microseconds(5);
  for (std::size_t threads : {2u, 3u}) {
    ruvllm::thread_pool pool(threads, options);
    std::atomic<std::uint32_t> draws{0};
    std::atomic<std::uint32_t>* shared_draws = &draws;
    std::vector<float> out(2000);
    ruvllm::test::check_property(53, 300, [&](ruvllm::test::rng& gen, std::size_t) {
      const std::size_t n = gen.uniform_index(1, 2000);
      const std::size_t grain = gen.uniform_index(1, 64);
      const float salt = static_cast<float>(gen.uniform_index(0, 1000));
      std::fill(out.begin(), out.end(), -1.0f);
      pool.run_replicated(n, grain, out.data(), 1,
                          [salt, shared_draws](std::size_t begin, std::size_t end, std::size_t thread, float* dst) {
                            if (thread != 0) {
                              // A cheap shared pseudo-random draw: ~1 chunk in 16 stalls.
                              const std::uint32_t d = shared_draws->fetch_add(1) * 2654435761u;
                              if ((d >> 28) == 0)
                                std::this_thread::sleep_for(std::chrono::microseconds(200 + (d & 2047)));
                            }
                            for (std::size_t i = begin; i < end; ++i) dst[i - begin] = replicated_value(i, 0) + salt;
                          });
      for (std::size_t i = 0; i < n; ++i) REQUIRE(out[i] == replicated_value(i, 0) + salt);
      for (std::size_t i = n; i < out.size(); ++i) REQUIRE(out[i] == -1.0f);
    });
    pool.quiesce();
  }
}

TEST_CASE("thread_pool run_replicated benches workers that only slow jobs down", "[core][thread_pool]") {
  // A worker whose every chunk stalls (as on a core held by a co-tenant)
  // makes jobs slower than the caller alone; the adaptive probe must notice
  // and run jobs without it (once over the whole range), still exactly.
  ruvllm::thread_pool_options options;
  options.replicate = true;
  options.probe_jobs = 8;
  options.probe_time = std::chrono::microseconds(500);
  ruvllm::thread_pool pool(2, options);
  std::vector<float> out(256);
  bool whole_range_seen = false;
  bool* whole = &whole_range_seen;
  const std::size_t n = out.size();
  for (int job = 0; job < 200; ++job) {
    std::fill(out.begin(), out.end(), -1.0f);
    pool.run_replicated(out.size(), 8, out.data(), 1,
                        [whole, n](std::size_t begin, std::size_t end, std::size_t thread, float* dst) {
                          if (thread != 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
                          if (begin == 0 && end == n) *whole = true;  // only the caller alone gets the whole range
                          for (std::size_t i = begin; i < end; ++i) dst[i - begin] = replicated_value(i, 0);
                        });
    for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == replicated_value(i, 0));
  }
  pool.quiesce();
  CHECK(pool.stats().solo_jobs > 0);
  CHECK(whole_range_seen);
}

TEST_CASE("thread_pool run_replicated keeps workers that speed jobs up", "[core][thread_pool]") {
  // Every item sleeps the same time wherever it runs, so two threads finish
  // a job in about half the time of the caller alone, with milliseconds to
  // spare for a worker that wakes late on a loaded machine. The first
  // measurement (four windows of 8 jobs, the middle two alone) must keep
  // the workers for the jobs after it. A measurement is timing, so a
  // machine busy with other tests (ctest -j) can still hold a worker back
  // for a whole window and make it look slower: up to five fresh pools may
  // measure, and one keeping its workers passes. A probe that never keeps
  // them fails all five.
  const auto solo_jobs_of_one_pool = [] {
    ruvllm::thread_pool_options options;
    options.probe_jobs = 8;
    options.probe_time = std::chrono::microseconds(500);
    ruvllm::thread_pool pool(2, options);
    std::vector<float> out(64);
    constexpr int jobs = 48;
    for (int job = 0; job < jobs; ++job) {
      pool.run_replicated(out.size(), 8, out.data(), 1,
                          [](std::size_t begin, std::size_t end, std::size_t, float* dst) {
                            std::this_thread::sleep_for(std::chrono::microseconds(100 * (end - begin)));
                            for (std::size_t i = begin; i < end; ++i) dst[i - begin] = replicated_value(i, 0);
                          });
      for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == replicated_value(i, 0));
    }
    pool.quiesce();
    const ruvllm::thread_pool_stats stats = pool.stats();
    CHECK(stats.chunks_by_workers > 0);
    return stats.solo_jobs;
  };
  std::vector<std::uint64_t> solo_jobs;
  for (int attempt = 0; attempt < 5 && (solo_jobs.empty() || solo_jobs.back() != 16); ++attempt)
    solo_jobs.push_back(solo_jobs_of_one_pool());
  INFO("solo jobs of each pool: " << Catch::Detail::stringify(solo_jobs));
  CHECK(solo_jobs.back() == 16);  // the two measuring windows alone, no more
}

TEST_CASE("thread_pool end_step closes the adaptive probe's windows at step ends", "[core][thread_pool]") {
  // A model of the probe's windows: with marks after every step of 5 jobs
  // and windows of at least 8 jobs, each window holds two whole steps, so
  // the first measurement (with, without, without, with the workers) runs 20
  // of its first 40 jobs alone, where windows cut after any job ran 16 of
  // the first 32 alone and none of jobs 33 to 40 (the start of the settled
  // period, whose mode depends on timing, is never reached here).
  ruvllm::thread_pool_options options;
  options.probe_jobs = 8;
  options.probe_time = std::chrono::microseconds(0);
  std::vector<float> out(64);
  const auto job = [&out](ruvllm::thread_pool& pool) {
    pool.run_replicated(out.size(), 8, out.data(), 1, [](std::size_t begin, std::size_t end, std::size_t, float* dst) {
      for (std::size_t i = begin; i < end; ++i) dst[i - begin] = replicated_value(i, 0);
    });
    for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == replicated_value(i, 0));
  };
  SECTION("marked steps") {
    ruvllm::thread_pool pool(2, options);
    for (int step = 0; step < 8; ++step) {
      for (int j = 0; j < 5; ++j) job(pool);
      pool.end_step();
      // Solo jobs so far: window 0 (steps 0-1) with the workers, windows 1
      // and 2 (steps 2-5) alone, window 3 (steps 6-7) with them.
      const std::uint64_t expected = step < 2 ? 0 : step < 6 ? 5 * static_cast<std::uint64_t>(step - 1) : 20;
      CHECK(pool.stats().solo_jobs == expected);
    }
    pool.quiesce();
  }
  SECTION("a caller that stops marking still gets its windows closed") {
    // One mark, then none: windows close after thread_pool::max_unmarked_window
    // times probe_jobs jobs (128 here), so jobs 129 to 384 run alone.
    ruvllm::thread_pool pool(2, options);
    pool.end_step();
    const std::uint64_t window = ruvllm::thread_pool::max_unmarked_window * options.probe_jobs;
    for (std::uint64_t j = 0; j < 4 * window; ++j) job(pool);
    CHECK(pool.stats().solo_jobs == 2 * window);
    pool.quiesce();
  }
}

TEST_CASE("thread_pool's adaptive probe settles longer while the workers win decisively", "[core][thread_pool]") {
  using schedule_t = ruvllm::detail::probe_schedule;
  schedule_t s;
  // Decisive wins double the settled run up to on_max; the first run after
  // any measurement outcome but a decisive win is on_first.
  const std::uint32_t decisive[] = {32, 64, 128, 128, 128};
  for (const std::uint32_t want : decisive) {
    CHECK(s.decide(1.8, 1.0));
    CHECK(s.settle() == want);
  }
  // A narrow win keeps the workers for on_first windows and starts over.
  CHECK(s.decide(1.1, 1.0));
  CHECK(s.settle() == 32);
  CHECK(s.decide(1.8, 1.0));
  CHECK(s.settle() == 32);
  CHECK(s.decide(1.8, 1.0));
  CHECK(s.settle() == 64);
  // Losses (a tie included) bench the workers for 1, 2, 4 ... 64 windows.
  const std::uint32_t losing[] = {1, 2, 4, 8, 16, 32, 64, 64};
  for (const std::uint32_t want : losing) {
    CHECK(!s.decide(1.02, 1.0));
    CHECK(!s.workers_on());
    CHECK(s.settle() == want);
  }
  // A win after losses settles on_first windows and resets the losing backoff.
  CHECK(s.decide(1.3, 1.0));
  CHECK(s.settle() == schedule_t::on_first);
  CHECK(!s.decide(0.5, 1.0));
  CHECK(s.settle() == 1);
  // A loss also resets the winning run: the next decisive win settles on_first.
  CHECK(s.decide(2.0, 1.0));
  CHECK(s.settle() == schedule_t::on_first);
}

}  // namespace thread_pool_test
