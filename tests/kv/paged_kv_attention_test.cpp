// Decode attention of ops<backend::highway> over paged_kv_cache views equals
// naive attention over the plain token vectors: exactly the stored values
// (read back), and within the precision's quantization error of the f32
// inputs. Covers prefill in chunks, forks with copy-on-write, GQA and every
// layer's slab.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ruvllm/core/aligned_buffer.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/kv/paged_kv_cache.hpp"
#include "support/rng.hpp"

namespace paged_kv_attention_test {

namespace {

namespace kv = ruvllm::kv;
namespace k = ruvllm::kernels;
namespace p = ruvllm::precision;
using hw = ruvllm::backend::highway;

// Naive attention of one query head over n tokens ([token][kv_head][dim] rows).
void naive_attend(const float* q, const std::vector<float>& keys, const std::vector<float>& values, std::size_t n,
                  std::size_t stride, std::size_t head_off, std::size_t D, double scale, double* out) {
  std::vector<double> s(n);
  double m = -std::numeric_limits<double>::infinity();
  for (std::size_t t = 0; t < n; ++t) {
    double dot = 0.0;
    for (std::size_t c = 0; c < D; ++c) dot += double{q[c]} * keys[t * stride + head_off + c];
    s[t] = dot * scale;
    m = std::max(m, s[t]);
  }
  double l = 0.0;
  for (std::size_t t = 0; t < n; ++t) l += (s[t] = std::exp(s[t] - m));
  for (std::size_t c = 0; c < D; ++c) {
    double acc = 0.0;
    for (std::size_t t = 0; t < n; ++t) acc += s[t] * values[t * stride + head_off + c];
    out[c] = acc / l;
  }
}

template <class Config>
void check_decode_over_cache(std::uint64_t seed, std::size_t n_heads, double loose_bound) {
  using cache_t = kv::paged_kv_cache<Config>;
  constexpr std::size_t L = Config::layers, H = Config::kv_heads, D = Config::head_dim, R = cache_t::row_floats;
  ruvllm::test::rng gen(seed);
  auto blocks = kv::block_allocator::create(cache_t::layout().value(), 256).value();
  auto cache = cache_t::create(blocks, {16, 1024}).value();
  auto ws = cache.make_workspace(8);

  // Plain token vectors: f32 inputs per sequence, [layer][token][kv_head][dim].
  struct seq_model {
    kv::seq_id id;
    std::vector<std::vector<float>> k, v;  // per layer
  };
  std::vector<seq_model> seqs;
  const auto append = [&](std::vector<std::size_t> idx, std::vector<std::uint32_t> counts) {
    std::vector<kv::step_entry> batch;
    for (std::size_t i = 0; i < idx.size(); ++i) batch.push_back({seqs[idx[i]].id, counts[i]});
    REQUIRE(cache.plan(batch, ws).has_value());
    for (std::size_t layer = 0; layer < L; ++layer)
      for (std::size_t i = 0; i < idx.size(); ++i) {
        std::vector<float> kk(counts[i] * R), vv(counts[i] * R);
        for (auto& x : kk) x = gen.normal();
        for (auto& x : vv) x = gen.normal();
        REQUIRE(cache.append(ws, layer, i, kk, vv).has_value());
        auto& m = seqs[idx[i]];
        m.k[layer].insert(m.k[layer].end(), kk.begin(), kk.end());
        m.v[layer].insert(m.v[layer].end(), vv.begin(), vv.end());
      }
  };
  const std::vector<std::uint32_t> prompt = {1, 17, 40, 100, 33};
  for (std::size_t s = 0; s < prompt.size(); ++s)
    seqs.push_back(
        {cache.add_sequence().value(), std::vector<std::vector<float>>(L), std::vector<std::vector<float>>(L)});
  // Prefill in two chunks (block boundaries inside and between chunks).
  std::vector<std::uint32_t> first, second;
  for (std::uint32_t n : prompt) {
    first.push_back(n / 2);
    second.push_back(n - n / 2);
  }
  append({0, 1, 2, 3, 4}, first);
  append({0, 1, 2, 3, 4}, second);
  // Forks of a partial-block sequence and of a block-aligned prefix.
  for (std::size_t parent : {std::size_t{1}, std::size_t{4}}) {
    seq_model f{cache.fork(seqs[parent].id).value(), seqs[parent].k, seqs[parent].v};
    seqs.push_back(f);
  }
  append({1, 5}, {3, 5});

  // The decode step: one new token per sequence, then attention per layer.
  std::vector<std::size_t> all;
  for (std::size_t s = 0; s < seqs.size(); ++s) all.push_back(s);
  append(all, std::vector<std::uint32_t>(all.size(), 1));

  const std::size_t batch = seqs.size(), G = n_heads / H;
  const double scale = 1.0 / std::sqrt(double(D));
  double tight = 0.0, loose = 0.0;
  for (std::size_t layer = 0; layer < L; ++layer) {
    const auto view = cache.view(ws, layer).value();
    REQUIRE(view.batch == batch);
    std::vector<float> q(batch * n_heads * D);
    for (auto& x : q) x = gen.normal();
    const k::attention_decode_options o{};
    auto work =
        ruvllm::aligned_buffer<std::byte>::allocate(k::attention_decode_workspace_bytes(view.desc(), n_heads, o))
            .value();
    const auto plan = k::attention_plan_decode(view, n_heads, o, work.span());
    REQUIRE(plan.has_value());
    std::vector<float> out(batch * n_heads * D), lse(batch * n_heads);
    k::ops<hw>::attention_decode(*plan, view, q.data(), 0, plan->work_items());
    k::ops<hw>::attention_decode_merge(*plan, out.data(), lse.data(), 0, batch);

    for (std::size_t s = 0; s < batch; ++s) {
      const std::size_t n = seqs[s].k[layer].size() / R;
      REQUIRE(view.seq_len(s) == n);
      // The stored values, as the cache reads them back.
      std::vector<float> sk(n * R), sv(n * R);
      for (std::size_t t = 0; t < n; ++t)
        REQUIRE(cache
                    .read(seqs[s].id, layer, t, std::span<float>(sk).subspan(t * R, R),
                          std::span<float>(sv).subspan(t * R, R))
                    .has_value());
      for (std::size_t h = 0; h < n_heads; ++h) {
        std::vector<double> want_stored(D), want_input(D);
        const float* qh = q.data() + (s * n_heads + h) * D;
        naive_attend(qh, sk, sv, n, R, (h / G) * D, D, scale, want_stored.data());
        naive_attend(qh, seqs[s].k[layer], seqs[s].v[layer], n, R, (h / G) * D, D, scale, want_input.data());
        for (std::size_t c = 0; c < D; ++c) {
          const double got = out[(s * n_heads + h) * D + c];
          tight = std::max(tight, std::abs(got - want_stored[c]));
          loose = std::max(loose, std::abs(got - want_input[c]));
        }
      }
    }
  }
  INFO("max |out - naive(stored)| " << tight << ", max |out - naive(f32 input)| " << loose);
  CHECK(tight < 2e-4);
  CHECK(loose < loose_bound);
  for (auto& s : seqs) REQUIRE(cache.free_sequence(s.id).has_value());
  CHECK(blocks.blocks_in_use() == 0);
}

}  // namespace

TEST_CASE("highway decode attention over the paged cache equals naive attention", "[kv][paged][attention]") {
  check_decode_over_cache<kv::kv_config<2, 2, 64, p::f16, p::f16, 16>>(950, 4, 0.003);
  check_decode_over_cache<kv::kv_config<3, 1, 128, p::q8_0, p::q8_0, 16>>(951, 2, 0.04);
  check_decode_over_cache<kv::kv_config<2, 2, 64, p::f16, p::kivi<4>, 32>>(952, 8, 0.25);
  check_decode_over_cache<kv::kv_config<1, 4, 32, p::q8_0, p::kivi<2, 16>, 8>>(953, 4, 0.9);
}

}  // namespace paged_kv_attention_test
