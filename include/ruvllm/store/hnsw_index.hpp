#ifndef RUVLLM_STORE_HNSW_INDEX_HPP
#define RUVLLM_STORE_HNSW_INDEX_HPP

// hnsw_index<Metric, Precision, Backend>: an approximate nearest-neighbour
// index (Hierarchical Navigable Small World graph, Malkov & Yashunin 2016)
// over fixed-dimension vectors with 64-bit keys; the vector memory of the
// store (policy memory, session index, witness log all search it).
//
// Memory layout, and why
//   * Level 0 holds every node, and a search spends nearly all its time
//     there, so each node's level-0 data is one fixed-size slot of a flat,
//     64-byte aligned array: [code (vector_space code bytes, padded to 4)]
//     [u32 links[M0]]. A list shorter than M0 ends at the first no_slot
//     (~0): no count word, so a 128-dimension f32 slot is exactly 640 bytes
//     (ten cache lines, every slot line-aligned, nothing straddles) and an
//     index is no bigger per vector than hnswlib's. Expanding a node reads
//     its links and, for each neighbour, that neighbour's code at the start
//     of its slot: one address computation (slot * slot_bytes), no pointer
//     chasing, and the arrays are exactly the sections of the on-disk file,
//     so a mapped file is searched in place (hnsw_format.hpp).
//   * Upper levels hold ~1/M of the nodes; their links live apart in one
//     flat u32 pool (M links per level, no_slot-padded). Only those nodes
//     have an entry in the sorted upper-slot table (slot, pool offset),
//     found by binary search: the greedy descent touches a few dozen nodes
//     per query, and a per-slot offset would cost every vector 8 bytes.
//   * Keys (u64), states (u8: live or tombstone) and levels (u8) are
//     parallel arrays by slot; key -> slot is a hash map in an owned index
//     and a binary search over the file's key-order section (live slots
//     sorted by key) in a read-only view.
//   * Optional originals (keep_originals) for re-ranking f16 and i8
//     indexes live in their own array, read only for the final top-ef: f32
//     (exact), or f16 (half_originals). An i8 index with f16 originals is
//     the compact fast configuration at high dimension: its graph search
//     reads a quarter of f32's bytes per distance, and its file is still
//     smaller than hnswlib's f32 one (768-d: ~2.4 KiB a vector against 3.2).
//   Links are u32 slot numbers; every link read is bounds-checked against the
//   slot count, and no list is read past its capacity M0 / M, so a corrupt
//   mapped file can mislead a search but never make it read out of bounds.
//
// Search loop: the visited set is an array of u16 epoch tags (one per slot,
// 2 bytes, so 100k slots stay in L2; cleared only when the epoch wraps every
// 65535 searches). Expanding a node first drops visited neighbours, then
// computes the distances of all fresh ones in one kernels dispatch
// (vector_space::distances -> ops::dot_gather, which prefetches each next
// code while it computes one), then updates the heaps; the links of the next
// candidate are prefetched before that.
//
// Deletion: remove() tombstones a node and repairs its neighbourhood: every
// neighbour that linked to it re-selects its links (heuristic) from its own
// links plus the removed node's, so the graph stays navigable. Tombstones
// stay traversable but are never returned; their slots are reused by later
// inserts, and when tombstones exceed options.compact_ratio of the slots the
// index rebuilds itself from the live nodes. A search keeps expanding until
// it holds ef accepted (live, filter-passing) results or runs out of
// candidates.
//
// Reachability (an invariant, tested after every step of seeded operation
// sequences at M = 4): every live node is reachable from the entry point
// along level-0 links. Single inserts, updates and removes keep it by
// checking each link a list drops with a bounded search from the list's
// owner and putting back any it cannot re-find; batches and compactions
// restore it at their end (see "graph algorithms" below). HNSW's pruning
// otherwise strands a node now and then, which no ef can find again.

// Filtered search: a predicate over keys (the records layer maps keys to
// attributes). The filter's selectivity is estimated from a fixed sample of
// slots first: a tight filter is answered by an exact scan of the accepted
// nodes (no recall collapse, and cheaper than a graph search wandering
// through rejected nodes while share^2 * live <= 17 ef), a moderate one by a
// graph search whose ef is widened by 1 / selectivity, falling back to the
// exact scan when the graph search still finds fewer than k.
//
// Concurrency contract: many readers or one writer, through a shared_mutex
// held by each call: search/contains/get_vector/size take it shared;
// insert/update/remove/insert_batch/compact take it exclusive. insert_batch
// additionally links nodes on several threads (thread_pool) with per-node
// striped locks; a node becomes reachable only through links added after
// its own links are complete, and becomes the entry point only after it is
// fully linked, so no stored node is ever unreachable and no reader ever sees
// a half-built node. A read-only view (hnsw_file.hpp) takes no locks on the
// search path beyond the shared lock.
//
// Allocation: inserts allocate when the arrays grow (amortized doubling);
// searches through a caller-owned hnsw_search_context allocate only when the
// context grows; the convenience search returning std::vector allocates the
// result. Errors: ruvllm::result for bad dimensions, duplicate or missing
// keys and mutations of read-only views; nothing throws.

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/core/mapped_file.hpp"
#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/store/file_io.hpp"
#include "ruvllm/store/hnsw_format.hpp"
#include "ruvllm/store/vector_space.hpp"

namespace ruvllm::store {

/// Construction parameters of an hnsw_index.
struct hnsw_options {
  /// Vector dimension (1 .. 65536).
  std::uint32_t dimension = 0;
  /// Links per node on upper levels (2 .. 128); level 0 allows 2 * m.
  std::uint32_t m = 16;
  /// Candidate list size while linking a new node (>= m).
  std::uint32_t ef_construction = 200;
  /// Default candidate list size of a search (raised to k when smaller).
  std::uint32_t ef_search = 64;
  /// Keep f32 copies of the vectors for exact re-ranking (f16 and i8 codes).
  bool keep_originals = false;
  /// With keep_originals: keep the copies as f16 (half their bytes). The
  /// re-ranking then measures distances to f16-rounded vectors (relative
  /// error ~1e-3 per component), which reorders only near-ties.
  bool half_originals = false;
  /// Rebuild from live nodes when tombstones exceed this share of slots (0: never).
  double compact_ratio = 0.5;
  /// Seed of the level generator (builds are reproducible).
  std::uint64_t seed = 0x5eed'1234;
};

/// Per-search parameters.
struct search_params {
  /// Candidate list size; 0 uses the index's ef_search.
  std::uint32_t ef = 0;
  /// Re-rank the candidates with the stored originals (when kept).
  bool rerank = true;
};

/// One result: the key and its distance (smaller is closer, see vector_space.hpp).
struct search_hit {
  std::uint64_t key = 0;
  float distance = 0.0f;
  friend bool operator==(const search_hit&, const search_hit&) = default;
};

/// The default filter: accepts every key and compiles away.
struct no_filter {
  constexpr bool operator()(std::uint64_t) const noexcept { return true; }
};

/// Counters of the last search through a context (for tests and tuning).
struct search_stats {
  std::uint64_t visited = 0;
  std::uint64_t distances = 0;
  bool exact_scan = false;
  std::uint32_t ef_used = 0;
};

/// Scratch memory of one searching thread: reuse one per thread to search
/// without allocating. Not thread-safe; independent of the index type.
class hnsw_search_context {
 public:
  hnsw_search_context() = default;
  /// Counters of the last search.
  [[nodiscard]] const search_stats& stats() const noexcept { return stats_; }

 private:
  template <Metric, VectorPrecision, Backend>
  friend class hnsw_index;
  using entry = std::pair<float, std::uint32_t>;

  void begin(std::size_t slots) {
    if (visited_.size() < slots) visited_.resize(slots, 0);
    if (++epoch_ == 0) {  // wrapped: old tags could alias the new epoch
      std::fill(visited_.begin(), visited_.end(), std::uint16_t{0});
      epoch_ = 1;
    }
    candidates_.clear();
    results_.clear();
  }
  bool visit(std::uint32_t slot) noexcept {
    if (visited_[slot] == epoch_) return false;
    visited_[slot] = epoch_;
    return true;
  }

  std::vector<std::uint16_t> visited_;
  std::uint16_t epoch_ = 0;
  std::vector<entry> candidates_;  // min-heap by distance
  std::vector<entry> results_;     // max-heap by distance
  std::vector<entry> scratch_;
  std::vector<entry> selected_;
  std::vector<entry> link_candidates_;  // add_link's buffers (the caller holds scratch_/selected_)
  std::vector<entry> link_kept_;
  std::vector<std::uint32_t> old_links_;  // replace_links0
  std::vector<std::uint32_t> bfs_;        // first_unreached()
  std::vector<std::uint32_t> dropped_;    // replace_links0
  std::vector<char> found_;               // first_unreached()
  std::vector<std::byte> query_code_;
  std::vector<std::byte> query_original_;    // the query as a code of the originals' space
  std::vector<const float*> rerank_rows_;    // finish(): f32 originals of the results
  std::vector<const f16*> rerank_rows_f16_;  // finish(): f16 originals of the results
  std::vector<float> rerank_distances_;
  search_stats stats_;
};

namespace detail {

inline constexpr std::uint32_t no_slot = ~std::uint32_t{0};
inline constexpr std::uint8_t slot_live = 1;
inline constexpr std::uint8_t slot_tombstone = 2;
inline constexpr std::uint32_t hnsw_max_level = 31;
inline constexpr std::uint32_t hnsw_max_m = 128;
inline constexpr std::uint32_t hnsw_max_dimension = 65536;
inline constexpr std::size_t hnsw_lock_stripes = 1024;

// Pointers the search path reads: into the owned arrays or into a mapping.
struct hnsw_sections {
  const std::byte* level0 = nullptr;
  const std::uint64_t* keys = nullptr;
  const std::uint8_t* states = nullptr;
  const std::uint8_t* levels = nullptr;
  const std::uint32_t* upper_slots = nullptr;    // slots with upper levels, ascending
  const std::uint64_t* upper_offsets = nullptr;  // per upper slot, in u32 units into upper
  std::uint64_t upper_count = 0;
  const std::uint32_t* upper = nullptr;
  std::uint64_t upper_size = 0;              // u32 elements
  const std::byte* originals = nullptr;      // codes of the originals' space, original_bytes each
  const std::uint32_t* key_order = nullptr;  // views: live slots sorted by key
  std::uint64_t key_order_count = 0;
  std::uint64_t count = 0;  // slots
};

// The level-0 array's allocator: slots start on cache lines when the slot
// size is a multiple of 64 (as it is for the common shapes), so a code is
// read with the fewest lines. Arrays of 2 MiB and more are 2 MiB-aligned and
// advised to use transparent huge pages: a search touches a few hundred
// random slots of a 64 MB array, and with 4 KiB pages nearly every one is a
// TLB miss. (Checked to take effect: AnonHugePages covers the array; its
// speed effect alone was not separated from the run-to-run noise here.)
template <class T>
struct cache_line_allocator {
  using value_type = T;
  static constexpr std::size_t huge_page = std::size_t{2} << 20;
  cache_line_allocator() noexcept = default;
  template <class U>
  cache_line_allocator(const cache_line_allocator<U>&) noexcept {}
  static constexpr std::align_val_t alignment_for(std::size_t bytes) noexcept {
    return std::align_val_t{bytes >= huge_page ? huge_page : 64};
  }
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    void* p = ::operator new(bytes, alignment_for(bytes));
#ifdef MADV_HUGEPAGE
    if (bytes >= huge_page) (void)::madvise(p, bytes / huge_page * huge_page, MADV_HUGEPAGE);
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept { ::operator delete(p, alignment_for(n * sizeof(T))); }
  friend bool operator==(const cache_line_allocator&, const cache_line_allocator&) noexcept { return true; }
};

// A shared mutex that lets a waiting writer in ahead of new readers: glibc's
// rwlock (behind std::shared_mutex) prefers readers, and a steady stream of
// searches would otherwise starve inserts indefinitely.
class writer_first_mutex {
 public:
  void lock() {
    writers_.fetch_add(1, std::memory_order_acq_rel);
    inner_.lock();
  }
  void unlock() {
    inner_.unlock();
    if (writers_.fetch_sub(1, std::memory_order_acq_rel) == 1) writers_.notify_all();
  }
  void lock_shared() {
    for (int w = writers_.load(std::memory_order_acquire); w > 0; w = writers_.load(std::memory_order_acquire))
      writers_.wait(w, std::memory_order_acquire);
    inner_.lock_shared();
  }
  void unlock_shared() { inner_.unlock_shared(); }

