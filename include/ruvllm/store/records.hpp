#ifndef RUVLLM_STORE_RECORDS_HPP
#define RUVLLM_STORE_RECORDS_HPP

// record_graph: the store's records and the typed, weighted relations
// between them (session <-> pattern <-> witness entry).
//
// A record has a 128-bit UUID, a kind (which role owns it: policy, session,
// witness entry, or generic), a millisecond UTC timestamp, a 64-bit group
// (the role's partition: a policy's type, a session's user, a witness
// entry's session), a 64-bit vector key (its node in the store's hnsw
// indexes; assigned here, so vector search results map back to records), a
// small typed attribute map (name -> int64, double or string; a sorted
// vector, because records carry a handful of attributes and a flat array
// beats a node-based map at that size) and an opaque payload (the role's
// typed fields, encoded compactly and possibly encrypted by the role).
//
// Secondary indexes, each an ordered set keyed by kind first, so one role's
// range queries never walk another role's records:
//   (kind, time, id)    time ranges, expiry and retention by age
//   (kind, group, id)   a policy type's policies, a user's sessions
//   (kind, value, id)   the one numeric attribute chosen at construction
//                       (e.g. "quality"); NaN values are not indexed
// Range queries are O(log n + hits). Lookup by id or by key is a hash
// lookup. Edges are typed and weighted, kept in an out-list and an in-list
// per record; removing a record removes its edges. Weights are finite:
// link/adjust/scale reject a non-finite weight or result.
//
// filter() turns a predicate over records into the key predicate that
// hnsw_index::search takes, which is how "nearest patterns with quality >
// 0.8 from the last hour" is asked.
//
// Persistence: save() writes a checksummed snapshot atomically (temporary
// file, fsync, rename), streaming it in bounded chunks; load() checks every
// length against the file before use and returns corrupt_data naming the
// file and offset.
//   "RUVRECS1", u32 version 2, u32 CRC-32C of the body, u64 body bytes, body:
//   u64 sequence (the last log record the snapshot holds, see memory_store),
//   u64 next key, u32 indexed-attribute name length + bytes,
//   u64 record count, per record (encode()): u64 id.hi, u64 id.lo, u8 kind,
//     i64 time, u64 group, u64 key, u32 attribute count, per attribute:
//     u32 name length + bytes, u8 type (1 int64, 2 double, 3 string), value
//     (8 bytes, or u32 length + bytes); u32 payload length + bytes
//   u64 edge count, per edge: from (16), to (16), u8 type, f32 weight
//
// Thread-safety: none (the owner serializes, as memory_store does); const
// calls may run concurrently with each other. Allocation: every mutation
// allocates (node-based indexes); lookups by id or key do not; the
// vector-returning queries allocate their result, the visit_* forms do not.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/checksum.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/mapped_file.hpp"
#include "ruvllm/store/file_io.hpp"

namespace ruvllm::store {

/// A 128-bit identifier (RFC 4122 layout when made by make_uuid_v4).
struct uuid {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  friend constexpr auto operator<=>(const uuid&, const uuid&) = default;
  [[nodiscard]] constexpr bool is_nil() const noexcept { return hi == 0 && lo == 0; }
};

/// A version-4 UUID from 128 random bits (callers supply the randomness, so
/// tests are reproducible and the library holds no global generator).
[[nodiscard]] constexpr uuid make_uuid_v4(std::uint64_t random_hi, std::uint64_t random_lo) noexcept {
  return uuid{(random_hi & ~std::uint64_t{0xF000}) | 0x4000,
              (random_lo & ~(std::uint64_t{3} << 62)) | (std::uint64_t{2} << 62)};
}

/// Canonical text form, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
[[nodiscard]] inline std::string to_string(const uuid& id) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 32; ++i) {
    const std::uint64_t word = i < 16 ? id.hi : id.lo;
    out.push_back(hex[(word >> (60 - 4 * (i % 16))) & 0xF]);
    if (i == 7 || i == 11 || i == 15 || i == 19) out.push_back('-');
  }
  return out;
}

struct uuid_hash {
  std::size_t operator()(const uuid& id) const noexcept {
    // v4 UUIDs are random in both words; one multiply mixes hi into lo.
    return static_cast<std::size_t>((id.hi * 0x9E3779B97F4A7C15ull) ^ id.lo);
  }
};

/// Milliseconds since the Unix epoch, UTC.
using timestamp_ms = std::int64_t;

/// Which role owns a record (the first component of every secondary index).
enum class record_kind : std::uint8_t { generic = 0, policy = 1, session = 2, witness = 3 };
inline constexpr std::uint8_t record_kind_count = 4;

/// A typed attribute value.
using attribute_value = std::variant<std::int64_t, double, std::string>;

