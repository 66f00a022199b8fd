#ifndef RUVLLM_KV_PAGED_KV_CACHE_HPP
#define RUVLLM_KV_PAGED_KV_CACHE_HPP

// kv::paged_kv_cache<Config, Backend> -- per-sequence block tables over a
// kv::block_allocator, with copy-on-write forks, an allocation-free plan()
// per step, token appends in the stored precision, and the per-layer
// kernels::paged_kv_view the attention kernels read.
//
// ------------------------------------------------------------- one step
//   1. plan(batch, ws): for every (sequence, new tokens) of the batch,
//      reserves the blocks the new tokens need (copying a shared, partially
//      filled last block first: copy-on-write), advances the sequence length
//      and writes the CSR page table of the batch (page_indptr, page_ids,
//      last_page_len -- kernels/paged_kv_view.hpp) into ws. No allocation:
//      ws was sized once by make_workspace(max_batch). All or nothing: when a
//      block cannot be had, every reservation of this plan is undone.
//   2. per layer: append(ws, layer, i, k, v) writes the new tokens of batch
//      entry i (f32 or f16 rows [token][kv_head][dim]) in K/V precision
//      through Backend's KV quantizers; then view(ws, layer) is the
//      paged_kv_view of the whole batch (new tokens included) for
//      ops<Backend>::attention_decode / prefill.
// Between plan() and the appends of a layer, that layer's new tokens are
// unwritten: the view of a layer is meaningful once its appends are done.
//
// ------------------------------------------------------------- sharing
// fork(s) makes a sequence sharing every block of s (reference counts + 1).
// Full blocks are immutable once shared; the partially filled last block is
// copied by whichever of the two next appends to it (the copy holds the
// tokens written so far), so siblings never see each other's tokens.
// add_sequence(prefix_blocks, tokens) adopts cached blocks (e.g. a radix
// cache hit) the same way; block_table(s) exposes a sequence's blocks.
//
// ------------------------------------------------------------- storage
// Blocks live in the allocator's per-layer K and V slabs (block_allocator.hpp:
// layer l's keys of block b at k_slab(l) + b * k_page_bytes), so the page ids
// of one CSR table address every layer, and view(ws, l) is just the table
// plus layer l's slab bases. Block tables are one preallocated array of
// max_sequences x max_blocks_per_sequence ids (no allocation per sequence).
//
// Precisions: keys f16 or q8_0, values f16, q8_0 or KIVI (per-token groups).
// KIVI *keys* group G consecutive tokens per channel, so a token appended one
// at a time would have to requantize its group from full-precision copies the
// cache does not keep; a KIVI key tier is filled by migrating whole blocks
// (kv tiers), not by append, and this class rejects it at compile time.
//
// Thread-safety: a paged_kv_cache is not synchronized; one thread (the
// scheduler) drives it. Several caches may share one block_allocator from
// different threads (its contract is thread-safe). Kernels may read views
// concurrently with each other, not with appends to the same tokens.
//
// Errors: unknown or freed sequence ids (not_found), positions and lengths
// out of range (out_of_range), exhausted blocks or sequence slots
// (out_of_memory), duplicate sequences in one batch (invalid_argument).

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/kernels/paged_kv_view.hpp"
#include "ruvllm/kv/block_allocator.hpp"

