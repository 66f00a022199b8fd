#ifndef RUVLLM_KV_TIERED_KV_HPP
#define RUVLLM_KV_TIERED_KV_HPP

// Hot/warm/cold KV tiers: the KV of one attention layer kept in blocks whose
// storage precision depends on their age. A sequence's newest tokens stay in
// the hottest tier (f16: appended one row at a time, read exactly); the
// oldest blocks beyond a tier's capacity migrate to the next, colder tier in
// batches (q8_0, then KIVI-2/4); decode attention reads every tier in place.
//
// ------------------------------------------------------------------ tiers
// Tiers is a ruvllm::tiers<tier<P0, C0>, tier<P1, C1>, ...> (core/cache_tier.hpp):
// tier i stores K and V pages in precision Pi and holds at most Ci tokens of
// each sequence (the coldest is unbounded). P0 must be per-token (f16 or
// q8_0) because tokens are appended to the hottest tier one at a time; the
// colder tiers may be any KV precision (KIVI keys per channel in groups of G
// tokens, values per token in groups of G channels, so TokensPerBlock must be
// a multiple of a KIVI tier's G).
//
// ----------------------------------------------------------------- storage
// Logical blocks: every block has a logical id (what sequences, the radix
// cache and this class's BlockStore interface use) mapped to (tier, page).
// Migration changes the page, never the id, so a prefix the radix cache
// holds may move to a colder tier while every holder keeps its id. Each tier
// owns two page pools (keys, values), fixed at create(): page p of tier i is
// at k_pool(i) + p * k_page_bytes(i), laid out as kernels::paged_kv_view
// pages ([kv_head][token][dim] per precision), so a tier's pages are a paged
// KV view as they are -- decode builds one CSR page table per tier and runs
// the paged decode kernel on each. The pools are this class's own (one
// allocation per pool) behind the BlockStore calls, so they can later be
// carved from kv::block_allocator slabs without changing the interface.
//
// A sequence's blocks are always ordered coldest first: [tier n-1 ...][...]
// [tier 0], because migration moves a sequence's oldest blocks and a shared
// prefix is the oldest part of every sequence holding it.
//
// --------------------------------------------------------------- migration
// rebalance(seq): for each tier from the hottest, while the sequence holds
// more than Ci tokens there, its oldest full blocks of that tier move to the
// next one, at least migration_batch_blocks at a time (so migration runs
// once per batch of appended blocks, not per token). A move dequantizes
// each page-head into a float tile and quantizes it into the colder format
// (the kernels' quantizers: q8_0 per 32 channels of a token, KIVI keys per
// channel over G tokens and values per token over G channels).
//
// --------------------------------------------------------------- attention
// decode(): for each tier, one paged decode (plan, run, merge) over the
// tier's segment of every sequence, producing its output and log-sum-exp per
// head; the tiers' partial softmax states are then merged with
// attention_merge_states. The result equals attention over the dequantized
// KV of all tiers (up to float rounding).
//
// ------------------------------------------------------------ contracts
// Thread-safety: not synchronized; one owner calls everything (const
// members may run concurrently with each other). Allocation: create()
// allocates the pools; decode() grows its scratch (page tables, plan
// workspace) to the largest batch seen, then reuses it; nothing else
// allocates. Errors: create() validates the shape; allocate(), copy_block()
// and append() report errc::out_of_memory when a pool is full; migration
// stops (without error) when the colder pool is full.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "ruvllm/core/aligned_buffer.hpp"
#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/cache_tier.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/kernels/paged_kv_view.hpp"

