// memory::unified_pool from several threads: allocations, frees, pins and
// evictions race while a reader polls the lock-free statistics. Run under
// TSan (scripts/test.sh's tsan pass). Catch2 assertions stay on the main
// thread: workers record what they saw.

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "ruvllm/memory/unified_pool.hpp"
#include "support/rng.hpp"

namespace pool_concurrency_test {

namespace {

namespace mem = ruvllm::memory;
namespace ev = ruvllm::eviction;

struct counting_hooks {
  std::uint64_t count = 0;  // written under the pool's mutex only
  void evicted(const mem::allocation_info&) noexcept { ++count; }
};

struct worker_report {
  std::size_t allocated = 0, lost_to_eviction = 0, corrupt = 0, unexpected_errors = 0;
};

}  // namespace

TEST_CASE("unified_pool under two allocating threads and a statistics reader", "[memory][pool][threads]") {
  constexpr std::size_t page = 4096, pages = 24;
  mem::pool_options o;
  o.page_bytes = page;
  o.budget_bytes = pages * page;
  o.tenants = 2;
  auto pool = mem::unified_pool<ev::hysteresis<ev::lru>, counting_hooks>::create(o).value();
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> over_budget{0};
  std::atomic<std::size_t> reads{0};

  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      if (pool.used_bytes() > pool.budget_bytes()) over_budget.fetch_add(1);
      static_cast<void>(pool.pressure());
      static_cast<void>(pool.stats());
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  });

  worker_report reports[2];
  const auto work = [&](std::size_t id) {
    ruvllm::test::rng gen(700 + id);
    worker_report& r = reports[id];
    struct held {
      mem::allocation h;
      std::size_t bytes;
      std::uint8_t fill;
    };
    std::vector<held> mine;
    for (int step = 0; step < 3000; ++step) {
      const std::size_t op = gen.uniform_index(0, 9);
      if (op <= 4) {
        mem::alloc_request req;
        req.tenant = static_cast<mem::tenant_id>(id);
        req.policy = gen.chance(0.8) ? mem::pressure_policy::evict : mem::pressure_policy::reject;
        const std::size_t bytes = gen.uniform_index(1, 3 * page);
        const auto a = pool.allocate(bytes, req);
        if (!a.has_value()) {
          if (a.error().code() != ruvllm::errc::budget_exceeded) ++r.unexpected_errors;
          continue;
        }
        ++r.allocated;
        // Another thread may evict it before we pin it; then it is gone.
        if (!pool.pin(*a).has_value()) {
          ++r.lost_to_eviction;
          continue;
        }
        const auto fill = static_cast<std::uint8_t>(gen.next_u32() | 1u);
        std::memset(pool.data(*a), fill, bytes);
        static_cast<void>(pool.unpin(*a));
        mine.push_back({*a, bytes, fill});
      } else if (!mine.empty()) {
        const std::size_t i = gen.uniform_index(0, mine.size() - 1);
        const held x = mine[i];
        if (op <= 7) {  // verify under a pin
          if (!pool.pin(x.h).has_value()) {
            ++r.lost_to_eviction;
            mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
            continue;
          }
          const std::byte* d = pool.data(x.h);
          if (d == nullptr || d[0] != std::byte{x.fill} || d[x.bytes - 1] != std::byte{x.fill}) ++r.corrupt;
          static_cast<void>(pool.unpin(x.h));
        } else {
          const auto f = pool.free(x.h);
          if (!f.has_value() && f.error().code() != ruvllm::errc::not_found) ++r.unexpected_errors;
          mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
    }
    for (const held& x : mine) static_cast<void>(pool.free(x.h));
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  stop = true;
  reader.join();

  CHECK(over_budget.load() == 0);
  CHECK(reads.load() > 0);
  for (const worker_report& r : reports) {
    CHECK(r.allocated > 100);
    CHECK(r.corrupt == 0);
    CHECK(r.unexpected_errors == 0);
  }
  CHECK(pool.used_bytes() == 0);
  CHECK(pool.stats().live_allocations == 0);
  CHECK(pool.peak_bytes() <= pool.budget_bytes());
  CHECK(pool.hooks().count == pool.stats().evictions);
  CHECK(pool.stats().evictions > 0);
}

}  // namespace pool_concurrency_test
