// Highway attention kernels (flash prefill, paged decode), compiled once per
// SIMD target. No include guard: the toggle below lets hwy/foreach_target.h
// re-include this file for each target, through the umbrella
// ruvllm/kernels/kernels-inl.h. The contract is at the top of
// ruvllm/kernels/scalar/attention.hpp, the page layouts at the top of
// ruvllm/kernels/paged_kv_view.hpp.
//
// Prefill (per work item: one KV head, attention_tile_rows rows of (query,
// head-in-group), so a GQA group shares every K/V load):
//   Q^T [dim][row], pre-scaled, packed once per item;
//   for each block of attention_tile_keys keys:
//     copy the K and V rows into contiguous tiles: in [token][head][dim] the
//       rows of one head sit a whole token apart (16 KiB at 32 x 128), so a
//       64-key block read in place maps onto a few L1 sets and thrashes;
//       the next block is prefetched meanwhile;
//     S^T [key][row] = K Q^T with a 6-key x 2-row-vector register tile (12
//       accumulators, 2 loads + 6 broadcasts per 12 FMAs), rows in lanes so
//       no block needs transposing; causal: a pair of row vectors only
//       computes the keys its last row may see;
//     online softmax with rows in lanes (vector max, hn::Exp, sum; causal
//       mask by comparing positions only in blocks that cross a row), then
//       the output rows rescaled by exp(m_old - m_new);
//     O += P V with a 6-row x 2-vector register tile over [row][dim].
// Tiles (head_dim 128): Q^T, O and the K and V copies 32 KiB each stay in
// L2; a pair of Q^T row vectors (8 KiB) and the 16 KiB score tile in L1. The
// next work item's Q rows and first key block are prefetched before each item.
//
// Decode (per work item: one sequence, one KV head, a page range; heads of
// the GQA group in register blocks of 8, 4, 2 or 1 so each K/V vector loaded
// serves every head of the block). An item's pages are taken in spans that
// fill a head's row of scores (span_pages: 256 tokens). Consecutive items
// over the same pages take each span in turn, so the next item's page-heads
// (its neighbours in every page) stream in while the current one works: on a
// 110M-shape decode step at position 128 (12 KV heads, f16 KV evicted from
// cache by the weights every step) visiting the items page-major cut
// attention's share of the step's time from ~14.5% to ~9% (Zen 5, one
// thread; attention / GEMV profile samples 0.17 -> 0.10), where item by
// item over the whole sequence read one 2 KiB page-head per 24 KiB page.
// Per span and head block:
//   scores for every page of the span, side by side, dequantizing in registers:
//     f16 / q8_0 keys: dot products over dim (vector per 8-16 channels), 1-8
//       tokens at a time, a q8_0 block's scale multiplied into the widened codes;
//     KIVI keys (quantized per channel, codes along tokens): tokens in lanes,
//       score = q.zero + sum_c (q_c scale_c) code_c -- the dequantization is
//       folded into the query, one widening load + shift + mask per 4-8 codes;
//   one online-softmax step over the span (vector max, exp, sum), rescale the
//     state -- once per span, not per page, as short pages made it a third
//     of the work;
//   acc += sum_t p_t v_t page by page over dim vectors, p_t times each
//     block's scale folded into the broadcast weight, KIVI zeros added once
//     per group.
// Scale/zero f16 pairs are gathered into a small stack array and widened a
// vector at a time; nothing larger than a span's scores or a group's folded
// query (8 KiB) is ever dequantized into memory. Prefetches run one phase
// ahead, a slice per loop step: a page-head's values while its keys are
// scored, and while a page's values are accumulated the keys scored next in
// its place (the next item's on that page).
//
// Highway 1.0.3 facts this relies on:
//  * PromoteTo(float, float16) is VCVTPH2PS on AVX2/AVX3/AVX3_DL (bit-exact
//    ruvllm::to_float); elsewhere f16 is widened by f16_bits_to_f32
//    (kv_quant-inl.h, with the other widening loads).
//  * hn::Exp (hwy/contrib/math) returns 0 below -104, so exp(-inf) == 0.
//  * The SCALAR target (the g++ 12 fallback) has one lane and lacks ops: it
//    forwards to the scalar reference.

#if defined(RUVLLM_KERNELS_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_ATTENTION_INL_H_
#undef RUVLLM_KERNELS_ATTENTION_INL_H_
#else
#define RUVLLM_KERNELS_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/kv_quant-inl.h"
#include "ruvllm/kernels/paged_kv_view.hpp"
#include "ruvllm/kernels/scalar/attention.hpp"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
namespace attention_simd {

using DF = hn::ScalableTag<float>;
inline constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// The widening loads shared with the KV quantizers (kv_quant-inl.h).
using kv_simd::f16_bits_to_f32;
using kv_simd::load_codes;
using kv_simd::load_f16;
using kv_simd::load_i8;
using kv_simd::load_u32;

template <class D>
HWY_INLINE float reduce_sum(D d, hn::Vec<D> v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

/// Widens the f16 pairs (low half: first f16, high half: second) in
/// pairs[0, n) to lo[] and hi[]; n is rounded up to whole vectors, so the
/// arrays hold round_up(n, Lanes) entries (pairs beyond n must be readable).
HWY_INLINE void widen_pairs(const std::uint32_t* HWY_RESTRICT pairs, std::size_t n, float* HWY_RESTRICT lo,
                            float* HWY_RESTRICT hi) {
  const DF d;
  const hn::RebindToUnsigned<DF> du;
  const std::size_t L = hn::Lanes(d);
  const auto low_mask = hn::Set(du, 0xFFFFu);
  for (std::size_t i = 0; i < n; i += L) {
    const auto v = hn::LoadU(du, pairs + i);
    hn::StoreU(f16_bits_to_f32(d, hn::And(v, low_mask)), d, lo + i);
    if (hi != nullptr) hn::StoreU(f16_bits_to_f32(d, hn::ShiftRight<16>(v)), d, hi + i);
  }
}

// ================================================================ prefill

inline constexpr std::size_t tile_rows = attention_tile_rows;
inline constexpr std::size_t tile_keys = attention_tile_keys;

/// S^T[j][r0 .. r0 + 2L) = k_j . Q^T[.][r0 ..] for MK keys from j0: keys
/// broadcast, rows in lanes (so no block needs transposing).
template <std::size_t MK>
HWY_INLINE void score_keys(const float* HWY_RESTRICT kc, std::size_t j0, const float* HWY_RESTRICT qt, std::size_t D,
                           std::size_t r0, float* HWY_RESTRICT s) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  using V = hn::Vec<DF>;
  V c0[MK], c1[MK];
  for (std::size_t k = 0; k < MK; ++k) c0[k] = c1[k] = hn::Zero(d);
  const float* HWY_RESTRICT key = kc + j0 * D;
  const float* HWY_RESTRICT q = qt + r0;
  for (std::size_t x = 0; x < D; ++x, q += tile_rows) {
    const V a0 = hn::Load(d, q);
    const V a1 = hn::Load(d, q + L);
    for (std::size_t k = 0; k < MK; ++k) {
      const V b = hn::Set(d, key[k * D + x]);
      c0[k] = hn::MulAdd(b, a0, c0[k]);
      c1[k] = hn::MulAdd(b, a1, c1[k]);
    }
  }
  for (std::size_t k = 0; k < MK; ++k) {
    hn::Store(c0[k], d, s + (j0 + k) * tile_rows + r0);
    hn::Store(c1[k], d, s + (j0 + k) * tile_rows + r0 + L);
  }
}

/// o[r][c ..] += sum_{j < nkeys} P^T[j][r] v[j][c ..] for MR rows from r0,
/// over NV vectors of channels from c.
template <std::size_t MR, std::size_t NV>
HWY_INLINE void pv_rows(const float* HWY_RESTRICT pt, std::size_t r0, std::size_t nkeys, const float* HWY_RESTRICT v,
                        std::size_t c, float* HWY_RESTRICT o, std::size_t D) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  using V = hn::Vec<DF>;
  V acc[MR][NV];
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t n = 0; n < NV; ++n) acc[r][n] = hn::Load(d, o + (r0 + r) * D + c + n * L);
  const float* HWY_RESTRICT vr = v + c;
  const float* HWY_RESTRICT p = pt + r0;
  for (std::size_t j = 0; j < nkeys; ++j, vr += D, p += tile_rows) {
    V b[NV];
    for (std::size_t n = 0; n < NV; ++n) b[n] = hn::Load(d, vr + n * L);
    for (std::size_t r = 0; r < MR; ++r) {
      const V a = hn::Set(d, p[r]);
      for (std::size_t n = 0; n < NV; ++n) acc[r][n] = hn::MulAdd(a, b[n], acc[r][n]);
    }
  }
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t n = 0; n < NV; ++n) hn::Store(acc[r][n], d, o + (r0 + r) * D + c + n * L);
}

