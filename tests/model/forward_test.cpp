// The llama-family forward pass against llama.cpp's recorded outputs on the
// conformance models (tests/data/conformance/README.md): prompt logits at
// every position, all last-position logits, teacher-forced greedy steps, and
// free-running greedy continuations for the F32/F16 models.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "model/model_test_support.hpp"
#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/model/llama.hpp"
#include "support/json.hpp"

namespace {

using ruvllm::model::llama_context;
using ruvllm::model::llama_model;
using ruvllm::model::logits_for;
using ruvllm::model::token_id;
using ruvllm::test::ids_of;
using ruvllm::test::json;

/// Largest |ours - llama.cpp| accepted per storage type. llama.cpp differs
/// from exact arithmetic by up to 1.4e-6 (F32), 2e-3 (F16) and 5-6e-2
/// (quantized); the forward pass rounds and quantizes activations as ggml
/// does, so F32/F16 differ by summation order only (measured <= 1e-5).
struct tolerance {
  double logit;
  /// Teacher-forced steps must pick llama.cpp's token whenever llama.cpp's
  /// top-2 gap exceeds this.
  double margin;
  /// Whether the free-running greedy continuation must be identical.
  bool exact_greedy;
};

tolerance tolerance_for(std::string_view model) {
  if (model.find("f32") != std::string_view::npos) return {1e-4, 1e-3, true};
  if (model.find("f16") != std::string_view::npos) return {1e-2, 2e-2, true};
  // Quantized: activations are quantized to Q8_0 / Q8_K like ggml, so most
  // prompts agree to ~1e-6; but an upstream difference of one ulp (summation
  // order in a norm or in attention) occasionally moves an activation across
  // a rounding boundary of its 8-bit code, and the KV row it feeds carries
  // the difference to later steps (measured: up to 0.052 on these files,
  // against llama.cpp's own 0.053-0.062 from exact math).
  return {8e-2, 0.1, false};
}

token_id argmax(const float* logits, std::size_t n) {
  return static_cast<token_id>(std::max_element(logits, logits + n) - logits);
}

/// Largest difference between our logits and llama.cpp's [id, logit] pairs.
double worst_pair_error(const float* ours, const json& pairs) {
  double worst = 0.0;
  for (const json& p : pairs.items()) {
    const auto id = static_cast<std::size_t>(p[0].integer());
    worst = std::max(worst, std::fabs(static_cast<double>(ours[id]) - p[1].number()));
  }
  return worst;
}

void check_model(std::string_view name, std::size_t threads) {
  const json ref = json::load(ruvllm::test::conformance_path(std::string(name) + ".llamacpp.json"));
  auto model = llama_model::open(ruvllm::test::conformance_path(std::string(name) + ".gguf"));
  REQUIRE(model.has_value());
  const std::size_t vocab = model->hparams().n_vocab;
  REQUIRE(vocab == static_cast<std::size_t>(ref["n_vocab"].integer()));
  const tolerance tol = tolerance_for(name);
  ruvllm::thread_pool pool(threads);
  auto ctx = llama_context<>::create(*model, pool, {.n_ctx = 256, .max_batch = 64});
  REQUIRE(ctx.has_value());

  for (const json& prompt : ref["prompts"].items()) {
    INFO(name << " prompt " << prompt["name"].string() << " threads " << threads);
    const std::vector<token_id> ids = ids_of(prompt["prompt_ids"]);
    ctx->reset();
    std::vector<float> logits(ids.size() * vocab);
    REQUIRE(ctx->eval(ids, logits, logits_for::all).has_value());

    double worst = 0.0;
    const json& top10 = prompt["prompt_top10"];
    REQUIRE(top10.size() == ids.size());
    for (std::size_t pos = 0; pos < ids.size(); ++pos)
      worst = std::max(worst, worst_pair_error(logits.data() + pos * vocab, top10[pos]));
    const float* last = logits.data() + (ids.size() - 1) * vocab;
    const json& last_ref = prompt["last_logits"];
    for (std::size_t i = 0; i < vocab; ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(last[i]) - last_ref[i].number()));

    // Teacher-forced: feed llama.cpp's greedy tokens one at a time.
    const std::vector<token_id> greedy = ids_of(prompt["greedy"]);
    const json& steps = prompt["greedy_step_top20"];
    std::vector<float> step(last, last + vocab);
    std::size_t agreed = 0, decisive = 0;
    for (std::size_t k = 0; k < greedy.size(); ++k) {
      if (k > 0) REQUIRE(ctx->eval(std::span(&greedy[k - 1], 1), step).has_value());
      worst = std::max(worst, worst_pair_error(step.data(), steps[k]));
      const double gap = steps[k][0][1].number() - steps[k][1][1].number();
      if (gap > tol.margin) {
        ++decisive;
        agreed += argmax(step.data(), vocab) == greedy[k];
      }
    }
    CAPTURE(worst, agreed, decisive);
    CHECK(worst <= tol.logit);
    CHECK(agreed == decisive);

    if (tol.exact_greedy) {
      // Free-running greedy continuation from a fresh prompt.
      ctx->reset();
      REQUIRE(ctx->eval(ids, step).has_value());
      std::vector<token_id> ours;
      for (std::size_t k = 0; k < greedy.size(); ++k) {
        ours.push_back(argmax(step.data(), vocab));
        if (k + 1 < greedy.size()) REQUIRE(ctx->eval(std::span(&ours.back(), 1), step).has_value());
      }
      CHECK(ours == greedy);
    }
  }
}

}  // namespace

