#ifndef RUVLLM_KERNELS_SCALAR_ATTENTION_HPP
#define RUVLLM_KERNELS_SCALAR_ATTENTION_HPP

// Attention kernels: flash attention for prefill and paged decode attention,
// the scalar references every backend is tested against, and the contract of
// the whole family, which every backend's attention_ops shares.
//
// Both compute, for each query row q and the keys k_j / values v_j it may see,
//   out = sum_j softmax_j(scale * q . k_j) v_j,   scale = 1 / sqrt(head_dim) by default,
// with an online softmax (running max m and sum l per row, rescaling the
// partial output when m grows), so no row of scores is ever materialized.
// Grouped-query attention: query head h reads KV head h / group, group =
// n_heads / n_kv_heads (1: multi-head, n_heads: multi-query).
//
// -------------------------------------------------------------- prefill
// attention_ops<B>::attention_prefill(args, workspace, begin, end): f32
// Q/K/V/out in [token][head][dim] layout -- token t, head h starts at
// q + t * q_stride + h * head_dim (k, v, out likewise with their strides, in
// floats; a fused QKV buffer is three pointers with one stride). Query i
// (0-based) is at absolute position q_pos + i; with causal set it sees keys
// j <= q_pos + i (j < n_kv), otherwise all n_kv keys: a chunk of a prompt
// after q_pos cached tokens is n_q queries over the n_kv = q_pos + n_q keys.
// A row that sees no key (n_kv == 0) gets zeros.
// Work items: attention_prefill_work_items(args) = n_kv_heads * ceil(n_q *
// group / attention_tile_rows); item w is KV head w / tiles and the tile of
// rows (query, head-in-group) w % tiles. Items are independent; any thread
// pool may run disjoint ranges [begin, end) concurrently, each caller with its
// own workspace of attention_prefill_workspace_bytes(head_dim) bytes (any
// alignment). Results do not depend on how items are split.
//
// ------------------------------------------------------------ paged decode
// One query token per sequence, all heads, over a paged_kv_view (see
// ruvllm/kernels/paged_kv_view.hpp): q and out are [batch][n_heads][head_dim]
// floats; optional lse is [batch][n_heads], the natural log of the softmax
// denominator, sum_j exp(scale * q . k_j) (-inf for an empty sequence, whose
// output is zeros). Quantized blocks are dequantized inside the online-softmax
// loop, one page-head or group at a time, into registers or a stack tile;
// never a page or a sequence into a buffer. Three steps, FlashInfer style:
//  1. attention_plan_decode(kv, n_heads, options, workspace) -> plan: no
//     allocation; partitions the batch into work items (sequence, KV head,
//     page range) inside the caller's workspace of
//     attention_decode_workspace_bytes(kv, n_heads, options) bytes. Sequences
//     are split into page ranges (split-K) only when batch * n_kv_heads <
//     options.min_work_items, so that e.g. two threads can share one long
//     multi-query sequence; each range writes a partial state (m, l, acc).
//  2. attention_ops<B>::attention_decode(plan, kv, q, begin, end): runs work
//     items [begin, end) of plan.work_items(); disjoint ranges may run on
//     different threads concurrently.
//  3. after every item has run: attention_ops<B>::attention_decode_merge(
//     plan, out, lse, begin, end) merges the partial states of sequences
//     [begin, end) into out (and lse when non-null); disjoint ranges may run
//     concurrently.
// The plan stays valid while the workspace lives and the view's page tables
// keep their page counts; pages may change contents between runs.
// attention_merge_states combines outputs of disjoint key sets given their
// lse (e.g. the tiers of a tiered KV cache, each attended through its own
// view and plan).
//
// Numerics: scores, softmax and accumulation in float. Backends and targets
// differ by rounding only (summation order, FMA, and exp: std::exp in the
// scalar reference, a polynomial within a few ulp in SIMD backends); tests
// hold every backend to 2e-5 * max |v| of a double-precision reference (at
// scores of magnitude ~1, looser for huge scores). Inputs must be finite.
//
// Preconditions (checked at the boundary by attention_check_prefill and
// attention_plan_decode, asserted in debug builds elsewhere): head_dim a
// multiple of kv_head_dim_multiple (16) and <= kv_max_head_dim (256);
// prefill positions below attention_max_positions (2^24);
// n_kv_heads >= 1 and n_heads % n_kv_heads == 0; strides >= the heads they
// hold; out does not overlap the inputs. No kernel allocates, throws, or reads
// past the rows and pages it was given.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/paged_kv_view.hpp"
#include "ruvllm/kernels/scalar/kv_quant.hpp"