template <std::size_t MR>
HWY_INLINE void pv_all(const float* pt, std::size_t r0, std::size_t nkeys, const float* v, float* o, std::size_t D) {
  const std::size_t L = hn::Lanes(DF());
  std::size_t c = 0;
  for (; c + 2 * L <= D; c += 2 * L) pv_rows<MR, 2>(pt, r0, nkeys, v, c, o, D);
  for (; c < D; c += L) pv_rows<MR, 1>(pt, r0, nkeys, v, c, o, D);
}

/// Runs f.template operator()<M>(i) over [0, n) in blocks of up to 6.
template <class F>
HWY_INLINE void for_blocks_of_6(std::size_t n, F&& f) {
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

/// dst[0, n) = src[0, n) for rows of D floats at a stride (D a multiple of Lanes).
HWY_INLINE void copy_rows(const float* HWY_RESTRICT src, std::size_t stride, std::size_t n, std::size_t D,
                          float* HWY_RESTRICT dst) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  for (std::size_t j = 0; j < n; ++j, src += stride, dst += D)
    for (std::size_t c = 0; c < D; c += L) hn::Store(hn::LoadU(d, src + c), d, dst + c);
}

/// Q^T[x][r] = scale * Q row r [x] for rows [0, nr) of the tile. On AVX2 whole
/// groups of 8 rows x 8 dims go through an in-register 8x8 transpose (24
/// shuffles per 64 floats instead of 64 scattered scalar stores, which cost
/// as much as the arithmetic of a tile's first key block); other targets and
/// the remaining rows store one float at a time.
inline void pack_qt(const attention_prefill_args& a, std::size_t kvh, std::size_t r0, std::size_t nr, float* qt) {
  const std::size_t D = a.head_dim, G = a.n_heads / a.n_kv_heads;
  const auto row_ptr = [&](std::size_t r) { return a.q + (r0 + r) / G * a.q_stride + (kvh * G + (r0 + r) % G) * D; };
  std::size_t r = 0;
#if HWY_TARGET == HWY_AVX2
  const DF d;
  const hn::Repartition<std::uint64_t, DF> d64;
  const auto scale = hn::Set(d, a.scale);
  const auto lo64 = [&](hn::Vec<DF> x, hn::Vec<DF> y) HWY_ATTR {
    return hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, x), hn::BitCast(d64, y)));
  };
  const auto hi64 = [&](hn::Vec<DF> x, hn::Vec<DF> y) HWY_ATTR {
    return hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, x), hn::BitCast(d64, y)));
  };
  for (; r + 8 <= nr; r += 8) {
    const float* p[8];
    for (std::size_t i = 0; i < 8; ++i) p[i] = row_ptr(r + i);
    for (std::size_t x = 0; x < D; x += 8) {
      hn::Vec<DF> v[8];
      for (std::size_t i = 0; i < 8; ++i) v[i] = hn::Mul(hn::LoadU(d, p[i] + x), scale);
      // Rows i, i+1 interleaved (per 128-bit block), then pairs of pairs.
      const auto t0 = hn::InterleaveLower(d, v[0], v[1]), t1 = hn::InterleaveUpper(d, v[0], v[1]);
      const auto t2 = hn::InterleaveLower(d, v[2], v[3]), t3 = hn::InterleaveUpper(d, v[2], v[3]);
      const auto t4 = hn::InterleaveLower(d, v[4], v[5]), t5 = hn::InterleaveUpper(d, v[4], v[5]);
      const auto t6 = hn::InterleaveLower(d, v[6], v[7]), t7 = hn::InterleaveUpper(d, v[6], v[7]);
      // u_k: rows 0-3 (or 4-7) of dims k | k + 4.
      const auto u0 = lo64(t0, t2), u1 = hi64(t0, t2), u2 = lo64(t1, t3), u3 = hi64(t1, t3);
      const auto u4 = lo64(t4, t6), u5 = hi64(t4, t6), u6 = lo64(t5, t7), u7 = hi64(t5, t7);
      float* out = qt + x * tile_rows + r;
      hn::Store(hn::ConcatLowerLower(d, u4, u0), d, out);
      hn::Store(hn::ConcatLowerLower(d, u5, u1), d, out + 1 * tile_rows);
      hn::Store(hn::ConcatLowerLower(d, u6, u2), d, out + 2 * tile_rows);
      hn::Store(hn::ConcatLowerLower(d, u7, u3), d, out + 3 * tile_rows);
      hn::Store(hn::ConcatUpperUpper(d, u4, u0), d, out + 4 * tile_rows);
      hn::Store(hn::ConcatUpperUpper(d, u5, u1), d, out + 5 * tile_rows);
      hn::Store(hn::ConcatUpperUpper(d, u6, u2), d, out + 6 * tile_rows);
      hn::Store(hn::ConcatUpperUpper(d, u7, u3), d, out + 7 * tile_rows);
    }
  }
