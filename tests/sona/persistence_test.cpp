// SONA through the store: a restarted engine routes exactly as before the
// restart (router weights, EWC++ state and patterns come back from the
// policy store); the instant loop's session -> pattern edges grow and shrink
// by 5% in the store's graph; evicted adapters round-trip through store
// records; the deep loop's retention removes old witness entries.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ruvllm/core/eviction.hpp"
#include "ruvllm/memory/unified_pool.hpp"
#include "ruvllm/sona/adapter_pool.hpp"
#include "ruvllm/sona/loops.hpp"
#include "ruvllm/sona/persistence.hpp"
#include "ruvllm/store/memory_store.hpp"
#include "sona/routing_task.hpp"

namespace persistence_test {

namespace {

namespace sona = ruvllm::sona;
namespace st = ruvllm::store;
using store_t = st::memory_store<st::metric::cosine, ruvllm::precision::f32>;
using sink_t = sona::store_sink<store_t>;
using loops_t = sona::sona_loops<ruvllm::backend::highway, sink_t>;

constexpr std::size_t dim = 32;

struct temp_dir {
  std::filesystem::path path;
  explicit temp_dir(const char* tag) {
    path =
        std::filesystem::temp_directory_path() / (std::string("ruvllm_sona_") + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
};

store_t open_store(const temp_dir& dir) {
  auto o = st::role_store_options(dim);
  o.wal.mode = st::durability::none;  // the test needs no fsync: the process does not crash
  return store_t::open(dir.path.string(), o).value();
}

const sona::router_options router_shape{
    .query_dim = dim, .hidden_dim = 16, .rank_w = 4, .rank_u = 4, .ewc = {.lambda = 50.0}};
const sona::reasoning_bank_options bank_shape{.dim = dim, .models = 4, .kmeans = {.k = 4}};

sona::loop_options schedule() {
  sona::loop_options lo;
  lo.background_interval_ms = 200;
  lo.deep_interval_ms = 1000;
  return lo;
}

// Serves n requests of the routing task through the loops, one tick each.
void serve(loops_t& loops, const ruvllm::test::routing_task& task, std::size_t n, std::mt19937_64& gen,
           std::uint64_t& now) {
  std::vector<float> x;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = task.sample(gen, x);
    static_cast<void>(loops.route(x));
    sona::trajectory_view t;
    t.query = x;
    t.model = sona::sample_model<float>(loops.model_probs(), 0.2, u(gen), u(gen));
    t.quality = static_cast<float>(task.quality(k, t.model, gen));
    REQUIRE(loops.record(t).value());
    const auto r = loops.tick(now += 10);
    if (!r) FAIL(r.error().describe());
  }
}

}  // namespace

TEST_CASE("sona persistence: a restarted engine restores router, EWC++ state and patterns from the store",
          "[sona][persistence]") {
  temp_dir dir("restart");
  std::mt19937_64 gen(701);
  const auto task = ruvllm::test::routing_task::make(4, dim, 4, 0, gen);
  std::vector<float> params_before, anchor_before;
  std::vector<sona::pattern> patterns_before;
  double accuracy_before = 0;
  {
    auto store = open_store(dir);
    auto loops = loops_t::create(schedule(), router_shape, bank_shape, sink_t::open(store).value()).value();
    std::uint64_t now = 0;
    serve(loops, task, 1500, gen, now);
    REQUIRE(loops.tick(now += 1000));  // a final background and deep run saves everything
    REQUIRE(loops.sink().stats().router_saves > 1);
    REQUIRE(loops.sink().stats().pattern_saves >= 1);
    std::mt19937_64 eval(702);
    auto ws = loops.router().make_workspace();
    accuracy_before = ruvllm::test::accuracy(loops.router(), ws, task, 500, eval);
    params_before.assign(loops.router().parameters().begin(), loops.router().parameters().end());
    anchor_before.assign(loops.router().ewc_state().anchor().begin(), loops.router().ewc_state().anchor().end());
    patterns_before = loops.bank().patterns();
    REQUIRE(patterns_before.size() >= 4);
    REQUIRE(loops.router().ewc_state().anchored());
  }  // the process ends: loops, sink and store are gone

  auto store = open_store(dir);
  auto loops = loops_t::create(schedule(), router_shape, bank_shape, sink_t::open(store).value()).value();
  REQUIRE(loops.sink().restore(loops).value());
  CHECK(std::vector<float>(loops.router().parameters().begin(), loops.router().parameters().end()) == params_before);
  CHECK(std::vector<float>(loops.router().ewc_state().anchor().begin(), loops.router().ewc_state().anchor().end()) ==
        anchor_before);
  CHECK(loops.router().ewc_state().anchored());
  std::mt19937_64 eval(702);
  auto ws = loops.router().make_workspace();
  const double accuracy_after = ruvllm::test::accuracy(loops.router(), ws, task, 500, eval);
  INFO("accuracy before the restart " << accuracy_before << ", after " << accuracy_after);
  CHECK(accuracy_before >= 0.9);
  CHECK(accuracy_after == accuracy_before);
  // The published router serves the restored weights.
  std::vector<float> x;
  task.sample(gen, x);
  CHECK(loops.route(x, ws).model == loops.router().route(x, {}, ws).model);
  // Patterns come back with their ids and statistics.
  REQUIRE(loops.bank().patterns().size() == patterns_before.size());
  for (const auto& p : patterns_before) {
    const std::size_t at = loops.bank().find(p.id);
    REQUIRE(at != sona::reasoning_bank<>::npos);
    const auto& q = loops.bank().patterns()[at];
    CHECK(q.count == p.count);
    CHECK(q.best_model == p.best_model);
    CHECK(q.centroid == p.centroid);
    CHECK(q.model_quality == p.model_quality);
  }
  // A fresh store restores nothing and changes nothing.
  temp_dir empty("empty");
  auto store2 = open_store(empty);
  auto fresh = loops_t::create(schedule(), router_shape, bank_shape, sink_t::open(store2).value()).value();
  const std::vector<float> initial(fresh.router().parameters().begin(), fresh.router().parameters().end());
  CHECK_FALSE(fresh.sink().restore(fresh).value());
  CHECK(std::vector<float>(fresh.router().parameters().begin(), fresh.router().parameters().end()) == initial);
}

TEST_CASE("sona persistence: the instant loop scales session-pattern edges in the store's graph",
          "[sona][persistence]") {
  temp_dir dir("edges");
  auto store = open_store(dir);
  auto loops = loops_t::create(schedule(), router_shape, bank_shape, sink_t::open(store).value()).value();
  // A session record and a pattern record.
  const st::uuid session{0x11, 0x1}, pattern{0x22, 0x2}, unknown{0x33, 0x3};
  for (const auto& id : {session, pattern}) {
    st::record r;
    r.id = id;
    REQUIRE(store.insert(std::move(r)));
  }
  std::vector<float> q(dim, 0.1f);
  const auto push = [&](float quality, st::uuid p) {
    sona::trajectory_view t;
    t.query = q;
    t.quality = quality;
    t.session = session;
    t.pattern = p;
    REQUIRE(loops.record(t).value());
    REQUIRE(loops.tick(1));
  };
  push(0.9f, pattern);  // creates the edge: 1.0 * 1.05
  push(0.9f, pattern);
  push(0.1f, pattern);
  push(0.9f, unknown);  // no record: skipped, not an error
  // The instant loop buffered the factors: nothing is in the store yet.
  CHECK(loops.sink().pending_edges() == 2);
  CHECK_FALSE(store.read(
      [&](const st::record_graph& g) { return g.edge_weight(session, pattern, st::edge_type::session_pattern); }));
  REQUIRE(loops.tick(1 + schedule().sink_flush_interval_ms));  // the flush is due
  CHECK(loops.sink().pending_edges() == 0);
  const auto weight = store.read(
      [&](const st::record_graph& g) { return g.edge_weight(session, pattern, st::edge_type::session_pattern); });
  REQUIRE(weight.has_value());
  CHECK(*weight == Approx(1.05 * 1.05 * 0.95));
  CHECK(loops.sink().stats().edges_created == 1);
  CHECK(loops.sink().stats().edges_skipped == 1);
  // Later scalings multiply into the stored weight.
  push(0.9f, pattern);
  REQUIRE(loops.sink().flush());
  CHECK(loops.sink().stats().edges_scaled == 1);
  const auto again = store.read(
      [&](const st::record_graph& g) { return g.edge_weight(session, pattern, st::edge_type::session_pattern); });
  CHECK(*again == Approx(1.05 * 1.05 * 0.95 * 1.05));
}

TEST_CASE("sona persistence: evicted adapters round-trip through store records", "[sona][persistence]") {
  temp_dir dir("adapters");
  auto store = open_store(dir);
  using pool_t = ruvllm::memory::unified_pool<ruvllm::eviction::lru, sona::adapter_pool_hooks>;
  using registry_t = sona::pooled_adapters<sona::base_lora<>, pool_t, sona::store_adapter_backing<store_t>>;
  constexpr std::size_t page = 65536;
  auto pool = pool_t::create({.budget_bytes = 2 * page, .page_bytes = page, .max_allocations = 16}).value();
  registry_t reg(pool, sona::store_adapter_backing<store_t>(store));
  reg.bind(pool.hooks());
  const sona::lora_options shape{.in_dim = 1920, .out_dim = 1920, .rank = 4};
  REQUIRE(reg.add("a", shape));
  REQUIRE(reg.activate("a"));
  for (float& v : reg.active()->b(0)) v = 0.5f;
  reg.active()->touch();
  const std::vector<float> learned(reg.active()->parameters().begin(), reg.active()->parameters().end());
  reg.deactivate();
  REQUIRE(reg.add("b", shape));
  REQUIRE(reg.add("c", shape));  // evicts "a" into the store
  CHECK_FALSE(reg.resident("a"));
  REQUIRE(reg.activate("a"));  // back from the store
  CHECK(reg.active()->version() == 1);
  CHECK(std::vector<float>(reg.active()->parameters().begin(), reg.active()->parameters().end()) == learned);
}

TEST_CASE("sona persistence: the deep loop removes witness entries past their retention", "[sona][persistence]") {
  temp_dir dir("retention");
  auto store = open_store(dir);
  auto log = st::witness_log<store_t>::open(store).value();
  const auto now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::int64_t day = 24ll * 3600 * 1000;
  for (std::uint64_t i = 0; i < 10; ++i) {
    st::witness_entry e;
    e.request_id = {0x77, i + 1};
    e.time = i < 4 ? now - 40 * day : now - day;  // four entries past a 30-day retention
    e.quality = 0.5f;
    REQUIRE(log.push(e));
  }
  REQUIRE(log.flush());
  REQUIRE(log.size() == 10);
  auto lo = schedule();
  auto loops = loops_t::create(lo, router_shape, bank_shape,
                               sink_t::open(store, {.witness_retention_ms = 30 * day}, &log).value())
                   .value();
  REQUIRE(loops.tick(0));
  REQUIRE(loops.tick(1000).value().deep_ran);
  CHECK(log.size() == 6);
  CHECK(loops.sink().stats().witness_removed == 4);
}

}  // namespace persistence_test
