// EWC++: the running Fisher against its recurrence, consolidation, the
// penalty and its gradient against finite differences.

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ruvllm/sona/adam.hpp"
#include "ruvllm/sona/ewc.hpp"
#include "support/rng.hpp"

namespace ewc_test {

namespace sona = ruvllm::sona;

TEST_CASE("ewc running Fisher follows F <- gamma F + (1 - gamma) g^2", "[sona][ewc]") {
  ruvllm::test::rng gen(201);
  auto e = sona::ewc<double>::create(5, {.lambda = 2.0, .gamma = 0.9, .task_decay = 0.5}).value();
  std::vector<double> model(5, 0.0);
  for (int step = 0; step < 40; ++step) {
    std::vector<double> g(5);
    for (auto& v : g) v = gen.normal();
    e.accumulate(g);
    for (int i = 0; i < 5; ++i) model[i] = 0.9 * model[i] + 0.1 * g[i] * g[i];
    for (int i = 0; i < 5; ++i) REQUIRE(e.running_fisher()[i] == Approx(model[i]).epsilon(1e-12));
  }
  CHECK_FALSE(e.anchored());
  std::vector<double> theta(5, 1.0);
  CHECK(e.penalty(theta) == 0.0);  // no anchor yet
  e.consolidate(theta);
  e.consolidate(theta);  // F* = 0.5 * F + F
  for (int i = 0; i < 5; ++i) CHECK(e.penalty_fisher()[i] == Approx(1.5 * model[i]));
  CHECK(e.consolidations() == 2);
}

TEST_CASE("ewc penalty and its gradient agree with finite differences", "[sona][ewc]") {
  ruvllm::test::rng gen(202);
  const std::size_t n = 16;
  auto e = sona::ewc<double>::create(n, {.lambda = 3.5, .gamma = 0.5}).value();
  std::vector<double> theta(n), g(n);
  for (auto& v : g) v = gen.normal();
  e.accumulate(g);
  for (auto& v : theta) v = gen.normal();
  e.consolidate(theta);
  for (auto& v : theta) v += gen.normal();
  // Reference penalty from the definition.
  double ref = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = theta[i] - e.anchor()[i];
    ref += e.penalty_fisher()[i] * d * d;
  }
  CHECK(e.penalty(theta) == Approx(3.5 / 2 * ref).epsilon(1e-12));
  std::vector<double> grad(n, 0.0);
  e.add_penalty_gradient(theta, grad);
  for (std::size_t i = 0; i < n; ++i) {
    auto t = theta;
    t[i] += 1e-6;
    const double up = e.penalty(t);
    t[i] -= 2e-6;
    const double down = e.penalty(t);
    CHECK(grad[i] == Approx((up - down) / 2e-6).margin(1e-6));
  }
  e.set_lambda(0.0);
  CHECK(e.penalty(theta) == 0.0);
}

TEST_CASE("ewc and adam reject bad settings", "[sona][ewc]") {
  CHECK_FALSE(sona::ewc<float>::create(4, {.lambda = -1.0}));
  CHECK_FALSE(sona::ewc<float>::create(4, {.gamma = 1.0}));
  CHECK_FALSE(sona::ewc<float>::create(4, {.task_decay = 1.5}));
  CHECK_FALSE(sona::adam<float>::create(4, {.learning_rate = 0.0}));
  CHECK_FALSE(sona::adam<float>::create(4, {.beta1 = 1.0}));
}

TEST_CASE("adam minimizes a quadratic; sgd takes exact steps", "[sona][adam]") {
  auto a = sona::adam<double>::create(3, {.learning_rate = 0.05}).value();
  std::vector<double> x{3.0, -2.0, 0.5}, g(3);
  for (int i = 0; i < 2000; ++i) {
    for (int k = 0; k < 3; ++k) g[k] = 2 * (x[k] - k);
    a.step(x, g);
  }
  for (int k = 0; k < 3; ++k) CHECK(x[k] == Approx(k).margin(1e-3));
  auto s = sona::adam<double>::create(1, {.learning_rate = 0.1, .sgd = true}).value();
  std::vector<double> y{1.0}, gy{2.0};
  s.step(y, gy, 0.5);
  CHECK(y[0] == Approx(0.9));
}

}  // namespace ewc_test
