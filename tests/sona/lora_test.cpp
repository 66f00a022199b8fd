// MicroLoRA / base LoRA: forward against a plain reference, gradients
// against central finite differences of a double-precision reference,
// instant updates that reduce the loss, EMA merge, versions, the registry.

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "ruvllm/sona/adapter_registry.hpp"
#include "ruvllm/sona/lora.hpp"
#include "support/rng.hpp"

namespace lora_test {

namespace {

namespace sona = ruvllm::sona;

// y = scale * B (A x) in double, from the adapter's float parameters (b holds
// B transposed: rank rows of out).
std::vector<double> ref_delta(const std::vector<double>& a, const std::vector<double>& b, const std::vector<float>& x,
                              std::size_t rank, std::size_t in, std::size_t out, double scale) {
  std::vector<double> ax(rank, 0.0), y(out, 0.0);
  for (std::size_t r = 0; r < rank; ++r)
    for (std::size_t i = 0; i < in; ++i) ax[r] += a[r * in + i] * x[i];
  for (std::size_t o = 0; o < out; ++o)
    for (std::size_t r = 0; r < rank; ++r) y[o] += scale * b[r * out + o] * ax[r];
  return y;
}

double ref_loss(const std::vector<double>& a, const std::vector<double>& b, const std::vector<float>& x,
                const std::vector<float>& base, const std::vector<float>& target, std::size_t rank, std::size_t in,
                std::size_t out, double scale) {
  const auto d = ref_delta(a, b, x, rank, in, out, scale);
  double l = 0.0;
  for (std::size_t o = 0; o < out; ++o) {
    const double e = base[o] + d[o] - target[o];
    l += 0.5 * e * e;
  }
  return l;
}

}  // namespace

TEST_CASE("micro_lora forward and gradients match a double-precision reference", "[sona][lora]") {
  ruvllm::test::rng gen(301);
  for (std::size_t rank : {std::size_t{1}, std::size_t{2}}) {
    const std::size_t in = 37, out = 23, layers = 2;
    auto m = sona::micro_lora<>::create({.layers = layers, .in_dim = in, .out_dim = out, .rank = rank, .scale = 0.5f})
                 .value();
    for (auto& v : m.b(1)) v = gen.normal(0.0f, 0.3f);  // nonzero B so dA is nonzero
    m.touch();
    const auto x = gen.uniform_vector(in), base = gen.uniform_vector(out), target = gen.uniform_vector(out);
    std::vector<double> a(m.a(1).begin(), m.a(1).end()), b(m.b(1).begin(), m.b(1).end());

    std::vector<float> y = base;
    m.forward(1, x.data(), y.data());
    const auto d = ref_delta(a, b, x, rank, in, out, 0.5);
    for (std::size_t o = 0; o < out; ++o) CHECK(y[o] == Approx(base[o] + d[o]).margin(1e-5));

    std::vector<float> gy(out), da(rank * in), db(out * rank);
    for (std::size_t o = 0; o < out; ++o) gy[o] = y[o] - target[o];
    m.gradient(1, x.data(), gy.data(), da.data(), db.data());
    // Finite differences in double on the reference (step 1e-6: truncation
    // ~1e-12); the analytic side is float, so the tolerance is float's: 1e-4
    // relative to the gradient's scale.
    const double h = 1e-6;
    const auto fd = [&](std::vector<double>& p, std::size_t i) {
      const double s = p[i];
      p[i] = s + h;
      const double up = ref_loss(a, b, x, base, target, rank, in, out, 0.5);
      p[i] = s - h;
      const double down = ref_loss(a, b, x, base, target, rank, in, out, 0.5);
      p[i] = s;
      return (up - down) / (2 * h);
    };
    for (std::size_t i = 0; i < a.size(); ++i) REQUIRE(da[i] == Approx(fd(a, i)).margin(1e-4));
    for (std::size_t i = 0; i < b.size(); ++i) REQUIRE(db[i] == Approx(fd(b, i)).margin(1e-4));
  }
}

TEST_CASE("micro_lora instant updates reduce the loss, scale with quality and bump the version", "[sona][lora]") {
  ruvllm::test::rng gen(302);
  const std::size_t in = 32, out = 16;
  auto m = sona::micro_lora<>::create({.in_dim = in, .out_dim = out, .rank = 2, .learning_rate = 0.05f}).value();
  auto fresh = m;
  const auto x = gen.uniform_vector(in), target = gen.uniform_vector(out, -0.2f, 0.2f);
  const auto loss = [&](const sona::micro_lora<>& a) {
    std::vector<float> y(out, 0.0f);
    a.forward(0, x.data(), y.data());
    double l = 0;
    for (std::size_t o = 0; o < out; ++o) l += 0.5 * (y[o] - target[o]) * (y[o] - target[o]);
    return l;
  };
  // A fresh adapter (B = 0) changes nothing.
  std::vector<float> y(out, 1.0f);
  m.forward(0, x.data(), y.data());
  for (float v : y) CHECK(v == 1.0f);
  const double l0 = loss(m);
  for (int step = 0; step < 200; ++step) {
    std::vector<float> yy(out, 0.0f), g(out);
    m.forward(0, x.data(), yy.data());
    for (std::size_t o = 0; o < out; ++o) g[o] = yy[o] - target[o];
    m.instant_update(0, x.data(), g.data(), 1.0f);
  }
  CHECK(m.version() == 200);
  CHECK(loss(m) < 0.1 * l0);
  // Quality 0 means no step and no new version.
  std::vector<float> g(out, 1.0f);
  fresh.instant_update(0, x.data(), g.data(), 0.0f);
  CHECK(fresh.version() == 0);
}

TEST_CASE("micro_lora merges into base_lora by exponential moving average", "[sona][lora]") {
  ruvllm::test::rng gen(303);
  auto micro = sona::micro_lora<>::create({.in_dim = 8, .out_dim = 4, .rank = 2, .scale = 1.0f}).value();
  auto base = sona::base_lora<>::create({.in_dim = 8, .out_dim = 4, .rank = 4, .scale = 0.5f, .seed = 9}).value();
  for (auto& v : micro.b(0)) v = gen.normal();
  const std::vector<float> base_a(base.a(0).begin(), base.a(0).end());
  REQUIRE(base.merge_from(micro, 0.25f));
  CHECK(base.version() == 1);
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t i = 0; i < 8; ++i) {
      const float expect = r < 2 ? 0.75f * base_a[r * 8 + i] + 0.25f * micro.a(0)[r * 8 + i] : base_a[r * 8 + i];
      CHECK(base.a(0)[r * 8 + i] == Approx(expect));
    }
  for (std::size_t o = 0; o < 4; ++o) {
    CHECK(base.b(0)[0 * 4 + o] == Approx(0.25f * 2.0f * micro.b(0)[0 * 4 + o]));
    CHECK(base.b(0)[3 * 4 + o] == 0.0f);
  }
  auto other = sona::micro_lora<>::create({.in_dim = 9, .out_dim = 4, .rank = 1}).value();
  CHECK_FALSE(base.merge_from(other, 0.1f));
  CHECK_FALSE(base.merge_from(micro, 1.5f));
  CHECK_FALSE(base.merge_from(micro, std::nanf("")));
  CHECK(base.version() == 1);  // rejected merges change nothing
  CHECK_FALSE(sona::micro_lora<>::create({.in_dim = 8, .out_dim = 4, .rank = 3}));
  CHECK_FALSE(sona::base_lora<>::create({.in_dim = 8, .out_dim = 4, .rank = 2}));
}

