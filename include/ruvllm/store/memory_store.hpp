#ifndef RUVLLM_STORE_MEMORY_STORE_HPP
#define RUVLLM_STORE_MEMORY_STORE_HPP

// memory_store<Metric, Precision>: the one durable store behind the three
// roles (policy memory, session index, witness log; roles.hpp): records with
// attributes and typed weighted edges (record_graph) plus an embedding per
// record in a durable hnsw_store, all in one directory:
//
//   index.hnsw, index.wal      vectors (hnsw_store.hpp), keyed by record key
//   records.snap, records.wal  records and edges (records.hpp, wal.hpp)
//
// Every record mutation is logged (records.wal: insert, replace, remove,
// link with an absolute weight, unlink) before it is applied; replay skips
// records already in records.snap (its sequence number), exactly as the
// vector store does. A record is logged before its vector, so a crash in
// between leaves a record without a vector (allowed: witness entries need
// none); a vector whose record is missing is removed when the store opens.
// checkpoint() saves both snapshots and starts empty logs.
//
// Concurrency: mutations are serialized by the store's mutex; queries take a
// shared lock on the records, and vector search runs on the index's own
// shared lock, so searches proceed alongside one writer.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/store/hnsw_store.hpp"
#include "ruvllm/store/records.hpp"
#include "ruvllm/store/wal.hpp"

namespace ruvllm::store {

/// Options of a memory_store.
struct memory_store_options {
  /// The vector half (index parameters for a new store, log, checkpoints).
  hnsw_store_options vectors{};
  /// The records log.
  wal_options records_wal{};
  /// The numeric attribute with a secondary index.
  std::string indexed_attribute = "quality";
};

/// A search result joined with its record.
struct memory_hit {
  record rec;
  float distance = 0.0f;
};

namespace detail {
enum class record_op : std::uint32_t { insert = 1, replace = 2, remove = 3, link = 4, unlink = 5 };
}  // namespace detail

/// Records + graph + embeddings, durable; see the file comment.
template <Metric M, VectorPrecision P, Backend B = backend::highway>
class memory_store {
 public:
  using vector_store = hnsw_store<M, P, B>;

  /// Opens or creates the store in dir and recovers both halves.
  /// Errors: io_error, corrupt_data naming the file and offset.
  [[nodiscard]] static result<memory_store> open(std::string_view dir, const memory_store_options& options) {
    memory_store s;
    RUVLLM_TRY_ASSIGN(auto vectors, vector_store::open(dir, options.vectors));
    s.vectors_ = std::make_unique<vector_store>(std::move(vectors));
    s.dir_.assign(dir);
    if (file_exists(s.snapshot_path())) {
      RUVLLM_TRY_ASSIGN(auto g, record_graph::load(s.snapshot_path()));
      s.graph_ = std::make_unique<record_graph>(std::move(g));
    } else {
      s.graph_ = std::make_unique<record_graph>(options.indexed_attribute);
    }
    record_graph& g = *s.graph_;
    const std::uint64_t done = g.sequence();
    const std::string wal_path = s.records_wal_path();
    auto apply = [&](std::uint64_t seq, std::uint32_t type, std::span<const std::byte> payload) -> result<void> {
      if (seq <= done) return {};
      auto r = replay(g, type, payload, wal_path);
      if (!r) return std::move(r).error().at(wal_path);
      return {};
    };
    RUVLLM_TRY_ASSIGN(s.log_, write_ahead_log::open(wal_path, options.records_wal, done, apply));
    // Vectors whose record never made it (crash between the two logs).
    std::vector<std::uint64_t> orphans;
    s.vectors_->index().for_each([&](std::uint64_t key, std::span<const float>) {
      if (g.by_key(key) == nullptr) orphans.push_back(key);
    });
    for (auto key : orphans) RUVLLM_TRY(s.vectors_->remove(key));
    s.locks_ = std::make_unique<locks>();
    return s;
  }

  memory_store(memory_store&&) noexcept = default;
  memory_store& operator=(memory_store&&) noexcept = default;

  /// Adds a record (its key is assigned) with an optional embedding.
  /// Errors: already_exists, invalid_argument, io_error.
  [[nodiscard]] result<std::uint64_t> add(record r, std::span<const float> embedding = {}) {
    std::lock_guard w(locks_->writer);
    if (!embedding.empty() && embedding.size() != vectors_->index().dimension())
      return make_error(errc::invalid_argument, "embedding dimension ", embedding.size(),
                        " != ", vectors_->index().dimension());
    std::uint64_t key;
    {
      std::unique_lock g(locks_->graph);
      RUVLLM_TRY_ASSIGN(key, graph_->insert(r));
      r.key = key;
      payload_.clear();
      record_graph::encode(*graph_->get(r.id), payload_);
      if (auto logged = log_.append(static_cast<std::uint32_t>(detail::record_op::insert), payload_); !logged) {
        (void)graph_->remove(r.id);
        return std::move(logged).error();
      }
    }
    if (!embedding.empty()) RUVLLM_TRY(vectors_->upsert(key, embedding));
    return key;
  }