 private:
  std::shared_mutex inner_;
  std::atomic<int> writers_{0};
};

struct hnsw_locks {
  std::mutex entry;
  std::mutex stripes[hnsw_lock_stripes];
};

struct hnsw_context_pool {
  std::mutex mutex;
  std::vector<std::unique_ptr<hnsw_search_context>> free;
};

[[nodiscard]] constexpr std::size_t round_up(std::size_t n, std::size_t a) noexcept { return (n + a - 1) / a * a; }

}  // namespace detail

/// Approximate k-NN index over vectors with u64 keys; see the file comment
/// for layout, deletion, filtering and the concurrency contract.
/// Template parameters: M, a Metric tag (metric::cosine, l2, dot); P, a
/// VectorPrecision (precision::f32, precision::f16, store::i8); B, the kernel
/// Backend (default backend::highway).
template <Metric M, VectorPrecision P, Backend B = backend::highway>
class hnsw_index {
 public:
  using space = vector_space<M, P, B>;
  // The spaces of the originals (keep_originals, half_originals).
  using full_space = vector_space<M, precision::f32, B>;
  using half_space = vector_space<M, precision::f16, B>;
  using metric_type = M;
  using precision_type = P;

  /// An empty index. Errors: invalid_argument naming the parameter and its limit.
  /// Allocates the lock table and small bookkeeping.
  [[nodiscard]] static result<hnsw_index> create(const hnsw_options& options) {
    RUVLLM_TRY(validate(options));
    hnsw_index index;
    index.init_params(options);
    return index;
  }

  hnsw_index(hnsw_index&&) noexcept = default;
  hnsw_index& operator=(hnsw_index&&) noexcept = default;
  hnsw_index(const hnsw_index&) = delete;
  hnsw_index& operator=(const hnsw_index&) = delete;
  ~hnsw_index() = default;

  // ---- queries (shared lock) ----------------------------------------------

  /// Live vectors.
  [[nodiscard]] std::size_t size() const {
    std::shared_lock lock(*mutex_);
    return live_;
  }
  /// Slots in use, tombstones included.
  [[nodiscard]] std::size_t slot_count() const {
    std::shared_lock lock(*mutex_);
    return static_cast<std::size_t>(sec_.count);
  }
  /// Tombstoned slots awaiting reuse or compaction.
  [[nodiscard]] std::size_t tombstone_count() const {
    std::shared_lock lock(*mutex_);
    return static_cast<std::size_t>(sec_.count) - live_;
  }
  [[nodiscard]] std::uint32_t dimension() const noexcept { return dim_; }
  [[nodiscard]] const hnsw_options& options() const noexcept { return opts_; }
  /// True for an index opened read-only from a mapped file.
  [[nodiscard]] bool read_only() const noexcept { return read_only_; }

  /// Whether key is live: a hash lookup, or in a read-only view a binary
  /// search over the file's key-order section (O(log n), no allocation).
  [[nodiscard]] bool contains(std::uint64_t key) const {
    std::shared_lock lock(*mutex_);
    return find_slot(key) != detail::no_slot;
  }

  /// Copies the stored vector of key (decoded; normalized for cosine) into
  /// out (dimension floats). Errors: not_found, invalid_argument (size).
  [[nodiscard]] result<void> get_vector(std::uint64_t key, std::span<float> out) const {
    if (out.size() != dim_)
      return make_error(errc::invalid_argument, "output size ", out.size(), " != dimension ", dim_);
    std::shared_lock lock(*mutex_);
    const std::uint32_t s = find_slot(key);
    if (s == detail::no_slot) return make_error(errc::not_found, "key ", key, " is not in the index");
    decode_vector(s, out.data());
    return {};
  }

  /// The k nearest live vectors to query that pass filter(key), closest
  /// first, written to out[0 .. returned count) where k = out.size().
  /// Uses ctx as scratch (allocates only when ctx grows). filter is called
  /// under the shared lock with a key and must not call this index's mutators.
  /// Errors: invalid_argument when query.size() != dimension.
  template <class Filter = no_filter>
  [[nodiscard]] result<std::size_t> search(std::span<const float> query, std::span<search_hit> out,
                                           hnsw_search_context& ctx, search_params params = {},
                                           Filter&& filter = {}) const {
    if (query.size() != dim_)
      return make_error(errc::invalid_argument, "query dimension ", query.size(), " != index dimension ", dim_);
    std::shared_lock lock(*mutex_);
    return search_unlocked(query, out, ctx, params, filter);
  }

  /// Convenience form: returns up to k hits; allocates the result and takes
  /// a pooled context.
  template <class Filter = no_filter>
  [[nodiscard]] result<std::vector<search_hit>> search(std::span<const float> query, std::size_t k,
                                                       search_params params = {}, Filter&& filter = {}) const {
    std::vector<search_hit> hits(k);
    auto ctx = acquire_context();
    auto n = search(query, std::span<search_hit>(hits), *ctx, params, std::forward<Filter>(filter));
    release_context(std::move(ctx));
    if (!n) return std::move(n).error();
    hits.resize(*n);
    return hits;
  }

  /// Exact k-NN by scanning every live slot (the reference for recall, and
  /// the fallback of tight filters). Same contract as search().
  template <class Filter = no_filter>
  [[nodiscard]] result<std::size_t> exact_search(std::span<const float> query, std::span<search_hit> out,
                                                 hnsw_search_context& ctx, Filter&& filter = {}) const {
    if (query.size() != dim_)
      return make_error(errc::invalid_argument, "query dimension ", query.size(), " != index dimension ", dim_);
    std::shared_lock lock(*mutex_);
    prepare_query(query, ctx);
    ctx.stats_ = {};
    return exact_scan(out, ctx, filter, true);
  }

  // ---- mutations (exclusive lock) ------------------------------------------

  /// Adds key with vector v. Reuses a tombstoned slot when one is free.
  /// Errors: already_exists, invalid_argument (dimension, non-finite value),
  /// unsupported (read-only view), out_of_range (2^32 - 1 slots).
  [[nodiscard]] result<void> insert(std::uint64_t key, std::span<const float> v) {
    RUVLLM_TRY(check_vector(v));
    std::unique_lock lock(*mutex_);
    RUVLLM_TRY(check_writable());
    if (slot_of_.contains(key)) return make_error(errc::already_exists, "key ", key, " is already in the index");
    insert_locked(key, v.data());
    return {};
  }

  /// Replaces the vector of an existing key and relinks its node.
  /// Errors: not_found, invalid_argument, unsupported.
  [[nodiscard]] result<void> update(std::uint64_t key, std::span<const float> v) {
    RUVLLM_TRY(check_vector(v));
    std::unique_lock lock(*mutex_);
    RUVLLM_TRY(check_writable());
    auto it = slot_of_.find(key);
    if (it == slot_of_.end()) return make_error(errc::not_found, "key ", key, " is not in the index");
    const std::uint32_t s = it->second;
    repair_neighbours(s);
    write_vector(s, v.data());
    relink(s);
    return {};
  }

  /// Inserts key, or updates it when present.
  [[nodiscard]] result<void> upsert(std::uint64_t key, std::span<const float> v) {
    RUVLLM_TRY(check_vector(v));
    std::unique_lock lock(*mutex_);
    RUVLLM_TRY(check_writable());
    auto it = slot_of_.find(key);
    if (it == slot_of_.end()) {
      insert_locked(key, v.data());
    } else {
      repair_neighbours(it->second);
      write_vector(it->second, v.data());
      relink(it->second);
    }
    return {};
  }

  /// Tombstones key, repairs its neighbours' links, and compacts when the
  /// tombstone share passes options.compact_ratio. Errors: not_found, unsupported.
  [[nodiscard]] result<void> remove(std::uint64_t key) {
    std::unique_lock lock(*mutex_);
    RUVLLM_TRY(check_writable());
    auto it = slot_of_.find(key);
    if (it == slot_of_.end()) return make_error(errc::not_found, "key ", key, " is not in the index");
    const std::uint32_t s = it->second;
    slot_of_.erase(it);
    states_[s] = detail::slot_tombstone;
    --live_;
    repair_neighbours(s);
    free_slots_.push_back(s);
    if (opts_.compact_ratio > 0.0 && sec_.count >= 64 &&
        static_cast<double>(sec_.count - live_) > opts_.compact_ratio * static_cast<double>(sec_.count))
      compact_locked(nullptr);
    return {};
  }

  /// Inserts keys[i] with vectors[i * dimension ..] for every i, linking on
  /// the threads of pool (nullptr: the calling thread). Levels are drawn in
  /// order before linking, so a batch is reproducible in its level structure.
  /// Errors: as insert, checked for the whole batch before anything changes.
  [[nodiscard]] result<void> insert_batch(std::span<const std::uint64_t> keys, std::span<const float> vectors,
                                          thread_pool* pool = nullptr) {
    if (vectors.size() != keys.size() * std::size_t{dim_})
      return make_error(errc::invalid_argument, "batch of ", keys.size(), " keys needs ", keys.size() * dim_,
                        " floats, got ", vectors.size());
    for (std::size_t i = 0; i < keys.size(); ++i) RUVLLM_TRY(check_vector(vectors.subspan(i * dim_, dim_)));
    std::unique_lock lock(*mutex_);
    RUVLLM_TRY(check_writable());
    {
      std::unordered_map<std::uint64_t, int> seen;
      seen.reserve(keys.size());
      for (auto k : keys)
        if (slot_of_.contains(k) || !seen.emplace(k, 0).second)
          return make_error(errc::already_exists, "key ", k, " is already in the index or twice in the batch");
    }
    if (sec_.count + keys.size() >= detail::no_slot)
      return make_error(errc::out_of_range, "index would exceed ", detail::no_slot - 1, " slots");
    insert_batch_locked(keys, vectors.data(), pool);
    return {};
  }

