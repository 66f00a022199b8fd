#ifndef RUVLLM_KV_RADIX_CACHE_HPP
#define RUVLLM_KV_RADIX_CACHE_HPP

// The radix prefix cache (after SGLang's RadixAttention): a radix tree over
// token ids whose nodes own KV blocks, so that a request whose prompt starts
// with a cached prefix reuses that prefix's KV instead of recomputing it.
//
// ----------------------------------------------------------------- keys
// Every key starts with a kv_namespace: model, LoRA adapter, adapter version
// and tenant salt, as distinct enum types so they cannot be swapped. KV
// computed under one namespace is never served to another: an adapter update
// bumps adapter_version (and retire() drops what the old version cached), a
// tenant salt keeps tenants from probing each other's prompts through timing.
// Each namespace has its own root; the tree below it is over token ids.
//
// --------------------------------------------------------------- blocks
// KV lives in blocks of TokensPerBlock tokens owned by a BlockStore
// (refcounted; ruvllm::kv::block_allocator or the tiered store). Edges are
// block-aligned: every node starts at a multiple of TokensPerBlock, holds the
// blocks covering its tokens, and ends on a block boundary unless it is a
// leaf ending in a partial block. Two sequences that diverge inside a block
// therefore become siblings that share their first tokens (their blocks hold
// different KV after the divergence). The cache holds one reference to each
// block it keeps; every block belongs to exactly one node.
//
// match() returns the longest cached prefix of a query: the whole blocks it
// covers are shared (retained for the caller), and when it ends inside a block
// that block is copied with copy_block(src, tokens) so the caller can append
// to its private copy (copy on write). Callers that need logits for the last
// prompt token pass the prompt without it.
//
// --------------------------------------------------------------- layout
// A node is one heap object: parent pointer, depth, edge length, reference
// counts, the eviction hook, its children sorted by first block, and one
// allocation holding its edge's token ids followed by its block ids. Two
// indexes find children:
//  * a block table for the whole cache, open addressing keyed by (parent,
//    the child's first whole block of tokens) -- linear probing, at most half
//    full, backward-shift deletion. At most one child of a node starts with a
//    given whole block, so each step down the tree is one hash of
//    TokensPerBlock tokens and one probe, however many children the node has
//    (a namespace root may have thousands, all sharing the tail of a system
//    prompt that does not end on a block boundary);
//  * the sorted child vector, used once per match where no whole block
//    continues: the child sharing the longest prefix with the query's next
//    partial block is a lexicographic neighbour of it, found by binary search.
// Comparing an edge is a memcmp over contiguous token ids. A 1,000-token
// prompt among 10,000 cached prefixes costs a few probes and ~4 KB of
// compares (bench/kv/radix_bench.cpp).
//
// ------------------------------------------------- locks, pins, eviction
// lock(node) / unlock(node) mark a path used by a running sequence and pin() /
// unpin() a prefix to keep (a system prompt); both count references on every
// node from the given one up to the namespace root, and a node with
// references is never evicted. Only leaves without references are evictable:
// they sit in an EvictionPolicy queue (core/eviction.hpp, intrusive hooks in
// the nodes), entering it when they become such leaves (inserted, last child
// evicted, last reference dropped) and touched when matched. A node is never
// removed from the middle of the tree. insert() evicts down to the block
// budget (with hysteresis<...> policies, from the start to the stop
// watermark); evict(n) frees blocks on demand (memory pressure). A split
// keeps the identity of the lower half, so node_refs (and the locks and pins
// they hold) stay valid across inserts.
//
// ------------------------------------------------------- thread-safety
// Not synchronized: one owner (the scheduler thread) calls the mutating
// members. const members (peek_prefix_len, stats, for_each_cached_prefix,
// check_invariants) touch no state and may run concurrently with each other
// while no mutating call runs. The BlockStore is called only from mutating
// members and match().
//
// ------------------------------------------------------------ allocation
// insert() allocates new nodes (and grows the child table); retire()
// allocates a scratch list; match(), peek_prefix_len(), lock/unlock,
// pin/unpin and evict() never allocate (the first insert into a new namespace
// allocates its root).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/eviction.hpp"

namespace ruvllm::kv {

/// A token id as the tokenizer produces it.
using token_id = std::uint32_t;

/// Components of a KV namespace, each its own type so they cannot be mixed up.
enum class model_id : std::uint64_t {};
/// adapter_id{0} is the base model without an adapter.
enum class adapter_id : std::uint64_t {};
/// Bumped whenever an adapter's weights change (a SONA update, a reload).
enum class adapter_version : std::uint64_t {};
/// Per-tenant salt; tenants that must not share cached prompts differ in it.
enum class tenant_salt : std::uint64_t {};

/// The first component of every radix-cache key: KV is reused only between
/// requests with equal namespaces.
struct kv_namespace {
  model_id model{};
  adapter_id adapter{};
  adapter_version version{};
  tenant_salt salt{};

