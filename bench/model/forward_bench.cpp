// The llama forward pass on a synthetic model of realistic layer shapes
// (dim 1024, 4 layers, 16 heads / 4 KV heads, FFN 2816, vocabulary 8192;
// ~62 M parameters), written to GGUF in memory with every 2-D weight in one
// storage type, then loaded like any file:
//  * model/decode/<type>/1024x4/threads:N: one token at position 128; GBps
//    and bw_frac count the weight bytes a decode step streams (all of them,
//    the output matrix included), against the STREAM-like probe of the same
//    process: decode is memory-bound, so bw_frac is its efficiency;
//  * model/prefill/<type>/128tok/threads:N: 128 prompt tokens in one call,
//    reported as tokens_per_s.
// Models are built on first use, so a filtered run pays only for its rows.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ruvllm/ruvllm.hpp"
#include "support/bench.hpp"

namespace {

namespace rb = ruvllm::bench;
using namespace ruvllm::model;
using ruvllm::gguf_type;

constexpr std::size_t dim = 1024, layers = 4, heads = 16, kv_heads = 4, ffn = 2816, vocab = 8192, context_len = 512;

struct built_model {
  std::vector<std::byte> image;
  std::unique_ptr<llama_model> model;
  double weight_bytes = 0.0;
};

std::vector<std::byte> encode(gguf_type type, const std::vector<float>& w) {
  using ops = ruvllm::kernels::ops<ruvllm::backend::highway>;
  const std::size_t n = w.size();
  std::vector<std::byte> out;
  const auto blocks = [&](auto block, std::size_t per_block) {
    out.resize(n / per_block * sizeof(block));
    return reinterpret_cast<decltype(block)*>(out.data());
  };
  switch (type) {
    case gguf_type::f16: ops::convert_f32_to_f16(w.data(), blocks(ruvllm::f16{}, 1), n); break;
    case gguf_type::q8_0: ops::quantize_q8_0(w.data(), blocks(ruvllm::block_q8_0{}, 32), n); break;
    case gguf_type::q4_0: ops::quantize_q4_0(w.data(), blocks(ruvllm::block_q4_0{}, 32), n); break;
    case gguf_type::q4_k: ops::quantize_q4_k(w.data(), blocks(ruvllm::block_q4_k{}, 256), n); break;
    default: rb::detail::fail("unsupported benchmark weight type");
  }
  return out;
}

built_model build(gguf_type type) {
  built_model b;
  gguf_writer w;
  std::mt19937_64 rng(7);
  const auto ok = [](const ruvllm::result<void>& r) {
    if (!r) rb::detail::fail(r.error().describe());
  };
  ok(w.add_string("general.architecture", "llama"));
  ok(w.add("llama.embedding_length", static_cast<std::uint32_t>(dim)));
  ok(w.add("llama.block_count", static_cast<std::uint32_t>(layers)));
  ok(w.add("llama.attention.head_count", static_cast<std::uint32_t>(heads)));
  ok(w.add("llama.attention.head_count_kv", static_cast<std::uint32_t>(kv_heads)));
  ok(w.add("llama.feed_forward_length", static_cast<std::uint32_t>(ffn)));
  ok(w.add("llama.context_length", static_cast<std::uint32_t>(context_len)));
  ok(w.add("llama.attention.layer_norm_rms_epsilon", 1e-5f));
  const auto matrix = [&](const std::string& name, std::size_t rows, std::size_t cols) {
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
    std::vector<float> values(rows * cols);
    for (float& v : values) v = normal(rng);
    const std::vector<std::byte> bytes = encode(type, values);
    b.weight_bytes += static_cast<double>(bytes.size());
    const std::uint64_t ne[2] = {cols, rows};
    ok(w.add_tensor(name, type, ne, bytes));
  };
  const auto norm = [&](const std::string& name) {
    std::vector<float> ones(dim, 1.0f);
    const std::uint64_t ne[1] = {dim};
    ok(w.add_tensor(name, gguf_type::f32, ne, std::as_bytes(std::span(ones))));
  };
  matrix("token_embd.weight", vocab, dim);
  b.weight_bytes = 0.0;  // a decode step reads one embedding row, not the table
  norm("output_norm.weight");
  matrix("output.weight", vocab, dim);
  const std::size_t hd = dim / heads;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight");
    norm(p + "ffn_norm.weight");
    matrix(p + "attn_q.weight", dim, dim);
    matrix(p + "attn_k.weight", kv_heads * hd, dim);
    matrix(p + "attn_v.weight", kv_heads * hd, dim);
    matrix(p + "attn_output.weight", dim, dim);
    matrix(p + "ffn_gate.weight", ffn, dim);
    matrix(p + "ffn_up.weight", ffn, dim);
    matrix(p + "ffn_down.weight", dim, ffn);
  }
  auto image = w.to_bytes();
  if (!image) rb::detail::fail(image.error().describe());
  b.image = std::move(*image);
  auto file = gguf_file::parse(b.image, "synthetic");
  if (!file) rb::detail::fail(file.error().describe());
  auto model = llama_model::load(std::move(*file));
  if (!model) rb::detail::fail(model.error().describe());
  b.model = std::make_unique<llama_model>(std::move(*model));
  return b;
}

