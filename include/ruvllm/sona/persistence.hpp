#ifndef RUVLLM_SONA_PERSISTENCE_HPP
#define RUVLLM_SONA_PERSISTENCE_HPP

// What SONA learns, kept in the engine's store so it survives a restart:
//
// store_sink<Store>, the Sink of sona_loops over a store::memory_store:
//   instant     scale_edge: the session -> pattern edge (edge_type::
//               session_pattern) times 1 +/- edge_step, buffered in memory
//               (the factors of one edge multiply) so the instant loop does
//               no I/O; flush(), which the loops call every
//               sink_flush_interval_ms, applies the buffer as one logged
//               batch: an edge that does not exist yet starts at
//               initial_edge_weight, one whose session or pattern has no
//               record is skipped and counted;
//   background  save_router: the router checkpoint as a policy of type
//               router (parameters = the FastGRNN weights, Fisher diagonal
//               = the running EWC++ estimate) and, once anchored, the EWC++
//               anchor as a policy of type ewc (parameters = the anchor,
//               Fisher diagonal = the consolidated importance);
//   deep        save_patterns: every pattern as a policy of type pattern
//               under the pattern's own id (so graph edges to it stay
//               valid), embedding = centroid, confidence = mean quality,
//               parameters = [count, best model, per-model quality (models),
//               per-model count (models), pattern parameters (params_dim),
//               centroid (dim)] -- the centroid again because the embedding
//               is stored normalized (cosine) and in the space's precision,
//               and k-means needs it as it was;
//               patterns the bank no longer has are removed;
//               retain: witness entries older than witness_retention_ms
//               (by the wall clock) are removed.
// restore(loops) reads them back into a fresh sona_loops of the same shape:
// router weights and EWC++ state (the Adam moments restart), patterns.
// Counts are stored as floats: exact below 2^24, approximate beyond (they
// are statistics). Each save is a sequence of durable single-policy writes;
// a crash midway leaves every stored policy whole, some from the previous
// save.
//
// store_adapter_backing<Store>, the Backing of pooled_adapters: an evicted
// adapter is one generic record (group "sona adapter", attribute "version",
// payload = its parameters as little-endian floats) under an id derived from
// the node id and the adapter id.
//
// Ids: the router, EWC++ and adapter records of a node have ids derived from
// store_sink_options::node, so two engines sharing a store keep theirs apart
// by using different node ids. Thread-safety: the store's; a sink belongs to
// the loops that tick it. Allocation: every call allocates (records).

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ruvllm/core/error.hpp"
#include "ruvllm/sona/lora.hpp"
#include "ruvllm/sona/reasoning_bank.hpp"
#include "ruvllm/sona/router.hpp"
#include "ruvllm/store/policy_store.hpp"
#include "ruvllm/store/records.hpp"
#include "ruvllm/store/witness_log.hpp"

namespace ruvllm::sona {

/// Settings of a store_sink.
struct store_sink_options {
  /// This engine's identity in the store (derives the ids of its router,
  /// EWC++ and adapter records).
  store::uuid node{0x5eed'0000'0000'4000ull, 0x8000'0000'0000'0001ull};
  /// The deep loop removes witness entries older than this (0: keep all).
  std::int64_t witness_retention_ms = 30ll * 24 * 3600 * 1000;
  /// Weight of a session -> pattern edge the instant loop meets for the first time.
  float initial_edge_weight = 1.0f;
  /// Distinct edges buffered before scale_edge flushes by itself.
  std::size_t max_pending_edges = 4096;
};

/// Counters of a store_sink.
struct store_sink_stats {
  std::uint64_t edges_scaled = 0;
  std::uint64_t edges_created = 0;
  std::uint64_t edges_skipped = 0;  ///< a session or pattern without a record (counted at flush)
  std::uint64_t router_saves = 0;
  std::uint64_t pattern_saves = 0;
  std::uint64_t witness_removed = 0;
};

namespace detail {
// A record id derived from a node id and a small tag (a version-4 UUID, so
// derived ids look like any other).
[[nodiscard]] inline store::uuid derived_id(const store::uuid& node, std::uint64_t tag) noexcept {
  std::uint64_t s = node.hi ^ (node.lo * 0x9E3779B97F4A7C15ull) ^ (tag * 0xD1B54A32D192ED03ull);
  const std::uint64_t hi = splitmix64(s), lo = splitmix64(s);
  return store::make_uuid_v4(hi, lo);
}
inline constexpr std::uint64_t router_tag = 1, ewc_tag = 2, adapter_tag_base = 1ull << 32;
[[nodiscard]] inline store::timestamp_ms wall_clock_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace detail

/// The store-backed Sink of sona_loops; see the file comment. Store is a
/// store::memory_store; the store (and the witness log, when given) must
/// outlive the sink.
template <class Store>
class store_sink {
 public:
  using policies_type = store::policy_store<Store>;
  using witnesses_type = store::witness_log<Store>;

