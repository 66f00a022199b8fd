// Hot/warm/cold KV tier benchmarks (tier_bench; one attention layer, 8 KV
// heads of 128 channels, 32 query heads, 32 tokens per block, keys with
// per-channel offsets and 5% outlier channels, values ~ N(0, 1) -- the
// synthetic KV of attention_bench):
//  * kv/tier_migrate/<from>-><to>/<blocks>x<kv_heads>x<head_dim>x<tokens>/threads:1:
//    moving 64 full blocks one tier colder (dequantize each page-head, quantize
//    into the colder format); GBps counts source + destination bytes over the
//    timed forward moves only (each iteration moves the blocks back untimed);
//    us_per_block.
//  * kv/tier_footprint/f16+q8_0+kivi2/<kv_heads>x<head_dim>x16384/threads:1:
//    a 16,384-token sequence appended token by token with rebalance at every
//    block boundary under tiers<f16: 256, q8_0: 1024, KIVI-2 (G = 32)>.
//    Counters: bytes per cached token (one layer, all KV heads, K + V, scales
//    and zero points included) of each tier (bpt_f16, bpt_q8_0, bpt_kivi2),
//    the tokens each tier holds, compression = f16 bytes / tiered bytes
//    (target >= 4), and the attention error of one decode step against the
//    same sequence in f16 KV: rel_err (mean over heads of ||o - o_f16|| /
//    ||o_f16||), kl (mean KL divergence, nats, of the softmax weights),
//    with random queries (near-uniform attention, the worst case for
//    averaging quantization noise) and, in the _peaked row, queries aligned
//    with a few keys (concentrated attention, as in trained models). The
//    time is one tiered decode step (us), with speedup against the all-f16
//    decode of the same sequence (the baseline row).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ruvllm/kv/tiered_kv.hpp"
#include "support/bench.hpp"

