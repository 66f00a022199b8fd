// Named LoRA adapters in the unified pool: the budget holds, the pool evicts
// only adapters not in use, an evicted adapter comes back from its backing
// with the parameters and version it had, and a seeded sequence of
// operations agrees with a plain model of what each adapter should hold.

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "ruvllm/core/eviction.hpp"
#include "ruvllm/memory/unified_pool.hpp"
#include "ruvllm/sona/adapter_pool.hpp"
#include "support/rng.hpp"

namespace adapter_pool_test {

namespace {

namespace sona = ruvllm::sona;
namespace mem = ruvllm::memory;
using pool_t = mem::unified_pool<ruvllm::eviction::lru, sona::adapter_pool_hooks>;
using registry_t = sona::pooled_adapters<sona::base_lora<>, pool_t>;

constexpr std::size_t page = 65536;
// rank 4 x (1920 + 1920) floats = 61,440 bytes: one 64 KiB page per adapter.
const sona::lora_options shape{.layers = 1, .in_dim = 1920, .out_dim = 1920, .rank = 4};

pool_t make_pool(std::size_t pages) {
  return pool_t::create({.budget_bytes = pages * page, .page_bytes = page, .max_allocations = 64}).value();
}

std::string name_of(int i) { return "adapter-" + std::to_string(i); }

}  // namespace

TEST_CASE("pooled adapters: evicted under pressure, reloaded with their weights and version", "[sona][adapters]") {
  auto pool = make_pool(3);
  registry_t reg(pool);
  reg.bind(pool.hooks());
  for (int i = 0; i < 3; ++i) REQUIRE(reg.add(name_of(i), shape));
  CHECK(pool.stats().used_bytes == 3 * page);

  // Adapter 0 learns something, then stops being served.
  REQUIRE(reg.activate(name_of(0)));
  auto* a0 = reg.active();
  REQUIRE(a0 != nullptr);
  for (float& v : a0->b(0)) v = 0.125f;
  a0->touch();
  a0->touch();
  const std::vector<float> learned(a0->parameters().begin(), a0->parameters().end());
  reg.deactivate();

  // A fourth adapter needs room: the least recently used unpinned one goes
  // (adapter 0 was touched last by activate, so adapter 1 is older).
  REQUIRE(reg.add(name_of(3), shape));
  CHECK(pool.stats().used_bytes <= 3 * page);
  CHECK(reg.backing().saves() == 1);
  CHECK_FALSE(reg.resident(name_of(1)));
  // Two more evict adapter 2 and adapter 0.
  REQUIRE(reg.add(name_of(4), shape));
  REQUIRE(reg.add(name_of(5), shape));
  CHECK_FALSE(reg.resident(name_of(0)));
  CHECK(reg.backing().saves() == 3);

  // Activation reloads adapter 0 (evicting another) with what it learned.
  REQUIRE(reg.activate(name_of(0)));
  CHECK(reg.resident(name_of(0)));
  a0 = reg.active();
  CHECK(a0->version() == 2);
  CHECK(std::vector<float>(a0->parameters().begin(), a0->parameters().end()) == learned);
  CHECK(pool.stats().used_bytes <= 3 * page);
}

TEST_CASE("pooled adapters: what is active or leased is never evicted", "[sona][adapters]") {
  auto pool = make_pool(2);
  registry_t reg(pool);
  reg.bind(pool.hooks());
  REQUIRE(reg.add("served", shape));
  REQUIRE(reg.add("trained", shape));
  REQUIRE(reg.activate("served"));
  {
    auto lease = reg.acquire("trained");
    REQUIRE(lease);
    // Both pages are pinned: a third adapter cannot get room.
    const auto third = reg.add("third", shape);
    REQUIRE_FALSE(third);
    CHECK(third.error().code() == ruvllm::errc::budget_exceeded);
    CHECK_FALSE(reg.remove("trained"));  // in use by the lease
    CHECK(reg.resident("served"));
    CHECK(reg.resident("trained"));
  }
  // The lease is gone: "trained" may now make room.
  REQUIRE(reg.add("third", shape));
  CHECK(reg.resident("served"));
  CHECK_FALSE(reg.resident("trained"));
  REQUIRE(reg.remove("trained"));
  CHECK(reg.size() == 2);
  CHECK_FALSE(reg.activate("trained"));
  CHECK_FALSE(reg.add("served", shape));  // duplicate name
}

TEST_CASE("pooled adapters: a seeded operation sequence agrees with a model", "[sona][adapters]") {
  ruvllm::test::rng gen(171);
  auto pool = make_pool(4);
  registry_t reg(pool);
  reg.bind(pool.hooks());
  struct expected {
    float mark = 0.0f;  // every B entry holds this value
    std::uint64_t version = 0;
  };
  std::map<std::string, expected> model;
  std::string active;
  int next = 0;
  for (int step = 0; step < 600; ++step) {
    const int op = static_cast<int>(gen.uniform_index(0, 9));
    INFO("step " << step << " op " << op);
    if (op <= 1 || model.empty()) {  // add
      const std::string name = name_of(next++);
      if (reg.add(name, shape)) model[name] = {};
    } else {
      auto it = model.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(gen.uniform_index(0, model.size() - 1)));
      const std::string& name = it->first;
      if (op <= 5) {                        // activate and train
        if (!reg.activate(name)) continue;  // every page pinned: allowed to fail
        active = name;
        auto* a = reg.active();
        REQUIRE(a->version() == it->second.version);
        for (float v : a->b(0)) REQUIRE(v == it->second.mark);
        it->second.mark += 1.0f;
        for (float& v : a->b(0)) v = it->second.mark;
        a->touch();
        ++it->second.version;
      } else if (op <= 7) {  // lease and read
        auto lease = reg.acquire(name);
        if (!lease) continue;
        REQUIRE(lease->adapter().version() == it->second.version);
        for (float v : lease->adapter().b(0)) REQUIRE(v == it->second.mark);
      } else if (op == 8) {
        reg.deactivate();
        active.clear();
      } else if (name != active) {
        REQUIRE(reg.remove(name));
        model.erase(it);
      }
    }
    REQUIRE(pool.stats().used_bytes <= 4 * page);
    REQUIRE(reg.size() == model.size());
  }
  CHECK(reg.backing().saves() > 10);  // the budget forced many evictions
}

}  // namespace adapter_pool_test
