#ifndef RUVLLM_KERNELS_XSIMD_ATTENTION_HPP
#define RUVLLM_KERNELS_XSIMD_ATTENTION_HPP

// Attention kernels of backend::xsimd (see xsimd/arch.hpp on compile flags).
// Contract: ruvllm/kernels/scalar/attention.hpp.
//
// Prefill uses the tiling of the Highway kernel (attention-inl.h): Q^T
// pre-scaled, contiguous K and V blocks, 6 x 2-vector FMA register tiles for
// S^T (rows in lanes) and O += PV, online softmax across rows with xsimd::exp.
// Decode dequantizes into a stack tile of one row (f16, q8_0 keys; every value
// format) or one channel of one KIVI key group (codes along tokens: tokens in
// lanes, the channel's scale folded into the query), inside the online-softmax
// loop over pages; then plain vector dot products and FMAs. Simpler than the
// Highway kernel's in-register dequantization: xsimd is the compile-time
// backend for -march=native builds, Highway the tuned one.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/paged_kv_view.hpp"
#include "ruvllm/kernels/scalar/attention.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"
#include "ruvllm/kernels/xsimd/kv_quant.hpp"

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {
namespace attention_x {

using vf = ::xsimd::batch<float>;
using vi = ::xsimd::batch<std::int32_t>;
inline constexpr std::size_t lanes = vf::size;
inline constexpr float neg_inf = -std::numeric_limits<float>::infinity();
inline constexpr std::size_t tile_rows = attention_tile_rows;
inline constexpr std::size_t tile_keys = attention_tile_keys;
static_assert(tile_rows % (2 * lanes) == 0, "a row tile holds whole pairs of vectors");

/// 0, 1, 2, ... in the lanes (for partial-vector masks).
[[nodiscard]] inline vf iota() noexcept {
  alignas(64) float v[lanes];
  for (std::size_t i = 0; i < lanes; ++i) v[i] = static_cast<float>(i);
  return vf::load_aligned(v);
}

[[nodiscard]] inline float reduce_max(vf v) noexcept {
  alignas(64) float x[lanes];
  v.store_aligned(x);
  float m = x[0];
  for (std::size_t i = 1; i < lanes; ++i) m = std::max(m, x[i]);
  return m;
}

using kv_x::widen_f16;  // shared with the KV quantizers (xsimd/kv_quant.hpp)

// ================================================================ prefill

/// S^T[j][r0 .. r0 + 2 lanes) = k_j . Q^T[.][r0 ..] for MK keys from j0.
template <std::size_t MK>
inline void score_keys(const float* kc, std::size_t j0, const float* qt, std::size_t D, std::size_t r0,
                       float* s) noexcept {
  vf c0[MK], c1[MK];
  for (std::size_t k = 0; k < MK; ++k) c0[k] = c1[k] = vf(0.0f);
  const float* key = kc + j0 * D;
  const float* q = qt + r0;
  for (std::size_t x = 0; x < D; ++x, q += tile_rows) {
    const vf a0 = vf::load_aligned(q), a1 = vf::load_aligned(q + lanes);
    for (std::size_t k = 0; k < MK; ++k) {
      const vf b(key[k * D + x]);
      c0[k] = ::xsimd::fma(b, a0, c0[k]);
      c1[k] = ::xsimd::fma(b, a1, c1[k]);
    }
  }
  for (std::size_t k = 0; k < MK; ++k) {
    c0[k].store_aligned(s + (j0 + k) * tile_rows + r0);
    c1[k].store_aligned(s + (j0 + k) * tile_rows + r0 + lanes);
  }
}

/// o[r][c ..] += sum_{j < nkeys} P^T[j][r] v[j][c ..] for MR rows from r0.
template <std::size_t MR, std::size_t NV>
inline void pv_rows(const float* pt, std::size_t r0, std::size_t nkeys, const float* v, std::size_t c, float* o,
                    std::size_t D) noexcept {
  vf acc[MR][NV];
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t n = 0; n < NV; ++n) acc[r][n] = vf::load_aligned(o + (r0 + r) * D + c + n * lanes);
  const float* vr = v + c;
  const float* p = pt + r0;
  for (std::size_t j = 0; j < nkeys; ++j, vr += D, p += tile_rows) {
    vf b[NV];
    for (std::size_t n = 0; n < NV; ++n) b[n] = vf::load_aligned(vr + n * lanes);
    for (std::size_t r = 0; r < MR; ++r) {
      const vf a(p[r]);
      for (std::size_t n = 0; n < NV; ++n) acc[r][n] = ::xsimd::fma(a, b[n], acc[r][n]);
    }
  }
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t n = 0; n < NV; ++n) acc[r][n].store_aligned(o + (r0 + r) * D + c + n * lanes);
}

