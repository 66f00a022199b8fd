// Attention kernels (attention_bench, Highway runtime dispatch, built without
// -march flags like any consumer):
//  * probe/fma_peak: the FMA throughput of this core at the dispatched target
//    (12 independent MulAdd chains), measured in this process; every flash
//    row measures it again right after its own loop (counter fma_peak, best
//    of 3 x 5 ms) and reports fma_frac = GFLOPs / (threads x fma_peak).
//  * kernels/flash_prefill[_causal]/f32/<heads>x<head_dim>x<tokens>: flash
//    attention over 32 heads of 128 at 256 and 1024 tokens, 1 and 2 threads.
//    GFLOPs counts 4 * head_dim FLOPs per (query, visible key) pair and head
//    (QK^T and PV; causal rows count only the visible half). Baseline: the
//    unfused attention a BLAS user writes (cblas_sgemm for QK^T, a scalar
//    masked softmax, cblas_sgemm for PV), same threads.
//  * kernels/paged_decode/<precision>/<heads>x<kv_heads>x<head_dim>x<tokens>:
//    one decode step over 4096 cached tokens in 32-token pages (shuffled page
//    ids), K and V in f16, q8_0 or KIVI-2; and one layer of the 110M model's
//    decode step (12 heads of 64, 128 tokens in 16-token pages, f16: L2-
//    resident, so it times the kernel's per-token and per-page work); GBps
//    counts the KV bytes read.
//    Baseline: the scalar reference backend on the same view.
//  * quality/attention_kv/<K>+<V>/...: not a speed row. The error of attention
//    over quantized KV against f16 KV on one synthetic decode step (keys with
//    per-channel offsets and outlier channels, values ~ N(0, 1)): kl = mean KL
//    divergence (nats) of the softmax weights, rel_err = mean ||o - o_f16|| /
//    ||o_f16|| over heads, rel_err_max the worst head, size_vs_f16 the KV
//    bytes; each is timed over its own decode step (us). quality/
//    kv_reconstruction rows: rms error / rms value (rel_rms) and the worst
//    |error| in units of the block's stored scale (max_err_scale: <= 0.5 by
//    construction for q8_0 and KIVI), timed over quantizing one 32-token page
//    of 8 KV heads (tokens_per_s).

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_bench.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>

// The FMA-throughput probe, compiled for every target like the kernels, so
// the peak is that of the target the kernels dispatch to.
HWY_BEFORE_NAMESPACE();
namespace ruvllm_attention_bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 12 independent chains cover 2 FMA pipes x 6 cycles of latency.
HWY_NOINLINE float fma_chains(std::int64_t iterations) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.9999999f), c = hn::Set(d, 1e-7f);
  auto a0 = hn::Set(d, 1.0f), a1 = hn::Set(d, 1.1f), a2 = hn::Set(d, 1.2f), a3 = hn::Set(d, 1.3f);
  auto a4 = hn::Set(d, 1.4f), a5 = hn::Set(d, 1.5f), a6 = hn::Set(d, 1.6f), a7 = hn::Set(d, 1.7f);
  auto a8 = hn::Set(d, 1.8f), a9 = hn::Set(d, 1.9f), a10 = hn::Set(d, 2.0f), a11 = hn::Set(d, 2.1f);
  for (std::int64_t i = 0; i < iterations; ++i) {
    a0 = hn::MulAdd(a0, m, c);
    a1 = hn::MulAdd(a1, m, c);
    a2 = hn::MulAdd(a2, m, c);
    a3 = hn::MulAdd(a3, m, c);
    a4 = hn::MulAdd(a4, m, c);
    a5 = hn::MulAdd(a5, m, c);
    a6 = hn::MulAdd(a6, m, c);
    a7 = hn::MulAdd(a7, m, c);
    a8 = hn::MulAdd(a8, m, c);
    a9 = hn::MulAdd(a9, m, c);
    a10 = hn::MulAdd(a10, m, c);
    a11 = hn::MulAdd(a11, m, c);
  }
  const auto s = hn::Add(hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7))),
                         hn::Add(hn::Add(a8, a9), hn::Add(a10, a11)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

HWY_NOINLINE std::size_t float_lanes() { return hn::Lanes(hn::ScalableTag<float>()); }

}  // namespace HWY_NAMESPACE
}  // namespace ruvllm_attention_bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <benchmark/benchmark.h>
#ifdef RUVLLM_BENCH_CBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ruvllm/ruvllm.hpp"
#include "support/bench.hpp"

