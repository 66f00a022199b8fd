#ifndef RUVLLM_STORE_MEMORY_STORE_HPP
#define RUVLLM_STORE_MEMORY_STORE_HPP

// memory_store<Metric, Precision>: the one durable store behind the three
// roles (policy_store.hpp, session_index.hpp, witness_log.hpp): records with
// attributes and typed weighted edges (record_graph) plus embeddings in
// several vector spaces (one hnsw_index per space: policy embeddings,
// session contexts, witness queries, witness responses), all in one
// directory:
//
//   store.manifest   written once at creation: the spaces (dimension, metric,
//                    precision, M, ef) and the indexed attribute
//   store.wal        the write-ahead log (wal.hpp) of every mutation
//   records.snap     the records checkpoint (records.hpp)
//   space<i>.hnsw    the checkpoint of space i (hnsw_format.hpp)
//
// Every mutation is a batch (memory_batch) of operations: insert a record
// with its embeddings, replace a record's fields (and upsert embeddings),
// remove a record (its edges and embeddings go with it), link, re-weight
// (absolute, additive or multiplicative) and unlink edges. commit() checks
// the whole batch against the current state first (ids, kinds, dimensions,
// finite values, edge endpoints; later operations see earlier ones), then
// appends it to the log as ONE record (durable before commit returns under
// durability::every_write), then applies it in memory. A rejected batch
// changes nothing, in memory or on disk; a batch torn by a crash is cut off
// on reopening as a whole, so recovery never applies half a batch. Relative
// weight updates are logged as the absolute weights they produced, so replay
// is exact.
//
// Checkpoints: checkpoint() saves records.snap and every space<i>.hnsw
// (each: temporary file, fsync, rename) stamped with the log sequence they
// hold, then starts an empty log. Opening loads each checkpoint and replays
// the log records after that part's own sequence, so a crash between two
// saves is harmless. The store checkpoints by itself when the log passes
// options.checkpoint_bytes (that commit then takes as long as a checkpoint).
// compact() rebuilds every index without tombstones and checkpoints.
//
// Concurrency contract: mutations (commit and its one-operation forms,
// checkpoint, compact, sync) are serialized by a writer mutex and may come
// from any thread. Queries (get, read, search, embedding) run concurrently
// with each other and with the writer: the writer validates and logs while
// holding only its own mutex, then takes the records' lock exclusively just
// to apply the batch in memory (readers see a batch entirely or not at all),
// and updates each index under that index's own lock. Log I/O never blocks
// a reader. A search holds the records' shared lock while it runs.
//
// Allocation: commit allocates (records, index growth, the log buffer);
// get copies the record; read() allocates nothing itself.

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/checksum.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/store/file_io.hpp"
#include "ruvllm/store/hnsw_index.hpp"
#include "ruvllm/store/records.hpp"
#include "ruvllm/store/wal.hpp"

namespace ruvllm::store {

/// Options of a memory_store.
struct memory_store_options {
  /// The vector spaces of a new store, one hnsw_index each. An existing
  /// store keeps the spaces it was created with: the count and dimensions
  /// given here must match them (empty: take them from the store).
  std::vector<hnsw_options> spaces{};
  /// The log's durability (every_write, group_commit, none).
  wal_options wal{};
  /// Checkpoint automatically once the log exceeds this many bytes (0: never).
  std::uint64_t checkpoint_bytes = 64ull << 20;
  /// The numeric attribute with a secondary index (fixed at creation).
  std::string indexed_attribute = "quality";
};

/// An embedding of a record in one vector space.
struct embedding_ref {
  std::uint32_t space = 0;
  std::span<const float> vector;
};

/// A search result joined with (a copy of) its record.
struct memory_hit {
  record rec;
  float distance = 0.0f;
};

/// Counters of a memory_store since it was opened.
struct memory_store_stats {
  std::uint64_t commits = 0;     // batches logged and applied
  std::uint64_t operations = 0;  // operations in them
  std::uint64_t rejected = 0;    // batches refused by validation (nothing written)
  std::uint64_t checkpoints = 0;
  wal_stats wal{};
};

/// A batch of store mutations, committed atomically by memory_store::commit.
/// Copies what it is given (records, embeddings); reusable after clear().
/// Not thread-safe.
class memory_batch {
 public:
  /// Inserts r (its key is assigned at commit) with embeddings.
  void insert(record r, std::span<const embedding_ref> embeddings = {}) {
    add(op_code::insert, std::move(r), embeddings);
  }
  void insert(record r, std::initializer_list<embedding_ref> embeddings) {
    add(op_code::insert, std::move(r), std::span<const embedding_ref>(embeddings.begin(), embeddings.size()));
  }
  /// Replaces the time, group, attributes and payload of the record r.id
  /// (kind, key and edges stay) and upserts the given embeddings.
  void replace(record r, std::span<const embedding_ref> embeddings = {}) {
    add(op_code::replace, std::move(r), embeddings);
  }
  void replace(record r, std::initializer_list<embedding_ref> embeddings) {
    add(op_code::replace, std::move(r), std::span<const embedding_ref>(embeddings.begin(), embeddings.size()));
  }
  /// Removes a record, its edges and its embeddings.
  void remove(const uuid& id) { edge_op(op_code::remove, id, {}, edge_type::related, 0.0f); }
  /// Adds the edge or sets its weight.
  void link(const uuid& from, const uuid& to, edge_type type, float weight) {
    edge_op(op_code::link, from, to, type, weight);
  }
  /// Adds delta to an existing edge's weight.
  void adjust_weight(const uuid& from, const uuid& to, edge_type type, float delta) {
    edge_op(op_code::adjust, from, to, type, delta);
  }
  /// Multiplies an existing edge's weight by factor.
  void scale_weight(const uuid& from, const uuid& to, edge_type type, float factor) {
    edge_op(op_code::scale, from, to, type, factor);
  }
  /// Removes an existing edge.
  void unlink(const uuid& from, const uuid& to, edge_type type) { edge_op(op_code::unlink, from, to, type, 0.0f); }

