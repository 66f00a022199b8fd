#ifndef RUVLLM_STORE_POLICY_STORE_HPP
#define RUVLLM_STORE_POLICY_STORE_HPP

// policy_store<Store>: the policy memory of the engine (Ruvector's role A):
// what the learning loops learned, persisted so that a restarted or a
// different engine starts from it. A policy has a type (pattern, router
// checkpoint, quantization threshold, EWC anchor, or an application code),
// a parameter vector, a confidence in [0, 1], an optional Fisher diagonal
// (EWC++ importance of each parameter), the loop that produced it
// (instant, background, deep, federated) and an embedding; the engine asks
// "the policies of type T nearest to this context with confidence >= c".
//
// Storage: one record per policy in a memory_store (kind policy; group =
// the type, so listing a type walks the (kind, group) index; time = last
// update; attribute "confidence", which search filters read; payload =
// source, parameters and Fisher diagonal as raw little-endian floats) and
// its embedding in one vector space (role_space::policy by default). Every
// mutation is one logged batch of the store: durable, atomic, and a
// rejected call changes nothing. Updates are read-modify-write under the
// store's writer mutex (memory_store::modify), so concurrent updates of
// one policy do not lose each other.
//
// Thread-safety: the store's (any thread; queries concurrent with one
// writer). The policy_store holds only the store pointer and its options.
// Errors: invalid_argument (non-finite or out-of-range values, dimension
// mismatch, Fisher length), already_exists, not_found, corrupt_data (a
// record that is not a valid policy), io_error. Allocation: every call
// allocates (records, results); search allocates its result.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/store/memory_store.hpp"
#include "ruvllm/store/records.hpp"

namespace ruvllm::store {

/// What a policy is. Values other than the named ones are allowed
/// (application-defined types); the named ones are the engine's.
enum class policy_type : std::uint16_t {
  pattern = 1,       // a reasoning-bank pattern (centroid and what worked)
  router = 2,        // a router checkpoint (FastGRNN weights)
  quantization = 3,  // a quantization threshold / precision choice
  ewc = 4,           // an EWC++ anchor (parameters + Fisher diagonal)
};

/// The learning loop that produced a policy.
enum class learning_loop : std::uint8_t { instant = 1, background = 2, deep = 3, federated = 4 };

/// A policy as stored (the embedding is passed and read separately).
struct policy {
  uuid id{};
  policy_type type = policy_type::pattern;
  learning_loop source = learning_loop::instant;
  float confidence = 0.0f;   // [0, 1]
  timestamp_ms updated = 0;  // last update, ms UTC
  std::vector<float> parameters;
  std::vector<float> fisher_diagonal;  // empty: none; else one non-negative value per parameter
  friend bool operator==(const policy&, const policy&) = default;
};

/// One search result.
struct policy_hit {
  uuid id{};
  policy_type type = policy_type::pattern;
  float confidence = 0.0f;
  float distance = 0.0f;
};

/// Options of a policy_store.
struct policy_store_options {
  /// The store's vector space of policy embeddings.
  std::uint32_t space = role_space::policy;
};

/// Policy memory over a memory_store; see the file comment.
/// Template parameter: Store, a memory_store<Metric, Precision, Backend>.
template <class Store>
class policy_store {
 public:
  /// A policy store over store (which must outlive it). Errors:
  /// invalid_argument (the space does not exist).
  [[nodiscard]] static result<policy_store> open(Store& store, policy_store_options options = {}) {
    if (options.space >= store.space_count())
      return make_error(errc::invalid_argument, "policy space ", options.space, " >= the store's space count ",
                        store.space_count());
    return policy_store(store, options);
  }

  /// Stores a new policy with its embedding (empty: not found by search).
  /// Errors: already_exists, invalid_argument, io_error.
  [[nodiscard]] result<void> insert(const policy& p, std::span<const float> embedding = {}) {
    RUVLLM_TRY(check(p));
    const embedding_ref e{options_.space, embedding};
    RUVLLM_TRY(store_->insert(to_record(p), as_span(e)));
    return {};
  }

  /// Replaces a stored policy (type, source, confidence, parameters, Fisher
  /// diagonal, update time) and, when given, its embedding. Errors:
  /// not_found, invalid_argument, io_error.
  [[nodiscard]] result<void> update(const policy& p, std::span<const float> embedding = {}) {
    RUVLLM_TRY(check(p));
    const embedding_ref e{options_.space, embedding};
    return store_->modify(
        p.id,
        [&](record& r) -> result<void> {
          if (r.kind != record_kind::policy) return not_a_policy(p.id);
          r = to_record(p);
          return {};
        },
        as_span(e));
  }

