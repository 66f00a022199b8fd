// witness_log: entries round-trip through the ring and the store; batches
// hold at most batch_max entries and a partial batch waits for max_delay;
// a full ring pushes back visibly; the background writer writes full and
// aged batches by itself; close() flushes; queries (time range, quality,
// session, similarity) and aggregates (latency percentiles, quality trend,
// model usage) match references computed here; retention by age removes
// durably; failed writes are retried; producers, the writer and readers run
// concurrently (TSan); bad input changes nothing.

#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ruvllm/store/session_index.hpp"
#include "ruvllm/store/witness_log.hpp"
#include "store/memory_test_support.hpp"
#include "store/store_test_support.hpp"
#include "support/rng.hpp"

namespace witness_log_test {

namespace {

namespace st = ruvllm::store;
using mem_support::image_of;
using mem_support::random_id;
using st::uuid;
using store_t = st::memory_store<st::metric::cosine, ruvllm::precision::f32>;
using witness_t = st::witness_log<store_t>;
constexpr std::uint32_t dim = 8;
using namespace std::chrono_literals;

st::memory_store_options options(st::durability mode = st::durability::every_write) {
  auto o = st::role_store_options(dim, st::hnsw_options{.m = 12, .ef_construction = 64});
  o.wal.mode = mode;
  return o;
}

// An owning witness entry (push() takes views).
struct owned_entry {
  st::witness_record rec;
  std::vector<float> query, response;
  [[nodiscard]] st::witness_entry view() const {
    return st::witness_entry{rec.request_id, rec.session_id, rec.pattern_id,   rec.time,
                             query,          response,       rec.routing,      rec.latency,
                             rec.quality,    rec.error_code, rec.error_message};
  }
};

owned_entry random_entry(ruvllm::test::rng& gen, std::int64_t time, const std::vector<uuid>& sessions = {}) {
  owned_entry e;
  e.rec.request_id = random_id(gen);
  if (!sessions.empty()) e.rec.session_id = sessions[gen.uniform_index(0, sessions.size() - 1)];
  e.rec.time = time;
  e.rec.routing = st::witness_routing{static_cast<std::uint32_t>(gen.uniform_index(0, 3)),
                                      gen.uniform(0.0f, 1.0f),
                                      static_cast<std::uint32_t>(gen.uniform_index(0, 4)),
                                      gen.uniform(0.1f, 1.5f),
                                      gen.uniform(0.5f, 1.0f),
                                      gen.uniform(0.0f, 1.0f)};
  e.rec.latency = st::latency_breakdown{static_cast<std::uint32_t>(gen.uniform_index(0, 500)),
                                        static_cast<std::uint32_t>(gen.uniform_index(100, 50000)),
                                        static_cast<std::uint32_t>(gen.uniform_index(1000, 900000)), 0};
  e.rec.latency.total_us = e.rec.latency.queue_us + e.rec.latency.prefill_us + e.rec.latency.decode_us;
  e.rec.quality = gen.uniform(0.0f, 1.0f);
  if (gen.chance(0.1)) {
    e.rec.error_code = static_cast<std::uint32_t>(gen.uniform_index(1, 9));
    e.rec.error_message = "decode failed: " + std::string(gen.uniform_index(0, 10), '!');
  }
  e.query = gen.uniform_vector(dim);
  if (gen.chance(0.8)) e.response = gen.uniform_vector(dim);
  return e;
}

std::uint32_t nearest_rank(std::vector<std::uint32_t> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(rank, 1) - 1];
}

}  // namespace

