// LoRA adapters inside the forward pass, against an independent reference:
// the same model with the adapters merged into its weights (W + scale B A,
// written as a new GGUF file) must give the logits the hooked model gives,
// for the q/v policy and for every projection. A fresh adapter (B = 0)
// changes nothing, bit for bit; an adapter update makes the cached KV stale,
// and generation re-evaluates the prompt under the new weights.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/model_test_support.hpp"
#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/model/generate.hpp"
#include "ruvllm/model/gguf_writer.hpp"
#include "ruvllm/model/llama.hpp"
#include "ruvllm/sona/lora_hook.hpp"
#include "support/rng.hpp"

namespace lora_hook_test {

namespace {

namespace sona = ruvllm::sona;
namespace md = ruvllm::model;

const char* const suffix[md::projection_count] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                                  "ffn_gate", "ffn_up", "ffn_down"};

// Gives every adapted projection a nonzero B, so the hook changes the logits.
template <class Hook>
void randomize(Hook& hook, ruvllm::test::rng& gen) {
  for (std::size_t p = 0; p < md::projection_count; ++p)
    if (auto* a = hook.adapter(static_cast<md::projection>(p))) {
      for (std::size_t l = 0; l < a->options().layers; ++l)
        for (float& v : a->b(l)) v = gen.normal(0.0f, 0.05f);
      a->touch();
    }
}

// The model with each adapter merged into its F32 weights: W + scale B A.
template <class Hook>
md::llama_model merged_model(const md::llama_model& base, const Hook& hook) {
  md::gguf_writer w;
  for (const auto& kv : base.file().metadata()) REQUIRE(w.add_value(kv.key, kv.value));
  for (const auto& t : base.file().tensors()) {
    std::vector<std::byte> data(t.data, t.data + t.n_bytes);
    const std::string name(t.name);
    for (std::size_t p = 0; p < md::projection_count; ++p) {
      const auto* a = hook.adapter(static_cast<md::projection>(p));
      if (a == nullptr) continue;
      for (std::size_t l = 0; l < a->options().layers; ++l) {
        if (name != "blk." + std::to_string(l) + "." + suffix[p] + ".weight") continue;
        REQUIRE(t.type == ruvllm::gguf_type::f32);
        const std::size_t cols = t.ne[0], rows = t.ne[1], rank = a->rank();
        REQUIRE(cols == a->options().in_dim);
        REQUIRE(rows == a->options().out_dim);
        auto* wt = reinterpret_cast<float*>(data.data());
        const auto A = a->a(l), Bt = a->b(l);  // A: rank x cols; B stored as rank rows of out
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t c = 0; c < cols; ++c) {
            double delta = 0;
            for (std::size_t k = 0; k < rank; ++k) delta += double(Bt[k * rows + r]) * A[k * cols + c];
            wt[r * cols + c] += static_cast<float>(a->options().scale * delta);
          }
      }
    }
    REQUIRE(w.add_tensor(t.name, t.type, std::span<const std::uint64_t>(t.ne.data(), t.n_dims), data));
  }
  // A parsed file points into its bytes: they live as long as the test program.
  static std::vector<std::vector<std::byte>> keep;
  keep.push_back(w.to_bytes().value());
  auto file = md::gguf_file::parse(keep.back(), "merged").value();
  return md::llama_model::load(std::move(file)).value();
}

template <class Targets>
void check_against_merged(std::uint64_t seed) {
  auto base = md::llama_model::open(ruvllm::test::conformance_path("tiny-f32.gguf")).value();
  ruvllm::thread_pool pool(2);
  using hook_t = sona::lora_hook<Targets, sona::base_lora<>>;
  auto hook = hook_t::create(base.hparams(), {.rank = 4, .scale = 0.5f}).value();
  ruvllm::test::rng gen(seed);
  randomize(hook, gen);
  auto merged = merged_model(base, hook);

  auto hooked =
      md::llama_context<ruvllm::backend::highway, md::default_kv, hook_t>::create(base, pool, {.n_ctx = 64}).value();
  hooked.set_hook(&hook);
  auto plain = md::llama_context<>::create(merged, pool, {.n_ctx = 64}).value();
  auto unadapted = md::llama_context<>::create(base, pool, {.n_ctx = 64}).value();
  const std::vector<md::token_id> prompt = {1, 15, 27, 3, 44, 9, 12, 30};
  const std::size_t vocab = base.hparams().n_vocab;
  std::vector<float> a(prompt.size() * vocab), b(a.size()), c(a.size());
  REQUIRE(hooked.eval(prompt, a, md::logits_for::all));
  REQUIRE(plain.eval(prompt, b, md::logits_for::all));
  REQUIRE(unadapted.eval(prompt, c, md::logits_for::all));
  double worst = 0, moved = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
    moved = std::max(moved, std::fabs(double(a[i]) - c[i]));
  }
  INFO("largest |hooked - merged| " << worst << ", largest change from the adapters " << moved);
  CHECK(moved > 1e-2);  // the adapters matter
  CHECK(worst < 1e-4);  // and do what merging them into the weights does
  // Decoding one more token through the cached KV agrees as well.
  const md::token_id next = 7;
  std::vector<float> la(vocab), lb(vocab);
  REQUIRE(hooked.eval(std::span(&next, 1), la));
  REQUIRE(plain.eval(std::span(&next, 1), lb));
  for (std::size_t i = 0; i < vocab; ++i) REQUIRE(std::fabs(la[i] - lb[i]) < 1e-4);
}

}  // namespace