/// A record: identity, kind, time, group, vector key, attributes (sorted by
/// name) and the owning role's payload.
struct record {
  uuid id{};
  record_kind kind = record_kind::generic;
  timestamp_ms time = 0;
  std::uint64_t group = 0;
  std::uint64_t key = 0;  // assigned by record_graph::insert
  std::vector<std::pair<std::string, attribute_value>> attributes;
  std::vector<std::byte> payload;

  friend bool operator==(const record&, const record&) = default;

  /// The attribute called name, or nullptr.
  [[nodiscard]] const attribute_value* find(std::string_view name) const noexcept {
    auto it = std::lower_bound(attributes.begin(), attributes.end(), name,
                               [](const auto& a, std::string_view n) { return a.first < n; });
    return it != attributes.end() && it->first == name ? &it->second : nullptr;
  }
  /// A numeric attribute as double (int64 converted), or nullopt.
  [[nodiscard]] std::optional<double> number(std::string_view name) const noexcept {
    const attribute_value* v = find(name);
    if (v == nullptr) return std::nullopt;
    if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(v)) return *d;
    return std::nullopt;
  }
  /// Sets (or replaces) an attribute, keeping the names sorted.
  void set(std::string_view name, attribute_value value) {
    auto it = std::lower_bound(attributes.begin(), attributes.end(), name,
                               [](const auto& a, std::string_view n) { return a.first < n; });
    if (it != attributes.end() && it->first == name)
      it->second = std::move(value);
    else
      attributes.emplace(it, std::string(name), std::move(value));
  }
};

/// Relation types between records.
enum class edge_type : std::uint8_t {
  session_pattern = 1,  // a session used a pattern
  pattern_witness = 2,  // a witness entry records a pattern's use
  session_witness = 3,  // a witness entry belongs to a session
  related = 4,          // anything else the engine links
};

/// One directed, typed, weighted edge.
struct edge {
  uuid from{};
  uuid to{};
  edge_type type = edge_type::related;
  float weight = 0.0f;
  friend bool operator==(const edge&, const edge&) = default;
};

/// Which side of an edge a neighbour query follows.
enum class direction : std::uint8_t { out, in, both };

namespace detail {

// Calls fn(x); a bool result false means "stop".
template <class Fn, class T>
bool visit_one(Fn& fn, const T& x) {
  if constexpr (std::is_same_v<std::invoke_result_t<Fn&, const T&>, bool>)
    return fn(x);
  else
    return fn(x), true;
}

template <class T>
void put_bytes(std::vector<std::byte>& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
inline void put_blob(std::vector<std::byte>& out, std::span<const std::byte> bytes) {
  put_bytes(out, static_cast<std::uint32_t>(bytes.size()));
  out.insert(out.end(), bytes.begin(), bytes.end());
}
inline void put_text(std::vector<std::byte>& out, std::string_view s) {
  put_blob(out, std::as_bytes(std::span<const char>(s.data(), s.size())));
}
[[nodiscard]] inline result<std::string_view> read_text(byte_reader& b, std::string_view what = "string") {
  RUVLLM_TRY_ASSIGN(auto n, b.read<std::uint32_t>(what));
  return b.read_string(n, what);
}
[[nodiscard]] inline result<uuid> read_uuid(byte_reader& b, std::string_view what = "id") {
  uuid id;
  RUVLLM_TRY_ASSIGN(id.hi, b.read<std::uint64_t>(what));
  RUVLLM_TRY_ASSIGN(id.lo, b.read<std::uint64_t>(what));
  return id;
}
inline void put_floats(std::vector<std::byte>& out, std::span<const float> v) { put_blob(out, std::as_bytes(v)); }
// Reads a float vector written by put_floats (a byte length, checked).
[[nodiscard]] inline result<void> read_floats(byte_reader& b, std::vector<float>& out, std::string_view what) {
  RUVLLM_TRY_ASSIGN(auto n, b.read<std::uint32_t>(what));
  if (n % sizeof(float) != 0) return b.fail(errc::corrupt_data, what, " of ", n, " bytes is not whole floats");
  RUVLLM_TRY_ASSIGN(auto bytes, b.read_bytes(n, what));
  out.resize(n / sizeof(float));
  if (n != 0) std::memcpy(out.data(), bytes.data(), n);
  return {};
}
inline void put_uuid(std::vector<std::byte>& out, const uuid& id) {
  put_bytes(out, id.hi);
  put_bytes(out, id.lo);
}

}  // namespace detail

/// Records, their secondary indexes and the typed edges between them; see
/// the file comment.
class record_graph {
 public:
  /// indexed_attribute names the numeric attribute with a secondary index
  /// (empty: none).
  explicit record_graph(std::string indexed_attribute = {}) : indexed_(std::move(indexed_attribute)) {}

