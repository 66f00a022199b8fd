// SONA's learning machinery (sona_bench, with router_bench.cpp):
//  * sona/micro_lora_forward/f32/4096r2: y += scale B (A x) at hidden size
//    4096, rank 2 (target < 1 us); baseline: the reference design's loop
//    (B stored [out][rank], a dot of length rank per output).
//  * sona/instant_loop/f32/<dim>: one trajectory through the instant phase
//    of tick() -- ring drain, reasoning-bank sample, recent buffer, MicroLoRA
//    step, edge update through a sink -- latency percentiles over many
//    requests; counters p50_us, p99_us (target p99 < 50 us). instant_loop
//    uses an in-memory sink (the loop's own cost); instant_loop_store the
//    store-backed sink, each edge update a logged batch (group commit).
//  * sona/pattern_search/f32/100000x128: top-5 patterns by cosine among
//    100,000 learned patterns through the bank's HNSW index; counters
//    p50_us, p99_us (target < 200 us) and recall (top-5 against the exact
//    scan); queries are pattern centroids plus noise (requests resemble what
//    was learned); baseline: the exact scan (one cosine_many over every
//    centroid). Latency samples are wall time: run on a quiet machine.
//  * sona/background_loop/f32/10000traj: the background phase over 10,000
//    buffered trajectories (router training with EWC++, consolidation,
//    publish); counter background_ms.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "ruvllm/sona/lora.hpp"
#include "ruvllm/sona/loops.hpp"
#include "ruvllm/sona/persistence.hpp"
#include "ruvllm/sona/reasoning_bank.hpp"
#include "ruvllm/store/memory_store.hpp"
#include "support/bench.hpp"
#include "support/scalar_baseline.hpp"

namespace {

namespace rb = ruvllm::bench;
namespace sona = ruvllm::sona;
namespace st = ruvllm::store;
using clock_type = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

std::vector<float> gaussian(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> nd;
  std::vector<float> v(n);
  for (auto& x : v) x = nd(gen);
  return v;
}

// ---------------------------------------------------------------- MicroLoRA

void micro_lora_rows() {
  constexpr std::size_t hidden = 4096, rank = 2;
  const std::string row = rb::row_name("sona", "micro_lora_forward", "f32", "4096r2", 1);
  const std::string base = rb::baseline_of(row);
  struct fixture {
    sona::micro_lora<> lora = sona::micro_lora<>::create({.in_dim = hidden, .out_dim = hidden, .rank = rank}).value();
    std::vector<float> x = gaussian(hidden, 1), y = std::vector<float>(hidden, 0.0f);
    std::vector<float> a, b_ref;  // the reference layout: B as [out][rank]
    fixture() {
      auto bt = gaussian(rank * hidden, 2);
      std::copy(bt.begin(), bt.end(), lora.b(0).begin());
      lora.touch();
      a.assign(lora.a(0).begin(), lora.a(0).end());
      b_ref.resize(hidden * rank);
      for (std::size_t r = 0; r < rank; ++r)
        for (std::size_t o = 0; o < hidden; ++o) b_ref[o * rank + r] = bt[r * hidden + o];
    }
    void reference() {
      rb::baseline::lora_forward(a.data(), b_ref.data(), x.data(), y.data(), hidden, hidden, rank, 1.0f);
    }
  };
  benchmark::RegisterBenchmark(base.c_str(), [base](benchmark::State& state) {
    fixture f;
    rb::timed_loop(state, [&] {
      f.reference();
      benchmark::DoNotOptimize(f.y.data());
    });
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    rb::record_baseline(state, base);
  });
  benchmark::RegisterBenchmark(row.c_str(), [base](benchmark::State& state) {
    fixture f;
    rb::timed_loop(state, [&] {
      f.lora.forward(0, f.x.data(), f.y.data());
      benchmark::DoNotOptimize(f.y.data());
    });
    state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
    rb::set_speedup(state, base, [&] {
      f.reference();
      benchmark::DoNotOptimize(f.y.data());
    });
  });
}

// ------------------------------------------------------------ instant loop

// An in-memory graph of session-pattern edge weights, standing in for the
// store (its cost is the store's and is measured in the store's benchmarks).
struct map_sink {
  std::unordered_map<std::uint64_t, float> weights;
  ruvllm::result<void> scale_edge(const st::uuid& session, const st::uuid& pattern, float factor) {
    auto& w = weights.try_emplace(session.lo * 31 + pattern.lo, 1.0f).first->second;
    w *= factor;
    return {};
  }
};

// The instant loop over a sink: map_sink (the loop's own cost) or the
// store-backed sink (each edge update is a logged batch of the store; the
// store's log runs in group-commit mode, as a serving engine would).
template <class Sink>
void instant_loop(benchmark::State& state, Sink sink) {
  constexpr std::size_t dim = 128, requests = 20000;
  sona::loop_options lo;
  lo.ring_capacity = 1024;
  lo.response_dim = dim;
  lo.instant_batch = 1;
  lo.recent_capacity = 4096;
  auto loops = sona::sona_loops<ruvllm::backend::highway, Sink>::create(lo, sona::router_options{},
                                                                        {.dim = dim, .models = 4}, std::move(sink))
                   .value();
  auto micro = sona::micro_lora<>::create({.in_dim = dim, .out_dim = dim, .rank = 2}).value();
  if (!loops.attach_lora(&micro, nullptr)) state.SkipWithError("attach_lora failed");
  const auto queries = gaussian(64 * dim, 3), responses = gaussian(64 * dim, 4);
  std::vector<double> samples;
  samples.reserve(requests);
  std::uint64_t now = 1, i = 0;
  static_cast<void>(loops.tick(now));  // starts the schedules; background/deep are hours away
  rb::timed_loop(state, [&] {
    sona::trajectory_view t;
    t.request_id = i;
    t.query = std::span<const float>(queries.data() + (i % 64) * dim, dim);
    t.response = std::span<const float>(responses.data() + (i % 64) * dim, dim);
    t.model = static_cast<std::uint32_t>(i % 4);
    t.quality = (i % 3 == 0) ? 0.3f : 0.9f;
    t.session = {1, i % 100 + 1};
    t.pattern = {2, i % 17 + 1};
    ++i;
    static_cast<void>(loops.ring().try_push(t));
    const auto t0 = clock_type::now();
    auto r = loops.tick(++now);
    const auto t1 = clock_type::now();
    benchmark::DoNotOptimize(r);
    if (samples.size() < requests) samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  });
  state.counters["p50_us"] = percentile(samples, 0.50);
  state.counters["p99_us"] = percentile(samples, 0.99);
  state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
}

using store_t = st::memory_store<st::metric::cosine, ruvllm::precision::f32>;

// A store in a temporary directory holding the 100 sessions and 17 patterns
// the instant-loop trajectories point at.
struct edge_store {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ruvllm_sona_bench_" + std::to_string(::getpid()));
  store_t store = open(dir);
  ~edge_store() { std::filesystem::remove_all(dir); }