  friend constexpr bool operator==(const kv_namespace&, const kv_namespace&) noexcept = default;
};

namespace detail {
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}
struct kv_namespace_hash {
  std::size_t operator()(const kv_namespace& n) const noexcept {
    std::uint64_t h = mix64(static_cast<std::uint64_t>(n.model));
    h = mix64(h ^ static_cast<std::uint64_t>(n.adapter));
    h = mix64(h ^ static_cast<std::uint64_t>(n.version));
    h = mix64(h ^ static_cast<std::uint64_t>(n.salt));
    return static_cast<std::size_t>(h);
  }
};
}  // namespace detail

/// A refcounted pool of KV blocks: allocate() returns a block with one
/// reference, retain/release add and drop one (release frees at zero),
/// copy_block(src, tokens) returns a new block (one reference) holding the
/// first `tokens` tokens of src. ruvllm::kv::block_allocator and
/// ruvllm::kv::tiered_kv_cache model it.
template <class S>
concept BlockStore = requires(S& s, const S& cs, std::uint32_t id, std::size_t n) {
  { s.allocate() } -> std::same_as<result<std::uint32_t>>;
  s.retain(id);
  s.release(id);
  { cs.ref_count(id) } -> std::convertible_to<std::uint32_t>;
  { cs.block_bytes() } -> std::convertible_to<std::size_t>;
  { cs.blocks_in_use() } -> std::convertible_to<std::size_t>;
  { cs.capacity_blocks() } -> std::convertible_to<std::size_t>;
  { s.copy_block(id, n) } -> std::same_as<result<std::uint32_t>>;
};

/// Counters of a radix_cache. lookups = full_hits + partial_hits + misses
/// (match() calls; peek_prefix_len is not counted); cached_tokens =
/// inserted_tokens - evicted_tokens - retired_tokens.
struct radix_stats {
  std::uint64_t lookups = 0;
  std::uint64_t full_hits = 0;     // the whole query was cached
  std::uint64_t partial_hits = 0;  // a non-empty proper prefix was cached
  std::uint64_t misses = 0;        // nothing (or an empty query)
  std::uint64_t matched_tokens = 0;
  std::uint64_t tail_copies = 0;         // partial last blocks copied for callers
  std::uint64_t tail_copy_failures = 0;  // copy_block failed: the match fell back to whole blocks
  std::uint64_t inserted_tokens = 0;     // tokens that became cached (new nodes)
  std::uint64_t evicted_tokens = 0;
  std::uint64_t evicted_blocks = 0;
  std::uint64_t retired_tokens = 0;  // dropped by retire()
  std::uint64_t cached_tokens = 0;   // now
  std::uint64_t cached_blocks = 0;   // now (references the cache holds)
  std::uint64_t cached_bytes = 0;    // cached_blocks * the store's block_bytes()
  std::uint64_t nodes = 0;           // tree nodes below the namespace roots
  std::uint64_t namespaces = 0;      // namespaces with cached nodes (retired ones included until drained)
  std::uint64_t references = 0;      // outstanding lock() + pin() references
};

/// Options of a radix_cache.
struct radix_cache_options {
  /// Most blocks the cache holds before insert() evicts (0: unlimited).
  std::size_t max_blocks = 0;
};

/// Radix prefix cache over token ids whose nodes own KV blocks (see the top
/// of ruvllm/kv/radix_cache.hpp for keys, layout and contracts).
///
/// Template parameters: Store, a BlockStore the cache holds by reference
/// (it must outlive the cache); TokensPerBlock, the tokens of one block
/// (>= 1, the store's); Policy, an EvictionPolicy ordering the evictable
/// leaves (lru, lfu, hysteresis<...>).
///
/// Thread-safety: one owner serializes mutating calls; const calls may run
/// concurrently with each other. Errors: ruvllm::result at the boundary
/// (sizes, unknown prefixes); hot calls are noexcept with preconditions
/// asserted in debug builds. Allocation: insert() and retire() only.
template <BlockStore Store, std::size_t TokensPerBlock, EvictionPolicy Policy = eviction::lru>
class radix_cache {
  static_assert(TokensPerBlock >= 1 && TokensPerBlock <= (std::size_t{1} << 16),
                "radix_cache: TokensPerBlock must be in [1, 65536]");

  struct ns_entry;
  struct node;

 public:
  using block_id = std::uint32_t;
  using store_type = Store;
  using policy_type = Policy;
  static constexpr std::size_t tokens_per_block = TokensPerBlock;

  /// A node of the tree, as returned by match(), insert() and pin(): what
  /// lock/unlock/unpin take. Valid while the node holds a reference (lock or
  /// pin) and otherwise until the next mutating call; an empty ref (a miss)
  /// is accepted and ignored by lock and unlock.
  class node_ref {
   public:
    node_ref() = default;
    [[nodiscard]] bool empty() const noexcept { return node_ == nullptr; }
    friend bool operator==(node_ref, node_ref) noexcept = default;

   private:
    friend class radix_cache;
    explicit node_ref(node* n) noexcept : node_(n) {}
    node* node_ = nullptr;
  };

  /// What match() found.
  struct match_result {
    std::size_t tokens = 0;         // prefix length served (blocks cover exactly these tokens)
    std::size_t shared_blocks = 0;  // whole blocks retained for the caller: out[0 .. shared_blocks)
    std::size_t blocks = 0;         // shared_blocks, + 1 when the partial last block was copied into out[shared_blocks]
    bool copied_tail = false;
    node_ref node;  // the deepest node matched (empty on a miss), for lock()
  };