namespace ruvllm::kv {

/// Shape and pool sizes of a tiered_kv_cache.
struct tiered_kv_options {
  std::size_t n_kv_heads = 0;
  std::size_t head_dim = 0;
  /// Pages (blocks) of each tier's pool, hottest first; unused entries ignored.
  std::array<std::size_t, 4> tier_blocks{};
  /// The fewest blocks one migration step moves (>= 1).
  std::size_t migration_batch_blocks = 1;
};

/// One sequence's KV blocks in a tiered_kv_cache (logical ids, coldest
/// first, the last one possibly partial) and its length. Managed by the
/// cache's append/adopt/rebalance/free_sequence; read-only for callers.
struct tiered_sequence {
  std::vector<std::uint32_t> blocks;
  std::size_t tokens = 0;
};

/// Counters of a tiered_kv_cache.
struct tiered_kv_stats {
  std::uint64_t migrated_blocks = 0;   // moves to a colder tier
  std::uint64_t migration_bytes = 0;   // source + destination bytes of those moves
  std::uint64_t migration_stalls = 0;  // moves skipped because the colder pool was full
  std::uint64_t copies = 0;            // copy_block calls (copy on write)
};

namespace detail {
template <class P>
concept per_token_kv_precision = kernels::KvPrecision<P> &&
    (kernels::kv_format_of<P>.format == kernels::kv_format::f16 ||
     kernels::kv_format_of<P>.format == kernels::kv_format::q8_0);

template <CacheTiers Tiers, std::size_t TokensPerBlock, std::size_t... I>
constexpr bool tiers_fit_blocks(std::index_sequence<I...>) {
  return (... && (kernels::kv_format_of<typename Tiers::template at<I>::precision>.format == kernels::kv_format::f16 ||
                  kernels::kv_format_of<typename Tiers::template at<I>::precision>.format == kernels::kv_format::q8_0 ||
                  TokensPerBlock % kernels::kv_format_of<typename Tiers::template at<I>::precision>.group == 0));
}
template <CacheTiers Tiers, std::size_t... I>
constexpr bool tiers_are_kv(std::index_sequence<I...>) {
  return (... && kernels::KvPrecision<typename Tiers::template at<I>::precision>);
}
}  // namespace detail

/// KV blocks of one attention layer in hot/warm/cold tiers, with migration
/// and tier-aware decode attention (see the top of ruvllm/kv/tiered_kv.hpp).
/// Also a BlockStore over logical block ids, so a radix_cache can share its
/// blocks (whatever tier they are in).
///
/// Template parameters: Tiers (ruvllm::tiers<...>, KV precisions, the
/// hottest f16 or q8_0); TokensPerBlock (<= kernels::kv_max_tokens_per_page,
/// a multiple of every KIVI tier's group); B, the Backend whose quantizers
/// and decode kernels run (backend::highway by default).
///
/// Thread-safety: one owner; const members may run concurrently. Movable.
template <CacheTiers Tiers, std::size_t TokensPerBlock, Backend B = backend::highway>
class tiered_kv_cache {
  static_assert(detail::tiers_are_kv<Tiers>(std::make_index_sequence<Tiers::count>{}),
                "tiered_kv_cache: every tier must be a KV precision (f16, q8_0, kivi<4, G>, kivi<2, G>)");
  static_assert(detail::per_token_kv_precision<typename Tiers::template at<0>::precision>,
                "tiered_kv_cache: the hottest tier receives appended tokens one by one and must be f16 or q8_0");
  static_assert(TokensPerBlock >= 1 && TokensPerBlock <= kernels::kv_max_tokens_per_page,
                "tiered_kv_cache: TokensPerBlock must be in [1, kernels::kv_max_tokens_per_page]");
  static_assert(detail::tiers_fit_blocks<Tiers, TokensPerBlock>(std::make_index_sequence<Tiers::count>{}),
                "tiered_kv_cache: TokensPerBlock must be a multiple of every KIVI tier's group (keys group tokens)");

  using kq = kernels::kv_quant_ops<B>;
  using attn = kernels::attention_ops<B>;

 public:
  using block_id = std::uint32_t;
  using tiers_type = Tiers;
  static constexpr std::size_t tier_count = Tiers::count;
  static constexpr std::size_t tokens_per_block = TokensPerBlock;
  static constexpr block_id no_block = 0xFFFF'FFFFu;