  /// Rebuilds the graph from the live nodes (drops every tombstone), linking
  /// on pool's threads. Allocates a second copy of the index while it runs.
  [[nodiscard]] result<void> compact(thread_pool* pool = nullptr) {
    std::unique_lock lock(*mutex_);
    RUVLLM_TRY(check_writable());
    compact_locked(pool);
    return {};
  }

  /// Calls fn(key, span<const float> vector) for every live node in slot
  /// order (decoded vectors; originals when kept). Shared lock; allocates one
  /// vector of scratch.
  template <class Fn>
  void for_each(Fn&& fn) const {
    std::shared_lock lock(*mutex_);
    std::vector<float> v(dim_);
    for (std::uint64_t s = 0; s < sec_.count; ++s) {
      if (sec_.states[s] != detail::slot_live) continue;
      decode_vector(static_cast<std::uint32_t>(s), v.data());
      fn(sec_.keys[s], std::span<const float>(v));
    }
  }

  /// Checks the graph's structural invariants (link bounds, counts, no
  /// self-links, live count, key map); for tests and verify(). Shared lock.
  [[nodiscard]] result<void> check_invariants() const {
    std::shared_lock lock(*mutex_);
    return invariants_unlocked();
  }

  // ---- persistence (format in hnsw_format.hpp) ------------------------------

  /// The write-ahead-log sequence number stored with the index (0 when new):
  /// the last logged write already contained in it.
  [[nodiscard]] std::uint64_t sequence() const noexcept { return sequence_; }

  /// Writes the index to path atomically: path + ".tmp" is written, fsynced
  /// and renamed over path, and the directory fsynced, so a crash at any
  /// point leaves either the previous file or the new one. Shared lock (
  /// searches continue); allocates nothing beyond the path strings.
  /// Errors: io_error naming the file.
  [[nodiscard]] result<void> save(std::string_view path) const { return save(path, sequence_); }
  /// save() recording `sequence` as the last write-ahead-log record it holds.
  [[nodiscard]] result<void> save(std::string_view path, std::uint64_t sequence) const {
    std::shared_lock lock(*mutex_);
    return save_unlocked(path, sequence);
  }

  /// Maps path read-only and opens it in O(1): checks the header and the
  /// section table against the file length and this index type; the data
  /// stays in the page cache, nothing is copied or rebuilt. The view
  /// searches in place and refuses mutations (errc::unsupported). Errors:
  /// corrupt_data / unsupported naming the file and offset, io_error.
  [[nodiscard]] static result<hnsw_index> open_view(std::string_view path) {
    RUVLLM_TRY_ASSIGN(auto map, mapped_file::open(path));
    RUVLLM_TRY_ASSIGN(auto layout, read_hnsw_layout(map.bytes(), path));
    hnsw_index index;
    RUVLLM_TRY(index.adopt_layout(layout, map.bytes(), path));
    index.map_ = std::move(map);  // the mapping (and the pointers into it) moves intact
    index.read_only_ = true;
    return index;
  }

  /// Reads path into a writable index: every section checksum, the graph
  /// invariants and key uniqueness are verified first, so a corrupt file is
  /// an error, never a served graph. O(n); allocates the arrays.
  [[nodiscard]] static result<hnsw_index> load(std::string_view path) {
    RUVLLM_TRY_ASSIGN(auto map, mapped_file::open(path));
    RUVLLM_TRY_ASSIGN(auto layout, read_hnsw_layout(map.bytes(), path));
    RUVLLM_TRY(verify_hnsw_sections(map.bytes(), layout, path));
    hnsw_index index;
    RUVLLM_TRY(index.adopt_layout(layout, map.bytes(), path));
    RUVLLM_TRY(index.take_ownership(path, layout.find(hnsw_section::level0)->offset));
    return index;
  }

  /// Full check: section checksums (views: against the mapped file) and the
  /// graph invariants. O(n); shared lock.
  [[nodiscard]] result<void> verify() const {
    std::shared_lock lock(*mutex_);
    if (read_only_) {
      RUVLLM_TRY_ASSIGN(auto layout, read_hnsw_layout(map_.bytes(), map_.path()));
      RUVLLM_TRY(verify_hnsw_sections(map_.bytes(), layout, map_.path()));
    }
    auto inv = invariants_unlocked();
    if (!inv && read_only_) return std::move(inv).error().at(map_.path(), hnsw_file_header_bytes_);
    return inv;
  }

 protected:
  [[nodiscard]] result<void> invariants_unlocked() const {
    std::size_t live = 0;
    for (std::uint64_t s = 0; s < sec_.count; ++s) {
      const std::uint8_t st = sec_.states[s];
      if (st != detail::slot_live && st != detail::slot_tombstone)
        return make_error(errc::corrupt_data, "slot ", s, " has state ", st);
      live += st == detail::slot_live;
      const auto slot = static_cast<std::uint32_t>(s);
      if (sec_.levels[s] > detail::hnsw_max_level)
        return make_error(errc::corrupt_data, "slot ", s, " has level ", sec_.levels[s]);
      for (std::uint32_t l = 0; l <= sec_.levels[s]; ++l) {
        const std::uint32_t* links = links_at(slot, l);
        if (links == nullptr) return make_error(errc::corrupt_data, "slot ", s, " has no links at level ", l);
        const std::uint32_t cap = capacity_at(l), n = link_count(links, cap);
        for (std::uint32_t i = 0; i < n; ++i) {
          if (links[i] >= sec_.count || links[i] == slot)
            return make_error(errc::corrupt_data, "slot ", s, " links to ", links[i], " at level ", l);
          if (sec_.levels[links[i]] < l)
            return make_error(errc::corrupt_data, "slot ", s, " links to ", links[i], " below level ", l);
        }
        for (std::uint32_t i = n; i < cap; ++i)
          if (links[i] != detail::no_slot)
            return make_error(errc::corrupt_data, "slot ", s, " has link ", links[i], " after the end of its list");
      }
    }
    // The upper-slot table: ascending, exactly the slots above level 0, and
    // each one's lists inside the pool without overlapping the next one's.
    std::uint64_t upper_nodes = 0, pool_end = 0;
    for (std::uint64_t s = 0; s < sec_.count; ++s) upper_nodes += sec_.levels[s] > 0;
    if (upper_nodes != sec_.upper_count)
      return make_error(errc::corrupt_data, "upper table holds ", sec_.upper_count, " slots for ", upper_nodes,
                        " slots above level 0");
    for (std::uint64_t i = 0; i < sec_.upper_count; ++i) {
      const std::uint32_t s = sec_.upper_slots[i];
      if (s >= sec_.count || (i > 0 && s <= sec_.upper_slots[i - 1]) || sec_.levels[s] == 0)
        return make_error(errc::corrupt_data, "upper table entry ", i, " names slot ", s);
      const std::uint64_t off = sec_.upper_offsets[i], len = std::uint64_t{sec_.levels[s]} * m_;
      if (off < pool_end || off > sec_.upper_size || len > sec_.upper_size - off)
        return make_error(errc::corrupt_data, "upper lists of slot ", s, " at ", off, " overlap or leave the pool of ",
                          sec_.upper_size);
      pool_end = off + len;
    }
    if (sec_.key_order != nullptr) {
      if (sec_.key_order_count != live)
        return make_error(errc::corrupt_data, "key order holds ", sec_.key_order_count, " slots for ", live,
                          " live slots");
      for (std::uint64_t i = 0; i < sec_.key_order_count; ++i) {
        const std::uint32_t s = sec_.key_order[i];
        if (s >= sec_.count || sec_.states[s] != detail::slot_live ||
            (i > 0 && sec_.keys[s] <= sec_.keys[sec_.key_order[i - 1]]))
          return make_error(errc::corrupt_data, "key order entry ", i, " (slot ", s,
                            ") is not a live slot in ascending key order");
      }
    }
    if (live != live_) return make_error(errc::corrupt_data, "live count ", live_, " but ", live, " live slots");
    if (sec_.key_order == nullptr && slot_of_.size() != live_)
      return make_error(errc::corrupt_data, "key map holds ", slot_of_.size(), " keys for ", live_, " live slots");
    if (sec_.count > 0 && (entry_ >= sec_.count || sec_.levels[entry_] != static_cast<std::uint32_t>(max_level_)))
      return make_error(errc::corrupt_data, "entry point ", entry_, " is not a top-level slot");
    return {};
  }