  [[nodiscard]] std::size_t size() const noexcept { return ops_.size(); }
  [[nodiscard]] bool empty() const noexcept { return ops_.empty(); }
  void clear() noexcept {
    ops_.clear();
    embeddings_.clear();
    floats_.clear();
  }

 private:
  template <Metric, VectorPrecision, Backend>
  friend class memory_store;

  enum class op_code : std::uint8_t {
    insert = 1,
    replace = 2,
    remove = 3,
    link = 4,
    unlink = 5,
    adjust = 6,
    scale = 7
  };
  struct stored_embedding {
    std::uint32_t space;
    std::size_t offset;
    std::size_t size;
  };
  struct op {
    op_code code;
    record rec;   // insert, replace
    uuid from{};  // remove: the id
    uuid to{};
    edge_type type = edge_type::related;
    float value = 0.0f;
    std::uint32_t emb_begin = 0;
    std::uint32_t emb_end = 0;
  };

  void add(op_code code, record r, std::span<const embedding_ref> embeddings) {
    op o{code, std::move(r)};
    // Sorted here, so validation only has to look for a name given twice.
    std::sort(o.rec.attributes.begin(), o.rec.attributes.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    o.from = o.rec.id;
    o.emb_begin = static_cast<std::uint32_t>(embeddings_.size());
    for (const auto& e : embeddings) {
      embeddings_.push_back(stored_embedding{e.space, floats_.size(), e.vector.size()});
      floats_.insert(floats_.end(), e.vector.begin(), e.vector.end());
    }
    o.emb_end = static_cast<std::uint32_t>(embeddings_.size());
    ops_.push_back(std::move(o));
  }
  void edge_op(op_code code, const uuid& from, const uuid& to, edge_type type, float value) {
    op o{code, {}};
    o.from = from;
    o.to = to;
    o.type = type;
    o.value = value;
    o.emb_begin = o.emb_end = static_cast<std::uint32_t>(embeddings_.size());
    ops_.push_back(std::move(o));
  }
  [[nodiscard]] std::span<const float> vector_of(const stored_embedding& e) const noexcept {
    return std::span<const float>(floats_).subspan(e.offset, e.size);
  }

  std::vector<op> ops_;
  std::vector<stored_embedding> embeddings_;
  std::vector<float> floats_;
};

/// The standard layout of the roles' vector spaces in one memory_store
/// (the defaults of policy_store, session_index and witness_log).
namespace role_space {
inline constexpr std::uint32_t policy = 0;            // policy / pattern embeddings
inline constexpr std::uint32_t session = 1;           // session context embeddings
inline constexpr std::uint32_t witness_query = 2;     // witness query embeddings
inline constexpr std::uint32_t witness_response = 3;  // witness response embeddings
inline constexpr std::uint32_t count = 4;
}  // namespace role_space

/// Options of a memory_store for the three roles: role_space::count spaces
/// of `dimension` with the index parameters of `index` (its dimension is
/// replaced).
[[nodiscard]] inline memory_store_options role_store_options(std::uint32_t dimension, hnsw_options index = {}) {
  memory_store_options o;
  index.dimension = dimension;
  o.spaces.assign(role_space::count, index);
  return o;
}

namespace detail {

inline constexpr std::array<char, 8> memory_manifest_magic = {'R', 'U', 'V', 'M', 'E', 'M', 'S', '1'};
inline constexpr std::uint32_t memory_manifest_version = 1;
inline constexpr std::uint32_t memory_wal_batch = 1;  // the log record type of a batch
inline constexpr std::uint32_t memory_max_spaces = 64;

// The state a batch's later operations see: the graph plus the batch's own
// earlier operations (ids inserted or removed, edges set or removed).
class batch_overlay {
 public:
  explicit batch_overlay(const record_graph& g) : g_(g) {}

  struct id_state {
    bool alive;
    record_kind kind;
    std::uint64_t key;
  };

  [[nodiscard]] std::optional<id_state> live(const uuid& id) const {
    if (auto it = ids_.find(id); it != ids_.end())
      return it->second.alive ? std::optional<id_state>(it->second) : std::nullopt;
    if (const record* r = g_.get(id)) return id_state{true, r->kind, r->key};
    return std::nullopt;
  }
  void insert(const uuid& id, record_kind kind, std::uint64_t key) { ids_[id] = id_state{true, kind, key}; }
  void kill(const uuid& id) {
    ids_[id].alive = false;
    removed_.insert(id);
    std::erase_if(edges_, [&](const auto& e) { return std::get<0>(e.first) == id || std::get<1>(e.first) == id; });
  }
  [[nodiscard]] std::optional<float> weight(const uuid& from, const uuid& to, edge_type type) const {
    if (auto it = edges_.find({from, to, type}); it != edges_.end()) return it->second;
    if (removed_.contains(from) || removed_.contains(to)) return std::nullopt;
    return g_.edge_weight(from, to, type);
  }
  void set_weight(const uuid& from, const uuid& to, edge_type type, std::optional<float> w) {
    edges_[{from, to, type}] = w;
  }

 private:
  const record_graph& g_;
  std::unordered_map<uuid, id_state, uuid_hash> ids_;
  std::unordered_set<uuid, uuid_hash> removed_;
  std::map<std::tuple<uuid, uuid, edge_type>, std::optional<float>> edges_;
};

}  // namespace detail

/// Records + graph + embeddings in several vector spaces, durable through
/// one write-ahead log; see the file comment.
/// Template parameters: M, the Metric of every space; P, the
/// VectorPrecision of stored vectors; B, the kernel Backend.
template <Metric M, VectorPrecision P, Backend B = backend::highway>
class memory_store {
 public:
  using index_type = hnsw_index<M, P, B>;
  using space_type = vector_space<M, P, B>;