#endif
  for (; r < nr; ++r) {
    const float* src = row_ptr(r);
    for (std::size_t x = 0; x < D; ++x) qt[x * tile_rows + r] = src[x] * a.scale;
  }
}

/// Asks for n rows of `bytes` at a stride to be brought into L2: the rows of
/// Q, K and V are one head's slice of a token (512 B at head_dim 128) a whole
/// token apart (16 KiB for 32 heads), which hardware prefetchers do not follow.
HWY_INLINE void prefetch_rows(const float* p, std::size_t stride, std::size_t n, std::size_t bytes) {
  for (std::size_t j = 0; j < n; ++j, p += stride)
    for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(reinterpret_cast<const char*>(p) + b, 0, 2);
}

/// Prefetches what prefill work item `item` reads first: its Q rows and first key block.
inline void prefetch_item(const attention_prefill_args& a, std::size_t item) {
  const std::size_t D = a.head_dim, G = a.n_heads / a.n_kv_heads;
  const std::size_t tiles = kernels::attention_detail::prefill_row_tiles(a);
  const std::size_t kvh = item / tiles, r0 = (item % tiles) * tile_rows;
  const std::size_t nr = std::min(tile_rows, a.n_q * G - r0);
  for (std::size_t r = 0; r < nr; ++r) {
    const std::size_t i = (r0 + r) / G, head = kvh * G + (r0 + r) % G;
    prefetch_rows(a.q + i * a.q_stride + head * D, 0, 1, D * sizeof(float));
    float* out = a.out + i * a.out_stride + head * D;  // for writing: saves the read-for-ownership miss
    for (std::size_t b = 0; b < D * sizeof(float); b += 64) __builtin_prefetch(reinterpret_cast<char*>(out) + b, 1, 2);
  }
  const std::size_t nk = std::min(tile_keys, a.n_kv);
  prefetch_rows(a.k + kvh * D, a.k_stride, nk, D * sizeof(float));
  prefetch_rows(a.v + kvh * D, a.v_stride, nk, D * sizeof(float));
}

inline void prefill_item(const attention_prefill_args& a, const kernels::attention_detail::prefill_tiles& t,
                         std::size_t item) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t D = a.head_dim, G = a.n_heads / a.n_kv_heads;
  const std::size_t tiles = kernels::attention_detail::prefill_row_tiles(a);
  const std::size_t kvh = item / tiles, r0 = (item % tiles) * tile_rows;
  const std::size_t nr = std::min(tile_rows, a.n_q * G - r0);
  // Rows in whole pairs of vectors; padding rows have q = 0 and see every key.
  const std::size_t nr_pad = kernels::attention_detail::round_up(nr, 2 * L);

  // Q^T (pre-scaled), output rows and per-row state.
  pack_qt(a, kvh, r0, nr, t.qt);
  for (std::size_t r = 0; r < nr_pad; ++r) {
    t.m[r] = neg_inf;
    t.l[r] = 0.0f;
    t.pos[r] = static_cast<float>(r < nr ? a.q_pos + (r0 + r) / G : std::size_t{1} << 24);
    if (r >= nr) {
      for (std::size_t x = 0; x < D; ++x) t.qt[x * tile_rows + r] = 0.0f;
      continue;
    }
    for (std::size_t x = 0; x < D; x += L) hn::Store(hn::Zero(d), d, t.o + r * D + x);
  }
  const std::size_t pos_max = a.q_pos + (r0 + nr - 1) / G;
  const std::size_t kv_end = a.causal ? std::min(a.n_kv, pos_max + 1) : a.n_kv;
  // Keys of block kb0 that row r may see: [0, visible(r)).
  const auto visible = [&](std::size_t r, std::size_t kb0, std::size_t nk) {
    if (!a.causal) return nk;
    const std::size_t pos = static_cast<std::size_t>(t.pos[std::min(r, nr - 1)]);
    return pos + 1 <= kb0 ? std::size_t{0} : std::min(nk, pos + 1 - kb0);
  };

  for (std::size_t kb0 = 0; kb0 < kv_end; kb0 += tile_keys) {
    const std::size_t nk = std::min(tile_keys, kv_end - kb0);
    copy_rows(a.k + kb0 * a.k_stride + kvh * D, a.k_stride, nk, D, t.k);
    copy_rows(a.v + kb0 * a.v_stride + kvh * D, a.v_stride, nk, D, t.v);
    if (kb0 + tile_keys < kv_end) {  // the next block arrives while this one is computed
      const std::size_t next = std::min(tile_keys, kv_end - kb0 - tile_keys);
      prefetch_rows(a.k + (kb0 + tile_keys) * a.k_stride + kvh * D, a.k_stride, next, D * sizeof(float));
      prefetch_rows(a.v + (kb0 + tile_keys) * a.v_stride + kvh * D, a.v_stride, next, D * sizeof(float));
    }

    // S^T, a pair of row vectors at a time, only over keys some row of the pair sees.
    for (std::size_t rp = 0; rp < nr_pad; rp += 2 * L) {
      const std::size_t keys = visible(rp + 2 * L - 1, kb0, nk);
      for_blocks_of_6(keys, [&]<std::size_t MK>(std::size_t j) HWY_ATTR { score_keys<MK>(t.k, j, t.qt, D, rp, t.s); });
    }

    // Online softmax with rows in lanes; P^T overwrites S^T, zero where masked.
    for (std::size_t rv = 0; rv < nr_pad; rv += L) {
      const std::size_t keys = visible(rv + L - 1, kb0, nk);
      const bool mask = a.causal && visible(rv, kb0, nk) < keys;
      const auto pos = hn::Load(d, t.pos + rv);
      const auto m_old = hn::Load(d, t.m + rv);
      auto vmax = hn::Set(d, neg_inf);
      for (std::size_t j = 0; j < keys; ++j) {
        auto sj = hn::Load(d, t.s + j * tile_rows + rv);
        if (mask) sj = hn::IfThenElse(hn::Ge(pos, hn::Set(d, static_cast<float>(kb0 + j))), sj, hn::Set(d, neg_inf));
        vmax = hn::Max(vmax, sj);
      }
      const auto m_new = hn::Max(m_old, vmax);
      // exp(-inf - -inf) is NaN, which hn::Exp maps to 0 like -inf: a row with
      // no visible key yet keeps l = 0 and a zero output.
      const auto alpha = hn::Exp(d, hn::Sub(m_old, m_new));
      auto sum = hn::Zero(d);
      for (std::size_t j = 0; j < keys; ++j) {
        float* sj = t.s + j * tile_rows + rv;
        auto pj = hn::Exp(d, hn::Sub(hn::Load(d, sj), m_new));
        if (mask) pj = hn::IfThenElseZero(hn::Ge(pos, hn::Set(d, static_cast<float>(kb0 + j))), pj);
        hn::Store(pj, d, sj);
        sum = hn::Add(sum, pj);
      }
      for (std::size_t j = keys; j < nk; ++j) hn::Store(hn::Zero(d), d, t.s + j * tile_rows + rv);
      hn::Store(hn::MulAdd(hn::Load(d, t.l + rv), alpha, sum), d, t.l + rv);
      hn::Store(m_new, d, t.m + rv);
      hn::Store(alpha, d, t.alpha + rv);
    }
    for (std::size_t r = 0; r < nr; ++r) {
      if (t.alpha[r] == 1.0f) continue;
      const auto va = hn::Set(d, t.alpha[r]);
      for (std::size_t x = 0; x < D; x += L) hn::Store(hn::Mul(hn::Load(d, t.o + r * D + x), va), d, t.o + r * D + x);
    }

    // O += P V, six output rows at a time over the keys the last of them sees.
    for_blocks_of_6(nr, [&]<std::size_t MR>(std::size_t r)
                            HWY_ATTR { pv_all<MR>(t.s, r, visible(r + MR - 1, kb0, nk), t.v, t.o, D); });
  }

  for (std::size_t r = 0; r < nr; ++r) {
    const std::size_t i = (r0 + r) / G, head = kvh * G + (r0 + r) % G;
    float* dst = a.out + i * a.out_stride + head * D;
    const auto inv = hn::Set(d, t.l[r] > 0.0f ? 1.0f / t.l[r] : 0.0f);
    for (std::size_t x = 0; x < D; x += L) hn::StoreU(hn::Mul(hn::Load(d, t.o + r * D + x), inv), d, dst + x);
  }
}

