// kv::block_allocator: reference counts, the free list, copy-on-write copies
// and the slab addressing, against a plain model of counts and contents;
// the region drawn from a unified_pool.

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ruvllm/kv/block_allocator.hpp"
#include "ruvllm/memory/unified_pool.hpp"
#include "support/property.hpp"

namespace block_allocator_test {

namespace {

namespace kv = ruvllm::kv;
namespace p = ruvllm::precision;
namespace mem = ruvllm::memory;

kv::block_layout small_layout() { return kv::block_layout::of<p::f16, p::q8_0, 16>(2, 2, 32).value(); }

}  // namespace

TEST_CASE("block_layout sizes follow the page-head layouts", "[kv][block]") {
  const kv::block_layout l = small_layout();
  CHECK(l.k_page_bytes() == 2 * 16 * 32 * 2);
  CHECK(l.v_page_bytes() == 2 * 16 * 34);
  CHECK(l.block_bytes() == 2 * (l.k_page_bytes() + l.v_page_bytes()));
  CHECK_FALSE(kv::block_layout::of<p::f16, p::f16, 16>(0, 2, 32).has_value());
  CHECK_FALSE(kv::block_layout::of<p::f16, p::f16, 16>(1, 2, 24).has_value());
  CHECK_FALSE(kv::block_layout::of<p::q8_0, p::f16, 16>(1, 2, 16).has_value());
}

TEST_CASE("block_allocator hands out every block once and recycles freed ones", "[kv][block]") {
  auto a = kv::block_allocator::create(small_layout(), 8).value();
  CHECK(a.capacity_blocks() == 8);
  CHECK(a.blocks_in_use() == 0);
  std::vector<kv::block_allocator::block_id> ids;
  for (int i = 0; i < 8; ++i) {
    auto id = a.allocate();
    REQUIRE(id.has_value());
    CHECK(a.ref_count(*id) == 1);
    ids.push_back(*id);
  }
  CHECK(ids == std::vector<kv::block_allocator::block_id>{0, 1, 2, 3, 4, 5, 6, 7});
  const auto full = a.allocate();
  REQUIRE_FALSE(full.has_value());
  CHECK(full.error().code() == ruvllm::errc::out_of_memory);
  CHECK(full.error().message().find("8") != std::string::npos);
  a.retain(3);
  CHECK(a.ref_count(3) == 2);
  a.release(3);
  CHECK(a.ref_count(3) == 1);
  a.release(3);
  CHECK(a.ref_count(3) == 0);
  CHECK(a.blocks_in_use() == 7);
  CHECK(a.allocate().value() == 3);
  for (auto id : ids) a.release(id);
  CHECK(a.blocks_in_use() == 0);
}

TEST_CASE("block_allocator slabs match the paged view addressing", "[kv][block]") {
  const kv::block_layout l = small_layout();
  auto a = kv::block_allocator::create(l, 5).value();
  for (std::size_t layer = 0; layer < l.layers; ++layer) {
    CHECK(reinterpret_cast<std::uintptr_t>(a.k_slab(layer)) % 64 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(a.v_slab(layer)) % 64 == 0);
    CHECK(a.k_block(layer, 3) == a.k_slab(layer) + 3 * l.k_page_bytes());
    CHECK(a.v_block(layer, 4) == a.v_slab(layer) + 4 * l.v_page_bytes());
    CHECK(a.v_slab(layer) >= a.k_slab(layer) + 5 * l.k_page_bytes());
    if (layer + 1 < l.layers) CHECK(a.k_slab(layer + 1) >= a.v_slab(layer) + 5 * l.v_page_bytes());
  }
}

TEST_CASE("copy_block copies the first tokens of every layer and head", "[kv][block]") {
  const kv::block_layout l = small_layout();
  auto a = kv::block_allocator::create(l, 4).value();
  const auto src = a.allocate().value();
  for (std::size_t layer = 0; layer < l.layers; ++layer) {
    for (std::size_t b = 0; b < l.k_page_bytes(); ++b)
      a.k_block(layer, src)[b] = static_cast<std::byte>((b * 7 + layer) & 0xFF);
    for (std::size_t b = 0; b < l.v_page_bytes(); ++b)
      a.v_block(layer, src)[b] = static_cast<std::byte>((b * 13 + layer) & 0xFF);
  }
  const std::size_t tokens = 5;
  const auto dst = a.copy_block(src, tokens).value();
  CHECK(dst != src);
  CHECK(a.ref_count(dst) == 1);
  CHECK(a.ref_count(src) == 1);
  const std::size_t k_tok = 32 * 2, v_tok = 34;
  for (std::size_t layer = 0; layer < l.layers; ++layer)
    for (std::size_t h = 0; h < l.kv_heads; ++h) {
      CHECK(std::memcmp(a.k_block(layer, dst) + h * l.k_head_bytes(), a.k_block(layer, src) + h * l.k_head_bytes(),
                        tokens * k_tok) == 0);
      CHECK(std::memcmp(a.v_block(layer, dst) + h * l.v_head_bytes(), a.v_block(layer, src) + h * l.v_head_bytes(),
                        tokens * v_tok) == 0);
    }
  CHECK(a.copy_block(src, 17).error().code() == ruvllm::errc::out_of_range);
  CHECK(a.copy_block(3, 1).error().code() == ruvllm::errc::out_of_range);  // free block
  a.release(src);
  a.release(dst);
  CHECK(a.blocks_in_use() == 0);
}

TEST_CASE("a pool-backed block_allocator is charged to the pool and refused past its budget", "[kv][block]") {
  namespace ev = ruvllm::eviction;
  mem::pool_options o;
  o.budget_bytes = 2 * mem::huge_page_bytes;
  o.tenants = 2;
  auto pool = mem::unified_pool<ev::lru>::create(o).value();
  const kv::block_layout l = small_layout();
  const std::size_t fits = mem::huge_page_bytes / l.block_bytes() / 2;  // well within one page
  {
    auto a = kv::block_allocator::create(pool, l, fits, 1).value();
    CHECK(pool.used_bytes() == mem::huge_page_bytes);
    CHECK(pool.kind_bytes(mem::alloc_kind::kv_pages) == mem::huge_page_bytes);
    CHECK(pool.tenant_bytes(1) == mem::huge_page_bytes);
    // The region is pinned: a later request cannot evict it.
    mem::alloc_request big;
    big.policy = mem::pressure_policy::evict;
    const auto r = pool.allocate(2 * mem::huge_page_bytes, big);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code() == ruvllm::errc::budget_exceeded);
    const auto id = a.allocate().value();
    a.k_block(0, id)[0] = std::byte{1};  // the memory is usable
    a.release(id);
    // Over the budget: an error naming it, and nothing charged.
    const auto too_big = kv::block_allocator::create(pool, l, 4 * mem::huge_page_bytes / l.block_bytes());
    REQUIRE_FALSE(too_big.has_value());
    CHECK(too_big.error().code() == ruvllm::errc::budget_exceeded);
    CHECK(too_big.error().message().find(std::to_string(2 * mem::huge_page_bytes)) != std::string::npos);
    CHECK(pool.used_bytes() == mem::huge_page_bytes);
  }
  CHECK(pool.used_bytes() == 0);  // the allocator returned its region
  CHECK(kv::block_allocator::create(l, 0).error().code() == ruvllm::errc::invalid_argument);
}