  [[nodiscard]] result<void> save_unlocked(std::string_view path, std::uint64_t sequence) const {
    struct part {
      hnsw_section kind;
      const void* data;
      std::uint64_t bytes;
    };
    const std::uint64_t n = sec_.count;
    // The key order of a view is already in its file; an owned index sorts
    // its live slots by key here (allocates one u32 per live slot).
    std::vector<std::uint32_t> order;
    const std::uint32_t* key_order = sec_.key_order;
    if (key_order == nullptr) {
      order.reserve(live_);
      for (std::uint64_t s = 0; s < n; ++s)
        if (sec_.states[s] == detail::slot_live) order.push_back(static_cast<std::uint32_t>(s));
      std::sort(order.begin(), order.end(),
                [this](std::uint32_t a, std::uint32_t b) { return sec_.keys[a] < sec_.keys[b]; });
      key_order = order.data();
    }
    part parts[9] = {
        {hnsw_section::level0, sec_.level0, n * slot_bytes_},
        {hnsw_section::keys, sec_.keys, n * 8},
        {hnsw_section::states, sec_.states, n},
        {hnsw_section::levels, sec_.levels, n},
        {hnsw_section::upper_slots, sec_.upper_slots, sec_.upper_count * 4},
        {hnsw_section::upper_offsets, sec_.upper_offsets, sec_.upper_count * 8},
        {hnsw_section::upper_links, sec_.upper, sec_.upper_size * 4},
        {hnsw_section::key_order, key_order, std::uint64_t{live_} * 4},
        {hnsw_section::originals, sec_.originals, n * original_bytes_},
    };
    const std::uint32_t count = sec_.originals != nullptr ? 9 : 8;
    hnsw_file_header h{};
    h.magic = hnsw_magic;
    h.version = hnsw_format_version;
    h.header_bytes = sizeof h;
    h.dimension = dim_;
    h.metric = space::metric_id;
    h.precision = space::precision_id;
    h.flags = sec_.originals == nullptr ? 0 : opts_.half_originals ? 3 : 1;
    h.m = m_;
    h.m0 = m0_;
    h.ef_construction = opts_.ef_construction;
    h.ef_search = opts_.ef_search;
    h.slot_bytes = static_cast<std::uint32_t>(slot_bytes_);
    h.code_bytes = static_cast<std::uint32_t>(code_bytes_);
    h.slot_count = n;
    h.live_count = live_;
    h.entry = sec_.count == 0 ? detail::no_slot : entry_;
    h.max_level = sec_.count == 0 ? -1 : max_level_;
    h.sequence = sequence;
    h.section_count = count;
    h.seed = opts_.seed;
    h.upper_count = sec_.upper_count;
    hnsw_section_entry table[9]{};
    std::uint64_t at = detail::round_up(sizeof h + count * sizeof(hnsw_section_entry), hnsw_section_alignment);
    for (std::uint32_t i = 0; i < count; ++i) {
      const auto bytes = std::span<const std::byte>(static_cast<const std::byte*>(parts[i].data), parts[i].bytes);
      table[i] = hnsw_section_entry{static_cast<std::uint32_t>(parts[i].kind), crc32c(bytes), at, parts[i].bytes, 0};
      at = detail::round_up(at + parts[i].bytes, hnsw_section_alignment);
    }
    h.file_bytes = at;
    h.table_crc = crc32c(std::as_bytes(std::span<const hnsw_section_entry>(table, count)));
    h.header_crc =
        crc32c(std::as_bytes(std::span<const hnsw_file_header>(&h, 1)).first(offsetof(hnsw_file_header, header_crc)));

    const std::string tmp = std::string(path) + ".tmp";
    RUVLLM_TRY_ASSIGN(auto f, open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC));
    static constexpr std::byte zeros[hnsw_section_alignment] = {};
    std::uint64_t written = 0;
    const auto put = [&](const void* data, std::uint64_t bytes) -> result<void> {
      RUVLLM_TRY(write_all(f, std::span<const std::byte>(static_cast<const std::byte*>(data), bytes), tmp));
      written += bytes;
      return {};
    };
    const auto pad_to = [&](std::uint64_t offset) -> result<void> { return put(zeros, offset - written); };
    RUVLLM_TRY(put(&h, sizeof h));
    RUVLLM_TRY(put(table, count * sizeof(hnsw_section_entry)));
    for (std::uint32_t i = 0; i < count; ++i) {
      RUVLLM_TRY(pad_to(table[i].offset));
      if (parts[i].bytes > 0) RUVLLM_TRY(put(parts[i].data, parts[i].bytes));
    }
    RUVLLM_TRY(pad_to(h.file_bytes));
    RUVLLM_TRY(sync_file(f, tmp));
    f.close();
    return replace_file(tmp, path);
  }

  // Points this index at the sections of a checked layout (a view); the
  // header's parameters must match this index type.
  [[nodiscard]] result<void> adopt_layout(const hnsw_file_layout& layout, std::span<const std::byte> file,
                                          std::string_view path) {
    const auto& h = layout.header;
    const auto bad = [&](std::uint64_t offset, auto... parts) {
      return make_error(errc::corrupt_data, parts...).at(path, offset);
    };
    if (h.metric != space::metric_id || h.precision != space::precision_id)
      return make_error(errc::unsupported, "file holds metric ", h.metric, " precision ", h.precision,
                        ", this index type is metric ", space::metric_id, " precision ", space::precision_id)
          .at(path, 20);
    hnsw_options o{};
    o.dimension = h.dimension;
    o.m = h.m;
    o.ef_construction = h.ef_construction;
    o.ef_search = h.ef_search;
    o.keep_originals = (h.flags & 1u) != 0;
    o.half_originals = (h.flags & 2u) != 0;
    o.seed = h.seed;
    if (auto ok = validate(o); !ok) return bad(16, "header parameters: ", ok.error().message());
    if ((h.flags & ~3u) != 0) return bad(22, "unknown flags ", h.flags);
    init_params(o);
    if (h.m0 != m0_ || h.slot_bytes != slot_bytes_ || h.code_bytes != code_bytes_)
      return bad(28, "derived sizes m0 ", h.m0, " slot ", h.slot_bytes, " code ", h.code_bytes, " != expected ", m0_,
                 " ", slot_bytes_, " ", code_bytes_);
    const std::uint64_t n = h.slot_count;
    if (n >= detail::no_slot) return bad(48, "slot count ", n, " exceeds ", detail::no_slot - 1);
    if (h.live_count > n) return bad(56, "live count ", h.live_count, " exceeds slot count ", n);
    if (n == 0 ? (h.entry != detail::no_slot || h.max_level != -1)
               : (h.entry >= n || h.max_level < 0 || h.max_level > static_cast<std::int32_t>(detail::hnsw_max_level)))
      return bad(64, "entry ", h.entry, " / max level ", h.max_level, " invalid for ", n, " slots");
    const auto expect = [&](hnsw_section kind, std::uint64_t bytes) -> result<const std::byte*> {
      const hnsw_section_entry* e = layout.find(kind);
      if (e == nullptr)
        return make_error(errc::corrupt_data, "section ", static_cast<std::uint32_t>(kind), " is missing")
            .at(path, 128);
      if (e->bytes != bytes)
        return make_error(errc::corrupt_data, "section ", e->kind, " has ", e->bytes, " bytes, expected ", bytes)
            .at(path, e->offset);
      return file.data() + e->offset;
    };
    RUVLLM_TRY_ASSIGN(auto level0_bytes, checked_mul(n, slot_bytes_, "level-0 section size"));
    RUVLLM_TRY_ASSIGN(auto originals_bytes, checked_mul(n, std::uint64_t{original_bytes_}, "originals section size"));
    RUVLLM_TRY_ASSIGN(sec_.level0, expect(hnsw_section::level0, level0_bytes));
    RUVLLM_TRY_ASSIGN(auto keys, expect(hnsw_section::keys, n * 8));
    RUVLLM_TRY_ASSIGN(auto states, expect(hnsw_section::states, n));
    RUVLLM_TRY_ASSIGN(auto levels, expect(hnsw_section::levels, n));
    if (h.upper_count > n) return bad(104, "upper count ", h.upper_count, " exceeds slot count ", n);
    RUVLLM_TRY_ASSIGN(auto upper_slots, expect(hnsw_section::upper_slots, h.upper_count * 4));
    RUVLLM_TRY_ASSIGN(auto offsets, expect(hnsw_section::upper_offsets, h.upper_count * 8));
    RUVLLM_TRY_ASSIGN(auto key_order, expect(hnsw_section::key_order, h.live_count * 4));
    const hnsw_section_entry* up = layout.find(hnsw_section::upper_links);
    if (up == nullptr || up->bytes % 4 != 0)
      return make_error(errc::corrupt_data, "upper links section missing or not whole u32s").at(path, 128);
    sec_.keys = reinterpret_cast<const std::uint64_t*>(keys);
    sec_.states = reinterpret_cast<const std::uint8_t*>(states);
    sec_.levels = reinterpret_cast<const std::uint8_t*>(levels);
    sec_.upper_slots = reinterpret_cast<const std::uint32_t*>(upper_slots);
    sec_.upper_offsets = reinterpret_cast<const std::uint64_t*>(offsets);
    sec_.upper_count = h.upper_count;
    sec_.upper = reinterpret_cast<const std::uint32_t*>(file.data() + up->offset);
    sec_.upper_size = up->bytes / 4;
    sec_.key_order = reinterpret_cast<const std::uint32_t*>(key_order);
    sec_.key_order_count = h.live_count;
    sec_.originals = nullptr;
    if (o.keep_originals) {
      RUVLLM_TRY_ASSIGN(auto orig, expect(hnsw_section::originals, originals_bytes));
      sec_.originals = orig;
    } else if (layout.find(hnsw_section::originals) != nullptr) {
      return bad(22, "originals section present without its flag");
    }
    sec_.count = n;
    entry_ = n == 0 ? detail::no_slot : h.entry;
    max_level_ = n == 0 ? -1 : h.max_level;
    live_ = static_cast<std::size_t>(h.live_count);
    sequence_ = h.sequence;
    return {};
  }

  // Copies the adopted (checksum-verified) sections into owned arrays and
  // rebuilds the key map; any inconsistency is corrupt_data naming path.
  [[nodiscard]] result<void> take_ownership(std::string_view path, std::uint64_t level0_offset) {
    const std::uint64_t n = sec_.count;
    // The graph and the key order are checked in the mapping first.
    if (auto inv = invariants_unlocked(); !inv) return std::move(inv).error().at(path, level0_offset);
    level0_.assign(sec_.level0, sec_.level0 + n * slot_bytes_);
    keys_.assign(sec_.keys, sec_.keys + n);
    states_.assign(sec_.states, sec_.states + n);
    levels_.assign(sec_.levels, sec_.levels + n);
    upper_slots_.assign(sec_.upper_slots, sec_.upper_slots + sec_.upper_count);
    upper_offsets_.assign(sec_.upper_offsets, sec_.upper_offsets + sec_.upper_count);
    upper_.assign(sec_.upper, sec_.upper + sec_.upper_size);
    if (sec_.originals != nullptr) originals_.assign(sec_.originals, sec_.originals + n * original_bytes_);
    refresh_sections();  // an owned index keeps a hash map instead of the key order
    slot_of_.reserve(live_);
    for (std::uint64_t s = 0; s < n; ++s) {
      if (states_[s] == detail::slot_live) {
        if (!slot_of_.emplace(keys_[s], static_cast<std::uint32_t>(s)).second)
          return make_error(errc::corrupt_data, "key ", keys_[s], " is live in two slots").at(path, level0_offset);
      } else {
        free_slots_.push_back(static_cast<std::uint32_t>(s));
      }
    }
    return {};
  }

 public:
  /// Live nodes that no level-0 path from the entry point reaches (0 in a
  /// healthy graph); for tests and diagnostics. Shared lock; allocates.
  [[nodiscard]] std::size_t unreachable_count() const {
    std::shared_lock lock(*mutex_);
    if (sec_.count == 0 || entry_ >= sec_.count) return live_;
    std::vector<bool> seen(sec_.count, false);
    std::vector<std::uint32_t> stack{entry_};
    seen[entry_] = true;
    std::size_t reached = 0;
    while (!stack.empty()) {
      const std::uint32_t s = stack.back();
      stack.pop_back();
      reached += sec_.states[s] == detail::slot_live;
      const std::uint32_t* links = links_at(s, 0);
      for (std::uint32_t i = 0, n = link_count(links, m0_); i < n; ++i)
        if (links[i] < sec_.count && !seen[links[i]]) {
          seen[links[i]] = true;
          stack.push_back(links[i]);
        }
    }
    return live_ - reached;
  }

 protected:
  hnsw_index()
      : mutex_(std::make_unique<detail::writer_first_mutex>()),
        locks_(std::make_unique<detail::hnsw_locks>()),
        contexts_(std::make_unique<detail::hnsw_context_pool>()) {}

