// Flash-attention prefill and paged decode attention on every backend (the
// scalar reference, xsimd, and Highway on every compiled target this CPU
// supports), against a naive softmax(QK^T * scale)V computed in double.
//
// Decode runs over paged K/V in every K x V precision pair, through random
// (shuffled, non-contiguous) page tables with partially filled last pages
// and pools pre-filled with NaN bytes (a token past a page's fill that leaked
// into the result would poison it). Two references: (a) the naive attention
// over the dequantized K/V -- a tight bound, which proves the paged online
// path right -- and (b) over the original f32 K/V -- a looser bound per
// precision, the quantization error itself.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "ruvllm/core/aligned_buffer.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "support/per_target.hpp"
#include "support/rng.hpp"

namespace attention_test {

namespace {

namespace k = ruvllm::kernels;
namespace p = ruvllm::precision;
using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;

// ------------------------------------------------------------ references

/// Naive attention of one query row over n keys/values (rows at a stride),
/// in double: out = softmax(scale * q.k) v, lse = log sum exp(scale * q.k).
void ref_attend(const float* q, const float* keys, std::size_t k_stride, const float* values, std::size_t v_stride,
                std::size_t n, std::size_t D, double scale, double* out, double* lse = nullptr) {
  std::fill(out, out + D, 0.0);
  if (n == 0) {
    if (lse != nullptr) *lse = -std::numeric_limits<double>::infinity();
    return;
  }
  std::vector<double> s(n);
  double m = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < n; ++j) {
    double d = 0.0;
    for (std::size_t c = 0; c < D; ++c) d += static_cast<double>(q[c]) * keys[j * k_stride + c];
    s[j] = scale * d;
    m = std::max(m, s[j]);
  }
  double l = 0.0;
  for (std::size_t j = 0; j < n; ++j) {
    const double w = std::exp(s[j] - m);
    l += w;
    for (std::size_t c = 0; c < D; ++c) out[c] += w * values[j * v_stride + c];
  }
  for (std::size_t c = 0; c < D; ++c) out[c] /= l;
  if (lse != nullptr) *lse = m + std::log(l);
}

/// The naive prefill of the args' shape, [n_q][n_heads][D] doubles.
std::vector<double> ref_prefill(const k::attention_prefill_args& a) {
  const std::size_t D = a.head_dim, G = a.n_heads / a.n_kv_heads;
  std::vector<double> out(a.n_q * a.n_heads * D);
  for (std::size_t i = 0; i < a.n_q; ++i)
    for (std::size_t h = 0; h < a.n_heads; ++h) {
      const std::size_t kvh = h / G;
      const std::size_t visible = a.causal ? std::min(a.n_kv, a.q_pos + i + 1) : a.n_kv;
      ref_attend(a.q + i * a.q_stride + h * D, a.k + kvh * D, a.k_stride, a.v + kvh * D, a.v_stride, visible, D,
                 a.scale, out.data() + (i * a.n_heads + h) * D);
    }
  return out;
}

double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

/// Runs body(backend tag, name) for scalar, xsimd, and Highway on every target.
template <class Body>
void for_each_backend(Body&& body) {
  body(scalar{}, std::string("scalar"));
  body(xsimd_backend{}, std::string("xsimd ") + xsimd_backend::target_name());
  ruvllm::test::for_each_highway_target([&](const std::string& target) { body(highway{}, "highway " + target); });
}

// ---------------------------------------------------------------- prefill

struct prefill_case {
  std::size_t n_heads, n_kv_heads, head_dim, n_q, q_pos;
  bool causal;
  float magnitude = 1.0f;  // q and k are uniform in +-magnitude
};

/// Runs one prefill case on every backend, split into two ranges of work
/// items, and checks |out - naive| <= tol * max |v| per element.
void check_prefill(const prefill_case& pc, ruvllm::test::rng& gen, double tol = 2e-5) {
  // Large scores (|q . k| * scale ~ 300 at magnitude 30) carry float
  // rounding errors of ~1e-4 in every backend, which move the softmax
  // weights of near-tied keys by as much.
  tol = std::max(tol, 2e-5 * pc.magnitude);
  const std::size_t D = pc.head_dim, n_kv = pc.q_pos + pc.n_q;
  // Row strides wider than the heads (as in a fused QKV buffer) catch stride bugs.
  const std::size_t q_stride = pc.n_heads * D + 16, kv_stride = pc.n_kv_heads * D + 32;
  const auto q = gen.uniform_vector(pc.n_q * q_stride, -pc.magnitude, pc.magnitude);
  const auto kk = gen.uniform_vector(n_kv * kv_stride, -pc.magnitude, pc.magnitude);
  const auto v = gen.uniform_vector(n_kv * kv_stride);
  k::attention_prefill_args a = k::attention_prefill_args::dense(q.data(), kk.data(), v.data(), nullptr, pc.n_q, n_kv,
                                                                 pc.n_heads, pc.n_kv_heads, D);
  a.q_stride = q_stride;
  a.k_stride = a.v_stride = kv_stride;
  a.out_stride = pc.n_heads * D;
  a.causal = pc.causal;
  a.q_pos = pc.q_pos;
  std::vector<float> out(pc.n_q * pc.n_heads * D);
  a.out = out.data();
  REQUIRE(k::attention_check_prefill(a).has_value());
  const std::vector<double> want = ref_prefill(a);
  const double bound = tol * std::max(max_abs(v), 1e-30);
  const std::size_t items = k::attention_prefill_work_items(a);
  auto ws = ruvllm::aligned_buffer<std::byte>::allocate(k::attention_prefill_workspace_bytes(D) + 3).value();
  std::span<std::byte> workspace(ws.data() + 3, ws.size() - 3);  // deliberately misaligned
  INFO("heads " << pc.n_heads << "/" << pc.n_kv_heads << " D " << D << " n_q " << pc.n_q << " q_pos " << pc.q_pos
                << (pc.causal ? " causal" : " full") << " magnitude " << pc.magnitude);
  for_each_backend([&](auto backend, const std::string& name) {
    using ops = k::ops<decltype(backend)>;
    INFO("backend " << name);
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    const std::size_t split = items / 2;
    ops::attention_prefill(a, workspace, 0, split);
    ops::attention_prefill(a, workspace, split, items);
    double worst = 0.0;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double err = std::fabs(out[i] - want[i]);
      if (!(err <= worst)) {
        worst = err;
        worst_at = i;
      }
    }
    INFO("worst error " << worst << " at " << worst_at << " (bound " << bound << ")");
    CHECK(worst <= bound);
  });
}

}  // namespace