  /// Opens or creates the store in dir (created when missing) and recovers
  /// it. Errors: invalid_argument (options disagree with the store),
  /// io_error, corrupt_data / unsupported naming the file and offset.
  [[nodiscard]] static result<memory_store> open(std::string_view dir, const memory_store_options& options) {
    memory_store s;
    s.st_ = std::make_unique<state>();
    state& st = *s.st_;
    st.dir.assign(dir);
    st.options = options;
    if (::mkdir(st.dir.c_str(), 0755) != 0 && errno != EEXIST) return detail::os_error("cannot create", dir);
    RUVLLM_TRY(s.open_manifest());
    // Checkpoints.
    if (file_exists(s.snapshot_path())) {
      RUVLLM_TRY_ASSIGN(auto g, record_graph::load(s.snapshot_path()));
      if (g.indexed_attribute() != st.options.indexed_attribute)
        return make_error(errc::corrupt_data, "indexed attribute '", g.indexed_attribute(), "' != the manifest's '",
                          st.options.indexed_attribute, "'")
            .at(s.snapshot_path());
      st.graph = std::move(g);
    } else {
      st.graph = record_graph(st.options.indexed_attribute);
    }
    for (std::uint32_t i = 0; i < st.options.spaces.size(); ++i) {
      const std::string path = s.space_path(i);
      if (file_exists(path)) {
        RUVLLM_TRY_ASSIGN(auto loaded, index_type::load(path));
        if (loaded.dimension() != st.options.spaces[i].dimension)
          return make_error(errc::corrupt_data, "space ", i, " has dimension ", loaded.dimension(),
                            ", the manifest says ", st.options.spaces[i].dimension)
              .at(path);
        st.indexes.push_back(std::make_unique<index_type>(std::move(loaded)));
      } else {
        RUVLLM_TRY_ASSIGN(auto created, index_type::create(st.options.spaces[i]));
        st.indexes.push_back(std::make_unique<index_type>(std::move(created)));
      }
    }
    // Replay: each part skips the records its checkpoint already holds.
    std::uint64_t oldest = st.graph.sequence(), newest = st.graph.sequence();
    for (const auto& ix : st.indexes) {
      oldest = std::min(oldest, ix->sequence());
      newest = std::max(newest, ix->sequence());
    }
    const std::string wal_path = s.wal_path();
    auto apply = [&](std::uint64_t seq, std::uint32_t type, std::span<const std::byte> payload) -> result<void> {
      if (seq <= oldest) return {};
      if (type != detail::memory_wal_batch)
        return make_error(errc::corrupt_data, "log record ", seq, " has unknown type ", type).at(wal_path);
      auto r = s.replay(seq, payload, wal_path);
      if (!r) return make_error(errc::corrupt_data, "log record ", seq, ": ", r.error().message()).at(wal_path);
      return {};
    };
    RUVLLM_TRY_ASSIGN(st.wal, write_ahead_log::open(wal_path, st.options.wal, oldest, apply));
    if (st.wal.base_sequence() > oldest)
      return make_error(errc::corrupt_data, "the log starts after record ", st.wal.base_sequence(),
                        " but a checkpoint holds only up to ", oldest)
          .at(wal_path);
    if (st.wal.last_sequence() < newest)
      return make_error(errc::corrupt_data, "the log ends at record ", st.wal.last_sequence(),
                        " but a checkpoint holds up to ", newest)
          .at(wal_path);
    return s;
  }

  memory_store(memory_store&&) noexcept = default;
  memory_store& operator=(memory_store&&) noexcept = default;
  memory_store(const memory_store&) = delete;
  memory_store& operator=(const memory_store&) = delete;
  /// Syncs the log (errors are lost here; call sync() to see them).
  ~memory_store() {
    if (st_) {
      std::lock_guard w(st_->writer);
      (void)st_->wal.sync();
    }
  }

  // ---- mutations (writer mutex) ---------------------------------------------

  /// Validates, logs and applies batch atomically (see the file comment).
  /// Errors: invalid_argument, not_found, already_exists naming the
  /// operation, io_error; on any error nothing changed.
  [[nodiscard]] result<void> commit(const memory_batch& batch) {
    std::lock_guard w(st_->writer);
    return commit_locked(batch);
  }

  /// Builds a batch from the current state and commits it, atomically:
  /// build(const record_graph&, memory_batch&) -> result<void> runs under the
  /// writer mutex, so no other mutation slips between what it reads and what
  /// it writes (read-modify-write of a record, "link if the session exists").
  /// build must not call this store. An error from build commits nothing.
  template <class Build>
  [[nodiscard]] result<void> commit_with(Build&& build) {
    std::lock_guard w(st_->writer);
    memory_batch& b = st_->scratch;
    b.clear();
    RUVLLM_TRY(build(std::as_const(st_->graph), b));
    return commit_locked(b);
  }

  /// Read-modify-write of one record: fn(record&) -> result<void> edits a
  /// copy of the record id (its id, kind and key are kept), which then
  /// replaces it together with the given embeddings. Errors: not_found,
  /// fn's error, commit's errors.
  template <class Fn>
  [[nodiscard]] result<void> modify(const uuid& id, Fn&& fn, std::span<const embedding_ref> embeddings = {}) {
    return commit_with([&](const record_graph& g, memory_batch& b) -> result<void> {
      const record* cur = g.get(id);
      if (cur == nullptr) return make_error(errc::not_found, "record ", to_string(id));
      record next = *cur;
      RUVLLM_TRY(fn(next));
      next.id = cur->id;
      next.kind = cur->kind;
      b.replace(std::move(next), embeddings);
      return {};
    });
  }