// ================================================================= decode

/// Stride of a head's row in the per-page score tile (a multiple of every
/// target's lanes, so padded vector loops stay inside the row).
inline constexpr std::size_t score_stride = kv_max_tokens_per_page + 16;

/// Prefetches a byte range a slice at a time, in step with the loop that
/// precedes its use: issuing a whole page-head of prefetches at once stalls
/// on the line-fill buffers (measured: 17% of a decode step).
struct streamer {
  const std::byte* p = nullptr;
  std::size_t bytes = 0;
  std::size_t next = 0;
  /// Prefetches up to the fraction done / total of the range.
  HWY_INLINE void until(std::size_t done, std::size_t total) {
    const std::size_t upto = total == 0 ? bytes : std::min(bytes, bytes * done / total);
    std::size_t at = next;  // a local: the loop then keeps it in a register
    for (; at < upto; at += 64) hwy::Prefetch(p + at);
    next = at;
  }
};

/// What one head block of one page needs.
struct page_ctx {
  const float* q;      // HB rows of head_dim (the block's first head)
  const std::byte* k;  // the page-head of keys
  const std::byte* v;  // the page-head of values
  std::size_t n;       // tokens in the page
  std::size_t D;
  float* s;    // this page's first score in HB rows of score_stride: scores, then probabilities
  float* acc;  // HB rows of D
  // While scoring, this page's values arrive; while accumulating values, the
  // next page's keys (no-ops once a range is done, e.g. for later head blocks).
  streamer* values_ahead;
  streamer* keys_ahead;
};

// ---- keys: s[h][t] = q_h . k_t (unscaled)

/// Tokens per step of the dim-lane scorers: HB * TB accumulators.
template <std::size_t HB>
inline constexpr std::size_t tokens_per_step = HB >= 8 ? 1 : 8 / HB;

/// One vector of a dense page row: E bytes per element (4: f32, 2: f16).
template <std::size_t E, class D>
HWY_INLINE hn::Vec<D> load_dense(D d, const std::byte* HWY_RESTRICT p) {
  if constexpr (E == 4) {
    return hn::LoadU(d, reinterpret_cast<const float*>(p));
  } else {
    return load_f16(d, p);
  }
}

// f32 / f16 keys (E bytes per element), TB tokens from t0.
template <std::size_t HB, std::size_t TB, std::size_t E>
HWY_INLINE void score_dense_step(const page_ctx& c, std::size_t t0) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  using V = hn::Vec<DF>;
  V acc[HB][TB];
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < TB; ++b) acc[h][b] = hn::Zero(d);
  const std::byte* row = c.k + E * t0 * c.D;
  for (std::size_t x = 0; x < c.D; x += L) {
    V k[TB];
    for (std::size_t b = 0; b < TB; ++b) k[b] = load_dense<E>(d, row + E * (b * c.D + x));
    for (std::size_t h = 0; h < HB; ++h) {
      const V qv = hn::LoadU(d, c.q + h * c.D + x);
      for (std::size_t b = 0; b < TB; ++b) acc[h][b] = hn::MulAdd(qv, k[b], acc[h][b]);
    }
  }
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < TB; ++b) c.s[h * score_stride + t0 + b] = reduce_sum(d, acc[h][b]);
}

template <std::size_t HB, std::size_t E>
HWY_INLINE void score_dense(const page_ctx& c) {
  constexpr std::size_t TB = tokens_per_step<HB>;
  std::size_t t = 0;
  for (; t + TB <= c.n; t += TB) {
    c.values_ahead->until(t + TB, c.n);
    score_dense_step<HB, TB, E>(c, t);
  }
  for (; t < c.n; ++t) score_dense_step<HB, 1, E>(c, t);
  c.values_ahead->until(1, 1);
}

// q8_0 keys: the widened codes of each 32-channel block times its scale
// (from `scales`, [token][block]), TB tokens from t0.
template <std::size_t HB, std::size_t TB>
HWY_INLINE void score_q8_0_step(const page_ctx& c, const float* HWY_RESTRICT scales, std::size_t t0) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  using V = hn::Vec<DF>;
  const std::size_t nb = c.D / 32, row_bytes = nb * sizeof(block_q8_0);
  V acc[HB][TB];
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < TB; ++b) acc[h][b] = hn::Zero(d);
  for (std::size_t blk = 0; blk < nb; ++blk) {
    V sc[TB];
    for (std::size_t b = 0; b < TB; ++b) sc[b] = hn::Set(d, scales[(t0 + b) * nb + blk]);
    for (std::size_t x = 0; x < 32; x += L) {
      V k[TB];
      for (std::size_t b = 0; b < TB; ++b)
        k[b] = hn::Mul(load_i8(d, c.k + (t0 + b) * row_bytes + blk * sizeof(block_q8_0) + 2 + x), sc[b]);
      for (std::size_t h = 0; h < HB; ++h) {
        const V qv = hn::LoadU(d, c.q + h * c.D + blk * 32 + x);
        for (std::size_t b = 0; b < TB; ++b) acc[h][b] = hn::MulAdd(qv, k[b], acc[h][b]);
      }
    }
  }
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < TB; ++b) c.s[h * score_stride + t0 + b] = reduce_sum(d, acc[h][b]);
}