namespace ruvllm::kv {

/// A compile-time KV cache shape: the usual Config of paged_kv_cache.
template <std::size_t Layers, std::size_t KvHeads, std::size_t HeadDim, class KPrecision = precision::f16,
          class VPrecision = precision::f16, std::size_t TokensPerBlock = 16>
struct kv_config {
  static constexpr std::size_t layers = Layers;
  static constexpr std::size_t kv_heads = KvHeads;
  static constexpr std::size_t head_dim = HeadDim;
  static constexpr std::size_t tokens_per_block = TokensPerBlock;
  using k_precision = KPrecision;
  using v_precision = VPrecision;
};

/// A paged_kv_cache shape known only at run time (e.g. from a GGUF file's
/// metadata): the cache takes layers, KV heads and head_dim from its
/// block_allocator's layout at create(); the precisions and the tokens per
/// block stay types and constants, since they pick the kernels.
template <class KPrecision = precision::f16, class VPrecision = precision::f16, std::size_t TokensPerBlock = 16>
struct runtime_kv_config {
  static constexpr bool runtime_shape = true;
  static constexpr std::size_t tokens_per_block = TokensPerBlock;
  using k_precision = KPrecision;
  using v_precision = VPrecision;
};

namespace detail {
// Names every cache of every Config, so a workspace planned by one cache is
// never taken for another's.
inline std::atomic<std::uint64_t> next_cache_id{1};

template <class P>
inline constexpr bool is_kivi_key = kernels::KvPrecision<P> &&
                                    (kernels::kv_format_of<P>.format == kernels::kv_format::kivi2 ||
                                     kernels::kv_format_of<P>.format == kernels::kv_format::kivi4);
}  // namespace detail

namespace detail {
template <class C>
concept runtime_shaped_config = requires {
  requires C::runtime_shape;
};
template <class C>
concept static_shaped_config = requires {
  { C::layers } -> std::convertible_to<std::size_t>;
  { C::kv_heads } -> std::convertible_to<std::size_t>;
  { C::head_dim } -> std::convertible_to<std::size_t>;
};

// The compile-time shape constants of a static Config (none for a runtime one).
template <class C, bool Static = !runtime_shaped_config<C>>
struct static_kv_shape {};
template <class C>
struct static_kv_shape<C, true> {
  static constexpr std::size_t layers = C::layers;
  static constexpr std::size_t kv_heads = C::kv_heads;
  static constexpr std::size_t head_dim = C::head_dim;
  static constexpr std::size_t row_floats = kv_heads * head_dim;  // one token's K (or V), all heads
  static_assert(layers >= 1 && kv_heads >= 1 && head_dim >= 1,
                "paged_kv_cache: every Config dimension must be positive");
};
}  // namespace detail

/// A paged_kv_cache shape: tokens_per_block (a constant), k_precision and
/// v_precision (KV precisions), and either layers, kv_heads and head_dim
/// (constants, kv_config) or runtime_shape = true (runtime_kv_config: the
/// dimensions come from the block_allocator at run time).
template <class C>
concept KvCacheConfig = requires {
  { C::tokens_per_block } -> std::convertible_to<std::size_t>;
  typename C::k_precision;
  typename C::v_precision;
}
&&(detail::static_shaped_config<C> || detail::runtime_shaped_config<C>)&&kernels::KvPrecision<
    typename C::k_precision>&& kernels::KvPrecision<typename C::v_precision>;

/// A sequence of a paged_kv_cache: slot and generation (stale ids are caught).
using seq_id = std::uint64_t;

/// One entry of a step: sequence and the tokens it appends this step.
struct step_entry {
  seq_id seq = 0;
  std::uint32_t new_tokens = 0;
};

/// Options of paged_kv_cache::create.
struct cache_options {
  std::uint32_t max_sequences = 256;             // live sequences at once (forks included)
  std::uint32_t max_tokens_per_sequence = 8192;  // sizes the block tables
};

/// The per-step buffers plan() fills and view()/append() read: the CSR page
/// table and each entry's append range. Made by paged_kv_cache::make_workspace
/// (the only allocation), reused every step; not synchronized.
struct step_workspace {
  std::unique_ptr<std::uint32_t[]> page_indptr;    // batch + 1
  std::unique_ptr<std::uint32_t[]> page_ids;       // max_batch x max blocks per sequence
  std::unique_ptr<std::uint32_t[]> last_page_len;  // batch
  std::unique_ptr<std::uint32_t[]> slot;           // per entry: sequence slot
  std::unique_ptr<std::uint32_t[]> start;          // per entry: first new position
  std::unique_ptr<std::uint32_t[]> count;          // per entry: new tokens
  std::unique_ptr<std::uint32_t[]> undo;           // rollback log of plan()
  std::uint32_t max_batch = 0;
  std::uint32_t batch = 0;
  std::uint64_t owner = 0;  // the cache whose plan filled it (0: none)
  std::uint64_t epoch = 0;  // that cache's state when it was planned

  [[nodiscard]] std::span<const std::uint32_t> indptr() const noexcept { return {page_indptr.get(), batch + 1u}; }
  [[nodiscard]] std::span<const std::uint32_t> ids() const noexcept {
    return {page_ids.get(), batch == 0 ? 0u : page_indptr[batch]};
  }
  [[nodiscard]] std::span<const std::uint32_t> last_len() const noexcept { return {last_page_len.get(), batch}; }
};

/// The paged KV cache (contract in the file comment).
///
/// Template parameters: Config (KvCacheConfig, e.g. kv_config<...>);
/// B, the Backend whose KV quantizers append tokens (highway by default).
/// Movable; create() and make_workspace() allocate, nothing else does
/// (except error messages). The block_allocator must outlive the cache.
template <KvCacheConfig Config, Backend B = backend::highway>
class paged_kv_cache : public detail::static_kv_shape<Config> {
 public:
  using config = Config;
  using k_precision = typename Config::k_precision;
  using v_precision = typename Config::v_precision;
  /// Whether layers, KV heads and head_dim are run-time values (runtime_kv_config).
  static constexpr bool runtime_shape = detail::runtime_shaped_config<Config>;
  static constexpr std::size_t tokens_per_block = Config::tokens_per_block;
  using view_type = kernels::paged_kv_view<k_precision, v_precision, tokens_per_block>;
  using block_id = block_allocator::block_id;