  /// Inserts one record with its embeddings; returns its key.
  [[nodiscard]] result<std::uint64_t> insert(record r, std::span<const embedding_ref> embeddings = {}) {
    memory_batch b;
    b.insert(std::move(r), embeddings);
    std::lock_guard w(st_->writer);
    const std::uint64_t key = st_->graph.next_key();
    RUVLLM_TRY(commit_locked(b));
    return key;
  }
  [[nodiscard]] result<std::uint64_t> insert(record r, std::initializer_list<embedding_ref> embeddings) {
    return insert(std::move(r), std::span<const embedding_ref>(embeddings.begin(), embeddings.size()));
  }
  /// Replaces a record's fields and upserts embeddings (memory_batch::replace).
  [[nodiscard]] result<void> replace(record r, std::span<const embedding_ref> embeddings = {}) {
    memory_batch b;
    b.replace(std::move(r), embeddings);
    return commit(b);
  }
  [[nodiscard]] result<void> replace(record r, std::initializer_list<embedding_ref> embeddings) {
    return replace(std::move(r), std::span<const embedding_ref>(embeddings.begin(), embeddings.size()));
  }
  /// Sets one attribute of a record (logged as the whole updated record).
  [[nodiscard]] result<void> set_attribute(const uuid& id, std::string_view name, attribute_value value) {
    return modify(id, [&](record& r) -> result<void> {
      r.set(name, std::move(value));
      return {};
    });
  }
  /// Removes a record, its edges and embeddings. Errors: not_found, io_error.
  [[nodiscard]] result<void> remove(const uuid& id) {
    memory_batch b;
    b.remove(id);
    return commit(b);
  }
  /// Adds or re-weights an edge. Errors: not_found, invalid_argument, io_error.
  [[nodiscard]] result<void> link(const uuid& from, const uuid& to, edge_type type, float weight) {
    memory_batch b;
    b.link(from, to, type, weight);
    return commit(b);
  }
  /// Adds delta to an edge's weight; returns the new weight.
  [[nodiscard]] result<float> adjust_weight(const uuid& from, const uuid& to, edge_type type, float delta) {
    memory_batch b;
    b.adjust_weight(from, to, type, delta);
    return commit_edge(b);
  }
  /// Multiplies an edge's weight by factor (e.g. 1.05); returns the new weight.
  [[nodiscard]] result<float> scale_weight(const uuid& from, const uuid& to, edge_type type, float factor) {
    memory_batch b;
    b.scale_weight(from, to, type, factor);
    return commit_edge(b);
  }
  /// Removes an edge. Errors: not_found, io_error.
  [[nodiscard]] result<void> unlink(const uuid& from, const uuid& to, edge_type type) {
    memory_batch b;
    b.unlink(from, to, type);
    return commit(b);
  }

  // ---- queries (records' shared lock) ---------------------------------------

  /// Calls fn(const record_graph&) under the records' shared lock and
  /// returns its result. fn must not call this store's mutators.
  template <class Fn>
  decltype(auto) read(Fn&& fn) const {
    std::shared_lock g(st_->graph_lock);
    return fn(std::as_const(st_->graph));
  }

  /// A copy of the record with id, if any.
  [[nodiscard]] std::optional<record> get(const uuid& id) const {
    std::shared_lock g(st_->graph_lock);
    const record* r = st_->graph.get(id);
    return r == nullptr ? std::nullopt : std::optional<record>(*r);
  }

  /// Calls fn(const record&, float distance) for the k records nearest to
  /// query in space whose record passes pred, closest first, under the
  /// records' shared lock; returns how many. Errors: invalid_argument
  /// (space, query dimension).
  template <class Pred, class Fn>
  [[nodiscard]] result<std::size_t> visit_nearest(std::uint32_t space, std::span<const float> query, std::size_t k,
                                                  Pred&& pred, Fn&& fn, search_params params = {}) const {
    RUVLLM_TRY(check_space(space));
    std::shared_lock g(st_->graph_lock);
    const record_graph& graph = st_->graph;
    auto accept = [&graph, &pred](std::uint64_t key) {
      const record* r = graph.by_key(key);
      return r != nullptr && pred(*r);
    };
    RUVLLM_TRY_ASSIGN(auto hits, st_->indexes[space]->search(query, k, params, accept));
    std::size_t n = 0;
    for (const auto& h : hits)
      if (const record* r = graph.by_key(h.key)) {
        fn(*r, h.distance);
        ++n;
      }
    return n;
  }

  /// The k records nearest to query in space that pass pred, closest first.
  template <class Pred>
  [[nodiscard]] result<std::vector<memory_hit>> search(std::uint32_t space, std::span<const float> query, std::size_t k,
                                                       Pred&& pred, search_params params = {}) const {
    std::vector<memory_hit> out;
    RUVLLM_TRY(visit_nearest(
        space, query, k, pred,
        [&](const record& r, float d) {
          out.push_back(memory_hit{r, d});
        },
        params));
    return out;
  }
  [[nodiscard]] result<std::vector<memory_hit>> search(std::uint32_t space, std::span<const float> query,
                                                       std::size_t k) const {
    return search(space, query, k, [](const record&) { return true; });
  }

  /// Copies the embedding of record id in space into out (the space's
  /// dimension). Errors: not_found (no such record or no embedding there),
  /// invalid_argument.
  [[nodiscard]] result<void> embedding(std::uint32_t space, const uuid& id, std::span<float> out) const {
    RUVLLM_TRY(check_space(space));
    std::uint64_t key;
    {
      std::shared_lock g(st_->graph_lock);
      const record* r = st_->graph.get(id);
      if (r == nullptr) return make_error(errc::not_found, "record ", to_string(id));
      key = r->key;
    }
    return st_->indexes[space]->get_vector(key, out);
  }

  /// The index of a space (searches, sizes; thread-safe, see hnsw_index).
  [[nodiscard]] const index_type& index(std::uint32_t space) const noexcept { return *st_->indexes[space]; }
  [[nodiscard]] std::uint32_t space_count() const noexcept { return static_cast<std::uint32_t>(st_->indexes.size()); }
  /// The dimension of a space (0 for a space that does not exist).
  [[nodiscard]] std::uint32_t dimension(std::uint32_t space) const noexcept {
    return space < st_->indexes.size() ? st_->indexes[space]->dimension() : 0;
  }

  // ---- durability -------------------------------------------------------------

  /// Forces every logged batch to stable storage (group_commit, none).
  [[nodiscard]] result<void> sync() {
    std::lock_guard w(st_->writer);
    return st_->wal.sync();
  }