template <std::size_t HB>
inline void score_q8_0(const page_ctx& c) {
  // The page's block scales, widened once: n * D / 32 <= 2048 floats.
  HWY_ALIGN std::uint32_t raw[kv_max_tokens_per_page * (kv_max_head_dim / 32)];
  HWY_ALIGN float scales[kv_max_tokens_per_page * (kv_max_head_dim / 32)];
  const std::size_t count = c.n * (c.D / 32);
  const std::size_t padded = kernels::attention_detail::round_up(count, hn::Lanes(DF()));
  for (std::size_t i = 0; i < count; ++i) raw[i] = load_u32(c.k + i * sizeof(block_q8_0));  // d + 2 code bytes
  for (std::size_t i = count; i < padded; ++i) raw[i] = 0;
  widen_pairs(raw, count, scales, nullptr);
  constexpr std::size_t TB = tokens_per_step<HB>;
  std::size_t t = 0;
  for (; t + TB <= c.n; t += TB) {
    c.values_ahead->until(t + TB, c.n);
    score_q8_0_step<HB, TB>(c, scales, t);
  }
  for (; t < c.n; ++t) score_q8_0_step<HB, 1>(c, scales, t);
  c.values_ahead->until(1, 1);
}

// KIVI keys: for group j, w[h][ch] = q_h[ch] * scale_ch and qz[h] = q_h . zero;
// then the group's tokens sit in lanes: s[h][t] = qz[h] + sum_ch w[h][ch] code(ch, t).
// DT has NT <= 8 lanes, NT dividing the plane P.
template <class DT, std::size_t HB>
inline void score_kivi(DT dt, const page_ctx& c, unsigned bits, std::size_t G) {
  const DF d;
  const std::size_t L = hn::Lanes(d), NT = hn::Lanes(dt);
  const std::size_t P = G * bits / 8, S = 4 + P, D = c.D;
  const hn::RebindToUnsigned<DT> dtu;
  const auto mask = hn::Set(dtu, (1u << bits) - 1u);
  using VT = hn::Vec<DT>;
  constexpr std::size_t TV = HB >= 8 ? 1 : 8 / HB;  // token vectors per pass
  HWY_ALIGN std::uint32_t raw[kv_max_head_dim];
  HWY_ALIGN float scale[kv_max_head_dim];
  HWY_ALIGN float zero[kv_max_head_dim];
  HWY_ALIGN float w[HB][kv_max_head_dim];
  for (std::size_t j = 0; j * G < c.n; ++j) {
    c.values_ahead->until(std::min(c.n, (j + 1) * G), c.n);
    const std::byte* group = c.k + S * j * D;
    for (std::size_t ch = 0; ch < D; ++ch) raw[ch] = load_u32(group + S * ch);
    widen_pairs(raw, D, scale, zero);
    float qz[HB];
    for (std::size_t h = 0; h < HB; ++h) {
      auto z = hn::Zero(d);
      for (std::size_t x = 0; x < D; x += L) {
        const auto qv = hn::LoadU(d, c.q + h * D + x);
        hn::Store(hn::Mul(qv, hn::Load(d, scale + x)), d, w[h] + x);
        z = hn::MulAdd(qv, hn::Load(d, zero + x), z);
      }
      qz[h] = reduce_sum(d, z);
    }
    const std::size_t vectors = G / NT;
    for (std::size_t v0 = 0; v0 < vectors; v0 += TV) {
      const std::size_t nv = std::min(TV, vectors - v0);
      VT acc[HB][TV];
      for (std::size_t h = 0; h < HB; ++h)
        for (std::size_t b = 0; b < TV; ++b) acc[h][b] = hn::Set(dt, qz[h]);
      int shift[TV];
      std::size_t offset[TV];
      for (std::size_t b = 0; b < TV; ++b) {
        const std::size_t tok = (v0 + std::min(b, nv - 1)) * NT;
        shift[b] = static_cast<int>(bits * (tok / P));
        offset[b] = tok % P;
      }
      const std::uint8_t* codes = reinterpret_cast<const std::uint8_t*>(group + 4);
      for (std::size_t ch = 0; ch < D; ++ch, codes += S) {
        VT k[TV];
        for (std::size_t b = 0; b < TV; ++b) k[b] = load_codes(dt, codes + offset[b], shift[b], mask);
        for (std::size_t h = 0; h < HB; ++h) {
          const VT wv = hn::Set(dt, w[h][ch]);
          for (std::size_t b = 0; b < TV; ++b) acc[h][b] = hn::MulAdd(wv, k[b], acc[h][b]);
        }
      }
      for (std::size_t h = 0; h < HB; ++h)
        for (std::size_t b = 0; b < nv; ++b) hn::StoreU(acc[h][b], dt, c.s + h * score_stride + j * G + (v0 + b) * NT);
    }
  }
}

// ---- values: acc[h][ch] += sum_t p[h][t] v_t[ch]

/// Channel vectors per pass of the value accumulators: HB * CV accumulators.
template <std::size_t HB>
inline constexpr std::size_t channel_vectors = HB >= 8 ? 1 : (HB >= 4 ? 2 : 4);

// f32 / f16 values (E bytes per element), NV channel vectors from x.
template <std::size_t HB, std::size_t NV, std::size_t E>
HWY_INLINE void accum_dense_pass(const page_ctx& c, std::size_t x) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  using V = hn::Vec<DF>;
  V acc[HB][NV];
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < NV; ++b) acc[h][b] = hn::LoadU(d, c.acc + h * c.D + x + b * L);
  const std::byte* row = c.v + E * x;
  for (std::size_t t = 0; t < c.n; ++t, row += E * c.D) {
    V v[NV];
    for (std::size_t b = 0; b < NV; ++b) v[b] = load_dense<E>(d, row + E * b * L);
    for (std::size_t h = 0; h < HB; ++h) {
      const V p = hn::Set(d, c.s[h * score_stride + t]);
      for (std::size_t b = 0; b < NV; ++b) acc[h][b] = hn::MulAdd(p, v[b], acc[h][b]);
    }
  }
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < NV; ++b) hn::StoreU(acc[h][b], d, c.acc + h * c.D + x + b * L);
}