TEST_CASE("forward pass matches llama.cpp on the F32 and F16 conformance models", "[model][forward]") {
  for (const char* name : {"tiny-f32", "tiny-f16", "tiny-f32-ffn172", "tiny-qwen2-f32", "tiny-bpe-qwen2-f32"}) {
    check_model(name, 2);
  }
}

TEST_CASE("forward pass matches llama.cpp on the quantized conformance models", "[model][forward]") {
  for (const char* name : {"tiny-q8_0", "tiny-q4_0", "small256-q4_k", "tiny-bpe-llama3-q8_0"}) {
    check_model(name, 2);
  }
}

TEST_CASE("forward pass: a cached prefix, chunked batches and thread counts give the same logits", "[model][forward]") {
  const json ref = json::load(ruvllm::test::conformance_path("tiny-f32.llamacpp.json"));
  const json* long_prompt = nullptr;
  for (const json& p : ref["prompts"].items())
    if (p["name"].string() == "long200_prefix_mid40") long_prompt = &p;
  REQUIRE(long_prompt != nullptr);
  const std::vector<token_id> ids = ids_of((*long_prompt)["prompt_ids"]);
  auto model = llama_model::open(ruvllm::test::conformance_path("tiny-f32.gguf"));
  REQUIRE(model.has_value());
  const std::size_t vocab = model->hparams().n_vocab;

  const auto run = [&](std::size_t threads, std::size_t max_batch, std::size_t prefix) {
    ruvllm::thread_pool pool(threads);
    auto ctx = llama_context<>::create(*model, pool, {.n_ctx = 256, .max_batch = max_batch});
    REQUIRE(ctx.has_value());
    std::vector<float> logits(vocab);
    if (prefix > 0) {
      REQUIRE(ctx->eval(std::span(ids).first(prefix), logits).has_value());
      // Whatever follows the prefix is recomputed from the cache.
      REQUIRE(ctx->eval(std::span(ids).subspan(prefix, 10), logits).has_value());
      REQUIRE(ctx->truncate(prefix).has_value());
      REQUIRE(ctx->eval(std::span(ids).subspan(prefix), logits).has_value());
    } else {
      REQUIRE(ctx->eval(ids, logits).has_value());
    }
    return logits;
  };
  const std::vector<float> whole = run(1, 256, 0);
  const json& last_ref = (*long_prompt)["last_logits"];
  for (std::size_t i = 0; i < vocab; ++i) REQUIRE(std::fabs(whole[i] - last_ref[i].number()) <= 1e-4);
  CHECK(run(2, 256, 0) == whole);  // deterministic across thread counts
  const std::vector<float> cached = run(2, 7, 40);
  double worst = 0.0;
  for (std::size_t i = 0; i < vocab; ++i) worst = std::max(worst, std::fabs(static_cast<double>(cached[i]) - whole[i]));
  CHECK(worst <= 1e-4);
}

TEST_CASE("forward pass: bad input is an error and changes nothing", "[model][forward]") {
  auto model = llama_model::open(ruvllm::test::conformance_path("tiny-f32.gguf"));
  REQUIRE(model.has_value());
  ruvllm::thread_pool pool(1);
  auto ctx = llama_context<>::create(*model, pool, {.n_ctx = 8, .max_batch = 4});
  REQUIRE(ctx.has_value());
  std::vector<float> logits(model->hparams().n_vocab);
  const std::vector<token_id> bad = {1, 448};
  auto r = ctx->eval(bad, logits);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message().find("448") != std::string::npos);
  CHECK(ctx->n_past() == 0);
  const std::vector<token_id> too_long(9, 5);
  CHECK_FALSE(ctx->eval(too_long, logits).has_value());
  std::vector<float> small(3);
  CHECK_FALSE(ctx->eval(std::span(bad).first(1), small).has_value());
  CHECK_FALSE(ctx->eval({}, logits).has_value());
  CHECK_FALSE(ctx->truncate(1).has_value());
  CHECK(ctx->n_past() == 0);
  CHECK_FALSE(llama_model::open(ruvllm::test::conformance_path("missing.gguf")).has_value());
}