TEST_CASE("flash prefill matches the naive reference on every backend", "[kernels][attention]") {
  ruvllm::test::rng gen(101);
  // GQA ratios 1, 4, 8 and MQA; head_dim 64 and 128; short lengths with and
  // without a cached prefix, causal and not.
  const std::size_t heads[][2] = {{4, 4}, {8, 2}, {8, 1}, {16, 2}};
  for (const auto& hk : heads)
    for (const std::size_t D : {64, 128})
      for (const std::size_t n_q : {1, 7, 33})
        for (const std::size_t q_pos : {0, 5})
          for (const bool causal : {true, false}) check_prefill({hk[0], hk[1], D, n_q, q_pos, causal}, gen);
}

TEST_CASE("flash prefill at 256 tokens and odd head dims", "[kernels][attention]") {
  ruvllm::test::rng gen(102);
  check_prefill({2, 2, 128, 256, 0, true}, gen);
  check_prefill({4, 1, 64, 256, 37, true}, gen);
  check_prefill({4, 1, 128, 100, 200, false}, gen);
  // Head dims that are not a multiple of the widest vector pair (tails of the
  // P.V register tile) and the smallest supported.
  check_prefill({6, 3, 80, 70, 3, true}, gen);
  check_prefill({3, 1, 16, 9, 0, true}, gen);
  check_prefill({2, 2, 256, 20, 4, false}, gen);
}

TEST_CASE("flash prefill is stable for large and tiny scores", "[kernels][attention]") {
  ruvllm::test::rng gen(103);
  // |scores| up to ~1000: the softmax is one-hot and exp underflows; the
  // running max must rescale correctly across key blocks.
  check_prefill({4, 2, 64, 130, 3, true, 30.0f}, gen);
  check_prefill({2, 1, 128, 70, 0, false, 30.0f}, gen);
  // Denormal scores: q and k of 1e-20.
  check_prefill({2, 2, 64, 40, 0, true, 1e-20f}, gen);
}

TEST_CASE("flash prefill of the full sweep", "[kernels][attention][slow]") {
  ruvllm::test::rng gen(104);
  const std::size_t heads[][2] = {{8, 8}, {8, 2}, {8, 1}, {16, 2}};
  for (const auto& hk : heads)
    for (const std::size_t D : {64, 128})
      for (const std::size_t n_q : {1, 7, 33, 256})
        for (const std::size_t q_pos : {0, 64})
          for (const bool causal : {true, false}) check_prefill({hk[0], hk[1], D, n_q, q_pos, causal}, gen);
}