  /// What insert() did.
  struct insert_result {
    std::size_t new_tokens = 0;  // tokens that were not cached before
    node_ref node;               // the node holding the last token (locked when asked)
  };

  /// A cache over `store` (not owned; must outlive the cache).
  explicit radix_cache(Store& store, radix_cache_options options = {}) : store_(&store), options_(options) {
    table_.resize(64);
  }
  radix_cache(const radix_cache&) = delete;
  radix_cache& operator=(const radix_cache&) = delete;
  ~radix_cache() { clear(); }

  /// Sets the block budget (0: unlimited); takes effect at the next insert or enforce_budget().
  void set_max_blocks(std::size_t max_blocks) noexcept { options_.max_blocks = max_blocks; }
  [[nodiscard]] std::size_t max_blocks() const noexcept { return options_.max_blocks; }

  /// The eviction queue (for hysteresis policies: set_watermarks).
  [[nodiscard]] typename Policy::template queue<node>& eviction_queue() noexcept { return queue_; }

  // -------------------------------------------------------------- lookups

  /// Length of the longest cached prefix of `tokens` under ns. No side
  /// effects (no stats, no recency), so schedulers may probe freely.
  [[nodiscard]] std::size_t peek_prefix_len(const kv_namespace& ns, std::span<const token_id> tokens) const noexcept {
    const ns_entry* e = find_ns(ns);
    if (e == nullptr) return 0;
    return walk(&e->root, tokens).matched;
  }

  /// Longest-prefix match: writes the blocks covering the matched prefix to
  /// out (whole blocks retained for the caller, the partial last block a
  /// private copy from copy_block; the caller releases all of them), touches
  /// the matched leaf in the eviction order and counts the lookup. If the copy
  /// fails (store full) the match falls back to the whole blocks.
  /// Precondition: out.size() >= ceil(tokens.size() / TokensPerBlock).
  [[nodiscard]] match_result match(const kv_namespace& ns, std::span<const token_id> tokens,
                                   std::span<block_id> out) noexcept {
    RUVLLM_ASSERT(out.size() >= (tokens.size() + TokensPerBlock - 1) / TokensPerBlock);
    ++stats_.lookups;
    match_result r;
    ns_entry* e = find_ns(ns);
    const walk_result w = e == nullptr ? walk_result{} : walk(&e->root, tokens);
    if (w.matched == 0) {
      ++stats_.misses;
      return r;
    }
    // Blocks of the path, deepest node first, each at its depth's index.
    const std::size_t need = (w.matched + TokensPerBlock - 1) / TokensPerBlock;
    for (node* n = w.last; n != &n->ns->root; n = n->parent) {
      const std::size_t first = n->depth / TokensPerBlock;
      const std::size_t count = std::min(n->block_count(), need - std::min(need, first));
      for (std::size_t i = 0; i < count; ++i) out[first + i] = n->blocks[i];
    }
    const std::size_t whole = w.matched / TokensPerBlock;
    for (std::size_t i = 0; i < whole; ++i) store_->retain(out[i]);
    r.tokens = whole * TokensPerBlock;
    r.shared_blocks = r.blocks = whole;
    if (const std::size_t tail = w.matched % TokensPerBlock; tail != 0) {
      result<std::uint32_t> copy = store_->copy_block(out[whole], tail);
      if (copy) {
        out[whole] = *copy;
        r.blocks = whole + 1;
        r.tokens = w.matched;
        r.copied_tail = true;
        ++stats_.tail_copies;
      } else {
        ++stats_.tail_copy_failures;
      }
    }
    if (r.tokens == 0) {
      ++stats_.misses;
      return r;
    }
    (r.tokens == tokens.size() ? stats_.full_hits : stats_.partial_hits) += 1;
    stats_.matched_tokens += r.tokens;
    r.node = node_ref(w.last);
    if (queue_.contains(*w.last)) queue_.touch(*w.last);
    return r;
  }

  // -------------------------------------------------------------- updates

