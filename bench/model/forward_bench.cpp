// The llama forward pass on synthetic GGUF models the benchmark writes with
// gguf_writer, at the shapes of a 110M model (dim 768, 12 layers, 12 heads,
// FFN 2048, vocabulary 32000) and a 1B model (dim 2048, 16 layers, 32 heads /
// 8 KV heads, FFN 8192), every 2-D weight in one storage type (f16, q8_0,
// q4_0, iq4_nl) or in the K-quant mixes of llama.cpp's Q2_K (q2_k: Q2_K / Q3_K /
// Q4_K / Q6_K), Q3_K_M (q3_k_m: Q3_K / Q4_K / Q5_K / Q6_K), Q4_K_M (q4_k_m:
// Q4_K / Q6_K) and Q5_K_M (q5_k_m: Q5_K / Q6_K), at 1 and 2 threads:
//  * model/decode/<type>/<shape>/threads:N: one token at position 128;
//    tok_s, and GBps / bw_frac of the weight bytes a decode step streams
//    (all of them, the output matrix included) against the STREAM-like read
//    probe taken just before and just after the row (probe_GBps, their
//    mean) -- decode is memory-bound, so bw_frac is its efficiency against
//    the bandwidth limit of the same seconds -- and the calling core's clock
//    at the same moments (core_GHz; support/clock.hpp); cached_GBps, the
//    rate of the same GEMV over matrices already in L2 (cached_gemv_gbps,
//    also just before and after the row: what the cores can do at all), and
//    ceiling_frac, GBps against the lower of the two limits; the 2-thread
//    row also exports solo_frac and taken_per_tok (below);
//  * model/pp128 and model/pp512/<type>/<shape>/threads:N: a 128- or
//    512-token prompt in one call, tok_s and core_GHz (prefill is bound by
//    the cores, so its rate follows their clock);
//  * model/decode_cotenant/<type>/<shape>/threads:N: decode while another
//    process spins on the last CPU (CPU 1 on two cores; support/cotenant.hpp),
//    the situation in which llama.cpp's 2-thread decode collapses to ~1
//    tok/s. Timed on the wall clock at both thread counts (the co-tenant's
//    share of our CPU must count); the 2-thread row exports solo_frac (jobs
//    the pool ran without its workers) and taken_per_tok (chunks per token
//    the caller took over);
//  * model/decode_cotenant_paired/<type>/<shape>/threads:2: the same
//    situation, 1-thread and 2-thread decode alternating in 250 ms windows
//    under one co-tenant (12 pairs, the first of each pair alternating).
//    vs_threads1 is the median of the pairs' 2-thread / 1-thread tok/s
//    (>= 1: a second thread never hurts), vs_threads1_min the worst pair,
//    solo_frac as for the 2-thread decode row.
//    Separate rows a minute apart differ by more than the effect: the
//    guest's vCPUs change speed from minute to minute.
// Models are built on first use (the 1B f16 image is ~2.2 GB), so a filtered
// run pays only for its rows.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ruvllm/ruvllm.hpp"
#include "support/bench.hpp"
#include "support/cotenant.hpp"

