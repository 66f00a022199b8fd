// The store's roles (roles_bench), on a memory_store<cosine, f16> with the
// four standard spaces at D = 768 (ADR-002's embedding size), M = 16,
// ef_construction = 100:
//  * store/witness_push/f16/768/threads:1: one witness_log::push of an entry
//    with query and response embeddings, each call timed on its own (steady
//    clock), while the log's own background writer thread writes the
//    previous batches (HNSW inserts, log appends with group commit; the ring
//    of 1,024 wakes the writer at 512 entries): the producer keeps at most
//    700 entries unwritten, so pushes overlap the writer's work but the ring
//    never fills. Counters
//    p50_us, p99_us (target: p99 < 5 us), max_us, rejected (pushes refused:
//    must be 0).
//  * store/witness_flush/f16/<mode>x<embeddings>/threads:1: entries per
//    second that flush() writes (1,000 queued entries, batches of 100) for
//    each durability mode (every_write, group_commit, none), with the two
//    768-D embeddings indexed ("768") and without embeddings ("0": the
//    records and the log alone). Counter entries_per_s; wall time.
//  * store/session_get/<cipher>/10000/threads:1: session_index::get of a
//    random one of 10,000 sessions (plain, and XChaCha20-Poly1305 when
//    libsodium is found), each call timed; counters p50_us, p99_us (target:
//    < 20 us). Baseline: a std::unordered_map<uuid, session> lookup and copy,
//    the cheapest possible in-memory index of the same data.
//  * store/policy_search/f16/10000x768x<share>/threads:1:
//    policy_store::search(type, query, 10) among 10,000 policies (clustered
//    embeddings) of three types holding 70%, 25% and 5% of them (patterns,
//    router checkpoints, quantization policies); <share> is the searched
//    type's share, so the type filter passes that fraction. ef 64; counters
//    p50_us, p99_us, qps, recall (recall@10 against the exact filtered
//    scan). Baseline: that exact scan (hnsw_index::exact_search with the same
//    filter, SIMD distances).
// Every store lives in a temporary directory removed at exit.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ruvllm/store/roles.hpp"
#include "support/bench.hpp"

namespace {

namespace rb = ruvllm::bench;
namespace st = ruvllm::store;
using store_t = st::memory_store<st::metric::cosine, ruvllm::precision::f16>;
constexpr std::uint32_t dim = 768;
using namespace std::chrono_literals;

std::string scratch(const std::string& name) {
  static const std::string root =
      (std::filesystem::temp_directory_path() / ("ruvllm_roles_bench_" + std::to_string(::getpid()))).string();
  static const int cleanup = [] {
    std::atexit([] { std::filesystem::remove_all(root); });
    return 0;
  }();
  (void)cleanup;
  const std::string dir = root + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(root);
  return dir;
}

st::memory_store_options store_options(st::durability mode) {
  auto o = st::role_store_options(dim, st::hnsw_options{.m = 16, .ef_construction = 100});
  o.wal.mode = mode;
  return o;
}

const char* mode_name(st::durability m) {
  return m == st::durability::every_write ? "every_write" : m == st::durability::group_commit ? "group_commit" : "none";
}

st::uuid random_uuid(std::mt19937_64& gen) { return st::make_uuid_v4(gen(), gen()); }

std::vector<float> random_vector(std::mt19937_64& gen) {
  std::vector<float> v(dim);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : v) x = u(gen);
  return v;
}