  /// Capacity in tokens per sequence of tier i.
  template <std::size_t I>
  static constexpr std::size_t tier_capacity = Tiers::template capacity<I>;

  /// Validates the shape (head_dim and groups as kernels::kv_format_check,
  /// n_kv_heads in [1, 65535], at least one block in every tier, ids below
  /// 2^32 - 1) and allocates the pools.
  [[nodiscard]] static result<tiered_kv_cache> create(const tiered_kv_options& o) {
    if (o.n_kv_heads == 0 || o.n_kv_heads > 0xFFFF)
      return make_error(errc::invalid_argument, "tiered_kv_cache: n_kv_heads ", o.n_kv_heads, " must be in [1, 65535]");
    if (o.migration_batch_blocks == 0)
      return make_error(errc::invalid_argument, "tiered_kv_cache: migration_batch_blocks must be >= 1");
    tiered_kv_cache c;
    c.heads_ = o.n_kv_heads;
    c.dim_ = o.head_dim;
    c.batch_ = o.migration_batch_blocks;
    std::size_t total = 0;
    for (std::size_t i = 0; i < tier_count; ++i) {
      tier_pool& t = c.tiers_[i];
      t.format = formats()[i];
      RUVLLM_TRY(kernels::kv_format_check(t.format, kernels::kv_role::key, TokensPerBlock, o.head_dim));
      RUVLLM_TRY(kernels::kv_format_check(t.format, kernels::kv_role::value, TokensPerBlock, o.head_dim));
      if (o.tier_blocks[i] == 0 || o.tier_blocks[i] >= no_block)
        return make_error(errc::invalid_argument, "tiered_kv_cache: tier ", i, " blocks ", o.tier_blocks[i],
                          " must be in [1, 2^32 - 2]");
      t.k_head_bytes = kernels::kv_page_head_bytes(t.format, kernels::kv_role::key, TokensPerBlock, o.head_dim);
      t.v_head_bytes = kernels::kv_page_head_bytes(t.format, kernels::kv_role::value, TokensPerBlock, o.head_dim);
      t.k_page_bytes = t.k_head_bytes * o.n_kv_heads;
      t.v_page_bytes = t.v_head_bytes * o.n_kv_heads;
      t.pages = o.tier_blocks[i];
      RUVLLM_TRY_ASSIGN(t.k_pool, aligned_buffer<std::byte>::allocate(t.pages * t.k_page_bytes));
      RUVLLM_TRY_ASSIGN(t.v_pool, aligned_buffer<std::byte>::allocate(t.pages * t.v_page_bytes));
      t.free.reserve(t.pages);
      for (std::size_t p = t.pages; p-- > 0;) t.free.push_back(static_cast<std::uint32_t>(p));
      total += t.pages;
    }
    if (total >= no_block)
      return make_error(errc::invalid_argument, "tiered_kv_cache: ", total, " blocks exceed 2^32 - 2");
    c.records_.resize(total);
    c.free_ids_.reserve(total);
    for (std::size_t id = total; id-- > 0;) c.free_ids_.push_back(static_cast<block_id>(id));
    RUVLLM_TRY_ASSIGN(c.tile_, aligned_buffer<float>::allocate(TokensPerBlock * o.head_dim));
    return c;
  }

  tiered_kv_cache(tiered_kv_cache&&) noexcept = default;
  tiered_kv_cache& operator=(tiered_kv_cache&&) noexcept = default;

  // ------------------------------------------------------------ BlockStore