  [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }
  /// Records of one kind.
  [[nodiscard]] std::size_t count(record_kind kind) const noexcept {
    return kind_counts_[static_cast<std::uint8_t>(kind) % record_kind_count];
  }
  [[nodiscard]] std::size_t edge_count() const noexcept { return edges_; }
  [[nodiscard]] const std::string& indexed_attribute() const noexcept { return indexed_; }
  /// The key the next insert() assigns.
  [[nodiscard]] std::uint64_t next_key() const noexcept { return next_key_; }

  /// Sorts r's attributes by name. Errors: invalid_argument (a name twice).
  [[nodiscard]] static result<void> normalize(record& r) {
    std::sort(r.attributes.begin(), r.attributes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 1; i < r.attributes.size(); ++i)
      if (r.attributes[i - 1].first == r.attributes[i].first)
        return make_error(errc::invalid_argument, "attribute '", r.attributes[i].first, "' appears twice");
    return {};
  }

  /// Checks r for insertion (nil id, unknown kind, duplicate id or key)
  /// without changing anything.
  [[nodiscard]] result<void> check_insert(const record& r) const {
    if (r.id.is_nil()) return make_error(errc::invalid_argument, "record id is nil");
    if (static_cast<std::uint8_t>(r.kind) >= record_kind_count)
      return make_error(errc::invalid_argument, "record kind ", static_cast<unsigned>(r.kind),
                        " >= ", unsigned{record_kind_count});
    if (records_.contains(r.id)) return make_error(errc::already_exists, "record ", to_string(r.id), " exists");
    if (by_key_.contains(r.key)) return make_error(errc::already_exists, "record key ", r.key, " is taken");
    return {};
  }

  /// Adds r (its key is assigned and returned). Errors: already_exists,
  /// invalid_argument (nil id, unknown kind).
  [[nodiscard]] result<std::uint64_t> insert(record r) {
    r.key = next_key_;
    return insert_with_key(std::move(r));
  }

  /// Adds r keeping its key (log replay); later keys continue after it.
  /// Errors: as insert().
  [[nodiscard]] result<std::uint64_t> insert_with_key(record r) {
    RUVLLM_TRY(check_insert(r));
    if (r.key == std::numeric_limits<std::uint64_t>::max())
      return make_error(errc::out_of_range, "record key ", r.key, " is the largest key");
    RUVLLM_TRY(normalize(r));
    next_key_ = std::max(next_key_, r.key + 1);
    add_indexes(r);
    by_key_[r.key] = r.id;
    ++kind_counts_[static_cast<std::uint8_t>(r.kind)];
    const std::uint64_t key = r.key;
    const uuid id = r.id;
    records_.emplace(id, node{std::move(r), {}, {}});
    return key;
  }

  /// The record with id, or nullptr.
  [[nodiscard]] const record* get(const uuid& id) const noexcept {
    auto it = records_.find(id);
    return it == records_.end() ? nullptr : &it->second.rec;
  }
  /// The record whose vector key is key, or nullptr.
  [[nodiscard]] const record* by_key(std::uint64_t key) const noexcept {
    auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : get(it->second);
  }

  /// Replaces the time, group, attributes and payload of the record with
  /// r.id (its kind, key and edges stay). Errors: not_found, invalid_argument
  /// (r.kind differs from the stored kind).
  [[nodiscard]] result<void> replace(record r) {
    auto it = records_.find(r.id);
    if (it == records_.end()) return make_error(errc::not_found, "record ", to_string(r.id));
    record& cur = it->second.rec;
    if (r.kind != cur.kind)
      return make_error(errc::invalid_argument, "record ", to_string(r.id), " has kind ",
                        static_cast<unsigned>(cur.kind), ", not ", static_cast<unsigned>(r.kind));
    RUVLLM_TRY(normalize(r));
    remove_indexes(cur);
    cur.time = r.time;
    cur.group = r.group;
    cur.attributes = std::move(r.attributes);
    cur.payload = std::move(r.payload);
    add_indexes(cur);
    return {};
  }

  /// Sets an attribute of a record, updating the numeric index. Errors: not_found.
  [[nodiscard]] result<void> set_attribute(const uuid& id, std::string_view name, attribute_value value) {
    auto it = records_.find(id);
    if (it == records_.end()) return make_error(errc::not_found, "record ", to_string(id));
    remove_indexes(it->second.rec);
    it->second.rec.set(name, std::move(value));
    add_indexes(it->second.rec);
    return {};
  }

  /// Sets a record's timestamp, updating the time index. Errors: not_found.
  [[nodiscard]] result<void> set_time(const uuid& id, timestamp_ms time) {
    auto it = records_.find(id);
    if (it == records_.end()) return make_error(errc::not_found, "record ", to_string(id));
    remove_indexes(it->second.rec);
    it->second.rec.time = time;
    add_indexes(it->second.rec);
    return {};
  }