  [[nodiscard]] static result<void> validate(const hnsw_options& o) {
    if (o.dimension == 0 || o.dimension > detail::hnsw_max_dimension)
      return make_error(errc::invalid_argument, "dimension ", o.dimension, " is outside 1..",
                        detail::hnsw_max_dimension);
    if constexpr (std::same_as<P, i8>) {
      if (o.dimension > kernels::int8_dot_max_length)
        return make_error(errc::invalid_argument, "dimension ", o.dimension, " exceeds the int8 limit ",
                          kernels::int8_dot_max_length);
    }
    if (o.m < 2 || o.m > detail::hnsw_max_m)
      return make_error(errc::invalid_argument, "m ", o.m, " is outside 2..", detail::hnsw_max_m);
    if (o.ef_construction < o.m || o.ef_construction > 65536)
      return make_error(errc::invalid_argument, "ef_construction ", o.ef_construction, " is outside m..65536");
    if (o.ef_search == 0 || o.ef_search > 65536)
      return make_error(errc::invalid_argument, "ef_search ", o.ef_search, " is outside 1..65536");
    if (o.half_originals && !o.keep_originals)
      return make_error(errc::invalid_argument, "half_originals needs keep_originals");
    if (!(o.compact_ratio >= 0.0 && o.compact_ratio < 1.0))
      return make_error(errc::invalid_argument, "compact_ratio ", o.compact_ratio, " is outside [0, 1)");
    return {};
  }

  void init_params(const hnsw_options& o) {
    opts_ = o;
    dim_ = o.dimension;
    m_ = o.m;
    m0_ = 2 * o.m;
    code_bytes_ = space::code_bytes(dim_);
    links_offset_ = detail::round_up(code_bytes_, 4);
    slot_bytes_ = links_offset_ + 4 * std::size_t{m0_};
    original_bytes_ = !o.keep_originals  ? 0
                      : o.half_originals ? half_space::code_bytes(dim_)
                                         : full_space::code_bytes(dim_);
    level_mult_ = 1.0 / std::log(static_cast<double>(m_));
    rng_.seed(o.seed);
  }

  // ---- raw access ------------------------------------------------------------

  [[nodiscard]] const std::byte* code(std::uint32_t s) const noexcept {
    return sec_.level0 + std::size_t{s} * slot_bytes_;
  }

  // The stored vector of slot s as floats: its original when kept, else its
  // decoded code.
  void decode_vector(std::uint32_t s, float* out) const noexcept {
    if (sec_.originals == nullptr) return space::decode(code(s), dim_, out);
    const std::byte* o = sec_.originals + std::size_t{s} * original_bytes_;
    if (opts_.half_originals)
      half_space::decode(o, dim_, out);
    else
      full_space::decode(o, dim_, out);
  }
  [[nodiscard]] std::byte* mutable_code(std::uint32_t s) noexcept {
    return level0_.data() + std::size_t{s} * slot_bytes_;
  }

  // The link list of slot s at level l (capacity_at(l) u32s: the links,
  // then no_slot padding), or nullptr when the slot has no such level or its
  // upper entry is missing or points outside the pool (corrupt file).
  [[nodiscard]] const std::uint32_t* links_at(std::uint32_t s, std::uint32_t l) const noexcept {
    if (l == 0)
      return reinterpret_cast<const std::uint32_t*>(sec_.level0 + std::size_t{s} * slot_bytes_ + links_offset_);
    if (l > sec_.levels[s]) return nullptr;
    const std::uint64_t i = upper_index(s);
    if (i == sec_.upper_count) return nullptr;
    const std::uint64_t off = sec_.upper_offsets[i];
    if (off > sec_.upper_size || std::uint64_t{l} * m_ > sec_.upper_size - off) return nullptr;
    return sec_.upper + off + std::uint64_t{l - 1} * m_;
  }
  // The position of s in the upper-slot table, or upper_count.
  [[nodiscard]] std::uint64_t upper_index(std::uint32_t s) const noexcept {
    const std::uint32_t* first = sec_.upper_slots;
    const std::uint32_t* last = first + sec_.upper_count;
    const std::uint32_t* it = std::lower_bound(first, last, s);
    return it != last && *it == s ? static_cast<std::uint64_t>(it - first) : sec_.upper_count;
  }
  // Links in a list: those before the first no_slot.
  [[nodiscard]] static std::uint32_t link_count(const std::uint32_t* links, std::uint32_t cap) noexcept {
    std::uint32_t n = 0;
    while (n < cap && links[n] != detail::no_slot) ++n;
    return n;
  }
  [[nodiscard]] std::uint32_t* mutable_links(std::uint32_t s, std::uint32_t l) noexcept {
    return const_cast<std::uint32_t*>(links_at(s, l));
  }
  [[nodiscard]] std::uint32_t capacity_at(std::uint32_t l) const noexcept { return l == 0 ? m0_ : m_; }

