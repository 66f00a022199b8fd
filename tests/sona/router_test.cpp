// The FastGRNN router: analytic gradients against central finite differences
// (double precision), learning a seeded synthetic routing task from bandit
// feedback, and EWC++ against forgetting.

#include <catch2/catch.hpp>

#include <cmath>
#include <iterator>
#include <cstddef>
#include <random>
#include <vector>

#include "ruvllm/sona/router.hpp"
#include "sona/routing_task.hpp"
#include "support/rng.hpp"

namespace router_test {

namespace {

namespace sona = ruvllm::sona;

sona::router_options small_options() {
  sona::router_options o;
  o.query_dim = 12;
  o.extra_dim = 3;
  o.hidden_dim = 6;
  o.rank_w = 3;
  o.rank_u = 2;
  o.steps = 3;
  o.models = 4;
  o.context_buckets = 3;
  o.seed = 7;
  return o;
}

// Every parameter's analytic derivative against (L(p + e) - L(p - e)) / 2e.
// In double with e = 1e-6 the truncation error is ~1e-12 and rounding ~1e-10,
// so 1e-6 (absolute plus relative) leaves a wide margin while catching any
// missing or misplaced term (those are O(1e-2) and larger).
void check_gradient(sona::fastgrnn_router<double>& r, const std::vector<double>& q, const std::vector<double>& e,
                    const sona::router_target& t) {
  auto ws = r.make_workspace();
  static_cast<void>(r.gradient(q, e, t, ws));
  const std::vector<double> analytic(r.last_gradient().begin(), r.last_gradient().end());
  std::vector<double> p(r.parameters().begin(), r.parameters().end());
  const double step = 1e-6;
  double worst = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double saved = p[i];
    p[i] = saved + step;
    REQUIRE(r.set_parameters(p));
    const double up = r.gradient(q, e, t, ws);
    p[i] = saved - step;
    REQUIRE(r.set_parameters(p));
    const double down = r.gradient(q, e, t, ws);
    p[i] = saved;
    const double numeric = (up - down) / (2 * step);
    const double err = std::abs(numeric - analytic[i]) / (1.0 + std::abs(numeric));
    worst = std::max(worst, err);
    INFO("parameter " << i << " analytic " << analytic[i] << " numeric " << numeric);
    REQUIRE(err < 1e-6);
  }
  REQUIRE(r.set_parameters(p));
  INFO("worst relative gradient error " << worst);
  CHECK(worst < 1e-6);
}

}  // namespace

TEST_CASE("router gradients match central finite differences", "[sona][router]") {
  ruvllm::test::rng gen(101);
  auto r = sona::fastgrnn_router<double>::create(small_options()).value();
  // Move away from the initial point so every gate and head is in a generic
  // regime (nonzero biases, zeta/nu away from their defaults).
  std::vector<double> p(r.parameters().begin(), r.parameters().end());
  for (auto& v : p) v += 0.3 * gen.normal();
  REQUIRE(r.set_parameters(p));
  std::vector<double> q(12), e(3);
  for (auto& v : q) v = gen.normal();
  for (auto& v : e) v = gen.uniform(0.0f, 1.0f);

  SECTION("every head at once") {
    sona::router_target t;
    t.model = 2;
    t.model_weight = 0.7;
    t.context_bucket = 1;
    t.bucket_weight = 0.4;
    t.temperature = 0.6;
    t.top_p = 0.9;
    t.quality = 0.8;
    t.quality_weight = 1.3;
    check_gradient(r, q, e, t);
  }
  SECTION("a negative model weight (the bandit push-away)") {
    sona::router_target t;
    t.model = 0;
    t.model_weight = -0.4;
    t.quality = 0.2;
    check_gradient(r, q, e, t);
  }
  SECTION("a single step, where U sees h = 0") {
    auto o = small_options();
    o.steps = 1;
    auto r1 = sona::fastgrnn_router<double>::create(o).value();
    sona::router_target t;
    t.model = 1;
    t.temperature = 1.0;
    check_gradient(r1, q, e, t);
  }
}

TEST_CASE("router options are validated", "[sona][router]") {
  auto o = small_options();
  o.rank_w = 100;
  CHECK_FALSE(sona::fastgrnn_router<float>::create(o));
  o = small_options();
  o.sparsity = 1.0;
  CHECK_FALSE(sona::fastgrnn_router<float>::create(o));
  o = small_options();
  o.models = 1;
  CHECK_FALSE(sona::fastgrnn_router<float>::create(o));
  o = small_options();
  o.optimizer.learning_rate = 0.0;
  CHECK_FALSE(sona::fastgrnn_router<float>::create(o));
  o = small_options();
  o.ewc.gamma = 1.0;
  CHECK_FALSE(sona::fastgrnn_router<float>::create(o));
  auto r = sona::fastgrnn_router<float>::create(small_options()).value();
  std::vector<float> wrong(3);
  CHECK_FALSE(r.set_parameters(wrong));
}