namespace ruvllm::kernels {

/// Attention entry points of backend B (one specialization per backend); the
/// contract is at the top of ruvllm/kernels/scalar/attention.hpp.
template <Backend B>
struct attention_ops;

/// Rows (query, head-in-group pairs) of one prefill work item. 64 rows of Q
/// and of the output, at head_dim 128, are 32 KiB each and stay in L2 with the
/// K and V blocks (another 64 KiB).
inline constexpr std::size_t attention_tile_rows = 64;
/// Keys per block of the prefill inner loop: the score tile and one pair of
/// row vectors of Q^T stay in L1 while the block's K and V stream from L2.
inline constexpr std::size_t attention_tile_keys = 64;
/// Token positions (q_pos + n_q and n_kv) stay below this: the SIMD causal
/// mask compares them as floats, exact below 2^24.
inline constexpr std::size_t attention_max_positions = std::size_t{1} << 24;

// ================================================================ prefill

/// Flash-attention prefill arguments (layout in the file comment).
struct attention_prefill_args {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  std::size_t n_q = 0;         // query tokens
  std::size_t n_kv = 0;        // key/value tokens
  std::size_t q_pos = 0;       // absolute position of query 0 (tokens cached before it)
  std::size_t n_heads = 0;     // query heads
  std::size_t n_kv_heads = 0;  // key/value heads; divides n_heads
  std::size_t head_dim = 0;
  std::size_t q_stride = 0;  // floats between consecutive tokens of q
  std::size_t k_stride = 0;
  std::size_t v_stride = 0;
  std::size_t out_stride = 0;
  float scale = 0.0f;  // multiplies q . k before the softmax
  bool causal = true;

