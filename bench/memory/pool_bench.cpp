// The unified pool and the arena (memory_bench).
//  * memory/pool_alloc_free/<policy>/4KiBx1: allocate + free of one page with
//    room to spare: the pool's bookkeeping (lock, record, queue, counters)
//    plus the mapping; baseline: page_memory allocate + free alone (the
//    mmap/munmap pair every allocation pays anyway).
//  * memory/pool_evict/<policy>/4KiBx1: the pool is full of evictable pages,
//    so every allocation evicts the coldest one first (lru: one victim;
//    hysteresis: batches down to 70%, then refills); the allocation is kept,
//    so the pool stays under pressure. Baseline as above.
//  * memory/arena/bytes/64x8: eight 64-byte scratch allocations and a reset,
//    against malloc/free of the same.
// Counters: ns per operation (ns_per_op) next to the usual time column.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ruvllm/memory/arena.hpp"
#include "ruvllm/memory/unified_pool.hpp"
#include "support/bench.hpp"

namespace {

namespace rb = ruvllm::bench;
namespace mem = ruvllm::memory;
namespace ev = ruvllm::eviction;

constexpr std::size_t page = 4096;

mem::pool_options opts(std::size_t pages) {
  mem::pool_options o;
  o.page_bytes = page;
  o.budget_bytes = pages * page;
  o.max_allocations = static_cast<std::uint32_t>(pages + 8);
  return o;
}

void page_memory_baseline(benchmark::State& state, const std::string& name) {
  rb::timed_loop(state, [] {
    auto m = mem::page_memory::allocate(page, page);
    benchmark::DoNotOptimize(m.value().data());
  });
  state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
  rb::record_baseline(state, name);
}

template <class Policy>
void register_policy(const char* policy_name) {
  const std::string alloc_row = rb::row_name("memory", "pool_alloc_free", policy_name, "4KiBx1", 1);
  const std::string alloc_base = rb::baseline_of(alloc_row);
  const auto baseline_body = [] {
    auto m = mem::page_memory::allocate(page, page);
    benchmark::DoNotOptimize(m.value().data());
  };
  benchmark::RegisterBenchmark(alloc_base.c_str(),
                               [alloc_base](benchmark::State& s) { page_memory_baseline(s, alloc_base); });
  benchmark::RegisterBenchmark(alloc_row.c_str(), [alloc_base, baseline_body](benchmark::State& state) {
    auto pool = mem::unified_pool<Policy>::create(opts(64)).value();
    rb::timed_loop(state, [&] {
      const auto a = pool.allocate(page, {}).value();
      static_cast<void>(pool.free(a));
    });
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    rb::set_speedup(state, alloc_base, baseline_body);
  });

  const std::string evict_row = rb::row_name("memory", "pool_evict", policy_name, "4KiBx1", 1);
  const std::string evict_base = rb::baseline_of(evict_row);
  benchmark::RegisterBenchmark(evict_base.c_str(),
                               [evict_base](benchmark::State& s) { page_memory_baseline(s, evict_base); });
  benchmark::RegisterBenchmark(evict_row.c_str(), [evict_base, baseline_body](benchmark::State& state) {
    auto pool = mem::unified_pool<Policy>::create(opts(256)).value();
    for (int i = 0; i < 256; ++i) static_cast<void>(pool.allocate(page, {}).value());
    const std::uint64_t before = pool.stats().evictions;
    rb::timed_loop(state, [&] { benchmark::DoNotOptimize(pool.allocate(page, {}).value()); });
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    state.counters["evictions_per_op"] =
        static_cast<double>(pool.stats().evictions - before) / static_cast<double>(state.iterations());
    rb::set_speedup(state, evict_base, baseline_body);
  });
}

void register_arena() {
  const std::string row = rb::row_name("memory", "arena", "bytes", "64x8", 1);
  const std::string base = rb::baseline_of(row);
  const auto malloc_body = [] {
    void* p[8];
    for (auto& q : p) {
      q = std::malloc(64);
      benchmark::DoNotOptimize(q);
    }
    for (auto* q : p) std::free(q);
  };
  benchmark::RegisterBenchmark(base.c_str(), [base, malloc_body](benchmark::State& state) {
    rb::timed_loop(state, malloc_body);
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    rb::record_baseline(state, base);
  });
  benchmark::RegisterBenchmark(row.c_str(), [base, malloc_body](benchmark::State& state) {
    alignas(64) static std::byte buffer[4096];
    mem::arena a(buffer);
    rb::timed_loop(state, [&] {
      for (int i = 0; i < 8; ++i) benchmark::DoNotOptimize(a.allocate(64, 64));
      a.reset();
    });
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    rb::set_speedup(state, base, malloc_body);
  });
}

const bool registered = [] {
  register_policy<ev::lru>("lru");
  register_policy<ev::lfu>("lfu");
  register_policy<ev::hysteresis<ev::lru>>("hysteresis_lru");
  register_arena();
  return true;
}();

}  // namespace