  static store_t open(const std::filesystem::path& dir) {
    std::filesystem::remove_all(dir);
    auto o = st::role_store_options(16);
    o.wal.mode = st::durability::group_commit;
    auto s = store_t::open(dir.string(), o).value();
    const auto add = [&](st::uuid id) {
      st::record r;
      r.id = id;
      static_cast<void>(s.insert(std::move(r)));
    };
    for (std::uint64_t i = 1; i <= 100; ++i) add({1, i});
    for (std::uint64_t i = 1; i <= 17; ++i) add({2, i});
    return s;
  }
};

void instant_loop_store(benchmark::State& state) {
  edge_store es;
  instant_loop(state, sona::store_sink<store_t>::open(es.store).value());
}

// ----------------------------------------------------------- pattern search

// 100,000 patterns around 1,000 cluster centres (what k-means leaves behind:
// many nearby patterns per region of query space).
std::vector<sona::pattern> synthetic_patterns(std::size_t n, std::size_t dim) {
  std::mt19937_64 gen(5);
  std::normal_distribution<float> nd;
  const std::size_t centres = 1000;
  std::vector<float> c(centres * dim);
  for (auto& v : c) v = nd(gen);
  std::vector<sona::pattern> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto& p = out[i];
    p.id = {7, i + 1};
    const float* cc = c.data() + (i % centres) * dim;
    p.centroid.resize(dim);
    for (std::size_t d = 0; d < dim; ++d) p.centroid[d] = cc[d] + 0.3f * nd(gen);
    p.count = 1 + i % 50;
    p.mean_quality = 0.5f;
    p.best_model = static_cast<std::uint32_t>(i % 4);
    p.model_quality.assign(4, 0.5f);
    p.model_count.assign(4, 1);
  }
  return out;
}

struct search_fixture {
  static constexpr std::size_t n = 100000, dim = 128, k = 5, queries = 512;
  sona::reasoning_bank<> indexed, exact;
  std::vector<float> q;  // requests resemble what was learned: a pattern's centroid plus noise
  static const search_fixture& get() {
    static const search_fixture f;
    return f;
  }
  search_fixture() {
    indexed = sona::reasoning_bank<>::create({.dim = dim, .models = 4, .max_patterns = n}).value();
    exact =
        sona::reasoning_bank<>::create({.dim = dim, .models = 4, .max_patterns = n, .index_min_patterns = 0}).value();
    auto p = synthetic_patterns(n, dim);
    std::mt19937_64 gen(6);
    std::normal_distribution<float> nd;
    for (std::size_t i = 0; i < queries; ++i) {
      const auto& c = p[gen() % n].centroid;
      for (std::size_t d = 0; d < dim; ++d) q.push_back(c[d] + 0.3f * nd(gen));
    }
    if (!exact.restore(p, 1) || !indexed.restore(std::move(p), 1)) std::abort();
  }
};

