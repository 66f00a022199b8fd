// One block_allocator (drawn from a unified_pool) shared by two threads, each
// driving its own paged_kv_cache through random add/fork/append/free against
// its own model, while a third thread retains and releases blocks directly.
// Run under TSan. Catch2 assertions stay on the main thread.

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ruvllm/kv/paged_kv_cache.hpp"
#include "ruvllm/memory/unified_pool.hpp"
#include "support/rng.hpp"

namespace block_concurrency_test {

namespace {

namespace kv = ruvllm::kv;
namespace mem = ruvllm::memory;
namespace ev = ruvllm::eviction;
namespace p = ruvllm::precision;

using cfg = kv::kv_config<2, 1, 16, p::f16, p::f16, 4>;
using cache_t = kv::paged_kv_cache<cfg>;
constexpr std::size_t row = cache_t::row_floats;

struct worker_report {
  std::size_t steps_ok = 0, plans_failed = 0;
  std::string first_failure;
};

// Runs random operations on a cache of its own; returns what went wrong.
void drive(kv::block_allocator& blocks, std::uint64_t seed, worker_report& report) {
  ruvllm::test::rng gen(seed);
  auto cache = cache_t::create(blocks, {8, 64}).value();
  auto ws = cache.make_workspace(4);
  std::map<kv::seq_id, std::vector<float>> model;  // per sequence: [token][layer][row] K, V interleaved
  const auto fail = [&](std::string what) {
    if (report.first_failure.empty()) report.first_failure = std::move(what);
  };
  for (int step = 0; step < 1500 && report.first_failure.empty(); ++step) {
    const std::size_t op = gen.uniform_index(0, 9);
    const auto pick = [&] {
      return std::next(model.begin(), static_cast<std::ptrdiff_t>(gen.uniform_index(0, model.size() - 1)));
    };
    if (op <= 1) {
      if (auto s = cache.add_sequence(); s.has_value()) model[*s] = {};
    } else if (op == 2 && !model.empty()) {
      const auto it = pick();
      if (auto s = cache.fork(it->first); s.has_value()) model[*s] = it->second;
    } else if (op <= 7 && !model.empty()) {
      const auto it = pick();
      const auto n = static_cast<std::uint32_t>(gen.uniform_index(1, 5));
      const kv::step_entry e{it->first, n};
      const auto planned = cache.plan(std::span<const kv::step_entry>(&e, 1), ws);
      if (!planned.has_value()) {
        ++report.plans_failed;
        continue;
      }
      std::vector<float> toks(n * cfg::layers * 2 * row);
      for (auto& x : toks) x = ruvllm::to_float(ruvllm::to_f16(gen.normal()));
      for (std::size_t layer = 0; layer < cfg::layers; ++layer) {
        std::vector<float> kk, vv;
        for (std::uint32_t t = 0; t < n; ++t) {
          const float* base = toks.data() + (t * cfg::layers + layer) * 2 * row;
          kk.insert(kk.end(), base, base + row);
          vv.insert(vv.end(), base + row, base + 2 * row);
        }
        if (!cache.append(ws, layer, 0, kk, vv).has_value()) fail("append failed");
      }
      it->second.insert(it->second.end(), toks.begin(), toks.end());
      ++report.steps_ok;
    } else if (!model.empty()) {
      const auto it = pick();
      if (!cache.free_sequence(it->first).has_value()) fail("free failed");
      model.erase(it);
    }
    // Contents of every sequence equal the model's.
    std::vector<float> kk(row), vv(row);
    for (const auto& [s, toks] : model) {
      const std::size_t n = toks.size() / (cfg::layers * 2 * row);
      if (cache.length(s).value() != n) fail("length differs");
      for (std::size_t t = 0; t < n; ++t)
        for (std::size_t layer = 0; layer < cfg::layers; ++layer) {
          if (!cache.read(s, layer, t, kk, vv).has_value()) fail("read failed");
          const float* base = toks.data() + (t * cfg::layers + layer) * 2 * row;
          for (std::size_t i = 0; i < row; ++i)
            if (kk[i] != base[i] || vv[i] != base[row + i]) fail("contents differ");
        }
    }
  }
}

}  // namespace

TEST_CASE("block_allocator shared by two caches on two threads", "[kv][block][threads]") {
  mem::pool_options o;
  o.budget_bytes = 4 * mem::huge_page_bytes;
  auto pool = mem::unified_pool<ev::lru>::create(o).value();
  auto blocks = kv::block_allocator::create(pool, cache_t::layout().value(), 48).value();
  CHECK(pool.kind_bytes(mem::alloc_kind::kv_pages) == mem::huge_page_bytes);

  std::atomic<bool> stop{false};
  std::atomic<std::size_t> churn{0}, churn_bad{0};
  std::thread churner([&] {
    // Direct users of the interface (as a radix cache is): allocate, share, release.
    while (!stop.load(std::memory_order_relaxed)) {
      const auto b = blocks.allocate();
      if (!b.has_value()) continue;
      blocks.retain(*b);
      if (blocks.ref_count(*b) != 2) churn_bad.fetch_add(1);
      const auto c = blocks.copy_block(*b, 2);
      blocks.release(*b);
      blocks.release(*b);
      if (c.has_value()) blocks.release(*c);
      churn.fetch_add(1, std::memory_order_relaxed);
    }
  });
  worker_report r0, r1;
  std::thread t0([&] { drive(blocks, 31, r0); });
  std::thread t1([&] { drive(blocks, 32, r1); });
  t0.join();
  t1.join();
  stop = true;
  churner.join();

  CHECK(r0.first_failure == "");
  CHECK(r1.first_failure == "");
  CHECK(r0.steps_ok > 100);
  CHECK(r1.steps_ok > 100);
  CHECK(churn.load() > 0);
  CHECK(churn_bad.load() == 0);
  CHECK(blocks.blocks_in_use() == 0);
  for (std::uint32_t b = 0; b < blocks.capacity_blocks(); ++b) REQUIRE(blocks.ref_count(b) == 0);
  blocks = kv::block_allocator{};  // returns the region to the pool
  CHECK(pool.used_bytes() == 0);
}

}  // namespace block_concurrency_test