  /// Saves every checkpoint and starts an empty log.
  [[nodiscard]] result<void> checkpoint() {
    std::lock_guard w(st_->writer);
    return checkpoint_locked();
  }

  /// Rebuilds every index without tombstones (linking on pool's threads),
  /// then checkpoints.
  [[nodiscard]] result<void> compact(thread_pool* pool = nullptr) {
    std::lock_guard w(st_->writer);
    for (auto& ix : st_->indexes) RUVLLM_TRY(ix->compact(pool));
    return checkpoint_locked();
  }

  /// Checks every index's invariants and saved checksums, and that every
  /// vector belongs to a record. O(n).
  [[nodiscard]] result<void> verify() const {
    std::shared_lock g(st_->graph_lock);
    for (std::uint32_t i = 0; i < st_->indexes.size(); ++i) {
      const index_type& ix = *st_->indexes[i];
      RUVLLM_TRY(ix.verify());
      if (file_exists(space_path(i))) {
        RUVLLM_TRY_ASSIGN(auto view, index_type::open_view(space_path(i)));
        RUVLLM_TRY(view.verify());
      }
      std::uint64_t orphan = 0;
      bool ok = true;
      ix.for_each([&](std::uint64_t key, std::span<const float>) {
        if (st_->graph.by_key(key) == nullptr) {
          ok = false;
          orphan = key;
        }
      });
      if (!ok) return make_error(errc::corrupt_data, "space ", i, ": vector key ", orphan, " has no record");
    }
    return {};
  }

  [[nodiscard]] memory_store_stats stats() const {
    std::lock_guard w(st_->writer);
    memory_store_stats s = st_->stats;
    s.wal = st_->wal.stats();
    return s;
  }
  /// Sequence number of the last logged batch.
  [[nodiscard]] std::uint64_t sequence() const {
    std::lock_guard w(st_->writer);
    return st_->wal.last_sequence();
  }
  [[nodiscard]] const std::string& directory() const noexcept { return st_->dir; }
  [[nodiscard]] std::string manifest_path() const { return st_->dir + "/store.manifest"; }
  [[nodiscard]] std::string wal_path() const { return st_->dir + "/store.wal"; }
  [[nodiscard]] std::string snapshot_path() const { return st_->dir + "/records.snap"; }
  [[nodiscard]] std::string space_path(std::uint32_t space) const {
    return st_->dir + "/space" + std::to_string(space) + ".hnsw";
  }

 private:
  using op_code = memory_batch::op_code;

  struct state {
    std::string dir;
    memory_store_options options;
    record_graph graph;
    std::vector<std::unique_ptr<index_type>> indexes;
    write_ahead_log wal;
    memory_store_stats stats;
    mutable std::mutex writer;
    mutable std::shared_mutex graph_lock;
    // Reused per commit.
    memory_batch scratch;
    std::vector<std::byte> payload;
    std::vector<std::uint64_t> keys;  // per op: the record key it touches
    std::vector<float> weights;       // per op: the resolved absolute weight
  };

  memory_store() = default;

  [[nodiscard]] result<void> check_space(std::uint32_t space) const {
    if (space >= st_->indexes.size())
      return make_error(errc::invalid_argument, "space ", space, " >= space count ", st_->indexes.size());
    return {};
  }

  // ---- manifest -------------------------------------------------------------

  [[nodiscard]] result<void> open_manifest() {
    state& st = *st_;
    const std::string path = manifest_path();
    if (!file_exists(path)) {
      if (file_exists(wal_path()) || file_exists(snapshot_path()))
        return make_error(errc::corrupt_data, "the store has data but no manifest").at(path);
      if (st.options.spaces.size() > detail::memory_max_spaces)
        return make_error(errc::invalid_argument, "space count ", st.options.spaces.size(), " exceeds ",
                          detail::memory_max_spaces);
      for (std::size_t i = 0; i < st.options.spaces.size(); ++i)
        if (auto created = index_type::create(st.options.spaces[i]); !created)
          return make_error(errc::invalid_argument, "space ", i, ": ", created.error().message());
      return write_manifest(path);
    }
    RUVLLM_TRY_ASSIGN(auto map, mapped_file::open(path));
    byte_reader r(map.bytes(), path);
    RUVLLM_TRY_ASSIGN(auto magic, r.read_bytes(8, "magic"));
    if (std::memcmp(magic.data(), detail::memory_manifest_magic.data(), 8) != 0)
      return r.fail(errc::corrupt_data, "not a memory store manifest (bad magic)");
    if (map.bytes().size() < 16) return r.fail(errc::corrupt_data, "manifest truncated");
    std::uint32_t crc;
    std::memcpy(&crc, map.bytes().data() + map.bytes().size() - 4, 4);
    if (crc32c(map.bytes().first(map.bytes().size() - 4)) != crc)
      return make_error(errc::corrupt_data, "manifest checksum").at(path, map.bytes().size() - 4);
    RUVLLM_TRY_ASSIGN(auto version, r.read<std::uint32_t>("version"));
    if (version != detail::memory_manifest_version)
      return r.fail(errc::unsupported, "manifest version ", version, " != ", detail::memory_manifest_version);
    RUVLLM_TRY_ASSIGN(auto count, r.read<std::uint32_t>("space count"));
    if (count > detail::memory_max_spaces) return r.fail(errc::corrupt_data, "space count ", count);
    std::vector<hnsw_options> spaces(count);
    for (auto& sp : spaces) {
      RUVLLM_TRY_ASSIGN(sp.dimension, r.read<std::uint32_t>("dimension"));
      RUVLLM_TRY_ASSIGN(auto metric, r.read<std::uint8_t>("metric"));
      RUVLLM_TRY_ASSIGN(auto precision, r.read<std::uint8_t>("precision"));
      RUVLLM_TRY_ASSIGN(auto originals, r.read<std::uint8_t>("flags"));
      RUVLLM_TRY_ASSIGN(auto zero, r.read<std::uint8_t>("reserved"));
      (void)zero;
      if (metric != space_type::metric_id || precision != space_type::precision_id)
        return r.fail(errc::invalid_argument, "the store's metric/precision ids (", metric, ", ", precision,
                      ") differ from this store type's (", space_type::metric_id, ", ", space_type::precision_id, ")");
      // The flags of an hnsw file's header: bit 0 originals, bit 1 as f16.
      if ((originals & ~3u) != 0) return r.fail(errc::corrupt_data, "unknown space flags ", originals);
      sp.keep_originals = (originals & 1u) != 0;
      sp.half_originals = (originals & 2u) != 0;
      RUVLLM_TRY_ASSIGN(sp.m, r.read<std::uint32_t>("m"));
      RUVLLM_TRY_ASSIGN(sp.ef_construction, r.read<std::uint32_t>("ef_construction"));
      RUVLLM_TRY_ASSIGN(sp.ef_search, r.read<std::uint32_t>("ef_search"));
      if (auto ok = index_type::create(sp); !ok) return r.fail(errc::corrupt_data, ok.error().message());
    }
    RUVLLM_TRY_ASSIGN(auto indexed, detail::read_text(r, "indexed attribute"));
    if (r.remaining() != 4) return r.fail(errc::corrupt_data, r.remaining(), " bytes before the checksum, not 4");
    if (!st.options.spaces.empty()) {
      if (st.options.spaces.size() != spaces.size())
        return make_error(errc::invalid_argument, "the store in ", st.dir, " has ", spaces.size(),
                          " vector spaces, the options ask for ", st.options.spaces.size());
      for (std::size_t i = 0; i < spaces.size(); ++i)
        if (st.options.spaces[i].dimension != spaces[i].dimension)
          return make_error(errc::invalid_argument, "space ", i, " of the store in ", st.dir, " has dimension ",
                            spaces[i].dimension, ", the options ask for ", st.options.spaces[i].dimension);
    }
    // Run-time knobs (compaction ratio, level seed) come from the options.
    for (std::size_t i = 0; i < spaces.size() && i < st.options.spaces.size(); ++i) {
      spaces[i].compact_ratio = st.options.spaces[i].compact_ratio;
      spaces[i].seed = st.options.spaces[i].seed;
    }
    st.options.spaces = std::move(spaces);
    st.options.indexed_attribute.assign(indexed);
    return {};
  }