struct latency {
  std::vector<double> us;
  void add(std::chrono::steady_clock::duration d) {
    us.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
  double quantile(double q) {
    if (us.empty()) return 0.0;
    auto at = us.begin() + static_cast<std::ptrdiff_t>(q * static_cast<double>(us.size() - 1));
    std::nth_element(us.begin(), at, us.end());
    return *at;
  }
  double max() const { return us.empty() ? 0.0 : *std::max_element(us.begin(), us.end()); }
};

// Entries with fixed embeddings (content does not matter to the queue).
struct witness_source {
  std::mt19937_64 gen{7};
  std::vector<float> query = random_vector(gen), response = random_vector(gen);
  std::int64_t time = 1'700'000'000'000;
  st::witness_entry next() {
    st::witness_entry e;
    e.request_id = random_uuid(gen);
    e.session_id = random_uuid(gen);
    e.time = ++time;
    e.query_embedding = query;
    e.response_embedding = response;
    e.routing = st::witness_routing{1, 0.8f, 2, 0.7f, 0.9f, 0.75f};
    e.latency = st::latency_breakdown{120, 8000, 95000, 103120};
    e.quality = 0.8f;
    return e;
  }
};

void witness_push(benchmark::State& state) {
  const std::string dir = scratch("witness_push");
  auto store = store_t::open(dir, store_options(st::durability::group_commit)).value();
  auto log = st::witness_log<store_t>::open(store, {.queue_capacity = 1024}).value();
  if (!log.start()) std::abort();
  witness_source src;
  latency lat;
  lat.us.reserve(1 << 20);
  std::uint64_t pushed = 0, rejected = 0;
  rb::timed_loop(state, [&] {
    // Keep at most 700 entries unwritten: pushes overlap the writer's work
    // without filling the ring (a full ring would measure the refusal path).
    if (pushed % 100 == 0)
      while (pushed - log.stats().written > 700) std::this_thread::sleep_for(50us);
    const st::witness_entry e = src.next();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = log.push(e);
    lat.add(std::chrono::steady_clock::now() - t0);
    if (r)
      ++pushed;
    else
      ++rejected;
  });
  if (!log.close()) std::abort();
  state.counters["p50_us"] = benchmark::Counter(lat.quantile(0.5));
  state.counters["p99_us"] = benchmark::Counter(lat.quantile(0.99));
  state.counters["max_us"] = benchmark::Counter(lat.max());
  state.counters["rejected"] = benchmark::Counter(static_cast<double>(rejected));
}

void witness_flush(benchmark::State& state, st::durability mode, bool embeddings) {
  const std::string dir = scratch(std::string("witness_flush_") + mode_name(mode));
  auto store = store_t::open(dir, store_options(mode)).value();
  auto log = st::witness_log<store_t>::open(store, {.queue_capacity = 1024}).value();
  witness_source src;
  constexpr int entries = 1000;
  double seconds = 0.0;
  std::uint64_t written = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < entries; ++i) {
      st::witness_entry e = src.next();
      if (!embeddings) e.query_embedding = e.response_embedding = {};
      if (!log.push(e)) std::abort();
    }
    state.ResumeTiming();
    const auto t0 = std::chrono::steady_clock::now();
    auto n = log.flush();
    if (!n || *n != entries) std::abort();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    written += entries;
  }
  state.counters["entries_per_s"] = benchmark::Counter(static_cast<double>(written) / seconds);
  state.counters["syncs_per_batch"] =
      benchmark::Counter(static_cast<double>(store.stats().wal.syncs) / static_cast<double>(log.stats().batches));
}

// ---- session lookup ---------------------------------------------------------

struct session_fixture {
  std::string dir;
  std::optional<store_t> store;
  std::vector<st::uuid> ids;
  std::unordered_map<st::uuid, st::session, st::uuid_hash> baseline;
};

session_fixture& sessions_of(bool encrypted) {
  static std::unique_ptr<session_fixture> fixtures[2];
  auto& f = fixtures[encrypted];
  if (f) return *f;
  f = std::make_unique<session_fixture>();
  f->dir = scratch(encrypted ? "sessions_sealed" : "sessions_plain");
  f->store.emplace(store_t::open(f->dir, store_options(st::durability::none)).value());
  st::session_index_options o;
  if (encrypted) o.key = st::session_key{1, 2, 3, 4, 5, 6, 7, 8};
  auto index = st::session_index<store_t>::open(*f->store, o).value();
  std::mt19937_64 gen(11);
  for (int i = 0; i < 10000; ++i) {
    st::session s;
    s.id = random_uuid(gen);
    s.user_id = "user-" + std::to_string(i % 997);
    s.kv = st::kv_cache_ref{st::kv_tier::hot, gen(), 812};
    s.active_adapter = i % 3 ? "support-en" : "";
    s.turn_count = static_cast<std::uint32_t>(i % 40);
    s.last_activity = 1'700'000'000'000 + i;
    if (!index.insert(s)) std::abort();  // no context embedding: lookup by id does not touch the index
    f->ids.push_back(s.id);
    f->baseline[s.id] = s;
  }
  return *f;
}

std::string session_row(bool encrypted) {
  return rb::row_name("store", "session_get", encrypted ? "xchacha20poly1305" : "plain", "10000", 1);
}