  static_assert(!detail::is_kivi_key<k_precision>,
                "paged_kv_cache: KIVI keys group tokens and cannot be appended one token at a time; store keys as "
                "precision::f16 or precision::q8_0 (a KIVI key tier is filled by block migration)");
  static_assert(tokens_per_block >= 1, "paged_kv_cache: every Config dimension must be positive");

  static constexpr kernels::kv_format_desc k_format = kernels::kv_format_of<k_precision>;
  static constexpr kernels::kv_format_desc v_format = kernels::kv_format_of<v_precision>;

  /// The block layout a static Config needs (for block_allocator::create).
  [[nodiscard]] static result<block_layout> layout() requires(!runtime_shape) {
    return block_layout::of<k_precision, v_precision, tokens_per_block>(Config::layers, Config::kv_heads,
                                                                        Config::head_dim);
  }
  /// The block layout of a runtime Config for a model's shape.
  [[nodiscard]] static result<block_layout> layout(std::size_t layers, std::size_t kv_heads,
                                                   std::size_t head_dim) requires runtime_shape {
    return block_layout::of<k_precision, v_precision, tokens_per_block>(layers, kv_heads, head_dim);
  }

  /// The shape: layers, KV heads, head_dim, and one token's K (or V) floats
  /// over all heads (the Config's constants, or the allocator's layout).
  [[nodiscard]] std::size_t num_layers() const noexcept { return layers_; }
  [[nodiscard]] std::size_t num_kv_heads() const noexcept { return kv_heads_; }
  [[nodiscard]] std::size_t head_size() const noexcept { return head_dim_; }
  [[nodiscard]] std::size_t row_size() const noexcept { return std::size_t{kv_heads_} * head_dim_; }

  paged_kv_cache() noexcept = default;

  /// A cache over `blocks`, whose layout must equal layout() (a runtime
  /// Config takes its dimensions from it and checks the formats and tokens
  /// per block). Errors: invalid_argument for a layout mismatch or options
  /// out of range.
  [[nodiscard]] static result<paged_kv_cache> create(block_allocator& blocks, const cache_options& o = {}) {
    const block_layout& have = blocks.layout();
    block_layout want{};
    if constexpr (runtime_shape) {
      RUVLLM_TRY_ASSIGN(want, layout(have.layers, have.kv_heads, have.head_dim));
    } else {
      RUVLLM_TRY_ASSIGN(want, layout());
    }
    if (have.layers != want.layers || have.kv_heads != want.kv_heads || have.head_dim != want.head_dim ||
        have.tokens_per_block != want.tokens_per_block || !(have.k_format == want.k_format) ||
        !(have.v_format == want.v_format))
      return make_error(errc::invalid_argument, "block allocator layout (", have.layers, " layers, ", have.kv_heads,
                        " heads, dim ", have.head_dim, ", ", have.tokens_per_block,
                        " tokens per block) differs from the cache's (", want.layers, ", ", want.kv_heads, ", ",
                        want.head_dim, ", ", want.tokens_per_block, ") or its formats");
    if (o.max_sequences == 0 || o.max_sequences > (1u << 24))
      return make_error(errc::invalid_argument, "max_sequences ", o.max_sequences, " must be in [1, 2^24]");
    if (o.max_tokens_per_sequence == 0 || o.max_tokens_per_sequence > (1u << 30))
      return make_error(errc::invalid_argument, "max_tokens_per_sequence ", o.max_tokens_per_sequence,
                        " must be in [1, 2^30]");
    paged_kv_cache c;
    c.blocks_ = &blocks;
    c.layers_ = want.layers;
    c.kv_heads_ = want.kv_heads;
    c.head_dim_ = want.head_dim;
    c.max_seqs_ = o.max_sequences;
    c.max_tokens_ = o.max_tokens_per_sequence;
    c.max_blocks_ = static_cast<std::uint32_t>((o.max_tokens_per_sequence + tokens_per_block - 1) / tokens_per_block);
    c.tables_ = std::make_unique<block_id[]>(std::size_t{c.max_seqs_} * c.max_blocks_);
    c.seqs_ = std::make_unique<seq_state[]>(c.max_seqs_);
    c.free_slots_ = std::make_unique<std::uint32_t[]>(c.max_seqs_);
    for (std::uint32_t i = 0; i < c.max_seqs_; ++i) c.free_slots_[i] = c.max_seqs_ - 1 - i;
    c.free_top_ = c.max_seqs_;
    c.cache_id_ = detail::next_cache_id.fetch_add(1, std::memory_order_relaxed);
    return c;
  }

