// The sampler against hand-computed distributions (greedy, seeded draws,
// top-k / top-p / min-p cuts, temperature, the penalty window, logits that
// are not finite) and against a plain model of its stages on seeded random
// logits and settings.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ruvllm/model/sampler.hpp"
#include "support/property.hpp"

namespace sampler_test {

namespace {

using ruvllm::model::sampler;
using ruvllm::model::sampler_params;
using ruvllm::model::sampler_token;

sampler_params neutral(float temperature, std::uint64_t seed = 1) {
  sampler_params p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

/// Frequencies of each token over `draws` samples.
std::vector<double> frequencies(sampler& s, const std::vector<float>& logits, std::size_t draws) {
  std::vector<double> f(logits.size(), 0.0);
  for (std::size_t i = 0; i < draws; ++i) f[static_cast<std::size_t>(s.sample(logits))] += 1.0;
  for (double& v : f) v /= static_cast<double>(draws);
  return f;
}

const std::vector<float> five_three_two = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};

}  // namespace

TEST_CASE("sampler: temperature 0 is argmax with the lowest id on ties", "[model][sampler]") {
  auto s = sampler::create(neutral(0.0f), 5);
  REQUIRE(s.has_value());
  CHECK(s->sample(std::vector<float>{0.f, 3.f, 1.f, 3.f, -2.f}) == 1);
  CHECK(s->sample(std::vector<float>{-1.f, -1.f, -1.f, -1.f, -1.f}) == 0);
}

TEST_CASE("sampler: draws follow the softmax and are reproducible from the seed", "[model][sampler]") {
  auto s = sampler::create(neutral(1.0f, 7), 3);
  REQUIRE(s.has_value());
  const auto f = frequencies(*s, five_three_two, 200000);
  CHECK(f[0] == Approx(0.5).margin(0.006));
  CHECK(f[1] == Approx(0.3).margin(0.006));
  CHECK(f[2] == Approx(0.2).margin(0.006));

  auto a = sampler::create(neutral(1.0f, 42), 3);
  auto b = sampler::create(neutral(1.0f, 42), 3);
  auto c = sampler::create(neutral(1.0f, 43), 3);
  std::vector<sampler_token> ta, tb, tc;
  for (int i = 0; i < 64; ++i) {
    ta.push_back(a->sample(five_three_two));
    tb.push_back(b->sample(five_three_two));
    tc.push_back(c->sample(five_three_two));
  }
  CHECK(ta == tb);
  CHECK(ta != tc);
  a->reset();
  std::vector<sampler_token> again;
  for (int i = 0; i < 64; ++i) again.push_back(a->sample(five_three_two));
  CHECK(again == ta);
}

TEST_CASE("sampler: temperature sharpens and flattens", "[model][sampler]") {
  // At T = 0.5, p ~ p^2: 0.25 / 0.09 / 0.04 normalized.
  auto s = sampler::create(neutral(0.5f, 3), 3);
  const auto f = frequencies(*s, five_three_two, 200000);
  CHECK(f[0] == Approx(0.25 / 0.38).margin(0.006));
  CHECK(f[2] == Approx(0.04 / 0.38).margin(0.006));
}

TEST_CASE("sampler: top-k, top-p and min-p cut the candidates", "[model][sampler]") {
  SECTION("top-k 1 is greedy") {
    sampler_params p = neutral(1.0f);
    p.top_k = 1;
    auto s = sampler::create(p, 3);
    for (int i = 0; i < 100; ++i) CHECK(s->sample(five_three_two) == 0);
  }
  SECTION("top-p 0.6 keeps 0.5 + 0.3, renormalized") {
    sampler_params p = neutral(1.0f);
    p.top_p = 0.6f;
    auto s = sampler::create(p, 3);
    const auto f = frequencies(*s, five_three_two, 100000);
    CHECK(f[2] == 0.0);
    CHECK(f[0] == Approx(0.625).margin(0.008));
  }
  SECTION("min-p 0.5 keeps tokens with p >= 0.25") {
    sampler_params p = neutral(1.0f);
    p.min_p = 0.5f;
    auto s = sampler::create(p, 3);
    const auto f = frequencies(*s, five_three_two, 100000);
    CHECK(f[2] == 0.0);
    CHECK(f[1] == Approx(0.375).margin(0.008));
  }
}

TEST_CASE("sampler: penalties apply to the recent window only", "[model][sampler]") {
  sampler_params p = neutral(0.0f);
  p.repeat_penalty = 2.0f;
  p.penalty_last_n = 2;
  auto s = sampler::create(p, 3);
  const std::vector<float> logits = {3.0f, 2.0f, -1.0f};
  CHECK(s->sample(logits) == 0);
  s->accept(0);  // 3 -> 1.5: token 1 (2.0) wins
  CHECK(s->sample(logits) == 1);
  s->accept(1);  // both penalized: 1.5 vs 1.0
  CHECK(s->sample(logits) == 0);
  s->accept(2);  // window {1, 2}: token 0 is free again
  CHECK(s->sample(logits) == 0);

  sampler_params q = neutral(0.0f);
  q.frequency_penalty = 0.4f;
  q.presence_penalty = 0.1f;
  auto t = sampler::create(q, 3);
  for (int i = 0; i < 2; ++i) t->accept(0);  // 3 - 2 * 0.4 - 0.1 = 2.1 > 2
  CHECK(t->sample(logits) == 0);
  t->accept(0);  // 3 - 1.2 - 0.1 = 1.7 < 2
  CHECK(t->sample(logits) == 1);
  t->reset();
  CHECK(t->sample(logits) == 0);
}

TEST_CASE("sampler: bad settings are errors naming the value", "[model][sampler]") {
  const auto fails = [](sampler_params p, std::size_t vocab, const char* needle) {
    auto s = sampler::create(p, vocab);
    REQUIRE_FALSE(s.has_value());
    CHECK(s.error().message().find(needle) != std::string::npos);
  };
  sampler_params p;
  fails(p, 0, "vocabulary");
  p.temperature = -1.0f;
  fails(p, 3, "temperature");
  p = {};
  p.top_p = 0.0f;
  fails(p, 3, "top_p");
  p = {};
  p.min_p = 1.5f;
  fails(p, 3, "min_p");
  p = {};
  p.repeat_penalty = 0.0f;
  fails(p, 3, "repeat_penalty");
}

TEST_CASE("sampler: NaN logits are never drawn and infinite ones share the top", "[model][sampler]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  SECTION("NaN reads as -inf, greedy or drawn") {
    const std::vector<float> with_nan = {nan, 1.0f, nan, 0.0f, nan};
    const std::vector<float> with_minus_inf = {-inf, 1.0f, -inf, 0.0f, -inf};
    auto g = sampler::create(neutral(0.0f), 5);
    CHECK(g->sample(with_nan) == 1);
    auto d = sampler::create(neutral(1.0f, 9), 5);
    const auto f = frequencies(*d, with_nan, 100000);
    CHECK(f[0] + f[2] + f[4] == 0.0);
    CHECK(f[1] == Approx(std::exp(1.0) / (std::exp(1.0) + 1.0)).margin(0.008));
    // The same draws as with -inf in the NaNs' places, under the default
    // cuts (top-k 40, top-p 0.95, min-p 0.05).
    sampler_params defaults;
    defaults.seed = 5;
    auto a = sampler::create(defaults, 5);
    auto b = sampler::create(defaults, 5);
    for (int i = 0; i < 200; ++i) REQUIRE(a->sample(with_nan) == b->sample(with_minus_inf));
  }
  SECTION("+inf logits share the draws equally") {
    const std::vector<float> logits = {1.0f, inf, 2.0f, inf};
    CHECK(sampler::create(neutral(0.0f), 4)->sample(logits) == 1);
    auto d = sampler::create(neutral(0.7f, 11), 4);
    const auto f = frequencies(*d, logits, 100000);
    CHECK(f[0] + f[2] == 0.0);
    CHECK(f[1] == Approx(0.5).margin(0.008));
  }
  SECTION("no finite logit: the lowest id, as greedy") {
    for (const float fill : {nan, -inf}) {
      const std::vector<float> logits(6, fill);
      CHECK(sampler::create(neutral(0.0f), 6)->sample(logits) == 0);
      auto s = sampler::create(neutral(1.0f), 6);
      for (int i = 0; i < 20; ++i) CHECK(s->sample(logits) == 0);
    }
  }
  SECTION("a penalty that makes NaN of a logit drops it") {
    // -inf - (2 * -3e38f) is -inf - -inf: NaN.
    sampler_params p = neutral(0.0f);
    p.frequency_penalty = -3e38f;
    auto s = sampler::create(p, 2);
    s->accept(0);
    s->accept(0);
    CHECK(s->sample(std::vector<float>{-inf, 1.0f}) == 1);
  }
}

