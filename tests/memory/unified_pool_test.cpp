// memory::unified_pool: the hard budget, tags, quotas, pins, every pressure
// policy and its hook, hysteresis batches, and a seeded property test that
// runs long random operation sequences against a plain model of the live
// allocations (their sizes, tags, contents and last use).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <vector>

#include "ruvllm/memory/unified_pool.hpp"
#include "support/property.hpp"

namespace unified_pool_test {

namespace {

namespace mem = ruvllm::memory;
namespace ev = ruvllm::eviction;
using ruvllm::errc;

constexpr std::size_t page = 4096;

mem::pool_options options(std::size_t pages, std::uint32_t tenants = 1) {
  mem::pool_options o;
  o.page_bytes = page;
  o.budget_bytes = pages * page;
  o.tenants = tenants;
  o.max_allocations = 256;
  return o;
}

// What the hooks saw, kept outside the pool so the test reads it directly.
struct hook_log {
  std::vector<mem::allocation_info> evicted, persisted, demoted;
  std::vector<std::uint8_t> persisted_first_byte;
  bool fail_persist = false;
};

struct recording_hooks {
  hook_log* log = nullptr;
  ruvllm::result<void> persist(const mem::allocation_info& i, std::span<const std::byte> b) {
    if (log->fail_persist) return ruvllm::make_error(errc::io_error, "store is full");
    log->persisted.push_back(i);
    log->persisted_first_byte.push_back(static_cast<std::uint8_t>(b[0]));
    return {};
  }
  ruvllm::result<void> demote(const mem::allocation_info& i, std::span<const std::byte>) {
    log->demoted.push_back(i);
    return {};
  }
  void evicted(const mem::allocation_info& i) noexcept { log->evicted.push_back(i); }
};

template <class Policy>
using pool_t = mem::unified_pool<Policy, recording_hooks>;

mem::alloc_request req(mem::pressure_policy p, bool pinned = false, mem::tenant_id t = 0,
                       mem::alloc_kind k = mem::alloc_kind::scratch) {
  mem::alloc_request r;
  r.policy = p;
  r.pinned = pinned;
  r.tenant = t;
  r.kind = k;
  return r;
}

}  // namespace

TEST_CASE("unified_pool rounds to pages and tracks kinds and tenants", "[memory][pool]") {
  hook_log log;
  auto pool = pool_t<ev::lru>::create(options(16, 3), recording_hooks{&log}).value();
  const auto a =
      pool.allocate(5000, req(mem::pressure_policy::reject, false, 1, mem::alloc_kind::lora_adapter)).value();
  const auto b = pool.allocate(1, req(mem::pressure_policy::reject, false, 2, mem::alloc_kind::kv_pages)).value();
  CHECK(pool.used_bytes() == 3 * page);
  CHECK(pool.kind_bytes(mem::alloc_kind::lora_adapter) == 2 * page);
  CHECK(pool.kind_bytes(mem::alloc_kind::kv_pages) == page);
  CHECK(pool.tenant_bytes(1) == 2 * page);
  CHECK(pool.tenant_bytes(2) == page);
  CHECK(pool.tenant_bytes(0) == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(pool.data(a)) % page == 0);
  CHECK(pool.data(a)[4999] == std::byte{0});  // zero-filled
  const auto ia = pool.info(a).value();
  CHECK(ia.bytes == 5000);
  CHECK(ia.reserved == 2 * page);
  CHECK(ia.tenant == 1);
  CHECK(pool.stats().live_allocations == 2);
  CHECK(pool.free(a).has_value());
  CHECK(pool.free(b).has_value());
  CHECK(pool.used_bytes() == 0);
  CHECK(pool.peak_bytes() == 3 * page);
  CHECK(pool.stats().live_allocations == 0);
}

TEST_CASE("unified_pool rejects bad input with errors, not UB", "[memory][pool]") {
  CHECK(mem::unified_pool<ev::lru>::create(options(0)).error().code() == errc::invalid_argument);
  auto o = options(4);
  o.page_bytes = 5000;
  CHECK(mem::unified_pool<ev::lru>::create(o).error().code() == errc::invalid_argument);
  o = options(4);
  o.watermarks = {70, 85};
  CHECK(mem::unified_pool<ev::hysteresis<ev::lru>>::create(o).error().code() == errc::invalid_argument);

  auto pool = mem::unified_pool<ev::lru>::create(options(4, 2)).value();
  CHECK(pool.allocate(0, {}).error().code() == errc::invalid_argument);
  CHECK(pool.allocate(10, req(mem::pressure_policy::evict, false, 2)).error().code() == errc::invalid_argument);
  const auto a = pool.allocate(10, {}).value();
  REQUIRE(pool.free(a).has_value());
  // Stale and forged handles.
  CHECK(pool.free(a).error().code() == errc::not_found);
  CHECK(pool.touch(a).error().code() == errc::not_found);
  CHECK(pool.data(a) == nullptr);
  CHECK(pool.info(mem::allocation{1000, 1}).error().code() == errc::not_found);
  CHECK(pool.free(mem::allocation{}).error().code() == errc::not_found);
  const auto b = pool.allocate(10, {}).value();
  CHECK(pool.unpin(b).error().code() == errc::invalid_argument);
  CHECK(pool.set_quota(5, 0).error().code() == errc::invalid_argument);
}

TEST_CASE("reject: an allocation over the budget fails, names size and budget, changes nothing", "[memory][pool]") {
  hook_log log;
  auto pool = pool_t<ev::lru>::create(options(8), recording_hooks{&log}).value();
  std::vector<mem::allocation> held;
  for (int i = 0; i < 3; ++i) held.push_back(pool.allocate(2 * page, req(mem::pressure_policy::evict)).value());
  const auto before = pool.stats();
  const auto r = pool.allocate(3 * page, req(mem::pressure_policy::reject));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code() == errc::budget_exceeded);
  CHECK(r.error().message().find(std::to_string(3 * page)) != std::string::npos);
  CHECK(r.error().message().find(std::to_string(8 * page)) != std::string::npos);
  CHECK(pool.used_bytes() == before.used_bytes);
  CHECK(pool.stats().live_allocations == 3);
  CHECK(pool.stats().evictions == 0);
  CHECK(pool.stats().rejections == before.rejections + 1);
  CHECK(log.evicted.empty());
  for (auto h : held) CHECK(pool.data(h) != nullptr);
  // Larger than the whole budget: refused under every policy.
  CHECK(pool.allocate(9 * page, req(mem::pressure_policy::evict)).error().code() == errc::budget_exceeded);
  // More than eviction could free (pinned memory is not evictable): nothing is evicted.
  REQUIRE(pool.pin(held[0]).has_value());
  REQUIRE(pool.pin(held[1]).has_value());
  CHECK(pool.allocate(5 * page, req(mem::pressure_policy::evict)).error().code() == errc::budget_exceeded);
  CHECK(log.evicted.empty());
  CHECK(pool.stats().live_allocations == 3);
}