  /// Removes a record and every edge touching it. Errors: not_found.
  [[nodiscard]] result<void> remove(const uuid& id) {
    auto it = records_.find(id);
    if (it == records_.end()) return make_error(errc::not_found, "record ", to_string(id));
    // Drop the mirror half of every edge in the other records' lists.
    node& n = it->second;
    for (const auto& h : n.out)
      if (h.other != id) erase_half(records_.find(h.other)->second.in, id, h.type);
    for (const auto& h : n.in)
      if (h.other != id) erase_half(records_.find(h.other)->second.out, id, h.type);
    edges_ -= n.out.size();
    for (const auto& h : n.in) edges_ -= h.other != id;  // self-edges were counted once, in out
    remove_indexes(n.rec);
    --kind_counts_[static_cast<std::uint8_t>(n.rec.kind)];
    by_key_.erase(n.rec.key);
    records_.erase(it);
    return {};
  }

  // ---- secondary indexes ----------------------------------------------------

  /// Calls fn(const record&) for the records of kind with time in [from, to),
  /// oldest first (ties by id); fn may return false to stop.
  template <class Fn>
  void visit_time_range(record_kind kind, timestamp_ms from, timestamp_ms to, Fn&& fn) const {
    for (auto it = by_time_.lower_bound({kind, from, uuid{}});
         it != by_time_.end() && std::get<0>(*it) == kind && std::get<1>(*it) < to; ++it)
      if (!detail::visit_one(fn, *get(std::get<2>(*it)))) return;
  }
  /// Ids of kind with time in [from, to), oldest first.
  [[nodiscard]] std::vector<uuid> in_time_range(record_kind kind, timestamp_ms from, timestamp_ms to) const {
    std::vector<uuid> out;
    visit_time_range(kind, from, to, [&](const record& r) { out.push_back(r.id); });
    return out;
  }
  /// Ids of every kind with time in [from, to), oldest first (ties by id).
  [[nodiscard]] std::vector<uuid> in_time_range(timestamp_ms from, timestamp_ms to) const {
    std::vector<std::pair<timestamp_ms, uuid>> all;
    for (std::uint8_t k = 0; k < record_kind_count; ++k)
      visit_time_range(static_cast<record_kind>(k), from, to, [&](const record& r) { all.emplace_back(r.time, r.id); });
    std::sort(all.begin(), all.end());
    std::vector<uuid> out;
    out.reserve(all.size());
    for (auto& a : all) out.push_back(a.second);
    return out;
  }

  /// Calls fn(const record&) for the records of kind whose indexed attribute
  /// lies in [lo, hi], ascending; fn may return false to stop.
  template <class Fn>
  void visit_attribute_range(record_kind kind, double lo, double hi, Fn&& fn) const {
    for (auto it = by_attr_.lower_bound({kind, lo, uuid{}});
         it != by_attr_.end() && std::get<0>(*it) == kind && std::get<1>(*it) <= hi; ++it)
      if (!detail::visit_one(fn, *get(std::get<2>(*it)))) return;
  }
  /// Ids of kind whose indexed attribute lies in [lo, hi], ascending.
  [[nodiscard]] std::vector<uuid> in_attribute_range(record_kind kind, double lo, double hi) const {
    std::vector<uuid> out;
    visit_attribute_range(kind, lo, hi, [&](const record& r) { out.push_back(r.id); });
    return out;
  }
  /// Ids of every kind whose indexed attribute lies in [lo, hi], ascending (ties by id).
  [[nodiscard]] std::vector<uuid> in_attribute_range(double lo, double hi) const {
    std::vector<std::pair<double, uuid>> all;
    for (std::uint8_t k = 0; k < record_kind_count; ++k)
      visit_attribute_range(static_cast<record_kind>(k), lo, hi,
                            [&](const record& r) { all.emplace_back(*r.number(indexed_), r.id); });
    std::sort(all.begin(), all.end());
    std::vector<uuid> out;
    out.reserve(all.size());
    for (auto& a : all) out.push_back(a.second);
    return out;
  }

  /// Calls fn(const record&) for the records of kind in group, by id; fn may
  /// return false to stop.
  template <class Fn>
  void visit_group(record_kind kind, std::uint64_t group, Fn&& fn) const {
    for (auto it = by_group_.lower_bound({kind, group, uuid{}});
         it != by_group_.end() && std::get<0>(*it) == kind && std::get<1>(*it) == group; ++it)
      if (!detail::visit_one(fn, *get(std::get<2>(*it)))) return;
  }
  /// Ids of kind in group, by id.
  [[nodiscard]] std::vector<uuid> in_group(record_kind kind, std::uint64_t group) const {
    std::vector<uuid> out;
    visit_group(kind, group, [&](const record& r) { out.push_back(r.id); });
    return out;
  }