namespace {

namespace rb = ruvllm::bench;
using namespace ruvllm::model;
using ruvllm::gguf_type;

struct model_shape {
  const char* name;
  std::size_t dim, layers, heads, kv_heads, ffn, vocab;
};
constexpr model_shape shape_110m{"110M", 768, 12, 12, 12, 2048, 32000};
constexpr model_shape shape_1b{"1B", 2048, 16, 32, 8, 8192, 32000};
constexpr std::size_t context_len = 1024;

struct built_model {
  ruvllm::memory::page_memory image;
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
    case gguf_type::iq4_nl: ops::quantize_iq4_nl(w.data(), blocks(ruvllm::block_iq4_nl{}, 32), n); break;
    case gguf_type::q2_k: ops::quantize_q2_k(w.data(), blocks(ruvllm::block_q2_k{}, 256), n); break;
    case gguf_type::q3_k: ops::quantize_q3_k(w.data(), blocks(ruvllm::block_q3_k{}, 256), n); break;
    case gguf_type::iq4_xs: ops::quantize_iq4_xs(w.data(), blocks(ruvllm::block_iq4_xs{}, 256), n); break;
    case gguf_type::q4_k: ops::quantize_q4_k(w.data(), blocks(ruvllm::block_q4_k{}, 256), n); break;
    case gguf_type::q5_k: ops::quantize_q5_k(w.data(), blocks(ruvllm::block_q5_k{}, 256), n); break;
    case gguf_type::q6_k: ops::quantize_q6_k(w.data(), blocks(ruvllm::block_q6_k{}, 256), n); break;
    default: rb::detail::fail("unsupported benchmark weight type");
  }
  return out;
}

/// The matrices of a llama layer (and the output matrix), as llama.cpp's
/// quantizer tells them apart.
enum class role { output, attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down };

/// The stored type of a matrix of layer l in the model of `type`: `type`
/// itself, or for a K-quant the type llama.cpp's mix of that name gives a
/// llama model's matrix (llama_tensor_get_type): Q6_K for the output, and
/// more bits for attn_v, ffn_down and, in Q2_K and Q3_K_M, attn_output
/// (IQ4_XS without an importance matrix: Q5_K attn_v under GQA of 4 or more,
/// Q5_K ffn_down in the first eighth of the layers).
gguf_type stored_type(gguf_type type, role r, std::size_t l, const model_shape& sh) {
  const std::size_t layers = sh.layers;
  const bool more_bits = l < layers / 8 || l >= 7 * layers / 8 || (l - layers / 8) % 3 == 2;
  switch (type) {
    case gguf_type::q2_k:
      if (r == role::output) return gguf_type::q6_k;
      if (r == role::attn_v) return sh.heads / sh.kv_heads >= 4 ? gguf_type::q4_k : gguf_type::q3_k;
      if (r == role::ffn_down || r == role::attn_output) return gguf_type::q3_k;
      return type;
    case gguf_type::q3_k:
      if (r == role::output) return gguf_type::q6_k;
      if (r == role::attn_v) return l < 2 ? gguf_type::q5_k : gguf_type::q4_k;
      if (r == role::ffn_down) return l < layers / 16 ? gguf_type::q5_k : gguf_type::q4_k;
      if (r == role::attn_output) return gguf_type::q4_k;
      return type;
    case gguf_type::iq4_xs:
      if (r == role::output) return gguf_type::q6_k;
      if (r == role::attn_v && sh.heads / sh.kv_heads >= 4) return gguf_type::q5_k;
      if (r == role::ffn_down && l < layers / 8) return gguf_type::q5_k;
      return type;
    case gguf_type::q4_k:
    case gguf_type::q5_k:
      if (r == role::output) return gguf_type::q6_k;
      if ((r == role::attn_v || r == role::ffn_down) && more_bits) return gguf_type::q6_k;
      return type;
    default: return type;
  }
}