TEST_CASE("evict, spill and quantize free the least recently used victims through their hooks", "[memory][pool]") {
  hook_log log;
  auto pool = pool_t<ev::lru>::create(options(4), recording_hooks{&log}).value();
  std::vector<mem::allocation> h;
  for (int i = 0; i < 4; ++i) {
    h.push_back(pool.allocate(page, req(mem::pressure_policy::evict)).value());
    pool.data(h.back())[0] = std::byte{static_cast<unsigned char>(10 + i)};
  }
  REQUIRE(pool.touch(h[0]).has_value());  // order now 1, 2, 3, 0
  REQUIRE(pool.pin(h[1]).has_value());    // 1 is not evictable

  const auto a = pool.allocate(page, req(mem::pressure_policy::evict)).value();
  REQUIRE(log.evicted.size() == 1);
  CHECK(log.evicted[0].handle == h[2]);
  CHECK(log.persisted.empty());
  CHECK(pool.data(h[2]) == nullptr);

  const auto b = pool.allocate(page, req(mem::pressure_policy::spill)).value();
  REQUIRE(log.persisted.size() == 1);
  CHECK(log.persisted[0].handle == h[3]);
  CHECK(log.persisted_first_byte[0] == 13);  // the hook saw the victim's bytes
  CHECK(log.evicted.size() == 2);

  const auto c = pool.allocate(page, req(mem::pressure_policy::quantize)).value();
  REQUIRE(log.demoted.size() == 1);
  CHECK(log.demoted[0].handle == h[0]);
  CHECK(pool.stats().spills == 1);
  CHECK(pool.stats().demotions == 1);
  CHECK(pool.stats().evictions == 3);
  CHECK(pool.used_bytes() == 4 * page);

  // A failing persist hook stops the eviction and fails the request.
  log.fail_persist = true;
  const auto d = pool.allocate(page, req(mem::pressure_policy::spill));
  REQUIRE_FALSE(d.has_value());
  CHECK(d.error().code() == errc::io_error);
  CHECK(pool.data(a) != nullptr);
  CHECK(pool.used_bytes() == 4 * page);
  static_cast<void>(b);
  static_cast<void>(c);
}