  // ---- edges -------------------------------------------------------------------

  /// Adds or replaces the edge (from, to, type) with weight. Errors:
  /// not_found (an endpoint), invalid_argument (weight not finite, unknown type).
  [[nodiscard]] result<void> link(const uuid& from, const uuid& to, edge_type type, float weight) {
    RUVLLM_TRY(check_edge(type, weight));
    auto f = records_.find(from);
    auto t = records_.find(to);
    if (f == records_.end() || t == records_.end())
      return make_error(errc::not_found, "edge endpoint ", to_string(f == records_.end() ? from : to));
    if (half_edge* e = find_half(f->second.out, to, type)) {
      e->weight = weight;
      find_half(t->second.in, from, type)->weight = weight;
      return {};
    }
    f->second.out.push_back(half_edge{to, type, weight});
    t->second.in.push_back(half_edge{from, type, weight});
    ++edges_;
    return {};
  }

  /// The weight of edge (from, to, type), or nullopt.
  [[nodiscard]] std::optional<float> edge_weight(const uuid& from, const uuid& to, edge_type type) const {
    auto f = records_.find(from);
    if (f == records_.end()) return std::nullopt;
    for (const auto& h : f->second.out)
      if (h.other == to && h.type == type) return h.weight;
    return std::nullopt;
  }

  /// Adds delta to an edge's weight and returns the new weight. Errors:
  /// not_found, invalid_argument (non-finite result; nothing changes).
  [[nodiscard]] result<float> adjust_weight(const uuid& from, const uuid& to, edge_type type, float delta) {
    auto w = edge_weight(from, to, type);
    if (!w) return make_error(errc::not_found, "edge ", to_string(from), " -> ", to_string(to));
    RUVLLM_TRY(link(from, to, type, *w + delta));
    return *w + delta;
  }

  /// Multiplies an edge's weight by factor (the learning loop's relative
  /// update, e.g. 1.05) and returns the new weight. Errors: as adjust_weight.
  [[nodiscard]] result<float> scale_weight(const uuid& from, const uuid& to, edge_type type, float factor) {
    auto w = edge_weight(from, to, type);
    if (!w) return make_error(errc::not_found, "edge ", to_string(from), " -> ", to_string(to));
    RUVLLM_TRY(link(from, to, type, *w * factor));
    return *w * factor;
  }

  /// Removes an edge. Errors: not_found.
  [[nodiscard]] result<void> remove_edge(const uuid& from, const uuid& to, edge_type type) {
    auto f = records_.find(from);
    auto t = records_.find(to);
    if (f == records_.end() || t == records_.end() || find_half(f->second.out, to, type) == nullptr)
      return make_error(errc::not_found, "edge ", to_string(from), " -> ", to_string(to));
    erase_half(f->second.out, to, type);
    erase_half(t->second.in, from, type);
    --edges_;
    return {};
  }

  /// Neighbours of id along edges of `type` (nullopt: every type), with
  /// weights, heaviest first. A self-edge appears on both sides.
  [[nodiscard]] std::vector<edge> neighbours(const uuid& id, std::optional<edge_type> type = std::nullopt,
                                             direction dir = direction::both) const {
    std::vector<edge> out;
    auto it = records_.find(id);
    if (it == records_.end()) return out;
    if (dir != direction::in)
      for (const auto& h : it->second.out)
        if (!type || h.type == *type) out.push_back(edge{id, h.other, h.type, h.weight});
    if (dir != direction::out)
      for (const auto& h : it->second.in)
        if (!type || h.type == *type) out.push_back(edge{h.other, id, h.type, h.weight});
    std::stable_sort(out.begin(), out.end(), [](const edge& a, const edge& b) { return a.weight > b.weight; });
    return out;
  }

  /// Calls fn(const edge&) for every edge (unspecified order).
  template <class Fn>
  void for_each_edge(Fn&& fn) const {
    for (const auto& [id, n] : records_)
      for (const auto& h : n.out) fn(edge{id, h.other, h.type, h.weight});
  }

  /// A key predicate for hnsw_index::search from a predicate over records.
  template <class Pred>
  [[nodiscard]] auto filter(Pred pred) const {
    return [this, pred](std::uint64_t key) {
      const record* r = by_key(key);
      return r != nullptr && pred(*r);
    };
  }

