// The HNSW vector store against hnswlib (libhnswlib-dev, built -march=native
// in its own unit) on the same clustered data, 1 thread:
//  * build: inserting every vector (M 16, ef_construction 200); vectors/s
//  * search at ef 64 and 128: qps over 500 queries and recall@10 against an
//    exact scan, for f32, f16 and i8 (i8 re-ranked with f32 originals) codes;
//    speedup against hnswlib at the same ef
//  * open: open_view of a saved index (O(1): header and section table only)
//    against hnswlib's loadIndex, which reads the whole file; ms per open
// Size: RUVLLM_BENCH_HNSW_N vectors (default 20000; the design goal is
// stated at 100000) of 128 dimensions, cosine.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/store/hnsw_index.hpp"
#include "store/hnswlib_baseline.hpp"
#include "support/bench.hpp"

namespace {

namespace rb = ruvllm::bench;
namespace st = ruvllm::store;
namespace hb = ruvllm::bench::hnswlib_baseline;

constexpr std::size_t dim = 128, queries = 500, k = 10, clusters = 100;
constexpr std::uint32_t m = 16, ef_construction = 200;

std::size_t vector_count() {
  const char* env = std::getenv("RUVLLM_BENCH_HNSW_N");
  return env != nullptr ? static_cast<std::size_t>(std::strtoull(env, nullptr, 10)) : 20000;
}

// Gaussian clusters, normalized (hnswlib's inner product space is cosine on
// unit vectors).
struct dataset {
  std::size_t n = 0;
  std::vector<float> base, query;
  std::vector<std::uint64_t> truth;  // k per query

  static const dataset& get() {
    static const dataset d = make(vector_count());
    return d;
  }
  static dataset make(std::size_t n) {
    dataset d;
    d.n = n;
    std::mt19937_64 gen(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> centers(clusters * dim);
    for (auto& c : centers) c = normal(gen);
    const auto fill = [&](std::vector<float>& out, std::size_t rows) {
      out.resize(rows * dim);
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t c = gen() % clusters;
        double ss = 0.0;
        for (std::size_t i = 0; i < dim; ++i) {
          out[r * dim + i] = centers[c * dim + i] + 0.6f * normal(gen);
          ss += double{out[r * dim + i]} * out[r * dim + i];
        }
        for (std::size_t i = 0; i < dim; ++i) out[r * dim + i] /= static_cast<float>(std::sqrt(ss));
      }
    };
    fill(d.base, n);
    fill(d.query, queries);
    d.truth.resize(queries * k);
    for (std::size_t q = 0; q < queries; ++q) {
      std::vector<std::pair<float, std::uint64_t>> all(n);
      for (std::size_t i = 0; i < n; ++i) {
        double dot = 0.0;
        for (std::size_t j = 0; j < dim; ++j) dot += double{d.query[q * dim + j]} * d.base[i * dim + j];
        all[i] = {static_cast<float>(1.0 - dot), i};
      }
      std::partial_sort(all.begin(), all.begin() + k, all.end());
      for (std::size_t j = 0; j < k; ++j) d.truth[q * k + j] = all[j].second;
    }
    return d;
  }
  [[nodiscard]] double recall(const std::vector<std::uint64_t>& got) const {
    std::size_t hits = 0;
    for (std::size_t q = 0; q < queries; ++q)
      for (std::size_t a = 0; a < k; ++a)
        for (std::size_t b = 0; b < k; ++b) hits += got[q * k + a] == truth[q * k + b];
    return static_cast<double>(hits) / static_cast<double>(queries * k);
  }
};

template <class P>
using index_t = st::hnsw_index<st::metric::cosine, P>;

template <class P>
index_t<P> build_ours(const dataset& d) {
  auto index = index_t<P>::create(st::hnsw_options{.dimension = dim,
                                                   .m = m,
                                                   .ef_construction = ef_construction,
                                                   .keep_originals = std::is_same_v<P, st::i8>})
                   .value();
  std::vector<std::uint64_t> keys(d.n);
  for (std::size_t i = 0; i < d.n; ++i) keys[i] = i;
  if (!index.insert_batch(keys, d.base)) rb::detail::fail("hnsw build failed");
  return index;
}

template <class P>
const index_t<P>& ours() {
  static const index_t<P> index = build_ours<P>(dataset::get());
  return index;
}

hb::index* theirs() {
  static hb::index* index = [] {
    const auto& d = dataset::get();
    return hb::build(d.base.data(), d.n, dim, m, ef_construction);
  }();
  return index;
}

std::string shape() { return rb::shape({dataset::get().n, dim}); }

template <class P>
void register_search(const char* precision, std::uint32_t ef) {
  const std::string kernel = "hnsw_search_ef" + std::to_string(ef);
  const std::string row = rb::row_name("store", kernel, precision, shape(), 1);
  const std::string base_row = rb::baseline_of(rb::row_name("store", kernel, "f32", shape(), 1));
  auto base_body = [ef] {
    const auto& d = dataset::get();
    hb::set_ef(theirs(), ef);
    std::uint64_t out[k];
    for (std::size_t q = 0; q < queries; ++q) hb::search(theirs(), d.query.data() + q * dim, k, out);
    benchmark::DoNotOptimize(out);
  };
  if (std::is_same_v<P, ruvllm::precision::f32>) {
    benchmark::RegisterBenchmark(base_row.c_str(), [base_body, base_row, ef](benchmark::State& state) {
      const auto& d = dataset::get();
      std::vector<std::uint64_t> got(queries * k);
      hb::set_ef(theirs(), ef);
      for (std::size_t q = 0; q < queries; ++q) hb::search(theirs(), d.query.data() + q * dim, k, got.data() + q * k);
      rb::timed_loop(state, base_body);
      rb::record_baseline(state, base_row);
      state.counters["qps"] = static_cast<double>(queries) / rb::seconds_per_iteration(state);
      state.counters["recall"] = d.recall(got);
    });
  }
  benchmark::RegisterBenchmark(row.c_str(), [base_body, base_row, ef](benchmark::State& state) {
    const auto& d = dataset::get();
    const auto& index = ours<P>();
    st::hnsw_search_context ctx;
    std::vector<st::search_hit> hits(k);
    const auto run = [&](std::vector<std::uint64_t>* got) {
      for (std::size_t q = 0; q < queries; ++q) {
        auto n = index.search(std::span<const float>(d.query.data() + q * dim, dim), std::span<st::search_hit>(hits),
                              ctx, st::search_params{.ef = ef});
        if (got != nullptr)
          for (std::size_t j = 0; j < *n; ++j) (*got)[q * k + j] = hits[j].key;
      }
      benchmark::DoNotOptimize(hits.data());
    };
    std::vector<std::uint64_t> got(queries * k, ~std::uint64_t{0});
    run(&got);
    rb::timed_loop(state, [&] { run(nullptr); });
    rb::set_speedup(state, base_row, base_body);
    state.counters["qps"] = static_cast<double>(queries) / rb::seconds_per_iteration(state);
    state.counters["recall"] = d.recall(got);
  });
}

void register_build() {
  const std::string row = rb::row_name("store", "hnsw_build", "f32", shape(), 1);
  const std::string base_row = rb::baseline_of(row);
  auto base_body = [] {
    const auto& d = dataset::get();
    hb::destroy(hb::build(d.base.data(), d.n, dim, m, ef_construction));
  };
  benchmark::RegisterBenchmark(base_row.c_str(), [base_body, base_row](benchmark::State& state) {
    rb::timed_loop(state, base_body);
    rb::record_baseline(state, base_row);
    state.counters["vectors_per_s"] = static_cast<double>(dataset::get().n) / rb::seconds_per_iteration(state);
  });
  benchmark::RegisterBenchmark(row.c_str(), [base_body, base_row](benchmark::State& state) {
    rb::timed_loop(state, [] { benchmark::DoNotOptimize(build_ours<ruvllm::precision::f32>(dataset::get()).size()); });
    rb::set_speedup(state, base_row, base_body);
    state.counters["vectors_per_s"] = static_cast<double>(dataset::get().n) / rb::seconds_per_iteration(state);
  });
}

// Where the open rows save their files; removed when the process exits.
const std::filesystem::path& bench_dir() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ruvllm_hnsw_bench_" + std::to_string(::getpid()));
  return dir;
}