namespace {

/// What a plain reading of the sampler's stages allows at a step: the
/// tokens that may be drawn, from the logits, the settings and the window of
/// recent tokens, in double precision. `slack` loosens the top-p and min-p
/// cuts so that a rounding difference at a boundary cannot fail the check;
/// temperature only makes some of these tokens impossible (a probability
/// that underflows), so the set does not depend on it.
std::vector<sampler_token> possible_tokens(const std::vector<float>& logits, const sampler_params& p,
                                           const std::vector<sampler_token>& window, double slack) {
  const double low = -std::numeric_limits<double>::infinity();
  const auto orderable = [&](double v) { return std::isnan(v) ? low : std::min<double>(v, 3.4028234663852886e38); };
  std::vector<double> l(logits.size());
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = orderable(logits[i]);
  std::vector<std::size_t> counts(logits.size(), 0);
  for (const sampler_token t : window) ++counts[static_cast<std::size_t>(t)];
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (counts[i] == 0) continue;
    // In float, as the sampler computes them: the overflows to inf and the
    // NaNs are the ones it meets.
    auto v = static_cast<float>(l[i]);
    v = v > 0.0f ? v / p.repeat_penalty : v * p.repeat_penalty;
    v -= static_cast<float>(counts[i]) * p.frequency_penalty + p.presence_penalty;
    l[i] = orderable(v);
  }
  std::vector<sampler_token> order(l.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<sampler_token>(i);
  std::stable_sort(order.begin(), order.end(), [&](sampler_token a, sampler_token b) {
    return l[static_cast<std::size_t>(a)] > l[static_cast<std::size_t>(b)];
  });
  const double top = l[static_cast<std::size_t>(order[0])];
  if (p.temperature == 0.0f || top == low) return {order[0]};
  std::size_t kept = p.top_k > 0 ? std::min(p.top_k, order.size()) : order.size();
  std::vector<double> prob(kept);
  double total = 0.0;
  for (std::size_t i = 0; i < kept; ++i) total += prob[i] = std::exp(l[static_cast<std::size_t>(order[i])] - top);
  for (double& v : prob) v /= total;
  if (p.top_p < 1.0f) {
    double cumulative = 0.0;
    std::size_t by_p = 0;
    while (by_p < kept) {
      cumulative += prob[by_p++];
      if (cumulative >= std::min(1.0, p.top_p + slack)) break;
    }
    kept = by_p;
  }
  std::size_t by_min = 1;
  while (by_min < kept && prob[by_min] >= (p.min_p - slack) * prob[0]) ++by_min;
  kept = by_min;
  std::vector<sampler_token> out;
  for (std::size_t i = 0; i < kept; ++i)
    if (prob[i] > 0.0) out.push_back(order[i]);
  return out;
}

}  // namespace