  paged_kv_cache(paged_kv_cache&&) noexcept = default;
  paged_kv_cache& operator=(paged_kv_cache&& o) noexcept {
    if (this != &o) {
      release_all();
      blocks_ = std::exchange(o.blocks_, nullptr);
      layers_ = o.layers_;
      kv_heads_ = o.kv_heads_;
      head_dim_ = o.head_dim_;
      tables_ = std::move(o.tables_);
      seqs_ = std::move(o.seqs_);
      free_slots_ = std::move(o.free_slots_);
      max_seqs_ = o.max_seqs_;
      max_tokens_ = o.max_tokens_;
      max_blocks_ = o.max_blocks_;
      free_top_ = o.free_top_;
      live_ = o.live_;
      cache_id_ = o.cache_id_;
      plan_count_ = o.plan_count_;
      stamp_ = o.stamp_;
    }
    return *this;
  }
  paged_kv_cache(const paged_kv_cache&) = delete;
  paged_kv_cache& operator=(const paged_kv_cache&) = delete;
  /// Releases the blocks of every live sequence.
  ~paged_kv_cache() { release_all(); }

  /// Buffers for plans of up to max_batch entries (allocates them).
  [[nodiscard]] step_workspace make_workspace(std::uint32_t max_batch) const {
    step_workspace ws;
    ws.max_batch = max_batch;
    const std::size_t n = std::max<std::size_t>(max_batch, 1);
    ws.page_indptr = std::make_unique<std::uint32_t[]>(n + 1);
    ws.page_ids = std::make_unique<std::uint32_t[]>(n * max_blocks_);
    ws.last_page_len = std::make_unique<std::uint32_t[]>(n);
    ws.slot = std::make_unique<std::uint32_t[]>(n);
    ws.start = std::make_unique<std::uint32_t[]>(n);
    ws.count = std::make_unique<std::uint32_t[]>(n);
    ws.undo = std::make_unique<std::uint32_t[]>(4 * n);
    return ws;
  }

  // --------------------------------------------------------- sequences

  /// A new empty sequence. Errors: out_of_memory when max_sequences are live.
  [[nodiscard]] result<seq_id> add_sequence() {
    RUVLLM_TRY_ASSIGN(const std::uint32_t slot, take_slot());
    return id_of(slot);
  }

  /// A new sequence of `tokens` tokens held by `prefix` (e.g. a prefix-cache
  /// hit): one reference is taken on each block; the caller keeps its own.
  /// Errors: out_of_range when tokens does not fit exactly in prefix
  /// (ceil(tokens / T) blocks) or exceeds max_tokens_per_sequence;
  /// not_found for a block that is not live; out_of_memory (slots).
  [[nodiscard]] result<seq_id> add_sequence(std::span<const block_id> prefix, std::size_t tokens) {
    if (tokens > max_tokens_ || prefix.size() != (tokens + tokens_per_block - 1) / tokens_per_block)
      return make_error(errc::out_of_range, "prefix of ", prefix.size(), " blocks cannot hold exactly ", tokens,
                        " tokens of ", tokens_per_block, " per block (limit ", max_tokens_, " tokens)");
    for (const block_id b : prefix)
      if (blocks_->ref_count(b) == 0) return make_error(errc::not_found, "prefix block ", b, " is not live");
    RUVLLM_TRY_ASSIGN(const std::uint32_t slot, take_slot());
    block_id* table = table_of(slot);
    for (std::size_t i = 0; i < prefix.size(); ++i) {
      blocks_->retain(prefix[i]);
      table[i] = prefix[i];
    }
    seqs_[slot].blocks = static_cast<std::uint32_t>(prefix.size());
    seqs_[slot].length = static_cast<std::uint32_t>(tokens);
    return id_of(slot);
  }