  /// A new block in the hottest tier, one reference; contents undefined.
  [[nodiscard]] result<block_id> allocate() {
    if (free_ids_.empty() || tiers_[0].free.empty())
      return make_error(errc::out_of_memory, "tiered_kv_cache: the hot tier's ", tiers_[0].pages,
                        " blocks are all in use");
    const block_id id = free_ids_.back();
    free_ids_.pop_back();
    records_[id] = record{1, tiers_[0].free.back(), 0};
    tiers_[0].free.pop_back();
    ++in_use_;
    return id;
  }
  void retain(block_id id) noexcept {
    RUVLLM_ASSERT(id < records_.size() && records_[id].refs > 0);
    ++records_[id].refs;
  }
  void release(block_id id) noexcept {
    RUVLLM_ASSERT(id < records_.size() && records_[id].refs > 0);
    record& r = records_[id];
    if (--r.refs != 0) return;
    tiers_[r.level].free.push_back(r.page);
    free_ids_.push_back(id);
    --in_use_;
  }
  [[nodiscard]] std::uint32_t ref_count(block_id id) const noexcept {
    return id < records_.size() ? records_[id].refs : 0;
  }
  /// K + V bytes of one hot block (the colder tiers' are page_bytes(i)).
  [[nodiscard]] std::size_t block_bytes() const noexcept { return page_bytes(0); }
  [[nodiscard]] std::size_t blocks_in_use() const noexcept { return in_use_; }
  /// Logical blocks: the pages of all tiers together.
  [[nodiscard]] std::size_t capacity_blocks() const noexcept { return records_.size(); }

  /// Copy on write: a new hot block (one reference) holding the first
  /// `tokens` tokens of src, dequantized when src lives in a colder tier.
  [[nodiscard]] result<block_id> copy_block(block_id src, std::size_t tokens) {
    if (src >= records_.size() || records_[src].refs == 0)
      return make_error(errc::invalid_argument, "tiered_kv_cache::copy_block: block ", src, " is not live");
    if (tokens > TokensPerBlock)
      return make_error(errc::out_of_range, "tiered_kv_cache::copy_block: ", tokens, " tokens exceed ", TokensPerBlock);
    RUVLLM_TRY_ASSIGN(const block_id dst, allocate());
    copy_tokens(records_[src], records_[dst], tokens);
    ++stats_.copies;
    return dst;
  }

  // -------------------------------------------------------------- sequences

  /// Appends one token: k and v hold n_kv_heads x head_dim floats each
  /// ([kv_head][dim]). Allocates a hot block at a block boundary and copies
  /// a shared last block first (copy on write). Errors: out_of_memory.
  [[nodiscard]] result<void> append(tiered_sequence& s, const float* k, const float* v) {
    const std::size_t t = s.tokens % TokensPerBlock;
    if (t == 0) {
      RUVLLM_TRY_ASSIGN(const block_id id, allocate());
      s.blocks.push_back(id);
    } else if (records_[s.blocks.back()].refs > 1 || records_[s.blocks.back()].level != 0) {
      RUVLLM_TRY_ASSIGN(const block_id id, copy_block(s.blocks.back(), t));
      release(s.blocks.back());
      s.blocks.back() = id;
    }
    const record& r = records_[s.blocks.back()];
    const tier_pool& hot = tiers_[0];
    for (std::size_t h = 0; h < heads_; ++h) {
      kq::kv_quantize_page_head(hot.format, kernels::kv_role::key, k + h * dim_, dim_, t, 1, dim_, k_head(r, h));
      kq::kv_quantize_page_head(hot.format, kernels::kv_role::value, v + h * dim_, dim_, t, 1, dim_, v_head(r, h));
    }
    ++s.tokens;
    return {};
  }

  /// Starts an empty sequence from a matched prefix: takes over the
  /// caller's references to `blocks` (e.g. a radix_cache::match result)
  /// holding `tokens` tokens. Errors: a non-empty sequence or a block count
  /// that does not cover exactly `tokens`.
  [[nodiscard]] result<void> adopt(tiered_sequence& s, std::span<const block_id> blocks, std::size_t tokens) {
    if (s.tokens != 0 || !s.blocks.empty())
      return make_error(errc::invalid_argument, "tiered_kv_cache::adopt: the sequence holds ", s.tokens, " tokens");
    if (blocks.size() != (tokens + TokensPerBlock - 1) / TokensPerBlock)
      return make_error(errc::invalid_argument, "tiered_kv_cache::adopt: ", blocks.size(), " blocks for ", tokens,
                        " tokens");
    s.blocks.assign(blocks.begin(), blocks.end());
    s.tokens = tokens;
    return {};
  }