  /// Sets an attribute (logged as the whole updated record). Errors: not_found, io_error.
  [[nodiscard]] result<void> set_attribute(const uuid& id, std::string_view name, attribute_value value) {
    std::lock_guard w(locks_->writer);
    std::unique_lock g(locks_->graph);
    const record* cur = graph_->get(id);
    if (cur == nullptr) return make_error(errc::not_found, "record ", to_string(id));
    record next = *cur;
    next.set(name, value);
    payload_.clear();
    record_graph::encode(next, payload_);
    RUVLLM_TRY(log_.append(static_cast<std::uint32_t>(detail::record_op::replace), payload_));
    return graph_->set_attribute(id, name, std::move(value));
  }

  /// Removes a record, its edges and its embedding. Errors: not_found, io_error.
  [[nodiscard]] result<void> remove(const uuid& id) {
    std::lock_guard w(locks_->writer);
    std::uint64_t key;
    {
      std::unique_lock g(locks_->graph);
      const record* cur = graph_->get(id);
      if (cur == nullptr) return make_error(errc::not_found, "record ", to_string(id));
      key = cur->key;
      RUVLLM_TRY(log_.append(static_cast<std::uint32_t>(detail::record_op::remove), id_bytes(id)));
      RUVLLM_TRY(graph_->remove(id));
    }
    if (vectors_->index().contains(key)) RUVLLM_TRY(vectors_->remove(key));
    return {};
  }

  /// Adds or re-weights an edge. Errors: not_found, io_error.
  [[nodiscard]] result<void> link(const uuid& from, const uuid& to, edge_type type, float weight) {
    std::lock_guard w(locks_->writer);
    std::unique_lock g(locks_->graph);
    if (graph_->get(from) == nullptr || graph_->get(to) == nullptr)
      return make_error(errc::not_found, "edge endpoint is not a record");
    return log_link(from, to, type, weight);
  }

  /// Adds delta to an edge's weight (logged as the absolute result).
  [[nodiscard]] result<float> adjust_weight(const uuid& from, const uuid& to, edge_type type, float delta) {
    std::lock_guard w(locks_->writer);
    std::unique_lock g(locks_->graph);
    float weight = 0.0f;
    bool found = false;
    for (const auto& e : graph_->neighbours(from, type, direction::out))
      if (e.to == to) {
        weight = e.weight + delta;
        found = true;
      }
    if (!found) return make_error(errc::not_found, "edge ", to_string(from), " -> ", to_string(to));
    RUVLLM_TRY(log_link(from, to, type, weight));
    return weight;
  }

  /// Removes an edge. Errors: not_found, io_error.
  [[nodiscard]] result<void> unlink(const uuid& from, const uuid& to, edge_type type) {
    std::lock_guard w(locks_->writer);
    std::unique_lock g(locks_->graph);
    std::vector<std::byte> p;
    append_edge(p, from, to, type, 0.0f);
    bool found = false;
    for (const auto& e : graph_->neighbours(from, type, direction::out)) found = found || e.to == to;
    if (!found) return make_error(errc::not_found, "edge ", to_string(from), " -> ", to_string(to));
    RUVLLM_TRY(log_.append(static_cast<std::uint32_t>(detail::record_op::unlink), p));
    return graph_->remove_edge(from, to, type);
  }

  /// Calls fn(const record_graph&) under the records' shared lock.
  template <class Fn>
  decltype(auto) read(Fn&& fn) const {
    std::shared_lock g(locks_->graph);
    return fn(*graph_);
  }

  /// A copy of the record with id, if any.
  [[nodiscard]] std::optional<record> get(const uuid& id) const {
    std::shared_lock g(locks_->graph);
    const record* r = graph_->get(id);
    return r == nullptr ? std::nullopt : std::optional<record>(*r);
  }

  /// The k records nearest to query whose record passes pred, closest first.
  template <class Pred>
  [[nodiscard]] result<std::vector<memory_hit>> search(std::span<const float> query, std::size_t k, Pred pred,
                                                       search_params params = {}) const {
    std::shared_lock g(locks_->graph);
    RUVLLM_TRY_ASSIGN(auto hits, vectors_->index().search(query, k, params, graph_->filter(pred)));
    std::vector<memory_hit> out;
    out.reserve(hits.size());
    for (const auto& h : hits)
      if (const record* r = graph_->by_key(h.key)) out.push_back(memory_hit{*r, h.distance});
    return out;
  }

  /// The vector half (searches, sizes).
  [[nodiscard]] const vector_store& vectors() const noexcept { return *vectors_; }