TEST_CASE("flash prefill edge cases", "[kernels][attention]") {
  // No keys: zeros. Queries beyond the keys (q_pos + n_q > n_kv) see all keys.
  const std::size_t D = 16;
  std::vector<float> q(2 * D, 1.0f), kv(2 * D, 0.5f);
  std::vector<float> out(2 * D, -1.0f);
  auto a = k::attention_prefill_args::dense(q.data(), kv.data(), kv.data(), out.data(), 2, 0, 1, 1, D);
  auto ws = ruvllm::aligned_buffer<std::byte>::allocate(k::attention_prefill_workspace_bytes(D)).value();
  for_each_backend([&](auto backend, const std::string& name) {
    INFO(name);
    std::fill(out.begin(), out.end(), -1.0f);
    a.n_kv = 0;
    k::ops<decltype(backend)>::attention_prefill(a, ws.span(), 0, k::attention_prefill_work_items(a));
    CHECK(std::all_of(out.begin(), out.end(), [](float x) { return x == 0.0f; }));
    a.n_kv = 1;
    a.q_pos = 0;  // query 1 is at position 1 but only key 0 exists
    k::ops<decltype(backend)>::attention_prefill(a, ws.span(), 0, k::attention_prefill_work_items(a));
    CHECK(std::all_of(out.begin(), out.end(), [](float x) { return x == 0.5f; }));
  });
  // Validation at the boundary.
  auto bad = a;
  bad.head_dim = 24;
  CHECK_FALSE(k::attention_check_prefill(bad).has_value());
  bad = a;
  bad.n_heads = 3;
  bad.n_kv_heads = 2;
  CHECK_FALSE(k::attention_check_prefill(bad).has_value());
  bad = a;
  bad.k_stride = D - 1;
  CHECK_FALSE(k::attention_check_prefill(bad).has_value());
  CHECK(k::attention_check_prefill(a).has_value());
}

// ================================================================= decode

namespace {

/// A batch of sequences' original f32 K/V ([token][kv_head][dim] each).
struct kv_batch {
  std::size_t n_kv_heads, D;
  std::vector<std::size_t> lens;
  std::vector<std::vector<float>> keys, values;
};

/// Keys with per-channel offsets and a few outlier channels (what KIVI's
/// per-channel key grouping is for), values ~ N(0, 1).
kv_batch make_kv(ruvllm::test::rng& gen, std::vector<std::size_t> lens, std::size_t n_kv_heads, std::size_t D) {
  kv_batch b{n_kv_heads, D, std::move(lens), {}, {}};
  std::vector<float> bias(n_kv_heads * D), gain(n_kv_heads * D);
  for (std::size_t c = 0; c < bias.size(); ++c) {
    bias[c] = gen.normal(0.0f, 0.5f);
    gain[c] = gen.chance(0.05) ? 6.0f : 1.0f;
  }
  for (const std::size_t n : b.lens) {
    std::vector<float> kk(n * n_kv_heads * D), vv(n * n_kv_heads * D);
    for (std::size_t i = 0; i < kk.size(); ++i) {
      const std::size_t c = i % (n_kv_heads * D);
      kk[i] = bias[c] + gain[c] * gen.normal();
      vv[i] = gen.normal();
    }
    b.keys.push_back(std::move(kk));
    b.values.push_back(std::move(vv));
  }
  return b;
}

/// Paged copy of a kv_batch in precisions K/V with T tokens per page: page
/// ids shuffled over a pool with spare pages, pools pre-filled with 0xFF
/// (f16 NaN) so that unwritten bytes poison any result that reads them.
template <class K, class V, std::size_t T>
struct paged_batch {
  using view_type = k::paged_kv_view<K, V, T>;
  ruvllm::aligned_buffer<std::byte> k_pool, v_pool;
  std::vector<std::uint32_t> indptr, ids, last;
  std::size_t page_count = 0;
  view_type view;