  /// Drops the sequence's references (its blocks live on where shared).
  void free_sequence(tiered_sequence& s) noexcept {
    for (const block_id id : s.blocks) release(id);
    s.blocks.clear();
    s.tokens = 0;
  }

  /// Migrates the sequence's oldest blocks to colder tiers until every tier
  /// holds at most its capacity of the sequence's tokens (see the file
  /// comment); returns the blocks moved. Never allocates.
  std::size_t rebalance(const tiered_sequence& s) noexcept {
    std::size_t moved = 0;
    const std::size_t n = s.blocks.size();
    const std::size_t full = s.tokens / TokensPerBlock;  // blocks [0, full) are full
    for (std::size_t i = 0; i + 1 < tier_count; ++i) {
      const std::size_t cap = capacities()[i];
      // The run of tier-i blocks (coldest first, so it ends where hotter ones start).
      std::size_t end = n;
      while (end > 0 && records_[s.blocks[end - 1]].level < i) --end;
      std::size_t begin = end;
      while (begin > 0 && records_[s.blocks[begin - 1]].level == i) --begin;
      if (begin == end) continue;
      std::size_t tokens = 0;
      for (std::size_t b = begin; b < end; ++b) tokens += b < full ? TokensPerBlock : s.tokens - full * TokensPerBlock;
      if (tokens <= cap) continue;
      std::size_t want = (tokens - cap + TokensPerBlock - 1) / TokensPerBlock;
      want = std::max(want, batch_);
      for (std::size_t b = begin; b < end && b < full && want > 0; ++b, --want) {
        if (!migrate(s.blocks[b], i + 1)) break;
        ++moved;
      }
    }
    return moved;
  }

  /// Moves one full block to `tier` (colder: quantized; hotter: dequantized
  /// into the hotter format), e.g. to demote a cached prefix under memory
  /// pressure. Precondition: all TokensPerBlock tokens of the block were
  /// written (a partial block's unused rows would join its KIVI groups).
  /// Errors: a block that is not live or a tier out of range;
  /// budget_exceeded when that tier's pool is full. Never allocates
  /// (except the error message).
  [[nodiscard]] result<void> move_block(block_id id, std::size_t tier) {
    if (id >= records_.size() || records_[id].refs == 0)
      return make_error(errc::invalid_argument, "tiered_kv_cache::move_block: block ", id, " is not live");
    if (tier >= tier_count)
      return make_error(errc::out_of_range, "tiered_kv_cache::move_block: tier ", tier, " >= ", tier_count);
    if (records_[id].level == tier) return {};
    if (!migrate(id, tier))
      return make_error(errc::budget_exceeded, "tiered_kv_cache::move_block: tier ", tier, "'s ", tiers_[tier].pages,
                        " blocks are all in use");
    return {};
  }

  /// Tier of a live block.
  [[nodiscard]] std::size_t tier_of(block_id id) const noexcept { return records_[id].level; }

  /// Dequantizes tokens [0, tokens) of block id into k and v, each
  /// [kv_head][token][dim] floats (n_kv_heads * tokens * head_dim).
  void read_block(block_id id, std::size_t tokens, float* k, float* v) const noexcept {
    const record& r = records_[id];
    const tier_pool& t = tiers_[r.level];
    for (std::size_t h = 0; h < heads_; ++h) {
      kq::kv_dequantize_page_head(t.format, kernels::kv_role::key, k_head(r, h), 0, tokens, dim_, k + h * tokens * dim_,
                                  dim_);
      kq::kv_dequantize_page_head(t.format, kernels::kv_role::value, v_head(r, h), 0, tokens, dim_,
                                  v + h * tokens * dim_, dim_);
    }
  }