TEST_CASE("witness_log: round trip, queries and aggregates against references", "[store][roles][witness]") {
  const mem_support::scratch_dir dir("witness");
  ruvllm::test::rng gen(141);
  std::map<uuid, owned_entry> model;
  auto store = std::make_optional(store_t::open(dir.path(), options(st::durability::group_commit)).value());
  // Sessions and a pattern the entries link to (one session is never stored).
  auto sessions = st::session_index<store_t>::open(*store).value();
  std::vector<uuid> session_ids;
  for (int i = 0; i < 4; ++i) {
    st::session s;
    s.id = random_id(gen);
    s.user_id = "u";
    if (i < 3) REQUIRE(sessions.insert(s));
    session_ids.push_back(s.id);
  }
  st::record pattern;
  pattern.id = random_id(gen);
  pattern.kind = st::record_kind::policy;
  REQUIRE(store->insert(pattern));
  {
    auto log = witness_t::open(*store).value();
    for (int i = 0; i < 600; ++i) {
      owned_entry e =
          random_entry(gen, 1'000'000 + static_cast<std::int64_t>(gen.uniform_index(0, 3'600'000)), session_ids);
      if (i % 5 == 0) e.rec.pattern_id = pattern.id;
      REQUIRE(log.push(e.view()));
      model[e.rec.request_id] = e;
      if (i % 128 == 127) REQUIRE(log.flush());
    }
    // close() (here the destructor) flushes the rest.
  }
  store.reset();
  store.emplace(store_t::open(dir.path(), options()).value());
  auto log = witness_t::open(*store).value();
  REQUIRE(log.size() == model.size());
  for (auto& [id, e] : model) REQUIRE(log.get(id).value() == e.rec);
  // Embeddings as given (normalized for cosine); none when none was pushed.
  for (auto& [id, e] : model) {
    std::vector<float> got(dim);
    REQUIRE(log.query_embedding(id, got));
    CHECK(st_support::reference_distance<st::metric::cosine>(got, e.query) == Approx(0.0).margin(1e-5));
    CHECK(static_cast<bool>(log.response_embedding(id, got)) == !e.response.empty());
  }
  // Time range, oldest first.
  const std::int64_t from = 1'000'000 + 600'000, to = 1'000'000 + 1'800'000;
  std::vector<std::pair<std::int64_t, uuid>> in;
  for (auto& [id, e] : model)
    if (e.rec.time >= from && e.rec.time < to) in.emplace_back(e.rec.time, id);
  std::sort(in.begin(), in.end());
  auto range = log.in_time_range(from, to).value();
  REQUIRE(range.size() == in.size());
  for (std::size_t i = 0; i < in.size(); ++i) CHECK(range[i].request_id == in[i].second);
  // Quality threshold through the index: "requests with quality < 0.3".
  std::set<uuid> low;
  for (auto& [id, e] : model)
    if (e.rec.quality <= 0.3f) low.insert(id);
  auto poor = log.with_quality(0.0, 0.3).value();
  std::set<uuid> got_low;
  for (std::size_t i = 0; i < poor.size(); ++i) {
    got_low.insert(poor[i].request_id);
    if (i > 0) CHECK(poor[i - 1].quality <= poor[i].quality);
  }
  CHECK(got_low == low);
  // By session.
  for (auto& sid : session_ids) {
    std::set<uuid> want, got;
    for (auto& [id, e] : model)
      if (e.rec.session_id == sid) want.insert(id);
    const auto entries = log.of_session(sid).value();
    for (auto& w : entries) got.insert(w.request_id);
    CHECK(got == want);
  }
  // Edges: to the session when it was stored, to the pattern weighted by quality.
  store->read([&](const st::record_graph& g) {
    for (auto& [id, e] : model) {
      const bool stored_session = e.rec.session_id != session_ids[3];
      CHECK(g.edge_weight(id, e.rec.session_id, st::edge_type::session_witness).has_value() == stored_session);
      if (!e.rec.pattern_id.is_nil())
        CHECK(g.edge_weight(id, pattern.id, st::edge_type::pattern_witness) == e.rec.quality);
    }
    return 0;
  });
  // Similarity: each entry's own query finds it first; responses likewise.
  int checked = 0;
  for (auto& [id, e] : model) {
    if (++checked > 40) break;
    auto hits = log.similar_queries(e.query, 3, {.ef = 200}).value();
    REQUIRE(!hits.empty());
    CHECK(hits[0].entry.request_id == id);
    if (!e.response.empty()) CHECK(log.similar_responses(e.response, 1, {.ef = 200}).value()[0].entry.request_id == id);
  }
  // Aggregates over [from, to) against references computed here.
  std::vector<std::uint32_t> parts[4];
  std::map<std::uint32_t, std::tuple<std::size_t, std::size_t, double>> usage;
  std::map<std::int64_t, std::pair<std::size_t, double>> trend;
  const std::int64_t bucket = 300'000;
  for (auto& [id, e] : model) {
    if (e.rec.time < from || e.rec.time >= to) continue;
    parts[0].push_back(e.rec.latency.queue_us);
    parts[1].push_back(e.rec.latency.prefill_us);
    parts[2].push_back(e.rec.latency.decode_us);
    parts[3].push_back(e.rec.latency.total_us);
    auto& u = usage[e.rec.routing.model];
    std::get<0>(u) += 1;
    std::get<1>(u) += e.rec.error_code != 0;
    std::get<2>(u) += e.rec.quality;
    auto& t = trend[from + (e.rec.time - from) / bucket * bucket];
    t.first += 1;
    t.second += e.rec.quality;
  }
  const auto lat = log.latency(from, to).value();
  REQUIRE(lat.count == parts[0].size());
  const st::latency_percentiles* comps[4] = {&lat.queue, &lat.prefill, &lat.decode, &lat.total};
  for (int c = 0; c < 4; ++c) {
    CHECK(comps[c]->p50 == nearest_rank(parts[c], 0.50));
    CHECK(comps[c]->p95 == nearest_rank(parts[c], 0.95));
    CHECK(comps[c]->p99 == nearest_rank(parts[c], 0.99));
    CHECK(comps[c]->max == *std::max_element(parts[c].begin(), parts[c].end()));
    double sum = 0;
    for (auto x : parts[c]) sum += x;
    CHECK(comps[c]->mean == Approx(sum / static_cast<double>(parts[c].size())));
  }
  const auto models = log.usage(from, to).value();
  REQUIRE(models.size() == usage.size());
  for (auto& m : models) {
    auto& [count, errors, qsum] = usage[m.model];
    CHECK(m.count == count);
    CHECK(m.errors == errors);
    CHECK(m.mean_quality == Approx(qsum / static_cast<double>(count)));
  }
  const auto buckets = log.quality_trend(from, to, bucket).value();
  REQUIRE(buckets.size() == trend.size());
  for (auto& b : buckets) {
    REQUIRE(trend.contains(b.start));
    CHECK(b.count == trend[b.start].first);
    CHECK(b.mean == Approx(trend[b.start].second / static_cast<double>(b.count)));
  }
  CHECK(log.quality_trend(from, to, 0).error().code() == ruvllm::errc::invalid_argument);
  // An empty range gives empty aggregates.
  CHECK(log.latency(0, 1).value().count == 0);
  CHECK(log.usage(0, 1).value().empty());
}