TEST_CASE("block_allocator property: random allocate/retain/release/copy against a count model",
          "[kv][block][property]") {
  ruvllm::test::check_property(920, 20, [](ruvllm::test::rng& gen, std::size_t) {
    const kv::block_layout l = small_layout();
    const std::size_t capacity = gen.uniform_index(1, 24);
    auto a = kv::block_allocator::create(l, capacity).value();
    std::map<std::uint32_t, std::uint32_t> refs;  // live block -> references
    std::map<std::uint32_t, std::uint8_t> stamp;  // live block -> first byte of each page-head
    const auto write_stamp = [&](std::uint32_t id, std::uint8_t v) {
      for (std::size_t layer = 0; layer < l.layers; ++layer)
        for (std::size_t h = 0; h < l.kv_heads; ++h) {
          a.k_block(layer, id)[h * l.k_head_bytes()] = std::byte{v};
          a.v_block(layer, id)[h * l.v_head_bytes()] = std::byte{v};
        }
      stamp[id] = v;
    };
    for (int step = 0; step < 500; ++step) {
      const std::size_t op = gen.uniform_index(0, 9);
      const auto pick = [&] {
        return std::next(refs.begin(), static_cast<std::ptrdiff_t>(gen.uniform_index(0, refs.size() - 1)));
      };
      if (op <= 3) {
        const auto id = a.allocate();
        if (refs.size() == capacity) {
          REQUIRE_FALSE(id.has_value());
        } else {
          REQUIRE(id.has_value());
          REQUIRE(refs.count(*id) == 0);  // never a block still referenced
          refs[*id] = 1;
          write_stamp(*id, static_cast<std::uint8_t>(gen.next_u32()));
        }
      } else if (op <= 5 && !refs.empty()) {
        const auto it = pick();
        a.retain(it->first);
        ++it->second;
      } else if (op <= 8 && !refs.empty()) {
        const auto it = pick();
        a.release(it->first);
        if (--it->second == 0) {
          stamp.erase(it->first);
          refs.erase(it);
        }
      } else if (!refs.empty()) {
        const auto src = pick()->first;
        const auto copy = a.copy_block(src, gen.uniform_index(1, l.tokens_per_block));
        if (refs.size() == capacity) {
          REQUIRE_FALSE(copy.has_value());
        } else {
          REQUIRE(copy.has_value());
          refs[*copy] = 1;
          stamp[*copy] = stamp[src];
        }
      }
      REQUIRE(a.blocks_in_use() == refs.size());
      for (std::uint32_t b = 0; b < capacity; ++b) {
        const auto it = refs.find(b);
        REQUIRE(a.ref_count(b) == (it == refs.end() ? 0u : it->second));
      }
      for (const auto& [id, v] : stamp)
        for (std::size_t layer = 0; layer < l.layers; ++layer)
          for (std::size_t h = 0; h < l.kv_heads; ++h) {
            REQUIRE(a.k_block(layer, id)[h * l.k_head_bytes()] == std::byte{v});
            REQUIRE(a.v_block(layer, id)[h * l.v_head_bytes()] == std::byte{v});
          }
    }
    for (const auto& [id, n] : refs)
      for (std::uint32_t i = 0; i < n; ++i) a.release(id);
    REQUIRE(a.blocks_in_use() == 0);
  });
}

}  // namespace block_allocator_test