  /// A new sequence sharing every token of `parent` (copy-on-write).
  /// Errors: not_found (parent), out_of_memory (slots).
  [[nodiscard]] result<seq_id> fork(seq_id parent) {
    RUVLLM_TRY_ASSIGN(const std::uint32_t p, find(parent));
    RUVLLM_TRY_ASSIGN(const std::uint32_t slot, take_slot());
    const block_id* src = table_of(p);
    block_id* dst = table_of(slot);
    for (std::uint32_t i = 0; i < seqs_[p].blocks; ++i) {
      blocks_->retain(src[i]);
      dst[i] = src[i];
    }
    seqs_[slot].blocks = seqs_[p].blocks;
    seqs_[slot].length = seqs_[p].length;
    return id_of(slot);
  }

  /// Ends sequence s: its references are released (shared blocks live on
  /// in their other holders). Errors: not_found.
  result<void> free_sequence(seq_id s) {
    RUVLLM_TRY_ASSIGN(const std::uint32_t slot, find(s));
    invalidate();
    release_slot(slot);
    return {};
  }

  /// Drops the tokens of s from position `tokens` on (speculative decoding
  /// rejects a draft this way); blocks no longer needed are released.
  /// Errors: not_found, out_of_range (tokens > length).
  result<void> truncate(seq_id s, std::size_t tokens) {
    RUVLLM_TRY_ASSIGN(const std::uint32_t slot, find(s));
    seq_state& st = seqs_[slot];
    if (tokens > st.length)
      return make_error(errc::out_of_range, "truncate to ", tokens, " tokens past the sequence length ", st.length);
    invalidate();
    const auto keep = static_cast<std::uint32_t>((tokens + tokens_per_block - 1) / tokens_per_block);
    block_id* table = table_of(slot);
    for (std::uint32_t i = keep; i < st.blocks; ++i) blocks_->release(table[i]);
    st.blocks = keep;
    st.length = static_cast<std::uint32_t>(tokens);
    return {};
  }

  /// Tokens held by s. Errors: not_found.
  [[nodiscard]] result<std::size_t> length(seq_id s) const {
    RUVLLM_TRY_ASSIGN(const std::uint32_t slot, find(s));
    return std::size_t{seqs_[slot].length};
  }

  /// The blocks of s in order (valid until s changes). Errors: not_found.
  [[nodiscard]] result<std::span<const block_id>> block_table(seq_id s) const {
    RUVLLM_TRY_ASSIGN(const std::uint32_t slot, find(s));
    return std::span<const block_id>(table_of(slot), seqs_[slot].blocks);
  }

  [[nodiscard]] std::size_t live_sequences() const noexcept { return live_; }
  [[nodiscard]] block_allocator& blocks() const noexcept { return *blocks_; }

  // --------------------------------------------------------- one step