  paged_batch(const kv_batch& b, ruvllm::test::rng& gen) {
    std::size_t pages = 0;
    indptr.push_back(0);
    for (const std::size_t n : b.lens) {
      pages += (n + T - 1) / T;
      indptr.push_back(static_cast<std::uint32_t>(pages));
      last.push_back(n == 0 ? 0 : static_cast<std::uint32_t>(n - (n - 1) / T * T));
    }
    page_count = pages + 5;
    std::vector<std::uint32_t> perm(page_count);
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), gen.engine());
    ids.assign(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(pages));
    const std::size_t kpb = view_type::k_page_bytes(b.n_kv_heads, b.D),
                      vpb = view_type::v_page_bytes(b.n_kv_heads, b.D);
    k_pool = ruvllm::aligned_buffer<std::byte>::allocate(page_count * kpb).value();
    v_pool = ruvllm::aligned_buffer<std::byte>::allocate(page_count * vpb).value();
    std::memset(k_pool.data(), 0xFF, k_pool.size());
    std::memset(v_pool.data(), 0xFF, v_pool.size());
    const std::size_t stride = b.n_kv_heads * b.D;
    for (std::size_t s = 0; s < b.lens.size(); ++s)
      for (std::size_t pg = indptr[s]; pg < indptr[s + 1]; ++pg) {
        const std::size_t t0 = (pg - indptr[s]) * T, n = std::min(T, b.lens[s] - t0);
        for (std::size_t h = 0; h < b.n_kv_heads; ++h) {
          k::scalar::quantize_page_head(view_type::k_format, k::kv_role::key, b.keys[s].data() + t0 * stride + h * b.D,
                                        stride, 0, n, b.D,
                                        k_pool.data() + ids[pg] * kpb + h * view_type::k_head_bytes(b.D));
          k::scalar::quantize_page_head(view_type::v_format, k::kv_role::value,
                                        b.values[s].data() + t0 * stride + h * b.D, stride, 0, n, b.D,
                                        v_pool.data() + ids[pg] * vpb + h * view_type::v_head_bytes(b.D));
        }
      }
    view = view_type::make(k_pool.data(), v_pool.data(), page_count, indptr, ids, last, b.n_kv_heads, b.D).value();
  }

  /// Sequence s's K and V as the kernels see them (dequantized by the scalar reference).
  void dequantized(std::size_t s, const kv_batch& b, std::vector<float>& kk, std::vector<float>& vv) const {
    const k::paged_kv_desc d = view.desc();
    const std::size_t stride = b.n_kv_heads * b.D;
    kk.assign(b.lens[s] * stride, 0.0f);
    vv.assign(b.lens[s] * stride, 0.0f);
    for (std::uint32_t pg = 0; pg < d.pages(s); ++pg)
      for (std::size_t h = 0; h < b.n_kv_heads; ++h) {
        const std::size_t t0 = pg * T;
        k::scalar::dequantize_page_head(d.k_format, k::kv_role::key, d.k_head(s, pg, h), 0, d.page_tokens(s, pg), b.D,
                                        kk.data() + t0 * stride + h * b.D, stride);
        k::scalar::dequantize_page_head(d.v_format, k::kv_role::value, d.v_head(s, pg, h), 0, d.page_tokens(s, pg), b.D,
                                        vv.data() + t0 * stride + h * b.D, stride);
      }
  }
};

/// Naive decode of q ([batch][n_heads][D]) over per-sequence K/V.
void ref_decode(const kv_batch& b, const std::vector<std::vector<float>>& keys,
                const std::vector<std::vector<float>>& values, const std::vector<float>& q, std::size_t n_heads,
                double scale, std::vector<double>& out, std::vector<double>& lse) {
  const std::size_t D = b.D, G = n_heads / b.n_kv_heads, stride = b.n_kv_heads * D;
  out.assign(b.lens.size() * n_heads * D, 0.0);
  lse.assign(b.lens.size() * n_heads, 0.0);
  for (std::size_t s = 0; s < b.lens.size(); ++s)
    for (std::size_t h = 0; h < n_heads; ++h)
      ref_attend(q.data() + (s * n_heads + h) * D, keys[s].data() + (h / G) * D, stride, values[s].data() + (h / G) * D,
                 stride, b.lens[s], D, scale, out.data() + (s * n_heads + h) * D, &lse[s * n_heads + h]);
}

struct decode_errors {
  double out = 0.0;  // max |out - ref|
  double lse = 0.0;  // max |lse - ref|
};

decode_errors compare(const std::vector<float>& out, const std::vector<float>& lse, const std::vector<double>& want,
                      const std::vector<double>& want_lse) {
  decode_errors e;
  for (std::size_t i = 0; i < out.size(); ++i) e.out = std::max(e.out, std::fabs(out[i] - want[i]));
  for (std::size_t i = 0; i < lse.size(); ++i)
    e.lse = std::isinf(want_lse[i]) ? (lse[i] == want_lse[i] ? e.lse : 1e30)
                                    : std::max(e.lse, std::fabs(lse[i] - want_lse[i]));
  return e;
}

/// Plans, runs (in two halves of the items) and merges one decode on backend B.
template <class B, class View>
void run_decode(const View& view, std::size_t n_heads, const k::attention_decode_options& o,
                const std::vector<float>& q, std::vector<float>& out, std::vector<float>& lse) {
  const k::paged_kv_desc d = view.desc();
  auto ws = ruvllm::aligned_buffer<std::byte>::allocate(k::attention_decode_workspace_bytes(d, n_heads, o)).value();
  const auto plan = k::attention_plan_decode(view, n_heads, o, ws.span());
  REQUIRE(plan.has_value());
  out.assign(d.batch * n_heads * d.head_dim, std::numeric_limits<float>::quiet_NaN());
  lse.assign(d.batch * n_heads, std::numeric_limits<float>::quiet_NaN());
  const std::size_t half = plan->work_items() / 2;
  k::ops<B>::attention_decode(*plan, view, q.data(), half, plan->work_items());
  k::ops<B>::attention_decode(*plan, view, q.data(), 0, half);
  k::ops<B>::attention_decode_merge(*plan, out.data(), lse.data(), 0, d.batch / 2);
  k::ops<B>::attention_decode_merge(*plan, out.data(), lse.data(), d.batch / 2, d.batch);
}

