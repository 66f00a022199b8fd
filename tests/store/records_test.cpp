// record_graph against a simple model (std::map of records and of edges):
// records of every kind, the (kind, time), (kind, group) and (kind,
// attribute) indexes, typed weighted edges with absolute, additive and
// multiplicative updates, rejected calls that must change nothing,
// snapshots saved and reloaded in the middle of a run, filters for vector
// search, and hostile snapshot files.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ruvllm/store/hnsw_index.hpp"
#include "ruvllm/store/records.hpp"
#include "store/memory_test_support.hpp"
#include "support/property.hpp"
#include "support/rng.hpp"

namespace records_test {

namespace {

namespace st = ruvllm::store;
using mem_support::random_id;
using st::uuid;

struct model {
  std::map<uuid, st::record> records;
  std::map<std::tuple<uuid, uuid, st::edge_type>, float> edges;
};

constexpr st::record_kind kinds[] = {st::record_kind::generic, st::record_kind::policy, st::record_kind::session,
                                     st::record_kind::witness};

std::vector<uuid> ids_sorted_by(const model& m, st::record_kind kind, auto key_of, auto accept) {
  std::vector<std::pair<decltype(key_of(std::declval<const st::record&>())), uuid>> v;
  for (auto& [id, r] : m.records)
    if (r.kind == kind && accept(r)) v.emplace_back(key_of(r), id);
  std::sort(v.begin(), v.end());
  std::vector<uuid> out;
  for (auto& x : v) out.push_back(x.second);
  return out;
}

void check_same(const st::record_graph& g, const model& m) {
  REQUIRE(g.size() == m.records.size());
  REQUIRE(g.edge_count() == m.edges.size());
  for (auto k : kinds) {
    std::size_t n = 0;
    for (auto& [id, r] : m.records) n += r.kind == k;
    REQUIRE(g.count(k) == n);
  }
  for (auto& [id, r] : m.records) {
    const st::record* got = g.get(id);
    REQUIRE(got != nullptr);
    st::record a = *got;
    a.key = 0;
    st::record b = r;
    b.key = 0;
    REQUIRE(a == b);
    REQUIRE(g.by_key(got->key) == got);
  }
  // Time ranges per kind and over every kind, against a scan of the model.
  for (const auto& range : {std::pair<std::int64_t, std::int64_t>{0, 500}, {250, 750}, {900, 1001}}) {
    // Named copies, not a structured binding: clang 14 cannot capture those.
    const std::int64_t lo = range.first, hi = range.second;
    auto in = [&](const st::record& r) { return r.time >= lo && r.time < hi; };
    for (auto k : kinds)
      REQUIRE(g.in_time_range(k, lo, hi) == ids_sorted_by(
                                                m, k, [](const st::record& r) { return r.time; }, in));
    std::vector<std::pair<std::int64_t, uuid>> all;
    for (auto& [id, r] : m.records)
      if (in(r)) all.emplace_back(r.time, id);
    std::sort(all.begin(), all.end());
    std::vector<uuid> want;
    for (auto& a : all) want.push_back(a.second);
    REQUIRE(g.in_time_range(lo, hi) == want);
  }
  // The numeric attribute index (NaN and missing values are not indexed).
  auto q_in = [](const st::record& r) {
    auto q = r.number("quality");
    return q && !std::isnan(*q) && *q >= 0.25 && *q <= 0.75;
  };
  for (auto k : kinds)
    REQUIRE(g.in_attribute_range(k, 0.25, 0.75) ==
            ids_sorted_by(
                m, k, [](const st::record& r) { return *r.number("quality"); }, q_in));
  // Groups.
  for (auto k : kinds)
    for (std::uint64_t grp = 0; grp < 4; ++grp)
      REQUIRE(g.in_group(k, grp) ==
              ids_sorted_by(
                  m, k, [](const st::record& r) { return r.id; }, [&](const st::record& r) { return r.group == grp; }));
  // Edges: every record's neighbours, both directions, heaviest first.
  for (auto& [id, r] : m.records) {
    std::multiset<std::tuple<uuid, uuid, int, float>> expect, got;
    for (auto& [k, w] : m.edges)
      if (std::get<0>(k) == id || std::get<1>(k) == id)
        expect.emplace(std::get<0>(k), std::get<1>(k), static_cast<int>(std::get<2>(k)), w);
    for (auto& e : g.neighbours(id)) got.emplace(e.from, e.to, static_cast<int>(e.type), e.weight);
    // A self-edge appears on both sides of its record.
    for (auto& [k, w] : m.edges)
      if (std::get<0>(k) == id && std::get<1>(k) == id) expect.emplace(id, id, static_cast<int>(std::get<2>(k)), w);
    REQUIRE(got == expect);
    auto ordered = g.neighbours(id);
    for (std::size_t i = 1; i < ordered.size(); ++i) REQUIRE(ordered[i - 1].weight >= ordered[i].weight);
    for (auto& e : g.neighbours(id, st::edge_type::session_pattern, st::direction::out))
      REQUIRE((e.from == id && e.type == st::edge_type::session_pattern));
  }
  std::map<std::tuple<uuid, uuid, st::edge_type>, float> all_edges;
  g.for_each_edge([&](const st::edge& e) { all_edges[{e.from, e.to, e.type}] = e.weight; });
  REQUIRE(all_edges == m.edges);
}

st::record random_record(ruvllm::test::rng& gen) {
  st::record r;
  r.id = random_id(gen);
  r.kind = kinds[gen.uniform_index(0, 3)];
  r.time = static_cast<std::int64_t>(gen.uniform_index(0, 1000));
  r.group = gen.uniform_index(0, 3);
  if (gen.chance(0.8)) r.set("quality", static_cast<double>(gen.uniform(0.0f, 1.0f)));
  r.set("kind", std::string(gen.chance(0.5) ? "pattern" : "session"));
  r.set("uses", static_cast<std::int64_t>(gen.uniform_index(0, 9)));
  for (std::size_t i = gen.uniform_index(0, 24); i > 0; --i)
    r.payload.push_back(static_cast<std::byte>(gen.next_u32()));
  return r;
}
}  // namespace

TEST_CASE("record_graph matches a model under random operations", "[store][records][property]") {
  ruvllm::test::check_property(91, 6, [](ruvllm::test::rng& gen, std::size_t trial) {
    const mem_support::scratch_dir dir("records_property");
    std::filesystem::create_directories(dir.path());
    const std::string snap = dir.path() + "/records.snap";
    st::record_graph g("quality");
    model m;
    std::vector<uuid> ids;
    auto pick = [&] { return ids[gen.uniform_index(0, ids.size() - 1)]; };
    for (int step = 0; step < 400; ++step) {
      const std::size_t op = gen.uniform_index(0, 13);
      INFO("trial " << trial << " step " << step << " op " << op);
      if (op <= 3 || ids.size() < 2) {
        st::record r = random_record(gen);
        REQUIRE(g.insert(r));
        CHECK(g.insert(r).error().code() == ruvllm::errc::already_exists);
        std::sort(r.attributes.begin(), r.attributes.end(), [](auto& a, auto& b) { return a.first < b.first; });
        m.records[r.id] = r;
        ids.push_back(r.id);
      } else if (op == 4) {
        const std::size_t i = gen.uniform_index(0, ids.size() - 1);
        REQUIRE(g.remove(ids[i]));
        m.records.erase(ids[i]);
        std::erase_if(m.edges,
                      [&](auto& e) { return std::get<0>(e.first) == ids[i] || std::get<1>(e.first) == ids[i]; });
        ids.erase(ids.begin() + static_cast<long>(i));
      } else if (op == 5) {
        const uuid id = pick();
        const double q = gen.uniform(0.0f, 1.0f);
        REQUIRE(g.set_attribute(id, "quality", q));
        m.records[id].set("quality", q);
      } else if (op == 6) {
        const uuid id = pick();
        const auto t = static_cast<std::int64_t>(gen.uniform_index(0, 1000));
        REQUIRE(g.set_time(id, t));
        m.records[id].time = t;
      } else if (op == 7) {
        // Replace keeps kind, key and edges; a kind change is refused.
        const uuid id = pick();
        st::record r = random_record(gen);
        r.id = id;
        r.kind = m.records[id].kind;
        REQUIRE(g.replace(r));
        std::sort(r.attributes.begin(), r.attributes.end(), [](auto& a, auto& b) { return a.first < b.first; });
        m.records[id] = r;
        r.kind = static_cast<st::record_kind>((static_cast<int>(r.kind) + 1) % 4);
        CHECK(g.replace(r).error().code() == ruvllm::errc::invalid_argument);
      } else if (op <= 9) {
        const uuid a = pick(), b = pick();
        const auto type = static_cast<st::edge_type>(gen.uniform_index(1, 4));
        const float w = gen.uniform(0.0f, 1.0f);
        REQUIRE(g.link(a, b, type, w));
        m.edges[{a, b, type}] = w;
      } else if (op == 10 && !m.edges.empty()) {
        auto it = std::next(m.edges.begin(), static_cast<long>(gen.uniform_index(0, m.edges.size() - 1)));
        auto [a, b, type] = it->first;
        const int how = static_cast<int>(gen.uniform_index(0, 2));
        if (how == 0) {
          auto w = g.adjust_weight(a, b, type, 0.25f);
          REQUIRE(w);
          it->second += 0.25f;
          REQUIRE(*w == it->second);
        } else if (how == 1) {
          auto w = g.scale_weight(a, b, type, 1.05f);
          REQUIRE(w);
          it->second *= 1.05f;
          REQUIRE(*w == it->second);
          REQUIRE(*g.edge_weight(a, b, type) == it->second);
        } else {
          REQUIRE(g.remove_edge(a, b, type));
          CHECK(g.remove_edge(a, b, type).error().code() == ruvllm::errc::not_found);
          m.edges.erase(it);
        }
      } else if (op == 11) {
        // Rejected calls: each must leave the graph exactly as it was
        // (checked by check_same against the untouched model below).
        const uuid a = pick(), stranger = random_id(gen);
        CHECK(g.link(a, stranger, st::edge_type::related, 1.0f).error().code() == ruvllm::errc::not_found);
        CHECK(g.link(a, a, st::edge_type::related, std::numeric_limits<float>::quiet_NaN()).error().code() ==
              ruvllm::errc::invalid_argument);
        CHECK(g.link(a, a, static_cast<st::edge_type>(9), 1.0f).error().code() == ruvllm::errc::invalid_argument);
        CHECK(g.remove(stranger).error().code() == ruvllm::errc::not_found);
        CHECK(g.set_time(stranger, 1).error().code() == ruvllm::errc::not_found);
        CHECK(g.set_attribute(stranger, "quality", 0.5).error().code() == ruvllm::errc::not_found);
        CHECK(g.adjust_weight(a, stranger, st::edge_type::related, 1.0f).error().code() == ruvllm::errc::not_found);
        st::record nil;
        CHECK(g.insert(nil).error().code() == ruvllm::errc::invalid_argument);
        st::record bad_kind = random_record(gen);
        bad_kind.kind = static_cast<st::record_kind>(7);
        CHECK(g.insert(bad_kind).error().code() == ruvllm::errc::invalid_argument);
        st::record twice = random_record(gen);
        twice.attributes.emplace_back("uses", std::int64_t{1});  // "uses" is already there
        CHECK(g.insert(twice).error().code() == ruvllm::errc::invalid_argument);
        if (!m.edges.empty()) {
          auto [x, y, t] = m.edges.begin()->first;
          CHECK(g.scale_weight(x, y, t, std::numeric_limits<float>::infinity()).error().code() ==
                ruvllm::errc::invalid_argument);
        }
      } else if (op == 12) {
        // Snapshot and continue on the reloaded graph.
        REQUIRE(g.save(snap, static_cast<std::uint64_t>(step)));
        auto loaded = st::record_graph::load(snap);
        REQUIRE(loaded);
        REQUIRE(loaded->sequence() == static_cast<std::uint64_t>(step));
        REQUIRE(loaded->next_key() == g.next_key());
        g = std::move(*loaded);
      }
      check_same(g, m);
    }
    REQUIRE(g.save(snap));
    auto loaded = st::record_graph::load(snap);
    REQUIRE(loaded);
    check_same(*loaded, m);
    // Keys survive the snapshot: each record keeps the same vector key.
    m.records.begin()->second.key = g.get(m.records.begin()->first)->key;
    CHECK(loaded->get(m.records.begin()->first)->key == m.records.begin()->second.key);
  });
}

TEST_CASE("record_graph leaves NaN out of the attribute index", "[store][records]") {
  ruvllm::test::rng gen(94);
  st::record_graph g("quality");
  st::record r = random_record(gen);
  r.set("quality", std::numeric_limits<double>::quiet_NaN());
  REQUIRE(g.insert(r));
  CHECK(g.in_attribute_range(r.kind, -1e300, 1e300).empty());
  CHECK(g.in_time_range(r.kind, r.time, r.time + 1) == std::vector<uuid>{r.id});
  REQUIRE(g.set_attribute(r.id, "quality", 0.5));
  CHECK(g.in_attribute_range(r.kind, 0.5, 0.5) == std::vector<uuid>{r.id});
  REQUIRE(g.set_attribute(r.id, "quality", std::numeric_limits<double>::quiet_NaN()));
  CHECK(g.in_attribute_range(r.kind, -1e300, 1e300).empty());
  REQUIRE(g.remove(r.id));
  CHECK(g.size() == 0);
}

TEST_CASE("record_graph filters drive filtered vector search", "[store][records]") {
  ruvllm::test::rng gen(92);
  st::record_graph g("quality");
  auto index = st::hnsw_index<st::metric::l2, ruvllm::precision::f32>::create(st::hnsw_options{.dimension = 4}).value();
  for (int i = 0; i < 500; ++i) {
    st::record r;
    r.id = random_id(gen);
    r.time = 1'700'000'000'000 + i;
    r.set("quality", i % 10 / 10.0);
    const auto key = g.insert(r).value();
    const float v[4] = {static_cast<float>(i), 0, 0, 0};
    REQUIRE(index.insert(key, v));
  }
  const float q[4] = {250, 0, 0, 0};
  auto hits = index.search(q, 5, {}, g.filter([](const st::record& r) { return r.number("quality") >= 0.85; })).value();
  REQUIRE(hits.size() == 5);
  for (auto& h : hits) CHECK(g.by_key(h.key)->number("quality") == Approx(0.9));
  CHECK(g.by_key(hits[0].key)->time == 1'700'000'000'000 + 249);
  CHECK(st::to_string(uuid{0x0123456789abcdefull, 0xfedcba9876543210ull}) == "01234567-89ab-cdef-fedc-ba9876543210");
  // make_uuid_v4 sets the version and variant bits.
  const uuid v4 = st::make_uuid_v4(~0ull, ~0ull);
  CHECK(st::to_string(v4).substr(14, 1) == "4");
  CHECK((v4.lo >> 62) == 2);
}

TEST_CASE("record snapshots: truncations and flips fail cleanly", "[store][records]") {
  ruvllm::test::rng gen(93);
  st::record_graph g("quality");
  std::vector<uuid> ids;
  for (int i = 0; i < 20; ++i) {
    st::record r;
    r.id = random_id(gen);
    r.kind = kinds[i % 4];
    r.time = i;
    r.group = static_cast<std::uint64_t>(i % 3);
    r.set("quality", 0.5);
    r.set("name", std::string("r") + std::to_string(i));
    r.payload.assign(static_cast<std::size_t>(i), std::byte{0x5a});
    REQUIRE(g.insert(r));
    ids.push_back(r.id);
  }
  for (int i = 1; i < 20; ++i) REQUIRE(g.link(ids[i - 1], ids[i], st::edge_type::session_pattern, 1.0f));
  const mem_support::scratch_dir dir("records_bad");
  std::filesystem::create_directories(dir.path());
  const std::string good = dir.path() + "/good", bad = dir.path() + "/bad";
  REQUIRE(g.save(good));
  std::ifstream in(good, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  for (std::size_t n = 0; n < bytes.size(); n += 3) {
    std::ofstream(bad, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(n));
    auto r = st::record_graph::load(bad);
    REQUIRE(!r);
    CHECK(r.error().file() == bad);
  }
  // Every flipped byte is caught (the body checksum or a header check).
  for (std::size_t at = 0; at < bytes.size(); at += 2) {
    auto copy = bytes;
    copy[at] = static_cast<char>(copy[at] ^ 0x10);
    std::ofstream(bad, std::ios::binary | std::ios::trunc)
        .write(copy.data(), static_cast<std::streamsize>(copy.size()));
    auto r = st::record_graph::load(bad);
    REQUIRE(!r);
    CHECK(r.error().has_offset());
  }
}

}  // namespace records_test