  [[nodiscard]] std::uint32_t find_slot(std::uint64_t key) const {
    if (!read_only_) {
      auto it = slot_of_.find(key);
      return it == slot_of_.end() ? detail::no_slot : it->second;
    }
    // Every slot read from the key order is bounds-checked: a corrupt file
    // makes a lookup miss, never read outside the mapping.
    std::uint64_t lo = 0, hi = sec_.key_order_count;
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      const std::uint32_t s = sec_.key_order[mid];
      if (s >= sec_.count) return detail::no_slot;
      if (sec_.keys[s] < key)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == sec_.key_order_count) return detail::no_slot;
    const std::uint32_t s = sec_.key_order[lo];
    return s < sec_.count && sec_.keys[s] == key && sec_.states[s] == detail::slot_live ? s : detail::no_slot;
  }

  [[nodiscard]] result<void> check_vector(std::span<const float> v) const {
    if (v.size() != dim_)
      return make_error(errc::invalid_argument, "vector dimension ", v.size(), " != index dimension ", dim_);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i])) return make_error(errc::invalid_argument, "vector element ", i, " is not finite");
    return {};
  }
  [[nodiscard]] result<void> check_writable() const {
    if (read_only_) return make_error(errc::unsupported, "the index is a read-only view");
    return {};
  }

  void refresh_sections() noexcept {
    sec_.level0 = level0_.data();
    sec_.keys = keys_.data();
    sec_.states = states_.data();
    sec_.levels = levels_.data();
    sec_.upper_slots = upper_slots_.data();
    sec_.upper_offsets = upper_offsets_.data();
    sec_.upper_count = upper_slots_.size();
    sec_.upper = upper_.data();
    sec_.upper_size = upper_.size();
    sec_.key_order = nullptr;
    sec_.key_order_count = 0;
    sec_.originals = opts_.keep_originals ? originals_.data() : nullptr;
    sec_.count = keys_.size();
  }

  std::uint32_t random_level() {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double r = -std::log(1.0 - u(rng_)) * level_mult_;
    return static_cast<std::uint32_t>(std::min<double>(r, detail::hnsw_max_level));
  }

  // Appends a fresh slot with its level's link storage (empty lists).
  // Slots only ever append, so the upper-slot table stays sorted.
  std::uint32_t append_slot(std::uint64_t key, std::uint32_t level) {
    const auto s = static_cast<std::uint32_t>(keys_.size());
    level0_.resize(level0_.size() + slot_bytes_);
    std::memset(level0_.data() + std::size_t{s} * slot_bytes_ + links_offset_, 0xff, std::size_t{m0_} * 4);
    keys_.push_back(key);
    states_.push_back(detail::slot_live);
    levels_.push_back(static_cast<std::uint8_t>(level));
    if (level > 0) {
      upper_slots_.push_back(s);
      upper_offsets_.push_back(upper_.size());
      upper_.resize(upper_.size() + std::size_t{level} * m_, detail::no_slot);
    }
    originals_.resize(originals_.size() + original_bytes_);
    return s;
  }

  void write_vector(std::uint32_t s, const float* v) {
    space::encode(v, dim_, mutable_code(s));
    if (original_bytes_ == 0) return;
    std::byte* o = originals_.data() + std::size_t{s} * original_bytes_;
    if (opts_.half_originals)
      half_space::encode(v, dim_, o);
    else
      full_space::encode(v, dim_, o);
  }

  void insert_locked(std::uint64_t key, const float* v) {
    std::uint32_t s;
    if (!free_slots_.empty()) {
      // Reuse a tombstone: it keeps its level and storage; its neighbours
      // already dropped it when it was removed.
      s = free_slots_.back();
      free_slots_.pop_back();
      keys_[s] = key;
      states_[s] = detail::slot_live;
      refresh_sections();
      write_vector(s, v);
      slot_of_[key] = s;
      ++live_;
      relink(s);
      return;
    }
    s = append_slot(key, random_level());
    refresh_sections();
    write_vector(s, v);
    slot_of_[key] = s;
    ++live_;
    auto ctx = acquire_context();
    link_node<false>(*ctx, s);
    release_context(std::move(ctx));
  }

  // Recomputes the links of an existing slot after its vector changed.
  void relink(std::uint32_t s) {
    auto ctx = acquire_context();
    link_node<false>(*ctx, s);
    release_context(std::move(ctx));
  }

  void insert_batch_locked(std::span<const std::uint64_t> keys, const float* vectors, thread_pool* pool) {
    const std::size_t n = keys.size();
    if (n == 0) return;
    const std::size_t first = keys_.size();
    // Slots and levels are assigned before any linking, so no array grows
    // while the workers read them.
    std::vector<std::uint32_t> levels(n);
    std::size_t upper_total = 0, upper_nodes = 0;
    for (std::size_t i = 0; i < n; ++i) {
      levels[i] = random_level();
      upper_total += std::size_t{levels[i]} * m_;
      upper_nodes += levels[i] > 0;
    }
    level0_.reserve(level0_.size() + n * slot_bytes_);
    keys_.reserve(first + n);
    states_.reserve(first + n);
    levels_.reserve(first + n);
    upper_slots_.reserve(upper_slots_.size() + upper_nodes);
    upper_offsets_.reserve(upper_offsets_.size() + upper_nodes);
    upper_.reserve(upper_.size() + upper_total);
    originals_.reserve(originals_.size() + n * original_bytes_);
    for (std::size_t i = 0; i < n; ++i) append_slot(keys[i], levels[i]);
    refresh_sections();
    for (std::size_t i = 0; i < n; ++i) {
      const auto s = static_cast<std::uint32_t>(first + i);
      write_vector(s, vectors + i * dim_);
      slot_of_[keys[i]] = s;
    }
    live_ += n;
    // The first node of an empty index becomes the entry point before the
    // workers start, so none of them waits on an empty graph.
    std::size_t start = 0;
    if (entry_ == detail::no_slot) {
      auto ctx = acquire_context();
      link_node<false>(*ctx, static_cast<std::uint32_t>(first));
      release_context(std::move(ctx));
      start = 1;
    }
    // A batch links without the per-link reachability checks (with them a
    // one-thread 20k x 128 build took 1.6x hnswlib's time, without 0.7x)
    // and repairs reachability once at the end.
    const std::size_t todo = n - start;
    auto ctx = acquire_context();
    if (pool == nullptr || pool->size() == 1 || todo < 64) {
      batch_ = true;
      for (std::size_t i = start; i < n; ++i) link_node<false>(*ctx, static_cast<std::uint32_t>(first + i));
      batch_ = false;
    } else {
      std::vector<hnsw_search_context> contexts(pool->size());
      pool->run(todo, 16, [&](std::size_t begin, std::size_t end, std::size_t thread) {
        for (std::size_t i = begin; i < end; ++i)
          link_node<true>(contexts[thread], static_cast<std::uint32_t>(first + start + i));
      });
    }
    connect_unreachable(*ctx);
    release_context(std::move(ctx));
  }

  void compact_locked(thread_pool* pool) {
    std::vector<std::uint64_t> keys;
    std::vector<float> vectors;
    keys.reserve(live_);
    vectors.reserve(live_ * std::size_t{dim_});
    std::vector<float> v(dim_);
    for (std::uint64_t s = 0; s < sec_.count; ++s) {
      if (sec_.states[s] != detail::slot_live) continue;
      keys.push_back(sec_.keys[s]);
      decode_vector(static_cast<std::uint32_t>(s), v.data());
      vectors.insert(vectors.end(), v.begin(), v.end());
    }
    level0_.clear();
    keys_.clear();
    states_.clear();
    levels_.clear();
    upper_slots_.clear();
    upper_offsets_.clear();
    upper_.clear();
    originals_.clear();
    slot_of_.clear();
    free_slots_.clear();
    live_ = 0;
    entry_ = detail::no_slot;
    max_level_ = -1;
    level0_.shrink_to_fit();
    upper_.shrink_to_fit();
    refresh_sections();
    insert_batch_locked(keys, vectors.data(), pool);
  }

  // ---- graph algorithms ----------------------------------------------------
  //
  // Reachability. Every live node is reachable from the entry point along
  // level-0 links (through tombstones too, which stay traversable), and
  // every single-writer mutation keeps it so:
  //   * a list only drops a target after a bounded breadth-first search from
  //     the list's owner, over the lists as they will be, still finds that
  //     target; otherwise the target is put back in place of a newly added
  //     one (replace_links0). The owner stays reachable (a simple path to it
  //     uses none of its own links), so everything it reached stays reached;
  //   * a newly linked node gets an in-link from a node the search reached
  //     (ensure_in_link), forcing one in with the same check when every
  //     neighbour's heuristic pruned it;
  //   * a new entry point reaches the old one (force_link).
  // Batches skip these checks (in parallel they would need the whole graph
  // stable; on one thread they more than doubled the build time) and instead
  // finish with connect_unreachable(), which links every node a flood from
  // the entry point missed. Upper levels only guide the
  // descent and need no such rule.

  using entry_t = hnsw_search_context::entry;
  using element_t = typename space::element_type;
  static constexpr std::size_t max_links = 2 * detail::hnsw_max_m;
  static constexpr std::size_t refill_slack = 4;  // see select_neighbours

  // The links of s at level l and their count: in place, or, in a parallel
  // batch (Locked), copied to buf under s's stripe lock.
  template <bool Locked>
  const std::uint32_t* read_links(std::uint32_t s, std::uint32_t l, std::uint32_t* buf, std::uint32_t& n) const {
    const std::uint32_t* links = links_at(s, l);
    if (links == nullptr) {
      n = 0;
      return buf;
    }
    const std::uint32_t cap = capacity_at(l);
    if constexpr (Locked) {
      std::lock_guard g(locks_->stripes[s % detail::hnsw_lock_stripes]);
      std::memcpy(buf, links, cap * sizeof(std::uint32_t));
      n = link_count(buf, cap);
      return buf;
    } else {
      n = link_count(links, cap);
      return links;
    }
  }

  // Greedy descent at one upper level (ef = 1), one kernels call per node.
  template <bool Locked>
  void greedy(const std::byte* q, std::uint32_t& cur, float& dcur, std::uint32_t l, search_stats& st) const {
    std::uint32_t buf[max_links], ids[max_links];
    const element_t* rows[max_links] = {};  // zeroed: g++ cannot see that only filled rows are read
    float dist[max_links];
    for (bool changed = true; changed;) {
      changed = false;
      std::uint32_t n = 0;
      const std::uint32_t* links = read_links<Locked>(cur, l, buf, n);
      std::uint32_t fresh = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t c = links[i];
        if (c >= sec_.count) continue;
        ids[fresh] = c;
        rows[fresh++] = space::elements(code(c));
      }
      space::distances(q, rows, fresh, dim_, dist);
      st.distances += fresh;
      for (std::uint32_t j = 0; j < fresh; ++j) {
        if (dist[j] < dcur) {
          dcur = dist[j];
          cur = ids[j];
          changed = true;
        }
      }
    }
  }

  // Best-first search at level l from (ep, dep). Results (accepted nodes
  // only) land in ctx.results_ as a max-heap of at most ef entries.
  // Expanding a node: drop visited neighbours, one distances() call for the
  // rest, then the heaps (see the file comment).
  template <bool Locked, class Accept>
  void search_layer(hnsw_search_context& ctx, const std::byte* q, std::uint32_t ep, float dep, std::uint32_t l,
                    std::size_t ef, Accept&& accept) const {
    ctx.begin(static_cast<std::size_t>(sec_.count));
    auto& cand = ctx.candidates_;
    auto& res = ctx.results_;
    const auto closer_first = [](const entry_t& a, const entry_t& b) { return a.first > b.first; };
    ctx.visit(ep);
    ++ctx.stats_.visited;
    cand.emplace_back(dep, ep);
    float bound = std::numeric_limits<float>::infinity();
    if (accept(ep)) {
      res.emplace_back(dep, ep);
      if (res.size() >= ef) bound = dep;
    }
    std::uint32_t buf[max_links], ids[max_links];
    const element_t* rows[max_links] = {};  // zeroed: g++ cannot see that only filled rows are read
    float dist[max_links];
    while (!cand.empty()) {
      const auto [d, c] = cand.front();
      if (d > bound && res.size() >= ef) break;
      std::pop_heap(cand.begin(), cand.end(), closer_first);
      cand.pop_back();
      // The likely next node to expand: its links arrive while this one's
      // neighbours are measured.
      if (l == 0 && !cand.empty() && cand.front().second < sec_.count)
        __builtin_prefetch(links_at(cand.front().second, 0));
      std::uint32_t n = 0;
      const std::uint32_t* links = read_links<Locked>(c, l, buf, n);
      std::uint32_t fresh = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t x = links[i];
        if (x >= sec_.count || !ctx.visit(x)) continue;
        ids[fresh] = x;
        rows[fresh++] = space::elements(code(x));
      }
      if (fresh == 0) continue;
      ctx.stats_.visited += fresh;
      ctx.stats_.distances += fresh;
      space::distances(q, rows, fresh, dim_, dist);
      for (std::uint32_t j = 0; j < fresh; ++j) {
        const float dx = dist[j];
        if (res.size() < ef || dx < bound) {
          const std::uint32_t x = ids[j];
          // A node that enters the candidates is likely to be expanded: its
          // links (right after its code, which was just read) start loading.
          if (l == 0) __builtin_prefetch(links_at(x, 0));
          cand.emplace_back(dx, x);
          std::push_heap(cand.begin(), cand.end(), closer_first);
          if (accept(x)) {
            res.emplace_back(dx, x);
            std::push_heap(res.begin(), res.end());
            if (res.size() > ef) {
              std::pop_heap(res.begin(), res.end());
              res.pop_back();
            }
            if (res.size() >= ef) bound = res.front().first;
          }
        }
      }
    }
  }

  // HNSW neighbour selection heuristic: keep a candidate only when it is
  // closer to the base than to every neighbour already kept, which spreads
  // links over directions; sorted ascending on input. Free places are then
  // filled with the closest pruned candidates ("keep pruned connections"),
  // which gives a search more ways around a region: up to cap with
  // fill_pruned (a new node's own list, a repair after a removal), and up to
  // cap - refill_slack for the re-selection of a full list that gains a
  // back-link (add_link). A list refilled to cap is full again at once, so
  // every later back-link re-ran the heuristic over the whole list (2.3x the
  // heuristic's distances of a 768-d build); not refilling at all lost
  // recall at a given ef (100k x 128: 0.9866 at ef 64, against 0.9907).
  // Four free places keep that recall (0.9895) and most of the saving.
  // A candidate whose code equals a kept one's is pruned too: the distance
  // rule alone ties on copies of the base's own vector and keeps them all,
  // so among many equal vectors every list filled up with copies and a
  // search that entered them could not leave (recall of other vectors
  // collapsed). memcmp stops at the first differing byte, so the check costs
  // little where codes differ.
  // The kept ones are compared closest first, a few per kernels call, and
  // the first that prunes ends the candidate's comparisons (as hnswlib's
  // heuristic does): 0.7x the heuristic's distances of comparing each
  // candidate against all kept.
  void select_neighbours(std::vector<entry_t>& sorted, std::uint32_t cap, std::vector<entry_t>& out,
                         bool fill_pruned) const {
    constexpr std::size_t per_call = 4;
    out.clear();
    const element_t* kept[max_links] = {};
    float dist[per_call];
    std::size_t pruned = 0;
    for (std::size_t i = 0; i < sorted.size() && out.size() < cap; ++i) {
      const entry_t e = sorted[i];
      bool good = true;
      const std::byte* ce = code(e.second);
      for (std::size_t first = 0; good && first < out.size(); first += per_call) {
        const std::size_t count = std::min(per_call, out.size() - first);
        space::distances(ce, kept + first, count, dim_, dist);
        for (std::size_t k = 0; k < count; ++k)
          if (dist[k] < e.first || std::memcmp(ce, code(out[first + k].second), code_bytes_) == 0) {
            good = false;
            break;
          }
      }
      if (good) {
        kept[out.size()] = space::elements(code(e.second));
        out.push_back(e);
      } else {
        sorted[pruned++] = e;  // pruned ones compact to the front, in order
      }
    }
    const std::size_t fill_to = fill_pruned ? cap : cap - std::min<std::size_t>(cap, refill_slack);
    for (std::size_t i = 0; i < pruned && out.size() < fill_to; ++i) out.push_back(sorted[i]);
  }

  static void write_list(std::uint32_t* links, std::uint32_t cap, const std::vector<entry_t>& sel) noexcept {
    const std::size_t n = std::min<std::size_t>(sel.size(), cap);
    for (std::size_t i = 0; i < n; ++i) links[i] = sel[i].second;
    for (std::size_t i = n; i < cap; ++i) links[i] = detail::no_slot;
  }
  [[nodiscard]] static bool has_link(const std::uint32_t* links, std::uint32_t cap, std::uint32_t x) noexcept {
    for (std::uint32_t i = 0; i < cap && links[i] != detail::no_slot; ++i)
      if (links[i] == x) return true;
    return false;
  }

  // The first of `targets` (in their order) that a breadth-first search from
  // `from` along level-0 links, bounded to reach_budget expansions, does not
  // find; targets.size() when it finds them all. Not found may be a miss of
  // the bound (callers then keep a link, which is safe). One search serves
  // every target: a search per dropped link was a quarter of a 768-d build.
  static constexpr std::size_t reach_budget = 256;
  std::size_t first_unreached(hnsw_search_context& ctx, std::uint32_t from,
                              std::span<const std::uint32_t> targets) const {
    auto& found = ctx.found_;
    found.assign(targets.size(), 0);
    std::size_t left = targets.size();
    std::uint64_t filter = 0;  // one bit per target id mod 64: most ids skip the scan
    for (const std::uint32_t t : targets) filter |= std::uint64_t{1} << (t & 63);
    const auto see = [&](std::uint32_t y) {
      if (((filter >> (y & 63)) & 1) == 0) return;
      for (std::size_t k = 0; k < targets.size(); ++k)
        if (targets[k] == y && found[k] == 0) {
          found[k] = 1;
          --left;
        }
    };
    see(from);
    if (left != 0) {
      ctx.begin(static_cast<std::size_t>(sec_.count));
      auto& queue = ctx.bfs_;
      queue.clear();
      queue.push_back(from);
      ctx.visit(from);
      for (std::size_t head = 0; left != 0 && head < queue.size() && head < reach_budget; ++head) {
        const std::uint32_t* links = links_at(queue[head], 0);
        for (std::uint32_t i = 0, n = link_count(links, m0_); i < n; ++i) {
          const std::uint32_t y = links[i];
          see(y);
          if (y < sec_.count && ctx.visit(y)) queue.push_back(y);
        }
      }
    }
    for (std::size_t k = 0; k < targets.size(); ++k)
      if (found[k] == 0) return k;
    return targets.size();
  }
  bool reaches(hnsw_search_context& ctx, std::uint32_t from, std::uint32_t target) const {
    return first_unreached(ctx, from, std::span(&target, 1)) == 1;
  }

  // Sets owner's level-0 list to `chosen` without stranding anything: each
  // old target the new list drops must stay reachable from owner, or it goes
  // back in place of a target the new list added (there always is one, or a
  // free place: a list that only lost targets has room). After a put-back
  // every drop is checked again: the removed addition may have been another
  // drop's path.
  void replace_links0(hnsw_search_context& ctx, std::uint32_t owner, const std::vector<entry_t>& chosen) {
    std::uint32_t* links = mutable_links(owner, 0);
    auto& old = ctx.old_links_;
    old.assign(links, links + link_count(links, m0_));
    write_list(links, m0_, chosen);
    const auto in_old = [&](std::uint32_t y) { return std::find(old.begin(), old.end(), y) != old.end(); };
    auto& dropped = ctx.dropped_;
    for (;;) {
      dropped.clear();
      for (const std::uint32_t y : old)
        if (y != owner && !has_link(links, m0_, y)) dropped.push_back(y);
      const std::size_t k = first_unreached(ctx, owner, dropped);
      if (k == dropped.size()) return;
      const std::uint32_t n = link_count(links, m0_);
      if (n < m0_) {
        links[n] = dropped[k];
      } else {
        std::uint32_t i = n;
        while (i > 0 && in_old(links[i - 1])) --i;
        if (i == 0) return;  // unreachable: a full list of old targets dropped nothing
        links[i - 1] = dropped[k];
      }
    }
  }

  // Puts target into u's level-0 list: in a free place, or in place of one of
  // u's links z that stays reachable from u. Tried in order of cost, farthest
  // z first within each:
  //  1. z that target links to itself (u -> target -> z): no search;
  //  2. when target's list has room, any z, which target then links to (the
  //     same path, made): no search;
  //  3. z that a bounded search from u still finds (reaches).
  // The first two keep this O(M) where the search fails: among many equal
  // vectors (repeated queries in a witness log) every neighbour's heuristic
  // drops the newcomer, few paths exist, and failed searches made each
  // insert cost O(n). False only when all three fail.
  bool force_link(hnsw_search_context& ctx, std::uint32_t u, std::uint32_t target) {
    std::uint32_t* links = mutable_links(u, 0);
    const std::uint32_t n = link_count(links, m0_);
    if (has_link(links, m0_, target)) return true;
    if (n < m0_) {
      links[n] = target;
      return true;
    }
    const element_t* rows[max_links] = {};  // zeroed: g++ cannot see that only filled rows are read
    float dist[max_links];
    std::uint32_t order[max_links];
    for (std::uint32_t i = 0; i < n; ++i) {
      rows[i] = space::elements(code(links[i] < sec_.count ? links[i] : u));
      order[i] = i;
    }
    space::distances(code(u), rows, n, dim_, dist);
    std::sort(order, order + n, [&](std::uint32_t a, std::uint32_t b) { return dist[a] > dist[b]; });
    std::uint32_t* target_links = mutable_links(target, 0);
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t i = order[k];
      if (has_link(target_links, m0_, links[i])) {
        links[i] = target;
        return true;
      }
    }
    if (const std::uint32_t room = link_count(target_links, m0_); room < m0_) {
      const std::uint32_t i = order[0];
      target_links[room] = links[i];
      links[i] = target;
      return true;
    }
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t i = order[k], z = links[i];
      links[i] = target;
      if (reaches(ctx, u, z)) return true;
      links[i] = z;
    }
    return false;
  }

  // A freshly linked s needs an in-link from a reached node: usually one of
  // its neighbours kept the back-link; otherwise one is forced in.
  void ensure_in_link(hnsw_search_context& ctx, std::uint32_t s, const std::vector<entry_t>& candidates) {
    for (const auto& [d, u] : candidates)
      if (u != s && has_link(links_at(u, 0), m0_, s)) return;
    for (const auto& [d, u] : candidates)
      if (u != s && sec_.states[u] == detail::slot_live && force_link(ctx, u, s)) return;
  }

  template <bool Locked>
  void link_node(hnsw_search_context& ctx, std::uint32_t s) {
    const std::byte* q = code(s);
    const std::uint32_t level = sec_.levels[s];
    std::uint32_t ep;
    int top;
    {
      std::unique_lock g(locks_->entry, std::defer_lock);
      if constexpr (Locked) g.lock();
      if (entry_ == detail::no_slot) {
        entry_ = s;
        max_level_ = static_cast<int>(level);
        return;
      }
      ep = entry_;
      top = max_level_;
    }
    float dep = space::distance(q, code(ep), dim_);
    for (int l = top; l > static_cast<int>(level); --l)
      greedy<Locked>(q, ep, dep, static_cast<std::uint32_t>(l), ctx.stats_);
    const auto accept = [this, s](std::uint32_t x) { return x != s && sec_.states[x] == detail::slot_live; };
    for (int l = std::min(static_cast<int>(level), top); l >= 0; --l) {
      const auto ul = static_cast<std::uint32_t>(l);
      search_layer<Locked>(ctx, q, ep, dep, ul, opts_.ef_construction, accept);
      auto& found = ctx.scratch_;
      found.assign(ctx.results_.begin(), ctx.results_.end());
      std::sort(found.begin(), found.end());
      select_neighbours(found, m_, ctx.selected_, true);
      if constexpr (!Locked) {
        if (ul == 0 && !batch_)
          replace_links0(ctx, s, ctx.selected_);
        else
          write_list(mutable_links(s, ul), capacity_at(ul), ctx.selected_);
      } else {
        std::lock_guard g(locks_->stripes[s % detail::hnsw_lock_stripes]);
        write_list(mutable_links(s, ul), capacity_at(ul), ctx.selected_);
      }
      for (const auto& [d, x] : ctx.selected_) add_link<Locked>(ctx, x, s, ul, d);
      if constexpr (!Locked) {
        if (ul == 0 && !batch_) ensure_in_link(ctx, s, found);
      }
      if (!found.empty()) {
        ep = found.front().second;
        dep = found.front().first;
      }
    }
    if (static_cast<int>(level) > top) {
      std::unique_lock g(locks_->entry, std::defer_lock);
      if constexpr (Locked) g.lock();
      if (static_cast<int>(level) > max_level_) {
        if constexpr (!Locked) {
          if (!batch_ && entry_ != s && !reaches(ctx, s, entry_)) force_link(ctx, s, entry_);
        }
        entry_ = s;
        max_level_ = static_cast<int>(level);
      }
    }
  }

  // Adds the back-link base -> x at level l, re-selecting base's list with
  // the heuristic when it is full.
  template <bool Locked>
  void add_link(hnsw_search_context& ctx, std::uint32_t base, std::uint32_t x, std::uint32_t l, float dx) {
    std::unique_lock g(locks_->stripes[base % detail::hnsw_lock_stripes], std::defer_lock);
    if constexpr (Locked) g.lock();
    std::uint32_t* links = mutable_links(base, l);
    if (links == nullptr) return;
    const std::uint32_t cap = capacity_at(l);
    const std::uint32_t n = link_count(links, cap);
    for (std::uint32_t i = 0; i < n; ++i)
      if (links[i] == x) return;
    if (n < cap) {
      links[n] = x;
      return;
    }
    auto& cand = ctx.link_candidates_;
    cand.clear();
    const element_t* rows[max_links] = {};  // zeroed: g++ cannot see that only filled rows are read
    float dist[max_links];
    std::uint32_t valid = 0;
    for (std::uint32_t i = 0; i < n; ++i)
      if (links[i] < sec_.count) {
        rows[valid] = space::elements(code(links[i]));
        cand.emplace_back(0.0f, links[i]);
        ++valid;
      }
    space::distances(code(base), rows, valid, dim_, dist);
    for (std::uint32_t i = 0; i < valid; ++i) cand[i].first = dist[i];
    cand.emplace_back(dx, x);
    std::sort(cand.begin(), cand.end());
    select_neighbours(cand, cap, ctx.link_kept_, false);
    if constexpr (!Locked) {
      if (l == 0 && !batch_) {
        replace_links0(ctx, base, ctx.link_kept_);
        return;
      }
    }
    write_list(links, cap, ctx.link_kept_);
  }

  // Before slot s disappears (remove) or moves (update): every neighbour of
  // s that links back to it re-selects its links from its own plus s's
  // links, so paths through s survive (and s stays linked where a drop
  // would strand it). Exclusive lock held.
  void repair_neighbours(std::uint32_t s) {
    auto ctx = acquire_context();
    std::vector<std::uint32_t> mine;
    auto& cand = ctx->link_candidates_;
    auto& kept = ctx->link_kept_;
    for (std::uint32_t l = 0; l <= sec_.levels[s]; ++l) {
      const std::uint32_t* sl = links_at(s, l);
      if (sl == nullptr) continue;
      const std::uint32_t cap = capacity_at(l);
      mine.assign(sl, sl + link_count(sl, cap));
      for (const std::uint32_t nb : mine) {
        if (nb >= sec_.count || nb == s) continue;
        std::uint32_t* nl = mutable_links(nb, l);
        if (nl == nullptr || !has_link(nl, cap, s)) continue;
        const std::byte* b = code(nb);
        cand.clear();
        const auto consider = [&](std::uint32_t c) {
          if (c == s || c == nb || c >= sec_.count || sec_.states[c] != detail::slot_live) return;
          if (sec_.levels[c] < l) return;
          for (const auto& e : cand)
            if (e.second == c) return;
          cand.emplace_back(space::distance(b, code(c), dim_), c);
        };
        for (std::uint32_t i = 0, n = link_count(nl, cap); i < n; ++i) consider(nl[i]);
        for (const std::uint32_t c : mine) consider(c);
        std::sort(cand.begin(), cand.end());
        select_neighbours(cand, cap, kept, true);
        if (l == 0)
          replace_links0(*ctx, nb, kept);
        else
          write_list(nl, cap, kept);
      }
    }
    release_context(std::move(ctx));
  }

  // After a parallel batch: floods level 0 from the entry point and links
  // every live node it missed from the nearest nodes a search reaches
  // (force_link), flooding on from each one linked. Allocates a flag per slot.
  void connect_unreachable(hnsw_search_context& ctx) {
    if (entry_ == detail::no_slot) return;
    std::vector<char> seen(sec_.count, 0);
    std::vector<std::uint32_t> stack;
    const auto flood = [&](std::uint32_t from) {
      seen[from] = 1;
      stack.assign(1, from);
      while (!stack.empty()) {
        const std::uint32_t x = stack.back();
        stack.pop_back();
        const std::uint32_t* links = links_at(x, 0);
        for (std::uint32_t i = 0, n = link_count(links, m0_); i < n; ++i)
          if (links[i] < sec_.count && !seen[links[i]]) {
            seen[links[i]] = 1;
            stack.push_back(links[i]);
          }
      }
    };
    flood(entry_);
    for (std::uint64_t i = 0; i < sec_.count; ++i) {
      const auto s = static_cast<std::uint32_t>(i);
      if (seen[s] || sec_.states[s] != detail::slot_live) continue;
      const std::byte* q = code(s);
      std::uint32_t ep = entry_;
      float dep = space::distance(q, code(ep), dim_);
      for (int l = max_level_; l > 0; --l) greedy<false>(q, ep, dep, static_cast<std::uint32_t>(l), ctx.stats_);
      search_layer<false>(ctx, q, ep, dep, 0, opts_.ef_construction,
                          [&](std::uint32_t x) { return x != s && seen[x] && sec_.states[x] == detail::slot_live; });
      auto& found = ctx.scratch_;
      found.assign(ctx.results_.begin(), ctx.results_.end());
      std::sort(found.begin(), found.end());
      for (const auto& [d, u] : found)
        if (force_link(ctx, u, s)) {
          flood(s);
          break;
        }
    }
  }

  // ---- search ----------------------------------------------------------------

  void prepare_query(std::span<const float> query, hnsw_search_context& ctx) const {
    ctx.query_code_.resize(code_bytes_);
    space::encode(query.data(), dim_, ctx.query_code_.data());
    if (sec_.originals != nullptr) {
      ctx.query_original_.resize(original_bytes_);
      if (opts_.half_originals)
        half_space::encode(query.data(), dim_, ctx.query_original_.data());
      else
        full_space::encode(query.data(), dim_, ctx.query_original_.data());
    }
  }

  template <class Filter>
  result<std::size_t> search_unlocked(std::span<const float> query, std::span<search_hit> out, hnsw_search_context& ctx,
                                      search_params params, Filter& filter) const {
    ctx.stats_ = {};
    const std::size_t k = out.size();
    if (k == 0 || live_ == 0 || entry_ == detail::no_slot || entry_ >= sec_.count) return std::size_t{0};
    prepare_query(query, ctx);
    std::size_t ef = std::max<std::size_t>(params.ef != 0 ? params.ef : opts_.ef_search, k);
    if constexpr (!std::is_same_v<std::remove_cvref_t<Filter>, no_filter>) {
      // Estimate the filter's selectivity on a fixed stride of slots.
      const std::size_t samples = std::min<std::size_t>(128, static_cast<std::size_t>(sec_.count));
      std::size_t live_seen = 0, passed = 0;
      for (std::size_t i = 0; i < samples; ++i) {
        const std::uint64_t s = i * sec_.count / samples;
        if (sec_.states[s] != detail::slot_live) continue;
        ++live_seen;
        passed += filter(sec_.keys[s]) ? 1 : 0;
      }
      const double p = live_seen == 0 ? 0.0 : static_cast<double>(passed) / static_cast<double>(live_seen);
      const double expected = p * static_cast<double>(live_);
      // The exact scan computes p * n distances; the widened graph search
      // about graph_cost * ef / p (ef / p candidates, each expanding
      // neighbours of which most are rejected). So the scan is cheaper while
      // p^2 * n <= graph_cost * ef: at 10k policies and ef 64 that is a
      // share below about 1/3 (measured with roles_bench's policy search,
      // break-even near p^2 * n = 17 * ef), and any filter leaving at most
      // max(4 ef, 1024) nodes.
      constexpr double graph_cost = 17.0;
      if (passed < 8 || expected <= static_cast<double>(std::max<std::size_t>(4 * ef, 1024)) ||
          p * expected <= graph_cost * static_cast<double>(ef))
        return exact_scan(out, ctx, filter, params.rerank);
      ef = std::min<std::size_t>(static_cast<std::size_t>(static_cast<double>(ef) / p) + 1, live_);
    }
    ctx.stats_.ef_used = static_cast<std::uint32_t>(ef);
    const std::byte* q = ctx.query_code_.data();
    std::uint32_t ep = entry_;
    float dep = space::distance(q, code(ep), dim_);
    for (int l = max_level_; l > 0; --l) greedy<false>(q, ep, dep, static_cast<std::uint32_t>(l), ctx.stats_);
    const auto accept = [this, &filter](std::uint32_t x) {
      return sec_.states[x] == detail::slot_live && filter(sec_.keys[x]);
    };
    search_layer<false>(ctx, q, ep, dep, 0, ef, accept);
    if constexpr (!std::is_same_v<std::remove_cvref_t<Filter>, no_filter>) {
      if (ctx.results_.size() < std::min<std::size_t>(k, live_)) return exact_scan(out, ctx, filter, params.rerank);
    }
    return finish(out, ctx, params.rerank);
  }

  template <class Filter>
  std::size_t exact_scan(std::span<search_hit> out, hnsw_search_context& ctx, Filter& filter, bool rerank) const {
    ctx.stats_.exact_scan = true;
    auto& res = ctx.results_;
    res.clear();
    const std::size_t keep =
        sec_.originals != nullptr && rerank ? std::max<std::size_t>(out.size() * 4, 64) : out.size();
    const std::byte* q = ctx.query_code_.data();
    for (std::uint64_t s = 0; s < sec_.count; ++s) {
      if (sec_.states[s] != detail::slot_live || !filter(sec_.keys[s])) continue;
      const float d = space::distance(q, code(static_cast<std::uint32_t>(s)), dim_);
      ++ctx.stats_.distances;
      if (res.size() < keep || d < res.front().first) {
        res.emplace_back(d, static_cast<std::uint32_t>(s));
        std::push_heap(res.begin(), res.end());
        if (res.size() > keep) {
          std::pop_heap(res.begin(), res.end());
          res.pop_back();
        }
      }
    }
    return finish(out, ctx, rerank);
  }

  // The distances of ctx.results_ replaced by the ones to their originals
  // (codes of Space), one kernels gather for all.
  template <class Space>
  void rerank_with(hnsw_search_context& ctx, std::vector<const typename Space::element_type*>& rows) const {
    auto& res = ctx.results_;
    auto& dist = ctx.rerank_distances_;
    rows.resize(res.size());
    dist.resize(res.size());
    for (std::size_t i = 0; i < res.size(); ++i)
      rows[i] = Space::elements(sec_.originals + std::size_t{res[i].second} * original_bytes_);
    Space::distances(ctx.query_original_.data(), rows.data(), rows.size(), dim_, dist.data());
    for (std::size_t i = 0; i < res.size(); ++i) res[i].first = dist[i];
  }

  std::size_t finish(std::span<search_hit> out, hnsw_search_context& ctx, bool rerank) const {
    auto& res = ctx.results_;
    if (rerank && sec_.originals != nullptr && !res.empty()) {
      if (opts_.half_originals)
        rerank_with<half_space>(ctx, ctx.rerank_rows_f16_);
      else
        rerank_with<full_space>(ctx, ctx.rerank_rows_);
    }
    std::sort(res.begin(), res.end());
    const std::size_t n = std::min(out.size(), res.size());
    for (std::size_t i = 0; i < n; ++i) out[i] = search_hit{sec_.keys[res[i].second], res[i].first};
    return n;
  }

  std::unique_ptr<hnsw_search_context> acquire_context() const {
    {
      std::lock_guard g(contexts_->mutex);
      if (!contexts_->free.empty()) {
        auto c = std::move(contexts_->free.back());
        contexts_->free.pop_back();
        return c;
      }
    }
    return std::make_unique<hnsw_search_context>();
  }
  void release_context(std::unique_ptr<hnsw_search_context> c) const {
    std::lock_guard g(contexts_->mutex);
    if (contexts_->free.size() < 16) contexts_->free.push_back(std::move(c));
  }

  // Parameters.
  hnsw_options opts_{};
  std::uint32_t dim_ = 0;
  std::uint32_t m_ = 0;
  std::uint32_t m0_ = 0;
  std::size_t code_bytes_ = 0;
  std::size_t original_bytes_ = 0;  // per slot: 0 without originals
  std::size_t links_offset_ = 0;
  std::size_t slot_bytes_ = 0;
  double level_mult_ = 0.0;
  std::mt19937_64 rng_;

  // Graph state.
  std::uint32_t entry_ = detail::no_slot;
  int max_level_ = -1;
  std::uint64_t sequence_ = 0;
  static constexpr std::uint64_t hnsw_file_header_bytes_ = sizeof(hnsw_file_header);
  std::size_t live_ = 0;
  bool read_only_ = false;
  bool batch_ = false;  // linking a batch: reachability is repaired at its end
  detail::hnsw_sections sec_{};

  // Owned storage (empty for a read-only view).
  std::vector<std::byte, detail::cache_line_allocator<std::byte>> level0_;
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint8_t> states_;
  std::vector<std::uint8_t> levels_;
  std::vector<std::uint32_t> upper_slots_;
  std::vector<std::uint64_t> upper_offsets_;
  std::vector<std::uint32_t> upper_;
  std::vector<std::byte, detail::cache_line_allocator<std::byte>> originals_;
  std::unordered_map<std::uint64_t, std::uint32_t> slot_of_;
  std::vector<std::uint32_t> free_slots_;
  mapped_file map_;  // the mapping of a read-only view

  std::unique_ptr<detail::writer_first_mutex> mutex_;
  std::unique_ptr<detail::hnsw_locks> locks_;
  std::unique_ptr<detail::hnsw_context_pool> contexts_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_HNSW_INDEX_HPP