TEST_CASE("witness_log: batches of at most batch_max, partial batches after max_delay", "[store][roles][witness]") {
  const mem_support::scratch_dir dir("witness_batches");
  ruvllm::test::rng gen(142);
  auto store = store_t::open(dir.path(), options()).value();
  // A max_delay far beyond any stall between a push and the next pump().
  auto log = witness_t::open(store, {.max_delay = 1000ms}).value();
  const auto appends = [&] { return store.stats().wal.appends; };
  std::vector<owned_entry> entries;
  for (int i = 0; i < 250; ++i) entries.push_back(random_entry(gen, i));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) REQUIRE(log.push(entries[i].view()));
  // Not due yet: fewer than batch_max and younger than max_delay (unless
  // this thread stalled for max_delay, which a loaded machine can do).
  const auto pumped = log.pump().value();
  if (std::chrono::steady_clock::now() - t0 < 1000ms) {
    CHECK(pumped == 0);
    CHECK(log.stats().queued == 50);
    std::this_thread::sleep_for(1050ms);
    CHECK(log.pump().value() == 50);  // aged: written as one partial batch
  } else {
    CHECK(pumped == 50);
  }
  CHECK(appends() == 1);
  for (int i = 50; i < 250; ++i) REQUIRE(log.push(entries[i].view()));
  CHECK(log.pump().value() == 200);  // two full batches, no partial one
  CHECK(appends() == 3);
  CHECK(log.stats().batches == 3);
  for (int i = 0; i < 250; ++i) entries[i].rec.request_id = random_id(gen);
  for (int i = 0; i < 250; ++i) REQUIRE(log.push(entries[i].view()));
  CHECK(log.flush().value() == 250);  // 100 + 100 + 50
  CHECK(appends() == 6);
  const auto s = log.stats();
  CHECK(s.written == 500);
  CHECK(s.batches == 6);
  CHECK(s.queued == 0);
  CHECK(log.size() == 500);
  // Duplicated request ids are dropped at write time and counted.
  REQUIRE(log.push(entries[0].view()));
  REQUIRE(log.push(entries[0].view()));
  CHECK(log.flush().value() == 2);
  CHECK(log.stats().duplicates == 2);
  CHECK(log.size() == 500);
}