built_model build(gguf_type type, const model_shape& sh) {
  const std::size_t dim = sh.dim, layers = sh.layers, heads = sh.heads, kv_heads = sh.kv_heads, ffn = sh.ffn,
                    vocab = sh.vocab;
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
  const auto matrix = [&](const std::string& name, std::size_t rows, std::size_t cols, gguf_type stored) {
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
    std::vector<float> values(rows * cols);
    for (float& v : values) v = normal(rng);
    const std::vector<std::byte> bytes = encode(stored, values);
    b.weight_bytes += static_cast<double>(bytes.size());
    const std::uint64_t ne[2] = {cols, rows};
    ok(w.add_tensor(name, stored, ne, bytes));
  };
  const auto norm = [&](const std::string& name) {
    std::vector<float> ones(dim, 1.0f);
    const std::uint64_t ne[1] = {dim};
    ok(w.add_tensor(name, gguf_type::f32, ne, std::as_bytes(std::span(ones))));
  };
  matrix("token_embd.weight", vocab, dim, type);
  b.weight_bytes = 0.0;  // a decode step reads one embedding row, not the table
  norm("output_norm.weight");
  matrix("output.weight", vocab, dim, stored_type(type, role::output, 0, sh));
  const std::size_t hd = dim / heads;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight");
    norm(p + "ffn_norm.weight");
    const auto as = [&](role r) { return stored_type(type, r, l, sh); };
    matrix(p + "attn_q.weight", dim, dim, as(role::attn_q));
    matrix(p + "attn_k.weight", kv_heads * hd, dim, as(role::attn_k));
    matrix(p + "attn_v.weight", kv_heads * hd, dim, as(role::attn_v));
    matrix(p + "attn_output.weight", dim, dim, as(role::attn_output));
    matrix(p + "ffn_gate.weight", ffn, dim, as(role::ffn_gate));
    matrix(p + "ffn_up.weight", ffn, dim, as(role::ffn_up));
    matrix(p + "ffn_down.weight", dim, ffn, as(role::ffn_down));
  }
  auto image = w.to_bytes();
  if (!image) rb::detail::fail(image.error().describe());
  // The weights are read in place from the image: in 2 MiB pages, as a
  // model file's mapping (rb::huge_page_bytes).
  b.image = rb::huge_page_bytes(image->size());
  std::copy(image->begin(), image->end(), b.image.data());
  auto file = gguf_file::parse(std::span<const std::byte>(b.image.data(), image->size()), "synthetic");
  if (!file) rb::detail::fail(file.error().describe());
  auto model = llama_model::load(std::move(*file));
  if (!model) rb::detail::fail(model.error().describe());
  b.model = std::make_unique<llama_model>(std::move(*model));
  return b;
}

built_model& model_of(gguf_type type, const model_shape& sh) {
  static std::map<std::pair<gguf_type, std::string>, built_model> models;
  const auto key = std::make_pair(type, std::string(sh.name));
  auto it = models.find(key);
  if (it == models.end()) it = models.emplace(key, build(type, sh)).first;
  return it->second;
}

ruvllm::thread_pool& pool(unsigned threads) {
  static ruvllm::thread_pool one(1), two(2);
  return threads == 1 ? one : two;
}

