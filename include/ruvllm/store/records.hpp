#ifndef RUVLLM_STORE_RECORDS_HPP
#define RUVLLM_STORE_RECORDS_HPP

// record_graph: the store's records and the typed, weighted relations
// between them (session <-> pattern <-> witness entry).
//
// A record has a 128-bit UUID, a millisecond UTC timestamp, a 64-bit vector
// key (its node in the hnsw_index; assigned here, so vector search results
// map back to records) and a small typed attribute map (name -> int64,
// double or string; a sorted vector, because records carry a handful of
// attributes and a flat array beats a node-based map at that size).
// Secondary indexes: by timestamp, and by one numeric attribute chosen at
// construction (e.g. "quality"); both ordered sets of (value, id), so range
// queries are O(log n + hits). Edges are typed and weighted, kept in an
// out-list and an in-list per record; removing a record removes its edges.
//
// filter() turns a predicate over records into the key predicate that
// hnsw_index::search takes, which is how "nearest patterns with quality >
// 0.8 from the last hour" is asked.
//
// Persistence: save() writes a checksummed snapshot atomically (temporary
// file, fsync, rename); load() checks every length against the file before
// use and returns corrupt_data naming the file and offset.
//   "RUVRECS1", u32 version 1, u32 CRC-32C of the body, u64 body bytes, body:
//   u64 sequence (the last log record the snapshot holds, see memory_store),
//   u64 next key, u32 indexed-attribute name length + bytes,
//   u64 record count, per record: u64 id.hi, u64 id.lo, i64 time, u64 key,
//     u32 attribute count, per attribute: u32 name length + bytes, u8 type
//     (1 int64, 2 double, 3 string), value (8 bytes, or u32 length + bytes)
//   u64 edge count, per edge: from (16), to (16), u8 type, f32 weight
//
// Thread-safety: none (the owner serializes, as hnsw_store does for the
// vectors); const calls may run concurrently with each other. Allocation:
// every mutation allocates (node-based indexes); lookups do not.

#include <algorithm>
#include <cmath>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
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
    return static_cast<std::size_t>(id.hi * 0x9E3779B97F4A7C15ull ^ (id.lo + (id.hi << 6) + (id.hi >> 2)));
  }
};

/// Milliseconds since the Unix epoch, UTC.
using timestamp_ms = std::int64_t;

/// A typed attribute value.
using attribute_value = std::variant<std::int64_t, double, std::string>;

/// A record: identity, time, vector key and attributes (sorted by name).
struct record {
  uuid id{};
  timestamp_ms time = 0;
  std::uint64_t key = 0;  // assigned by record_graph::insert
  std::vector<std::pair<std::string, attribute_value>> attributes;

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
};

/// Which side of an edge a neighbour query follows.
enum class direction : std::uint8_t { out, in, both };

/// Records, their secondary indexes and the typed edges between them; see
/// the file comment.
class record_graph {
 public:
  /// indexed_attribute names the numeric attribute with a secondary index
  /// (empty: none).
  explicit record_graph(std::string indexed_attribute = {}) : indexed_(std::move(indexed_attribute)) {}

  [[nodiscard]] std::size_t size() const noexcept { return records_.size(); }
  [[nodiscard]] std::size_t edge_count() const noexcept { return edges_; }
  [[nodiscard]] const std::string& indexed_attribute() const noexcept { return indexed_; }

  /// Adds r (its key is assigned and returned). Errors: already_exists,
  /// invalid_argument (nil id).
  [[nodiscard]] result<std::uint64_t> insert(record r) {
    r.key = next_key_;
    return insert_with_key(std::move(r));
  }