namespace ruvllm_attention_bench {
HWY_EXPORT(fma_chains);
HWY_EXPORT(float_lanes);
}  // namespace ruvllm_attention_bench

namespace {

namespace rb = ruvllm::bench;
namespace k = ruvllm::kernels;
namespace p = ruvllm::precision;
using highway = ruvllm::backend::highway;
using scalar = ruvllm::backend::scalar;

ruvllm::thread_pool& pool(unsigned threads) {
  static ruvllm::thread_pool one(1), two(2);
  return threads == 1 ? one : two;
}

// ------------------------------------------------------------ FMA peak

/// GFLOP/s of the FMA probe on this thread's CPU time, best of `runs` runs
/// of ~5 ms. Called right after each flash row's timed loop, so the peak is
/// measured under the same co-tenant load as the row (on a shared 2-vCPU
/// machine a neighbour on the sibling hyperthread halves both).
double fma_peak_gflops(int runs = 3) {
  const auto chains = HWY_DYNAMIC_DISPATCH(ruvllm_attention_bench::fma_chains);
  const double lanes = static_cast<double>(HWY_DYNAMIC_DISPATCH(ruvllm_attention_bench::float_lanes)());
  constexpr std::int64_t iterations = 500'000;
  double best = 0.0;
  for (int run = 0; run < runs; ++run) {
    const double t0 = rb::detail::clock_seconds(1);
    benchmark::DoNotOptimize(chains(iterations));
    const double t = rb::detail::clock_seconds(1) - t0;
    best = std::max(best, 2.0 * 12.0 * lanes * static_cast<double>(iterations) / t / 1e9);
  }
  return best;
}

// ------------------------------------------------------------ prefill

struct prefill_data {
  prefill_data(std::size_t heads, std::size_t dim, std::size_t tokens)
      : heads(heads),
        dim(dim),
        tokens(tokens),
        q(rb::random_floats(tokens * heads * dim, 21)),
        k(rb::random_floats(tokens * heads * dim, 22)),
        v(rb::random_floats(tokens * heads * dim, 23)),
        out(rb::random_floats(tokens * heads * dim, 24)),
        scores(rb::random_floats(tokens * tokens, 25)) {
    for (unsigned t = 0; t < 2; ++t) {
      auto ws = ruvllm::aligned_buffer<std::byte>::allocate(k::attention_prefill_workspace_bytes(dim));
      if (!ws) rb::detail::fail("cannot allocate the prefill workspace");
      workspace[t] = std::move(*ws);
    }
  }
  std::size_t heads, dim, tokens;
  ruvllm::aligned_buffer<float> q, k, v, out, scores;
  ruvllm::aligned_buffer<std::byte> workspace[2];

  [[nodiscard]] k::attention_prefill_args args(bool causal) {
    auto a =
        k::attention_prefill_args::dense(q.data(), k.data(), v.data(), out.data(), tokens, tokens, heads, heads, dim);
    a.causal = causal;
    return a;
  }
  /// 4 * dim FLOPs per (query, visible key) pair and head.
  [[nodiscard]] double flops(bool causal) const {
    const double n = static_cast<double>(tokens);
    const double pairs = causal ? n * (n + 1) / 2 : n * n;
    return 4.0 * static_cast<double>(dim * heads) * pairs;
  }
};

#ifdef RUVLLM_BENCH_CBLAS
/// The unfused attention of a BLAS user: per head S = Q K^T (cblas_sgemm),
/// masked softmax in place, O = P V (cblas_sgemm).
void blas_attention(prefill_data& d, bool causal, unsigned threads) {
  openblas_set_num_threads(static_cast<int>(threads));
  const int n = static_cast<int>(d.tokens), D = static_cast<int>(d.dim), ld = static_cast<int>(d.heads * d.dim);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.dim));
  for (std::size_t h = 0; h < d.heads; ++h) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, D, scale, d.q.data() + h * d.dim, ld,
                d.k.data() + h * d.dim, ld, 0.0f, d.scores.data(), n);
    for (std::size_t i = 0; i < d.tokens; ++i) {
      float* s = d.scores.data() + i * d.tokens;
      const std::size_t visible = causal ? i + 1 : d.tokens;
      float m = -std::numeric_limits<float>::infinity();
      for (std::size_t j = 0; j < visible; ++j) m = std::max(m, s[j]);
      float l = 0.0f;
      for (std::size_t j = 0; j < visible; ++j) l += (s[j] = std::exp(s[j] - m));
      const float inv = 1.0f / l;
      for (std::size_t j = 0; j < visible; ++j) s[j] *= inv;
      for (std::size_t j = visible; j < d.tokens; ++j) s[j] = 0.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, D, n, 1.0f, d.scores.data(), n, d.v.data() + h * d.dim,
                ld, 0.0f, d.out.data() + h * d.dim, ld);
  }
}
#endif