  /// Caches `tokens` under ns with their KV in `blocks` (block i holds
  /// tokens [i * T, (i + 1) * T); the last may be partial). The cache retains
  /// the blocks of the tokens it did not hold yet; the caller keeps its own
  /// references. The budget is then enforced without evicting the sequence
  /// just inserted (so the cache may stay above it while everything else is
  /// referenced). With lock set, the node holding the last token is returned
  /// locked (unlock it later). Errors: fewer than
  /// ceil(tokens / T) blocks, or more than 2^32 - 1 tokens.
  [[nodiscard]] result<insert_result> insert(const kv_namespace& ns, std::span<const token_id> tokens,
                                             std::span<const block_id> blocks, bool lock = false) {
    const std::size_t need = (tokens.size() + TokensPerBlock - 1) / TokensPerBlock;
    if (blocks.size() < need)
      return make_error(errc::invalid_argument, "radix_cache::insert: ", blocks.size(), " blocks for ", tokens.size(),
                        " tokens, need ", need);
    if (tokens.size() > 0xFFFF'FFFFu)
      return make_error(errc::out_of_range, "radix_cache::insert: ", tokens.size(), " tokens exceed 2^32 - 1");
    insert_result r;
    if (tokens.empty()) return r;
    ns_entry* e = find_or_add_ns(ns);
    node* cur = &e->root;
    std::size_t pos = 0;
    const std::size_t n = tokens.size();
    node* last = nullptr;
    while (pos < n) {
      const std::size_t rem = n - pos;
      node* full = rem >= TokensPerBlock ? find_full(cur, tokens.data() + pos) : nullptr;
      if (full != nullptr) {
        const std::size_t limit = std::min<std::size_t>(full->n_tokens, rem);
        const std::size_t l =
            TokensPerBlock +
            common_prefix(full->tokens + TokensPerBlock, tokens.data() + pos + TokensPerBlock, limit - TokensPerBlock);
        if (l == full->n_tokens && full->n_tokens % TokensPerBlock == 0) {
          cur = full;
          pos += l;
          last = full;
          continue;
        }
        if (pos + l == n) {  // the rest of the sequence is a prefix of this edge: cached already
          last = full;
          break;
        }
        // Diverges inside the edge (or extends a partial leaf): split at the
        // block boundary before the divergence, branch a new leaf there.
        const std::size_t k = l / TokensPerBlock * TokensPerBlock;
        node* top = split(full, k);
        last = add_child(top, tokens, blocks, pos + k);
        r.new_tokens = n - (pos + k);
        break;
      }
      if (rem < TokensPerBlock) {  // a partial last block: cached if some child starts with it
        const partial_match pm = best_partial(cur, tokens.data() + pos, rem);
        if (pm.length == rem) {
          last = pm.child;
          break;
        }
      }
      last = add_child(cur, tokens, blocks, pos);
      r.new_tokens = n - pos;
      break;
    }
    RUVLLM_ASSERT(last != nullptr);
    if (queue_.contains(*last)) queue_.touch(*last);
    // The sequence just inserted is protected from its own budget check (it
    // is the most recent entry anyway), so the returned ref stays valid.
    add_ref(last);
    enforce_budget();
    if (!lock) drop_ref(last);
    r.node = node_ref(last);
    return r;
  }

  /// Marks the path ending at `n` as used by a running sequence: none of its
  /// nodes is evicted until the matching unlock(). An empty ref is ignored.
  void lock(node_ref n) noexcept {
    if (n.node_ != nullptr) add_ref(n.node_);
  }
  /// Drops one lock() of `n`; the path becomes evictable when no lock or pin remains.
  void unlock(node_ref n) noexcept {
    if (n.node_ != nullptr) drop_ref(n.node_);
  }

  /// Pins the cached prefix `tokens` of ns (e.g. a system prompt) so it is
  /// never evicted until unpin(); returns the ref to pass to unpin. Error
  /// not_found unless the whole prefix is cached.
  [[nodiscard]] result<node_ref> pin(const kv_namespace& ns, std::span<const token_id> tokens) {
    ns_entry* e = find_ns(ns);
    const walk_result w = e == nullptr || tokens.empty() ? walk_result{} : walk(&e->root, tokens);
    if (w.matched != tokens.size() || w.last == nullptr)
      return make_error(errc::not_found, "radix_cache::pin: only ", w.matched, " of the ", tokens.size(),
                        " prefix tokens are cached");
    add_ref(w.last);
    return node_ref(w.last);
  }
  /// Drops one pin() of `n`.
  void unpin(node_ref n) noexcept { unlock(n); }

  /// Evicts unreferenced leaves in policy order until at least `blocks`
  /// blocks were released or nothing is evictable; returns the blocks released.
  std::size_t evict(std::size_t blocks) noexcept {
    std::size_t freed = 0;
    while (freed < blocks) {
      node* victim = queue_.pick_victim();
      if (victim == nullptr) break;
      freed += victim->block_count();
      evict_leaf(victim);
    }
    return freed;
  }

  /// Evicts until the block budget holds (for hysteresis policies: while the
  /// policy's watermarks say so); insert() calls it.
  void enforce_budget() noexcept {
    if (options_.max_blocks == 0) return;
    if constexpr (requires(typename Policy::template queue<node> & q) {
                    q.should_evict(std::size_t{}, std::size_t{});
                  }) {
      while (queue_.should_evict(stats_.cached_blocks, options_.max_blocks)) {
        node* victim = queue_.pick_victim();
        if (victim == nullptr) break;
        evict_leaf(victim);
      }
    } else {
      while (stats_.cached_blocks > options_.max_blocks) {
        node* victim = queue_.pick_victim();
        if (victim == nullptr) break;
        evict_leaf(victim);
      }
    }
  }

  /// Drops everything cached under ns (e.g. an adapter version that was
  /// replaced): matches under ns miss from now on; unreferenced nodes are
  /// released now, locked or pinned paths when their last reference goes.
  /// Allocates a scratch list. A later insert under ns starts afresh.
  void retire(const kv_namespace& ns) {
    auto it = namespaces_.find(ns);
    if (it == namespaces_.end()) return;
    std::unique_ptr<ns_entry> owned = std::move(it->second);
    namespaces_.erase(it);
    ns_entry* e = owned.get();
    e->retired = true;
    retired_.push_back(std::move(owned));
    std::vector<node*> nodes;
    for_each_node([&](node* n) {
      if (n->ns == e) nodes.push_back(n);
    });
    std::sort(nodes.begin(), nodes.end(), [](const node* a, const node* b) { return a->depth > b->depth; });
    for (node* n : nodes)
      if (n->children.empty() && n->refs == 0) destroy(n, drop_reason::retired);
    maybe_drop_ns(e);
  }

  /// Releases every block and node (outstanding node_refs become invalid).
  void clear() noexcept {
    while (!queue_.empty()) queue_.erase(*queue_.pick_victim());
    std::vector<node*> nodes;
    nodes.reserve(stats_.nodes);
    for_each_node([&](node* n) { nodes.push_back(n); });
    for (node* n : nodes) {
      for (std::size_t i = 0; i < n->block_count(); ++i) store_->release(n->blocks[i]);
      delete n;
    }
    std::fill(table_.begin(), table_.end(), slot{});
    table_used_ = 0;
    for (auto& entry : namespaces_) entry.second->root.children.clear();
    namespaces_.clear();
    retired_.clear();
    stats_.cached_tokens = stats_.cached_blocks = stats_.cached_bytes = stats_.nodes = stats_.namespaces = 0;
    stats_.references = 0;
  }

  // -------------------------------------------------------- introspection

  /// The counters (see radix_stats).
  [[nodiscard]] const radix_stats& stats() const noexcept { return stats_; }

  /// Calls fn(std::span<const token_id>) with the token path of every leaf
  /// under ns (the maximal cached sequences). For diagnostics and tests:
  /// O(nodes + tokens) and it allocates.
  template <class Fn>
  void for_each_cached_prefix(const kv_namespace& ns, Fn&& fn) const {
    const ns_entry* e = find_ns(ns);
    if (e == nullptr) return;
    std::vector<token_id> path;
    for_each_node([&](const node* n) {
      if (n->ns != e || !n->children.empty()) return;
      path.assign(n->depth + n->n_tokens, 0);
      for (const node* p = n; p != &e->root; p = p->parent)
        std::copy(p->tokens, p->tokens + p->n_tokens, path.begin() + p->depth);
      fn(std::span<const token_id>(path));
    });
  }

  /// Recomputes every structural invariant (child counts, reference counts
  /// against lock/pin totals, eviction-queue membership of exactly the
  /// unreferenced leaves, block alignment, counters, the child table).
  /// O(nodes); for tests and debugging.
  [[nodiscard]] result<void> check_invariants() const {
    std::size_t nodes = 0, tokens = 0, blocks = 0, queued = 0, hashed = 0;
    std::unordered_map<const node*, bool> seen;
    bool ok = true;
    const char* what = "";
    const auto fail = [&](const char* w) {
      if (ok) what = w;
      ok = false;
    };
    const auto check_children = [&](const node* n) {
      std::uint64_t refs = 0;
      for (std::size_t i = 0; i < n->children.size(); ++i) {
        const node* c = n->children[i];
        if (c->parent != n) fail("a child's parent pointer differs");
        refs += c->refs;
        if (i > 0 && !key_less(n->children[i - 1], key_of(c))) fail("children are not sorted by first block");
      }
      if (n->refs != n->own_refs + refs && n != &n->ns->root) fail("refs differ from the subtree's");
    };
    std::uint64_t own = 0;
    for_each_node([&](const node* n) {
      ++nodes;
      seen[n] = true;
      tokens += n->n_tokens;
      blocks += n->block_count();
      own += n->own_refs;
      check_children(n);
      if (n->depth % TokensPerBlock != 0) fail("a node does not start on a block boundary");
      if (n->n_tokens == 0) fail("an empty edge");
      if (n->depth != n->parent->depth + n->parent->n_tokens) fail("depth differs from the parent's end");
      if (n->parent != &n->ns->root && n->parent->n_tokens % TokensPerBlock != 0)
        fail("an inner node ends inside a block");
      if (n->refs < n->own_refs) fail("refs below own refs");
      const bool evictable = n->children.empty() && n->refs == 0;
      if (queue_.contains(*n) != evictable) fail("eviction queue membership differs from evictability");
      if (queue_.contains(*n)) ++queued;
      if (n->ns->retired && n->refs == 0) fail("an unreferenced node survives in a retired namespace");
      if (n->n_tokens >= TokensPerBlock) {
        ++hashed;
        if (find_full(n->parent, n->tokens) != n) fail("a node is missing from the block table");
      }
    });
    for (const slot& sl : table_)
      if (sl.item != nullptr && !seen.count(sl.item)) fail("the block table holds a freed node");
    if (hashed != table_used_) fail("block table size differs");
    for (const auto& [ns_key, e] : namespaces_) {
      check_children(&e->root);
      if (e->retired || e->root.children.empty()) fail("a live namespace is retired or empty");
    }
    for (const auto& e : retired_) {
      check_children(&e->root);
      if (!e->retired || e->root.children.empty()) fail("a retired namespace is live or empty");
    }
    if (namespaces_.size() + retired_.size() != stats_.namespaces) fail("namespace counter differs");
    if (queued != queue_.size()) fail("eviction queue holds foreign nodes");
    if (nodes != stats_.nodes || tokens != stats_.cached_tokens || blocks != stats_.cached_blocks)
      fail("node/token/block counters differ from the tree");
    if (own != stats_.references) fail("reference counter differs from the tree");
    if (stats_.lookups != stats_.full_hits + stats_.partial_hits + stats_.misses) fail("lookup counters do not add up");
    if (stats_.inserted_tokens != stats_.cached_tokens + stats_.evicted_tokens + stats_.retired_tokens)
      fail("token counters do not add up");
    if (stats_.cached_bytes != stats_.cached_blocks * store_->block_bytes()) fail("byte counter differs");
    if (!ok) return make_error(errc::corrupt_data, "radix_cache invariant: ", what);
    return {};
  }

 private:
  enum class drop_reason { evicted, retired };

  struct node : Policy::hook {
    node* parent = nullptr;
    ns_entry* ns = nullptr;
    const token_id* tokens = nullptr;  // into storage
    block_id* blocks = nullptr;        // into storage
    std::uint32_t depth = 0;           // tokens above this edge (a multiple of TokensPerBlock)
    std::uint32_t n_tokens = 0;
    std::uint32_t refs = 0;       // locks and pins on this node and below
    std::uint32_t own_refs = 0;   // locks and pins on this node itself
    std::vector<node*> children;  // sorted by first block (key_of)
    std::unique_ptr<std::uint32_t[]> storage;

    [[nodiscard]] std::size_t block_count() const noexcept {
      // Blocks covering [depth, depth + n_tokens); depth is block-aligned.
      return (std::size_t{n_tokens} + TokensPerBlock - 1) / TokensPerBlock;
    }
  };

  struct ns_entry {
    kv_namespace key{};
    node root{};
    bool retired = false;
  };

  struct slot {
    std::uint64_t hash = 0;
    node* item = nullptr;  // nullptr: empty
  };

  struct walk_result {
    node* last = nullptr;
    std::size_t matched = 0;
  };

  struct partial_match {
    node* child = nullptr;
    std::size_t length = 0;
  };

  /// A child's sort key: its first min(T, n_tokens) tokens.
  struct block_key {
    const token_id* tokens;
    std::size_t size;
  };

  // ------------------------------------------------------------ helpers

  [[nodiscard]] static std::size_t common_prefix(const token_id* a, const token_id* b, std::size_t n) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
      if (std::memcmp(a + i, b + i, 8 * sizeof(token_id)) != 0) break;
    while (i < n && a[i] == b[i]) ++i;
    return i;
  }