template <std::size_t HB, std::size_t E>
HWY_INLINE void accum_dense(const page_ctx& c) {
  constexpr std::size_t CV = channel_vectors<HB>;
  const std::size_t L = hn::Lanes(DF());
  std::size_t x = 0;
  for (; x + CV * L <= c.D; x += CV * L) {
    c.keys_ahead->until(x + CV * L, c.D);
    accum_dense_pass<HB, CV, E>(c, x);
  }
  for (; x < c.D; x += L) accum_dense_pass<HB, 1, E>(c, x);
  c.keys_ahead->until(1, 1);
}

// q8_0 values: per 32-channel block, the weights p[h][t] * d[t] (in pw,
// [h][t]), then NV channel vectors from x inside the block.
template <std::size_t HB, std::size_t NV>
HWY_INLINE void accum_q8_0_pass(const page_ctx& c, const float* HWY_RESTRICT pw, std::size_t blk, std::size_t x) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  using V = hn::Vec<DF>;
  const std::size_t row_bytes = c.D / 32 * sizeof(block_q8_0);
  V acc[HB][NV];
  float* out = c.acc + blk * 32 + x;
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < NV; ++b) acc[h][b] = hn::LoadU(d, out + h * c.D + b * L);
  const std::byte* codes = c.v + blk * sizeof(block_q8_0) + 2 + x;
  for (std::size_t t = 0; t < c.n; ++t, codes += row_bytes) {
    V v[NV];
    for (std::size_t b = 0; b < NV; ++b) v[b] = load_i8(d, codes + b * L);
    for (std::size_t h = 0; h < HB; ++h) {
      const V p = hn::Set(d, pw[h * score_stride + t]);
      for (std::size_t b = 0; b < NV; ++b) acc[h][b] = hn::MulAdd(p, v[b], acc[h][b]);
    }
  }
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < NV; ++b) hn::StoreU(acc[h][b], d, out + h * c.D + b * L);
}

/// pw[h][t] = p[h][t] * scale[t] over whole vectors (scores are padded).
template <std::size_t HB>
HWY_INLINE void fold_weights(const page_ctx& c, const float* HWY_RESTRICT scale, float* HWY_RESTRICT pw) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t t = 0; t < c.n; t += L)
      hn::Store(hn::Mul(hn::LoadU(d, c.s + h * score_stride + t), hn::Load(d, scale + t)), d,
                pw + h * score_stride + t);
}

template <std::size_t HB>
inline void accum_q8_0(const page_ctx& c) {
  const std::size_t L = hn::Lanes(DF());
  constexpr std::size_t CV = channel_vectors<HB>;
  const std::size_t nb = c.D / 32, row_bytes = nb * sizeof(block_q8_0);
  const std::size_t padded = kernels::attention_detail::round_up(c.n, L);
  HWY_ALIGN std::uint32_t raw[score_stride];
  HWY_ALIGN float scale[score_stride];
  HWY_ALIGN float pw[HB * score_stride];
  for (std::size_t blk = 0; blk < nb; ++blk) {
    c.keys_ahead->until(blk + 1, nb);
    for (std::size_t t = 0; t < c.n; ++t) raw[t] = load_u32(c.v + t * row_bytes + blk * sizeof(block_q8_0));
    for (std::size_t t = c.n; t < padded; ++t) raw[t] = 0;
    widen_pairs(raw, c.n, scale, nullptr);
    fold_weights<HB>(c, scale, pw);
    std::size_t x = 0;
    for (; x + CV * L <= 32; x += CV * L) accum_q8_0_pass<HB, CV>(c, pw, blk, x);
    for (; x < 32; x += L) accum_q8_0_pass<HB, 1>(c, pw, blk, x);
  }
}

// KIVI values: per group j of G channels, pw[h][t] = p[h][t] * scale(t, j)
// and zsum[h] = sum_t p[h][t] zero(t, j); NV channel vectors (NT lanes) from
// channel vector v0 of the group. acc += pw * code, then + zsum per group.
template <class DT, std::size_t HB, std::size_t NV>
HWY_INLINE void accum_kivi_pass(DT dt, const page_ctx& c, const float* HWY_RESTRICT pw, unsigned bits, std::size_t G,
                                std::size_t j, std::size_t v0) {
  const std::size_t NT = hn::Lanes(dt);
  const std::size_t P = G * bits / 8, S = 4 + P, groups = c.D / G;
  const hn::RebindToUnsigned<DT> dtu;
  const auto mask = hn::Set(dtu, (1u << bits) - 1u);
  using VT = hn::Vec<DT>;
  VT acc[HB][NV];
  float* out = c.acc + j * G + v0 * NT;
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < NV; ++b) acc[h][b] = hn::LoadU(dt, out + h * c.D + b * NT);
  int shift[NV];
  std::size_t offset[NV];
  for (std::size_t b = 0; b < NV; ++b) {
    const std::size_t ch = (v0 + b) * NT;
    shift[b] = static_cast<int>(bits * (ch / P));
    offset[b] = ch % P;
  }
  const std::uint8_t* codes = reinterpret_cast<const std::uint8_t*>(c.v + S * j + 4);
  for (std::size_t t = 0; t < c.n; ++t, codes += S * groups) {
    VT v[NV];
    for (std::size_t b = 0; b < NV; ++b) v[b] = load_codes(dt, codes + offset[b], shift[b], mask);
    for (std::size_t h = 0; h < HB; ++h) {
      const VT p = hn::Set(dt, pw[h * score_stride + t]);
      for (std::size_t b = 0; b < NV; ++b) acc[h][b] = hn::MulAdd(p, v[b], acc[h][b]);
    }
  }
  for (std::size_t h = 0; h < HB; ++h)
    for (std::size_t b = 0; b < NV; ++b) hn::StoreU(acc[h][b], dt, out + h * c.D + b * NT);
}