TEST_CASE("tenant quotas refuse a tenant past its share under every policy", "[memory][pool]") {
  hook_log log;
  auto pool = pool_t<ev::lru>::create(options(8, 2), recording_hooks{&log}).value();
  REQUIRE(pool.set_quota(1, 2 * page).has_value());
  const auto a = pool.allocate(page, req(mem::pressure_policy::evict, false, 1)).value();
  const auto b = pool.allocate(page, req(mem::pressure_policy::evict, false, 1)).value();
  const auto c = pool.allocate(page, req(mem::pressure_policy::evict, false, 1));
  REQUIRE_FALSE(c.has_value());
  CHECK(c.error().code() == errc::budget_exceeded);
  CHECK(c.error().message().find("quota") != std::string::npos);
  CHECK(log.evicted.empty());
  CHECK(pool.allocate(4 * page, req(mem::pressure_policy::reject, false, 0)).has_value());
  REQUIRE(pool.free(a).has_value());
  CHECK(pool.allocate(page, req(mem::pressure_policy::evict, false, 1)).has_value());
  static_cast<void>(b);
}

TEST_CASE("hysteresis evicts in one batch from 85% down to 70% and reports pressure", "[memory][pool]") {
  hook_log log;
  auto pool = pool_t<ev::hysteresis<ev::lru>>::create(options(20), recording_hooks{&log}).value();
  CHECK(pool.pressure() == mem::pressure_state::normal);
  std::vector<mem::allocation> h;
  for (int i = 0; i < 16; ++i) h.push_back(pool.allocate(page, req(mem::pressure_policy::evict)).value());
  CHECK(log.evicted.empty());
  CHECK(pool.pressure() == mem::pressure_state::elevated);  // 80%: past stop, below start
  // The 17th page would reach 85%: evict the oldest down to 70% including it.
  h.push_back(pool.allocate(page, req(mem::pressure_policy::evict)).value());
  CHECK(pool.used_bytes() == 14 * page);
  REQUIRE(log.evicted.size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(log.evicted[static_cast<std::size_t>(i)].handle == h[static_cast<std::size_t>(i)]);
  CHECK(pool.pressure() == mem::pressure_state::elevated);
  // Reject never evicts, even above the start watermark.
  for (int i = 0; i < 6; ++i) REQUIRE(pool.allocate(page, req(mem::pressure_policy::reject)).has_value());
  CHECK(pool.used_bytes() == 20 * page);
  CHECK(pool.pressure() == mem::pressure_state::critical);
  CHECK(log.evicted.size() == 3);
  REQUIRE(pool.trim(10 * page).has_value());
  CHECK(pool.used_bytes() == 10 * page);
  CHECK(pool.pressure() == mem::pressure_state::normal);
}

TEST_CASE("lfu pool evicts the least used allocation", "[memory][pool]") {
  hook_log log;
  auto pool = pool_t<ev::lfu>::create(options(3), recording_hooks{&log}).value();
  const auto a = pool.allocate(page, {}).value();
  const auto b = pool.allocate(page, {}).value();
  const auto c = pool.allocate(page, {}).value();
  for (int i = 0; i < 3; ++i) REQUIRE(pool.touch(a).has_value());
  REQUIRE(pool.touch(c).has_value());
  REQUIRE(pool.allocate(page, {}).has_value());
  REQUIRE(log.evicted.size() == 1);
  CHECK(log.evicted[0].handle == b);
}

namespace {

// The model: every live allocation with its tags, fill byte and last use.
struct model_entry {
  mem::allocation_info info;
  std::uint8_t fill = 0;
  std::uint64_t last_use = 0;
  bool pinned = false;
};

template <class Policy>
void run_pool_property(std::uint64_t stream, std::size_t trials, std::size_t steps) {
  ruvllm::test::check_property(stream, trials, [&](ruvllm::test::rng& gen, std::size_t) {
    hook_log log;
    const std::size_t pages = gen.uniform_index(4, 40);
    auto pool = pool_t<Policy>::create(options(pages, 3), recording_hooks{&log}).value();
    std::map<std::uint64_t, model_entry> model;  // key: slot << 32 | generation
    const auto key = [](mem::allocation a) { return (std::uint64_t{a.slot} << 32) | a.generation; };
    std::uint64_t clock = 0;
    std::size_t seen_evicted = 0;
    for (std::size_t step = 0; step < steps; ++step) {
      const std::size_t op = gen.uniform_index(0, 9);
      if (op <= 4) {  // allocate
        const std::size_t bytes = gen.uniform_index(1, 3 * page);
        const auto policy = static_cast<mem::pressure_policy>(gen.uniform_index(0, 3));
        const bool pinned = gen.chance(0.15);
        const auto tenant = static_cast<mem::tenant_id>(gen.uniform_index(0, 2));
        const auto kind = static_cast<mem::alloc_kind>(gen.uniform_index(0, 3));
        const std::size_t used_before = pool.used_bytes();
        const auto r = pool.allocate(bytes, req(policy, pinned, tenant, kind));
        const std::size_t reserved = (bytes + page - 1) / page * page;
        if (r.has_value()) {
          model_entry e;
          e.info = pool.info(*r).value();
          REQUIRE(e.info.bytes == bytes);
          REQUIRE(e.info.reserved == reserved);
          e.fill = static_cast<std::uint8_t>(gen.next_u32() | 1u);
          e.last_use = ++clock;
          e.pinned = pinned;
          std::memset(pool.data(*r), e.fill, bytes);
          model[key(*r)] = e;
        } else {
          REQUIRE(r.error().code() == errc::budget_exceeded);
          if (policy == mem::pressure_policy::reject) {
            REQUIRE(used_before + reserved > pool.budget_bytes());
            REQUIRE(pool.used_bytes() == used_before);
          }
        }
      } else if (op <= 6 && !model.empty()) {  // free
        auto it = std::next(model.begin(), static_cast<std::ptrdiff_t>(gen.uniform_index(0, model.size() - 1)));
        REQUIRE(pool.free(it->second.info.handle).has_value());
        model.erase(it);
      } else if (op == 7 && !model.empty()) {  // touch
        auto it = std::next(model.begin(), static_cast<std::ptrdiff_t>(gen.uniform_index(0, model.size() - 1)));
        REQUIRE(pool.touch(it->second.info.handle).has_value());
        if (!it->second.pinned) it->second.last_use = ++clock;
      } else if (op == 8 && !model.empty()) {  // pin / unpin
        auto it = std::next(model.begin(), static_cast<std::ptrdiff_t>(gen.uniform_index(0, model.size() - 1)));
        if (it->second.pinned) {
          REQUIRE(pool.unpin(it->second.info.handle).has_value());
          it->second.last_use = ++clock;
        } else {
          REQUIRE(pool.pin(it->second.info.handle).has_value());
        }
        it->second.pinned = !it->second.pinned;
      } else if (op == 9) {  // trim
        REQUIRE(pool.trim(pool.budget_bytes() / 2).has_value());
      }
      // Victims leave the model; each was evictable, and under lru the
      // least recently used of the evictable ones at its time.
      for (; seen_evicted < log.evicted.size(); ++seen_evicted) {
        const auto& v = log.evicted[seen_evicted];
        auto it = model.find(key(v.handle));
        REQUIRE(it != model.end());
        REQUIRE_FALSE(it->second.pinned);
        if constexpr (std::is_same_v<Policy, ev::lru>) {
          for (const auto& [k, e] : model)
            if (!e.pinned) REQUIRE(e.last_use >= it->second.last_use);
        }
        model.erase(it);
      }
      // Invariants after every step.
      REQUIRE(pool.used_bytes() <= pool.budget_bytes());
      std::size_t sum = 0, tenant_sum[3] = {}, kind_sum[4] = {};
      for (const auto& [k, e] : model) {
        sum += e.info.reserved;
        tenant_sum[e.info.tenant] += e.info.reserved;
        kind_sum[static_cast<std::size_t>(e.info.kind)] += e.info.reserved;
        const std::byte* d = pool.data(e.info.handle);
        REQUIRE(d != nullptr);
        REQUIRE(d[0] == std::byte{e.fill});
        REQUIRE(d[e.info.bytes - 1] == std::byte{e.fill});
      }
      REQUIRE(pool.used_bytes() == sum);
      for (mem::tenant_id t = 0; t < 3; ++t) REQUIRE(pool.tenant_bytes(t) == tenant_sum[t]);
      for (std::size_t k = 0; k < 4; ++k) REQUIRE(pool.kind_bytes(static_cast<mem::alloc_kind>(k)) == kind_sum[k]);
      REQUIRE(pool.stats().live_allocations == model.size());
    }
    for (const auto& [k, e] : model) REQUIRE(pool.free(e.info.handle).has_value());
    REQUIRE(pool.used_bytes() == 0);
  });
}

}  // namespace

TEST_CASE("unified_pool property: random alloc/free/touch/pin/trim against a model", "[memory][pool][property]") {
  run_pool_property<ev::lru>(101, 12, 400);
  run_pool_property<ev::lfu>(102, 6, 400);
  run_pool_property<ev::hysteresis<ev::lru>>(103, 6, 400);
}

TEST_CASE("unified_pool property, long", "[memory][pool][property][slow]") {
  run_pool_property<ev::lru>(111, 40, 3000);
  run_pool_property<ev::hysteresis<ev::lfu>>(112, 40, 3000);
}

}  // namespace unified_pool_test
