// memory::arena: alignment, capacity, reset and rewind against a model of
// the bytes handed out.

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "ruvllm/memory/arena.hpp"
#include "support/property.hpp"

namespace arena_test {

namespace mem = ruvllm::memory;

TEST_CASE("arena allocations are aligned, disjoint and within capacity", "[memory][arena]") {
  ruvllm::test::check_property(71, 50, [](ruvllm::test::rng& gen, std::size_t) {
    alignas(64) static std::byte buffer[4096];
    mem::arena a(buffer);
    struct piece {
      std::byte* p;
      std::size_t n;
      std::uint8_t fill;
    };
    std::vector<piece> live;
    for (int step = 0; step < 200; ++step) {
      if (gen.chance(0.05)) {
        a.reset();
        live.clear();
        REQUIRE(a.used() == 0);
        continue;
      }
      const std::size_t n = gen.uniform_index(0, 300);
      const std::size_t align = std::size_t{1} << gen.uniform_index(0, 7);
      const std::size_t before = a.used();
      std::byte* p = a.allocate(n, align);
      if (p == nullptr) {
        REQUIRE(a.used() == before);  // a failed request changes nothing
        REQUIRE(before + n > a.capacity() - (align - 1));
        continue;
      }
      REQUIRE(reinterpret_cast<std::uintptr_t>(p) % align == 0);
      REQUIRE(p >= buffer);
      REQUIRE(p + n <= buffer + sizeof buffer);
      const auto fill = static_cast<std::uint8_t>(gen.next_u32());
      for (std::size_t i = 0; i < n; ++i) p[i] = std::byte{fill};
      live.push_back({p, n, fill});
      for (const piece& q : live)  // no later allocation overwrote an earlier one
        for (std::size_t i = 0; i < q.n; ++i) REQUIRE(q.p[i] == std::byte{q.fill});
      REQUIRE(a.used() <= a.capacity());
      REQUIRE(a.high_water() >= a.used());
    }
  });
}

TEST_CASE("arena spans, marks and errors", "[memory][arena]") {
  alignas(64) std::byte buffer[256];
  mem::arena a(buffer);
  auto f = a.allocate_span<float>(10);
  REQUIRE(f.size() == 10);
  CHECK(reinterpret_cast<std::uintptr_t>(f.data()) % alignof(float) == 0);
  const std::size_t m = a.mark();
  CHECK(a.allocate(100) != nullptr);
  a.rewind(m);
  CHECK(a.used() == m);
  CHECK(a.allocate_span<double>(1000).empty());
  const auto big = a.try_allocate(1000);
  REQUIRE_FALSE(big.has_value());
  CHECK(big.error().code() == ruvllm::errc::out_of_memory);
  CHECK(big.error().message().find("1000") != std::string::npos);
  CHECK(a.try_allocate(8, 3).error().code() == ruvllm::errc::invalid_argument);
  a.reset();
  CHECK(a.remaining() == 256);
  CHECK(a.high_water() >= 140);
}

}  // namespace arena_test