  /// Errors: the policy store's (e.g. the store lacks a policy space).
  [[nodiscard]] static result<store_sink> open(Store& store, store_sink_options options = {},
                                               witnesses_type* witnesses = nullptr) {
    RUVLLM_TRY_ASSIGN(auto policies, policies_type::open(store));
    return store_sink(store, std::move(policies), options, witnesses);
  }

  [[nodiscard]] const store_sink_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] const store_sink_options& options() const noexcept { return o_; }
  [[nodiscard]] store::uuid router_id() const noexcept { return detail::derived_id(o_.node, detail::router_tag); }
  [[nodiscard]] store::uuid ewc_id() const noexcept { return detail::derived_id(o_.node, detail::ewc_tag); }

  // ---- the Sink interface (sona_loops) ---------------------------------------

  [[nodiscard]] result<void> scale_edge(const store::uuid& session, const store::uuid& pattern, float factor) {
    auto [it, fresh] = pending_.try_emplace(edge_key{session, pattern}, 1.0f);
    it->second *= factor;
    if (pending_.size() >= o_.max_pending_edges) return flush();
    return {};
  }

  /// Applies the buffered edge scalings as one logged batch of the store.
  /// Errors: the store's (the buffer is kept for the next flush).
  [[nodiscard]] result<void> flush() {
    if (pending_.empty()) return {};
    constexpr auto type = store::edge_type::session_pattern;
    store_sink_stats counted{};
    RUVLLM_TRY(store_->commit_with([&](const store::record_graph& g, store::memory_batch& b) -> result<void> {
      counted = {};
      for (const auto& [key, factor] : pending_) {
        if (g.edge_weight(key.session, key.pattern, type)) {
          b.scale_weight(key.session, key.pattern, type, factor);
          ++counted.edges_scaled;
        } else if (g.get(key.session) != nullptr && g.get(key.pattern) != nullptr) {
          b.link(key.session, key.pattern, type, o_.initial_edge_weight * factor);
          ++counted.edges_created;
        } else {
          ++counted.edges_skipped;
        }
      }
      return {};
    }));
    stats_.edges_scaled += counted.edges_scaled;
    stats_.edges_created += counted.edges_created;
    stats_.edges_skipped += counted.edges_skipped;
    pending_.clear();
    return {};
  }
  /// Edges with buffered scalings.
  [[nodiscard]] std::size_t pending_edges() const noexcept { return pending_.size(); }

  [[nodiscard]] result<void> save_router(const fastgrnn_router<float>& router) {
    RUVLLM_TRY(flush());
    const auto now = detail::wall_clock_ms();
    const auto& e = router.ewc_state();
    store::policy p;
    p.id = router_id();
    p.type = store::policy_type::router;
    p.source = store::learning_loop::background;
    p.confidence = 1.0f;
    p.updated = now;
    p.parameters.assign(router.parameters().begin(), router.parameters().end());
    p.fisher_diagonal.assign(e.running_fisher().begin(), e.running_fisher().end());
    RUVLLM_TRY(upsert(p, {}));
    if (e.anchored()) {
      p.id = ewc_id();
      p.type = store::policy_type::ewc;
      p.parameters.assign(e.anchor().begin(), e.anchor().end());
      p.fisher_diagonal.assign(e.penalty_fisher().begin(), e.penalty_fisher().end());
      RUVLLM_TRY(upsert(p, {}));
    }
    ++stats_.router_saves;
    return {};
  }

  template <Backend B>
  [[nodiscard]] result<void> save_patterns(const reasoning_bank<B>& bank) {
    const auto now = detail::wall_clock_ms();
    std::unordered_set<store::uuid, store::uuid_hash> kept;
    store::policy p;
    p.type = store::policy_type::pattern;
    p.source = store::learning_loop::deep;
    p.updated = now;
    for (const pattern& pt : bank.patterns()) {
      p.id = pt.id;
      p.confidence = pt.mean_quality;
      encode_pattern(pt, p.parameters);
      RUVLLM_TRY(upsert(p, pt.centroid));
      kept.insert(pt.id);
    }
    RUVLLM_TRY_ASSIGN(const auto stored, policies_.list(store::policy_type::pattern));
    for (const store::policy& old : stored)
      if (kept.find(old.id) == kept.end()) RUVLLM_TRY(policies_.remove(old.id));
    ++stats_.pattern_saves;
    return {};
  }