  [[nodiscard]] result<void> write_manifest(const std::string& path) const {
    const state& st = *st_;
    std::vector<std::byte> out(detail::memory_manifest_magic.size());
    std::memcpy(out.data(), detail::memory_manifest_magic.data(), 8);
    detail::put_bytes(out, detail::memory_manifest_version);
    detail::put_bytes(out, static_cast<std::uint32_t>(st.options.spaces.size()));
    for (const auto& sp : st.options.spaces) {
      detail::put_bytes(out, sp.dimension);
      detail::put_bytes(out, space_type::metric_id);
      detail::put_bytes(out, space_type::precision_id);
      detail::put_bytes(out, static_cast<std::uint8_t>(!sp.keep_originals ? 0 : sp.half_originals ? 3 : 1));
      detail::put_bytes(out, std::uint8_t{0});
      detail::put_bytes(out, sp.m);
      detail::put_bytes(out, sp.ef_construction);
      detail::put_bytes(out, sp.ef_search);
    }
    detail::put_text(out, st.options.indexed_attribute);
    detail::put_bytes(out, crc32c(out));
    const std::string tmp = path + ".tmp";
    RUVLLM_TRY_ASSIGN(auto f, open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC));
    RUVLLM_TRY(write_all(f, out, tmp));
    RUVLLM_TRY(sync_file(f, tmp));
    f.close();
    return replace_file(tmp, path);
  }

  // ---- commit -----------------------------------------------------------------

  // Commits a one-operation batch that re-weights an edge; returns the weight.
  [[nodiscard]] result<float> commit_edge(const memory_batch& b) {
    std::lock_guard w(st_->writer);
    RUVLLM_TRY(commit_locked(b));
    return st_->weights.front();
  }