TEST_CASE("adapter registry hot-swaps named base adapters", "[sona][lora]") {
  sona::adapter_registry<sona::base_lora<>> reg;
  const auto mk = [](std::uint64_t seed) {
    return sona::base_lora<>::create({.in_dim = 8, .out_dim = 8, .rank = 4, .seed = seed}).value();
  };
  const auto id_code = reg.add("code", mk(1)).value();
  const auto id_chat = reg.add("chat", mk(2)).value();
  CHECK(id_code != id_chat);
  CHECK_FALSE(reg.add("code", mk(3)));
  CHECK(reg.active() == nullptr);
  REQUIRE(reg.activate("chat"));
  CHECK(reg.active()->id == id_chat);
  REQUIRE(reg.activate("code"));
  CHECK(reg.active()->id == id_code);
  reg.active()->adapter.touch();
  CHECK(reg.find("code")->adapter.version() == 1);
  CHECK(reg.find("chat")->adapter.version() == 0);
  CHECK_FALSE(reg.activate("missing"));
  REQUIRE(reg.remove("code"));
  CHECK(reg.active() == nullptr);
  const auto id_again = reg.add("code", mk(4)).value();
  CHECK(id_again != id_code);  // a new id: cached KV of the old adapter cannot alias
  CHECK(reg.size() == 2);
}

}  // namespace lora_test