/// The rate, in GB/s of weights, at which the decode GEMV of `type` runs over
/// matrices of `cols` columns that are already in the cores' L2: each of
/// `threads` threads passes over a 256 KiB matrix of its own again and again
/// (the best of three runs of 512 MiB per thread). It is what the cores can
/// do with no memory traffic at all; where it falls below the memory probe,
/// decode is bound by the cores and bw_frac cannot reach 1.
double cached_gemv_gbps(gguf_type type, std::size_t cols, unsigned threads) {
  using ops = ruvllm::kernels::ops<ruvllm::backend::highway>;
  constexpr std::size_t matrix_bytes = 256 * 1024, bytes_per_run = 512u << 20;
  struct cached_input {
    std::vector<std::byte> weights[2];
    weight_matrix m;
    ruvllm::aligned_buffer<float> x;
    std::vector<ruvllm::f16> x16;
    std::vector<ruvllm::kernels::q8_0_quad> quads;
    std::vector<ruvllm::block_q8_k> q8_k;
    std::vector<float> y[2];
  };
  static std::map<std::pair<gguf_type, std::size_t>, cached_input> inputs;
  auto it = inputs.find({type, cols});
  if (it == inputs.end()) {
    cached_input in;
    const auto* traits = ruvllm::model::find_gguf_type(static_cast<std::uint32_t>(type));
    if (traits == nullptr) rb::detail::fail("unsupported benchmark weight type");
    const std::size_t row_bytes = traits->row_bytes(cols).value();
    const std::size_t rows = std::max<std::size_t>(1, matrix_bytes / row_bytes);
    for (std::size_t t = 0; t < 2; ++t) {
      const auto random = rb::random_floats(rows * cols, 31 + t);
      std::vector<float> w(random.data(), random.data() + rows * cols);
      for (float& v : w) v *= 0.05f;
      in.weights[t] = encode(type, w);
      in.y[t].resize(rows);
    }
    in.m = {type, nullptr, rows, cols, row_bytes};
    in.x = rb::random_floats(cols, 33);
    in.x16.resize(cols);
    ops::convert_f32_to_f16(in.x.data(), in.x16.data(), cols);
    in.quads.resize(ruvllm::kernels::q8_0_quads(cols));
    ops::quantize_q8_0_quads(in.x.data(), in.quads.data(), cols);
    in.q8_k.resize(cols / 256);
    if (cols % 256 == 0) ops::quantize_q8_k(in.x.data(), in.q8_k.data(), cols);
    it = inputs.emplace(std::make_pair(type, cols), std::move(in)).first;
  }
  cached_input& in = it->second;
  const detail::prepared_input prepared{in.x.data(), in.x16.data(), nullptr, in.quads.data(), in.q8_k.data()};
  const std::size_t matrix = in.m.rows * in.m.row_bytes, passes = bytes_per_run / matrix;
  double best = 0.0;
  for (int run = 0; run < 3; ++run) {
    const double start = rb::detail::clock_seconds(threads);
    pool(threads).run(threads, 1, [&](std::size_t begin, std::size_t end, std::size_t) {
      for (std::size_t t = begin; t < end; ++t) {
        weight_matrix m = in.m;
        m.data = in.weights[t].data();
        for (std::size_t p = 0; p < passes; ++p)
          detail::matrix_rows<ruvllm::backend::highway>(m, prepared, 0, m.rows, in.y[t].data());
      }
    });
    const double seconds = rb::detail::clock_seconds(threads) - start;
    best = std::max(best, static_cast<double>(threads * passes * matrix) / seconds / 1e9);
  }
  return best;
}

std::vector<token_id> tokens(std::size_t n, std::size_t vocab) {
  std::vector<token_id> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<token_id>((i * 2654435761u) % vocab);
  return t;
}

/// A context on pool(threads) holding a 128-token prompt: decode steps then
/// run at position 128.
llama_context<> decoding_context(built_model& m, const model_shape& sh, unsigned threads, std::vector<float>& logits) {
  auto ctx = llama_context<>::create(*m.model, pool(threads), {.n_ctx = context_len, .max_batch = 512});
  if (!ctx) rb::detail::fail(ctx.error().describe());
  if (!ctx->eval(tokens(128, sh.vocab), logits)) rb::detail::fail("prefill failed");
  return std::move(*ctx);
}

/// One decode step at position 128 (the position is given back afterwards).
void decode_step(llama_context<>& ctx, std::vector<float>& logits) {
  const token_id next = 17;
  if (!ctx.eval(std::span(&next, 1), logits) || !ctx.truncate(128)) rb::detail::fail("decode failed");
  benchmark::DoNotOptimize(logits.data());
}

/// The share of a pool's jobs between two readings of its stats that it ran
/// without its workers (adaptive: measuring windows, or the workers lost).
double solo_share(const ruvllm::thread_pool_stats& before, const ruvllm::thread_pool_stats& after) {
  const double jobs = static_cast<double>(after.jobs - before.jobs);
  return jobs > 0 ? static_cast<double>(after.solo_jobs - before.solo_jobs) / jobs : 0.0;
}

/// The paired co-tenant row runs window_pairs pairs of one 1-thread and one
/// 2-thread window, each paired_window long.
constexpr int window_pairs = 12;
constexpr std::chrono::milliseconds paired_window{250};