  [[nodiscard]] result<void> retain(std::uint64_t) {
    if (witnesses_ == nullptr || o_.witness_retention_ms <= 0) return {};
    RUVLLM_TRY_ASSIGN(const std::size_t removed,
                      witnesses_->remove_older_than(detail::wall_clock_ms() - o_.witness_retention_ms));
    stats_.witness_removed += removed;
    return {};
  }

  // ---- restoring -----------------------------------------------------------------

  /// Loads the stored router checkpoint (and EWC++ anchor) into router,
  /// which must have the stored shape. Returns false, changing nothing, when
  /// the store holds no checkpoint. Errors (router unchanged): a checkpoint
  /// of another shape, corrupt values.
  [[nodiscard]] result<bool> load_router(fastgrnn_router<float>& router) const {
    auto stored = policies_.get(router_id());
    if (!stored) {
      if (stored.error().code() == errc::not_found) return false;
      return std::move(stored).error();
    }
    const store::policy& p = *stored;
    const std::size_t n = router.parameter_count();
    if (p.parameters.size() != n || p.fisher_diagonal.size() != n)
      return make_error(errc::invalid_argument, "stored router checkpoint has ", p.parameters.size(),
                        " parameters, this router ", n);
    std::vector<float> anchor(n, 0.0f), penalty(n, 0.0f);
    bool anchored = false;
    if (auto e = policies_.get(ewc_id()); e) {
      if (e->parameters.size() != n || e->fisher_diagonal.size() != n)
        return make_error(errc::invalid_argument, "stored EWC++ anchor has ", e->parameters.size(),
                          " parameters, this router ", n);
      anchor = e->parameters;
      penalty = e->fisher_diagonal;
      anchored = true;
    } else if (e.error().code() != errc::not_found) {
      return std::move(e).error();
    }
    const std::vector<float> zeros(n, 0.0f);
    const std::span<const std::uint8_t> mask = router.sparsity_mask();
    RUVLLM_TRY(router.restore(p.parameters, std::vector<std::uint8_t>(mask.begin(), mask.end()), zeros, zeros, 0,
                              p.fisher_diagonal, penalty, anchor, anchored, anchored ? 1 : 0, router.version() + 1));
    return true;
  }

  /// Replaces bank's patterns with the stored ones. Returns how many.
  /// Errors (bank unchanged): a stored pattern of another shape.
  template <Backend B>
  [[nodiscard]] result<std::size_t> load_patterns(reasoning_bank<B>& bank) const {
    RUVLLM_TRY_ASSIGN(const auto stored, policies_.list(store::policy_type::pattern));
    std::vector<pattern> patterns;
    patterns.reserve(stored.size());
    const auto& o = bank.options();
    for (const store::policy& p : stored) {
      pattern pt;
      pt.id = p.id;
      pt.mean_quality = p.confidence;
      RUVLLM_TRY(decode_pattern(p.parameters, o, pt));
      patterns.push_back(std::move(pt));
    }
    const std::size_t n = patterns.size();
    RUVLLM_TRY(bank.restore(std::move(patterns), bank.consolidations()));
    return n;
  }

  /// Restores a fresh sona_loops from the store (router and patterns) and
  /// publishes the router. Returns false when the store holds no router
  /// checkpoint (patterns are loaded either way).
  template <class Loops>
  [[nodiscard]] result<bool> restore(Loops& loops) const {
    auto router = loops.router();  // loaded into copies: the loops change only if both load
    RUVLLM_TRY_ASSIGN(auto bank, std::remove_cvref_t<decltype(loops.bank())>::create(loops.bank().options()));
    RUVLLM_TRY_ASSIGN(const bool have_router, load_router(router));
    RUVLLM_TRY(load_patterns(bank));
    RUVLLM_TRY(loops.adopt(std::move(router), std::move(bank)));
    return have_router;
  }

 private:
  store_sink(Store& store, policies_type policies, store_sink_options o, witnesses_type* witnesses)
      : store_(&store), policies_(std::move(policies)), o_(o), witnesses_(witnesses) {
    pending_.reserve(o_.max_pending_edges);  // the instant loop then inserts without rehashing
  }

  struct edge_key {
    store::uuid session, pattern;
    friend bool operator==(const edge_key&, const edge_key&) = default;
  };
  struct edge_key_hash {
    std::size_t operator()(const edge_key& k) const noexcept {
      return store::uuid_hash{}(k.session) * 31 ^ store::uuid_hash{}(k.pattern);
    }
  };

  [[nodiscard]] result<void> upsert(const store::policy& p, std::span<const float> embedding) {
    auto updated = policies_.update(p, embedding);
    if (updated || updated.error().code() != errc::not_found) return updated;
    return policies_.insert(p, embedding);
  }