  // -------------------------------------------------------------- attention

  /// One decode step for a batch: q is [batch][n_heads][head_dim] (query
  /// token of each sequence), out the same shape, lse (optional)
  /// [batch][n_heads] natural-log softmax denominators. One paged decode per
  /// tier over that tier's segment of each sequence, merged by log-sum-exp.
  /// scale 0 selects 1 / sqrt(head_dim). Errors: n_heads not a positive
  /// multiple of n_kv_heads, or scratch allocation failure.
  [[nodiscard]] result<void> decode(std::span<const tiered_sequence* const> seqs, std::size_t n_heads, const float* q,
                                    float* out, float* lse = nullptr, float scale = 0.0f) {
    const std::size_t batch = seqs.size();
    if (n_heads == 0 || n_heads % heads_ != 0 || n_heads > 0xFFFF)
      return make_error(errc::invalid_argument, "tiered_kv_cache::decode: n_heads ", n_heads,
                        " must be a positive multiple of n_kv_heads ", heads_);
    const std::size_t rows = batch * n_heads;
    std::size_t pages = 0;
    for (const tiered_sequence* s : seqs) pages += s->blocks.size();
    indptr_.resize(tier_count * (batch + 1));
    ids_.resize(std::max<std::size_t>(pages, 1));
    last_len_.resize(tier_count * std::max<std::size_t>(batch, 1));
    part_.resize(2 * rows * dim_);
    part_lse_.resize(2 * rows);
    float* acc = part_.data();  // the running merge
    float* acc_lse = part_lse_.data();
    float* cur = part_.data() + rows * dim_;
    float* cur_lse = part_lse_.data() + rows;
    std::fill(acc, acc + rows * dim_, 0.0f);
    std::fill(acc_lse, acc_lse + rows, -std::numeric_limits<float>::infinity());

    // Page tables: sequence s's tier-i pages are its tier-i run, in order.
    std::size_t id_pos = 0;
    for (std::size_t i = 0; i < tier_count; ++i) {
      std::uint32_t* indptr = indptr_.data() + i * (batch + 1);
      std::uint32_t* last = last_len_.data() + i * std::max<std::size_t>(batch, 1);
      const std::size_t base = id_pos;
      indptr[0] = static_cast<std::uint32_t>(id_pos);
      for (std::size_t s = 0; s < batch; ++s) {
        const tiered_sequence& seq = *seqs[s];
        std::size_t count = 0;
        std::size_t last_index = 0;
        for (std::size_t b = 0; b < seq.blocks.size(); ++b) {
          const record& r = records_[seq.blocks[b]];
          if (r.level != i) continue;
          ids_[id_pos++] = r.page;
          ++count;
          last_index = b;
        }
        indptr[s + 1] = static_cast<std::uint32_t>(id_pos);
        last[s] = count == 0
                      ? 0u
                      : static_cast<std::uint32_t>(std::min(TokensPerBlock, seq.tokens - last_index * TokensPerBlock));
      }
      if (id_pos == base) continue;  // no sequence has pages in this tier
      const tier_pool& t = tiers_[i];
      kernels::paged_kv_desc d;
      d.k_pages = t.k_pool.data();
      d.v_pages = t.v_pool.data();
      d.page_indptr = indptr;
      d.page_ids = ids_.data();
      d.last_page_len = last;
      d.batch = static_cast<std::uint32_t>(batch);
      d.n_kv_heads = static_cast<std::uint32_t>(heads_);
      d.head_dim = static_cast<std::uint32_t>(dim_);
      d.tokens_per_page = static_cast<std::uint32_t>(TokensPerBlock);
      d.k_format = d.v_format = t.format;
      d.k_head_bytes = t.k_head_bytes;
      d.v_head_bytes = t.v_head_bytes;
      d.k_page_bytes = t.k_page_bytes;
      d.v_page_bytes = t.v_page_bytes;
      kernels::attention_decode_options opt;
      opt.scale = scale;
      const std::size_t need = kernels::attention_decode_workspace_bytes(d, n_heads, opt);
      if (workspace_.size() < need) {
        RUVLLM_TRY_ASSIGN(workspace_, aligned_buffer<std::byte>::allocate(need));
      }
      RUVLLM_TRY_ASSIGN(const kernels::attention_decode_plan plan,
                        kernels::attention_plan_decode(d, n_heads, opt, workspace_.span()));
      attn::attention_decode(plan, d, q, 0, plan.work_items());
      attn::attention_decode_merge(plan, cur, cur_lse, 0, batch);
      attn::attention_merge_states(acc, acc_lse, cur, cur_lse, acc, acc_lse, rows, dim_);
    }
    std::copy(acc, acc + rows * dim_, out);
    if (lse != nullptr) std::copy(acc_lse, acc_lse + rows, lse);
    return {};
  }