  /// Sets a policy's confidence (and its update time). Errors: not_found,
  /// invalid_argument (not finite or outside [0, 1]), io_error.
  [[nodiscard]] result<void> set_confidence(const uuid& id, float confidence, timestamp_ms now) {
    RUVLLM_TRY(check_confidence(confidence));
    return store_->modify(id, [&](record& r) -> result<void> {
      if (r.kind != record_kind::policy) return not_a_policy(id);
      r.set(confidence_attribute, static_cast<double>(confidence));
      r.time = now;
      return {};
    });
  }

  /// Replaces a policy's parameters and Fisher diagonal (empty: none) and
  /// sets its update time. Errors: as update.
  [[nodiscard]] result<void> set_parameters(const uuid& id, std::span<const float> parameters,
                                            std::span<const float> fisher_diagonal, timestamp_ms now) {
    RUVLLM_TRY(check_vectors(parameters, fisher_diagonal));
    return store_->modify(id, [&](record& r) -> result<void> {
      if (r.kind != record_kind::policy) return not_a_policy(id);
      RUVLLM_TRY_ASSIGN(auto p, from_record(r));
      p.parameters.assign(parameters.begin(), parameters.end());
      p.fisher_diagonal.assign(fisher_diagonal.begin(), fisher_diagonal.end());
      p.updated = now;
      r = to_record(p);
      return {};
    });
  }

  /// The policy with id. Errors: not_found, corrupt_data (not a policy).
  [[nodiscard]] result<policy> get(const uuid& id) const {
    return store_->read([&](const record_graph& g) -> result<policy> {
      const record* r = g.get(id);
      if (r == nullptr) return make_error(errc::not_found, "policy ", to_string(id));
      if (r->kind != record_kind::policy) return not_a_policy(id);
      return from_record(*r);
    });
  }

  /// Copies a policy's embedding (as stored: normalized for cosine) into
  /// out. Errors: not_found (no policy or no embedding), invalid_argument.
  [[nodiscard]] result<void> embedding(const uuid& id, std::span<float> out) const {
    return store_->embedding(options_.space, id, out);
  }

  /// Every policy of a type, by id. Errors: corrupt_data.
  [[nodiscard]] result<std::vector<policy>> list(policy_type type) const {
    return store_->read([&](const record_graph& g) -> result<std::vector<policy>> {
      std::vector<policy> out;
      std::optional<error> failure;
      g.visit_group(record_kind::policy, static_cast<std::uint64_t>(type), [&](const record& r) {
        auto p = from_record(r);
        if (!p) {
          failure = std::move(p).error();
          return false;
        }
        out.push_back(std::move(*p));
        return true;
      });
      if (failure) return std::move(*failure);
      return out;
    });
  }

  /// The k policies nearest to query, of `type` (nullopt: any type) with
  /// confidence >= min_confidence, closest first. Errors: invalid_argument
  /// (query dimension).
  [[nodiscard]] result<std::vector<policy_hit>> search(std::optional<policy_type> type, std::span<const float> query,
                                                       std::size_t k, float min_confidence = 0.0f,
                                                       search_params params = {}) const {
    std::vector<policy_hit> out;
    out.reserve(k);
    const auto group = type ? static_cast<std::uint64_t>(*type) : 0;
    // Every stored policy has a confidence in [0, 1], so a threshold of 0 or
    // less accepts them all without the attribute lookup (the filter runs on
    // every candidate of the search, thousands for an exact scan).
    const bool by_confidence = min_confidence > 0.0f;
    auto accept = [&](const record& r) {
      return r.kind == record_kind::policy && (!type || r.group == group) &&
             (!by_confidence || r.number(confidence_attribute).value_or(-1.0) >= min_confidence);
    };
    auto emit = [&](const record& r, float d) {
      out.push_back(policy_hit{r.id, static_cast<policy_type>(r.group),
                               static_cast<float>(r.number(confidence_attribute).value_or(0.0)), d});
    };
    RUVLLM_TRY(store_->visit_nearest(options_.space, query, k, accept, emit, params));
    return out;
  }

  /// Removes a policy, its edges and its embedding. Errors: not_found, io_error.
  [[nodiscard]] result<void> remove(const uuid& id) {
    return store_->commit_with([&](const record_graph& g, memory_batch& b) -> result<void> {
      const record* r = g.get(id);
      if (r == nullptr) return make_error(errc::not_found, "policy ", to_string(id));
      if (r->kind != record_kind::policy) return not_a_policy(id);
      b.remove(id);
      return {};
    });
  }

  /// Policies stored (all types).
  [[nodiscard]] std::size_t size() const {
    return store_->read([](const record_graph& g) { return g.count(record_kind::policy); });
  }