  // Checks every embedding of op o (space, dimension, finite, distinct spaces).
  [[nodiscard]] result<void> check_embeddings(const memory_batch& b, const memory_batch::op& o) const {
    std::uint64_t seen = 0;
    for (std::uint32_t e = o.emb_begin; e < o.emb_end; ++e) {
      const auto& emb = b.embeddings_[e];
      RUVLLM_TRY(check_space(emb.space));
      if (seen & (std::uint64_t{1} << emb.space))
        return make_error(errc::invalid_argument, "space ", emb.space, " is given twice");
      seen |= std::uint64_t{1} << emb.space;
      const std::uint32_t dim = st_->indexes[emb.space]->dimension();
      if (emb.size != dim)
        return make_error(errc::invalid_argument, "embedding dimension ", emb.size, " != space ", emb.space,
                          " dimension ", dim);
      const auto v = b.vector_of(emb);
      for (std::size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]))
          return make_error(errc::invalid_argument, "embedding element ", i, " in space ", emb.space,
                            " is not finite (", v[i], ")");
    }
    return {};
  }

  [[nodiscard]] static result<void> check_record_fields(const record& r) {
    if (r.id.is_nil()) return make_error(errc::invalid_argument, "record id is nil");
    if (static_cast<std::uint8_t>(r.kind) >= record_kind_count)
      return make_error(errc::invalid_argument, "record kind ", static_cast<unsigned>(r.kind),
                        " >= ", unsigned{record_kind_count});
    for (std::size_t i = 1; i < r.attributes.size(); ++i)
      if (!(r.attributes[i - 1].first < r.attributes[i].first))
        return make_error(errc::invalid_argument, "attribute '", r.attributes[i].first, "' appears twice");
    if (r.payload.size() > wal_max_payload)
      return make_error(errc::invalid_argument, "payload of ", r.payload.size(), " bytes exceeds ", wal_max_payload);
    return {};
  }

  // Validates b against the current state (without changing it), resolving
  // keys and weights into st.keys / st.weights and encoding the log payload.
  [[nodiscard]] result<void> validate(const memory_batch& b) {
    state& st = *st_;
    detail::batch_overlay ov(st.graph);
    std::uint64_t next_key = st.graph.next_key();
    st.keys.assign(b.ops_.size(), 0);
    st.weights.assign(b.ops_.size(), 0.0f);
    st.payload.clear();
    detail::put_bytes(st.payload, static_cast<std::uint32_t>(b.ops_.size()));
    for (std::size_t i = 0; i < b.ops_.size(); ++i) {
      const auto& o = b.ops_[i];
      auto fail = [&](error e) { return make_error(e.code(), "batch operation ", i, ": ", e.message()); };
      switch (o.code) {
        case op_code::insert:
        case op_code::replace: {
          if (auto ok = check_record_fields(o.rec); !ok) return fail(std::move(ok).error());
          if (auto ok = check_embeddings(b, o); !ok) return fail(std::move(ok).error());
          const auto cur = ov.live(o.rec.id);
          if (o.code == op_code::insert) {
            if (cur) return fail(make_error(errc::already_exists, "record ", to_string(o.rec.id), " exists"));
            st.keys[i] = next_key++;
            ov.insert(o.rec.id, o.rec.kind, st.keys[i]);
          } else {
            if (!cur) return fail(make_error(errc::not_found, "record ", to_string(o.rec.id)));
            if (cur->kind != o.rec.kind)
              return fail(make_error(errc::invalid_argument, "record ", to_string(o.rec.id), " has kind ",
                                     static_cast<unsigned>(cur->kind), ", not ", static_cast<unsigned>(o.rec.kind)));
            st.keys[i] = cur->key;
          }
          detail::put_bytes(st.payload, static_cast<std::uint8_t>(o.code));
          const std::size_t at = st.payload.size();
          record_graph::encode(o.rec, st.payload);
          // The key field of the encoded record: after id (16), kind (1), time (8), group (8).
          std::memcpy(st.payload.data() + at + 33, &st.keys[i], 8);
          detail::put_bytes(st.payload, o.emb_end - o.emb_begin);
          for (std::uint32_t e = o.emb_begin; e < o.emb_end; ++e) {
            const auto& emb = b.embeddings_[e];
            detail::put_bytes(st.payload, emb.space);
            detail::put_bytes(st.payload, static_cast<std::uint32_t>(emb.size));
            const auto v = b.vector_of(emb);
            const auto* p = reinterpret_cast<const std::byte*>(v.data());
            st.payload.insert(st.payload.end(), p, p + v.size_bytes());
          }
          break;
        }
        case op_code::remove: {
          const auto cur = ov.live(o.from);
          if (!cur) return fail(make_error(errc::not_found, "record ", to_string(o.from)));
          st.keys[i] = cur->key;
          ov.kill(o.from);
          detail::put_bytes(st.payload, static_cast<std::uint8_t>(op_code::remove));
          detail::put_uuid(st.payload, o.from);
          detail::put_bytes(st.payload, cur->key);
          break;
        }
        case op_code::link:
        case op_code::adjust:
        case op_code::scale:
        case op_code::unlink: {
          if (!ov.live(o.from) || !ov.live(o.to))
            return fail(make_error(errc::not_found, "edge endpoint ", to_string(ov.live(o.from) ? o.to : o.from),
                                   " is not a record"));
          float weight = o.value;
          if (o.code != op_code::link) {
            const auto cur = ov.weight(o.from, o.to, o.type);
            if (!cur)
              return fail(make_error(errc::not_found, "edge ", to_string(o.from), " -> ", to_string(o.to), " of type ",
                                     static_cast<unsigned>(o.type)));
            weight = o.code == op_code::adjust ? *cur + o.value : o.code == op_code::scale ? *cur * o.value : 0.0f;
          }
          if (auto ok = record_graph::check_edge(o.type, weight); !ok) return fail(std::move(ok).error());
          st.weights[i] = weight;
          ov.set_weight(o.from, o.to, o.type, o.code == op_code::unlink ? std::nullopt : std::optional<float>(weight));
          detail::put_bytes(st.payload,
                            static_cast<std::uint8_t>(o.code == op_code::unlink ? op_code::unlink : op_code::link));
          detail::put_uuid(st.payload, o.from);
          detail::put_uuid(st.payload, o.to);
          detail::put_bytes(st.payload, static_cast<std::uint8_t>(o.type));
          detail::put_bytes(st.payload, weight);
          break;
        }
        default: return fail(make_error(errc::invalid_argument, "unknown operation"));
      }
    }
    if (st.payload.size() > wal_max_payload)
      return make_error(errc::invalid_argument, "a batch of ", b.ops_.size(), " operations takes ", st.payload.size(),
                        " bytes, more than one log record holds (", wal_max_payload, "); split it");
    return {};
  }

  [[nodiscard]] result<void> commit_locked(const memory_batch& b) {
    state& st = *st_;
    if (b.empty()) return {};
    if (auto ok = validate(b); !ok) {
      ++st.stats.rejected;
      return ok;
    }
    RUVLLM_TRY(st.wal.append(detail::memory_wal_batch, st.payload));
    // Logged: from here on the batch is applied; validation made every step
    // succeed, so an error below is a bug (reported, never hidden).
    {
      std::unique_lock g(st.graph_lock);
      for (std::size_t i = 0; i < b.ops_.size(); ++i) {
        const auto& o = b.ops_[i];
        result<void> ok{};
        switch (o.code) {
          case op_code::insert: {
            record r = o.rec;
            r.key = st.keys[i];
            auto k = st.graph.insert_with_key(std::move(r));
            if (!k) ok = std::move(k).error();
            break;
          }
          case op_code::replace: ok = st.graph.replace(o.rec); break;
          case op_code::remove: ok = st.graph.remove(o.from); break;
          case op_code::unlink: ok = st.graph.remove_edge(o.from, o.to, o.type); break;
          default: ok = st.graph.link(o.from, o.to, o.type, st.weights[i]); break;
        }
        if (!ok) return make_error(errc::corrupt_data, "applying logged operation ", i, ": ", ok.error().message());
      }
    }
    for (std::size_t i = 0; i < b.ops_.size(); ++i) {
      const auto& o = b.ops_[i];
      if (o.code == op_code::insert || o.code == op_code::replace) {
        for (std::uint32_t e = o.emb_begin; e < o.emb_end; ++e)
          RUVLLM_TRY(st.indexes[b.embeddings_[e].space]->upsert(st.keys[i], b.vector_of(b.embeddings_[e])));
      } else if (o.code == op_code::remove) {
        for (auto& ix : st.indexes)
          if (ix->contains(st.keys[i])) RUVLLM_TRY(ix->remove(st.keys[i]));
      }
    }
    ++st.stats.commits;
    st.stats.operations += b.ops_.size();
    if (st.options.checkpoint_bytes != 0 && st.wal.bytes() > st.options.checkpoint_bytes) return checkpoint_locked();
    return {};
  }

  [[nodiscard]] result<void> checkpoint_locked() {
    state& st = *st_;
    const std::uint64_t seq = st.wal.last_sequence();
    RUVLLM_TRY(st.wal.sync());
    // Only this thread mutates (writer mutex), so the graph is read without
    // its lock and readers continue during the save.
    RUVLLM_TRY(st.graph.save(snapshot_path(), seq));
    for (std::uint32_t i = 0; i < st.indexes.size(); ++i) RUVLLM_TRY(st.indexes[i]->save(space_path(i), seq));
    RUVLLM_TRY(st.wal.reset(seq));
    ++st.stats.checkpoints;
    return {};
  }

  // ---- replay -------------------------------------------------------------------

  // Applies one logged batch: the records part when seq is after the graph's
  // checkpoint, each space's part when seq is after that space's checkpoint.
  // Every field is checked (the log is hostile until proven otherwise).
  [[nodiscard]] result<void> replay(std::uint64_t seq, std::span<const std::byte> payload, std::string_view path) {
    state& st = *st_;
    const bool graph_part = seq > st.graph.sequence();
    byte_reader b(payload, path);
    RUVLLM_TRY_ASSIGN(auto count, b.read<std::uint32_t>("operation count"));
    if (count > payload.size()) return b.fail(errc::corrupt_data, "operation count ", count);
    std::vector<float> v;
    for (std::uint32_t i = 0; i < count; ++i) {
      RUVLLM_TRY_ASSIGN(auto code_byte, b.read<std::uint8_t>("operation"));
      const auto code = static_cast<op_code>(code_byte);
      switch (code) {
        case op_code::insert:
        case op_code::replace: {
          RUVLLM_TRY_ASSIGN(auto rec, record_graph::decode(b));
          const std::uint64_t key = rec.key;
          if (graph_part) {
            if (code == op_code::insert) {
              RUVLLM_TRY(st.graph.insert_with_key(std::move(rec)));
            } else {
              const record* cur = st.graph.get(rec.id);
              if (cur == nullptr || cur->key != key) return b.fail(errc::corrupt_data, "replace of an unknown record");
              RUVLLM_TRY(st.graph.replace(std::move(rec)));
            }
          }
          RUVLLM_TRY_ASSIGN(auto n, b.read<std::uint32_t>("embedding count"));
          for (std::uint32_t e = 0; e < n; ++e) {
            RUVLLM_TRY_ASSIGN(auto space, b.read<std::uint32_t>("space"));
            RUVLLM_TRY_ASSIGN(auto dim, b.read<std::uint32_t>("dimension"));
            if (space >= st.indexes.size() || dim != st.indexes[space]->dimension())
              return b.fail(errc::corrupt_data, "embedding of space ", space, " with dimension ", dim);
            RUVLLM_TRY_ASSIGN(auto bytes, b.read_bytes(std::uint64_t{dim} * 4, "embedding"));
            if (seq <= st.indexes[space]->sequence()) continue;
            v.resize(dim);
            std::memcpy(v.data(), bytes.data(), bytes.size());
            RUVLLM_TRY(st.indexes[space]->upsert(key, v));
          }
          break;
        }
        case op_code::remove: {
          RUVLLM_TRY_ASSIGN(auto id, detail::read_uuid(b));
          RUVLLM_TRY_ASSIGN(auto key, b.read<std::uint64_t>("key"));
          if (graph_part) {
            const record* cur = st.graph.get(id);
            if (cur == nullptr || cur->key != key) return b.fail(errc::corrupt_data, "remove of an unknown record");
            RUVLLM_TRY(st.graph.remove(id));
          }
          for (auto& ix : st.indexes)
            if (seq > ix->sequence() && ix->contains(key)) RUVLLM_TRY(ix->remove(key));
          break;
        }
        case op_code::link:
        case op_code::unlink: {
          RUVLLM_TRY_ASSIGN(auto from, detail::read_uuid(b, "edge"));
          RUVLLM_TRY_ASSIGN(auto to, detail::read_uuid(b, "edge"));
          RUVLLM_TRY_ASSIGN(auto type, b.read<std::uint8_t>("edge type"));
          RUVLLM_TRY_ASSIGN(auto weight, b.read<float>("edge weight"));
          if (!graph_part) break;
          if (code == op_code::link)
            RUVLLM_TRY(st.graph.link(from, to, static_cast<edge_type>(type), weight));
          else
            RUVLLM_TRY(st.graph.remove_edge(from, to, static_cast<edge_type>(type)));
          break;
        }
        default: return b.fail(errc::corrupt_data, "unknown operation ", code_byte);
      }
    }
    if (b.remaining() != 0) return b.fail(errc::corrupt_data, b.remaining(), " trailing bytes");
    return {};
  }

  std::unique_ptr<state> st_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_MEMORY_STORE_HPP