template <std::size_t MR>
inline void pv_all(const float* pt, std::size_t r0, std::size_t nkeys, const float* v, float* o,
                   std::size_t D) noexcept {
  std::size_t c = 0;
  for (; c + 2 * lanes <= D; c += 2 * lanes) pv_rows<MR, 2>(pt, r0, nkeys, v, c, o, D);
  for (; c < D; c += lanes) pv_rows<MR, 1>(pt, r0, nkeys, v, c, o, D);
}

template <class F>
inline void for_blocks_of_6(std::size_t n, F&& f) {
  std::size_t i = 0;
  for (; i + 6 <= n; i += 6) f.template operator()<6>(i);
  switch (n - i) {
    case 5: f.template operator()<5>(i); break;
    case 4: f.template operator()<4>(i); break;
    case 3: f.template operator()<3>(i); break;
    case 2: f.template operator()<2>(i); break;
    case 1: f.template operator()<1>(i); break;
    default: break;
  }
}

inline void copy_rows(const float* src, std::size_t stride, std::size_t n, std::size_t D, float* dst) noexcept {
  for (std::size_t j = 0; j < n; ++j, src += stride, dst += D)
    for (std::size_t c = 0; c < D; c += lanes) vf::load_unaligned(src + c).store_aligned(dst + c);
}