TEST_CASE("witness_log: a full ring pushes back, push_wait waits", "[store][roles][witness]") {
  const mem_support::scratch_dir dir("witness_full");
  ruvllm::test::rng gen(143);
  auto store = store_t::open(dir.path(), options(st::durability::none)).value();
  auto log = witness_t::open(store, {.queue_capacity = 8, .batch_max = 4}).value();
  CHECK(log.capacity() == 8);
  std::vector<owned_entry> entries;
  for (int i = 0; i < 20; ++i) entries.push_back(random_entry(gen, i));
  for (int i = 0; i < 8; ++i) REQUIRE(log.push(entries[i].view()));
  auto full = log.push(entries[8].view());
  REQUIRE(!full);
  CHECK(full.error().code() == ruvllm::errc::budget_exceeded);
  CHECK(log.stats().rejected_full == 1);
  CHECK(log.stats().queued == 8);
  CHECK(log.push_wait(entries[8].view(), 20ms).error().code() == ruvllm::errc::budget_exceeded);
  // With the writer running, push_wait gets through.
  REQUIRE(log.start());
  CHECK(log.start().error().code() == ruvllm::errc::already_exists);
  for (int i = 8; i < 20; ++i) REQUIRE(log.push_wait(entries[i].view(), 5000ms));
  REQUIRE(log.close());
  CHECK(log.size() == 20);
  CHECK(log.push(entries[0].view()).error().code() == ruvllm::errc::cancelled);
  CHECK(log.stats().rejected_closed == 1);
  CHECK(log.start().error().code() == ruvllm::errc::cancelled);
}

TEST_CASE("witness_log: the background writer writes full and aged batches by itself", "[store][roles][witness]") {
  // Each half is checked without an upper bound on time: a sanitizer build
  // on a loaded machine can take seconds for one fsync.
  const mem_support::scratch_dir dir("witness_thread");
  ruvllm::test::rng gen(144);
  auto store = store_t::open(dir.path(), options()).value();
  std::vector<owned_entry> entries;
  for (int i = 0; i < 150; ++i) entries.push_back(random_entry(gen, i));
  // stats() counts a batch after its commit returns (its records are
  // visible a moment earlier), so the wait is on the counter.
  const auto wait_for = [](const witness_t& log, std::size_t n, std::chrono::steady_clock::time_point t0) {
    while (log.stats().written < n && std::chrono::steady_clock::now() - t0 < 60s) std::this_thread::sleep_for(1ms);
    return std::chrono::steady_clock::now() - t0;
  };
  SECTION("a full batch wakes the writer") {
    // With an hour's max_delay, only the wake-up by the 100th push
    // (wake_at = batch_max) can get anything written within the wait.
    auto log = witness_t::open(store, {.max_delay = 3600s, .wake_at = 100}).value();
    REQUIRE(log.start());
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& e : entries) REQUIRE(log.push(e.view()));
    wait_for(log, 100, t0);
    CHECK(log.size() == 100);
    // The other 50 are below wake_at and young: they stay queued.
    std::this_thread::sleep_for(50ms);
    const auto s = log.stats();
    CHECK(s.written == 100);
    CHECK(s.batches == 1);
    CHECK(s.queued == 50);
    log.stop();
    CHECK(!log.writer_error());
    CHECK(log.flush().value() == 50);
  }
  SECTION("a partial batch is written once its oldest entry has waited max_delay") {
    auto log = witness_t::open(store, {.max_delay = 300ms, .wake_at = 100}).value();
    REQUIRE(log.start());
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 50; ++i) REQUIRE(log.push(entries[i].view()));
    const auto waited = wait_for(log, 50, t0);
    CHECK(waited >= 300ms);
    const auto s = log.stats();
    CHECK(s.written == 50);
    CHECK(s.batches == 1);
    CHECK(log.size() == 50);
    log.stop();
    CHECK(!log.writer_error());
  }
}