TEST_CASE("sampler: seeded random logits and settings draw only what the stages allow", "[model][sampler]") {
  const float inf = std::numeric_limits<float>::infinity();
  // Few distinct values, so ties are common; non-finite ones among them.
  const std::array<float, 12> values = {
      -inf, std::numeric_limits<float>::quiet_NaN(), inf, -2.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 3.0f, 1e30f, -1e30f};
  ruvllm::test::check_property(84, 400, [&](ruvllm::test::rng& g, std::size_t) {
    const std::size_t n = g.uniform_index(1, 24);
    sampler_params p;
    p.temperature = g.chance(0.25) ? 0.0f : g.uniform(0.1f, 2.1f);
    p.top_k = g.chance(0.3) ? 0 : g.uniform_index(0, n + 1);
    p.top_p = g.chance(0.3) ? 1.0f : g.uniform(0.05f, 1.0f);
    p.min_p = g.chance(0.3) ? 0.0f : g.uniform(0.0f, 1.0f);
    p.repeat_penalty = g.chance(0.5) ? 1.0f : g.uniform(0.5f, 1.5f);
    p.frequency_penalty = g.chance(0.5) ? 0.0f : g.uniform(-1.0f, 1.0f);
    p.presence_penalty = g.chance(0.5) ? 0.0f : g.uniform(-1.0f, 1.0f);
    p.penalty_last_n = g.uniform_index(0, 5);
    p.seed = g.next_u64();
    auto s = sampler::create(p, n);
    REQUIRE(s.has_value());
    std::vector<sampler_token> accepted;
    for (int step = 0; step < 6; ++step) {
      std::vector<float> logits(n);
      for (float& v : logits)
        v = g.chance(0.3) ? values[g.uniform_index(0, values.size() - 1)] : g.uniform(-2.0f, 2.0f);
      const std::size_t window_from = accepted.size() - std::min(accepted.size(), p.penalty_last_n);
      const std::vector<sampler_token> window(accepted.begin() + static_cast<std::ptrdiff_t>(window_from),
                                              accepted.end());
      // Where one token is allowed (greedy, a single finite logit, tight
      // cuts), every draw must be it.
      const auto allowed = possible_tokens(logits, p, window, 1e-4);
      for (int draw = 0; draw < 20; ++draw) {
        const sampler_token t = s->sample(logits);
        INFO("step " << step << " token " << t << " vocabulary " << n);
        REQUIRE(std::find(allowed.begin(), allowed.end(), t) != allowed.end());
      }
      const auto next = static_cast<sampler_token>(g.uniform_index(0, n - 1));
      s->accept(next);
      accepted.push_back(next);
    }
  });
}

}  // namespace sampler_test