TEST_CASE("router decisions stay in their ranges and the float path agrees with double", "[sona][router]") {
  auto rf = sona::fastgrnn_router<float>::create(small_options()).value();
  auto rd = sona::fastgrnn_router<double>::create(small_options()).value();
  auto wf = rf.make_workspace();
  auto wd = rd.make_workspace();
  ruvllm::test::rng gen(102);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> qf(12), ef(3);
    for (auto& v : qf) v = gen.normal(0.0f, 2.0f);
    for (auto& v : ef) v = gen.uniform(0.0f, 1.0f);
    const std::vector<double> qd(qf.begin(), qf.end()), ed(ef.begin(), ef.end());
    const auto a = rf.route(qf, ef, wf);
    const auto b = rd.route(qd, ed, wd);
    CHECK(a.model == b.model);
    CHECK(a.context_bucket == b.context_bucket);
    CHECK(a.temperature >= 0.1f);
    CHECK(a.temperature <= 1.5f);
    CHECK(a.top_p >= 0.5f);
    CHECK(a.top_p <= 1.0f);
    CHECK(a.confidence > 0.0f);
    CHECK(a.confidence < 1.0f);
    CHECK(a.temperature == Approx(b.temperature).epsilon(1e-5));
    CHECK(a.confidence == Approx(b.confidence).epsilon(1e-5));
    double sum = 0;
    for (float p : wf.model_probs) sum += p;
    CHECK(sum == Approx(1.0).epsilon(1e-5));
  }
}

TEST_CASE("router sparsity keeps the requested fraction and stays sparse while training", "[sona][router]") {
  auto o = small_options();
  o.sparsity = 0.75;
  auto r = sona::fastgrnn_router<double>::create(o).value();
  const auto& l = r.layout();
  r.sparsify();
  const std::size_t sizes[4] = {l.w2 - l.w1, l.u1 - l.w2, l.u2 - l.u1, l.b_z - l.u2};
  std::size_t expected = 0;
  for (std::size_t n : sizes) expected += static_cast<std::size_t>(std::ceil(0.25 * static_cast<double>(n)));
  CHECK(r.nonzero_factors() == expected);
  auto ws = r.make_workspace();
  ruvllm::test::rng gen(103);
  std::vector<double> q(12), e(3);
  for (int i = 0; i < 20; ++i) {
    for (auto& v : q) v = gen.normal();
    sona::router_target t;
    t.model = static_cast<std::int32_t>(i % 4);
    static_cast<void>(r.train(q, e, t, ws));
  }
  CHECK(r.nonzero_factors() <= expected);
  // Masked entries carry no gradient, so the sparse gradient still checks out.
  sona::router_target t;
  t.model = 3;
  t.quality = 0.5;
  check_gradient(r, q, e, t);
}

TEST_CASE("router learns a synthetic routing task from noisy bandit feedback", "[sona][router]") {
  std::mt19937_64 gen(ruvllm::test::base_seed() ^ 0x407u);
  const auto task = ruvllm::test::routing_task::make(8, 128, 4, 0, gen);
  auto r = sona::fastgrnn_router<float>::create(sona::router_options{}).value();
  auto ws = r.make_workspace();
  const double before = ruvllm::test::accuracy(r, ws, task, 1000, gen);
  std::vector<double> curve;
  for (int chunk = 0; chunk < 4; ++chunk) {
    ruvllm::test::run_trajectories(r, ws, task, 500, gen, 0.2);
    curve.push_back(ruvllm::test::accuracy(r, ws, task, 1000, gen));
  }
  WARN("router accuracy: before " << before << ", after 500/1000/1500/2000 trajectories " << curve[0] << " / "
                                  << curve[1] << " / " << curve[2] << " / " << curve[3]);
  CHECK(before < 0.5);
  CHECK(curve.back() >= 0.9);
  CHECK(r.version() == 2000);
}

TEST_CASE("EWC++ keeps the first task after a second one; without it the router forgets", "[sona][router][ewc]") {
  // Fixed task draws (not RUVLLM_TEST_SEED), averaged: how much a router
  // forgets depends on the draw, so one draw is an anecdote.
  double ewc = 0, plain = 0, b_ewc = 0, b_plain = 0;
  const double n = static_cast<double>(std::size(ruvllm::test::forgetting_seeds));
  for (const std::uint64_t seed : ruvllm::test::forgetting_seeds) {
    const auto r = ruvllm::test::forgetting_experiment(seed, ruvllm::test::forgetting_lambda);
    WARN("task draw " << seed << ": task A accuracy " << r.a_before << " after task A; after task B: ewc " << r.a_ewc
                      << ", no-ewc " << r.a_plain << "; task B accuracy: ewc " << r.b_ewc << ", no-ewc " << r.b_plain);
    CHECK(r.a_before >= 0.9);
    CHECK(r.a_ewc >= 0.85);
    ewc += r.a_ewc / n;
    plain += r.a_plain / n;
    b_ewc += r.b_ewc / n;
    b_plain += r.b_plain / n;
  }
  WARN("mean task A accuracy after task B: ewc " << ewc << ", no-ewc " << plain << "; mean task B accuracy: ewc "
                                                 << b_ewc << ", no-ewc " << b_plain);
  CHECK(ewc >= 0.85);
  CHECK(plain < ewc - 0.05);
}

}  // namespace router_test