void register_open() {
  const std::string row = rb::row_name("store", "hnsw_open", "f32", shape(), 1);
  const std::string base_row = rb::baseline_of(row);
  const auto dir = bench_dir();
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(bench_dir(), ec);
  });
  const std::string ours_path = (dir / "ours.hnsw").string(), theirs_path = (dir / "theirs.bin").string();
  auto base_body = [theirs_path] { hb::destroy(hb::load(theirs_path.c_str(), dim)); };
  benchmark::RegisterBenchmark(base_row.c_str(), [base_body, base_row, dir, theirs_path](benchmark::State& state) {
    std::filesystem::create_directories(dir);
    hb::save(theirs(), theirs_path.c_str());
    rb::timed_loop(state, base_body);
    rb::record_baseline(state, base_row);
    state.counters["ms"] = rb::seconds_per_iteration(state) * 1e3;
  });
  benchmark::RegisterBenchmark(
      row.c_str(), [base_body, base_row, dir, ours_path, theirs_path](benchmark::State& state) {
        std::filesystem::create_directories(dir);
        if (!ours<ruvllm::precision::f32>().save(ours_path)) rb::detail::fail("save failed");
        if (!std::filesystem::exists(theirs_path)) hb::save(theirs(), theirs_path.c_str());
        rb::timed_loop(state, [&] {
          auto view = index_t<ruvllm::precision::f32>::open_view(ours_path);
          if (!view) rb::detail::fail(view.error().describe());
          benchmark::DoNotOptimize(view->size());
        });
        rb::set_speedup(state, base_row, base_body);
        state.counters["ms"] = rb::seconds_per_iteration(state) * 1e3;
        state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(ours_path)) / 1e6;
      });
}

const bool registered = [] {
  register_build();
  for (std::uint32_t ef : {64u, 128u}) {
    register_search<ruvllm::precision::f32>("f32", ef);
    register_search<ruvllm::precision::f16>("f16", ef);
    register_search<st::i8>("i8", ef);
  }
  register_open();
  return true;
}();

}  // namespace