void pattern_search_rows() {
  const std::string row = rb::row_name("sona", "pattern_search", "f32", "100000x128", 1);
  const std::string base = rb::baseline_of(row);
  benchmark::RegisterBenchmark(base.c_str(), [base](benchmark::State& state) {
    const auto& f = search_fixture::get();
    std::vector<std::pair<std::size_t, float>> hits;
    std::size_t i = 0;
    rb::timed_loop(state, [&] {
      f.exact.search(std::span<const float>(f.q.data() + (i++ % f.queries) * f.dim, f.dim), f.k, hits);
      benchmark::DoNotOptimize(hits.data());
    });
    state.counters["us_per_op"] = rb::seconds_per_iteration(state) * 1e6;
    rb::record_baseline(state, base);
  });
  benchmark::RegisterBenchmark(row.c_str(), [base](benchmark::State& state) {
    const auto& f = search_fixture::get();
    std::vector<std::pair<std::size_t, float>> hits, truth;
    std::vector<double> samples;
    std::size_t i = 0;
    rb::timed_loop(state, [&] {
      const auto t0 = clock_type::now();
      f.indexed.search(std::span<const float>(f.q.data() + (i++ % f.queries) * f.dim, f.dim), f.k, hits);
      const auto t1 = clock_type::now();
      benchmark::DoNotOptimize(hits.data());
      if (samples.size() < 100000) samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    });
    state.counters["us_per_op"] = rb::seconds_per_iteration(state) * 1e6;
    state.counters["p50_us"] = percentile(samples, 0.50);
    state.counters["p99_us"] = percentile(samples, 0.99);
    std::size_t found = 0;
    for (std::size_t j = 0; j < f.queries; ++j) {
      const std::span<const float> q(f.q.data() + j * f.dim, f.dim);
      f.indexed.search(q, f.k, hits);
      f.exact.search(q, f.k, truth);
      for (const auto& t : truth)
        found += std::count_if(hits.begin(), hits.end(), [&](const auto& h) { return h.first == t.first; });
    }
    state.counters["recall"] = static_cast<double>(found) / static_cast<double>(f.queries * f.k);
    std::size_t b = 0;
    rb::set_speedup(state, base, [&] {
      f.exact.search(std::span<const float>(f.q.data() + (b++ % f.queries) * f.dim, f.dim), f.k, truth);
      benchmark::DoNotOptimize(truth.data());
    });
  });
}

// --------------------------------------------------------- background loop

void background_loop(benchmark::State& state) {
  constexpr std::size_t dim = 128, trajectories = 10000;
  const auto queries = gaussian(256 * dim, 7);
  double background_ms = 0.0;
  std::size_t steps = 0;
  rb::timed_loop(state, [&] {
    sona::loop_options lo;
    lo.ring_capacity = 16384;
    lo.instant_batch = trajectories;
    lo.recent_capacity = trajectories;
    lo.background_interval_ms = 1000;
    auto loops =
        sona::sona_loops<>::create(lo, sona::router_options{.ewc = {.lambda = 100.0}}, {.dim = dim, .models = 4})
            .value();
    for (std::size_t i = 0; i < trajectories; ++i) {
      sona::trajectory_view t;
      t.query = std::span<const float>(queries.data() + (i % 256) * dim, dim);
      t.model = static_cast<std::uint32_t>(i % 4);
      t.quality = (i % 256) % 4 == t.model ? 0.9f : 0.3f;
      static_cast<void>(loops.ring().try_push(t));
    }
    static_cast<void>(loops.tick(0));  // instant phase drains all 10,000
    const auto t0 = clock_type::now();
    auto r = loops.tick(1000);  // the background phase is due
    const auto t1 = clock_type::now();
    background_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    steps = r ? r->router_steps : 0;
  });
  state.counters["background_ms"] = background_ms;
  state.counters["router_steps"] = static_cast<double>(steps);
}

const int registered = [] {
  micro_lora_rows();
  benchmark::RegisterBenchmark(rb::row_name("sona", "instant_loop", "f32", "128", 1).c_str(),
                               [](benchmark::State& s) { instant_loop(s, map_sink{}); });
  benchmark::RegisterBenchmark(rb::row_name("sona", "instant_loop_store", "f32", "128", 1).c_str(), instant_loop_store);
  pattern_search_rows();
  benchmark::RegisterBenchmark(rb::join_name({"sona", "background_loop", "f32", "10000traj"}, 1).c_str(),
                               background_loop);
  return 0;
}();

}  // namespace