void register_prefill(std::size_t tokens) {
  const auto d = std::make_shared<prefill_data>(32, 128, tokens);
  for (const bool causal : {true, false})
    for (const unsigned threads : {1u, 2u}) {
      const std::string ours = rb::row_name("kernels", causal ? "flash_prefill_causal" : "flash_prefill", "f32",
                                            rb::shape({d->heads, d->dim, tokens}), threads);
      const std::string base = rb::baseline_of(ours);
      const double flops = d->flops(causal);
      const auto ours_body = [d, causal, threads] {
        const auto a = d->args(causal);
        pool(threads).run(k::attention_prefill_work_items(a), 1,
                          [&](std::size_t begin, std::size_t end, std::size_t thread) {
                            k::ops<highway>::attention_prefill(a, d->workspace[thread].span(), begin, end);
                          });
        benchmark::ClobberMemory();
      };
#ifdef RUVLLM_BENCH_CBLAS
      const auto base_body = [d, causal, threads] {
        blas_attention(*d, causal, threads);
        benchmark::ClobberMemory();
      };
      benchmark::RegisterBenchmark(base.c_str(), [base, base_body, flops, threads](benchmark::State& state) {
        const double seconds = rb::timed_loop(state, base_body, threads);
        rb::record_baseline(state, base);
        state.counters["GFLOPs"] = benchmark::Counter(flops / seconds / 1e9);
      });
#endif
      benchmark::RegisterBenchmark(ours.c_str(), [=](benchmark::State& state) {
        const double seconds = rb::timed_loop(state, ours_body, threads);
#ifdef RUVLLM_BENCH_CBLAS
        rb::set_speedup(state, base, base_body, threads);
#endif
        const double gflops = flops / seconds / 1e9;
        const double peak = fma_peak_gflops();
        state.counters["GFLOPs"] = benchmark::Counter(gflops);
        state.counters["fma_peak"] = benchmark::Counter(peak);
        state.counters["fma_frac"] = benchmark::Counter(gflops / (threads * peak));
      });
    }
}

// ------------------------------------------------------------- decode

/// Keys with per-channel offsets and ~5% outlier channels (x6), values ~ N(0, 1).
struct kv_source {
  kv_source(std::size_t tokens, std::size_t kv_heads, std::size_t dim, std::uint64_t seed)
      : tokens(tokens), kv_heads(kv_heads), dim(dim), keys(tokens * kv_heads * dim), values(keys.size()) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<float> normal;
    std::bernoulli_distribution outlier(0.05);
    std::vector<float> bias(kv_heads * dim), gain(kv_heads * dim);
    for (std::size_t c = 0; c < bias.size(); ++c) {
      bias[c] = 0.5f * normal(gen);
      gain[c] = outlier(gen) ? 6.0f : 1.0f;
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      keys[i] = bias[i % bias.size()] + gain[i % bias.size()] * normal(gen);
      values[i] = normal(gen);
    }
  }
  std::size_t tokens, kv_heads, dim;
  std::vector<float> keys, values;  // [token][kv_head][dim]
};