/// Quantization error bound on attention outputs against f32 K/V, per
/// precision pair, in units of max |v| (values ~ N(0, 1)). Set from the
/// measured errors (printed by the bench and the [report] test) with ~2-3x margin.
template <class P>
double output_bound_of() {
  if constexpr (std::is_same_v<P, p::f32>) {
    return 2e-5;  // exact storage: rounding of the arithmetic only
  } else if constexpr (std::is_same_v<P, p::f16>) {
    return 0.003;
  } else if constexpr (std::is_same_v<P, p::q8_0>) {
    return 0.02;
  } else if constexpr (P::bits == 4) {
    return 0.2;
  } else {
    return 0.8;
  }
}

/// A decode problem: K/V of a batch and one query token per sequence.
struct decode_input {
  kv_batch b;
  std::vector<float> q;
  std::size_t n_heads;
  bool check_quantization_error = true;  // the loose bound against f32 K/V (not for peaked softmaxes)
};

decode_input make_input(std::size_t n_heads, std::size_t n_kv_heads, std::size_t D, std::vector<std::size_t> lens,
                        std::uint64_t seed) {
  ruvllm::test::rng gen(seed);
  decode_input in{make_kv(gen, std::move(lens), n_kv_heads, D), {}, n_heads};
  in.q.resize(in.b.lens.size() * n_heads * D);
  for (float& x : in.q) x = gen.normal();
  return in;
}

template <class K, class V, std::size_t T>
void check_decode_pair(const decode_input& in, std::uint64_t seed, const k::attention_decode_options& o = {}) {
  ruvllm::test::rng gen(seed);
  const kv_batch& b = in.b;
  const std::vector<float>& q = in.q;
  const std::size_t n_heads = in.n_heads, n_kv_heads = b.n_kv_heads, D = b.D;
  const paged_batch<K, V, T> pb(b, gen);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<std::vector<float>> dk(b.lens.size()), dv(b.lens.size());
  for (std::size_t s = 0; s < b.lens.size(); ++s) pb.dequantized(s, b, dk[s], dv[s]);
  std::vector<double> want_deq, lse_deq, want_f32, lse_f32;
  ref_decode(b, dk, dv, q, n_heads, scale, want_deq, lse_deq);
  ref_decode(b, b.keys, b.values, q, n_heads, scale, want_f32, lse_f32);
  double vmax = 1e-30;
  for (const auto& vv : dv)
    for (float x : vv) vmax = std::max(vmax, std::fabs(static_cast<double>(x)));
  INFO("K " << K::name << " V " << V::name << " T " << T << " heads " << n_heads << "/" << n_kv_heads << " D " << D
            << " min_work_items " << o.min_work_items);
  for_each_backend([&](auto backend, const std::string& name) {
    INFO("backend " << name);
    std::vector<float> out, lse;
    run_decode<decltype(backend)>(pb.view, n_heads, o, q, out, lse);
    const decode_errors tight = compare(out, lse, want_deq, lse_deq);
    const decode_errors loose = compare(out, lse, want_f32, lse_f32);
    INFO("vs dequantized: out " << tight.out << " lse " << tight.lse << "; vs f32: out " << loose.out);
    double lse_max = 0.0;
    for (const double l : lse_deq)
      if (std::isfinite(l)) lse_max = std::max(lse_max, std::fabs(l));
    // Float scores carry rounding errors proportional to their magnitude
    // (~ lse at a peaked softmax), which move the weights by as much.
    CHECK(tight.out <= 2e-5 * std::max(1.0, lse_max / 8.0) * vmax);
    CHECK(tight.lse <= 2e-5 * (1.0 + lse_max));
    if (in.check_quantization_error) CHECK(loose.out <= std::max(output_bound_of<K>(), output_bound_of<V>()) * vmax);
  });
}

template <class K, class V, std::size_t T>
void check_decode_pair(std::size_t n_heads, std::size_t n_kv_heads, std::size_t D, std::vector<std::size_t> lens,
                       std::uint64_t seed, const k::attention_decode_options& o = {}) {
  check_decode_pair<K, V, T>(make_input(n_heads, n_kv_heads, D, std::move(lens), seed), seed + 1, o);
}

template <class K, class... Vs>
void check_k_with_all_v(const decode_input& in, std::uint64_t seed) {
  (check_decode_pair<K, Vs, 32>(in, seed), ...);
}

}  // namespace