namespace {

namespace kv = ruvllm::kv;
namespace p = ruvllm::precision;
namespace rb = ruvllm::bench;

constexpr std::size_t tpb = 32;
constexpr std::size_t kv_heads = 8;
constexpr std::size_t head_dim = 128;
constexpr std::size_t n_heads = 32;
constexpr std::size_t seq_tokens = 16384;

using tiered = ruvllm::tiers<ruvllm::tier<p::f16, 256>, ruvllm::tier<p::q8_0, 1024>, ruvllm::tier<p::kivi<2>>>;
using all_f16 = ruvllm::tiers<ruvllm::tier<p::f16>>;
using migrate_tiers = ruvllm::tiers<ruvllm::tier<p::f16, 256>, ruvllm::tier<p::q8_0, 1024>, ruvllm::tier<p::kivi<2>>>;

struct token_source {
  std::vector<float> keys, values;  // [token][kv_head][dim]
  explicit token_source(std::size_t tokens) : keys(tokens * kv_heads * head_dim), values(keys.size()) {
    std::mt19937_64 gen(31);
    std::normal_distribution<float> normal;
    std::bernoulli_distribution outlier(0.05);
    std::vector<float> bias(kv_heads * head_dim), gain(bias.size());
    for (std::size_t c = 0; c < bias.size(); ++c) {
      bias[c] = 0.5f * normal(gen);
      gain[c] = outlier(gen) ? 6.0f : 1.0f;
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      keys[i] = bias[i % bias.size()] + gain[i % bias.size()] * normal(gen);
      values[i] = normal(gen);
    }
  }
};

const token_source& source() {
  static const token_source s(seq_tokens);
  return s;
}

template <class Tiers>
kv::tiered_kv_cache<Tiers, tpb> make_cache(std::array<std::size_t, 4> blocks) {
  kv::tiered_kv_options o;
  o.n_kv_heads = kv_heads;
  o.head_dim = head_dim;
  o.tier_blocks = blocks;
  auto c = kv::tiered_kv_cache<Tiers, tpb>::create(o);
  if (!c) rb::detail::fail(c.error().describe());
  return std::move(*c);
}

template <class Cache>
void fill(Cache& c, kv::tiered_sequence& s, std::size_t tokens) {
  const auto& src = source();
  for (std::size_t t = 0; t < tokens; ++t) {
    if (!c.append(s, src.keys.data() + t * kv_heads * head_dim, src.values.data() + t * kv_heads * head_dim))
      rb::detail::fail("append failed");
    if (s.tokens % tpb == 0) c.rebalance(s);
  }
}

// ------------------------------------------------------------ migration

void register_migrate(const char* name, std::size_t from, std::size_t to) {
  constexpr std::size_t blocks = 64;
  const std::string row = rb::row_name("kv", "tier_migrate", name, rb::shape({blocks, kv_heads, head_dim, tpb}), 1);
  benchmark::RegisterBenchmark(row.c_str(), [from, to](benchmark::State& state) {
    auto c = make_cache<migrate_tiers>({blocks + 1, blocks + 1, blocks + 1, 0});
    kv::tiered_sequence s;
    for (std::size_t t = 0; t < blocks * tpb; ++t)
      if (!c.append(s, source().keys.data() + t * kv_heads * head_dim,
                    source().values.data() + t * kv_heads * head_dim))
        rb::detail::fail("append failed");
    for (auto id : s.blocks)
      if (!c.move_block(id, from)) rb::detail::fail("move failed");
    double forward = 0.0;
    std::uint64_t moves = 0;
    rb::timed_loop(state, [&] {
      const double t0 = rb::detail::clock_seconds(1);
      for (auto id : s.blocks)
        if (!c.move_block(id, to)) rb::detail::fail("move failed");
      forward += rb::detail::clock_seconds(1) - t0;
      moves += blocks;
      for (auto id : s.blocks)
        if (!c.move_block(id, from)) rb::detail::fail("move failed");
    });
    const double bytes = static_cast<double>(c.page_bytes(from) + c.page_bytes(to));
    state.counters["GBps"] = benchmark::Counter(bytes * static_cast<double>(moves) / std::max(forward, 1e-12) / 1e9);
    state.counters["us_per_block"] =
        benchmark::Counter(forward / static_cast<double>(std::max<std::uint64_t>(moves, 1)) * 1e6);
    c.free_sequence(s);
  });
}

// ------------------------------------------------------- footprint + error

/// Softmax weights (double) of every query head over a sequence's dequantized keys.
template <class Cache>
std::vector<double> softmax_weights(const Cache& c, const kv::tiered_sequence& s, const std::vector<float>& q) {
  const std::size_t n = s.tokens, G = n_heads / kv_heads;
  std::vector<float> kb(kv_heads * tpb * head_dim), vb(kb.size());
  std::vector<float> keys(n * kv_heads * head_dim);  // [kv_head][token][dim]
  for (std::size_t b = 0; b < s.blocks.size(); ++b) {
    c.read_block(s.blocks[b], tpb, kb.data(), vb.data());
    for (std::size_t h = 0; h < kv_heads; ++h)
      std::copy(kb.begin() + static_cast<std::ptrdiff_t>(h * tpb * head_dim),
                kb.begin() + static_cast<std::ptrdiff_t>((h + 1) * tpb * head_dim),
                keys.begin() + static_cast<std::ptrdiff_t>((h * n + b * tpb) * head_dim));
  }
  std::vector<double> w(n_heads * n);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  for (std::size_t h = 0; h < n_heads; ++h) {
    const float* kh = keys.data() + (h / G) * n * head_dim;
    double* wh = w.data() + h * n;
    double m = -1e300;
    for (std::size_t t = 0; t < n; ++t) {
      double acc = 0.0;
      for (std::size_t d = 0; d < head_dim; ++d) acc += static_cast<double>(q[h * head_dim + d]) * kh[t * head_dim + d];
      wh[t] = acc * scale;
      m = std::max(m, wh[t]);
    }
    double l = 0.0;
    for (std::size_t t = 0; t < n; ++t) l += (wh[t] = std::exp(wh[t] - m));
    for (std::size_t t = 0; t < n; ++t) wh[t] /= l;
  }
  return w;
}

/// Queries: random N(0, 1), or (peaked) each head aimed at the de-biased key of one token.
std::vector<float> make_queries(bool peaked) {
  std::mt19937_64 gen(peaked ? 77 : 51);
  std::normal_distribution<float> normal;
  std::vector<float> q(n_heads * head_dim);
  for (auto& x : q) x = normal(gen);
  if (!peaked) return q;
  std::uniform_int_distribution<std::size_t> tok(0, seq_tokens - 1);
  const auto& src = source();
  const std::size_t G = n_heads / kv_heads;
  for (std::size_t h = 0; h < n_heads; ++h) {
    const std::size_t t = tok(gen), kvh = h / G;
    for (std::size_t d = 0; d < head_dim; ++d)
      q[h * head_dim + d] = 0.35f * src.keys[(t * kv_heads + kvh) * head_dim + d] + 0.5f * q[h * head_dim + d];
  }
  return q;
}

void register_footprint(bool peaked) {
  const std::string name = peaked ? "f16+q8_0+kivi2_peaked" : "f16+q8_0+kivi2";
  const std::string row = rb::row_name("kv", "tier_footprint", name, rb::shape({kv_heads, head_dim, seq_tokens}), 1);
  const std::string base = rb::baseline_of(row);
  struct env {
    kv::tiered_kv_cache<all_f16, tpb> ref = make_cache<all_f16>({seq_tokens / tpb, 0, 0, 0});
    kv::tiered_kv_cache<tiered, tpb> tc = make_cache<tiered>({seq_tokens / tpb, seq_tokens / tpb, seq_tokens / tpb, 0});
    kv::tiered_sequence ref_seq, seq;
    std::vector<float> q, out_ref, out;
    explicit env(bool peaked) : q(make_queries(peaked)), out_ref(n_heads * head_dim), out(n_heads * head_dim) {
      fill(ref, ref_seq, seq_tokens);
      fill(tc, seq, seq_tokens);
    }
  };
  static std::unique_ptr<env> envs[2];
  const auto get = [peaked]() -> env& {
    auto& e = envs[peaked ? 1 : 0];
    if (!e) e = std::make_unique<env>(peaked);
    return *e;
  };
  const auto ref_step = [get] {
    env& e = get();
    const kv::tiered_sequence* b[] = {&e.ref_seq};
    if (!e.ref.decode(b, n_heads, e.q.data(), e.out_ref.data())) rb::detail::fail("decode failed");
  };
  benchmark::RegisterBenchmark(base.c_str(), [base, get, ref_step](benchmark::State& state) {
    get();  // build the sequences outside the timed loop
    const double seconds = rb::timed_loop(state, ref_step);
    rb::record_baseline(state, base);
    state.counters["us"] = benchmark::Counter(seconds * 1e6);
  });
  benchmark::RegisterBenchmark(row.c_str(), [base, get, ref_step](benchmark::State& state) {
    env& e = get();
    const kv::tiered_sequence* b[] = {&e.seq};
    const double seconds = rb::timed_loop(state, [&] {
      if (!e.tc.decode(b, n_heads, e.q.data(), e.out.data())) rb::detail::fail("decode failed");
    });
    rb::set_speedup(state, base, ref_step);
    ref_step();
    // Footprint.
    double tiered_bytes = 0.0;
    const char* names[] = {"bpt_f16", "bpt_q8_0", "bpt_kivi2"};
    const char* held[] = {"tokens_f16", "tokens_q8_0", "tokens_kivi2"};
    for (std::size_t i = 0; i < 3; ++i) {
      const double blocks = static_cast<double>(e.tc.tier_blocks_in_use(i));
      tiered_bytes += blocks * static_cast<double>(e.tc.page_bytes(i));
      state.counters[names[i]] = benchmark::Counter(static_cast<double>(e.tc.page_bytes(i)) / tpb);
      state.counters[held[i]] = benchmark::Counter(blocks * tpb);
    }
    const double f16_bytes = static_cast<double>(seq_tokens / tpb) * static_cast<double>(e.ref.page_bytes(0));
    state.counters["compression"] = benchmark::Counter(f16_bytes / tiered_bytes);
    // Error against f16 KV.
    const auto w_ref = softmax_weights(e.ref, e.ref_seq, e.q);
    const auto w = softmax_weights(e.tc, e.seq, e.q);
    double kl = 0.0, rel = 0.0;
    for (std::size_t h = 0; h < n_heads; ++h) {
      double klh = 0.0, num = 0.0, den = 0.0;
      for (std::size_t t = 0; t < seq_tokens; ++t) {
        const double a = w_ref[h * seq_tokens + t], bw = w[h * seq_tokens + t];
        if (a > 0.0) klh += a * std::log(a / std::max(bw, 1e-300));
      }
      for (std::size_t d = 0; d < head_dim; ++d) {
        const double err = e.out[h * head_dim + d] - e.out_ref[h * head_dim + d];
        num += err * err;
        den += static_cast<double>(e.out_ref[h * head_dim + d]) * e.out_ref[h * head_dim + d];
      }
      kl += klh / n_heads;
      rel += std::sqrt(num / den) / n_heads;
    }
    state.counters["kl"] = benchmark::Counter(kl);
    state.counters["rel_err"] = benchmark::Counter(rel);
    state.counters["us"] = benchmark::Counter(seconds * 1e6);
  });
}

[[maybe_unused]] const bool registered = [] {
  register_migrate("f16->q8_0", 0, 1);
  register_migrate("q8_0->kivi2", 1, 2);
  register_migrate("f16->kivi2", 0, 2);
  register_footprint(false);
  register_footprint(true);
  return true;
}();

}  // namespace
