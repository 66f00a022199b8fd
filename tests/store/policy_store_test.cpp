// policy_store against a model: typed policies (parameters, confidence,
// Fisher diagonal, source loop) survive reopening; get, list by type and
// remove; search by type plus similarity against brute force; updates are
// atomic read-modify-writes (two threads updating one policy lose nothing);
// every bad input is refused with the store unchanged, also after reopening.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "ruvllm/store/policy_store.hpp"
#include "store/memory_test_support.hpp"
#include "store/store_test_support.hpp"
#include "support/rng.hpp"

namespace policy_store_test {

namespace {

namespace st = ruvllm::store;
using mem_support::image_of;
using mem_support::random_id;
using st::uuid;
using store_t = st::memory_store<st::metric::cosine, ruvllm::precision::f32>;
using policies_t = st::policy_store<store_t>;
constexpr std::uint32_t dim = 8;

st::memory_store_options options() {
  return st::role_store_options(dim, st::hnsw_options{.m = 12, .ef_construction = 64});
}

st::policy random_policy(ruvllm::test::rng& gen) {
  st::policy p;
  p.id = random_id(gen);
  p.type = static_cast<st::policy_type>(gen.uniform_index(1, 4));
  p.source = static_cast<st::learning_loop>(gen.uniform_index(1, 4));
  p.confidence = gen.uniform(0.0f, 1.0f);
  p.updated = static_cast<std::int64_t>(gen.uniform_index(0, 1'000'000));
  p.parameters = gen.uniform_vector(gen.uniform_index(0, 40));
  if (gen.chance(0.5)) {
    p.fisher_diagonal = gen.uniform_vector(p.parameters.size(), 0.0f, 2.0f);
  }
  return p;
}

struct entry {
  st::policy p;
  std::vector<float> embedding;
};

}  // namespace

TEST_CASE("policy_store: get, list, search and updates against a model", "[store][roles][policy]") {
  const mem_support::scratch_dir dir("policy");
  ruvllm::test::rng gen(121);
  std::map<uuid, entry> model;
  auto store = std::make_optional(store_t::open(dir.path(), options()).value());
  auto policies = std::make_optional(policies_t::open(*store).value());
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 150; ++i) {
      entry e{random_policy(gen), gen.uniform_vector(dim)};
      REQUIRE(policies->insert(e.p, e.embedding));
      model[e.p.id] = e;
    }
    // Updates of every kind.
    for (int i = 0; i < 40; ++i) {
      auto it = std::next(model.begin(), static_cast<long>(gen.uniform_index(0, model.size() - 1)));
      st::policy& p = it->second.p;
      switch (i % 4) {
        case 0:
          p.confidence = gen.uniform(0.0f, 1.0f);
          p.updated += 10;
          REQUIRE(policies->set_confidence(p.id, p.confidence, p.updated));
          break;
        case 1:
          p.parameters = gen.uniform_vector(12);
          p.fisher_diagonal = gen.chance(0.5) ? gen.uniform_vector(12, 0.0f, 1.0f) : std::vector<float>{};
          p.updated += 10;
          REQUIRE(policies->set_parameters(p.id, p.parameters, p.fisher_diagonal, p.updated));
          break;
        case 2: {
          const uuid id = p.id;
          p = random_policy(gen);
          p.id = id;
          it->second.embedding = gen.uniform_vector(dim);
          REQUIRE(policies->update(p, it->second.embedding));
          break;
        }
        default:
          REQUIRE(policies->remove(p.id));
          CHECK(policies->get(p.id).error().code() == ruvllm::errc::not_found);
          model.erase(it);
      }
    }
    if (round == 1) REQUIRE(store->checkpoint());
    policies.reset();
    store.reset();
    store.emplace(store_t::open(dir.path(), options()).value());
    policies.emplace(policies_t::open(*store).value());