TEST_CASE("paged decode matches the naive reference for every K x V precision pair", "[kernels][attention]") {
  // Lengths: a single token, a partial first page, many pages with a partial
  // last one, an empty sequence, and ~1000 tokens.
  const decode_input in = make_input(4, 2, 128, {1, 20, 333, 0, 1000}, 200);
  check_k_with_all_v<p::f32, p::f32, p::f16, p::q8_0, p::kivi<4>, p::kivi<2>>(in, 205);
  check_k_with_all_v<p::f16, p::f32, p::f16, p::q8_0, p::kivi<4>, p::kivi<2>>(in, 201);
  check_k_with_all_v<p::q8_0, p::f32, p::f16, p::q8_0, p::kivi<4>, p::kivi<2>>(in, 202);
  check_k_with_all_v<p::kivi<4>, p::f16, p::q8_0, p::kivi<4>, p::kivi<2>>(in, 203);
  check_k_with_all_v<p::kivi<2>, p::f16, p::q8_0, p::kivi<4>, p::kivi<2>>(in, 204);
}

TEST_CASE("paged decode over GQA ratios, head dims and page sizes", "[kernels][attention]") {
  const std::vector<std::size_t> lens = {5, 77, 130};
  // Every head-block width (8, 4, 2, 1) and their mixes: ratios 1, 3, 4, 7, 8, 32 (MQA).
  for (const std::size_t ratio : {1, 3, 4, 7, 8, 32}) {
    check_decode_pair<p::f16, p::kivi<2>, 16>(ratio * 2, 2, 64, lens, 300 + ratio);
    check_decode_pair<p::kivi<4>, p::q8_0, 32>(ratio, 1, 128, lens, 400 + ratio);
  }
  // head_dim 64, 80 (not a multiple of 32: f16 and KIVI-16 values only), 256.
  check_decode_pair<p::q8_0, p::kivi<4>, 64>(4, 4, 64, lens, 501);
  check_decode_pair<p::f16, p::f16, 8>(2, 1, 80, lens, 502);
  check_decode_pair<p::f16, p::kivi<4, 16>, 16>(4, 2, 80, lens, 503);
  check_decode_pair<p::kivi<2>, p::f16, 64>(2, 2, 256, lens, 504);
  // KIVI groups whose code plane is 4 bytes (the 4-lane code path) and 64.
  check_decode_pair<p::kivi<2, 16>, p::kivi<2, 16>, 16>(4, 1, 64, lens, 505);
  check_decode_pair<p::kivi<4, 8>, p::kivi<4, 8>, 8>(4, 2, 64, lens, 506);
  check_decode_pair<p::kivi<2, 64>, p::kivi<4, 64>, 128>(8, 8, 128, {1, 200, 129}, 507);
  // One token per page; the largest pages.
  check_decode_pair<p::q8_0, p::f16, 1>(2, 1, 32 * 2, {1, 9}, 508);
  check_decode_pair<p::f16, p::q8_0, 256>(4, 2, 128, {300, 256, 1}, 509);
}

TEST_CASE("paged decode with a sharply peaked softmax", "[kernels][attention]") {
  // Queries x40: scores spread over hundreds, so the running max jumps
  // between pages and most weights underflow; tiny queries: a flat softmax.
  for (const float q_scale : {40.0f, 1e-20f}) {
    decode_input in = make_input(4, 1, 64, {700, 45}, 800);
    for (float& x : in.q) x *= q_scale;
    // A quantized key may win the argmax from the true one: only the tight
    // bound (against the dequantized K/V) applies.
    in.check_quantization_error = q_scale < 1.0f;
    check_decode_pair<p::q8_0, p::f16, 32>(in, 801);
    check_decode_pair<p::kivi<2>, p::kivi<4>, 32>(in, 802);
  }
}

TEST_CASE("paged decode split into page ranges matches the unsplit run", "[kernels][attention]") {
  // A long multi-query sequence and a batch: splitting forces partial states
  // and their merge; results must agree with the reference either way.
  for (const std::uint32_t items : {1u, 2u, 7u, 64u}) {
    k::attention_decode_options o;
    o.min_work_items = items;
    o.min_pages_per_item = 1;
    check_decode_pair<p::f16, p::kivi<2>, 16>(4, 1, 64, {1000}, 601, o);
    check_decode_pair<p::kivi<4>, p::q8_0, 32>(8, 2, 128, {1, 300, 0, 64}, 602, o);
  }
  // The plan splits only when asked and never below min_pages_per_item.
  ruvllm::test::rng gen(603);
  const kv_batch b = make_kv(gen, {1000}, 1, 64);
  const paged_batch<p::f16, p::f16, 16> pb(b, gen);  // 63 pages
  k::attention_decode_options o;
  std::vector<std::byte> ws(k::attention_decode_workspace_bytes(pb.view.desc(), 4, {}) * 16);
  CHECK(k::attention_plan_decode(pb.view, 4, o, ws)->work_items() == 1);
  o.min_work_items = 2;
  CHECK(k::attention_plan_decode(pb.view, 4, o, ws)->work_items() == 2);
  o.min_work_items = 1000;
  o.min_pages_per_item = 8;
  CHECK(k::attention_plan_decode(pb.view, 4, o, ws)->work_items() == 8);
}

