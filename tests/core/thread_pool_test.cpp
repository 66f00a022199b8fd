// thread_pool: every item runs exactly once per job, across many jobs and
// pool sizes; a worker that stalls is benched instead of stalling later jobs.
// Catch2 assertions are not thread-safe, so bodies only record what they see
// and the test thread checks it after run() returns.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "ruvllm/core/thread_pool.hpp"
#include "support/property.hpp"

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
  // Long enough per chunk that the worker wakes and claims some.
  for (int job = 0; job < 20; ++job)
    pool.run(64, 1, [](std::size_t, std::size_t, std::size_t) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
      while (std::chrono::steady_clock::now() < until) {
      }
    });
  const auto stats = pool.stats();
  CHECK(stats.jobs == 20);
  CHECK(stats.chunks_by_caller + stats.chunks_by_workers == 20 * 64);
  CHECK(stats.chunks_by_workers > 0);
}

TEST_CASE("thread_pool benches a worker that stalls inside a chunk", "[core][thread_pool]") {
  ruvllm::thread_pool_options options;
  options.straggler_wait = std::chrono::microseconds(500);
  ruvllm::thread_pool pool(2, options);
  std::atomic<bool> stalled{false};
  // The first chunk a worker takes sleeps 30 ms, as if descheduled.
  pool.run(400, 1, [&](std::size_t, std::size_t, std::size_t thread) {
    if (thread != 0 && !stalled.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(30));
  });
  if (!stalled.load()) {
    WARN("the worker never woke during the job; nothing to bench");
    return;
  }
  auto stats = pool.stats();
  CHECK(stats.straggler_waits == 1);
  CHECK(stats.exclusions == 1);
  // While benched, the next job runs on the caller alone.
  const auto before = stats.chunks_by_workers;
  std::atomic<int> on_workers{0};
  pool.run(100, 1, [&](std::size_t, std::size_t, std::size_t thread) {
    if (thread != 0) on_workers.fetch_add(1);
  });
  CHECK(on_workers.load() == 0);
  CHECK(pool.stats().chunks_by_workers == before);
  // After the bench the worker takes part again.
  for (int job = 0; job < 10; ++job)
    pool.run(64, 1, [](std::size_t, std::size_t, std::size_t) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (std::chrono::steady_clock::now() < until) {
      }
    });
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
