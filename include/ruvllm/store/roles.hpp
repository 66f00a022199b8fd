#ifndef RUVLLM_STORE_ROLES_HPP
#define RUVLLM_STORE_ROLES_HPP

// The three roles Ruvector plays for the engine, as thin typed views over
// one memory_store (so policies, sessions and witness entries share one
// durable directory, one index and one graph, and relate through edges):
//
//   policy_store<Store>  learned policies/patterns with an embedding and a
//                        quality; "nearest good patterns" lookups
//   session_index<Store> sessions by embedding and by time, for recovery
//   witness_log<Store>   append-only audit entries linked to their session
//                        and pattern (session_witness, pattern_witness edges)
//
// Each record carries a "role" attribute, so a role's searches see only its
// own records. The facades hold a reference to the store and no state of
// their own; their thread-safety is the store's.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ruvllm/core/error.hpp"
#include "ruvllm/store/records.hpp"

namespace ruvllm::store {

namespace detail {
inline constexpr const char* role_attribute = "role";

template <class Store>
[[nodiscard]] result<uuid> add_role_record(Store& store, const char* role, uuid id, timestamp_ms time,
                                           std::span<const float> embedding, std::optional<double> quality) {
  record r;
  r.id = id;
  r.time = time;
  r.set(role_attribute, std::string(role));
  if (quality) r.set("quality", *quality);
  RUVLLM_TRY(store.add(std::move(r), embedding));
  return id;
}

inline bool has_role(const record& r, const char* role) {
  const auto* v = r.find(role_attribute);
  const auto* s = v == nullptr ? nullptr : std::get_if<std::string>(v);
  return s != nullptr && *s == role;
}
}  // namespace detail

/// Policy memory: patterns with embeddings and a quality in [0, 1].
template <class Store>
class policy_store {
 public:
  explicit policy_store(Store& store) noexcept : store_(&store) {}

  /// Stores a policy. Errors: the store's.
  [[nodiscard]] result<uuid> add(uuid id, timestamp_ms time, std::span<const float> embedding, double quality) {
    return detail::add_role_record(*store_, "policy", id, time, embedding, quality);
  }
  /// The k policies nearest to query with quality >= min_quality.
  [[nodiscard]] auto nearest(std::span<const float> query, std::size_t k, double min_quality = 0.0) const {
    return store_->search(query, k, [min_quality](const record& r) {
      return detail::has_role(r, "policy") && r.number("quality").value_or(-1.0) >= min_quality;
    });
  }
  /// Sets a policy's quality (e.g. after feedback).
  [[nodiscard]] result<void> set_quality(const uuid& id, double quality) {
    return store_->set_attribute(id, "quality", quality);
  }

 private:
  Store* store_;
};

/// Session index: sessions by embedding and by time.
template <class Store>
class session_index {
 public:
  explicit session_index(Store& store) noexcept : store_(&store) {}

  /// Records a session. Errors: the store's.
  [[nodiscard]] result<uuid> add(uuid id, timestamp_ms time, std::span<const float> embedding) {
    return detail::add_role_record(*store_, "session", id, time, embedding, std::nullopt);
  }
  /// The k sessions nearest to query.
  [[nodiscard]] auto similar(std::span<const float> query, std::size_t k) const {
    return store_->search(query, k, [](const record& r) { return detail::has_role(r, "session"); });
  }
  /// Sessions that started in [from, to), oldest first.
  [[nodiscard]] std::vector<uuid> between(timestamp_ms from, timestamp_ms to) const {
    return store_->read([&](const record_graph& g) {
      std::vector<uuid> out;
      for (const uuid& id : g.in_time_range(from, to))
        if (detail::has_role(*g.get(id), "session")) out.push_back(id);
      return out;
    });
  }
  /// Records that a session used a pattern (edge weight = how much it helped).
  [[nodiscard]] result<void> used(const uuid& session, const uuid& pattern, float weight) {
    return store_->link(session, pattern, edge_type::session_pattern, weight);
  }

 private:
  Store* store_;
};

/// Witness log: append-only entries tied to a session and, optionally, a pattern.
template <class Store>
class witness_log {
 public:
  explicit witness_log(Store& store) noexcept : store_(&store) {}

  /// Appends an entry with attributes (and no embedding). Errors: the store's.
  [[nodiscard]] result<uuid> append(uuid id, timestamp_ms time, const uuid& session, std::optional<uuid> pattern,
                                    std::vector<std::pair<std::string, attribute_value>> attributes = {}) {
    record r;
    r.id = id;
    r.time = time;
    for (auto& [name, value] : attributes) r.set(name, std::move(value));
    r.set(detail::role_attribute, std::string("witness"));
    RUVLLM_TRY(store_->add(std::move(r)));
    RUVLLM_TRY(store_->link(id, session, edge_type::session_witness, 1.0f));
    if (pattern) RUVLLM_TRY(store_->link(id, *pattern, edge_type::pattern_witness, 1.0f));
    return id;
  }
  /// Entries in [from, to), oldest first.
  [[nodiscard]] std::vector<uuid> between(timestamp_ms from, timestamp_ms to) const {
    return store_->read([&](const record_graph& g) {
      std::vector<uuid> out;
      for (const uuid& id : g.in_time_range(from, to))
        if (detail::has_role(*g.get(id), "witness")) out.push_back(id);
      return out;
    });
  }
  /// Entries of one session.
  [[nodiscard]] std::vector<uuid> of_session(const uuid& session) const {
    return store_->read([&](const record_graph& g) {
      std::vector<uuid> out;
      for (const edge& e : g.neighbours(session, edge_type::session_witness, direction::in)) out.push_back(e.from);
      return out;
    });
  }

 private:
  Store* store_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_ROLES_HPP