  /// Reserves room for each entry's new tokens (copy-on-write of a shared
  /// partial last block), advances lengths and writes the batch's CSR page
  /// table into ws. No allocation. All or nothing. Errors: invalid_argument
  /// (batch larger than ws, a sequence twice), not_found (sequence),
  /// out_of_range (a length past max_tokens_per_sequence), out_of_memory
  /// (blocks exhausted; nothing changed).
  [[nodiscard]] result<void> plan(std::span<const step_entry> batch, step_workspace& ws) {
    if (batch.size() > ws.max_batch || ws.page_ids == nullptr)
      return make_error(errc::invalid_argument, "batch of ", batch.size(), " entries exceeds the workspace's ",
                        ws.max_batch);
    ws.batch = 0;
    ws.owner = 0;
    invalidate();
    const std::uint64_t stamp = ++stamp_;
    // Validate everything before touching anything.
    for (std::size_t i = 0; i < batch.size(); ++i) {
      RUVLLM_TRY_ASSIGN(const std::uint32_t slot, find(batch[i].seq));
      if (seqs_[slot].length + std::uint64_t{batch[i].new_tokens} > max_tokens_)
        return make_error(errc::out_of_range, "sequence of ", seqs_[slot].length, " tokens plus ", batch[i].new_tokens,
                          " new exceeds max_tokens_per_sequence ", max_tokens_);
      if (seqs_[slot].planned == stamp)
        return make_error(errc::invalid_argument, "sequence ", batch[i].seq, " appears twice in one batch");
      seqs_[slot].planned = stamp;
      ws.slot[i] = slot;
    }
    // Reserve. The undo log holds, per entry: blocks before, length before,
    // the block a copy-on-write replaced (no_block if none), the entry done.
    std::size_t done = 0;
    for (; done < batch.size(); ++done) {
      const std::uint32_t slot = ws.slot[done];
      seq_state& st = seqs_[slot];
      block_id* table = table_of(slot);
      const std::uint32_t n = batch[done].new_tokens;
      std::uint32_t* u = &ws.undo[4 * done];
      u[0] = st.blocks;
      u[1] = st.length;
      u[2] = block_allocator::no_block;
      const std::uint32_t fill = st.length % tokens_per_block;
      bool ok = true;
      if (n > 0 && fill != 0 && blocks_->ref_count(table[st.blocks - 1]) > 1) {
        const block_id copy = blocks_->try_allocate();
        if (copy == block_allocator::no_block) {
          ok = false;
        } else {
          blocks_->copy_tokens(table[st.blocks - 1], copy, fill);
          u[2] = table[st.blocks - 1];
          table[st.blocks - 1] = copy;  // the old reference is dropped on success
        }
      }
      const auto need =
          static_cast<std::uint32_t>((st.length + std::size_t{n} + tokens_per_block - 1) / tokens_per_block);
      while (ok && st.blocks < need) {
        const block_id b = blocks_->try_allocate();
        if (b == block_allocator::no_block) {
          ok = false;
          break;
        }
        table[st.blocks++] = b;
      }
      if (!ok) {
        undo_entry(slot, u);
        for (std::size_t j = done; j-- > 0;) undo_entry(ws.slot[j], &ws.undo[4 * j]);
        return make_error(errc::out_of_memory, "KV blocks exhausted planning a batch of ", batch.size(), " sequences (",
                          blocks_->blocks_in_use(), " of ", blocks_->capacity_blocks(), " blocks in use)");
      }
      ws.start[done] = st.length;
      ws.count[done] = n;
      st.length += n;
    }
    // Commit: drop the references copy-on-write replaced; write the table.
    std::uint32_t pos = 0;
    ws.page_indptr[0] = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (ws.undo[4 * i + 2] != block_allocator::no_block) blocks_->release(ws.undo[4 * i + 2]);
      const seq_state& st = seqs_[ws.slot[i]];
      const block_id* table = table_of(ws.slot[i]);
      std::copy(table, table + st.blocks, ws.page_ids.get() + pos);
      pos += st.blocks;
      ws.page_indptr[i + 1] = pos;
      ws.last_page_len[i] =
          st.blocks == 0 ? 0 : static_cast<std::uint32_t>(st.length - std::size_t{st.blocks - 1} * tokens_per_block);
    }
    ws.batch = static_cast<std::uint32_t>(batch.size());
    ws.owner = cache_id_;
    ws.epoch = plan_count_;
    return {};
  }

  /// Writes the new tokens of batch entry `entry` of the last plan in layer
  /// `layer`: k and v hold count x row_size() values, token-major
  /// ([token][kv_head][dim]), count = the entry's new_tokens. Converted to
  /// the stored precision by B's KV quantizers; no allocation. Errors:
  /// invalid_argument (ws not from this cache's last plan, wrong sizes),
  /// out_of_range (layer, entry).
  [[nodiscard]] result<void> append(const step_workspace& ws, std::size_t layer, std::size_t entry,
                                    std::span<const float> k, std::span<const float> v) {
    RUVLLM_TRY(check_append(ws, layer, entry, k.size(), v.size()));
    write_rows(ws, layer, entry, k.data(), v.data());
    return {};
  }

  /// append() from f16 rows (converted one head row at a time on the stack).
  [[nodiscard]] result<void> append(const step_workspace& ws, std::size_t layer, std::size_t entry,
                                    std::span<const f16> k, std::span<const f16> v) {
    RUVLLM_TRY(check_append(ws, layer, entry, k.size(), v.size()));
    const std::uint32_t n = ws.count[entry];
    float kr[kernels::kv_max_head_dim], vr[kernels::kv_max_head_dim];
    for (std::uint32_t t = 0; t < n; ++t)
      for (std::size_t h = 0; h < kv_heads_; ++h) {
        const std::size_t off = t * row_size() + h * head_dim_;
        for (std::size_t c = 0; c < head_dim_; ++c) {
          kr[c] = to_float(k[off + c]);
          vr[c] = to_float(v[off + c]);
        }
        write_head(ws, layer, entry, t, 1, h, kr, vr, head_dim_);
      }
    return {};
  }

  /// The kernels' view of layer `layer` for the batch of the last plan
  /// (valid until the next plan or a sequence change). Errors:
  /// invalid_argument (ws not from this cache's last plan), out_of_range.
  [[nodiscard]] result<view_type> view(const step_workspace& ws, std::size_t layer) const {
    RUVLLM_TRY(check_ws(ws));
    if (layer >= layers_) return make_error(errc::out_of_range, "layer ", layer, " >= layers ", layers_);
    return view_unchecked(ws, layer);
  }