  // ---------------------------------------------------------- introspection

  /// K + V bytes of one page of tier i (scales and zero points included).
  [[nodiscard]] std::size_t page_bytes(std::size_t i) const noexcept {
    return tiers_[i].k_page_bytes + tiers_[i].v_page_bytes;
  }
  /// Pages of tier i in use.
  [[nodiscard]] std::size_t tier_blocks_in_use(std::size_t i) const noexcept {
    return tiers_[i].pages - tiers_[i].free.size();
  }
  /// Pages of tier i in all.
  [[nodiscard]] std::size_t tier_capacity_blocks(std::size_t i) const noexcept { return tiers_[i].pages; }
  /// The storage format of tier i.
  [[nodiscard]] kernels::kv_format_desc tier_format(std::size_t i) const noexcept { return tiers_[i].format; }
  [[nodiscard]] std::size_t n_kv_heads() const noexcept { return heads_; }
  [[nodiscard]] std::size_t head_dim() const noexcept { return dim_; }
  [[nodiscard]] const tiered_kv_stats& stats() const noexcept { return stats_; }

  /// Capacities in tokens per sequence, hottest first.
  [[nodiscard]] static constexpr std::array<std::size_t, tier_count> capacities() noexcept {
    return capacities_of(std::make_index_sequence<tier_count>{});
  }
  /// Storage formats, hottest first.
  [[nodiscard]] static constexpr std::array<kernels::kv_format_desc, tier_count> formats() noexcept {
    return formats_of(std::make_index_sequence<tier_count>{});
  }

 private:
  tiered_kv_cache() = default;

  struct record {
    std::uint32_t refs = 0;
    std::uint32_t page = 0;
    std::uint32_t level = 0;  // the tier holding the page
  };

  struct tier_pool {
    kernels::kv_format_desc format{};
    std::size_t pages = 0;
    std::size_t k_head_bytes = 0, v_head_bytes = 0, k_page_bytes = 0, v_page_bytes = 0;
    aligned_buffer<std::byte> k_pool, v_pool;
    std::vector<std::uint32_t> free;  // free pages, a stack
  };

  template <std::size_t... I>
  static constexpr std::array<std::size_t, tier_count> capacities_of(std::index_sequence<I...>) noexcept {
    return {Tiers::template capacity<I>...};
  }
  template <std::size_t... I>
  static constexpr std::array<kernels::kv_format_desc, tier_count> formats_of(std::index_sequence<I...>) noexcept {
    return {kernels::kv_format_of<typename Tiers::template at<I>::precision>...};
  }

  [[nodiscard]] std::byte* k_head(const record& r, std::size_t h) const noexcept {
    const tier_pool& t = tiers_[r.level];
    return const_cast<std::byte*>(t.k_pool.data()) + std::size_t{r.page} * t.k_page_bytes + h * t.k_head_bytes;
  }
  [[nodiscard]] std::byte* v_head(const record& r, std::size_t h) const noexcept {
    const tier_pool& t = tiers_[r.level];
    return const_cast<std::byte*>(t.v_pool.data()) + std::size_t{r.page} * t.v_page_bytes + h * t.v_head_bytes;
  }