built_model& model_of(gguf_type type) {
  static std::map<gguf_type, built_model> models;
  auto it = models.find(type);
  if (it == models.end()) it = models.emplace(type, build(type)).first;
  return it->second;
}

ruvllm::thread_pool& pool(unsigned threads) {
  static ruvllm::thread_pool one(1), two(2);
  return threads == 1 ? one : two;
}

std::vector<token_id> tokens(std::size_t n) {
  std::vector<token_id> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<token_id>((i * 2654435761u) % vocab);
  return t;
}

void register_rows(gguf_type type, const char* precision) {
  for (const unsigned threads : {1u, 2u}) {
    const std::string decode = rb::row_name("model", "decode", precision, rb::shape({dim, layers}), threads);
    benchmark::RegisterBenchmark(decode.c_str(), [type, threads](benchmark::State& state) {
      built_model& m = model_of(type);
      auto ctx = llama_context<>::create(*m.model, pool(threads), {.n_ctx = context_len, .max_batch = 128});
      if (!ctx) rb::detail::fail(ctx.error().describe());
      std::vector<float> logits(vocab);
      const std::vector<token_id> prompt = tokens(128);
      if (!ctx->eval(prompt, logits)) rb::detail::fail("prefill failed");
      const token_id next = 17;
      rb::timed_loop(
          state,
          [&] {
            if (!ctx->eval(std::span(&next, 1), logits) || !ctx->truncate(128)) rb::detail::fail("decode failed");
            benchmark::DoNotOptimize(logits.data());
          },
          threads);
      const double seconds = rb::seconds_per_iteration(state);
      state.counters["tokens_per_s"] = benchmark::Counter(1.0 / seconds);
      rb::set_bandwidth_counters(state, m.weight_bytes, threads);
    });
    const std::string prefill = rb::row_name("model", "prefill", precision, "128tok", threads);
    benchmark::RegisterBenchmark(prefill.c_str(), [type, threads](benchmark::State& state) {
      built_model& m = model_of(type);
      auto ctx = llama_context<>::create(*m.model, pool(threads), {.n_ctx = context_len, .max_batch = 128});
      if (!ctx) rb::detail::fail(ctx.error().describe());
      std::vector<float> logits(vocab);
      const std::vector<token_id> prompt = tokens(128);
      rb::timed_loop(
          state,
          [&] {
            ctx->reset();
            if (!ctx->eval(prompt, logits)) rb::detail::fail("prefill failed");
            benchmark::DoNotOptimize(logits.data());
          },
          threads);
      state.counters["tokens_per_s"] = benchmark::Counter(128.0 / rb::seconds_per_iteration(state));
    });
  }
}

[[maybe_unused]] const bool registered = [] {
  register_rows(gguf_type::f16, "f16");
  register_rows(gguf_type::q8_0, "q8_0");
  register_rows(gguf_type::q4_0, "q4_0");
  register_rows(gguf_type::q4_k, "q4_k");
  return true;
}();

}  // namespace
