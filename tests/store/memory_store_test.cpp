// memory_store against a model (std::map of records, edges and vectors):
// random batches, valid and invalid, committed atomically (a rejected batch
// changes nothing, in memory or after reopening); reopening replays the log
// exactly, with and without checkpoints, compaction and automatic
// checkpoints; each durability mode syncs as it promises; interrupted saves
// and hostile files; readers concurrent with a writer see whole batches.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ruvllm/store/memory_store.hpp"
#include "store/memory_test_support.hpp"
#include "support/property.hpp"
#include "support/rng.hpp"

namespace memory_store_test {

namespace {

namespace st = ruvllm::store;
using mem_support::image_of;
using mem_support::random_id;
using mem_support::store_image;
using st::uuid;
using store_t = st::memory_store<st::metric::l2, ruvllm::precision::f32>;

constexpr std::uint32_t dims[] = {4, 3};

st::memory_store_options options(st::durability mode = st::durability::every_write,
                                 std::uint64_t checkpoint_bytes = 0) {
  st::memory_store_options o;
  for (auto d : dims) o.spaces.push_back(st::hnsw_options{.dimension = d, .m = 8, .ef_construction = 32});
  o.wal.mode = mode;
  o.checkpoint_bytes = checkpoint_bytes;
  return o;
}

// One operation of a test batch, applied both to a memory_batch and to the model.
struct test_op {
  enum kind_t { insert, replace, remove, link, adjust, scale, unlink } kind;
  st::record rec;
  std::vector<std::pair<std::uint32_t, std::vector<float>>> embeddings;
  uuid from{}, to{};
  st::edge_type type = st::edge_type::related;
  float value = 0.0f;
};

struct model {
  store_image img;  // records (key 0), edges, vectors by id
};

// Applies op to m; false when the store must reject it.
bool apply(model& m, const test_op& op) {
  auto& recs = m.img.records;
  auto check_embeddings = [&] {
    std::vector<std::uint32_t> seen;
    for (auto& [space, v] : op.embeddings) {
      if (space >= std::size(dims) || v.size() != dims[space]) return false;
      if (std::find(seen.begin(), seen.end(), space) != seen.end()) return false;
      seen.push_back(space);
      for (float x : v)
        if (!std::isfinite(x)) return false;
    }
    return true;
  };
  auto put_embeddings = [&](const uuid& id) {
    for (auto& [space, v] : op.embeddings) m.img.vectors[space][id] = v;
  };
  auto drop = [&](const uuid& id) {
    recs.erase(id);
    for (auto& sp : m.img.vectors) sp.erase(id);
    std::erase_if(m.img.edges, [&](auto& e) { return std::get<0>(e.first) == id || std::get<1>(e.first) == id; });
  };
  switch (op.kind) {
    case test_op::insert: {
      if (op.rec.id.is_nil() || recs.contains(op.rec.id) || !check_embeddings()) return false;
      st::record r = op.rec;
      std::sort(r.attributes.begin(), r.attributes.end(), [](auto& a, auto& b) { return a.first < b.first; });
      recs[r.id] = r;
      put_embeddings(r.id);
      return true;
    }
    case test_op::replace: {
      auto it = recs.find(op.rec.id);
      if (it == recs.end() || it->second.kind != op.rec.kind || !check_embeddings()) return false;
      st::record r = op.rec;
      std::sort(r.attributes.begin(), r.attributes.end(), [](auto& a, auto& b) { return a.first < b.first; });
      it->second = r;
      put_embeddings(r.id);
      return true;
    }
    case test_op::remove:
      if (!recs.contains(op.from)) return false;
      drop(op.from);
      return true;
    default: {
      if (!recs.contains(op.from) || !recs.contains(op.to)) return false;
      const std::tuple<uuid, uuid, int> k{op.from, op.to, static_cast<int>(op.type)};
      auto it = m.img.edges.find(k);
      float w = op.value;
      if (op.kind != test_op::link) {
        if (it == m.img.edges.end()) return false;
        if (op.kind == test_op::unlink) {
          m.img.edges.erase(it);
          return true;
        }
        w = op.kind == test_op::adjust ? it->second + op.value : it->second * op.value;
      }
      if (!std::isfinite(w)) return false;
      m.img.edges[k] = w;
      return true;
    }
  }
}

void add_to(st::memory_batch& b, const test_op& op) {
  std::vector<st::embedding_ref> embs;
  for (auto& [space, v] : op.embeddings) embs.push_back(st::embedding_ref{space, v});
  switch (op.kind) {
    case test_op::insert: b.insert(op.rec, embs); break;
    case test_op::replace: b.replace(op.rec, embs); break;
    case test_op::remove: b.remove(op.from); break;
    case test_op::link: b.link(op.from, op.to, op.type, op.value); break;
    case test_op::adjust: b.adjust_weight(op.from, op.to, op.type, op.value); break;
    case test_op::scale: b.scale_weight(op.from, op.to, op.type, op.value); break;
    case test_op::unlink: b.unlink(op.from, op.to, op.type); break;
  }
}

// A random operation; when `bad`, one that is invalid in some way (nearly
// always; the model decides).
test_op random_op(ruvllm::test::rng& gen, const model& m, bool bad) {
  test_op op{};
  std::vector<uuid> known;
  for (auto& [id, r] : m.img.records) known.push_back(id);
  auto existing = [&]() -> uuid {
    if (known.empty() || (bad && gen.chance(0.5))) return random_id(gen);
    return known[gen.uniform_index(0, known.size() - 1)];
  };
  auto random_embeddings = [&] {
    for (std::uint32_t s = 0; s < std::size(dims); ++s)
      if (gen.chance(0.6)) op.embeddings.emplace_back(s, gen.uniform_vector(dims[s]));
    if (bad && !op.embeddings.empty()) {
      switch (gen.uniform_index(0, 3)) {
        case 0: op.embeddings[0].second.push_back(1.0f); break;
        case 1: op.embeddings[0].second[0] = std::numeric_limits<float>::quiet_NaN(); break;
        case 2: op.embeddings[0].first = 7; break;
        default: op.embeddings.push_back(op.embeddings[0]); break;
      }
    }
  };
  auto random_fields = [&](st::record& r) {
    r.time = static_cast<std::int64_t>(gen.uniform_index(0, 10000));
    r.group = gen.uniform_index(0, 5);
    r.set("quality", static_cast<double>(gen.uniform(0.0f, 1.0f)));
    r.set("name", std::string(gen.uniform_index(0, 20), 'x'));
    r.payload.assign(gen.uniform_index(0, 40), static_cast<std::byte>(gen.next_u32()));
  };
  const std::size_t pick = gen.uniform_index(0, 9);
  if (pick <= 2 || known.size() < 3) {
    op.kind = test_op::insert;
    op.rec.id = bad && gen.chance(0.3) && !known.empty() ? known[0] : random_id(gen);
    if (bad && gen.chance(0.1)) op.rec.id = uuid{};
    op.rec.kind = static_cast<st::record_kind>(gen.uniform_index(0, 3));
    random_fields(op.rec);
    random_embeddings();
  } else if (pick == 3) {
    op.kind = test_op::replace;
    op.rec.id = existing();
    auto it = m.img.records.find(op.rec.id);
    op.rec.kind = it == m.img.records.end() ? st::record_kind::generic : it->second.kind;
    if (bad && gen.chance(0.4)) op.rec.kind = static_cast<st::record_kind>((static_cast<int>(op.rec.kind) + 1) % 4);
    random_fields(op.rec);
    random_embeddings();
  } else if (pick == 4) {
    op.kind = test_op::remove;
    op.from = existing();
  } else {
    static constexpr test_op::kind_t edge_kinds[] = {test_op::link, test_op::link, test_op::adjust, test_op::scale,
                                                     test_op::unlink};
    op.kind = edge_kinds[gen.uniform_index(0, 4)];
    op.type = static_cast<st::edge_type>(gen.uniform_index(1, 4));
    if (op.kind != test_op::link && !m.img.edges.empty() && !(bad && gen.chance(0.5))) {
      auto it = std::next(m.img.edges.begin(), static_cast<long>(gen.uniform_index(0, m.img.edges.size() - 1)));
      op.from = std::get<0>(it->first);
      op.to = std::get<1>(it->first);
      op.type = static_cast<st::edge_type>(std::get<2>(it->first));
    } else {
      op.from = existing();
      op.to = existing();
    }
    op.value = op.kind == test_op::scale ? 1.05f : gen.uniform(-1.0f, 1.0f);
    if (bad && gen.chance(0.3)) op.value = std::numeric_limits<float>::quiet_NaN();
  }
  return op;
}

}  // namespace

TEST_CASE("memory_store matches a model under random batches, reopening and checkpoints", "[store][memory][property]") {
  ruvllm::test::check_property(111, 4, [](ruvllm::test::rng& gen, std::size_t trial) {
    const mem_support::scratch_dir dir("memory_property");
    const auto mode = static_cast<st::durability>(trial % 3);
    // A small automatic checkpoint threshold in half of the trials.
    const std::uint64_t auto_ckpt = trial % 2 == 0 ? 0 : 6000;
    auto store = std::make_optional(store_t::open(dir.path(), options(mode, auto_ckpt)).value());
    model m;
    m.img.vectors.resize(std::size(dims));
    std::size_t accepted = 0, rejected = 0;
    for (int step = 0; step < 160; ++step) {
      INFO("trial " << trial << " step " << step);
      const std::size_t n = gen.uniform_index(1, 6);
      // A quarter of the batches carry one bad operation somewhere.
      const std::size_t bad_at = gen.chance(0.25) ? gen.uniform_index(0, n - 1) : n;
      model next = m;
      bool valid = true;
      st::memory_batch batch;
      for (std::size_t i = 0; i < n; ++i) {
        const test_op op = random_op(gen, next, i == bad_at);
        add_to(batch, op);
        if (valid) valid = apply(next, op);
      }
      const auto before = store->sequence();
      auto r = store->commit(batch);
      REQUIRE(static_cast<bool>(r) == valid);
      if (valid) {
        m = std::move(next);
        ++accepted;
      } else {
        REQUIRE(r.error().message().find("batch operation") != std::string::npos);
        REQUIRE(store->sequence() == before);  // nothing was logged
        ++rejected;
      }
      REQUIRE(image_of(*store) == m.img);
      const std::size_t event = gen.uniform_index(0, 19);
      if (event == 0) {
        store.reset();
        store.emplace(store_t::open(dir.path(), options(mode, auto_ckpt)).value());
        REQUIRE(image_of(*store) == m.img);
      } else if (event == 1) {
        REQUIRE(store->checkpoint());
      } else if (event == 2) {
        REQUIRE(store->compact());
        REQUIRE(image_of(*store) == m.img);
      }
    }
    REQUIRE(store->verify());
    // Searching each space finds every stored vector itself, closest.
    for (std::uint32_t s = 0; s < std::size(dims); ++s)
      for (auto& [id, v] : m.img.vectors[s]) {
        auto hits = store->search(s, v, 1).value();
        REQUIRE(hits.size() == 1);
        CHECK(hits[0].distance == Approx(0.0f).margin(1e-5));
      }
    store.reset();
    store.emplace(store_t::open(dir.path(), options(mode, auto_ckpt)).value());
    REQUIRE(image_of(*store) == m.img);
    CHECK(accepted > 40);
    CHECK(rejected > 10);
  });
}

TEST_CASE("memory_store: rejected calls change nothing, also after reopening", "[store][memory]") {
  const mem_support::scratch_dir dir("memory_bad");
  ruvllm::test::rng gen(112);
  auto store = std::make_optional(store_t::open(dir.path(), options()).value());
  st::record a;
  a.id = random_id(gen);
  a.kind = st::record_kind::policy;
  a.set("quality", 0.5);
  const float va[4] = {1, 2, 3, 4};
  REQUIRE(store->insert(a, {{0, va}}));
  st::record b = a;
  b.id = random_id(gen);
  REQUIRE(store->insert(b));
  REQUIRE(store->link(a.id, b.id, st::edge_type::session_pattern, 0.5f));
  const store_image good = image_of(*store);
  const auto seq = store->sequence();

  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float v5[5] = {1, 2, 3, 4, 5};
  const float vnan[4] = {1, nan, 3, 4};
  const float vinf[4] = {1, 2, inf, 4};
  st::record c = a;
  c.id = random_id(gen);
  using ruvllm::errc;
  CHECK(store->insert(c, {{0, v5}}).error().code() == errc::invalid_argument);    // dimension
  CHECK(store->insert(c, {{0, vnan}}).error().code() == errc::invalid_argument);  // NaN
  CHECK(store->insert(c, {{0, vinf}}).error().code() == errc::invalid_argument);  // inf
  CHECK(store->insert(c, {{2, va}}).error().code() == errc::invalid_argument);    // no such space
  CHECK(store->insert(a).error().code() == errc::already_exists);                 // duplicate id
  CHECK(store->insert(st::record{}).error().code() == errc::invalid_argument);    // nil id
  CHECK(store->replace(c).error().code() == errc::not_found);                     // unknown id
  CHECK(store->remove(c.id).error().code() == errc::not_found);
  CHECK(store->link(a.id, c.id, st::edge_type::related, 1.0f).error().code() == errc::not_found);
  CHECK(store->link(a.id, b.id, st::edge_type::related, nan).error().code() == errc::invalid_argument);
  CHECK(store->scale_weight(a.id, b.id, st::edge_type::session_pattern, inf).error().code() == errc::invalid_argument);
  CHECK(store->adjust_weight(a.id, b.id, st::edge_type::related, 1.0f).error().code() == errc::not_found);
  CHECK(store->unlink(b.id, a.id, st::edge_type::session_pattern).error().code() == errc::not_found);
  st::record kind_change = a;
  kind_change.kind = st::record_kind::session;
  CHECK(store->replace(kind_change).error().code() == errc::invalid_argument);
  CHECK(store->search(0, v5, 3).error().code() == errc::invalid_argument);
  CHECK(store->search(5, va, 3).error().code() == errc::invalid_argument);
  // A batch whose last operation fails leaves its valid first ones undone.
  st::memory_batch batch;
  batch.insert(c, {{0, va}});
  batch.link(c.id, a.id, st::edge_type::related, 1.0f);
  batch.remove(b.id);
  batch.insert(c);  // duplicate within the batch
  CHECK(store->commit(batch).error().code() == errc::already_exists);
  CHECK(store->modify(c.id, [](st::record&) -> ruvllm::result<void> { return {}; }).error().code() == errc::not_found);
  CHECK(store
            ->modify(a.id,
                     [](st::record&) -> ruvllm::result<void> {
                       return ruvllm::make_error(errc::cancelled, "changed my mind");
                     })
            .error()
            .code() == errc::cancelled);

  REQUIRE(store->sequence() == seq);
  REQUIRE(image_of(*store) == good);
  CHECK(store->stats().rejected >= 15);
  store.reset();
  store.emplace(store_t::open(dir.path(), options()).value());
  REQUIRE(image_of(*store) == good);
  // Relative weight updates are logged as the weights they produced.
  REQUIRE(store->scale_weight(a.id, b.id, st::edge_type::session_pattern, 1.05f).value() == 0.5f * 1.05f);
  REQUIRE(store->adjust_weight(a.id, b.id, st::edge_type::session_pattern, 0.25f).value() == 0.5f * 1.05f + 0.25f);
  store.reset();
  store.emplace(store_t::open(dir.path(), options()).value());
  CHECK(store->read([&](const st::record_graph& g) {
    return g.edge_weight(a.id, b.id, st::edge_type::session_pattern).value();
  }) == 0.5f * 1.05f + 0.25f);
}

TEST_CASE("memory_store durability modes sync as promised", "[store][memory][wal]") {
  ruvllm::test::rng gen(113);
  const float v[4] = {1, 0, 0, 0};
  for (auto mode : {st::durability::every_write, st::durability::group_commit, st::durability::none}) {
    const mem_support::scratch_dir dir("memory_modes");
    auto o = options(mode);
    o.wal.group_records = 8;
    o.wal.group_interval = std::chrono::hours(1);  // only the count triggers here
    std::vector<uuid> ids;
    {
      auto store = store_t::open(dir.path(), o).value();
      for (int i = 0; i < 20; ++i) {
        st::record r;
        r.id = random_id(gen);
        ids.push_back(r.id);
        REQUIRE(store.insert(r, {{0, v}}));
      }
      const auto s = store.stats().wal;
      CHECK(s.appends == 20);
      if (mode == st::durability::every_write) CHECK(s.syncs == 20);  // one fdatasync per acknowledged write
      if (mode == st::durability::group_commit) CHECK(s.syncs == 2);  // after the 8th and the 16th
      if (mode == st::durability::none) CHECK(s.syncs == 0);
      REQUIRE(store.sync());
      CHECK(store.stats().wal.syncs == (mode == st::durability::every_write    ? 20u
                                        : mode == st::durability::group_commit ? 3u
                                                                               : 1u));
      REQUIRE(store.sync());  // nothing pending: no second fdatasync
      CHECK(store.stats().wal.syncs == (mode == st::durability::every_write    ? 20u
                                        : mode == st::durability::group_commit ? 3u
                                                                               : 1u));
    }
    // Whatever the mode, a process that ends (even by a crash, see the crash
    // test) leaves every write in the log.
    auto store = store_t::open(dir.path(), o).value();
    for (auto& id : ids) REQUIRE(store.get(id));
  }
}

TEST_CASE("memory_store: interrupted saves, corrupt checkpoints and logs", "[store][memory]") {
  const mem_support::scratch_dir dir("memory_files");
  ruvllm::test::rng gen(114);
  store_image good;
  {
    auto store = store_t::open(dir.path(), options()).value();
    for (int i = 0; i < 30; ++i) {
      st::record r;
      r.id = random_id(gen);
      r.time = i;
      r.set("quality", i / 30.0);
      const auto v = gen.uniform_vector(4);
      REQUIRE(store.insert(r, {{0, v}}));
      if (i == 15) REQUIRE(store.checkpoint());
    }
    good = image_of(store);
  }
  // A save interrupted before its rename leaves a temporary file: ignored.
  std::ofstream(dir.path() + "/records.snap.tmp") << "half a snapshot";
  std::ofstream(dir.path() + "/space0.hnsw.tmp") << "half an index";
  {
    auto store = store_t::open(dir.path(), options()).value();
    REQUIRE(image_of(store) == good);
    REQUIRE(store.verify());
  }
  // Options that disagree with the store are refused.
  {
    auto o = options();
    o.spaces.pop_back();
    CHECK(store_t::open(dir.path(), o).error().code() == ruvllm::errc::invalid_argument);
    o = options();
    o.spaces[1].dimension = 5;
    CHECK(store_t::open(dir.path(), o).error().code() == ruvllm::errc::invalid_argument);
    CHECK(st::memory_store<st::metric::cosine, ruvllm::precision::f32>::open(dir.path(), options()).error().code() ==
          ruvllm::errc::invalid_argument);
  }
  // A torn log tail is cut; the writes before it stay.
  const std::string wal = dir.path() + "/store.wal";
  const auto wal_bytes = std::filesystem::file_size(wal);
  std::filesystem::resize_file(wal, wal_bytes - 5);
  {
    auto store = store_t::open(dir.path(), options()).value();
    auto img = image_of(store);
    CHECK(img.records.size() == good.records.size() - 1);  // the last insert was torn
    CHECK(std::filesystem::file_size(wal) < wal_bytes - 5);
  }
  // Corrupt checkpoints and manifest: errors naming the file, never a served store.
  for (const char* name : {"/records.snap", "/space0.hnsw", "/store.manifest"}) {
    const std::string path = dir.path() + name;
    std::vector<char> bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    auto flipped = bytes;
    flipped[20] ^= 0x21;  // inside each file's checksummed header
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(flipped.data(), static_cast<long>(flipped.size()));
    auto r = store_t::open(dir.path(), options());
    REQUIRE(!r);
    CHECK(r.error().file() == path);
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<long>(bytes.size()));
    REQUIRE(store_t::open(dir.path(), options()));
  }
  // A store with data but no manifest is refused.
  std::filesystem::remove(dir.path() + "/store.manifest");
  CHECK(store_t::open(dir.path(), options()).error().code() == ruvllm::errc::corrupt_data);
}