/// One sequence of a kv_source in pages of T tokens, page ids shuffled.
template <class K, class V, std::size_t T>
struct paged_kv {
  using view_type = k::paged_kv_view<K, V, T>;
  explicit paged_kv(const kv_source& src) {
    const std::size_t pages = (src.tokens + T - 1) / T, D = src.dim, H = src.kv_heads;
    indptr = {0, static_cast<std::uint32_t>(pages)};
    last = {static_cast<std::uint32_t>(src.tokens - (pages - 1) * T)};
    ids.resize(pages);
    std::iota(ids.begin(), ids.end(), 0u);
    std::shuffle(ids.begin(), ids.end(), std::mt19937_64(7));
    const std::size_t kpb = view_type::k_page_bytes(H, D), vpb = view_type::v_page_bytes(H, D);
    auto kp = ruvllm::aligned_buffer<std::byte>::allocate(pages * kpb);
    auto vp = ruvllm::aligned_buffer<std::byte>::allocate(pages * vpb);
    if (!kp || !vp) rb::detail::fail("cannot allocate KV pages");
    k_pool = std::move(*kp);
    v_pool = std::move(*vp);
    for (std::size_t pg = 0; pg < pages; ++pg)
      for (std::size_t h = 0; h < H; ++h) {
        const std::size_t t0 = pg * T, n = std::min(T, src.tokens - t0);
        k::scalar::quantize_page_head(view_type::k_format, k::kv_role::key, src.keys.data() + (t0 * H + h) * D, H * D,
                                      0, n, D, k_pool.data() + ids[pg] * kpb + h * view_type::k_head_bytes(D));
        k::scalar::quantize_page_head(view_type::v_format, k::kv_role::value, src.values.data() + (t0 * H + h) * D,
                                      H * D, 0, n, D, v_pool.data() + ids[pg] * vpb + h * view_type::v_head_bytes(D));
      }
    auto v = view_type::make(k_pool.data(), v_pool.data(), pages, indptr, ids, last, H, D);
    if (!v) rb::detail::fail(v.error().describe());
    view = *v;
    bytes = static_cast<double>(pages * (kpb + vpb));
  }
  ruvllm::aligned_buffer<std::byte> k_pool, v_pool;
  std::vector<std::uint32_t> indptr, ids, last;
  view_type view;
  double bytes = 0;  // KV bytes one decode step reads
};

/// A decode plan and its workspace.
struct decode_plan_storage {
  decode_plan_storage(const k::paged_kv_desc& kv, std::size_t heads, const k::attention_decode_options& o) {
    auto ws = ruvllm::aligned_buffer<std::byte>::allocate(k::attention_decode_workspace_bytes(kv, heads, o));
    if (!ws) rb::detail::fail("cannot allocate the decode workspace");
    workspace = std::move(*ws);
    auto pl = k::attention_plan_decode(kv, heads, o, workspace.span());
    if (!pl) rb::detail::fail(pl.error().describe());
    plan = *pl;
  }
  ruvllm::aligned_buffer<std::byte> workspace;
  k::attention_decode_plan plan;
};

template <class B>
void decode_step(const k::attention_decode_plan& plan, const k::paged_kv_desc& kv, const float* q, float* out,
                 unsigned threads) {
  pool(threads).run(plan.work_items(), 1, [&](std::size_t begin, std::size_t end, std::size_t) {
    k::ops<B>::attention_decode(plan, kv, q, begin, end);
  });
  k::ops<B>::attention_decode_merge(plan, out, nullptr, 0, plan.batch);
}

/// A decode step's shape: query heads, KV heads, head dimension, cached tokens.
struct decode_shape {
  std::size_t heads, kv_heads, dim, tokens;
};
/// A 7B-class GQA layer at 4096 tokens, in 32-token pages.
constexpr decode_shape decode_large{32, 8, 128, 4096};
/// A layer of the 110M model of model_bench at its decode position (128
/// tokens), in the 16-token pages llama_context uses: one head per KV head
/// and short pages, so the per-page work weighs most.
constexpr decode_shape decode_small{12, 12, 64, 128};
constexpr std::size_t decode_heads = decode_large.heads, decode_kv_heads = decode_large.kv_heads,
                      decode_dim = decode_large.dim, decode_tokens = decode_large.tokens;

template <const decode_shape& Sh = decode_large>
const kv_source& decode_source() {
  static const kv_source src(Sh.tokens, Sh.kv_heads, Sh.dim, 31);
  return src;
}