namespace {

/// Runs the plan's items all in one call (page-major over items that share
/// pages) and each alone on a second plan; every item's state must have the
/// same bits both ways, i.e. items never share or mix state.
template <class K, class V, std::size_t T>
void check_items_alone_and_together(std::size_t n_heads, std::size_t n_kv_heads, std::size_t D,
                                    std::vector<std::size_t> lens, std::uint64_t seed,
                                    const k::attention_decode_options& o = {}) {
  const decode_input in = make_input(n_heads, n_kv_heads, D, std::move(lens), seed);
  ruvllm::test::rng gen(seed + 1);
  const paged_batch<K, V, T> pb(in.b, gen);
  const k::paged_kv_desc d = pb.view.desc();
  const std::size_t bytes = k::attention_decode_workspace_bytes(d, n_heads, o);
  auto ws_together = ruvllm::aligned_buffer<std::byte>::allocate(bytes).value();
  auto ws_alone = ruvllm::aligned_buffer<std::byte>::allocate(bytes).value();
  const auto together = k::attention_plan_decode(pb.view, n_heads, o, ws_together.span());
  const auto alone = k::attention_plan_decode(pb.view, n_heads, o, ws_alone.span());
  REQUIRE(together.has_value());
  REQUIRE(alone.has_value());
  const std::size_t n = together->work_items(), G = together->group;
  INFO("K " << K::name << " V " << V::name << " T " << T << " heads " << n_heads << "/" << n_kv_heads << " D " << D
            << " items " << n);
  for_each_backend([&](auto backend, const std::string& name) {
    INFO("backend " << name);
    using B = decltype(backend);
    std::memset(ws_together.data(), 0xFF, bytes);
    std::memset(ws_alone.data(), 0xFF, bytes);
    REQUIRE(k::attention_plan_decode(pb.view, n_heads, o, ws_together.span()).has_value());
    REQUIRE(k::attention_plan_decode(pb.view, n_heads, o, ws_alone.span()).has_value());
    k::ops<B>::attention_decode(*together, pb.view, in.q.data(), 0, n);
    for (std::size_t i = n; i-- > 0;) k::ops<B>::attention_decode(*alone, pb.view, in.q.data(), i, i + 1);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t h = 0; h < G; ++h) {
        differing += std::memcmp(together->ml(i, h), alone->ml(i, h), 2 * sizeof(float)) != 0;
        differing += std::memcmp(together->acc(i, h), alone->acc(i, h), D * sizeof(float)) != 0;
      }
    CHECK(differing == 0);
  });
}

}  // namespace

TEST_CASE("paged decode gives an item the same state alone and among items over the same pages",
          "[kernels][attention]") {
  // Many KV heads over shared pages (the page-major runs), GQA groups of
  // every block width, and a batch whose sequences end runs.
  check_items_alone_and_together<p::f16, p::f16, 16>(12, 12, 64, {129}, 901);
  check_items_alone_and_together<p::f16, p::q8_0, 16>(32, 8, 128, {1, 40, 0, 333}, 902);
  check_items_alone_and_together<p::q8_0, p::kivi<4>, 32>(14, 2, 64, {200, 17}, 903);
  check_items_alone_and_together<p::kivi<2>, p::f16, 32>(6, 3, 64, {75}, 904);
  // Split page ranges: runs break where the range changes.
  k::attention_decode_options o;
  o.min_work_items = 24;
  o.min_pages_per_item = 1;
  check_items_alone_and_together<p::f16, p::kivi<2>, 16>(8, 4, 64, {300, 5}, 905, o);
}