TEST_CASE("memory_store readers see whole batches while a writer commits", "[store][memory][concurrency]") {
  const mem_support::scratch_dir dir("memory_concurrent");
  auto store = store_t::open(dir.path(), options(st::durability::none)).value();
  constexpr int batches = 120;
  std::vector<std::pair<uuid, uuid>> pairs(batches);
  ruvllm::test::rng gen(115);
  for (auto& p : pairs) p = {random_id(gen), random_id(gen)};
  std::atomic<int> published{0};
  std::atomic<bool> done{false};
  std::atomic<std::size_t> checks{0}, failures{0};  // Catch2 assertions are not thread-safe
  auto reader = [&](std::uint64_t seed) {
    ruvllm::test::rng rg(seed);
    while (!done.load()) {
      const int n = published.load();
      store.read([&](const st::record_graph& g) {
        // Each batch inserted A, B and the edge A -> B together: whoever
        // sees A sees the rest.
        for (int i = 0; i < batches; ++i) {
          const bool a = g.get(pairs[i].first) != nullptr;
          if (a != (g.get(pairs[i].second) != nullptr)) ++failures;
          if (a && g.edge_weight(pairs[i].first, pairs[i].second, st::edge_type::related) != 1.0f) ++failures;
          if (i < n && !a) ++failures;
        }
        return 0;
      });
      const auto q = rg.uniform_vector(4);
      auto hits = store.search(0, q, 5);
      if (!hits) ++failures;
      ++checks;
    }
  };
  std::thread r1(reader, 1), r2(reader, 2);
  for (int i = 0; i < batches; ++i) {
    st::memory_batch b;
    st::record a, c;
    a.id = pairs[i].first;
    c.id = pairs[i].second;
    const auto va = gen.uniform_vector(4), vc = gen.uniform_vector(4);
    b.insert(a, {{0, va}});
    b.insert(c, {{0, vc}});
    b.link(a.id, c.id, st::edge_type::related, 1.0f);
    REQUIRE(store.commit(b));
    published.store(i + 1);
    if (i % 40 == 39) REQUIRE(store.checkpoint());
  }
  done.store(true);
  r1.join();
  r2.join();
  CHECK(checks.load() > 0);
  CHECK(failures.load() == 0);
  REQUIRE(store.verify());
}