/// Rows of shape Sh in pages of T tokens.
template <class P, std::size_t T, const decode_shape& Sh>
void register_decode(std::string_view precision) {
  constexpr const decode_shape& sh = Sh;
  const auto kv = std::make_shared<paged_kv<P, P, T>>(decode_source<Sh>());
  const auto q = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(sh.heads * sh.dim, 41));
  const auto out = std::make_shared<ruvllm::aligned_buffer<float>>(rb::random_floats(sh.heads * sh.dim, 42));
  for (const unsigned threads : {1u, 2u}) {
    k::attention_decode_options o;
    o.min_work_items = 2 * threads;
    const auto plan = std::make_shared<decode_plan_storage>(kv->view.desc(), sh.heads, o);
    const std::string ours = rb::row_name("kernels", "paged_decode", precision,
                                          rb::shape({sh.heads, sh.kv_heads, sh.dim, sh.tokens}), threads);
    const std::string base = rb::baseline_of(ours);
    const auto ours_body = [kv, q, out, plan, threads] {
      decode_step<highway>(plan->plan, kv->view.desc(), q->data(), out->data(), threads);
      benchmark::ClobberMemory();
    };
    const auto base_body = [kv, q, out, plan, threads] {
      decode_step<scalar>(plan->plan, kv->view.desc(), q->data(), out->data(), threads);
      benchmark::ClobberMemory();
    };
    const double bytes = kv->bytes;
    benchmark::RegisterBenchmark(base.c_str(), [base, base_body, bytes, threads](benchmark::State& state) {
      rb::timed_loop(state, base_body, threads);
      rb::record_baseline(state, base);
      rb::set_bandwidth_counters(state, bytes, threads);
    });
    benchmark::RegisterBenchmark(ours.c_str(), [=](benchmark::State& state) {
      const double seconds = rb::timed_loop(state, ours_body, threads);
      rb::set_speedup(state, base, base_body, threads);
      rb::set_bandwidth_counters(state, bytes, threads);
      state.counters["us"] = benchmark::Counter(seconds * 1e6);
    });
  }
}

// ------------------------------------------------------------ quality

/// Softmax weights (double) of every query head over a sequence's dequantized keys.
template <class View>
std::vector<double> softmax_weights(const View& view, const float* q, std::size_t heads) {
  const k::paged_kv_desc d = view.desc();
  const std::size_t D = d.head_dim, H = d.n_kv_heads, G = heads / H, n = d.seq_len(0);
  std::vector<float> keys(n * D);
  std::vector<double> w(heads * n);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (std::size_t kvh = 0; kvh < H; ++kvh) {
    for (std::uint32_t pg = 0; pg < d.pages(0); ++pg)
      k::scalar::dequantize_page_head(d.k_format, k::kv_role::key, d.k_head(0, pg, kvh), 0, d.page_tokens(0, pg), D,
                                      keys.data() + pg * d.tokens_per_page * D, D);
    for (std::size_t g = 0; g < G; ++g) {
      const std::size_t h = kvh * G + g;
      double* wh = w.data() + h * n;
      double m = -1e300;
      for (std::size_t t = 0; t < n; ++t) {
        double s = 0.0;
        for (std::size_t c = 0; c < D; ++c) s += static_cast<double>(q[h * D + c]) * keys[t * D + c];
        wh[t] = scale * s;
        m = std::max(m, wh[t]);
      }
      double l = 0.0;
      for (std::size_t t = 0; t < n; ++t) l += (wh[t] = std::exp(wh[t] - m));
      for (std::size_t t = 0; t < n; ++t) wh[t] /= l;
    }
  }
  return w;
}

template <class View>
std::vector<float> decode_output(const View& view, const float* q) {
  const decode_plan_storage plan(view.desc(), decode_heads, {});
  std::vector<float> out(decode_heads * decode_dim);
  decode_step<highway>(plan.plan, view.desc(), q, out.data(), 1);
  return out;
}

struct quality_reference {
  std::vector<float> q;
  std::vector<double> weights;  // f16 KV
  std::vector<float> out;       // f16 KV
};

const quality_reference& f16_reference() {
  static const quality_reference ref = [] {
    quality_reference r;
    std::mt19937_64 gen(51);
    std::normal_distribution<float> normal;
    r.q.resize(decode_heads * decode_dim);
    for (float& x : r.q) x = normal(gen);
    const paged_kv<p::f16, p::f16, 32> kv(decode_source());
    r.weights = softmax_weights(kv.view, r.q.data(), decode_heads);
    r.out = decode_output(kv.view, r.q.data());
    return r;
  }();
  return ref;
}

/// Quality of attention over K/V precisions against f16 KV, computed once.
struct quality_result {
  double kl = 0.0, rel_err = 0.0, rel_err_max = 0.0, size_vs_f16 = 0.0;
};