  [[nodiscard]] const policy_store_options& options() const noexcept { return options_; }

  static constexpr const char* confidence_attribute = "confidence";

 private:
  static constexpr std::uint8_t payload_format = 1;

  policy_store(Store& store, policy_store_options options) noexcept : store_(&store), options_(options) {}

  [[nodiscard]] static error not_a_policy(const uuid& id) {
    return make_error(errc::invalid_argument, "record ", to_string(id), " is not a policy");
  }

  [[nodiscard]] static result<void> check_confidence(float c) {
    if (!(c >= 0.0f && c <= 1.0f))  // NaN fails both comparisons
      return make_error(errc::invalid_argument, "policy confidence ", c, " is not in [0, 1]");
    return {};
  }
  [[nodiscard]] static result<void> check_vectors(std::span<const float> parameters, std::span<const float> fisher) {
    for (std::size_t i = 0; i < parameters.size(); ++i)
      if (!std::isfinite(parameters[i]))
        return make_error(errc::invalid_argument, "policy parameter ", i, " is not finite (", parameters[i], ")");
    if (!fisher.empty() && fisher.size() != parameters.size())
      return make_error(errc::invalid_argument, "Fisher diagonal of ", fisher.size(), " values for ", parameters.size(),
                        " parameters");
    for (std::size_t i = 0; i < fisher.size(); ++i)
      if (!(std::isfinite(fisher[i]) && fisher[i] >= 0.0f))
        return make_error(errc::invalid_argument, "Fisher diagonal value ", i, " is ", fisher[i],
                          " (must be finite and >= 0)");
    // Four bytes per value plus framing must fit one log record.
    if ((parameters.size() + fisher.size()) * sizeof(float) + 64 > wal_max_payload)
      return make_error(errc::invalid_argument, "policy of ", parameters.size(), " parameters exceeds ",
                        wal_max_payload, " bytes");
    return {};
  }
  [[nodiscard]] static result<void> check(const policy& p) {
    if (p.id.is_nil()) return make_error(errc::invalid_argument, "policy id is nil");
    RUVLLM_TRY(check_confidence(p.confidence));
    const auto src = static_cast<std::uint8_t>(p.source);
    if (src < 1 || src > 4) return make_error(errc::invalid_argument, "policy source loop ", src, " is not 1 .. 4");
    return check_vectors(p.parameters, p.fisher_diagonal);
  }

  // No embedding when its vector is empty.
  [[nodiscard]] static std::span<const embedding_ref> as_span(const embedding_ref& e) noexcept {
    return e.vector.empty() ? std::span<const embedding_ref>{} : std::span<const embedding_ref>(&e, 1);
  }

  [[nodiscard]] static record to_record(const policy& p) {
    record r;
    r.id = p.id;
    r.kind = record_kind::policy;
    r.time = p.updated;
    r.group = static_cast<std::uint64_t>(p.type);
    r.set(confidence_attribute, static_cast<double>(p.confidence));
    r.payload.reserve(16 + (p.parameters.size() + p.fisher_diagonal.size()) * sizeof(float));
    detail::put_bytes(r.payload, payload_format);
    detail::put_bytes(r.payload, static_cast<std::uint8_t>(p.source));
    detail::put_floats(r.payload, p.parameters);
    detail::put_floats(r.payload, p.fisher_diagonal);
    return r;
  }

  [[nodiscard]] static result<policy> from_record(const record& r) {
    policy p;
    p.id = r.id;
    p.type = static_cast<policy_type>(r.group);
    p.updated = r.time;
    p.confidence = static_cast<float>(r.number(confidence_attribute).value_or(-1.0));
    byte_reader b(r.payload, "policy payload");
    auto fail = [&](const error& e) {
      return make_error(errc::corrupt_data, "policy ", to_string(r.id), ": ", e.message());
    };
    auto format = b.read<std::uint8_t>("format");
    if (!format) return fail(format.error());
    if (*format != payload_format) return fail(make_error(errc::corrupt_data, "payload format ", *format));
    auto source = b.read<std::uint8_t>("source");
    if (!source) return fail(source.error());
    p.source = static_cast<learning_loop>(*source);
    if (auto ok = detail::read_floats(b, p.parameters, "parameters"); !ok) return fail(ok.error());
    if (auto ok = detail::read_floats(b, p.fisher_diagonal, "Fisher diagonal"); !ok) return fail(ok.error());
    if (b.remaining() != 0) return fail(make_error(errc::corrupt_data, b.remaining(), " trailing bytes"));
    if (auto ok = check(p); !ok) return fail(ok.error());
    return p;
  }

  Store* store_;
  policy_store_options options_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_POLICY_STORE_HPP