inline void prefill_item(const attention_prefill_args& a, const attention_detail::prefill_tiles& t,
                         std::size_t item) noexcept {
  const std::size_t D = a.head_dim, G = a.n_heads / a.n_kv_heads;
  const std::size_t tiles = attention_detail::prefill_row_tiles(a);
  const std::size_t kvh = item / tiles, r0 = (item % tiles) * tile_rows;
  const std::size_t nr = std::min(tile_rows, a.n_q * G - r0);
  const std::size_t nr_pad = attention_detail::round_up(nr, 2 * lanes);
  const vf zero(0.0f), ninf(neg_inf);
  for (std::size_t r = 0; r < nr_pad; ++r) {
    t.m[r] = neg_inf;
    t.l[r] = 0.0f;
    t.pos[r] = static_cast<float>(r < nr ? a.q_pos + (r0 + r) / G : std::size_t{1} << 24);
    if (r >= nr) {
      for (std::size_t x = 0; x < D; ++x) t.qt[x * tile_rows + r] = 0.0f;
      continue;
    }
    const std::size_t i = (r0 + r) / G, head = kvh * G + (r0 + r) % G;
    const float* src = a.q + i * a.q_stride + head * D;
    for (std::size_t x = 0; x < D; ++x) t.qt[x * tile_rows + r] = src[x] * a.scale;
    for (std::size_t x = 0; x < D; x += lanes) zero.store_aligned(t.o + r * D + x);
  }
  const std::size_t pos_max = a.q_pos + (r0 + nr - 1) / G;
  const std::size_t kv_end = a.causal ? std::min(a.n_kv, pos_max + 1) : a.n_kv;
  const auto visible = [&](std::size_t r, std::size_t kb0, std::size_t nk) {
    if (!a.causal) return nk;
    const auto pos = static_cast<std::size_t>(t.pos[std::min(r, nr - 1)]);
    return pos + 1 <= kb0 ? std::size_t{0} : std::min(nk, pos + 1 - kb0);
  };
  for (std::size_t kb0 = 0; kb0 < kv_end; kb0 += tile_keys) {
    const std::size_t nk = std::min(tile_keys, kv_end - kb0);
    copy_rows(a.k + kb0 * a.k_stride + kvh * D, a.k_stride, nk, D, t.k);
    copy_rows(a.v + kb0 * a.v_stride + kvh * D, a.v_stride, nk, D, t.v);
    for (std::size_t rp = 0; rp < nr_pad; rp += 2 * lanes) {
      const std::size_t keys = visible(rp + 2 * lanes - 1, kb0, nk);
      for_blocks_of_6(keys, [&]<std::size_t MK>(std::size_t j) { score_keys<MK>(t.k, j, t.qt, D, rp, t.s); });
    }
    for (std::size_t rv = 0; rv < nr_pad; rv += lanes) {
      const std::size_t keys = visible(rv + lanes - 1, kb0, nk);
      const bool mask = a.causal && visible(rv, kb0, nk) < keys;
      const vf pos = vf::load_aligned(t.pos + rv);
      const vf m_old = vf::load_aligned(t.m + rv);
      vf vmax = ninf;
      for (std::size_t j = 0; j < keys; ++j) {
        vf sj = vf::load_aligned(t.s + j * tile_rows + rv);
        if (mask) sj = ::xsimd::select(pos >= vf(static_cast<float>(kb0 + j)), sj, ninf);
        vmax = ::xsimd::max(vmax, sj);
      }
      const vf m_new = ::xsimd::max(m_old, vmax);
      // A row with no visible key yet (m_old = m_new = -inf) keeps alpha 0.
      const vf alpha = ::xsimd::select(m_new == ninf, zero, ::xsimd::exp(m_old - m_new));
      vf sum = zero;
      for (std::size_t j = 0; j < keys; ++j) {
        float* sj = t.s + j * tile_rows + rv;
        vf pj = ::xsimd::exp(vf::load_aligned(sj) - m_new);
        if (mask) pj = ::xsimd::select(pos >= vf(static_cast<float>(kb0 + j)), pj, zero);
        pj.store_aligned(sj);
        sum += pj;
      }
      for (std::size_t j = keys; j < nk; ++j) zero.store_aligned(t.s + j * tile_rows + rv);
      ::xsimd::fma(vf::load_aligned(t.l + rv), alpha, sum).store_aligned(t.l + rv);
      m_new.store_aligned(t.m + rv);
      alpha.store_aligned(t.alpha + rv);
    }
    for (std::size_t r = 0; r < nr; ++r) {
      if (t.alpha[r] == 1.0f) continue;
      const vf va(t.alpha[r]);
      for (std::size_t x = 0; x < D; x += lanes)
        (vf::load_aligned(t.o + r * D + x) * va).store_aligned(t.o + r * D + x);
    }
    for_blocks_of_6(
        nr, [&]<std::size_t MR>(std::size_t r) { pv_all<MR>(t.s, r, visible(r + MR - 1, kb0, nk), t.v, t.o, D); });
  }
  for (std::size_t r = 0; r < nr; ++r) {
    const std::size_t i = (r0 + r) / G, head = kvh * G + (r0 + r) % G;
    float* dst = a.out + i * a.out_stride + head * D;
    const vf inv(t.l[r] > 0.0f ? 1.0f / t.l[r] : 0.0f);
    for (std::size_t x = 0; x < D; x += lanes) (vf::load_aligned(t.o + r * D + x) * inv).store_unaligned(dst + x);
  }
}

// ================================================================= decode

inline constexpr std::size_t score_stride = kv_max_tokens_per_page + 16;

[[nodiscard]] inline float dot(const float* a, const float* b, std::size_t n) noexcept {
  vf acc0(0.0f), acc1(0.0f);
  std::size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 = ::xsimd::fma(vf::load_unaligned(a + i), vf::load_unaligned(b + i), acc0);
    acc1 = ::xsimd::fma(vf::load_unaligned(a + i + lanes), vf::load_unaligned(b + i + lanes), acc1);
  }
  for (; i < n; i += lanes) acc0 = ::xsimd::fma(vf::load_unaligned(a + i), vf::load_unaligned(b + i), acc0);
  return ::xsimd::hadd(acc0 + acc1);
}

/// acc[0, n) += w * x[0, n); n a multiple of lanes.
inline void axpy(float w, const float* x, float* acc, std::size_t n) noexcept {
  const vf wv(w);
  for (std::size_t i = 0; i < n; i += lanes)
    ::xsimd::fma(wv, vf::load_unaligned(x + i), vf::load_unaligned(acc + i)).store_unaligned(acc + i);
}