TEST_CASE("memory_store keeps a space's f16 originals across checkpoints and reopening", "[store][memory]") {
  // The manifest carries the originals' precision: a reopened i8 space still
  // re-ranks against (and returns) f16 originals, not its int8 codes.
  using i8_store = st::memory_store<st::metric::cosine, st::i8>;
  const mem_support::scratch_dir dir("memory_half_originals");
  constexpr std::uint32_t dim = 24;
  st::memory_store_options o;
  o.spaces.push_back(st::hnsw_options{.dimension = dim, .m = 8, .keep_originals = true, .half_originals = true});
  ruvllm::test::rng gen(115);
  std::vector<std::pair<uuid, std::vector<float>>> written;
  {
    auto store = i8_store::open(dir.path(), o).value();
    for (int i = 0; i < 40; ++i) {
      st::record r;
      r.id = random_id(gen);
      r.time = i;
      written.emplace_back(r.id, gen.uniform_vector(dim));
      REQUIRE(store.insert(r, {{0, written.back().second}}));
      if (i == 20) REQUIRE(store.checkpoint());
    }
  }
  auto store = i8_store::open(dir.path(), st::memory_store_options{}).value();
  std::vector<float> got(dim);
  for (const auto& [id, v] : written) {
    REQUIRE(store.embedding(0, id, got));
    double ss = 0.0;
    for (float x : v) ss += static_cast<double>(x) * x;
    const float scale = static_cast<float>(1.0 / std::sqrt(ss));
    for (std::size_t i = 0; i < dim; ++i) CHECK(got[i] == ruvllm::to_float(ruvllm::to_f16(v[i] * scale)));
    const auto hits = store.search(0, v, 1).value();
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].rec.id == id);
  }
}

}  // namespace memory_store_test