    REQUIRE(policies->size() == model.size());
    for (auto& [id, e] : model) REQUIRE(policies->get(id).value() == e.p);
    for (int t = 1; t <= 4; ++t) {
      const auto type = static_cast<st::policy_type>(t);
      std::vector<st::policy> want;
      for (auto& [id, e] : model)
        if (e.p.type == type) want.push_back(e.p);  // the model is ordered by id, as list() is
      REQUIRE(policies->list(type).value() == want);
    }
    // Search by type + similarity + confidence against brute force (cosine).
    for (int q = 0; q < 20; ++q) {
      const auto query = gen.uniform_vector(dim);
      const auto type = static_cast<st::policy_type>(gen.uniform_index(1, 4));
      const float min_conf = q % 2 == 0 ? 0.0f : 0.5f;
      std::vector<std::pair<double, uuid>> all;
      for (auto& [id, e] : model)
        if (e.p.type == type && e.p.confidence >= min_conf)
          all.emplace_back(st_support::reference_distance<st::metric::cosine>(query, e.embedding), id);
      std::sort(all.begin(), all.end());
      auto hits = policies->search(type, query, 5, min_conf, {.ef = 200}).value();
      REQUIRE(hits.size() == std::min<std::size_t>(5, all.size()));
      for (std::size_t i = 0; i < hits.size(); ++i) {
        CHECK(hits[i].id == all[i].second);
        CHECK(hits[i].distance == Approx(all[i].first).margin(1e-4));
        CHECK(hits[i].type == type);
        CHECK(hits[i].confidence == model[hits[i].id].p.confidence);
      }
      // Without a type: any type, still closest first.
      auto any = policies->search(std::nullopt, query, 3).value();
      for (std::size_t i = 1; i < any.size(); ++i) CHECK(any[i - 1].distance <= any[i].distance);
    }
    // Stored embeddings are the given ones (normalized, for cosine).
    const auto& some = model.begin()->second;
    std::vector<float> got(dim);
    REQUIRE(policies->embedding(some.p.id, got));
    double norm = 0;
    for (float x : some.embedding) norm += double{x} * x;
    for (std::size_t i = 0; i < dim; ++i) CHECK(got[i] == Approx(some.embedding[i] / std::sqrt(norm)).margin(1e-5));
  }
  REQUIRE(store->verify());
}