void session_get(benchmark::State& state, bool encrypted) {
  auto& f = sessions_of(encrypted);
  st::session_index_options o;
  if (encrypted) o.key = st::session_key{1, 2, 3, 4, 5, 6, 7, 8};
  auto index = st::session_index<store_t>::open(*f.store, o).value();
  std::mt19937_64 gen(12);
  latency lat;
  lat.us.reserve(1 << 20);
  rb::timed_loop(state, [&] {
    const st::uuid& id = f.ids[gen() % f.ids.size()];
    const auto t0 = std::chrono::steady_clock::now();
    auto s = index.get(id);
    lat.add(std::chrono::steady_clock::now() - t0);
    benchmark::DoNotOptimize(s);
  });
  state.counters["p50_us"] = benchmark::Counter(lat.quantile(0.5));
  state.counters["p99_us"] = benchmark::Counter(lat.quantile(0.99));
  rb::set_speedup(state, rb::baseline_of(session_row(encrypted)), [&] {
    st::session s = f.baseline.find(f.ids[gen() % f.ids.size()])->second;
    benchmark::DoNotOptimize(s);
  });
}

void session_get_baseline(benchmark::State& state, bool encrypted) {
  auto& f = sessions_of(encrypted);
  std::mt19937_64 gen(12);
  latency lat;
  lat.us.reserve(1 << 20);
  rb::timed_loop(state, [&] {
    const st::uuid& id = f.ids[gen() % f.ids.size()];
    const auto t0 = std::chrono::steady_clock::now();
    auto it = f.baseline.find(id);
    st::session s = it->second;
    lat.add(std::chrono::steady_clock::now() - t0);
    benchmark::DoNotOptimize(s);
  });
  state.counters["p50_us"] = benchmark::Counter(lat.quantile(0.5));
  state.counters["p99_us"] = benchmark::Counter(lat.quantile(0.99));
  rb::record_baseline(state, rb::baseline_of(session_row(encrypted)));
}

// ---- policy search ---------------------------------------------------------------

struct policy_fixture {
  std::string dir;
  std::optional<store_t> store;
  std::vector<std::vector<float>> queries;
};

// The searched types and their shares of the 10,000 policies.
constexpr st::policy_type searched[] = {st::policy_type::pattern, st::policy_type::router,
                                        st::policy_type::quantization};
constexpr int share_percent[] = {70, 25, 5};

policy_fixture& policies() {
  static std::unique_ptr<policy_fixture> f;
  if (f) return *f;
  f = std::make_unique<policy_fixture>();
  f->dir = scratch("policies");
  f->store.emplace(store_t::open(f->dir, store_options(st::durability::none)).value());
  auto ps = st::policy_store<store_t>::open(*f->store).value();
  // Clustered embeddings (64 centres), as learned patterns are.
  std::mt19937_64 gen(13);
  std::vector<std::vector<float>> centres;
  for (int c = 0; c < 64; ++c) centres.push_back(random_vector(gen));
  std::normal_distribution<float> noise(0.0f, 0.35f);
  auto near = [&](const std::vector<float>& c) {
    std::vector<float> v = c;
    for (auto& x : v) x += noise(gen);
    return v;
  };
  st::memory_batch batch;
  std::vector<std::vector<float>> embeddings;
  for (int i = 0; i < 10000; ++i) {
    st::policy p;
    p.id = random_uuid(gen);
    const int slot = i % 100;
    p.type = slot < share_percent[0]                      ? searched[0]
             : slot < share_percent[0] + share_percent[1] ? searched[1]
                                                          : searched[2];
    p.source = st::learning_loop::background;
    p.confidence = 0.5f + 0.5f * static_cast<float>(i % 100) / 100.0f;
    p.parameters.assign(16, 0.1f);
    if (!ps.insert(p, near(centres[gen() % centres.size()]))) std::abort();
  }
  for (int q = 0; q < 256; ++q) f->queries.push_back(near(centres[gen() % centres.size()]));
  return *f;
}

std::string policy_row(int t) {
  return rb::row_name("store", "policy_search", "f16", "10000x768x" + std::to_string(share_percent[t]) + "pct", 1);
}

// The exact filtered scan for query i and type t into out; returns the hit count.
std::size_t exact_policies(policy_fixture& f, std::size_t i, int t, std::vector<st::search_hit>& out,
                           st::hnsw_search_context& ctx) {
  const auto type = static_cast<std::uint64_t>(searched[t]);
  return f.store->read([&](const st::record_graph& g) {
    return f.store->index(st::role_space::policy)
        .exact_search(f.queries[i], out, ctx, g.filter([&](const st::record& r) {
          return r.kind == st::record_kind::policy && r.group == type;
        }))
        .value();
  });
}