  /// Calls fn(const record&) for every record (unspecified order).
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [id, n] : records_) fn(n.rec);
  }

  // ---- binary form and snapshots ------------------------------------------

  /// The log sequence stored with the snapshot this graph was loaded from.
  [[nodiscard]] std::uint64_t sequence() const noexcept { return sequence_; }

  /// Appends the binary form of r (as in the snapshot) to out.
  static void encode(const record& r, std::vector<std::byte>& out) {
    detail::put_uuid(out, r.id);
    detail::put_bytes(out, static_cast<std::uint8_t>(r.kind));
    detail::put_bytes(out, r.time);
    detail::put_bytes(out, r.group);
    detail::put_bytes(out, r.key);
    detail::put_bytes(out, static_cast<std::uint32_t>(r.attributes.size()));
    for (const auto& [name, value] : r.attributes) {
      detail::put_text(out, name);
      detail::put_bytes(out, static_cast<std::uint8_t>(value.index() + 1));
      if (const auto* i = std::get_if<std::int64_t>(&value)) detail::put_bytes(out, *i);
      if (const auto* d = std::get_if<double>(&value)) detail::put_bytes(out, *d);
      if (const auto* s = std::get_if<std::string>(&value)) detail::put_text(out, *s);
    }
    detail::put_blob(out, r.payload);
  }

  /// Reads one record written by encode(); every length is checked.
  [[nodiscard]] static result<record> decode(byte_reader& b) {
    record rec;
    RUVLLM_TRY_ASSIGN(rec.id, detail::read_uuid(b));
    RUVLLM_TRY_ASSIGN(auto kind, b.read<std::uint8_t>("kind"));
    if (kind >= record_kind_count) return b.fail(errc::corrupt_data, "record kind ", kind);
    rec.kind = static_cast<record_kind>(kind);
    RUVLLM_TRY_ASSIGN(rec.time, b.read<std::int64_t>("time"));
    RUVLLM_TRY_ASSIGN(rec.group, b.read<std::uint64_t>("group"));
    RUVLLM_TRY_ASSIGN(rec.key, b.read<std::uint64_t>("key"));
    RUVLLM_TRY_ASSIGN(auto attrs, b.read<std::uint32_t>("attribute count"));
    if (attrs > b.remaining() / 5) return b.fail(errc::corrupt_data, "attribute count ", attrs, " exceeds the data");
    rec.attributes.reserve(attrs);
    for (std::uint32_t a = 0; a < attrs; ++a) {
      RUVLLM_TRY_ASSIGN(auto name, detail::read_text(b, "attribute name"));
      RUVLLM_TRY_ASSIGN(auto type, b.read<std::uint8_t>("attribute type"));
      attribute_value v;
      if (type == 1) {
        RUVLLM_TRY_ASSIGN(auto x, b.read<std::int64_t>("int attribute"));
        v = x;
      } else if (type == 2) {
        RUVLLM_TRY_ASSIGN(auto x, b.read<double>("double attribute"));
        v = x;
      } else if (type == 3) {
        RUVLLM_TRY_ASSIGN(auto x, detail::read_text(b, "string attribute"));
        v = std::string(x);
      } else {
        return b.fail(errc::corrupt_data, "attribute type ", type);
      }
      if (!rec.attributes.empty() && rec.attributes.back().first >= name)
        return b.fail(errc::corrupt_data, "attribute names are not sorted and unique");
      rec.attributes.emplace_back(std::string(name), std::move(v));
    }
    RUVLLM_TRY_ASSIGN(auto plen, b.read<std::uint32_t>("payload length"));
    RUVLLM_TRY_ASSIGN(auto payload, b.read_bytes(plen, "payload"));
    rec.payload.assign(payload.begin(), payload.end());
    return rec;
  }

  /// Writes the snapshot atomically (see the file comment), recording
  /// `sequence` as the last log record it holds. The body is streamed in
  /// chunks of about 1 MiB (memory stays bounded for large graphs) and the
  /// header, whose checksum covers the body, is written last. Errors: io_error.
  [[nodiscard]] result<void> save(std::string_view path, std::uint64_t sequence = 0) const {
    const std::string tmp = std::string(path) + ".tmp";
    RUVLLM_TRY_ASSIGN(auto f, open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC));
    std::vector<std::byte> buf(header_bytes);
    std::uint32_t crc = 0;
    std::uint64_t body_bytes = 0;
    std::size_t body_start = header_bytes;  // where the body starts in buf
    auto flush = [&](bool force) -> result<void> {
      if (!force && buf.size() < (1u << 20)) return {};
      const auto body = std::span<const std::byte>(buf).subspan(body_start);
      crc = crc32c(body, crc);
      body_bytes += body.size();
      RUVLLM_TRY(write_all(f, buf, tmp));
      buf.clear();
      body_start = 0;
      return {};
    };
    detail::put_bytes(buf, sequence);
    detail::put_bytes(buf, next_key_);
    detail::put_text(buf, indexed_);
    detail::put_bytes(buf, static_cast<std::uint64_t>(records_.size()));
    for (const auto& [id, n] : records_) {
      encode(n.rec, buf);
      RUVLLM_TRY(flush(false));
    }
    detail::put_bytes(buf, static_cast<std::uint64_t>(edges_));
    for (const auto& [id, n] : records_) {
      for (const auto& h : n.out) {
        detail::put_uuid(buf, id);
        detail::put_uuid(buf, h.other);
        detail::put_bytes(buf, static_cast<std::uint8_t>(h.type));
        detail::put_bytes(buf, h.weight);
      }
      RUVLLM_TRY(flush(false));
    }
    RUVLLM_TRY(flush(true));
    std::vector<std::byte> head;
    head.resize(8);
    std::memcpy(head.data(), "RUVRECS1", 8);
    detail::put_bytes(head, snapshot_version);
    detail::put_bytes(head, crc);
    detail::put_bytes(head, body_bytes);
    if (::lseek(f.get(), 0, SEEK_SET) != 0) return detail::os_error("cannot seek in", tmp);
    RUVLLM_TRY(write_all(f, head, tmp));
    RUVLLM_TRY(sync_file(f, tmp));
    f.close();
    return replace_file(tmp, path);
  }

  /// Reads a snapshot; every length is checked against the file first.
  /// Errors: corrupt_data / unsupported naming the file and offset, io_error.
  [[nodiscard]] static result<record_graph> load(std::string_view path) {
    RUVLLM_TRY_ASSIGN(auto map, mapped_file::open(path));
    byte_reader r(map.bytes(), path);
    RUVLLM_TRY_ASSIGN(auto magic, r.read_string(8, "magic"));
    if (magic != "RUVRECS1") return r.fail(errc::corrupt_data, "not a record snapshot (bad magic)");
    RUVLLM_TRY_ASSIGN(auto version, r.read<std::uint32_t>("version"));
    if (version != snapshot_version)
      return r.fail(errc::unsupported, "record snapshot version ", version, " != ", snapshot_version);
    RUVLLM_TRY_ASSIGN(auto crc, r.read<std::uint32_t>("checksum"));
    RUVLLM_TRY_ASSIGN(auto body_bytes, r.read<std::uint64_t>("body size"));
    if (body_bytes != r.remaining())
      return r.fail(errc::corrupt_data, "body size ", body_bytes, " != remaining ", r.remaining(), " bytes");
    const std::uint64_t body_at = r.file_offset();
    RUVLLM_TRY_ASSIGN(auto body, r.read_bytes(body_bytes, "body"));
    if (crc32c(body) != crc) return make_error(errc::corrupt_data, "record snapshot checksum").at(path, body_at);
    byte_reader b(body, path, body_at);
    RUVLLM_TRY_ASSIGN(auto sequence, b.read<std::uint64_t>("sequence"));
    RUVLLM_TRY_ASSIGN(auto next_key, b.read<std::uint64_t>("next key"));
    RUVLLM_TRY_ASSIGN(auto indexed, detail::read_text(b, "indexed attribute"));
    record_graph g{std::string(indexed)};
    RUVLLM_TRY_ASSIGN(auto count, b.read<std::uint64_t>("record count"));
    // Each record needs at least min_record_bytes: a count beyond that is
    // corrupt, caught before any loop or allocation sized by it.
    if (count > b.remaining() / min_record_bytes)
      return b.fail(errc::corrupt_data, "record count ", count, " exceeds the body");
    g.records_.reserve(static_cast<std::size_t>(count));
    g.by_key_.reserve(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t at = b.file_offset();
      RUVLLM_TRY_ASSIGN(auto rec, decode(b));
      if (rec.key >= next_key || !g.check_insert(rec))
        return make_error(errc::corrupt_data, "record ", i, " has a nil or duplicate id or an out-of-range key")
            .at(path, at);
      g.by_key_[rec.key] = rec.id;
      ++g.kind_counts_[static_cast<std::uint8_t>(rec.kind)];
      const uuid id = rec.id;
      g.records_.emplace(id, node{std::move(rec), {}, {}});
    }
    g.build_indexes();
    g.next_key_ = next_key;
    g.sequence_ = sequence;
    RUVLLM_TRY_ASSIGN(auto edges, b.read<std::uint64_t>("edge count"));
    if (edges > b.remaining() / 37) return b.fail(errc::corrupt_data, "edge count ", edges, " exceeds the body");
    for (std::uint64_t i = 0; i < edges; ++i) {
      const std::uint64_t at = b.file_offset();
      RUVLLM_TRY_ASSIGN(auto from, detail::read_uuid(b, "edge"));
      RUVLLM_TRY_ASSIGN(auto to, detail::read_uuid(b, "edge"));
      RUVLLM_TRY_ASSIGN(auto type, b.read<std::uint8_t>("edge type"));
      RUVLLM_TRY_ASSIGN(auto weight, b.read<float>("edge weight"));
      if (g.edge_weight(from, to, static_cast<edge_type>(type)))
        return make_error(errc::corrupt_data, "edge ", i, " is a duplicate").at(path, at);
      if (auto linked = g.link(from, to, static_cast<edge_type>(type), weight); !linked)
        return make_error(errc::corrupt_data, "edge ", i, ": ", linked.error().message()).at(path, at);
    }
    if (b.remaining() != 0) return b.fail(errc::corrupt_data, b.remaining(), " trailing bytes");
    return g;
  }

  /// Checks a weight and an edge type (what link() accepts).
  [[nodiscard]] static result<void> check_edge(edge_type type, float weight) {
    if (static_cast<std::uint8_t>(type) < 1 || static_cast<std::uint8_t>(type) > 4)
      return make_error(errc::invalid_argument, "edge type ", static_cast<unsigned>(type), " is not 1 .. 4");
    if (!std::isfinite(weight)) return make_error(errc::invalid_argument, "edge weight ", weight, " is not finite");
    return {};
  }

 private:
  static constexpr std::uint32_t snapshot_version = 2;
  static constexpr std::size_t header_bytes = 24;
  static constexpr std::uint64_t min_record_bytes = 16 + 1 + 8 + 8 + 8 + 4 + 4;

  struct half_edge {
    uuid other;
    edge_type type;
    float weight;
  };
  struct node {
    record rec;
    std::vector<half_edge> out;
    std::vector<half_edge> in;
  };

  static half_edge* find_half(std::vector<half_edge>& list, const uuid& other, edge_type type) noexcept {
    for (auto& h : list)
      if (h.other == other && h.type == type) return &h;
    return nullptr;
  }
  static void erase_half(std::vector<half_edge>& list, const uuid& other, edge_type type) {
    std::erase_if(list, [&](const half_edge& h) { return h.other == other && h.type == type; });
  }

  [[nodiscard]] std::optional<double> indexed_value(const record& r) const noexcept {
    if (indexed_.empty()) return std::nullopt;
    auto v = r.number(indexed_);
    // NaN has no place in an ordered index.
    if (!v || std::isnan(*v)) return std::nullopt;
    return v;
  }
  // Builds every secondary index at once from sorted arrays: a std::set
  // built from a sorted range inserts each element at the end in O(1),
  // where inserting in hash order pays a full descent per element (3x
  // slower loads of large snapshots).
  void build_indexes() {
    std::vector<std::tuple<record_kind, timestamp_ms, uuid>> by_time;
    std::vector<std::tuple<record_kind, std::uint64_t, uuid>> by_group;
    std::vector<std::tuple<record_kind, double, uuid>> by_attr;
    by_time.reserve(records_.size());
    by_group.reserve(records_.size());
    by_attr.reserve(records_.size());
    for (const auto& [id, n] : records_) {
      by_time.emplace_back(n.rec.kind, n.rec.time, id);
      by_group.emplace_back(n.rec.kind, n.rec.group, id);
      if (auto v = indexed_value(n.rec)) by_attr.emplace_back(n.rec.kind, *v, id);
    }
    std::sort(by_time.begin(), by_time.end());
    std::sort(by_group.begin(), by_group.end());
    std::sort(by_attr.begin(), by_attr.end());
    by_time_ = decltype(by_time_)(by_time.begin(), by_time.end());
    by_group_ = decltype(by_group_)(by_group.begin(), by_group.end());
    by_attr_ = decltype(by_attr_)(by_attr.begin(), by_attr.end());
  }

  void add_indexes(const record& r) {
    by_time_.emplace(r.kind, r.time, r.id);
    by_group_.emplace(r.kind, r.group, r.id);
    if (auto v = indexed_value(r)) by_attr_.emplace(r.kind, *v, r.id);
  }
  void remove_indexes(const record& r) {
    by_time_.erase({r.kind, r.time, r.id});
    by_group_.erase({r.kind, r.group, r.id});
    if (auto v = indexed_value(r)) by_attr_.erase({r.kind, *v, r.id});
  }

  std::string indexed_;
  std::uint64_t next_key_ = 1;
  std::uint64_t sequence_ = 0;
  std::size_t edges_ = 0;
  std::size_t kind_counts_[record_kind_count] = {};
  std::unordered_map<uuid, node, uuid_hash> records_;
  std::unordered_map<std::uint64_t, uuid> by_key_;
  std::set<std::tuple<record_kind, timestamp_ms, uuid>> by_time_;
  std::set<std::tuple<record_kind, std::uint64_t, uuid>> by_group_;
  std::set<std::tuple<record_kind, double, uuid>> by_attr_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_RECORDS_HPP
