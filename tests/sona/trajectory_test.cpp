// The trajectory ring: FIFO order and contents against a queue model, full
// and empty edges, and concurrent producers/consumer (run under TSan).

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "ruvllm/sona/trajectory.hpp"
#include "support/property.hpp"

namespace trajectory_test {

namespace {

namespace sona = ruvllm::sona;

struct owned {
  std::vector<float> q, r, f;
  sona::trajectory_view view(std::uint64_t id) const {
    sona::trajectory_view v;
    v.request_id = id;
    v.query = q;
    v.response = r;
    v.features = f;
    v.model = static_cast<std::uint32_t>(id % 4);
    v.quality = static_cast<float>(id % 100) / 100.0f;
    v.latency_ms = static_cast<float>(id);
    v.kv.total_tokens = static_cast<std::uint32_t>(id);
    return v;
  }
};

// Payload derived from the id, so a consumer can check every float.
owned make(std::uint64_t id, std::size_t qd, std::size_t rd, std::size_t fd) {
  owned o{std::vector<float>(qd), std::vector<float>(rd), std::vector<float>(fd)};
  for (std::size_t i = 0; i < qd; ++i) o.q[i] = static_cast<float>(id * 3 + i);
  for (std::size_t i = 0; i < rd; ++i) o.r[i] = -static_cast<float>(id + i);
  for (std::size_t i = 0; i < fd; ++i) o.f[i] = static_cast<float>(id % 7 + i);
  return o;
}

bool matches(const sona::trajectory_view& v, std::size_t qd, std::size_t rd, std::size_t fd) {
  const auto o = make(v.request_id, qd, rd, fd);
  bool ok = v.model == v.request_id % 4 && v.latency_ms == static_cast<float>(v.request_id) &&
            v.kv.total_tokens == static_cast<std::uint32_t>(v.request_id);
  for (std::size_t i = 0; i < qd; ++i) ok = ok && v.query[i] == o.q[i];
  for (std::size_t i = 0; i < rd; ++i) ok = ok && v.response[i] == o.r[i];
  for (std::size_t i = 0; i < fd; ++i) ok = ok && v.features[i] == o.f[i];
  return ok;
}

}  // namespace

TEST_CASE("trajectory ring behaves as a bounded FIFO", "[sona][trajectory]") {
  CHECK_FALSE(sona::trajectory_ring::create(6, 4, 4, 2));
  CHECK_FALSE(sona::trajectory_ring::create(1, 4, 4, 2));
  ruvllm::test::check_property(401, 20, [](ruvllm::test::rng& gen, std::size_t) {
    auto ring = sona::trajectory_ring::create(8, 5, 3, 2).value();
    std::deque<std::uint64_t> model;
    std::uint64_t next = 0, drops = 0;
    for (int op = 0; op < 500; ++op) {
      if (gen.chance(0.55)) {
        const auto o = make(next, 5, 3, 2);
        const bool pushed = ring.try_push(o.view(next));
        REQUIRE(pushed == (model.size() < 8));
        if (pushed)
          model.push_back(next);
        else
          ++drops;
        ++next;
      } else {
        const std::size_t want = gen.uniform_index(1, 3);
        std::vector<std::uint64_t> got;
        bool ok = true;
        ring.drain(
            [&](const sona::trajectory_view& v) {
              got.push_back(v.request_id);
              ok = ok && matches(v, 5, 3, 2);
            },
            want);
        REQUIRE(ok);
        REQUIRE(got.size() == std::min(want, model.size()));
        for (auto id : got) {
          REQUIRE(id == model.front());
          model.pop_front();
        }
      }
      REQUIRE(ring.size_approx() == model.size());
      REQUIRE(ring.dropped() == drops);
    }
  });
}

TEST_CASE("trajectory ring: one producer and one consumer thread", "[sona][trajectory][concurrency]") {
  constexpr std::size_t qd = 16, rd = 8, fd = 4;
  constexpr std::uint64_t n = 20000;
  auto ring = sona::trajectory_ring::create(64, qd, rd, fd).value();
  std::atomic<bool> done{false};
  std::thread producer([&] {
    for (std::uint64_t id = 0; id < n; ++id) {
      const auto o = make(id, qd, rd, fd);
      while (!ring.try_push(o.view(id))) std::this_thread::yield();
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<std::uint64_t> order;
  std::size_t bad = 0;
  for (;;) {
    const bool finished = done.load(std::memory_order_acquire);
    const std::size_t got = ring.drain([&](const sona::trajectory_view& v) {
      order.push_back(v.request_id);
      if (!matches(v, qd, rd, fd)) ++bad;
    });
    if (finished && got == 0) break;
    if (got == 0) std::this_thread::yield();
  }
  producer.join();
  CHECK(bad == 0);
  REQUIRE(order.size() == n);
  for (std::uint64_t i = 0; i < n; ++i) REQUIRE(order[i] == i);
}

TEST_CASE("trajectory ring: two producers, one consumer, per-producer order kept", "[sona][trajectory][concurrency]") {
  constexpr std::uint64_t per = 10000;
  auto ring = sona::trajectory_ring::create(32, 4, 2, 1).value();
  std::atomic<int> finished{0};
  const auto produce = [&](std::uint64_t base) {
    for (std::uint64_t k = 0; k < per; ++k) {
      const std::uint64_t id = base + k;
      const auto o = make(id, 4, 2, 1);
      while (!ring.try_push(o.view(id))) std::this_thread::yield();
    }
    finished.fetch_add(1, std::memory_order_release);
  };
  std::thread a(produce, 0), b(produce, 1'000'000);
  std::vector<std::uint64_t> seen_a, seen_b;
  std::size_t bad = 0;
  for (;;) {
    const bool all = finished.load(std::memory_order_acquire) == 2;
    const std::size_t got = ring.drain([&](const sona::trajectory_view& v) {
      (v.request_id < 1'000'000 ? seen_a : seen_b).push_back(v.request_id);
      if (!matches(v, 4, 2, 1)) ++bad;
    });
    if (all && got == 0) break;
    if (got == 0) std::this_thread::yield();
  }
  a.join();
  b.join();
  CHECK(bad == 0);
  REQUIRE(seen_a.size() == per);
  REQUIRE(seen_b.size() == per);
  for (std::uint64_t k = 0; k < per; ++k) {
    REQUIRE(seen_a[k] == k);
    REQUIRE(seen_b[k] == 1'000'000 + k);
  }
}

}  // namespace trajectory_test