TEST_CASE("attention states over disjoint keys merge to the whole", "[kernels][attention]") {
  // Two tiers of one sequence (an f16 hot tail and a KIVI-2 cold prefix),
  // each attended through its own view, merged by lse = attention over both.
  ruvllm::test::rng gen(701);
  const std::size_t D = 64, n_heads = 4, n_kv = 2;
  const kv_batch cold = make_kv(gen, {300}, n_kv, D);
  const kv_batch hot = make_kv(gen, {40}, n_kv, D);
  const paged_batch<p::kivi<2>, p::kivi<2>, 32> pc(cold, gen);
  const paged_batch<p::f16, p::f16, 16> ph(hot, gen);
  std::vector<float> q(n_heads * D);
  for (float& x : q) x = gen.normal();
  std::vector<std::vector<float>> ck(1), cv(1), hk(1), hv(1);
  pc.dequantized(0, cold, ck[0], cv[0]);
  ph.dequantized(0, hot, hk[0], hv[0]);
  kv_batch both{n_kv, D, {340}, {ck[0]}, {cv[0]}};
  both.keys[0].insert(both.keys[0].end(), hk[0].begin(), hk[0].end());
  both.values[0].insert(both.values[0].end(), hv[0].begin(), hv[0].end());
  std::vector<double> want, want_lse;
  ref_decode(both, both.keys, both.values, q, n_heads, 1.0 / std::sqrt(double(D)), want, want_lse);
  for_each_backend([&](auto backend, const std::string& name) {
    INFO(name);
    using B = decltype(backend);
    std::vector<float> o1, l1, o2, l2;
    run_decode<B>(pc.view, n_heads, {}, q, o1, l1);
    run_decode<B>(ph.view, n_heads, {}, q, o2, l2);
    k::ops<B>::attention_merge_states(o1.data(), l1.data(), o2.data(), l2.data(), o1.data(), l1.data(), n_heads, D);
    const decode_errors e = compare(o1, l1, want, want_lse);
    CHECK(e.out <= 2e-5 * 4.0);
    CHECK(e.lse <= 1e-4);
  });
  // An empty side contributes nothing; two empty sides give zeros and -inf.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> a(D, 1.0f), b(D, 7.0f), out(D);
  float la = 0.5f, lb = -inf, lo = 0.0f;
  k::ops<scalar>::attention_merge_states(a.data(), &la, b.data(), &lb, out.data(), &lo, 1, D);
  CHECK(out[0] == 1.0f);
  CHECK(lo == 0.5f);
  la = -inf;
  k::ops<scalar>::attention_merge_states(a.data(), &la, b.data(), &lb, out.data(), &lo, 1, D);
  CHECK(out[0] == 0.0f);
  CHECK(lo == -inf);
}

TEST_CASE("paged view and decode plan validate at the boundary", "[kernels][attention]") {
  using view = k::paged_kv_view<p::f16, p::kivi<2>, 32>;
  std::vector<std::byte> pool(1 << 16);
  const std::uint32_t indptr[] = {0, 2, 2}, ids[] = {3, 1}, last[] = {5, 0};
  CHECK(view::make(pool.data(), pool.data(), 4, indptr, ids, last, 2, 64).has_value());
  CHECK_FALSE(view::make(pool.data(), pool.data(), 3, indptr, ids, last, 2, 64).has_value());  // id 3 >= 3 pages
  const std::uint32_t bad_last[] = {33, 0};
  CHECK_FALSE(view::make(pool.data(), pool.data(), 4, indptr, ids, bad_last, 2, 64).has_value());
  const std::uint32_t nonzero_empty[] = {5, 1};
  CHECK_FALSE(view::make(pool.data(), pool.data(), 4, indptr, ids, nonzero_empty, 2, 64).has_value());
  CHECK_FALSE(view::make(pool.data(), pool.data(), 4, indptr, ids, last, 2, 72).has_value());  // head_dim % 16
  CHECK_FALSE(view::make(pool.data(), pool.data(), 4, indptr, ids, last, 0, 64).has_value());
  CHECK_FALSE(view::make(pool.data() + 1, pool.data(), 4, indptr, ids, last, 2, 64).has_value());  // misaligned
  // KIVI values need a group dividing head_dim; q8_0 a head_dim multiple of 32.
  CHECK_FALSE((k::paged_kv_view<p::f16, p::kivi<2, 64>, 32>::make(pool.data(), pool.data(), 4, indptr, ids, last, 1, 80)
                   .has_value()));
  CHECK_FALSE(
      (k::paged_kv_view<p::q8_0, p::f16, 32>::make(pool.data(), pool.data(), 4, indptr, ids, last, 1, 48).has_value()));
  // The plan refuses a small workspace and a ratio that is not an integer.
  const auto v = view::make(pool.data(), pool.data(), 4, indptr, ids, last, 2, 64).value();
  const std::size_t need = k::attention_decode_workspace_bytes(v.desc(), 4);
  std::vector<std::byte> ws(need);
  CHECK(k::attention_plan_decode(v, 4, {}, ws).has_value());
  CHECK_FALSE(k::attention_plan_decode(v, 4, {}, std::span(ws).first(need - 1)).has_value());
  CHECK_FALSE(k::attention_plan_decode(v, 3, {}, ws).has_value());
  // Page sizes follow the documented layouts.
  STATIC_REQUIRE(view::k_head_bytes(128) == 32 * 128 * 2);
  STATIC_REQUIRE(view::v_head_bytes(128) == 32 * 4 * 12);
  STATIC_REQUIRE(k::paged_kv_view<p::kivi<2>, p::q8_0, 64>::k_head_bytes(128) == 2 * 128 * 12);
  STATIC_REQUIRE(k::paged_kv_view<p::kivi<2>, p::q8_0, 64>::v_head_bytes(128) == 64 * 4 * 34);
}

}  // namespace attention_test