TEST_CASE("witness_log: by default the writer sleeps until max_delay or a half-full ring", "[store][roles][witness]") {
  const mem_support::scratch_dir dir("witness_lazy");
  ruvllm::test::rng gen(148);
  auto store = store_t::open(dir.path(), options(st::durability::none)).value();
  auto log = witness_t::open(store, {.queue_capacity = 512, .max_delay = 2000ms}).value();  // wakes at 256
  REQUIRE(log.start());
  std::vector<owned_entry> entries;
  for (int i = 0; i < 300; ++i) entries.push_back(random_entry(gen, i));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) REQUIRE(log.push(entries[i].view()));
  std::this_thread::sleep_for(50ms);
  // Two full batches are queued, but below wake_at and younger than
  // max_delay nothing has been written (unless this thread stalled 2 s).
  if (std::chrono::steady_clock::now() - t0 < 1500ms) CHECK(log.stats().written == 0);
  for (int i = 200; i < 300; ++i) REQUIRE(log.push(entries[i].view()));  // crosses 256: wakes the writer
  while (log.stats().written < 200 && std::chrono::steady_clock::now() - t0 < 10s) std::this_thread::sleep_for(1ms);
  CHECK(log.stats().written >= 200);
  REQUIRE(log.close());
  CHECK(log.size() == 300);
}

