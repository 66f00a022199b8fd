// The sampler against hand-computed distributions: greedy, seeded draws,
// top-k / top-p / min-p cuts, temperature, and the penalty window.

#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include <catch2/catch.hpp>

#include "ruvllm/model/sampler.hpp"

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

}  // namespace sampler_test