  /// Dense [token][head][dim] buffers, scale 1/sqrt(head_dim), causal, and
  /// the queries at the end of the keys (q_pos = n_kv - n_q, the prefill of
  /// n_q new tokens after n_kv - n_q cached ones; 0 when n_q > n_kv).
  [[nodiscard]] static attention_prefill_args dense(const float* q, const float* k, const float* v, float* out,
                                                    std::size_t n_q, std::size_t n_kv, std::size_t n_heads,
                                                    std::size_t n_kv_heads, std::size_t head_dim) noexcept {
    attention_prefill_args a;
    a.q = q;
    a.k = k;
    a.v = v;
    a.out = out;
    a.n_q = n_q;
    a.n_kv = n_kv;
    a.q_pos = n_kv >= n_q ? n_kv - n_q : 0;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.head_dim = head_dim;
    a.q_stride = a.out_stride = n_heads * head_dim;
    a.k_stride = a.v_stride = n_kv_heads * head_dim;
    a.scale = head_dim == 0 ? 1.0f : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    return a;
  }
};

namespace attention_detail {

[[nodiscard]] constexpr std::size_t ceil_div(std::size_t a, std::size_t b) noexcept { return (a + b - 1) / b; }
[[nodiscard]] constexpr std::size_t round_up(std::size_t a, std::size_t b) noexcept { return ceil_div(a, b) * b; }

/// Row tiles of one KV head.
[[nodiscard]] inline std::size_t prefill_row_tiles(const attention_prefill_args& a) noexcept {
  return a.n_kv_heads == 0 ? 0 : ceil_div(a.n_q * (a.n_heads / a.n_kv_heads), attention_tile_rows);
}

/// The float tiles of one prefill caller, carved from its workspace (64-byte
/// aligned): Q^T pre-scaled, output rows, S^T / P^T, contiguous copies of the
/// K and V blocks, and per-row m, l, alpha and position.
struct prefill_tiles {
  float* qt;     // [head_dim][tile_rows]
  float* o;      // [tile_rows][head_dim]
  float* s;      // [tile_keys][tile_rows]
  float* k;      // [tile_keys][head_dim]
  float* v;      // [tile_keys][head_dim]
  float* m;      // [tile_rows]
  float* l;      // [tile_rows]
  float* alpha;  // [tile_rows]
  float* pos;    // [tile_rows]
};

[[nodiscard]] constexpr std::size_t prefill_workspace_floats(std::size_t head_dim) noexcept {
  return 2 * attention_tile_rows * head_dim + attention_tile_rows * attention_tile_keys +
         2 * attention_tile_keys * head_dim + 4 * attention_tile_rows;
}

[[nodiscard]] inline prefill_tiles carve_prefill_tiles(std::byte* workspace, std::size_t head_dim) noexcept {
  auto base = reinterpret_cast<std::uintptr_t>(workspace);
  auto* f = reinterpret_cast<float*>((base + 63) & ~std::uintptr_t{63});
  prefill_tiles t;
  t.qt = f;
  t.o = t.qt + attention_tile_rows * head_dim;
  t.s = t.o + attention_tile_rows * head_dim;
  t.k = t.s + attention_tile_rows * attention_tile_keys;
  t.v = t.k + attention_tile_keys * head_dim;
  t.m = t.v + attention_tile_keys * head_dim;
  t.l = t.m + attention_tile_rows;
  t.alpha = t.l + attention_tile_rows;
  t.pos = t.alpha + attention_tile_rows;
  return t;
}

/// Left-to-right float dot product (the reference's summation order).
[[nodiscard]] inline float dot(const float* a, const float* b, std::size_t n) noexcept {
  float s = 0.0f;
  for (std::size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

/// Folds one key with scaled score x and value v into a row's running
/// softmax state: ml = {max m, sum l} (start: {-inf, 0}) and the unnormalized
/// output acc (start: zeros), rescaled when the max grows.
inline void online_add(float* ml, float x, const float* v, float* acc, std::size_t n) noexcept {
  if (x > ml[0]) {
    const float alpha = std::exp(ml[0] - x);  // 0 on the first key (m = -inf)
    for (std::size_t c = 0; c < n; ++c) acc[c] *= alpha;
    ml[1] *= alpha;
    ml[0] = x;
  }
  const float p = std::exp(x - ml[0]);
  ml[1] += p;
  for (std::size_t c = 0; c < n; ++c) acc[c] += p * v[c];
}

}  // namespace attention_detail

/// Work items of a prefill call (see the file comment).
[[nodiscard]] inline std::size_t attention_prefill_work_items(const attention_prefill_args& a) noexcept {
  return a.n_kv_heads * attention_detail::prefill_row_tiles(a);
}

/// Bytes of workspace each concurrent attention_prefill caller needs (any
/// alignment; for head_dim 128 about 145 KiB).
[[nodiscard]] constexpr std::size_t attention_prefill_workspace_bytes(std::size_t head_dim) noexcept {
  return attention_detail::prefill_workspace_floats(head_dim) * sizeof(float) + 64;
}

/// Checks prefill arguments once at the boundary; the error names the value
/// and the limit.
[[nodiscard]] inline result<void> attention_check_prefill(const attention_prefill_args& a) {
  if (a.head_dim == 0 || a.head_dim > kv_max_head_dim || a.head_dim % kv_head_dim_multiple != 0)
    return make_error(errc::invalid_argument, "head_dim ", a.head_dim, " must be a multiple of ", kv_head_dim_multiple,
                      " in [", kv_head_dim_multiple, ", ", kv_max_head_dim, "]");
  if (a.n_kv_heads == 0 || a.n_heads == 0 || a.n_heads % a.n_kv_heads != 0)
    return make_error(errc::invalid_argument, "n_heads ", a.n_heads, " must be a positive multiple of n_kv_heads ",
                      a.n_kv_heads);
  if (a.q_stride < a.n_heads * a.head_dim || a.out_stride < a.n_heads * a.head_dim)
    return make_error(errc::invalid_argument, "q/out token strides ", a.q_stride, "/", a.out_stride,
                      " must be >= n_heads * head_dim = ", a.n_heads * a.head_dim);
  if (a.k_stride < a.n_kv_heads * a.head_dim || a.v_stride < a.n_kv_heads * a.head_dim)
    return make_error(errc::invalid_argument, "k/v token strides ", a.k_stride, "/", a.v_stride,
                      " must be >= n_kv_heads * head_dim = ", a.n_kv_heads * a.head_dim);
  if (!std::isfinite(a.scale)) return make_error(errc::invalid_argument, "scale must be finite");
  if (a.n_q > 0 && (a.q == nullptr || a.out == nullptr))
    return make_error(errc::invalid_argument, "q and out must be non-null for ", a.n_q, " queries");
  if (a.n_q > 0 && a.n_kv > 0 && (a.k == nullptr || a.v == nullptr))
    return make_error(errc::invalid_argument, "k and v must be non-null for ", a.n_kv, " keys");
  if (a.n_kv >= attention_max_positions || a.q_pos + a.n_q >= attention_max_positions)
    return make_error(errc::out_of_range, "positions up to ", std::max(a.n_kv, a.q_pos + a.n_q), " reach the limit ",
                      attention_max_positions);
  return {};
}

// ================================================================= decode

/// Decode planning options.
struct attention_decode_options {
  /// Multiplies q . k before the softmax; 0 selects 1 / sqrt(head_dim).
  float scale = 0.0f;
  /// Split sequences into page ranges until there are at least this many
  /// work items (e.g. 2 x the threads that will run them); 1 never splits.
  std::uint32_t min_work_items = 1;
  /// The fewest pages a split range may hold (a partial state costs a merge).
  std::uint32_t min_pages_per_item = 4;
};

/// One decode work item: pages [page_begin, page_end) (indices into the
/// sequence's page table) of KV head kv_head of sequence seq.
struct attention_decode_item {
  std::uint32_t seq;
  std::uint32_t kv_head;
  std::uint32_t page_begin;
  std::uint32_t page_end;
};

/// A decode partition in caller-provided workspace (attention_plan_decode).
/// Trivially copyable; valid while the workspace lives.
struct attention_decode_plan {
  const attention_decode_item* items = nullptr;
  const std::uint32_t* seq_items = nullptr;  // batch + 1: sequence s owns items [seq_items[s], seq_items[s + 1])
  float* state_ml = nullptr;                 // per item and head of its group: m, l
  float* state_acc = nullptr;                // per item and head of its group: head_dim floats
  std::uint32_t n_items = 0;
  std::uint32_t batch = 0;
  std::uint32_t n_heads = 0;
  std::uint32_t n_kv_heads = 0;
  std::uint32_t head_dim = 0;
  std::uint32_t group = 0;  // n_heads / n_kv_heads
  float scale = 0.0f;

  /// Items run by attention_decode.
  [[nodiscard]] std::size_t work_items() const noexcept { return n_items; }
  /// m, l of head h (in the group) of item i.
  [[nodiscard]] float* ml(std::size_t i, std::size_t h) const noexcept { return state_ml + 2 * (i * group + h); }
  /// Partial output of head h (in the group) of item i.
  [[nodiscard]] float* acc(std::size_t i, std::size_t h) const noexcept {
    return state_acc + (i * group + h) * head_dim;
  }
};

namespace attention_detail {

/// Pages per item: unbounded unless the batch has too few (sequence, KV head) pairs.
[[nodiscard]] inline std::uint32_t decode_chunk_pages(const paged_kv_desc& kv,
                                                      const attention_decode_options& o) noexcept {
  const std::size_t base = std::size_t{kv.batch} * kv.n_kv_heads;
  if (base >= o.min_work_items || kv.batch == 0) return 0xFFFF'FFFFu;
  const std::size_t total = std::size_t{kv.page_indptr[kv.batch]} - kv.page_indptr[0];
  const std::size_t want = ceil_div(total * kv.n_kv_heads, std::max<std::size_t>(o.min_work_items, 1));
  return static_cast<std::uint32_t>(
      std::clamp<std::size_t>(want, std::max<std::uint32_t>(o.min_pages_per_item, 1), 0xFFFF'FFFFu));
}

[[nodiscard]] inline std::size_t decode_items_of(const paged_kv_desc& kv, std::size_t s, std::uint32_t chunk) noexcept {
  const std::uint32_t pages = kv.pages(s);
  return pages == 0 ? 1 : ceil_div(pages, chunk);
}

struct decode_layout {
  std::size_t n_items, items_off, seq_off, ml_off, acc_off, bytes;
};

[[nodiscard]] inline decode_layout decode_workspace_layout(const paged_kv_desc& kv, std::size_t n_heads,
                                                           const attention_decode_options& o) noexcept {
  const std::uint32_t chunk = decode_chunk_pages(kv, o);
  std::size_t n = 0;
  for (std::size_t s = 0; s < kv.batch; ++s) n += decode_items_of(kv, s, chunk) * kv.n_kv_heads;
  const std::size_t group = kv.n_kv_heads == 0 ? 0 : n_heads / kv.n_kv_heads;
  decode_layout l{};
  l.n_items = n;
  l.items_off = 0;
  l.seq_off = round_up(l.items_off + n * sizeof(attention_decode_item), 64);
  l.ml_off = round_up(l.seq_off + (std::size_t{kv.batch} + 1) * sizeof(std::uint32_t), 64);
  l.acc_off = round_up(l.ml_off + n * group * 2 * sizeof(float), 64);
  l.bytes = l.acc_off + n * group * kv.head_dim * sizeof(float) + 64;  // + 64: aligning the base
  return l;
}

}  // namespace attention_detail

/// Workspace bytes attention_plan_decode needs for this batch (O(batch)).
[[nodiscard]] inline std::size_t attention_decode_workspace_bytes(const paged_kv_desc& kv, std::size_t n_heads,
                                                                  const attention_decode_options& o = {}) noexcept {
  return attention_detail::decode_workspace_layout(kv, n_heads, o).bytes;
}

/// Partitions a decode batch into work items inside `workspace` (no
/// allocation except an error message). Errors: head_dim, group or format
/// outside the limits (kv_format_check), n_heads not a multiple of
/// n_kv_heads, or a workspace smaller than attention_decode_workspace_bytes.
[[nodiscard]] inline result<attention_decode_plan> attention_plan_decode(const paged_kv_desc& kv, std::size_t n_heads,
                                                                         const attention_decode_options& o,
                                                                         std::span<std::byte> workspace) {
  namespace d = attention_detail;
  RUVLLM_TRY(kv_format_check(kv.k_format, kv_role::key, kv.tokens_per_page, kv.head_dim));
  RUVLLM_TRY(kv_format_check(kv.v_format, kv_role::value, kv.tokens_per_page, kv.head_dim));
  if (kv.n_kv_heads == 0 || n_heads == 0 || n_heads % kv.n_kv_heads != 0 || n_heads > 0xFFFF)
    return make_error(errc::invalid_argument, "n_heads ", n_heads, " must be a positive multiple of n_kv_heads ",
                      kv.n_kv_heads, " below 65536");
  if (kv.batch > 0 && kv.page_indptr == nullptr)
    return make_error(errc::invalid_argument, "page_indptr must be non-null for a batch of ", kv.batch);
  if (o.scale != 0.0f && !std::isfinite(o.scale)) return make_error(errc::invalid_argument, "scale must be finite");
  const d::decode_layout layout = d::decode_workspace_layout(kv, n_heads, o);
  if (workspace.size() < layout.bytes)
    return make_error(errc::invalid_argument, "decode workspace of ", workspace.size(), " bytes is below the ",
                      layout.bytes, " this batch needs");
  if (layout.n_items > 0xFFFF'FFFFu)
    return make_error(errc::out_of_range, "decode work items ", layout.n_items, " exceed 2^32 - 1");
  const auto base = (reinterpret_cast<std::uintptr_t>(workspace.data()) + 63) & ~std::uintptr_t{63};
  auto* items = reinterpret_cast<attention_decode_item*>(base + layout.items_off);
  auto* seq_items = reinterpret_cast<std::uint32_t*>(base + layout.seq_off);
  const std::uint32_t chunk = d::decode_chunk_pages(kv, o);
  std::size_t n = 0;
  for (std::uint32_t s = 0; s < kv.batch; ++s) {
    seq_items[s] = static_cast<std::uint32_t>(n);
    const std::uint32_t pages = kv.pages(s);
    for (std::uint32_t h = 0; h < kv.n_kv_heads; ++h) {
      std::uint32_t p = 0;
      do {
        const std::uint32_t e = pages - p > chunk ? p + chunk : pages;
        items[n++] = attention_decode_item{s, h, p, e};
        p = e;
      } while (p < pages);
    }
  }
  seq_items[kv.batch] = static_cast<std::uint32_t>(n);
  attention_decode_plan plan;
  plan.items = items;
  plan.seq_items = seq_items;
  plan.state_ml = reinterpret_cast<float*>(base + layout.ml_off);
  plan.state_acc = reinterpret_cast<float*>(base + layout.acc_off);
  plan.n_items = static_cast<std::uint32_t>(n);
  plan.batch = kv.batch;
  plan.n_heads = static_cast<std::uint32_t>(n_heads);
  plan.n_kv_heads = kv.n_kv_heads;
  plan.head_dim = kv.head_dim;
  plan.group = static_cast<std::uint32_t>(n_heads / kv.n_kv_heads);
  plan.scale = o.scale != 0.0f ? o.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(kv.head_dim)));
  return plan;
}

/// attention_plan_decode for a typed view.
template <class K, class V, std::size_t T>
[[nodiscard]] result<attention_decode_plan> attention_plan_decode(const paged_kv_view<K, V, T>& kv, std::size_t n_heads,
                                                                  const attention_decode_options& o,
                                                                  std::span<std::byte> workspace) {
  return attention_plan_decode(kv.desc(), n_heads, o, workspace);
}

namespace attention_detail {

/// Merges the partial states of sequences [begin, end); shared by every
/// backend (it touches group * head_dim floats per item, once per step).
inline void decode_merge(const attention_decode_plan& plan, float* out, float* lse, std::size_t begin,
                         std::size_t end) noexcept {
  const std::size_t D = plan.head_dim, G = plan.group;
  for (std::size_t s = begin; s < end; ++s) {
    const std::uint32_t ib = plan.seq_items[s], ie = plan.seq_items[s + 1];
    for (std::uint32_t i0 = ib; i0 < ie;) {
      std::uint32_t i1 = i0;  // items of one KV head are consecutive
      while (i1 < ie && plan.items[i1].kv_head == plan.items[i0].kv_head) ++i1;
      for (std::size_t h = 0; h < G; ++h) {
        const std::size_t head = std::size_t{plan.items[i0].kv_head} * G + h;
        float* o = out + (s * plan.n_heads + head) * D;
        float mx = -std::numeric_limits<float>::infinity();
        for (std::uint32_t i = i0; i < i1; ++i) mx = std::max(mx, plan.ml(i, h)[0]);
        float l = 0.0f;
        std::fill(o, o + D, 0.0f);
        if (mx != -std::numeric_limits<float>::infinity()) {
          for (std::uint32_t i = i0; i < i1; ++i) {
            const float w = std::exp(plan.ml(i, h)[0] - mx);  // 0 for an empty range (m = -inf)
            l += w * plan.ml(i, h)[1];
            const float* a = plan.acc(i, h);
            for (std::size_t c = 0; c < D; ++c) o[c] += w * a[c];
          }
          const float inv = l > 0.0f ? 1.0f / l : 0.0f;
          for (std::size_t c = 0; c < D; ++c) o[c] *= inv;
        }
        if (lse != nullptr)
          lse[s * plan.n_heads + head] = l > 0.0f ? mx + std::log(l) : -std::numeric_limits<float>::infinity();
      }
      i0 = i1;
    }
  }
}

/// out/lse = the softmax-weighted combination of two attention results over
/// disjoint key sets; out may alias a (lse_out may alias lse_a).
inline void merge_states(const float* a, const float* lse_a, const float* b, const float* lse_b, float* out,
                         float* lse_out, std::size_t rows, std::size_t head_dim) noexcept {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  for (std::size_t r = 0; r < rows; ++r) {
    const float la = lse_a[r], lb = lse_b[r];
    const float mx = std::max(la, lb);
    const float* x = a + r * head_dim;
    const float* y = b + r * head_dim;
    float* o = out + r * head_dim;
    if (mx == ninf) {
      std::fill(o, o + head_dim, 0.0f);
      lse_out[r] = ninf;
      continue;
    }
    const float wa = std::exp(la - mx), wb = std::exp(lb - mx);
    const float inv = 1.0f / (wa + wb);
    for (std::size_t c = 0; c < head_dim; ++c) o[c] = (wa * x[c] + wb * y[c]) * inv;
    lse_out[r] = mx + std::log(wa + wb);
  }
}

/// Dequantizes row t of a page-head (f16, q8_0 or KIVI) into dst[head_dim].
inline void page_row(kv_format_desc f, kv_role r, const std::byte* head, std::size_t t, std::size_t head_dim,
                     float* dst) noexcept {
  scalar::dequantize_page_head(f, r, head, t, 1, head_dim, dst, head_dim);
}

}  // namespace attention_detail

namespace scalar {

/// Reference prefill: work items [begin, end), each row an online softmax
/// over its visible keys one at a time (no workspace needed; the parameter
/// keeps the backends' signature).
inline void attention_prefill(const attention_prefill_args& a, std::span<std::byte> /*workspace*/, std::size_t begin,
                              std::size_t end) noexcept {
  namespace d = attention_detail;
  const std::size_t D = a.head_dim, G = a.n_heads / a.n_kv_heads, tiles = d::prefill_row_tiles(a);
  float acc[kv_max_head_dim];
  for (std::size_t w = begin; w < end; ++w) {
    const std::size_t kvh = w / tiles, r0 = (w % tiles) * attention_tile_rows;
    const std::size_t r1 = std::min(r0 + attention_tile_rows, a.n_q * G);
    for (std::size_t r = r0; r < r1; ++r) {
      const std::size_t i = r / G, head = kvh * G + r % G;
      const float* q = a.q + i * a.q_stride + head * D;
      const std::size_t visible = a.causal ? std::min(a.n_kv, a.q_pos + i + 1) : a.n_kv;
      float ml[2] = {-std::numeric_limits<float>::infinity(), 0.0f};
      std::fill(acc, acc + D, 0.0f);
      for (std::size_t j = 0; j < visible; ++j) {
        const float x = a.scale * d::dot(q, a.k + j * a.k_stride + kvh * D, D);
        d::online_add(ml, x, a.v + j * a.v_stride + kvh * D, acc, D);
      }
      float* o = a.out + i * a.out_stride + head * D;
      const float inv = ml[1] > 0.0f ? 1.0f / ml[1] : 0.0f;
      for (std::size_t c = 0; c < D; ++c) o[c] = acc[c] * inv;
    }
  }
}

/// Reference decode: work items [begin, end); token by token, the K and V
/// rows are dequantized into stack rows and folded into every head of the
/// group's online softmax.
inline void attention_decode(const attention_decode_plan& plan, const paged_kv_desc& kv, const float* q,
                             std::size_t begin, std::size_t end) noexcept {
  namespace d = attention_detail;
  const std::size_t D = plan.head_dim, G = plan.group;
  float k[kv_max_head_dim], v[kv_max_head_dim];
  for (std::size_t i = begin; i < end; ++i) {
    const attention_decode_item& it = plan.items[i];
    const float* qg = q + (std::size_t{it.seq} * plan.n_heads + std::size_t{it.kv_head} * G) * D;
    for (std::size_t h = 0; h < G; ++h) {
      plan.ml(i, h)[0] = -std::numeric_limits<float>::infinity();
      plan.ml(i, h)[1] = 0.0f;
      std::fill(plan.acc(i, h), plan.acc(i, h) + D, 0.0f);
    }
    for (std::uint32_t p = it.page_begin; p < it.page_end; ++p) {
      const std::byte* kh = kv.k_head(it.seq, p, it.kv_head);
      const std::byte* vh = kv.v_head(it.seq, p, it.kv_head);
      const std::size_t n = kv.page_tokens(it.seq, p);
      for (std::size_t t = 0; t < n; ++t) {
        d::page_row(kv.k_format, kv_role::key, kh, t, D, k);
        d::page_row(kv.v_format, kv_role::value, vh, t, D, v);
        for (std::size_t h = 0; h < G; ++h)
          d::online_add(plan.ml(i, h), plan.scale * d::dot(qg + h * D, k, D), v, plan.acc(i, h), D);
      }
    }
  }
}

}  // namespace scalar

/// backend::scalar's attention: the references. Every backend's
/// attention_ops has these entry points with the contract at the top of this
/// file; the precondition checks live at the entry points.
template <>
struct attention_ops<backend::scalar> {
  /// Flash-attention prefill of work items [begin, end) (file comment).
  static void attention_prefill(const attention_prefill_args& a, std::span<std::byte> workspace, std::size_t begin,
                                std::size_t end) noexcept {
    RUVLLM_ASSERT(end <= attention_prefill_work_items(a) && begin <= end);
    scalar::attention_prefill(a, workspace, begin, end);
  }
  /// Paged decode of work items [begin, end) of `plan` (file comment).
  static void attention_decode(const attention_decode_plan& plan, const paged_kv_desc& kv, const float* q,
                               std::size_t begin, std::size_t end) noexcept {
    RUVLLM_ASSERT(end <= plan.work_items() && begin <= end);
    scalar::attention_decode(plan, kv, q, begin, end);
  }
  /// attention_decode for a typed view.
  template <class K, class V, std::size_t T>
  static void attention_decode(const attention_decode_plan& plan, const paged_kv_view<K, V, T>& kv, const float* q,
                               std::size_t begin, std::size_t end) noexcept {
    attention_decode(plan, kv.desc(), q, begin, end);
  }
  /// Merges the partial states of sequences [begin, end) into out (and lse
  /// when non-null); run after every work item of the plan.
  static void attention_decode_merge(const attention_decode_plan& plan, float* out, float* lse, std::size_t begin,
                                     std::size_t end) noexcept {
    RUVLLM_ASSERT(end <= plan.batch && begin <= end);
    attention_detail::decode_merge(plan, out, lse, begin, end);
  }
  /// Combines `rows` attention outputs a and b over disjoint keys, given
  /// their log-sum-exps, into out / lse_out (which may alias a / lse_a).
  static void attention_merge_states(const float* a, const float* lse_a, const float* b, const float* lse_b, float* out,
                                     float* lse_out, std::size_t rows, std::size_t head_dim) noexcept {
    attention_detail::merge_states(a, lse_a, b, lse_b, out, lse_out, rows, head_dim);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_SCALAR_ATTENTION_HPP

// The dispatched attention kernels, for RUVLLM_KERNELS_EXPORTED in dispatch.hpp.
#define RUVLLM_ATTENTION_EXPORTED(X)                                                                               \
  X(void, attention_prefill,                                                                                       \
    (const ruvllm::kernels::attention_prefill_args& a, std::byte* workspace, std::size_t begin, std::size_t end),  \
    (a, workspace, begin, end))                                                                                    \
  X(void, attention_decode,                                                                                        \
    (const ruvllm::kernels::attention_decode_plan& plan, const ruvllm::kernels::paged_kv_desc& kv, const float* q, \
     std::size_t begin, std::size_t end),                                                                          \
    (plan, kv, q, begin, end))
