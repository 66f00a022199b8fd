// The loops end to end: a serving thread records trajectories of the
// synthetic routing task into the ring, tick() drives the instant, background
// and deep loops on a simulated clock; the router learns, the bank holds the
// clusters, EWC++ anchors, MicroLoRA merges into the active base adapter.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ruvllm/sona/loops.hpp"
#include "sona/routing_task.hpp"

namespace loops_test {

namespace sona = ruvllm::sona;

TEST_CASE("sona loops: instant, background and deep phases on a simulated clock", "[sona][loops]") {
  std::mt19937_64 gen(601);
  const auto task = ruvllm::test::routing_task::make(8, 128, 4, 0, gen);
  sona::loop_options lo;
  lo.ring_capacity = 256;
  lo.instant_batch = 32;
  lo.background_interval_ms = 1000;
  lo.deep_interval_ms = 5000;
  auto loops =
      sona::sona_loops<>::create(lo, sona::router_options{}, {.dim = 128, .models = 4, .kmeans = {.k = 8}}).value();
  auto micro = sona::micro_lora<>::create({.in_dim = 16, .out_dim = 16, .rank = 1}).value();
  for (auto& v : micro.b(0)) v = 0.5f;
  sona::adapter_registry<sona::base_lora<>> bases;
  REQUIRE(bases.add("default", sona::base_lora<>::create({.in_dim = 16, .out_dim = 16, .rank = 4}).value()));
  REQUIRE(bases.activate("default"));
  REQUIRE(loops.attach_lora(&micro, &bases));

  std::vector<float> x;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uint64_t now = 0, id = 0;
  std::size_t backgrounds = 0, deeps = 0, learned = 0;
  for (int request = 0; request < 3000; ++request) {
    const std::size_t k = task.sample(gen, x);
    static_cast<void>(loops.route(x));
    // Explore as a serving engine would, then record what happened.
    const std::uint32_t m = sona::sample_model<float>(loops.model_probs(), 0.2, u(gen), u(gen));
    sona::trajectory_view t;
    t.request_id = id++;
    t.query = x;
    t.model = m;
    t.quality = static_cast<float>(task.quality(k, m, gen));
    REQUIRE(loops.ring().try_push(t));
    now += 10;
    if (request % 8 == 7) {
      const auto r = loops.tick(now).value();
      learned += r.instant_trajectories;
      backgrounds += r.background_ran ? 1 : 0;
      deeps += r.deep_ran ? 1 : 0;
    }
  }
  CHECK(learned == 3000);
  CHECK(backgrounds == 28);  // ticks every 80 ms: a background run every 13 ticks after the first
  CHECK(deeps == 5);         // and a deep run every 63 ticks
  CHECK(loops.router().ewc_state().consolidations() == backgrounds);
  CHECK(bases.active()->adapter.version() == backgrounds);
  CHECK(loops.bank().patterns().size() >= 8);
  std::mt19937_64 eval(602);
  auto ws = loops.router().make_workspace();
  const double acc = ruvllm::test::accuracy(loops.router(), ws, task, 500, eval);
  WARN("router accuracy through the loops after 3000 trajectories: " << acc);
  CHECK(acc >= 0.9);
  // The deep loop's patterns know the best model of each cluster.
  std::vector<std::pair<std::size_t, float>> hits;
  std::size_t right = 0;
  for (std::size_t k = 0; k < 8; ++k) {
    loops.bank().search(task.centers[k], 1, hits);
    if (loops.bank().patterns()[hits[0].first].best_model == task.best[k]) ++right;
  }
  CHECK(right == 8);
}

namespace {

// Records every edge scaling the instant phase asks for.
struct recording_sink {
  struct call {
    ruvllm::store::uuid session, pattern;
    float factor;
  };
  std::vector<call> calls;
  ruvllm::result<void> scale_edge(const ruvllm::store::uuid& s, const ruvllm::store::uuid& p, float factor) {
    calls.push_back({s, p, factor});
    return {};
  }
};

std::vector<float> unit(std::vector<float> v) {
  double n = 0;
  for (float x : v) n += double{x} * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}

}  // namespace

TEST_CASE("sona loops: the instant phase steps MicroLoRA toward good responses and scales session-pattern edges",
          "[sona][loops]") {
  std::mt19937_64 gen(611);
  constexpr std::size_t dim = 32;
  // Each cluster's good responses point one way (two clusters: a rank-2
  // adapter's outputs span two directions).
  const auto task = ruvllm::test::routing_task::make(2, dim, 4, 0, gen);
  std::vector<std::vector<float>> responses;
  std::normal_distribution<float> nd;
  for (int k = 0; k < 2; ++k) {
    std::vector<float> r(dim);
    for (auto& v : r) v = nd(gen);
    responses.push_back(unit(r));
  }
  sona::loop_options lo;
  lo.response_dim = dim;
  lo.ring_capacity = 64;
  auto loops = sona::sona_loops<ruvllm::backend::highway, recording_sink>::create(
                   lo, {.query_dim = dim, .hidden_dim = 16, .rank_w = 4, .rank_u = 4}, {.dim = dim, .models = 4})
                   .value();
  auto micro =
      sona::micro_lora<>::create({.layers = 2, .in_dim = dim, .out_dim = dim, .rank = 2, .learning_rate = 0.02f})
          .value();
  CHECK_FALSE(loops.attach_lora(&micro, nullptr, 2));  // no layer 2
  REQUIRE(loops.attach_lora(&micro, nullptr, 1));
  std::vector<float> x;
  std::size_t good = 0, bad = 0;
  for (int i = 0; i < 400; ++i) {
    const std::size_t k = task.sample(gen, x);
    sona::trajectory_view t;
    t.query = x;
    t.response = responses[k];
    t.model = task.best[k];
    t.quality = i % 4 == 3 ? 0.2f : 0.9f;  // every fourth response was poor
    t.session = {7, static_cast<std::uint64_t>(i % 5 + 1)};
    t.pattern = i % 2 == 0 ? ruvllm::store::uuid{9, k + 1} : ruvllm::store::uuid{};  // half without a pattern
    (t.quality >= lo.good_quality ? good : bad) += t.pattern.is_nil() ? 0 : 1;
    REQUIRE(loops.record(t).value());
    const auto r = loops.tick(static_cast<std::uint64_t>(i)).value();
    CHECK(r.instant_trajectories == 1);
  }
  // Edges: one call per trajectory with a pattern, +5% when good, -5% when poor.
  REQUIRE(loops.sink().calls.size() == good + bad);
  std::size_t up = 0, down = 0;
  for (const auto& c : loops.sink().calls) {
    CHECK(c.session.hi == 7);
    if (c.factor == Approx(1.05f)) ++up;
    if (c.factor == Approx(0.95f)) ++down;
  }
  CHECK(up == good);
  CHECK(down == bad);
  // MicroLoRA learned on layer 1 only, from the good trajectories only: for
  // each cluster centre its output now points toward that cluster's response.
  // (The Hebbian signal does not separate clusters whose queries share the
  // adapter's two directions; it pulls toward what earned good quality.)
  CHECK(micro.version() == 300);
  for (std::size_t k = 0; k < 2; ++k) {
    std::vector<float> y0(dim, 0.0f), y1(dim, 0.0f);
    micro.forward(0, task.centers[k].data(), y0.data());
    micro.forward(1, task.centers[k].data(), y1.data());
    CHECK(std::all_of(y0.begin(), y0.end(), [](float v) { return v == 0.0f; }));
    const auto y = unit(y1);
    float own = 0, best_other = -1;
    for (std::size_t j = 0; j < 2; ++j) {
      float c = 0;
      for (std::size_t d = 0; d < dim; ++d) c += y[d] * responses[j][d];
      if (j == k)
        own = c;
      else
        best_other = std::max(best_other, c);
    }
    INFO("cluster " << k << ": cosine to own response " << own << ", best other " << best_other);
    CHECK(own > 0.5f);  // a fresh adapter outputs zero: cosine 0
  }
}

TEST_CASE("sona loops: malformed trajectories are refused with nothing recorded", "[sona][loops]") {
  auto loops =
      sona::sona_loops<>::create({.response_dim = 4}, {.query_dim = 8, .hidden_dim = 8, .rank_w = 4, .rank_u = 4},
                                 {.dim = 8, .models = 4})
          .value();
  std::vector<float> q(8, 0.5f), resp(4, 0.1f), short_q(7, 0.5f);
  const auto base = [&] {
    sona::trajectory_view t;
    t.query = q;
    t.response = resp;
    t.quality = 0.5f;
    return t;
  };
  auto t = base();
  t.quality = std::nanf("");
  CHECK_FALSE(loops.record(t));
  t = base();
  t.quality = 1.5f;
  CHECK_FALSE(loops.record(t));
  t = base();
  t.query = short_q;
  const auto err = loops.record(t);
  REQUIRE_FALSE(err);
  CHECK(err.error().message().find("7 floats, expected 8") != std::string::npos);
  std::vector<float> nan_q = q;
  nan_q[3] = std::numeric_limits<float>::infinity();
  t = base();
  t.query = nan_q;
  CHECK_FALSE(loops.record(t));
  t = base();
  t.model = 4;
  CHECK_FALSE(loops.record(t));
  t = base();
  t.latency_ms = -1.0f;
  CHECK_FALSE(loops.record(t));
  CHECK(loops.ring().size_approx() == 0);
  CHECK(loops.record(base()).value());
  CHECK(loops.ring().size_approx() == 1);
  // Options that cannot work are refused at creation.
  CHECK_FALSE(sona::sona_loops<>::create({.instant_batch = 0}, {}, {}));
  CHECK_FALSE(sona::sona_loops<>::create({.edge_step = 1.5f}, {}, {}));
  CHECK_FALSE(sona::sona_loops<>::create({}, {}, {.dim = 64}));
}

TEST_CASE("sona loops: serving threads route through the published router while the owner trains",
          "[sona][loops][threads]") {
  std::mt19937_64 gen(621);
  const auto task = ruvllm::test::routing_task::make(4, 32, 4, 0, gen);
  sona::loop_options lo;
  lo.instant_batch = 16;
  lo.background_interval_ms = 5;
  auto loops = sona::sona_loops<>::create(lo, {.query_dim = 32, .hidden_dim = 16, .rank_w = 4, .rank_u = 4},
                                          {.dim = 32, .models = 4})
                   .value();
  const std::uint64_t v0 = loops.published_version();
  std::atomic<bool> done{false}, bad_route{false};
  std::atomic<std::size_t> routed{0};
  std::vector<std::thread> servers;
  for (int s = 0; s < 2; ++s)
    servers.emplace_back([&, s] {
      std::mt19937_64 g(630 + s);
      std::uniform_real_distribution<double> u(0.0, 1.0);
      auto ws = loops.router().make_workspace();  // made before any training: same shape
      std::vector<float> x;
      while (!done.load()) {
        const std::size_t k = task.sample(g, x);
        const auto d = loops.route(x, ws);
        if (d.model >= 4) bad_route = true;  // Catch2 assertions are not thread-safe
        sona::trajectory_view t;
        t.query = x;
        t.model = sona::sample_model<float>(ws.model_probs, 0.2, u(g), u(g));
        t.quality = static_cast<float>(task.quality(k, t.model, g));
        static_cast<void>(loops.record(t));
        routed.fetch_add(1);
      }
    });
  std::uint64_t now = 0;
  std::size_t trained = 0;
  while (routed.load() < 3000 || now < 100) {
    const auto r = loops.tick(now += 1);
    REQUIRE(r);
    trained += r->router_steps;
    std::this_thread::yield();
  }
  done = true;
  for (auto& t : servers) t.join();
  CHECK_FALSE(bad_route.load());
  CHECK(trained > 0);
  CHECK(loops.published_version() > v0);
  // What was published is what was trained.
  auto ws = loops.router().make_workspace();
  std::vector<float> x;
  for (int i = 0; i < 20; ++i) {
    task.sample(gen, x);
    const auto a = loops.route(x, ws).model_probability;
    loops.publish();
    CHECK(loops.route(x, ws).model_probability == loops.router().route(x, {}, ws).model_probability);
    static_cast<void>(a);
  }
}

TEST_CASE("sona loops: the owned thread ticks until stopped", "[sona][loops][threads]") {
  auto loops =
      sona::sona_loops<>::create({.ring_capacity = 256}, {.query_dim = 8, .hidden_dim = 8, .rank_w = 4, .rank_u = 4},
                                 {.dim = 8, .models = 4})
          .value();
  std::vector<float> q(8, 0.25f);
  sona::trajectory_view t;
  t.query = q;
  t.quality = 0.7f;
  for (int i = 0; i < 100; ++i) REQUIRE(loops.record(t).value());
  CHECK_FALSE(loops.start(std::chrono::milliseconds(0)));
  REQUIRE(loops.start(std::chrono::milliseconds(1)));
  CHECK_FALSE(loops.start(std::chrono::milliseconds(1)));  // one owned thread at most
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (loops.ring().size_approx() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  loops.stop();
  CHECK(loops.ring().size_approx() == 0);
  CHECK(loops.last_error().empty());
  loops.stop();  // idempotent
}

TEST_CASE("sona loops: exported learning imported by fresh loops routes identically", "[sona][loops]") {
  std::mt19937_64 gen(641);
  const auto task = ruvllm::test::routing_task::make(4, 32, 4, 0, gen);
  const sona::router_options ro{.query_dim = 32, .hidden_dim = 16, .rank_w = 4, .rank_u = 4};
  const sona::reasoning_bank_options bo{.dim = 32, .models = 4, .kmeans = {.k = 4}};
  sona::loop_options lo;
  lo.background_interval_ms = 100;
  lo.deep_interval_ms = 500;
  auto a = sona::sona_loops<>::create(lo, ro, bo).value();
  std::vector<float> x;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < 1500; ++i) {
    const std::size_t k = task.sample(gen, x);
    static_cast<void>(a.route(x));
    sona::trajectory_view t;
    t.query = x;
    t.model = sona::sample_model<float>(a.model_probs(), 0.2, u(gen), u(gen));
    t.quality = static_cast<float>(task.quality(k, t.model, gen));
    REQUIRE(a.record(t).value());
    REQUIRE(a.tick(static_cast<std::uint64_t>(i)));
  }
  REQUIRE(a.bank().patterns().size() >= 4);
  const auto path = (std::filesystem::temp_directory_path() / ("ruvllm_loops_" + std::to_string(::getpid()))).string();
  REQUIRE(a.export_learning(path));
  auto b = sona::sona_loops<>::create(lo, ro, {.dim = 32, .models = 4}).value();
  REQUIRE(b.import_learning(path));
  auto wa = a.router().make_workspace(), wb = b.router().make_workspace();
  a.publish();
  for (int i = 0; i < 100; ++i) {
    task.sample(gen, x);
    REQUIRE(a.route(x, wa).model == b.route(x, wb).model);
    REQUIRE(a.route(x, wa).confidence == b.route(x, wb).confidence);
  }
  CHECK(b.bank().patterns().size() == a.bank().patterns().size());
  // A file of another shape does not fit and changes nothing.
  auto c = sona::sona_loops<>::create(lo, {.query_dim = 16, .hidden_dim = 16, .rank_w = 4, .rank_u = 4},
                                      {.dim = 16, .models = 4})
               .value();
  const std::uint64_t before = c.router().version();
  CHECK_FALSE(c.import_learning(path));
  CHECK(c.router().version() == before);
  std::filesystem::remove(path);
}

TEST_CASE("sona loops: the router learns from routing features when the query alone says nothing", "[sona][loops]") {
  // Queries are noise; what tells the models apart is the retrieved pattern's
  // per-model success rates (routing_features), as the reference design feeds
  // the router retrieved policy parameters and historical success rates.
  std::mt19937_64 gen(651);
  std::normal_distribution<float> nd;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  constexpr std::size_t dim = 16, models = 4, clusters = 8;
  const sona::reasoning_bank_options bo{.dim = dim, .models = models};
  const std::size_t fd = sona::routing_feature_dim(bo);
  std::vector<sona::pattern> retrieved(clusters);
  std::vector<std::uint32_t> best(clusters);
  for (std::size_t k = 0; k < clusters; ++k) {
    best[k] = static_cast<std::uint32_t>((k * 3) % models);
    retrieved[k].model_quality.assign(models, 0.0f);
    for (std::uint32_t m = 0; m < models; ++m)
      retrieved[k].model_quality[m] = (m == best[k] ? 0.85f : 0.4f) + 0.05f * nd(gen);
  }
  sona::loop_options lo;
  lo.feature_dim = fd;
  lo.background_interval_ms = 50;
  auto loops = sona::sona_loops<>::create(
                   lo, {.query_dim = dim, .extra_dim = fd, .hidden_dim = 16, .rank_w = 8, .rank_u = 4}, bo)
                   .value();
  CHECK_FALSE(sona::sona_loops<>::create(lo, {.query_dim = dim, .hidden_dim = 16, .rank_w = 8, .rank_u = 4}, bo));
  std::vector<float> q(dim), f(fd);
  const auto draw = [&](std::size_t k) {
    for (auto& v : q) v = nd(gen);
    sona::routing_features(&retrieved[k], 0.9f + 0.1f * static_cast<float>(u(gen)), f);
  };
  for (int i = 0; i < 3000; ++i) {
    const std::size_t k = gen() % clusters;
    draw(k);
    static_cast<void>(loops.route(q, f));
    sona::trajectory_view t;
    t.query = q;
    t.features = f;
    t.model = sona::sample_model<float>(loops.model_probs(), 0.2, u(gen), u(gen));
    t.quality = std::clamp((t.model == best[k] ? 0.85f : 0.35f) + 0.1f * nd(gen), 0.0f, 1.0f);
    REQUIRE(loops.record(t).value());
    REQUIRE(loops.tick(static_cast<std::uint64_t>(i)));
  }
  std::size_t hits = 0;
  auto ws = loops.router().make_workspace();
  for (int i = 0; i < 500; ++i) {
    const std::size_t k = gen() % clusters;
    draw(k);
    if (loops.route(q, f, ws).model == best[k]) ++hits;
  }
  INFO("accuracy from routing features alone: " << hits / 500.0);
  CHECK(hits >= 450);
}

}  // namespace loops_test