template <class DT, std::size_t HB>
inline void accum_kivi(DT dt, const page_ctx& c, unsigned bits, std::size_t G) {
  const DF d;
  const std::size_t L = hn::Lanes(d), NT = hn::Lanes(dt);
  const std::size_t S = 4 + G * bits / 8, groups = c.D / G;
  constexpr std::size_t CV = channel_vectors<HB>;
  const std::size_t padded = kernels::attention_detail::round_up(c.n, L);
  HWY_ALIGN std::uint32_t raw[score_stride];
  HWY_ALIGN float scale[score_stride];
  HWY_ALIGN float zero[score_stride];
  HWY_ALIGN float pw[HB * score_stride];
  for (std::size_t j = 0; j < groups; ++j) {
    c.keys_ahead->until(j + 1, groups);
    for (std::size_t t = 0; t < c.n; ++t) raw[t] = load_u32(c.v + S * (t * groups + j));
    for (std::size_t t = c.n; t < padded; ++t) raw[t] = 0;
    widen_pairs(raw, c.n, scale, zero);
    fold_weights<HB>(c, scale, pw);
    float zsum[HB];
    for (std::size_t h = 0; h < HB; ++h) {
      auto z = hn::Zero(d);
      for (std::size_t t = 0; t < c.n; t += L)
        z = hn::MulAdd(hn::LoadU(d, c.s + h * score_stride + t), hn::Load(d, zero + t), z);
      zsum[h] = reduce_sum(d, z);
    }
    const std::size_t vectors = G / NT;
    std::size_t v0 = 0;
    for (; v0 + CV <= vectors; v0 += CV) accum_kivi_pass<DT, HB, CV>(dt, c, pw, bits, G, j, v0);
    for (; v0 < vectors; ++v0) accum_kivi_pass<DT, HB, 1>(dt, c, pw, bits, G, j, v0);
    for (std::size_t h = 0; h < HB; ++h) {
      const auto z = hn::Set(d, zsum[h]);
      float* out = c.acc + h * c.D + j * G;
      for (std::size_t x = 0; x < G; x += L) {
        if (x + L <= G) {
          hn::StoreU(hn::Add(hn::LoadU(d, out + x), z), d, out + x);
        } else {
          for (std::size_t y = x; y < G; ++y) out[y] += zsum[h];
        }
      }
    }
  }
}

// ---- one span of pages

/// Runs f(dt) with the KIVI code tag for plane P: 8 lanes (capped to the
/// target) when 8 divides P, else 4.
template <class F>
HWY_INLINE void with_code_tag(std::size_t plane, F&& f) {
  if (plane % 8 == 0) {
    f(hn::CappedTag<float, 8>());
  } else {
    f(hn::CappedTag<float, 4>());
  }
}

template <std::size_t HB>
inline void score_page(const paged_kv_desc& kv, const page_ctx& c) {
  switch (kv.k_format.format) {
    case kv_format::f32: score_dense<HB, 4>(c); break;
    case kv_format::f16: score_dense<HB, 2>(c); break;
    case kv_format::q8_0: score_q8_0<HB>(c); break;
    case kv_format::kivi4:
    case kv_format::kivi2: {
      const unsigned bits = kv_bits(kv.k_format.format);
      with_code_tag(kv.k_format.group * bits / 8,
                    [&](auto dt) HWY_ATTR { score_kivi<decltype(dt), HB>(dt, c, bits, kv.k_format.group); });
      break;
    }
  }
}

template <std::size_t HB>
inline void accum_page(const paged_kv_desc& kv, const page_ctx& c) {
  switch (kv.v_format.format) {
    case kv_format::f32: accum_dense<HB, 4>(c); break;
    case kv_format::f16: accum_dense<HB, 2>(c); break;
    case kv_format::q8_0: accum_q8_0<HB>(c); break;
    case kv_format::kivi4:
    case kv_format::kivi2: {
      const unsigned bits = kv_bits(kv.v_format.format);
      with_code_tag(kv.v_format.group * bits / 8,
                    [&](auto dt) HWY_ATTR { accum_kivi<decltype(dt), HB>(dt, c, bits, kv.v_format.group); });
      break;
    }
  }
}

/// Online softmax over n scores per head (rows of score_stride from s):
/// p = exp(scale * s - m_new), zero past n; the running sums and the
/// accumulators are rescaled to the new maximum.
template <std::size_t HB>
inline void softmax_span(float* HWY_RESTRICT s, std::size_t n, float* HWY_RESTRICT acc_rows, std::size_t D, float scale,
                         float* HWY_RESTRICT ml) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  const std::size_t padded = kernels::attention_detail::round_up(n, L);
  const auto vscale = hn::Set(d, scale);
  for (std::size_t h = 0; h < HB; ++h) {
    float* sh = s + h * score_stride;
    auto vmax = hn::Set(d, neg_inf);
    std::size_t t = 0;
    for (; t + L <= n; t += L) vmax = hn::Max(vmax, hn::Mul(hn::LoadU(d, sh + t), vscale));
    if (t < n) vmax = hn::Max(vmax, hn::IfThenElse(hn::FirstN(d, n - t), hn::Mul(hn::LoadU(d, sh + t), vscale), vmax));
    const float m_old = ml[2 * h];
    const float m_new = std::max(m_old, hn::GetLane(hn::MaxOfLanes(d, vmax)));
    const auto vm = hn::Set(d, m_new);
    auto vsum = hn::Zero(d);
    for (t = 0; t < padded; t += L) {
      auto p = hn::Exp(d, hn::MulSub(hn::LoadU(d, sh + t), vscale, vm));
      if (t + L > n) p = hn::IfThenElseZero(hn::FirstN(d, n - t), p);
      hn::StoreU(p, d, sh + t);
      vsum = hn::Add(vsum, p);
    }
    const float alpha = std::exp(m_old - m_new);
    ml[2 * h] = m_new;
    ml[2 * h + 1] = ml[2 * h + 1] * alpha + reduce_sum(d, vsum);
    if (alpha != 1.0f) {
      const auto va = hn::Set(d, alpha);
      float* acc = acc_rows + h * D;
      for (std::size_t x = 0; x < D; x += L) hn::StoreU(hn::Mul(hn::LoadU(d, acc + x), va), d, acc + x);
    }
  }
}

/// Clears item i's softmax state (every head of its group).
inline void start_item(const attention_decode_plan& plan, std::size_t i) {
  const std::size_t D = plan.head_dim, G = plan.group;
  for (std::size_t h = 0; h < G; ++h) {
    plan.ml(i, h)[0] = neg_inf;
    plan.ml(i, h)[1] = 0.0f;
    std::fill(plan.acc(i, h), plan.acc(i, h) + D, 0.0f);
  }
}

/// Pages per softmax span: as many whole pages as fill the score rows
/// (kv_max_tokens_per_page scores per head). A span's pages are scored side
/// by side, then one softmax step covers them all, then their values are
/// accumulated: the per-page fixed work (maximum and sum reductions, the
/// rescale of the accumulators, the exp of the old maximum) is paid once per
/// span. One layer of 12 heads of 64 over 128 f16 tokens (attention_bench,
/// Zen 5 guest, L2-resident): with one page per step 16-token pages took
/// 1.5x the time of 64-token pages, with spans 1.17x; at 16-token pages,
/// paired runs of the two kernels gave 8.7-13.4 us against 12.3-16.8.
[[nodiscard]] inline std::uint32_t span_pages(const paged_kv_desc& kv) noexcept {
  return static_cast<std::uint32_t>(std::max<std::size_t>(1, kv_max_tokens_per_page / kv.tokens_per_page));
}