  static void encode_pattern(const pattern& pt, std::vector<float>& out) {
    out.clear();
    out.push_back(static_cast<float>(pt.count));
    out.push_back(static_cast<float>(pt.best_model));
    out.insert(out.end(), pt.model_quality.begin(), pt.model_quality.end());
    for (std::uint64_t c : pt.model_count) out.push_back(static_cast<float>(c));
    out.insert(out.end(), pt.params.begin(), pt.params.end());
    out.insert(out.end(), pt.centroid.begin(), pt.centroid.end());
  }

  [[nodiscard]] static result<void> decode_pattern(const std::vector<float>& in, const reasoning_bank_options& o,
                                                   pattern& pt) {
    const std::size_t want = 2 + 2 * o.models + o.params_dim + o.dim;
    if (in.size() != want)
      return make_error(errc::invalid_argument, "stored pattern ", store::to_string(pt.id), " has ", in.size(),
                        " parameters, a bank of dim ", o.dim, ", ", o.models, " models and ", o.params_dim,
                        " parameters needs ", want);
    const auto count = [](float v) -> std::uint64_t { return v >= 0.0f ? static_cast<std::uint64_t>(v) : 0; };
    pt.count = count(in[0]);
    pt.best_model = in[1] >= 0.0f ? static_cast<std::uint32_t>(in[1]) : 0;
    pt.model_quality.assign(in.begin() + 2, in.begin() + 2 + static_cast<std::ptrdiff_t>(o.models));
    pt.model_count.clear();
    for (std::size_t m = 0; m < o.models; ++m) pt.model_count.push_back(count(in[2 + o.models + m]));
    const auto params_at = in.begin() + 2 + 2 * static_cast<std::ptrdiff_t>(o.models);
    pt.params.assign(params_at, params_at + static_cast<std::ptrdiff_t>(o.params_dim));
    pt.centroid.assign(params_at + static_cast<std::ptrdiff_t>(o.params_dim), in.end());
    return {};  // the bank checks the ranges (restore -> check_pattern)
  }

  Store* store_;
  policies_type policies_;
  store_sink_options o_;
  witnesses_type* witnesses_ = nullptr;
  store_sink_stats stats_{};
  std::unordered_map<edge_key, float, edge_key_hash> pending_;  // buffered edge factors
};

/// The store-backed Backing of pooled_adapters; see the file comment.
template <class Store>
class store_adapter_backing {
 public:
  explicit store_adapter_backing(Store& store, store::uuid node = store_sink_options{}.node) noexcept
      : store_(&store), node_(node) {}

  [[nodiscard]] result<void> save(std::uint32_t id, std::string_view, const lora_options&,
                                  std::span<const float> parameters, std::uint64_t version) {
    store::record r;
    r.id = record_id(id);
    r.kind = store::record_kind::generic;
    r.group = group;
    r.time = detail::wall_clock_ms();
    r.set(version_attribute, static_cast<std::int64_t>(version));
    r.payload.resize(parameters.size_bytes());
    if (!parameters.empty()) std::memcpy(r.payload.data(), parameters.data(), parameters.size_bytes());
    if (store_->get(r.id)) return store_->replace(std::move(r));
    RUVLLM_TRY(store_->insert(std::move(r)));
    return {};
  }

  [[nodiscard]] result<std::uint64_t> load(std::uint32_t id, std::string_view name, std::span<float> parameters) {
    const auto r = store_->get(record_id(id));
    if (!r || r->kind != store::record_kind::generic || r->group != group)
      return make_error(errc::not_found, "adapter '", name, "' (id ", id, ") has no saved parameters");
    if (r->payload.size() != parameters.size_bytes())
      return make_error(errc::corrupt_data, "adapter '", name, "' was saved with ", r->payload.size(),
                        " bytes of parameters, not ", parameters.size_bytes());
    const auto version = r->number(version_attribute);
    if (!version || *version < 0) return make_error(errc::corrupt_data, "adapter '", name, "' has no valid version");
    if (!parameters.empty()) std::memcpy(parameters.data(), r->payload.data(), parameters.size_bytes());
    return static_cast<std::uint64_t>(*version);
  }

  [[nodiscard]] result<void> erase(std::uint32_t id, std::string_view) {
    if (!store_->get(record_id(id))) return {};
    return store_->remove(record_id(id));
  }

  static constexpr std::uint64_t group = 0x5a0a'da97;  // "sona adapter"
  static constexpr const char* version_attribute = "version";

 private:
  [[nodiscard]] store::uuid record_id(std::uint32_t id) const noexcept {
    return detail::derived_id(node_, detail::adapter_tag_base + id);
  }

  Store* store_;
  store::uuid node_;
};

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_PERSISTENCE_HPP