/// Tokens per second of `ctx` decoding for one window of wall time.
double decode_rate(llama_context<>& ctx, std::vector<float>& logits) {
  const auto start = std::chrono::steady_clock::now();
  std::size_t tokens = 0;
  std::chrono::duration<double> elapsed{};
  do {
    decode_step(ctx, logits);
    ++tokens;
    elapsed = std::chrono::steady_clock::now() - start;
  } while (elapsed < paired_window);
  return static_cast<double>(tokens) / elapsed.count();
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

void register_paired_cotenant_row(gguf_type type, const char* precision, const model_shape& sh) {
  const std::string name = rb::join_name({"model", "decode_cotenant_paired", precision, sh.name}, 2);
  benchmark::RegisterBenchmark(name.c_str(),
                               [type, &sh](benchmark::State& state) {
                                 built_model& m = model_of(type, sh);
                                 std::vector<float> logits(sh.vocab);
                                 llama_context<> one = decoding_context(m, sh, 1, logits);
                                 llama_context<> two = decoding_context(m, sh, 2, logits);
                                 const rb::cotenant busy;
                                 // Both pools see the co-tenant before anything counts: the 2-thread
                                 // pool's adaptive probe decides with the co-tenant present.
                                 (void)decode_rate(one, logits);
                                 (void)decode_rate(two, logits);
                                 std::vector<double> rate1, rate2, ratio;
                                 const ruvllm::thread_pool_stats before = pool(2).stats();
                                 for (auto _ : state) {
                                   for (int pair = 0; pair < window_pairs; ++pair) {
                                     // Alternating which goes first cancels a drift within a pair.
                                     const bool one_first = pair % 2 == 0;
                                     const double first = decode_rate(one_first ? one : two, logits);
                                     const double second = decode_rate(one_first ? two : one, logits);
                                     rate1.push_back(one_first ? first : second);
                                     rate2.push_back(one_first ? second : first);
                                     ratio.push_back(rate2.back() / rate1.back());
                                   }
                                 }
                                 state.counters["tok_s_threads1"] = benchmark::Counter(median_of(rate1));
                                 state.counters["tok_s_threads2"] = benchmark::Counter(median_of(rate2));
                                 state.counters["vs_threads1"] = benchmark::Counter(median_of(ratio));
                                 std::sort(ratio.begin(), ratio.end());
                                 state.counters["vs_threads1_min"] = benchmark::Counter(ratio.front());
                                 state.counters["solo_frac"] = benchmark::Counter(solo_share(before, pool(2).stats()));
                               })
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
}

/// How the 2-thread pool coped since `before`: solo_share, and chunks per
/// token the caller took over from a descheduled worker.
void set_pool_counters(benchmark::State& state, unsigned threads, const ruvllm::thread_pool_stats& before) {
  if (threads < 2) return;
  const ruvllm::thread_pool_stats after = pool(threads).stats();
  state.counters["solo_frac"] = benchmark::Counter(solo_share(before, after));
  state.counters["taken_per_tok"] =
      benchmark::Counter(static_cast<double>(after.chunks_recomputed - before.chunks_recomputed) /
                         static_cast<double>(state.iterations()));
}

void register_rows(gguf_type type, const char* precision, const model_shape& sh) {
  for (const unsigned threads : {1u, 2u}) {
    const std::string decode = rb::row_name("model", "decode", precision, sh.name, threads);
    benchmark::RegisterBenchmark(decode.c_str(), [type, &sh, threads](benchmark::State& state) {
      built_model& m = model_of(type, sh);
      std::vector<float> logits(sh.vocab);
      llama_context<> ctx = decoding_context(m, sh, threads, logits);
      const double cached_before = cached_gemv_gbps(type, sh.dim, threads);
      const rb::row_bracket bracket = rb::bracket_row(threads);
      const ruvllm::thread_pool_stats before = pool(threads).stats();
      rb::timed_loop(
          state, [&] { decode_step(ctx, logits); }, threads);
      state.counters["tok_s"] = benchmark::Counter(1.0 / rb::seconds_per_iteration(state));
      rb::set_bracketed_bandwidth_counters(state, m.weight_bytes, threads, bracket);
      set_pool_counters(state, threads, before);
      const double cached = (cached_before + cached_gemv_gbps(type, sh.dim, threads)) / 2.0;
      state.counters["cached_GBps"] = benchmark::Counter(cached);
      state.counters["ceiling_frac"] =
          benchmark::Counter(state.counters["GBps"].value / std::min(cached, state.counters["probe_GBps"].value));
    });
    const std::string cotenant_row = rb::row_name("model", "decode_cotenant", precision, sh.name, threads);
    benchmark::RegisterBenchmark(cotenant_row.c_str(), [type, &sh, threads](benchmark::State& state) {
      built_model& m = model_of(type, sh);
      std::vector<float> logits(sh.vocab);
      llama_context<> ctx = decoding_context(m, sh, threads, logits);
      const rb::cotenant busy;
      const ruvllm::thread_pool_stats before = pool(threads).stats();
      // Wall clock at any thread count: see the file comment.
      rb::timed_loop(
          state, [&] { decode_step(ctx, logits); }, 2);
      const double seconds = rb::seconds_per_iteration(state);
      state.counters["tok_s"] = benchmark::Counter(1.0 / seconds);
      set_pool_counters(state, threads, before);
    });
    for (const std::size_t n : {std::size_t{128}, std::size_t{512}}) {
      const std::string prefill = rb::row_name("model", n == 128 ? "pp128" : "pp512", precision, sh.name, threads);
      benchmark::RegisterBenchmark(prefill.c_str(), [type, &sh, threads, n](benchmark::State& state) {
        built_model& m = model_of(type, sh);
        auto ctx = llama_context<>::create(*m.model, pool(threads), {.n_ctx = context_len, .max_batch = 512});
        if (!ctx) rb::detail::fail(ctx.error().describe());
        std::vector<float> logits(sh.vocab);
        const std::vector<token_id> prompt = tokens(n, sh.vocab);
        const double ghz_before = rb::core_clock_ghz();
        rb::timed_loop(
            state,
            [&] {
              ctx->reset();
              if (!ctx->eval(prompt, logits)) rb::detail::fail("prefill failed");
              benchmark::DoNotOptimize(logits.data());
            },
            threads);
        state.counters["tok_s"] = benchmark::Counter(static_cast<double>(n) / rb::seconds_per_iteration(state));
        rb::set_core_clock_counter(state, ghz_before);
      });
    }
  }
}

[[maybe_unused]] const bool registered = [] {
  for (const model_shape* sh : {&shape_110m, &shape_1b}) {
    register_rows(gguf_type::f16, "f16", *sh);
    register_rows(gguf_type::q8_0, "q8_0", *sh);
    register_rows(gguf_type::q4_0, "q4_0", *sh);
    register_rows(gguf_type::iq4_nl, "iq4_nl", *sh);
    register_rows(gguf_type::q2_k, "q2_k", *sh);
    register_rows(gguf_type::q3_k, "q3_k_m", *sh);
    register_rows(gguf_type::iq4_xs, "iq4_xs", *sh);
    register_rows(gguf_type::q4_k, "q4_k_m", *sh);
    register_rows(gguf_type::q5_k, "q5_k_m", *sh);
  }
  for (const model_shape* sh : {&shape_110m, &shape_1b}) {
    register_paired_cotenant_row(gguf_type::f16, "f16", *sh);
    register_paired_cotenant_row(gguf_type::q8_0, "q8_0", *sh);
    register_paired_cotenant_row(gguf_type::q4_0, "q4_0", *sh);
  }
  return true;
}();

}  // namespace