/// Pages [p0, p1) of item i, every head block of its group. While a page's
/// values are accumulated, `next_keys(p)` (the page-head of keys scored next
/// in that page's place; nullptr: none) is prefetched. Every page but the
/// sequence's last is full, so the span's scores sit side by side: page p's
/// at (p - p0) * tokens_per_page.
template <class NextKeys>
inline void item_span(const attention_decode_plan& plan, const paged_kv_desc& kv, const float* q, std::size_t i,
                      std::uint32_t p0, std::uint32_t p1, const NextKeys& next_keys, float* s) {
  const attention_decode_item& it = plan.items[i];
  const std::size_t D = plan.head_dim, G = plan.group, T = kv.tokens_per_page;
  const float* qg = q + (std::size_t{it.seq} * plan.n_heads + std::size_t{it.kv_head} * G) * D;
  std::size_t n = 0;
  for (std::uint32_t p = p0; p < p1; ++p) n += kv.page_tokens(it.seq, p);
  streamer idle;
  const auto page = [&](std::uint32_t p, std::size_t h0, streamer* values_ahead, streamer* keys_ahead) {
    page_ctx c;
    c.q = qg + h0 * D;
    c.k = kv.k_head(it.seq, p, it.kv_head);
    c.v = kv.v_head(it.seq, p, it.kv_head);
    c.n = kv.page_tokens(it.seq, p);
    c.D = D;
    c.s = s + (p - p0) * T;
    c.acc = plan.acc(i, h0);
    c.values_ahead = values_ahead;
    c.keys_ahead = keys_ahead;
    return c;
  };
  const auto block = [&](auto heads, std::size_t h0) HWY_ATTR {
    constexpr std::size_t HB = decltype(heads)::value;
    // The first head block streams the pages in; the others find them cached.
    const bool first = h0 == 0;
    for (std::uint32_t p = p0; p < p1; ++p) {
      streamer values_ahead{first ? kv.v_head(it.seq, p, it.kv_head) : nullptr, first ? kv.v_head_bytes : 0, 0};
      score_page<HB>(kv, page(p, h0, &values_ahead, &idle));
    }
    softmax_span<HB>(s, n, plan.acc(i, h0), D, plan.scale, plan.ml(i, h0));
    for (std::uint32_t p = p0; p < p1; ++p) {
      const std::byte* next = first ? next_keys(p) : nullptr;
      streamer keys_ahead{next, next != nullptr ? kv.k_head_bytes : 0, 0};
      accum_page<HB>(kv, page(p, h0, &idle, &keys_ahead));
    }
  };
  // Scores past n within a vector are computed from zero padding or
  // ignored, never from memory past the page-head.
  for (std::size_t h0 = 0; h0 < G;) {
    const std::size_t left = G - h0;
    if (left >= 8) {
      block(std::integral_constant<std::size_t, 8>(), h0);
      h0 += 8;
    } else if (left >= 4) {
      block(std::integral_constant<std::size_t, 4>(), h0);
      h0 += 4;
    } else if (left >= 2) {
      block(std::integral_constant<std::size_t, 2>(), h0);
      h0 += 2;
    } else {
      block(std::integral_constant<std::size_t, 1>(), h0);
      h0 += 1;
    }
  }
}

/// Items [begin, end), span-major over each run of consecutive items that
/// share a sequence and a page range: a page holds its KV heads' page-heads
/// side by side, so the run's items take each span in turn, and the next
/// item's page-heads of a span (neighbours of the current item's) stream in
/// while the current one accumulates, where item by item over the whole
/// sequence would read the pages of every head apart.
inline void decode_items(const attention_decode_plan& plan, const paged_kv_desc& kv, const float* q, std::size_t begin,
                         std::size_t end) {
  HWY_ALIGN float s[8 * score_stride];
  for (std::size_t i = begin; i < end; ++i) start_item(plan, i);
  const std::uint32_t span = span_pages(kv);
  for (std::size_t r0 = begin; r0 < end;) {
    const attention_decode_item& first = plan.items[r0];
    std::size_t r1 = r0 + 1;
    while (r1 < end && plan.items[r1].seq == first.seq && plan.items[r1].page_begin == first.page_begin &&
           plan.items[r1].page_end == first.page_end)
      ++r1;
    for (std::uint32_t p0 = first.page_begin; p0 < first.page_end; p0 += span) {
      const std::uint32_t p1 = std::min(first.page_end, p0 + span);
      for (std::size_t i = r0; i < r1; ++i) {
        // Keys scored next in page p's place: the next item's on the same
        // page, or after the run's last item the first item's in the next span.
        const auto next_keys = [&](std::uint32_t p) -> const std::byte* {
          if (i + 1 < r1) return kv.k_head(first.seq, p, plan.items[i + 1].kv_head);
          if (p + span < first.page_end) return kv.k_head(first.seq, p + span, first.kv_head);
          return nullptr;
        };
        item_span(plan, kv, q, i, p0, p1, next_keys, s);
      }
    }
    r0 = r1;
  }
}

}  // namespace attention_simd
#endif  // HWY_TARGET != HWY_SCALAR

// ------------------------------------------------------------------ exports
// One per dispatch-table entry in dispatch.hpp (RUVLLM_KERNELS_EXPORTED).

inline void attention_prefill(const attention_prefill_args& a, std::byte* workspace, std::size_t begin,
                              std::size_t end) {
#if HWY_TARGET == HWY_SCALAR
  scalar::attention_prefill(a, {}, begin, end);
  (void)workspace;
#else
  const auto tiles = kernels::attention_detail::carve_prefill_tiles(workspace, a.head_dim);
  // The item after each one is prefetched even past `end`: with a pool
  // handing out one item at a time, it is usually the caller's next item.
  const std::size_t items = kernels::attention_prefill_work_items(a);
  if (begin < end) attention_simd::prefetch_item(a, begin);
  for (std::size_t w = begin; w < end; ++w) {
    if (w + 1 < items) attention_simd::prefetch_item(a, w + 1);
    attention_simd::prefill_item(a, tiles, w);
  }
#endif
}

inline void attention_decode(const attention_decode_plan& plan, const paged_kv_desc& kv, const float* q,
                             std::size_t begin, std::size_t end) {
#if HWY_TARGET == HWY_SCALAR
  scalar::attention_decode(plan, kv, q, begin, end);
#else
  attention_simd::decode_items(plan, kv, q, begin, end);
#endif
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_ATTENTION_INL_H_ toggle