/// Row t of a page-head in a per-token format (f32, f16, q8_0, KIVI values) into dst.
inline void value_row(kv_format_desc f, kv_role r, const std::byte* head, std::size_t t, std::size_t D,
                      float* dst) noexcept {
  if (f.format == kv_format::f16) {
    widen_f16(head + 2 * t * D, D, dst);
  } else {
    scalar::dequantize_page_head(f, r, head, t, 1, D, dst, D);
  }
}

/// Scores of one page for heads [0, G) of the group: s[h][t] = q_h . k_t.
inline void score_page(const paged_kv_desc& kv, const float* q, std::size_t G, const std::byte* kh, std::size_t n,
                       float* s) noexcept {
  const std::size_t D = kv.head_dim;
  alignas(64) float row[kv_max_head_dim];
  const kv_format_desc f = kv.k_format;
  if (f.format == kv_format::f32 || f.format == kv_format::f16 || f.format == kv_format::q8_0) {
    for (std::size_t t = 0; t < n; ++t) {
      value_row(f, kv_role::key, kh, t, D, row);
      for (std::size_t h = 0; h < G; ++h) s[h * score_stride + t] = dot(q + h * D, row, D);
    }
    return;
  }
  // KIVI keys: one channel's G codes along tokens into `codes`, tokens in lanes.
  const unsigned bits = kv_bits(f.format);
  const std::size_t Gk = f.group, P = Gk * bits / 8, S = 4 + P;
  const std::size_t full = Gk / lanes * lanes;
  alignas(64) float codes[kv_max_tokens_per_page];
  for (std::size_t j = 0; j * Gk < n; ++j) {
    for (std::size_t h = 0; h < G; ++h)
      std::fill(s + h * score_stride + j * Gk, s + h * score_stride + (j + 1) * Gk, 0.0f);
    for (std::size_t ch = 0; ch < D; ++ch) {
      const std::byte* block = kh + S * (j * D + ch);
      const float scale = to_float(kv_quant_detail::load_f16(block));
      const float zero = to_float(kv_quant_detail::load_f16(block + 2));
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(block + 4);
      for (std::size_t i = 0; i < Gk; ++i)
        codes[i] = static_cast<float>(kv_quant_detail::kivi_code_at(bytes, bits, P, i));
      for (std::size_t h = 0; h < G; ++h) {
        const float qc = q[h * D + ch];
        float* sh = s + h * score_stride + j * Gk;
        const vf w(qc * scale), z(qc * zero);
        std::size_t i = 0;
        for (; i < full; i += lanes)
          (::xsimd::fma(w, vf::load_aligned(codes + i), vf::load_unaligned(sh + i)) + z).store_unaligned(sh + i);
        for (; i < Gk; ++i) sh[i] += qc * scale * codes[i] + qc * zero;
      }
    }
  }
}