TEST_CASE("policy_store: bad input is refused and changes nothing", "[store][roles][policy]") {
  const mem_support::scratch_dir dir("policy_bad");
  ruvllm::test::rng gen(122);
  auto store = std::make_optional(store_t::open(dir.path(), options()).value());
  auto policies = policies_t::open(*store).value();
  const st::policy good = random_policy(gen);
  const auto emb = gen.uniform_vector(dim);
  REQUIRE(policies.insert(good, emb));
  // A record of another kind must not be touched through the policy API.
  st::record other;
  other.id = random_id(gen);
  other.kind = st::record_kind::session;
  REQUIRE(store->insert(other));
  const auto before = image_of(*store);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  using ruvllm::errc;
  auto bad = [&](auto edit) {
    st::policy p = random_policy(gen);
    p.parameters.resize(4, 0.5f);
    p.fisher_diagonal.clear();
    edit(p);
    return policies.insert(p, emb).error().code();
  };
  CHECK(bad([&](st::policy& p) { p.confidence = nan; }) == errc::invalid_argument);
  CHECK(bad([&](st::policy& p) { p.confidence = 1.5f; }) == errc::invalid_argument);
  CHECK(bad([&](st::policy& p) { p.confidence = -0.1f; }) == errc::invalid_argument);
  CHECK(bad([&](st::policy& p) { p.parameters[2] = nan; }) == errc::invalid_argument);
  CHECK(bad([&](st::policy& p) { p.parameters[2] = std::numeric_limits<float>::infinity(); }) ==
        errc::invalid_argument);
  CHECK(bad([&](st::policy& p) { p.fisher_diagonal = {1, 2, 3}; }) == errc::invalid_argument);      // length
  CHECK(bad([&](st::policy& p) { p.fisher_diagonal = {1, -2, 3, 4}; }) == errc::invalid_argument);  // negative
  CHECK(bad([&](st::policy& p) { p.source = static_cast<st::learning_loop>(9); }) == errc::invalid_argument);
  CHECK(bad([&](st::policy& p) { p.id = uuid{}; }) == errc::invalid_argument);
  CHECK(bad([&](st::policy& p) { p.id = good.id; }) == errc::already_exists);
  CHECK(bad([&](st::policy& p) { p.id = other.id; }) == errc::already_exists);
  st::policy p = random_policy(gen);
  const std::vector<float> short_emb(dim - 1, 1.0f);
  auto nan_emb = emb;
  nan_emb[3] = nan;
  CHECK(policies.insert(p, short_emb).error().code() == errc::invalid_argument);
  CHECK(policies.insert(p, nan_emb).error().code() == errc::invalid_argument);
  CHECK(policies.update(p).error().code() == errc::not_found);
  CHECK(policies.set_confidence(p.id, 0.5f, 1).error().code() == errc::not_found);
  CHECK(policies.set_confidence(good.id, nan, 1).error().code() == errc::invalid_argument);
  CHECK(policies.set_parameters(good.id, std::vector<float>{1, nan}, {}, 1).error().code() == errc::invalid_argument);
  CHECK(policies.remove(p.id).error().code() == errc::not_found);
  CHECK(policies.get(p.id).error().code() == errc::not_found);
  CHECK(policies.remove(other.id).error().code() == errc::invalid_argument);
  CHECK(policies.get(other.id).error().code() == errc::invalid_argument);
  CHECK(policies.set_confidence(other.id, 0.5f, 1).error().code() == errc::invalid_argument);
  st::policy as_other = good;
  as_other.id = other.id;
  CHECK(policies.update(as_other).error().code() == errc::invalid_argument);
  CHECK(policies.search(st::policy_type::pattern, short_emb, 3).error().code() == errc::invalid_argument);
  CHECK(policies_t::open(*store, {.space = 9}).error().code() == errc::invalid_argument);

  REQUIRE(image_of(*store) == before);
  store.reset();
  store.emplace(store_t::open(dir.path(), options()).value());
  REQUIRE(image_of(*store) == before);
}

TEST_CASE("policy_store: concurrent updates of one policy are not lost", "[store][roles][policy][concurrency]") {
  const mem_support::scratch_dir dir("policy_concurrent");
  ruvllm::test::rng gen(123);
  auto o = options();
  o.wal.mode = st::durability::none;
  auto store = store_t::open(dir.path(), o).value();
  auto policies = policies_t::open(store).value();
  st::policy p = random_policy(gen);
  p.parameters.assign(4, 0.0f);
  p.fisher_diagonal.clear();
  REQUIRE(policies.insert(p, gen.uniform_vector(dim)));
  constexpr int steps = 200;
  std::atomic<int> failures{0};
  // One thread raises the confidence step by step, the other grows the
  // parameters; each read-modify-write must keep the other's change.
  std::thread a([&] {
    for (int i = 1; i <= steps; ++i)
      if (!policies.set_confidence(p.id, static_cast<float>(i) / steps, i)) ++failures;
  });
  std::thread b([&] {
    for (int i = 1; i <= steps; ++i)
      if (!policies.set_parameters(p.id, std::vector<float>(4, static_cast<float>(i)), {}, i)) ++failures;
  });
  std::thread reader([&] {
    for (int i = 0; i < steps; ++i) {
      auto got = policies.get(p.id);
      if (!got || got->parameters.size() != 4) ++failures;
    }
  });
  a.join();
  b.join();
  reader.join();
  CHECK(failures.load() == 0);
  const auto got = policies.get(p.id).value();
  CHECK(got.confidence == 1.0f);
  CHECK(got.parameters == std::vector<float>(4, static_cast<float>(steps)));
}

}  // namespace policy_store_test