template <class K, class V>
quality_result measure_quality(const paged_kv<K, V, 32>& kv) {
  const quality_reference& ref = f16_reference();
  const std::vector<double> w = softmax_weights(kv.view, ref.q.data(), decode_heads);
  const std::vector<float> out = decode_output(kv.view, ref.q.data());
  const std::size_t n = decode_tokens;
  quality_result r;
  for (std::size_t h = 0; h < decode_heads; ++h) {
    double klh = 0.0;
    for (std::size_t t = 0; t < n; ++t) {
      const double a = ref.weights[h * n + t], b = w[h * n + t];
      if (a > 0.0) klh += a * std::log(a / std::max(b, 1e-300));
    }
    r.kl += klh / decode_heads;
    double num = 0.0, den = 0.0;
    for (std::size_t c = 0; c < decode_dim; ++c) {
      const double e = out[h * decode_dim + c] - ref.out[h * decode_dim + c];
      num += e * e;
      den += static_cast<double>(ref.out[h * decode_dim + c]) * ref.out[h * decode_dim + c];
    }
    r.rel_err += std::sqrt(num / den) / decode_heads;
    r.rel_err_max = std::max(r.rel_err_max, std::sqrt(num / den));
  }
  using f16_view = typename paged_kv<p::f16, p::f16, 32>::view_type;
  r.size_vs_f16 = kv.bytes / static_cast<double>(decode_tokens / 32 *
                                                 (f16_view::k_page_bytes(decode_kv_heads, decode_dim) +
                                                  f16_view::v_page_bytes(decode_kv_heads, decode_dim)));
  return r;
}

/// One K x V pair: the error counters (computed once), timed over that pair's decode step.
template <class K, class V>
void register_quality(std::string_view name) {
  const std::string row = rb::join_name(
      {"quality", "attention_kv", name, rb::shape({decode_heads, decode_kv_heads, decode_dim, decode_tokens})}, 1);
  struct state_type {
    paged_kv<K, V, 32> kv{decode_source()};
    decode_plan_storage plan{kv.view.desc(), decode_heads, {}};
    quality_result quality = measure_quality(kv);
    std::vector<float> out = std::vector<float>(decode_heads * decode_dim);
  };
  const auto lazy = std::make_shared<std::unique_ptr<state_type>>();
  benchmark::RegisterBenchmark(row.c_str(), [lazy](benchmark::State& state) {
    if (!*lazy) *lazy = std::make_unique<state_type>();
    state_type& st = **lazy;
    const double seconds = rb::timed_loop(state, [&] {
      decode_step<highway>(st.plan.plan, st.kv.view.desc(), f16_reference().q.data(), st.out.data(), 1);
      benchmark::ClobberMemory();
    });
    state.counters["kl"] = benchmark::Counter(st.quality.kl);
    state.counters["rel_err"] = benchmark::Counter(st.quality.rel_err);
    state.counters["rel_err_max"] = benchmark::Counter(st.quality.rel_err_max);
    state.counters["size_vs_f16"] = benchmark::Counter(st.quality.size_vs_f16);
    state.counters["us"] = benchmark::Counter(seconds * 1e6);
  });
}

/// Quality rows of K precision K with every V precision.
template <class K>
void register_quality_row(std::string_view k_name) {
  const std::string kn(k_name);
  register_quality<K, p::f16>(kn + "+f16");
  register_quality<K, p::q8_0>(kn + "+q8_0");
  register_quality<K, p::kivi<4>>(kn + "+kivi4");
  register_quality<K, p::kivi<2>>(kn + "+kivi2");
}

/// The stored scale (q8_0 d, KIVI scale) of element (t, c) of a page-head.
double stored_scale(k::kv_format_desc f, k::kv_role role, const std::byte* head, std::size_t t, std::size_t c,
                    std::size_t D) {
  std::size_t offset = 0;
  if (f.format == k::kv_format::q8_0) {
    offset = (t * (D / 32) + c / 32) * sizeof(ruvllm::block_q8_0);
  } else {
    const std::size_t S = k::kv_kivi_block_bytes(k::kv_bits(f.format), f.group);
    offset = role == k::kv_role::key ? S * (t / f.group * D + c) : S * (t * (D / f.group) + c / f.group);
  }
  ruvllm::f16 h;
  std::memcpy(&h, head + offset, sizeof h);
  return ruvllm::to_float(h);
}