TEST_CASE("witness_log: retention by age removes in durable batches", "[store][roles][witness]") {
  const mem_support::scratch_dir dir("witness_retention");
  ruvllm::test::rng gen(145);
  auto store = std::make_optional(store_t::open(dir.path(), options(st::durability::group_commit)).value());
  std::map<uuid, std::int64_t> times;
  {
    auto log = witness_t::open(*store).value();
    for (int i = 0; i < 300; ++i) {
      const owned_entry e = random_entry(gen, static_cast<std::int64_t>(gen.uniform_index(0, 10'000)));
      REQUIRE(log.push(e.view()));
      times[e.rec.request_id] = e.rec.time;
    }
    REQUIRE(log.close());
    const std::int64_t cutoff = 4'000;
    std::size_t old = 0;
    for (auto& [id, t] : times) old += t < cutoff;
    const auto appends = store->stats().wal.appends;
    REQUIRE(log.remove_older_than(cutoff, 50).value() == old);
    CHECK(store->stats().wal.appends == appends + (old + 49) / 50);  // batches of up to 50
    std::erase_if(times, [&](auto& kv) { return kv.second < cutoff; });
    CHECK(log.remove_older_than(cutoff).value() == 0);
  }
  store.reset();
  store.emplace(store_t::open(dir.path(), options()).value());
  auto log = witness_t::open(*store).value();
  REQUIRE(log.size() == times.size());
  for (auto& [id, t] : times) CHECK(log.get(id).value().time == t);
  CHECK(store->index(st::role_space::witness_query).size() == times.size());
  REQUIRE(store->verify());
}

TEST_CASE("witness_log: bad entries are refused before they are queued", "[store][roles][witness]") {
  const mem_support::scratch_dir dir("witness_bad");
  ruvllm::test::rng gen(146);
  auto store = std::make_optional(store_t::open(dir.path(), options()).value());
  const auto before = image_of(*store);
  {
    auto log = witness_t::open(*store).value();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> short_v(dim - 1, 1.0f);
    std::vector<float> nan_v(dim, 1.0f);
    nan_v[5] = nan;
    using ruvllm::errc;
    auto bad = [&](auto edit) {
      owned_entry e = random_entry(gen, 1);
      edit(e);
      return log.push(e.view()).error().code();
    };
    CHECK(bad([&](owned_entry& e) { e.rec.quality = nan; }) == errc::invalid_argument);
    CHECK(bad([&](owned_entry& e) { e.rec.quality = 1.01f; }) == errc::invalid_argument);
    CHECK(bad([&](owned_entry& e) { e.rec.quality = -0.5f; }) == errc::invalid_argument);
    CHECK(bad([&](owned_entry& e) { e.rec.request_id = uuid{}; }) == errc::invalid_argument);
    CHECK(bad([&](owned_entry& e) { e.query = short_v; }) == errc::invalid_argument);
    CHECK(bad([&](owned_entry& e) { e.response = short_v; }) == errc::invalid_argument);
    CHECK(bad([&](owned_entry& e) { e.query = nan_v; }) == errc::invalid_argument);
    CHECK(bad([&](owned_entry& e) { e.response = nan_v; }) == errc::invalid_argument);
    CHECK(bad([&](owned_entry& e) { e.rec.routing.temperature = std::numeric_limits<float>::infinity(); }) ==
          errc::invalid_argument);
    CHECK(log.stats().rejected_invalid == 9);
    CHECK(log.stats().queued == 0);
    CHECK(log.similar_queries(short_v, 3).error().code() == errc::invalid_argument);
    CHECK(log.get(random_id(gen)).error().code() == errc::not_found);
    CHECK(witness_t::open(*store, {.queue_capacity = 1}).error().code() == errc::invalid_argument);
    CHECK(witness_t::open(*store, {.batch_max = 0}).error().code() == errc::invalid_argument);
    CHECK(witness_t::open(*store, {.query_space = 1, .response_space = 1}).error().code() == errc::invalid_argument);
    CHECK(witness_t::open(*store, {.query_space = 9}).error().code() == errc::invalid_argument);
    // Long messages are cut to witness_max_message bytes.
    owned_entry e = random_entry(gen, 1);
    e.rec.error_code = 3;
    e.rec.error_message.assign(500, 'm');
    REQUIRE(log.push(e.view()));
    REQUIRE(log.flush());
    CHECK(log.get(e.rec.request_id).value().error_message == std::string(st::witness_max_message, 'm'));
    REQUIRE(store->remove(e.rec.request_id));
  }
  REQUIRE(image_of(*store) == before);
  store.reset();
  store.emplace(store_t::open(dir.path(), options()).value());
  REQUIRE(image_of(*store) == before);
}

TEST_CASE("witness_log: a failed write is kept and retried", "[store][roles][witness]") {
  const mem_support::scratch_dir dir("witness_retry");
  ruvllm::test::rng gen(147);
  auto store = store_t::open(dir.path(), options()).value();
  auto log = witness_t::open(store).value();
  std::vector<owned_entry> entries;
  for (int i = 0; i < 30; ++i) entries.push_back(random_entry(gen, i));
  for (auto& e : entries) REQUIRE(log.push(e.view()));
  // Make the next log append fail: a file size limit just above the log's
  // size (writes past it fail with EFBIG; SIGXFSZ is ignored meanwhile).
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto* old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit tight = old;
  tight.rlim_cur = static_cast<rlim_t>(std::filesystem::file_size(store.wal_path()) + 100);
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &tight) == 0);
  auto failed = log.flush();
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &old) == 0);
  ::signal(SIGXFSZ, old_handler);
  REQUIRE(!failed);
  CHECK(failed.error().code() == ruvllm::errc::io_error);
  CHECK(log.stats().write_errors == 1);
  CHECK(log.size() == 0);
  // The kept batch goes through on the next attempt; the log was not left
  // with a partial record in it.
  CHECK(log.flush().value() == 30);
  CHECK(log.size() == 30);
  REQUIRE(log.close());
  for (auto& e : entries) CHECK(log.get(e.rec.request_id).value() == e.rec);
}

