// record_graph against a simple model: records, both secondary indexes,
// typed weighted edges, filters for vector search, snapshots and hostile
// snapshot files.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ruvllm/store/hnsw_index.hpp"
#include "ruvllm/store/records.hpp"
#include "support/property.hpp"
#include "support/rng.hpp"

namespace {

namespace st = ruvllm::store;
using st::uuid;

uuid random_id(ruvllm::test::rng& gen) { return st::make_uuid_v4(gen.next_u64(), gen.next_u64()); }

struct model {
  std::map<uuid, st::record> records;
  std::map<std::tuple<uuid, uuid, st::edge_type>, float> edges;
};

void check_same(const st::record_graph& g, const model& m) {
  REQUIRE(g.size() == m.records.size());
  REQUIRE(g.edge_count() == m.edges.size());
  for (auto& [id, r] : m.records) {
    const st::record* got = g.get(id);
    REQUIRE(got != nullptr);
    REQUIRE(got->time == r.time);
    REQUIRE(got->attributes == r.attributes);
    REQUIRE(g.by_key(got->key) == got);
  }
  // Time range and attribute range against a scan of the model.
  for (auto [lo, hi] : {std::pair<std::int64_t, std::int64_t>{0, 500}, {250, 750}, {900, 1001}}) {
    std::vector<uuid> want;
    std::vector<std::pair<std::int64_t, uuid>> sorted;
    for (auto& [id, r] : m.records)
      if (r.time >= lo && r.time < hi) sorted.emplace_back(r.time, id);
    std::sort(sorted.begin(), sorted.end());
    for (auto& s : sorted) want.push_back(s.second);
    REQUIRE(g.in_time_range(lo, hi) == want);
  }
  std::vector<std::pair<double, uuid>> by_q;
  for (auto& [id, r] : m.records)
    if (auto q = r.number("quality"); q && *q >= 0.25 && *q <= 0.75) by_q.emplace_back(*q, id);
  std::sort(by_q.begin(), by_q.end());
  std::vector<uuid> want;
  for (auto& s : by_q) want.push_back(s.second);
  REQUIRE(g.in_attribute_range(0.25, 0.75) == want);
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
  }
}

}  // namespace

TEST_CASE("record_graph matches a model under random operations", "[store][records][property]") {
  ruvllm::test::check_property(91, 6, [](ruvllm::test::rng& gen, std::size_t) {
    st::record_graph g("quality");
    model m;
    std::vector<uuid> ids;
    for (int step = 0; step < 400; ++step) {
      const std::size_t op = gen.uniform_index(0, 9);
      if (op <= 3 || ids.size() < 2) {
        st::record r;
        r.id = random_id(gen);
        r.time = static_cast<std::int64_t>(gen.uniform_index(0, 1000));
        if (gen.chance(0.8)) r.set("quality", static_cast<double>(gen.uniform(0.0f, 1.0f)));
        r.set("kind", std::string(gen.chance(0.5) ? "pattern" : "session"));
        r.set("uses", static_cast<std::int64_t>(gen.uniform_index(0, 9)));
        REQUIRE(g.insert(r));
        CHECK(!g.insert(r));
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
        const uuid id = ids[gen.uniform_index(0, ids.size() - 1)];
        const double q = gen.uniform(0.0f, 1.0f);
        REQUIRE(g.set_attribute(id, "quality", q));
        m.records[id].set("quality", q);
      } else if (op <= 7) {
        const uuid a = ids[gen.uniform_index(0, ids.size() - 1)], b = ids[gen.uniform_index(0, ids.size() - 1)];
        const auto type = static_cast<st::edge_type>(gen.uniform_index(1, 4));
        const float w = gen.uniform(0.0f, 1.0f);
        REQUIRE(g.link(a, b, type, w));
        m.edges[{a, b, type}] = w;
      } else if (!m.edges.empty()) {
        auto it = std::next(m.edges.begin(), static_cast<long>(gen.uniform_index(0, m.edges.size() - 1)));
        auto [a, b, type] = it->first;
        if (gen.chance(0.5)) {
          auto w = g.adjust_weight(a, b, type, 0.25f);
          REQUIRE(w);
          it->second += 0.25f;
          REQUIRE(*w == it->second);
        } else {
          REQUIRE(g.remove_edge(a, b, type));
          CHECK(!g.remove_edge(a, b, type));
          m.edges.erase(it);
        }
      }
      check_same(g, m);
    }
    const auto path = std::filesystem::temp_directory_path() / ("ruvllm_records_" + std::to_string(::getpid()));
    REQUIRE(g.save(path.string()));
    auto loaded = st::record_graph::load(path.string());
    REQUIRE(loaded);
    check_same(*loaded, m);
    std::filesystem::remove(path);
  });
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
}

TEST_CASE("record snapshots: truncations and flips fail cleanly", "[store][records]") {
  ruvllm::test::rng gen(93);
  st::record_graph g("quality");
  std::vector<uuid> ids;
  for (int i = 0; i < 20; ++i) {
    st::record r;
    r.id = random_id(gen);
    r.time = i;
    r.set("quality", 0.5);
    r.set("name", std::string("r") + std::to_string(i));
    REQUIRE(g.insert(r));
    ids.push_back(r.id);
  }
  for (int i = 1; i < 20; ++i) REQUIRE(g.link(ids[i - 1], ids[i], st::edge_type::session_pattern, 1.0f));
  const auto dir = std::filesystem::temp_directory_path() / ("ruvllm_records_bad_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good").string(), bad = (dir / "bad").string();
  REQUIRE(g.save(good));
  std::ifstream in(good, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  for (std::size_t n = 0; n < bytes.size(); n += 3) {
    std::ofstream(bad, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(n));
    auto r = st::record_graph::load(bad);
    REQUIRE(!r);
    CHECK(r.error().file() == bad);
  }
  for (std::size_t at = 0; at < bytes.size(); at += 2) {
    auto copy = bytes;
    copy[at] = static_cast<char>(copy[at] ^ 0x10);
    std::ofstream(bad, std::ios::binary | std::ios::trunc)
        .write(copy.data(), static_cast<std::streamsize>(copy.size()));
    auto r = st::record_graph::load(bad);
    if (!r) CHECK(r.error().has_offset());
  }
  std::filesystem::remove_all(dir);
}