void policy_search(benchmark::State& state, int t) {
  auto& f = policies();
  auto ps = st::policy_store<store_t>::open(*f.store).value();
  latency lat;
  lat.us.reserve(1 << 20);
  std::size_t q = 0;
  rb::timed_loop(state, [&] {
    const std::size_t i = q++ % f.queries.size();
    const auto t0 = std::chrono::steady_clock::now();
    auto hits = ps.search(searched[t], f.queries[i], 10, 0.0f, {.ef = 64});
    lat.add(std::chrono::steady_clock::now() - t0);
    benchmark::DoNotOptimize(hits);
  });
  // recall@10 against the exact filtered scan, over every query.
  st::hnsw_search_context ctx;
  double recall = 0.0;
  for (std::size_t i = 0; i < f.queries.size(); ++i) {
    std::vector<st::search_hit> exact(10);
    const std::size_t n = exact_policies(f, i, t, exact, ctx);
    auto hits = ps.search(searched[t], f.queries[i], 10, 0.0f, {.ef = 64}).value();
    std::size_t found = 0;
    for (std::size_t e = 0; e < n; ++e) {
      const st::uuid want = f.store->read([&](const st::record_graph& g) { return g.by_key(exact[e].key)->id; });
      for (auto& h : hits) found += h.id == want;
    }
    recall += static_cast<double>(found) / static_cast<double>(n) / static_cast<double>(f.queries.size());
  }
  state.counters["p50_us"] = benchmark::Counter(lat.quantile(0.5));
  state.counters["p99_us"] = benchmark::Counter(lat.quantile(0.99));
  state.counters["qps"] = benchmark::Counter(1.0 / rb::seconds_per_iteration(state));
  state.counters["recall"] = benchmark::Counter(recall);
  std::vector<st::search_hit> out(10);
  rb::set_speedup(state, rb::baseline_of(policy_row(t)),
                  [&] { benchmark::DoNotOptimize(exact_policies(f, q++ % f.queries.size(), t, out, ctx)); });
}

void policy_search_baseline(benchmark::State& state, int t) {
  auto& f = policies();
  st::hnsw_search_context ctx;
  std::vector<st::search_hit> out(10);
  latency lat;
  std::size_t q = 0;
  rb::timed_loop(state, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(exact_policies(f, q++ % f.queries.size(), t, out, ctx));
    lat.add(std::chrono::steady_clock::now() - t0);
  });
  state.counters["p50_us"] = benchmark::Counter(lat.quantile(0.5));
  state.counters["p99_us"] = benchmark::Counter(lat.quantile(0.99));
  state.counters["qps"] = benchmark::Counter(1.0 / rb::seconds_per_iteration(state));
  rb::record_baseline(state, rb::baseline_of(policy_row(t)));
}

const int registered = [] {
  benchmark::RegisterBenchmark(rb::row_name("store", "witness_push", "f16", "768", 1).c_str(), witness_push);
  for (auto mode : {st::durability::every_write, st::durability::group_commit, st::durability::none})
    for (bool emb : {true, false}) {
      const std::string shape = std::string(mode_name(mode)) + "x" + (emb ? "768" : "0");
      benchmark::RegisterBenchmark(rb::row_name("store", "witness_flush", "f16", shape, 1).c_str(),
                                   [mode, emb](benchmark::State& s) { witness_flush(s, mode, emb); });
    }
  std::vector<bool> ciphers{false};
#if defined(RUVLLM_WITH_SODIUM)
  ciphers.push_back(true);
#endif
  for (bool sealed : ciphers) {
    const std::string row = session_row(sealed);
    benchmark::RegisterBenchmark(rb::baseline_of(row).c_str(),
                                 [sealed](benchmark::State& s) { session_get_baseline(s, sealed); });
    benchmark::RegisterBenchmark(row.c_str(), [sealed](benchmark::State& s) { session_get(s, sealed); });
  }
  for (int t = 0; t < 3; ++t) {
    benchmark::RegisterBenchmark(rb::baseline_of(policy_row(t)).c_str(),
                                 [t](benchmark::State& s) { policy_search_baseline(s, t); });
    benchmark::RegisterBenchmark(policy_row(t).c_str(), [t](benchmark::State& s) { policy_search(s, t); });
  }
  return 0;
}();

}  // namespace