  /// Saves both snapshots and starts empty logs.
  [[nodiscard]] result<void> checkpoint() {
    std::lock_guard w(locks_->writer);
    std::shared_lock g(locks_->graph);
    RUVLLM_TRY(vectors_->checkpoint());
    RUVLLM_TRY(log_.sync());
    RUVLLM_TRY(graph_->save(snapshot_path(), log_.last_sequence()));
    return log_.reset(log_.last_sequence());
  }

  /// Checks the vector half and that every vector has a record.
  [[nodiscard]] result<void> verify() const {
    RUVLLM_TRY(vectors_->verify());
    std::shared_lock g(locks_->graph);
    std::uint64_t orphan = 0;
    bool ok = true;
    vectors_->index().for_each([&](std::uint64_t key, std::span<const float>) {
      if (graph_->by_key(key) == nullptr) {
        ok = false;
        orphan = key;
      }
    });
    if (!ok) return make_error(errc::corrupt_data, "vector key ", orphan, " has no record");
    return {};
  }

  [[nodiscard]] std::string snapshot_path() const { return dir_ + "/records.snap"; }
  [[nodiscard]] std::string records_wal_path() const { return dir_ + "/records.wal"; }

 private:
  struct locks {
    std::mutex writer;
    mutable std::shared_mutex graph;
  };

  memory_store() = default;

  static std::span<const std::byte> id_bytes(const uuid& id) { return std::as_bytes(std::span<const uuid>(&id, 1)); }
  static void append_edge(std::vector<std::byte>& p, const uuid& from, const uuid& to, edge_type type, float weight) {
    const auto add = [&](const void* v, std::size_t n) {
      const auto* b = static_cast<const std::byte*>(v);
      p.insert(p.end(), b, b + n);
    };
    add(&from, sizeof from);
    add(&to, sizeof to);
    const auto t = static_cast<std::uint8_t>(type);
    add(&t, 1);
    add(&weight, sizeof weight);
  }

  [[nodiscard]] result<void> log_link(const uuid& from, const uuid& to, edge_type type, float weight) {
    std::vector<std::byte> p;
    append_edge(p, from, to, type, weight);
    RUVLLM_TRY(log_.append(static_cast<std::uint32_t>(detail::record_op::link), p));
    return graph_->link(from, to, type, weight);
  }

  [[nodiscard]] static result<void> replay(record_graph& g, std::uint32_t type, std::span<const std::byte> payload,
                                           std::string_view path) {
    byte_reader b(payload, path);
    switch (static_cast<detail::record_op>(type)) {
      case detail::record_op::insert:
      case detail::record_op::replace: {
        RUVLLM_TRY_ASSIGN(auto rec, record_graph::decode(b));
        if (static_cast<detail::record_op>(type) == detail::record_op::replace) {
          // Keep the edges: replace only the attributes.
          for (const auto& [name, value] : rec.attributes) RUVLLM_TRY(g.set_attribute(rec.id, name, value));
          return {};
        }
        RUVLLM_TRY(g.insert_with_key(std::move(rec)));
        return {};
      }
      case detail::record_op::remove: {
        uuid id;
        RUVLLM_TRY_ASSIGN(id.hi, b.read<std::uint64_t>("id"));
        RUVLLM_TRY_ASSIGN(id.lo, b.read<std::uint64_t>("id"));
        return g.remove(id);
      }
      case detail::record_op::link:
      case detail::record_op::unlink: {
        uuid from, to;
        RUVLLM_TRY_ASSIGN(from.hi, b.read<std::uint64_t>("edge"));
        RUVLLM_TRY_ASSIGN(from.lo, b.read<std::uint64_t>("edge"));
        RUVLLM_TRY_ASSIGN(to.hi, b.read<std::uint64_t>("edge"));
        RUVLLM_TRY_ASSIGN(to.lo, b.read<std::uint64_t>("edge"));
        RUVLLM_TRY_ASSIGN(auto t, b.read<std::uint8_t>("edge type"));
        RUVLLM_TRY_ASSIGN(auto w, b.read<float>("edge weight"));
        if (t < 1 || t > 4) return b.fail(errc::corrupt_data, "edge type ", t);
        if (static_cast<detail::record_op>(type) == detail::record_op::link)
          return g.link(from, to, static_cast<edge_type>(t), w);
        return g.remove_edge(from, to, static_cast<edge_type>(t));
      }
    }
    return make_error(errc::corrupt_data, "unknown record operation ", type);
  }

  std::string dir_;
  std::unique_ptr<vector_store> vectors_;
  std::unique_ptr<record_graph> graph_;
  write_ahead_log log_;
  std::vector<std::byte> payload_;
  std::unique_ptr<locks> locks_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_MEMORY_STORE_HPP