TEST_CASE("witness_log: producers, the writer and readers run concurrently", "[store][roles][witness][concurrency]") {
  const mem_support::scratch_dir dir("witness_concurrent");
  auto store = store_t::open(dir.path(), options(st::durability::none)).value();
  auto log = witness_t::open(store, {.queue_capacity = 256, .max_delay = 20ms}).value();
  REQUIRE(log.start());
  constexpr int producers = 3, per_producer = 400;
  std::vector<std::vector<owned_entry>> entries(producers);
  for (int p = 0; p < producers; ++p) {
    ruvllm::test::rng gen(150 + p);
    for (int i = 0; i < per_producer; ++i) entries[p].push_back(random_entry(gen, p * 100000 + i));
  }
  std::vector<std::vector<bool>> accepted(producers, std::vector<bool>(per_producer));
  std::atomic<bool> done{false};
  std::atomic<int> reader_failures{0};
  std::thread reader([&] {
    while (!done.load()) {
      if (!log.in_time_range(0, 1'000'000)) ++reader_failures;
      if (!log.similar_queries(entries[0][0].query, 3)) ++reader_failures;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (int i = 0; i < per_producer; ++i) {
        auto r = log.push(entries[p][i].view());
        accepted[p][i] = static_cast<bool>(r);
        if (!r && r.error().code() == ruvllm::errc::budget_exceeded) std::this_thread::yield();
      }
    });
  for (auto& t : threads) t.join();
  REQUIRE(log.close());
  done.store(true);
  reader.join();
  CHECK(reader_failures.load() == 0);
  std::size_t n_accepted = 0;
  for (int p = 0; p < producers; ++p)
    for (int i = 0; i < per_producer; ++i)
      if (accepted[p][i]) {
        ++n_accepted;
        CHECK(log.get(entries[p][i].rec.request_id).value() == entries[p][i].rec);
      } else {
        CHECK(log.get(entries[p][i].rec.request_id).error().code() == ruvllm::errc::not_found);
      }
  const auto s = log.stats();
  CHECK(s.pushed == n_accepted);
  CHECK(s.pushed + s.rejected_full == std::size_t{producers} * per_producer);
  CHECK(s.written == n_accepted);
  CHECK(log.size() == n_accepted);
  CHECK(n_accepted > 0);
}

// close() while producers push: every push that was accepted is written,
// every later one is refused as cancelled (close waits for claimed slots to
// be published, not only for pushes that are still claiming). Producers push
// until they are refused, so close() always lands among pushes however fast
// the machine is.
TEST_CASE("witness_log: close during pushes writes every accepted entry", "[store][roles][witness][concurrency]") {
  const mem_support::scratch_dir dir("witness_close_race");
  auto store = store_t::open(dir.path(), options(st::durability::none)).value();
  auto log = witness_t::open(store, {.queue_capacity = 1024, .max_delay = 5ms}).value();
  REQUIRE(log.start());
  constexpr int producers = 2;
  constexpr std::size_t pushes_before_close = 300;
  std::vector<std::vector<owned_entry>> accepted(producers);
  std::vector<std::optional<owned_entry>> refused(producers);
  std::atomic<std::size_t> progress{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      ruvllm::test::rng gen(170 + p);
      for (std::int64_t i = 0;; ++i) {
        auto e = random_entry(gen, p * 10'000'000 + i);
        // Retry a full ring: only close() ends this producer.
        for (;;) {
          auto r = log.push(e.view());
          if (r) {
            accepted[p].push_back(std::move(e));
            progress.fetch_add(1);
            break;
          }
          if (r.error().code() != ruvllm::errc::budget_exceeded) {
            CHECK(r.error().code() == ruvllm::errc::cancelled);
            refused[p] = std::move(e);
            return;
          }
          std::this_thread::yield();
        }
      }
    });
  while (progress.load() < pushes_before_close) std::this_thread::yield();
  REQUIRE(log.close());
  for (auto& t : threads) t.join();
  std::size_t n_accepted = 0;
  for (int p = 0; p < producers; ++p) {
    for (std::size_t i = 0; i < accepted[p].size(); ++i) {
      INFO("producer " << p << " entry " << i);
      CHECK(log.get(accepted[p][i].rec.request_id).value() == accepted[p][i].rec);
    }
    n_accepted += accepted[p].size();
    REQUIRE(refused[p].has_value());
    CHECK(log.get(refused[p]->rec.request_id).error().code() == ruvllm::errc::not_found);
  }
  CHECK(n_accepted >= pushes_before_close);
  const auto s = log.stats();
  CHECK(s.pushed == n_accepted);
  CHECK(s.written == n_accepted);
  CHECK(log.size() == n_accepted);
  CHECK(s.rejected_closed == std::size_t{producers});  // each producer stops at its first refusal
}

}  // namespace witness_log_test
