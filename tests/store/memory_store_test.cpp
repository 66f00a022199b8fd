// memory_store and the roles over it: records, edges and embeddings survive
// reopening (log replay and checkpoints), role searches see only their own
// records, and a vector left without its record is dropped on open.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ruvllm/store/memory_store.hpp"
#include "ruvllm/store/roles.hpp"
#include "support/rng.hpp"

namespace {

namespace st = ruvllm::store;
using store_t = st::memory_store<st::metric::cosine, ruvllm::precision::f32>;

st::memory_store_options options() {
  st::memory_store_options o;
  o.vectors.index = st::hnsw_options{.dimension = 4, .m = 8, .ef_construction = 32};
  return o;
}

}  // namespace

TEST_CASE("memory_store roles persist across reopen and checkpoints", "[store][roles]") {
  const auto dir = (std::filesystem::temp_directory_path() / ("ruvllm_memory_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  ruvllm::test::rng gen(101);
  const auto id = [&] { return st::make_uuid_v4(gen.next_u64(), gen.next_u64()); };
  std::vector<st::uuid> policies, sessions, entries;
  for (int round = 0; round < 3; ++round) {
    auto store = store_t::open(dir, options());
    REQUIRE(store);
    st::policy_store<store_t> pol(*store);
    st::session_index<store_t> ses(*store);
    st::witness_log<store_t> wit(*store);
    REQUIRE(store->verify());
    // Everything written in earlier rounds is there.
    CHECK(ses.between(0, 1'000'000).size() == sessions.size());
    CHECK(wit.between(0, 1'000'000).size() == entries.size());
    for (auto& s : sessions) CHECK(wit.of_session(s).size() == 2);
    for (int i = 0; i < 10; ++i) {
      const float e[4] = {static_cast<float>(i), 1.0f, static_cast<float>(round), 0.5f};
      policies.push_back(pol.add(id(), round * 1000 + i, e, i / 10.0).value());
    }
    for (int i = 0; i < 4; ++i) {
      const float e[4] = {1.0f, static_cast<float>(i), 0.0f, static_cast<float>(round)};
      const st::uuid s = ses.add(id(), round * 1000 + 500 + i, e).value();
      sessions.push_back(s);
      REQUIRE(ses.used(s, policies.back(), 0.5f));
      for (int w = 0; w < 2; ++w)
        entries.push_back(
            wit.append(id(), round * 1000 + 600 + i, s, policies.back(), {{"tokens", std::int64_t{42}}}).value());
    }
    REQUIRE(store->adjust_weight(sessions.back(), policies.back(), st::edge_type::session_pattern, 0.25f));
    const float q[4] = {5.0f, 1.0f, static_cast<float>(round), 0.5f};
    auto best = pol.nearest(q, 3, 0.5).value();
    REQUIRE(best.size() == 3);
    for (auto& h : best) {
      CHECK(h.rec.number("quality").value() >= 0.5);
      CHECK(st::detail::has_role(h.rec, "policy"));
    }
    auto similar = ses.similar(q, 2).value();
    for (auto& h : similar) CHECK(st::detail::has_role(h.rec, "session"));
    REQUIRE(pol.set_quality(policies.front(), 0.99));
    if (round == 1) REQUIRE(store->checkpoint());
  }
  {
    auto store = store_t::open(dir, options()).value();
    CHECK(store.get(policies.front())->number("quality") == 0.99);
    auto w = store.read([&](const st::record_graph& g) {
      return g.neighbours(sessions.back(), st::edge_type::session_pattern, st::direction::out);
    });
    REQUIRE(w.size() == 1);
    CHECK(w[0].weight == 0.75f);
    // Removing a record removes its edges and its vector.
    REQUIRE(store.remove(sessions.back()));
    CHECK(!store.get(sessions.back()));
    REQUIRE(store.verify());
  }
  {
    auto store = store_t::open(dir, options()).value();
    CHECK(!store.get(sessions.back()));
    CHECK(store.vectors().index().size() == policies.size() + sessions.size() - 1);
  }
  // A vector without a record (crash between the two logs) is dropped on open.
  {
    auto vectors = st::hnsw_store<st::metric::cosine, ruvllm::precision::f32>::open(dir, options().vectors).value();
    const float e[4] = {1, 2, 3, 4};
    REQUIRE(vectors.insert(999999, e));
  }
  {
    auto store = store_t::open(dir, options()).value();
    CHECK(!store.vectors().index().contains(999999));
    REQUIRE(store.verify());
  }
  std::filesystem::remove_all(dir);
}