TEST_CASE("lora hook: q/v adapters in the forward pass equal the merged weights", "[sona][lora_hook]") {
  check_against_merged<sona::lora_targets::qv>(801);
}

TEST_CASE("lora hook: adapters on every projection equal the merged weights", "[sona][lora_hook]") {
  check_against_merged<sona::lora_targets::all>(802);
}

TEST_CASE("lora hook: fresh adapters change nothing; updates invalidate the cached KV", "[sona][lora_hook]") {
  auto model = md::llama_model::open(ruvllm::test::conformance_path("tiny-f32.gguf")).value();
  ruvllm::thread_pool pool(1);
  using hook_t = sona::lora_hook<sona::lora_targets::qkvo>;
  auto hook = hook_t::create(model.hparams(), {.rank = 2}).value();
  CHECK(hook.adapter(md::projection::gate) == nullptr);
  auto ctx =
      md::llama_context<ruvllm::backend::highway, md::default_kv, hook_t>::create(model, pool, {.n_ctx = 64}).value();
  auto plain = md::llama_context<>::create(model, pool, {.n_ctx = 64}).value();
  const std::vector<md::token_id> prompt = {1, 5, 9, 22, 31};
  const std::size_t vocab = model.hparams().n_vocab;
  std::vector<float> a(vocab), b(vocab);
  ctx.set_hook(&hook);
  REQUIRE(ctx.eval(prompt, a));
  REQUIRE(plain.eval(prompt, b));
  CHECK(std::memcmp(a.data(), b.data(), vocab * sizeof(float)) == 0);  // B = 0: bit for bit
  CHECK(ctx.n_past() == prompt.size());

  // An update changes the key: the cached positions are stale.
  ruvllm::test::rng gen(803);
  randomize(hook, gen);
  CHECK(ctx.n_past() == 0);
  const md::token_id next = 4;
  CHECK_FALSE(ctx.eval(std::span(&next, 1), a));
  CHECK_FALSE(ctx.truncate(3));
  // generate() notices and evaluates the whole prompt again.
  auto smp = md::sampler::create({.temperature = 0.0f}, vocab).value();
  std::vector<md::token_id> cached(prompt.begin(), prompt.end());
  const auto st = md::generate(ctx, smp, prompt, cached, {.max_tokens = 2}, [](md::token_id) { return true; });
  REQUIRE(st);
  CHECK(st->reused_tokens == 0);
  CHECK(st->prompt_tokens == prompt.size());
  // Detaching the hook is a change too.
  ctx.set_hook(nullptr);
  CHECK(ctx.n_past() == 0);
  ctx.reset();
  REQUIRE(ctx.eval(prompt, a));
  CHECK(std::memcmp(a.data(), b.data(), vocab * sizeof(float)) == 0);
}

TEST_CASE("lora hook: every KV sequence keeps the key it was computed under", "[sona][lora_hook]") {
  auto model = md::llama_model::open(ruvllm::test::conformance_path("tiny-f32.gguf")).value();
  ruvllm::thread_pool pool(1);
  using hook_t = sona::lora_hook<sona::lora_targets::qv>;
  auto hook = hook_t::create(model.hparams(), {.rank = 2}).value();
  auto ctx = md::llama_context<ruvllm::backend::highway, md::default_kv, hook_t>::create(
                 model, pool, {.n_ctx = 64, .kv_sequences = 3})
                 .value();
  const std::vector<md::token_id> prompt = {1, 5, 9, 22, 31};
  std::vector<float> logits(model.hparams().n_vocab);
  ctx.set_hook(&hook);
  REQUIRE(ctx.eval(prompt, logits));
  const auto first = ctx.sequence();
  const auto sibling = ctx.fork().value();  // computed under the same key

  ruvllm::test::rng gen(804);
  randomize(hook, gen);
  // The current sequence is refreshed under the new key...
  REQUIRE(ctx.truncate(0));
  REQUIRE(ctx.eval(prompt, logits));
  CHECK(ctx.n_past() == prompt.size());
  // ...its fork still holds positions of the old weights and stays stale,
  REQUIRE(ctx.use_sequence(sibling));
  CHECK(ctx.n_past() == 0);
  const md::token_id next = 4;
  CHECK_FALSE(ctx.eval(std::span(&next, 1), logits));
  // while switching back finds the refreshed one current.
  REQUIRE(ctx.use_sequence(first));
  CHECK(ctx.n_past() == prompt.size());
  REQUIRE(ctx.eval(std::span(&next, 1), logits));
  // A fork made now inherits the new key.
  const auto fresh = ctx.fork().value();
  REQUIRE(ctx.use_sequence(fresh));
  CHECK(ctx.n_past() == prompt.size() + 1);
}

}  // namespace lora_hook_test