/// Reconstruction error of one format and role over the decode source
/// (computed once), timed over quantizing one page (all KV heads).
void register_reconstruction(std::string_view name, k::kv_format_desc f, k::kv_role role) {
  const std::string row =
      rb::join_name({"quality", "kv_reconstruction", name, role == k::kv_role::key ? "keys" : "values"}, 1);
  struct result {
    double rel_rms = 0.0, max_err_scale = 0.0;
  };
  const auto measured = std::make_shared<std::unique_ptr<result>>();
  benchmark::RegisterBenchmark(row.c_str(), [f, role, measured](benchmark::State& state) {
    const kv_source& src = decode_source();
    const std::size_t D = src.dim, H = src.kv_heads, T = 32;
    const std::size_t head_bytes = k::kv_page_head_bytes(f, role, T, D);
    const std::vector<float>& x = role == k::kv_role::key ? src.keys : src.values;
    std::vector<std::byte> page(head_bytes * H);
    if (!*measured) {
      result r;
      std::vector<float> back(T * D);
      double err2 = 0.0, val2 = 0.0;
      for (std::size_t t0 = 0; t0 < src.tokens; t0 += T)
        for (std::size_t h = 0; h < H; ++h) {
          const float* base = x.data() + (t0 * H + h) * D;
          k::scalar::quantize_page_head(f, role, base, H * D, 0, T, D, page.data());
          k::scalar::dequantize_page_head(f, role, page.data(), 0, T, D, back.data(), D);
          for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < D; ++c) {
              const double v = base[t * H * D + c], e = back[t * D + c] - v;
              err2 += e * e;
              val2 += v * v;
              if (f.format != k::kv_format::f16) {
                const double scale = stored_scale(f, role, page.data(), t, c, D);
                if (scale > 0.0) r.max_err_scale = std::max(r.max_err_scale, std::fabs(e) / scale);
              }
            }
        }
      r.rel_rms = std::sqrt(err2 / val2);
      *measured = std::make_unique<result>(r);
    }
    rb::timed_loop(state, [&] {
      for (std::size_t h = 0; h < H; ++h)
        k::ops<highway>::kv_quantize_page_head(f, role, x.data() + h * D, H * D, 0, T, D, page.data() + h * head_bytes);
      benchmark::ClobberMemory();
    });
    state.counters["rel_rms"] = benchmark::Counter((*measured)->rel_rms);
    state.counters["max_err_scale"] = benchmark::Counter((*measured)->max_err_scale);
    state.counters["tokens_per_s"] = benchmark::Counter(static_cast<double>(T) / rb::seconds_per_iteration(state));
  });
}

[[maybe_unused]] const bool registered = [] {
  benchmark::RegisterBenchmark(rb::join_name({"probe", "fma_peak"}, 1).c_str(), [](benchmark::State& state) {
    const auto chains = HWY_DYNAMIC_DISPATCH(ruvllm_attention_bench::fma_chains);
    const double lanes = static_cast<double>(HWY_DYNAMIC_DISPATCH(ruvllm_attention_bench::float_lanes)());
    constexpr std::int64_t iterations = 1'000'000;
    const double seconds = rb::timed_loop(state, [&] { benchmark::DoNotOptimize(chains(iterations)); });
    state.counters["GFLOPs"] = benchmark::Counter(2.0 * 12.0 * lanes * iterations / seconds / 1e9);
  });
  register_prefill(256);
  register_prefill(1024);
  register_decode<p::f16, 32, decode_large>("f16");
  register_decode<p::q8_0, 32, decode_large>("q8_0");
  register_decode<p::kivi<2>, 32, decode_large>("kivi2");
  register_decode<p::f16, 16, decode_small>("f16");
  register_quality_row<p::f16>("f16");
  register_quality_row<p::q8_0>("q8_0");
  register_quality_row<p::kivi<4>>("kivi4");
  register_quality_row<p::kivi<2>>("kivi2");
  const std::pair<const char*, k::kv_format_desc> formats[] = {{"f16", {k::kv_format::f16, 1}},
                                                               {"q8_0", {k::kv_format::q8_0, 32}},
                                                               {"kivi4", {k::kv_format::kivi4, 32}},
                                                               {"kivi2", {k::kv_format::kivi2, 32}}};
  for (const auto& [name, f] : formats)
    for (const k::kv_role role : {k::kv_role::key, k::kv_role::value}) register_reconstruction(name, f, role);
  return true;
}();

}  // namespace

#endif  // HWY_ONCE