  /// Adds r keeping its key (log replay); later keys continue after it.
  /// Errors: already_exists (id or key), invalid_argument (nil id).
  [[nodiscard]] result<std::uint64_t> insert_with_key(record r) {
    if (r.id.is_nil()) return make_error(errc::invalid_argument, "record id is nil");
    if (records_.contains(r.id)) return make_error(errc::already_exists, "record ", to_string(r.id), " exists");
    if (by_key_.contains(r.key)) return make_error(errc::already_exists, "record key ", r.key, " is taken");
    std::sort(r.attributes.begin(), r.attributes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    next_key_ = std::max(next_key_, r.key + 1);
    add_indexes(r);
    by_key_[r.key] = r.id;
    const std::uint64_t key = r.key;
    records_.emplace(r.id, node{std::move(r), {}, {}});
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

  /// Sets an attribute of a record, updating the numeric index. Errors: not_found.
  [[nodiscard]] result<void> set_attribute(const uuid& id, std::string_view name, attribute_value value) {
    auto it = records_.find(id);
    if (it == records_.end()) return make_error(errc::not_found, "record ", to_string(id));
    remove_indexes(it->second.rec);
    it->second.rec.set(name, std::move(value));
    add_indexes(it->second.rec);
    return {};
  }

  /// Removes a record and every edge touching it. Errors: not_found.
  [[nodiscard]] result<void> remove(const uuid& id) {
    auto it = records_.find(id);
    if (it == records_.end()) return make_error(errc::not_found, "record ", to_string(id));
    // Copies: remove_edge edits the lists being walked.
    const auto outs = it->second.out;
    const auto ins = it->second.in;
    for (const auto& e : outs) (void)remove_edge(id, e.other, e.type);
    for (const auto& e : ins) (void)remove_edge(e.other, id, e.type);
    remove_indexes(it->second.rec);
    by_key_.erase(it->second.rec.key);
    records_.erase(it);
    return {};
  }

  /// Ids with time in [from, to), oldest first.
  [[nodiscard]] std::vector<uuid> in_time_range(timestamp_ms from, timestamp_ms to) const {
    std::vector<uuid> out;
    for (auto it = by_time_.lower_bound({from, uuid{}}); it != by_time_.end() && it->first < to; ++it)
      out.push_back(it->second);
    return out;
  }
  /// Ids whose indexed attribute lies in [lo, hi], ascending.
  [[nodiscard]] std::vector<uuid> in_attribute_range(double lo, double hi) const {
    std::vector<uuid> out;
    for (auto it = by_attr_.lower_bound({lo, uuid{}}); it != by_attr_.end() && it->first <= hi; ++it)
      out.push_back(it->second);
    return out;
  }

  /// Adds or replaces the edge (from, to, type) with weight. Errors: not_found.
  [[nodiscard]] result<void> link(const uuid& from, const uuid& to, edge_type type, float weight) {
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

  /// Adds delta to an edge's weight and returns the new weight. Errors: not_found.
  [[nodiscard]] result<float> adjust_weight(const uuid& from, const uuid& to, edge_type type, float delta) {
    auto f = records_.find(from);
    auto t = records_.find(to);
    half_edge* a = f == records_.end() ? nullptr : find_half(f->second.out, to, type);
    if (a == nullptr || t == records_.end())
      return make_error(errc::not_found, "edge ", to_string(from), " -> ", to_string(to));
    a->weight += delta;
    find_half(t->second.in, from, type)->weight = a->weight;
    return a->weight;
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
  /// weights, heaviest first.
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

  /// Writes the snapshot atomically (see the file comment). Errors: io_error.
  /// The log sequence stored with the snapshot this graph was loaded from.
  [[nodiscard]] std::uint64_t sequence() const noexcept { return sequence_; }

  /// Appends the binary form of r (as in the snapshot) to out.
  static void encode(const record& r, std::vector<std::byte>& out) {
    put(out, r.id.hi);
    put(out, r.id.lo);
    put(out, r.time);
    put(out, r.key);
    put(out, static_cast<std::uint32_t>(r.attributes.size()));
    for (const auto& [name, value] : r.attributes) {
      put_string(out, name);
      put(out, static_cast<std::uint8_t>(value.index() + 1));
      if (const auto* i = std::get_if<std::int64_t>(&value)) put(out, *i);
      if (const auto* d = std::get_if<double>(&value)) put(out, *d);
      if (const auto* s = std::get_if<std::string>(&value)) put_string(out, *s);
    }
  }

  /// Reads one record written by encode(); every length is checked.
  [[nodiscard]] static result<record> decode(byte_reader& b) {
    record rec;
    RUVLLM_TRY_ASSIGN(rec.id.hi, b.read<std::uint64_t>("id"));
    RUVLLM_TRY_ASSIGN(rec.id.lo, b.read<std::uint64_t>("id"));
    RUVLLM_TRY_ASSIGN(rec.time, b.read<std::int64_t>("time"));
    RUVLLM_TRY_ASSIGN(rec.key, b.read<std::uint64_t>("key"));
    RUVLLM_TRY_ASSIGN(auto attrs, b.read<std::uint32_t>("attribute count"));
    if (attrs > b.remaining() / 5) return b.fail(errc::corrupt_data, "attribute count ", attrs, " exceeds the data");
    for (std::uint32_t a = 0; a < attrs; ++a) {
      RUVLLM_TRY_ASSIGN(auto name, read_string(b));
      RUVLLM_TRY_ASSIGN(auto type, b.read<std::uint8_t>("attribute type"));
      attribute_value v;
      if (type == 1) {
        RUVLLM_TRY_ASSIGN(auto x, b.read<std::int64_t>("int attribute"));
        v = x;
      } else if (type == 2) {
        RUVLLM_TRY_ASSIGN(auto x, b.read<double>("double attribute"));
        v = x;
      } else if (type == 3) {
        RUVLLM_TRY_ASSIGN(auto x, read_string(b));
        v = std::string(x);
      } else {
        return b.fail(errc::corrupt_data, "attribute type ", type);
      }
      rec.set(name, std::move(v));
    }
    return rec;
  }

  /// Writes the snapshot atomically (see the file comment), recording
  /// `sequence` as the last log record it holds. Errors: io_error.
  [[nodiscard]] result<void> save(std::string_view path, std::uint64_t sequence = 0) const {
    std::vector<std::byte> body;
    put(body, sequence);
    put(body, next_key_);
    put_string(body, indexed_);
    put(body, static_cast<std::uint64_t>(records_.size()));
    std::uint64_t edges = 0;
    for (const auto& [id, n] : records_) {
      encode(n.rec, body);
      edges += n.out.size();
    }
    put(body, edges);
    for (const auto& [id, n] : records_)
      for (const auto& h : n.out) {
        put(body, id.hi);
        put(body, id.lo);
        put(body, h.other.hi);
        put(body, h.other.lo);
        put(body, static_cast<std::uint8_t>(h.type));
        put(body, h.weight);
      }
    std::vector<std::byte> head;
    head.resize(8);
    std::memcpy(head.data(), "RUVRECS1", 8);
    put(head, std::uint32_t{1});
    put(head, crc32c(body));
    put(head, static_cast<std::uint64_t>(body.size()));
    const std::string tmp = std::string(path) + ".tmp";
    RUVLLM_TRY_ASSIGN(auto f, open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC));
    RUVLLM_TRY(write_all(f, head, tmp));
    RUVLLM_TRY(write_all(f, body, tmp));
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
    if (version != 1) return r.fail(errc::unsupported, "record snapshot version ", version);
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
    RUVLLM_TRY_ASSIGN(auto indexed, read_string(b));
    record_graph g{std::string(indexed)};
    RUVLLM_TRY_ASSIGN(auto count, b.read<std::uint64_t>("record count"));
    // Each record needs at least 36 bytes: a count beyond that is corrupt,
    // caught before any loop or allocation sized by it.
    if (count > b.remaining() / 36) return b.fail(errc::corrupt_data, "record count ", count, " exceeds the body");
    for (std::uint64_t i = 0; i < count; ++i) {
      RUVLLM_TRY_ASSIGN(auto rec, decode(b));
      const std::uint64_t key = rec.key;
      if (rec.id.is_nil() || g.records_.contains(rec.id) || g.by_key_.contains(key) || key >= next_key)
        return b.fail(errc::corrupt_data, "record ", i, " has a nil, duplicate or out-of-range id or key");
      rec.key = key;
      g.add_indexes(rec);
      g.by_key_[key] = rec.id;
      const uuid id = rec.id;
      g.records_.emplace(id, node{std::move(rec), {}, {}});
    }
    g.next_key_ = next_key;
    g.sequence_ = sequence;
    RUVLLM_TRY_ASSIGN(auto edges, b.read<std::uint64_t>("edge count"));
    if (edges > b.remaining() / 37) return b.fail(errc::corrupt_data, "edge count ", edges, " exceeds the body");
    for (std::uint64_t i = 0; i < edges; ++i) {
      edge e;
      RUVLLM_TRY_ASSIGN(e.from.hi, b.read<std::uint64_t>("edge"));
      RUVLLM_TRY_ASSIGN(e.from.lo, b.read<std::uint64_t>("edge"));
      RUVLLM_TRY_ASSIGN(e.to.hi, b.read<std::uint64_t>("edge"));
      RUVLLM_TRY_ASSIGN(e.to.lo, b.read<std::uint64_t>("edge"));
      RUVLLM_TRY_ASSIGN(auto type, b.read<std::uint8_t>("edge type"));
      RUVLLM_TRY_ASSIGN(e.weight, b.read<float>("edge weight"));
      if (type < 1 || type > 4) return b.fail(errc::corrupt_data, "edge type ", type);
      if (!g.link(e.from, e.to, static_cast<edge_type>(type), e.weight))
        return b.fail(errc::corrupt_data, "edge ", i, " names a missing record");
    }
    if (b.remaining() != 0) return b.fail(errc::corrupt_data, b.remaining(), " trailing bytes");
    return g;
  }

 private:
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

  void add_indexes(const record& r) {
    by_time_.emplace(r.time, r.id);
    // NaN has no place in an ordered index.
    if (!indexed_.empty())
      if (auto v = r.number(indexed_); v && !std::isnan(*v)) by_attr_.emplace(*v, r.id);
  }
  void remove_indexes(const record& r) {
    by_time_.erase({r.time, r.id});
    if (!indexed_.empty())
      if (auto v = r.number(indexed_); v && !std::isnan(*v)) by_attr_.erase({*v, r.id});
  }

  template <class T>
  static void put(std::vector<std::byte>& out, const T& v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  static void put_string(std::vector<std::byte>& out, std::string_view s) {
    put(out, static_cast<std::uint32_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
  }
  static result<std::string_view> read_string(byte_reader& b) {
    RUVLLM_TRY_ASSIGN(auto n, b.read<std::uint32_t>("string length"));
    return b.read_string(n, "string");
  }

  std::string indexed_;
  std::uint64_t next_key_ = 1;
  std::uint64_t sequence_ = 0;
  std::size_t edges_ = 0;
  std::unordered_map<uuid, node, uuid_hash> records_;
  std::unordered_map<std::uint64_t, uuid> by_key_;
  std::set<std::pair<timestamp_ms, uuid>> by_time_;
  std::set<std::pair<double, uuid>> by_attr_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_RECORDS_HPP
