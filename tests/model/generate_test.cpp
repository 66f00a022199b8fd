// generate(): greedy output equals llama.cpp's on a conformance model, cached
// prefixes are reused, and every way of stopping works; the stop-sequence
// matcher never shows text that becomes a stop sequence.

#include <atomic>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "model/model_test_support.hpp"
#include "ruvllm/model/generate.hpp"
#include "support/json.hpp"

namespace generate_test {

namespace {

using namespace ruvllm::model;
using ruvllm::test::ids_of;
using ruvllm::test::json;

sampler greedy_sampler(std::size_t vocab) {
  sampler_params p;
  p.temperature = 0.0f;
  return std::move(sampler::create(p, vocab).value());
}

}  // namespace

TEST_CASE("generate: greedy continuation, prefix reuse, stop tokens, callback stop, cancellation",
          "[model][generate]") {
  const json ref = json::load(ruvllm::test::conformance_path("tiny-f32.llamacpp.json"));
  const json* fox = nullptr;
  for (const json& p : ref["prompts"].items())
    if (p["name"].string() == "text_fox") fox = &p;
  REQUIRE(fox != nullptr);
  const std::vector<token_id> prompt = ids_of((*fox)["prompt_ids"]);
  const std::vector<token_id> expected = ids_of((*fox)["greedy"]);

  auto model = llama_model::open(ruvllm::test::conformance_path("tiny-f32.gguf"));
  REQUIRE(model.has_value());
  const std::size_t vocab = model->hparams().n_vocab;
  ruvllm::thread_pool pool(2);
  auto ctx = llama_context<>::create(*model, pool, {.n_ctx = 128});
  REQUIRE(ctx.has_value());

  std::vector<token_id> cached, out;
  sampler s = greedy_sampler(vocab);
  generate_options o;
  o.max_tokens = 16;
  auto st = generate(*ctx, s, prompt, cached, o, [&](token_id t) {
    out.push_back(t);
    return true;
  });
  REQUIRE(st.has_value());
  CHECK(st->reason == stop_reason::max_tokens);
  CHECK(st->generated_tokens == 16);
  CHECK(st->prompt_tokens == prompt.size());
  CHECK(std::vector<token_id>(expected.begin(), expected.begin() + 16) == out);
  CHECK(cached.size() == prompt.size() + 15);  // the last sampled token is not evaluated yet

  // A follow-up prompt that extends the conversation reuses the cache.
  std::vector<token_id> longer = prompt;
  longer.insert(longer.end(), out.begin(), out.end());
  std::vector<token_id> more;
  auto st2 = generate(*ctx, s, longer, cached, o, [&](token_id t) {
    more.push_back(t);
    return more.size() < 4;
  });
  REQUIRE(st2.has_value());
  CHECK(st2->reused_tokens == prompt.size() + 15);
  CHECK(st2->prompt_tokens == 1);
  CHECK(st2->reason == stop_reason::callback);
  CHECK(more == std::vector<token_id>(expected.begin() + 16, expected.begin() + 20));

  // A stop token ends generation before it is reported.
  const token_id stop = expected[5];
  const auto first_stop =
      static_cast<std::size_t>(std::find(expected.begin(), expected.end(), stop) - expected.begin());
  cached.clear();
  ctx->reset();
  std::vector<token_id> until_stop;
  o.stop_tokens = std::span(&stop, 1);
  auto st3 = generate(*ctx, s, prompt, cached, o, [&](token_id t) {
    until_stop.push_back(t);
    return true;
  });
  REQUIRE(st3.has_value());
  CHECK(st3->reason == stop_reason::stop_token);
  CHECK(until_stop.size() == first_stop);

  std::atomic<bool> cancel{true};
  o.cancel = &cancel;
  auto st4 = generate(*ctx, s, prompt, cached, o, [](token_id) { return true; });
  REQUIRE(st4.has_value());
  CHECK(st4->reason == stop_reason::cancelled);
  CHECK(st4->generated_tokens == 0);

  CHECK_FALSE(generate(*ctx, s, std::span<const token_id>(), cached, o, [](token_id) { return true; }).has_value());
}

TEST_CASE("stop_sequence_matcher holds back possible stop prefixes", "[model][generate]") {
  stop_sequence_matcher m({"world", "###"});
  std::string shown;
  shown += m.feed("Hel");
  shown += m.feed("lo wor");
  CHECK(shown == "Hello ");
  CHECK_FALSE(m.stopped());
  shown += m.feed("ld and more");
  CHECK(m.stopped());
  CHECK(shown == "Hello ");
  CHECK(m.feed("x").empty());

  stop_sequence_matcher h({"###"});
  CHECK(h.feed("a#") == "a");
  CHECK(h.feed("#") == "");
  CHECK(h.feed("b") == "##b");
  CHECK(h.feed("c#") == "c");
  CHECK(h.flush() == "#");

  stop_sequence_matcher none;
  CHECK(none.feed("anything") == "anything");
}

}  // namespace generate_test