  [[nodiscard]] static block_key key_of(const node* n) noexcept {
    return {n->tokens, std::min<std::size_t>(n->n_tokens, TokensPerBlock)};
  }

  /// Lexicographic order of first blocks (a proper prefix sorts first).
  [[nodiscard]] static bool key_less(const node* a, block_key b) noexcept {
    const block_key ka = key_of(a);
    const std::size_t n = std::min(ka.size, b.size);
    const std::size_t l = common_prefix(ka.tokens, b.tokens, n);
    return l < n ? ka.tokens[l] < b.tokens[l] : ka.size < b.size;
  }

  [[nodiscard]] static std::uint64_t block_hash(const node* parent, const token_id* t) noexcept {
    std::uint64_t h = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(parent)) * 0x9E3779B97F4A7C15ull;
    for (std::size_t i = 0; i < TokensPerBlock; ++i) h = (h ^ t[i]) * 0xFF51AFD7ED558CCDull;
    return detail::mix64(h);
  }

  [[nodiscard]] ns_entry* find_ns(const kv_namespace& ns) const noexcept {
    const auto it = namespaces_.find(ns);
    return it == namespaces_.end() ? nullptr : it->second.get();
  }

  ns_entry* find_or_add_ns(const kv_namespace& ns) {
    auto& slot_ref = namespaces_[ns];
    if (!slot_ref) {
      slot_ref = std::make_unique<ns_entry>();
      slot_ref->key = ns;
      slot_ref->root.ns = slot_ref.get();
      ++stats_.namespaces;
    }
    return slot_ref.get();
  }

  void maybe_drop_ns(ns_entry* e) noexcept {
    if (!e->root.children.empty()) return;
    --stats_.namespaces;
    if (e->retired) {
      const auto it = std::find_if(retired_.begin(), retired_.end(), [&](const auto& p) { return p.get() == e; });
      if (it != retired_.end()) retired_.erase(it);
    } else {
      namespaces_.erase(e->key);
    }
  }

  // The block table: children whose edge holds a whole first block, keyed by
  // (parent, that block). At most one child of a parent has a given first
  // block, so descending is one probe.

  /// The child of parent whose first TokensPerBlock tokens equal t[0 .. T).
  [[nodiscard]] node* find_full(const node* parent, const token_id* t) const noexcept {
    const std::uint64_t h = block_hash(parent, t);
    const std::size_t mask = table_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      const slot& sl = table_[i];
      if (sl.item == nullptr) return nullptr;
      if (sl.hash == h && sl.item->parent == parent &&
          std::memcmp(sl.item->tokens, t, TokensPerBlock * sizeof(token_id)) == 0)
        return sl.item;
    }
  }

  void grow_table() {
    std::vector<slot> old(table_.size() * 2);
    old.swap(table_);
    const std::size_t mask = table_.size() - 1;
    for (const slot& sl : old) {
      if (sl.item == nullptr) continue;
      std::size_t i = sl.hash & mask;
      while (table_[i].item != nullptr) i = (i + 1) & mask;
      table_[i] = sl;
    }
  }

  void table_insert(node* c) {
    if (c->n_tokens < TokensPerBlock) return;
    if ((table_used_ + 1) * 2 > table_.size()) grow_table();
    const std::uint64_t h = block_hash(c->parent, c->tokens);
    const std::size_t mask = table_.size() - 1;
    std::size_t i = h & mask;
    while (table_[i].item != nullptr) i = (i + 1) & mask;
    table_[i] = slot{h, c};
    ++table_used_;
  }

  [[nodiscard]] std::size_t table_find_slot(const node* c) const noexcept {
    const std::size_t mask = table_.size() - 1;
    std::size_t i = block_hash(c->parent, c->tokens) & mask;
    while (table_[i].item != c) i = (i + 1) & mask;
    return i;
  }

  void table_erase(node* c) noexcept {
    if (c->n_tokens < TokensPerBlock) return;
    const std::size_t mask = table_.size() - 1;
    std::size_t i = table_find_slot(c);
    // Backward-shift deletion keeps every probe sequence unbroken.
    for (std::size_t j = i;;) {
      j = (j + 1) & mask;
      if (table_[j].item == nullptr) break;
      const std::size_t home = table_[j].hash & mask;
      const bool between = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (!between) {
        table_[i] = table_[j];
        i = j;
      }
    }
    table_[i] = slot{};
    --table_used_;
  }

  // Sorted children: the longest partial match of a first block is with a
  // lexicographic neighbour of the query, so a binary search finds it.

  void children_insert(node* parent, node* c) {
    auto& v = parent->children;
    v.insert(std::lower_bound(v.begin(), v.end(), key_of(c), key_less), c);
  }

  void children_erase(node* parent, const node* c) noexcept {
    auto& v = parent->children;
    auto it = std::lower_bound(v.begin(), v.end(), key_of(c), key_less);
    while (*it != c) ++it;  // keys are unique; the loop only guards the assumption
    v.erase(it);
  }

  /// The child of parent sharing the most of q[0 .. n) (n <= T) with its first block.
  [[nodiscard]] static partial_match best_partial(const node* parent, const token_id* q, std::size_t n) noexcept {
    const auto& v = parent->children;
    const auto it = std::lower_bound(v.begin(), v.end(), block_key{q, n}, key_less);
    partial_match best;
    const auto consider = [&](node* c) {
      const block_key k = key_of(c);
      const std::size_t l = common_prefix(k.tokens, q, std::min(k.size, n));
      if (l > best.length) best = {c, l};
    };
    if (it != v.end()) consider(*it);
    if (it != v.begin()) consider(*(it - 1));
    return best;
  }

  /// Calls fn(node*) on every node below the namespace roots, parents before
  /// children (fn must not free nodes). Allocates a stack.
  template <class Fn>
  void for_each_node(Fn&& fn) const {
    std::vector<node*> stack;
    const auto push_children = [&](const node* n) {
      stack.insert(stack.end(), n->children.begin(), n->children.end());
    };
    for (const auto& [key_value, e] : namespaces_) push_children(&e->root);
    for (const auto& e : retired_) push_children(&e->root);
    while (!stack.empty()) {
      node* n = stack.back();
      stack.pop_back();
      push_children(n);
      fn(n);
    }
  }

  /// Longest cached prefix of tokens below root.
  [[nodiscard]] walk_result walk(const node* root, std::span<const token_id> tokens) const noexcept {
    walk_result w;
    const node* cur = root;
    std::size_t pos = 0;
    const std::size_t n = tokens.size();
    while (pos < n) {
      const std::size_t rem = n - pos;
      if (rem >= TokensPerBlock) {
        if (node* c = find_full(cur, tokens.data() + pos); c != nullptr) {
          const std::size_t l =
              TokensPerBlock + common_prefix(c->tokens + TokensPerBlock, tokens.data() + pos + TokensPerBlock,
                                             std::min<std::size_t>(c->n_tokens, rem) - TokensPerBlock);
          w.last = c;
          w.matched = pos + l;
          if (l != c->n_tokens || c->n_tokens % TokensPerBlock != 0) break;
          cur = c;
          pos += l;
          continue;
        }
      }
      // No child holds the next whole block: the best partial first block ends the match.
      const partial_match pm = best_partial(cur, tokens.data() + pos, std::min(rem, TokensPerBlock));
      if (pm.length > 0) {
        w.last = pm.child;
        w.matched = pos + pm.length;
      }
      break;
    }
    return w;
  }

  node* add_child(node* parent, std::span<const token_id> tokens, std::span<const block_id> blocks, std::size_t pos) {
    RUVLLM_ASSERT(pos % TokensPerBlock == 0);
    auto* c = new node;
    const std::size_t n = tokens.size() - pos;
    c->parent = parent;
    c->ns = parent->ns;
    c->depth = static_cast<std::uint32_t>(pos);
    c->n_tokens = static_cast<std::uint32_t>(n);
    const std::size_t nb = c->block_count();
    c->storage = std::make_unique<std::uint32_t[]>(n + nb);
    std::copy(tokens.begin() + static_cast<std::ptrdiff_t>(pos), tokens.end(), c->storage.get());
    c->tokens = c->storage.get();
    c->blocks = c->storage.get() + n;
    for (std::size_t i = 0; i < nb; ++i) {
      c->blocks[i] = blocks[pos / TokensPerBlock + i];
      store_->retain(c->blocks[i]);
    }
    if (parent != &parent->ns->root && queue_.contains(*parent)) queue_.erase(*parent);
    children_insert(parent, c);
    table_insert(c);
    queue_.insert(*c);
    stats_.inserted_tokens += n;
    stats_.cached_tokens += n;
    stats_.cached_blocks += nb;
    stats_.cached_bytes += nb * store_->block_bytes();
    ++stats_.nodes;
    return c;
  }

  /// Splits c after its first k tokens (TokensPerBlock <= k < n_tokens, k
  /// block-aligned): a new node takes the top part and c keeps its identity
  /// (and its references, children and queue position) as the bottom part.
  node* split(node* c, std::size_t k) {
    RUVLLM_ASSERT(k >= TokensPerBlock && k < c->n_tokens && k % TokensPerBlock == 0);
    auto* top = new node;
    const std::size_t kb = k / TokensPerBlock;
    top->storage = std::make_unique<std::uint32_t[]>(k + kb);
    std::copy(c->tokens, c->tokens + k, top->storage.get());
    std::copy(c->blocks, c->blocks + kb, top->storage.get() + k);
    top->tokens = top->storage.get();
    top->blocks = top->storage.get() + k;
    top->parent = c->parent;
    top->ns = c->ns;
    top->depth = c->depth;
    top->n_tokens = static_cast<std::uint32_t>(k);
    top->refs = c->refs;  // every reference below c passes through top
    // top has c's first block: it takes c's place in the parent's children
    // and in the block table.
    auto& siblings = c->parent->children;
    *std::find(siblings.begin(), siblings.end(), c) = top;
    table_[table_find_slot(c)].item = top;
    c->tokens += k;
    c->blocks += kb;
    c->depth += static_cast<std::uint32_t>(k);
    c->n_tokens -= static_cast<std::uint32_t>(k);
    c->parent = top;
    top->children.push_back(c);
    table_insert(c);
    ++stats_.nodes;
    return top;
  }

  void add_ref(node* n) noexcept {
    ++n->own_refs;
    ++stats_.references;
    for (node* p = n; p != &p->ns->root; p = p->parent) {
      if (p->refs++ == 0 && queue_.contains(*p)) queue_.erase(*p);
    }
  }

  void drop_ref(node* n) noexcept {
    RUVLLM_ASSERT(n->own_refs > 0);
    --n->own_refs;
    --stats_.references;
    ns_entry* e = n->ns;
    for (node* p = n; p != &e->root;) {
      node* parent = p->parent;
      RUVLLM_ASSERT(p->refs > 0);
      if (--p->refs == 0 && p->children.empty()) {
        if (e->retired) {
          destroy(p, drop_reason::retired);
        } else {
          queue_.insert(*p);
        }
      }
      p = parent;
    }
    if (e->retired) maybe_drop_ns(e);
  }

  void evict_leaf(node* n) noexcept {
    ns_entry* e = n->ns;
    destroy(n, drop_reason::evicted);
    maybe_drop_ns(e);
  }

  /// Releases a leaf's blocks and frees it; its parent may become an evictable leaf.
  void destroy(node* n, drop_reason why) noexcept {
    RUVLLM_ASSERT(n->children.empty() && n->refs == 0);
    if (queue_.contains(*n)) queue_.erase(*n);
    table_erase(n);
    node* parent = n->parent;
    children_erase(parent, n);
    const std::size_t nb = n->block_count();
    for (std::size_t i = 0; i < nb; ++i) store_->release(n->blocks[i]);
    if (why == drop_reason::evicted) {
      stats_.evicted_tokens += n->n_tokens;
      stats_.evicted_blocks += nb;
    } else {
      stats_.retired_tokens += n->n_tokens;
    }
    stats_.cached_tokens -= n->n_tokens;
    stats_.cached_blocks -= nb;
    stats_.cached_bytes -= nb * store_->block_bytes();
    --stats_.nodes;
    delete n;
    if (parent != &parent->ns->root && parent->children.empty() && parent->refs == 0 && !parent->ns->retired)
      queue_.insert(*parent);
  }

  Store* store_;
  radix_cache_options options_;
  std::vector<slot> table_;
  std::size_t table_used_ = 0;
  std::unordered_map<kv_namespace, std::unique_ptr<ns_entry>, detail::kv_namespace_hash> namespaces_;
  std::vector<std::unique_ptr<ns_entry>> retired_;
  typename Policy::template queue<node> queue_;
  radix_stats stats_;
};

}  // namespace ruvllm::kv

#endif  // RUVLLM_KV_RADIX_CACHE_HPP