  /// view() without checks, for the decode loop after one checked call.
  [[nodiscard]] view_type view_unchecked(const step_workspace& ws, std::size_t layer) const noexcept {
    view_type vw;
    vw.k_pages = blocks_->k_slab(layer);
    vw.v_pages = blocks_->v_slab(layer);
    vw.page_indptr = ws.page_indptr.get();
    vw.page_ids = ws.page_ids.get();
    vw.last_page_len = ws.last_page_len.get();
    vw.batch = ws.batch;
    vw.n_kv_heads = kv_heads_;
    vw.head_dim = head_dim_;
    return vw;
  }

  /// Reads token `pos` of s in layer `layer` back as floats (dequantized):
  /// k_out and v_out receive row_size() values. For tests, tools
  /// and spilling. Errors: not_found, out_of_range (layer, pos >= length),
  /// invalid_argument (output sizes).
  result<void> read(seq_id s, std::size_t layer, std::size_t pos, std::span<float> k_out,
                    std::span<float> v_out) const {
    RUVLLM_TRY_ASSIGN(const std::uint32_t slot, find(s));
    if (layer >= layers_) return make_error(errc::out_of_range, "layer ", layer, " >= layers ", layers_);
    if (pos >= seqs_[slot].length)
      return make_error(errc::out_of_range, "position ", pos, " >= sequence length ", seqs_[slot].length);
    if (k_out.size() != row_size() || v_out.size() != row_size())
      return make_error(errc::invalid_argument, "read needs ", row_size(), " floats per output, got ", k_out.size(),
                        " and ", v_out.size());
    const block_id b = table_of(slot)[pos / tokens_per_block];
    const std::size_t t = pos % tokens_per_block;
    const std::byte* kb = blocks_->k_block(layer, b);
    const std::byte* vb = blocks_->v_block(layer, b);
    const std::size_t D = head_dim_;
    for (std::size_t h = 0; h < kv_heads_; ++h) {
      kernels::kv_quant_ops<B>::kv_dequantize_page_head(
          k_format, kernels::kv_role::key, kb + h * view_type::k_head_bytes(D), t, 1, D, k_out.data() + h * D, D);
      kernels::kv_quant_ops<B>::kv_dequantize_page_head(
          v_format, kernels::kv_role::value, vb + h * view_type::v_head_bytes(D), t, 1, D, v_out.data() + h * D, D);
    }
    return {};
  }

 private:
  struct seq_state {
    std::uint32_t generation = 1;
    std::uint32_t blocks = 0;
    std::uint32_t length = 0;
    bool live = false;
    std::uint64_t planned = 0;  // stamp of the last plan() that named it (duplicate check)
  };

  [[nodiscard]] block_id* table_of(std::uint32_t slot) const noexcept {
    return tables_.get() + std::size_t{slot} * max_blocks_;
  }
  [[nodiscard]] seq_id id_of(std::uint32_t slot) const noexcept {
    return (std::uint64_t{seqs_[slot].generation} << 32) | slot;
  }

