// Eviction order of lru, lfu and hysteresis, against a simple model.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "ruvllm/core/eviction.hpp"
#include "support/property.hpp"

namespace eviction_test {

namespace {

namespace ev = ruvllm::eviction;

template <class Policy>
struct item : Policy::hook {
  int id = 0;
};

template <class Policy>
std::vector<int> drain(typename Policy::template queue<item<Policy>>& q) {
  std::vector<int> order;
  while (auto* victim = q.pick_victim()) {
    order.push_back(victim->id);
    q.erase(*victim);
  }
  return order;
}

}  // namespace

TEST_CASE("lru evicts least recently used first", "[core][eviction]") {
  std::vector<item<ev::lru>> items(5);
  ev::lru::queue<item<ev::lru>> q;
  for (int i = 0; i < 5; ++i) {
    items[i].id = i;
    q.insert(items[i]);
  }
  q.touch(items[0]);
  q.touch(items[2]);
  CHECK(q.size() == 5);
  CHECK(drain<ev::lru>(q) == std::vector<int>{1, 3, 4, 0, 2});
  CHECK(q.empty());
  CHECK(q.pick_victim() == nullptr);
}

TEST_CASE("lfu evicts least frequently used, oldest first among equals", "[core][eviction]") {
  std::vector<item<ev::lfu>> items(5);
  ev::lfu::queue<item<ev::lfu>> q;
  for (int i = 0; i < 5; ++i) {
    items[i].id = i;
    q.insert(items[i]);
  }
  q.touch(items[3]);
  q.touch(items[3]);
  q.touch(items[1]);
  q.touch(items[4]);
  CHECK(items[3].use_count() == 3);
  // uses: 0->1, 1->2, 2->1, 3->3, 4->2; ties broken by older last use.
  CHECK(drain<ev::lfu>(q) == std::vector<int>{0, 2, 1, 4, 3});
}

TEST_CASE("erase removes an item from the middle", "[core][eviction]") {
  std::vector<item<ev::lru>> items(3);
  ev::lru::queue<item<ev::lru>> q;
  for (int i = 0; i < 3; ++i) {
    items[i].id = i;
    q.insert(items[i]);
  }
  q.erase(items[1]);
  CHECK_FALSE(q.contains(items[1]));
  CHECK(drain<ev::lru>(q) == std::vector<int>{0, 2});
}

TEST_CASE("hysteresis starts at the high watermark and stops at the low one", "[core][eviction]") {
  ev::hysteresis<ev::lru>::queue<item<ev::lru>> q;
  CHECK(q.current_watermarks().start_percent == 85);
  CHECK(q.current_watermarks().stop_percent == 70);
  CHECK_FALSE(q.should_evict(84, 100));
  CHECK(q.should_evict(85, 100));
  CHECK(q.should_evict(80, 100));  // still above the stop mark
  CHECK(q.should_evict(71, 100));
  CHECK_FALSE(q.should_evict(70, 100));
  CHECK_FALSE(q.should_evict(80, 100));  // below start: stays idle
  REQUIRE(q.set_watermarks({.start_percent = 50, .stop_percent = 10}));
  CHECK(q.should_evict(50, 100));
  CHECK(q.should_evict(11, 100));
  CHECK_FALSE(q.should_evict(10, 100));
  // Huge byte counts do not overflow the percentage arithmetic.
  const std::size_t huge = ~std::size_t{0};
  CHECK(q.should_evict(huge, huge));
}

TEST_CASE("hysteresis rejects invalid watermarks", "[core][eviction]") {
  ev::hysteresis<ev::lfu>::queue<item<ev::lfu>> q;
  CHECK_FALSE(q.set_watermarks({.start_percent = 101, .stop_percent = 50}));
  CHECK_FALSE(q.set_watermarks({.start_percent = 0, .stop_percent = 0}));
  auto r = q.set_watermarks({.start_percent = 60, .stop_percent = 60});
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == "hysteresis stop_percent 60 must be below start_percent 60");
  CHECK(q.current_watermarks().start_percent == 85);  // unchanged after a rejection
}

TEST_CASE("lru and lfu agree with a reference model on random operations", "[core][eviction]") {
  ruvllm::test::check_property(31, 50, [](ruvllm::test::rng& gen, std::size_t) {
    constexpr int n = 16;
    std::vector<item<ev::lru>> lru_items(n);
    std::vector<item<ev::lfu>> lfu_items(n);
    ev::lru::queue<item<ev::lru>> lru;
    ev::lfu::queue<item<ev::lfu>> lfu;
    // Model: per queued id, (uses, last use tick).
    std::map<int, std::pair<std::uint64_t, std::uint64_t>> model;
    std::uint64_t tick = 0;
    for (int i = 0; i < n; ++i) lru_items[i].id = lfu_items[i].id = i;
    for (int op = 0; op < 400; ++op) {
      const int id = static_cast<int>(gen.uniform_index(0, n - 1));
      const bool queued = model.count(id) != 0;
      switch (gen.uniform_index(0, 3)) {
        case 0:
          if (!queued) {
            lru.insert(lru_items[id]);
            lfu.insert(lfu_items[id]);
            model[id] = {1, ++tick};
          }
          break;
        case 1:
          if (queued) {
            lru.touch(lru_items[id]);
            lfu.touch(lfu_items[id]);
            model[id] = {model[id].first + 1, ++tick};
          }
          break;
        case 2:
          if (queued) {
            lru.erase(lru_items[id]);
            lfu.erase(lfu_items[id]);
            model.erase(id);
          }
          break;
        default:
          if (!model.empty()) {
            const auto lru_want = std::min_element(model.begin(), model.end(), [](auto& a, auto& b) {
                                    return a.second.second < b.second.second;
                                  })->first;
            const auto lfu_want = std::min_element(model.begin(), model.end(), [](auto& a, auto& b) {
                                    return a.second < b.second;
                                  })->first;
            REQUIRE(lru.pick_victim()->id == lru_want);
            REQUIRE(lfu.pick_victim()->id == lfu_want);
            lru.erase(lru_items[lru_want]);
            lfu.erase(lfu_items[lfu_want]);
            // Keep the two queues holding the same ids.
            if (lru_want != lfu_want) {
              lru.erase(lru_items[lfu_want]);
              lfu.erase(lfu_items[lru_want]);
              model.erase(lru_want);
            }
            model.erase(lfu_want);
          }
      }
      REQUIRE(lru.size() == model.size());
      REQUIRE(lfu.size() == model.size());
    }
    while (auto* v = lru.pick_victim()) lru.erase(*v);
    while (auto* v = lfu.pick_victim()) lfu.erase(*v);
  });
}

}  // namespace eviction_test