  /// Copies tokens [0, tokens) of src into dst (dst in the hottest tier).
  void copy_tokens(const record& src, const record& dst, std::size_t tokens) noexcept {
    const tier_pool& from = tiers_[src.level];
    const tier_pool& to = tiers_[dst.level];
    const bool same = from.format == to.format;
    for (std::size_t h = 0; h < heads_; ++h) {
      if (same) {  // per-token formats: a token's rows are a prefix of the page-head
        const std::size_t kb = kernels::kv_page_head_bytes(to.format, kernels::kv_role::key, tokens, dim_);
        const std::size_t vb = kernels::kv_page_head_bytes(to.format, kernels::kv_role::value, tokens, dim_);
        std::memcpy(k_head(dst, h), k_head(src, h), kb);
        std::memcpy(v_head(dst, h), v_head(src, h), vb);
        continue;
      }
      float* tile = tile_.data();
      kq::kv_dequantize_page_head(from.format, kernels::kv_role::key, k_head(src, h), 0, tokens, dim_, tile, dim_);
      kq::kv_quantize_page_head(to.format, kernels::kv_role::key, tile, dim_, 0, tokens, dim_, k_head(dst, h));
      kq::kv_dequantize_page_head(from.format, kernels::kv_role::value, v_head(src, h), 0, tokens, dim_, tile, dim_);
      kq::kv_quantize_page_head(to.format, kernels::kv_role::value, tile, dim_, 0, tokens, dim_, v_head(dst, h));
    }
  }

  /// Moves a full block to tier `to`; false when that pool is full.
  bool migrate(block_id id, std::size_t to) noexcept {
    record& r = records_[id];
    tier_pool& dst = tiers_[to];
    if (dst.free.empty()) {
      ++stats_.migration_stalls;
      return false;
    }
    const record old = r;
    const record moved{r.refs, dst.free.back(), static_cast<std::uint32_t>(to)};
    dst.free.pop_back();
    const tier_pool& src = tiers_[old.level];
    float* tile = tile_.data();
    for (std::size_t h = 0; h < heads_; ++h) {
      kq::kv_dequantize_page_head(src.format, kernels::kv_role::key, k_head(old, h), 0, TokensPerBlock, dim_, tile,
                                  dim_);
      kq::kv_quantize_page_head(dst.format, kernels::kv_role::key, tile, dim_, 0, TokensPerBlock, dim_,
                                k_head(moved, h));
      kq::kv_dequantize_page_head(src.format, kernels::kv_role::value, v_head(old, h), 0, TokensPerBlock, dim_, tile,
                                  dim_);
      kq::kv_quantize_page_head(dst.format, kernels::kv_role::value, tile, dim_, 0, TokensPerBlock, dim_,
                                v_head(moved, h));
    }
    tiers_[old.level].free.push_back(old.page);
    r = moved;
    ++stats_.migrated_blocks;
    stats_.migration_bytes += page_bytes(old.level) + page_bytes(to);
    return true;
  }

  std::size_t heads_ = 0, dim_ = 0, batch_ = 1, in_use_ = 0;
  std::array<tier_pool, tier_count> tiers_{};
  std::vector<record> records_;
  std::vector<block_id> free_ids_;
  aligned_buffer<float> tile_;  // one page-head as floats: migration and copies
  // decode scratch, grown to the largest batch
  std::vector<std::uint32_t> indptr_, ids_, last_len_;
  std::vector<float> part_, part_lse_;
  aligned_buffer<std::byte> workspace_;
  tiered_kv_stats stats_;
};

}  // namespace ruvllm::kv

#endif  // RUVLLM_KV_TIERED_KV_HPP