  [[nodiscard]] result<std::uint32_t> find(seq_id s) const {
    const auto slot = static_cast<std::uint32_t>(s & 0xFFFF'FFFFu);
    const auto gen = static_cast<std::uint32_t>(s >> 32);
    if (seqs_ == nullptr || slot >= max_seqs_ || !seqs_[slot].live || seqs_[slot].generation != gen)
      return make_error(errc::not_found, "sequence ", s, " is not live in this cache");
    return slot;
  }

  [[nodiscard]] result<std::uint32_t> take_slot() {
    if (free_top_ == 0)
      return make_error(errc::out_of_memory, "all ", max_seqs_, " sequence slots of the KV cache are live");
    invalidate();
    const std::uint32_t slot = free_slots_[--free_top_];
    seq_state& st = seqs_[slot];
    st.blocks = 0;
    st.length = 0;
    st.live = true;
    st.planned = 0;
    ++live_;
    return slot;
  }

  // Any change of a sequence makes earlier plans (and their views) stale.
  void invalidate() noexcept { ++plan_count_; }

  void release_slot(std::uint32_t slot) noexcept {
    seq_state& st = seqs_[slot];
    const block_id* table = table_of(slot);
    for (std::uint32_t i = 0; i < st.blocks; ++i) blocks_->release(table[i]);
    st.blocks = 0;
    st.length = 0;
    st.live = false;
    if (++st.generation == 0) st.generation = 1;
    free_slots_[free_top_++] = slot;
    --live_;
  }

  void release_all() noexcept {
    if (seqs_ == nullptr) return;
    for (std::uint32_t i = 0; i < max_seqs_; ++i)
      if (seqs_[i].live) release_slot(i);
  }

  // Restores one plan entry from its undo record (see plan()).
  void undo_entry(std::uint32_t slot, const std::uint32_t* u) noexcept {
    seq_state& st = seqs_[slot];
    block_id* table = table_of(slot);
    for (std::uint32_t i = u[0]; i < st.blocks; ++i) blocks_->release(table[i]);
    st.blocks = u[0];
    if (u[2] != block_allocator::no_block) {
      blocks_->release(table[st.blocks - 1]);  // the copy
      table[st.blocks - 1] = u[2];
    }
    st.length = u[1];
  }

  [[nodiscard]] result<void> check_ws(const step_workspace& ws) const {
    if (ws.owner == 0 || ws.owner != cache_id_ || ws.epoch != plan_count_)
      return make_error(errc::invalid_argument, "step workspace does not hold this cache's last plan");
    return {};
  }

  [[nodiscard]] result<void> check_append(const step_workspace& ws, std::size_t layer, std::size_t entry,
                                          std::size_t k_size, std::size_t v_size) const {
    RUVLLM_TRY(check_ws(ws));
    if (layer >= layers_) return make_error(errc::out_of_range, "layer ", layer, " >= layers ", layers_);
    if (entry >= ws.batch) return make_error(errc::out_of_range, "batch entry ", entry, " >= batch ", ws.batch);
    const std::size_t want = std::size_t{ws.count[entry]} * row_size();
    if (k_size != want || v_size != want)
      return make_error(errc::invalid_argument, "append of ", ws.count[entry], " tokens needs ", want,
                        " values for K and V, got ", k_size, " and ", v_size);
    return {};
  }

  // Writes all heads of the entry's new tokens from [token][kv_head][dim] rows.
  void write_rows(const step_workspace& ws, std::size_t layer, std::size_t entry, const float* k,
                  const float* v) noexcept {
    const std::uint32_t n = ws.count[entry];
    std::uint32_t t = 0;
    while (t < n) {
      const std::size_t pos = ws.start[entry] + t;
      const auto run = static_cast<std::uint32_t>(
          std::min<std::size_t>(n - t, tokens_per_block - pos % tokens_per_block));  // within one block
      const std::size_t row = row_size();
      for (std::size_t h = 0; h < kv_heads_; ++h)
        write_head(ws, layer, entry, t, run, h, k + t * row + h * head_dim_, v + t * row + h * head_dim_, row);
      t += run;
    }
  }

  // Quantizes tokens [t, t + run) of the entry (one block) of head h.
  void write_head(const step_workspace& ws, std::size_t layer, std::size_t entry, std::uint32_t t, std::uint32_t run,
                  std::size_t h, const float* k, const float* v, std::size_t stride) noexcept {
    const std::size_t pos = ws.start[entry] + t;
    const block_id b = table_of(ws.slot[entry])[pos / tokens_per_block];
    const std::size_t first = pos % tokens_per_block;
    kernels::kv_quant_ops<B>::kv_quantize_page_head(
        k_format, kernels::kv_role::key, k, stride, first, run, head_dim_,
        blocks_->k_block(layer, b) + h * view_type::k_head_bytes(head_dim_));
    kernels::kv_quant_ops<B>::kv_quantize_page_head(
        v_format, kernels::kv_role::value, v, stride, first, run, head_dim_,
        blocks_->v_block(layer, b) + h * view_type::v_head_bytes(head_dim_));
  }

  block_allocator* blocks_ = nullptr;
  std::uint32_t layers_ = 0;
  std::uint32_t kv_heads_ = 0;
  std::uint32_t head_dim_ = 0;
  std::unique_ptr<block_id[]> tables_;
  std::unique_ptr<seq_state[]> seqs_;
  std::unique_ptr<std::uint32_t[]> free_slots_;
  std::uint32_t max_seqs_ = 0;
  std::uint32_t max_tokens_ = 0;
  std::uint32_t max_blocks_ = 0;
  std::uint32_t free_top_ = 0;
  std::size_t live_ = 0;
  std::uint64_t cache_id_ = 0;
  std::uint64_t plan_count_ = 0;  // bumped by every change: a workspace names the state it was planned on
  std::uint64_t stamp_ = 0;
};

}  // namespace ruvllm::kv

#endif  // RUVLLM_KV_PAGED_KV_CACHE_HPP