inline void decode_item(const attention_decode_plan& plan, const paged_kv_desc& kv, const float* q,
                        std::size_t i) noexcept {
  const attention_decode_item& it = plan.items[i];
  const std::size_t D = plan.head_dim, G = plan.group;
  const float* qg = q + (std::size_t{it.seq} * plan.n_heads + std::size_t{it.kv_head} * G) * D;
  for (std::size_t h = 0; h < G; ++h) {
    plan.ml(i, h)[0] = neg_inf;
    plan.ml(i, h)[1] = 0.0f;
    std::fill(plan.acc(i, h), plan.acc(i, h) + D, 0.0f);
  }
  const vf idx = iota(), scale(plan.scale), zero(0.0f);
  alignas(64) float row[kv_max_head_dim];
  for (std::size_t h0 = 0; h0 < G; h0 += 8) {  // scores of up to 8 heads per page on the stack
    const std::size_t hb = std::min<std::size_t>(8, G - h0);
    alignas(64) float s[8 * score_stride];
    for (std::uint32_t p = it.page_begin; p < it.page_end; ++p) {
      const std::byte* kh = kv.k_head(it.seq, p, it.kv_head);
      const std::byte* vh = kv.v_head(it.seq, p, it.kv_head);
      const std::size_t n = kv.page_tokens(it.seq, p);
      const std::size_t padded = attention_detail::round_up(n, lanes);
      score_page(kv, qg + h0 * D, hb, kh, n, s);
      for (std::size_t h = 0; h < hb; ++h) {
        float* sh = s + h * score_stride;
        vf vmax(neg_inf);
        for (std::size_t t = 0; t < padded; t += lanes)
          vmax = ::xsimd::max(vmax, ::xsimd::select(idx < vf(static_cast<float>(n - t)),
                                                    vf::load_aligned(sh + t) * scale, vf(neg_inf)));
        float* ml = plan.ml(i, h0 + h);
        const float m_new = std::max(ml[0], reduce_max(vmax));
        const vf vm(m_new);
        vf vsum(0.0f);
        for (std::size_t t = 0; t < padded; t += lanes) {
          const vf e = ::xsimd::exp(::xsimd::fms(vf::load_aligned(sh + t), scale, vm));
          const vf pr = ::xsimd::select(idx < vf(static_cast<float>(n - t)), e, zero);
          pr.store_aligned(sh + t);
          vsum += pr;
        }
        const float alpha = std::exp(ml[0] - m_new);
        ml[0] = m_new;
        ml[1] = ml[1] * alpha + ::xsimd::hadd(vsum);
        if (alpha != 1.0f) {
          float* acc = plan.acc(i, h0 + h);
          const vf va(alpha);
          for (std::size_t c = 0; c < D; c += lanes) (vf::load_unaligned(acc + c) * va).store_unaligned(acc + c);
        }
      }
      for (std::size_t t = 0; t < n; ++t) {
        value_row(kv.v_format, kv_role::value, vh, t, D, row);
        for (std::size_t h = 0; h < hb; ++h) axpy(s[h * score_stride + t], row, plan.acc(i, h0 + h), D);
      }
    }
  }
}

}  // namespace attention_x
}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct attention_ops<backend::xsimd> {
  /// Flash-attention prefill of work items [begin, end); workspace holds at
  /// least attention_prefill_workspace_bytes(a.head_dim) bytes.
  static void attention_prefill(const attention_prefill_args& a, std::span<std::byte> workspace, std::size_t begin,
                                std::size_t end) noexcept {
    RUVLLM_ASSERT(end <= attention_prefill_work_items(a) && begin <= end);
    RUVLLM_ASSERT(begin == end || workspace.size() >= attention_prefill_workspace_bytes(a.head_dim));
    if (begin == end) return;
    const auto tiles = attention_detail::carve_prefill_tiles(workspace.data(), a.head_dim);
    for (std::size_t w = begin; w < end; ++w) xsimd_impl::attention_x::prefill_item(a, tiles, w);
  }
  /// Paged decode of work items [begin, end) of `plan`.
  static void attention_decode(const attention_decode_plan& plan, const paged_kv_desc& kv, const float* q,
                               std::size_t begin, std::size_t end) noexcept {
    RUVLLM_ASSERT(end <= plan.work_items() && begin <= end);
    for (std::size_t i = begin; i < end; ++i) xsimd_impl::attention_x::decode_item(plan, kv, q, i);
  }
  /// attention_decode for a typed view.
  template <class K, class V, std::size_t T>
  static void attention_decode(const attention_decode_plan& plan, const paged_kv_view<K, V, T>& kv, const float* q,
                               std::size_t begin, std::size_t end) noexcept {
    attention_decode(plan, kv.desc(), q, begin, end);
  }
  /// Merges the partial states of sequences [begin, end) into out (and lse when non-null).
  static void attention_decode_merge(const attention_decode_plan& plan, float* out, float* lse, std::size_t begin,
                                     std::size_t end) noexcept {
    RUVLLM_ASSERT(end <= plan.batch && begin <= end);
    attention_detail::decode_merge(plan, out, lse, begin, end);
  }
  /// Combines two attention outputs over disjoint keys by their log-sum-exps.
  static void attention_merge_states(const float* a, const float* lse_a, const float* b, const float* lse_b, float* out,
                                     float* lse_out, std::size_t rows, std::size_t head_dim) noexcept {
    attention_detail::merge_states(a, lse_a, b, lse_b, out, lse_out, rows, head_dim);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_ATTENTION_HPP
