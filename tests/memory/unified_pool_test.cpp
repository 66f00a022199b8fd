// memory::unified_pool: budget, tags, quotas, eviction policies and hooks.

#include <catch2/catch.hpp>

#include "ruvllm/memory/unified_pool.hpp"

namespace mem = ruvllm::memory;
namespace ev = ruvllm::eviction;

TEST_CASE("unified_pool basic allocate and free", "[memory][pool]") {
  mem::pool_options o;
  o.page_bytes = 4096;
  o.budget_bytes = 16 * 4096;
  auto pool = mem::unified_pool<ev::lru>::create(o).value();
  const auto a = pool.allocate(5000, {}).value();
  CHECK(pool.used_bytes() == 8192);
  CHECK(pool.data(a) != nullptr);
  CHECK(pool.free(a).has_value());
  CHECK(pool.used_bytes() == 0);
}
