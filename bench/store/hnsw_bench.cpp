// The HNSW vector store against hnswlib (libhnswlib-dev, built -march=native
// in its own unit) and FAISS IndexHNSWFlat (libfaiss-dev, when present) on
// the same seeded clustered data, cosine on normalized vectors, with the same
// M (16) and ef_construction (200). Our index runs in three configurations:
// hnsw (f32 codes), hnsw_f16 (f16 codes, no originals) and hnsw_i8_rerank
// (int8 codes plus f16 originals for re-ranking: half_originals, so that
// the file stays smaller than hnswlib's; f32 originals would make it bigger
// and change no ranking at these recalls).
//  * <sys>/build/<N>x<D>/threads:T: inserting every vector on T threads;
//    speedup on our rows = hnswlib's time / ours; vectors_per_s
//  * <sys>/search/<N>x<D>/ef:E for E in 16..256: one thread, all queries per
//    iteration; counters qps and recall (recall@10 against an exact f32
//    scan, whatever the codes), and on our rows dists_per_query (distances
//    computed per query: the work, free of the machine's noise; hnswlib and
//    FAISS count no such thing)
//  * <sys>/open/<N>x<D>: opening a saved index; open_ms, bytes_per_vector
//    (the saved file's size / N)
//  * hnsw/summary/<N>x<D>/recall:R: for R = 0.95 and 0.99, the first ef of
//    the grid at which each system reaches recall R and its qps there
//    (ef_<sys>, qps_<sys>; 0 when it never does), our configurations' bytes
//    per vector (bytes_<sys>), speedup_f32 = our f32 qps / the faster
//    baseline's, and speedup = the same for our fastest configuration whose
//    file is no bigger per vector than hnswlib's (named in the label)
// Datasets: 100000x128 and 50000x768 (Gaussian clusters), scaled by the env
// var RUVLLM_BENCH_HNSW_SCALE (default 1; e.g. 0.1 for a quick run). Every
// index is built once per process: the threads:1 build row keeps what it
// built for the search and open rows (or they build it on first use, on 2
// threads: filter out faiss/build to skip FAISS's slow baseline-x86 builds).

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/store/hnsw_index.hpp"
#include "store/hnswlib_baseline.hpp"
#include "support/bench.hpp"
#ifdef RUVLLM_BENCH_FAISS
#include "store/faiss_baseline.hpp"
#endif

namespace {

namespace rb = ruvllm::bench;
namespace st = ruvllm::store;
namespace hb = ruvllm::bench::hnswlib_baseline;

constexpr std::size_t k = 10, query_count = 1000, clusters = 100;
constexpr std::uint32_t m = 16, ef_construction = 200;
constexpr std::array<std::uint32_t, 5> ef_grid = {16, 32, 64, 128, 256};
constexpr std::array<double, 2> recall_targets = {0.95, 0.99};

double scale() {
  const char* env = std::getenv("RUVLLM_BENCH_HNSW_SCALE");
  const double s = env != nullptr ? std::strtod(env, nullptr) : 1.0;
  return s > 0.0 ? s : 1.0;
}

// Gaussian clusters around random centres, normalized; queries come from the
// same mixture. Ground truth by an exact scan through the f32 dot kernel.
struct dataset {
  std::size_t n = 0, dim = 0;
  std::string shape;
  std::vector<float> base, query;
  std::vector<std::uint64_t> truth;  // k per query

  static dataset make(std::size_t n, std::size_t dim, std::uint64_t seed) {
    dataset d;
    d.n = n;
    d.dim = dim;
    d.shape = rb::shape({n, dim});
    std::mt19937_64 gen(seed);
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
    fill(d.query, query_count);
    d.truth.resize(query_count * k);
    std::vector<float> dots(n);
    std::vector<std::pair<float, std::uint64_t>> all(n);
    for (std::size_t q = 0; q < query_count; ++q) {
      ruvllm::kernels::ops<ruvllm::backend::highway>::dot_many(d.query.data() + q * dim, d.base.data(), dim, n, dim,
                                                               dots.data());
      for (std::size_t i = 0; i < n; ++i) all[i] = {-dots[i], i};
      std::partial_sort(all.begin(), all.begin() + k, all.end());
      for (std::size_t j = 0; j < k; ++j) d.truth[q * k + j] = all[j].second;
    }
    return d;
  }
  [[nodiscard]] double recall(const std::vector<std::uint64_t>& got) const {
    std::size_t hits = 0;
    for (std::size_t q = 0; q < query_count; ++q)
      for (std::size_t a = 0; a < k; ++a)
        for (std::size_t b = 0; b < k; ++b) hits += got[q * k + a] == truth[q * k + b];
    return static_cast<double>(hits) / static_cast<double>(query_count * k);
  }
};

constexpr std::size_t dataset_count = 2;

const dataset& data(std::size_t which) {
  static std::unique_ptr<dataset> sets[dataset_count];
  if (!sets[which]) {
    const double s = scale();
    const auto sized = [s](std::size_t n) { return std::max<std::size_t>(static_cast<std::size_t>(n * s), 1000); };
    sets[which] = std::make_unique<dataset>(which == 0 ? dataset::make(sized(100000), 128, 7)
                                                       : dataset::make(sized(50000), 768, 8));
  }
  return *sets[which];
}
std::string shape_of(std::size_t which) {
  const double s = scale();
  const auto sized = [s](std::size_t n) { return std::max<std::size_t>(static_cast<std::size_t>(n * s), 1000); };
  return which == 0 ? rb::shape({sized(100000), 128}) : rb::shape({sized(50000), 768});
}

// ---- the three systems behind one interface -----------------------------

// Our index at one storage precision: f32, f16 (half the bytes per
// distance, a smaller file than hnswlib's), and int8 keeping f16 originals
// for re-ranking (a quarter of the bytes per distance).
template <ruvllm::store::VectorPrecision P, bool KeepOriginals>
struct ours_sys {
  static constexpr const char* name = std::is_same_v<P, ruvllm::precision::f32>   ? "hnsw"
                                      : std::is_same_v<P, ruvllm::precision::f16> ? "hnsw_f16"
                                      : KeepOriginals                             ? "hnsw_i8_rerank"
                                                                                  : "hnsw_i8";
  using index = st::hnsw_index<st::metric::cosine, P>;
  static std::unique_ptr<index> build(const dataset& d, unsigned threads) {
    auto ix = std::make_unique<index>(index::create(st::hnsw_options{.dimension = static_cast<std::uint32_t>(d.dim),
                                                                     .m = m,
                                                                     .ef_construction = ef_construction,
                                                                     .keep_originals = KeepOriginals,
                                                                     .half_originals = KeepOriginals})
                                          .value());
    std::vector<std::uint64_t> keys(d.n);
    for (std::size_t i = 0; i < d.n; ++i) keys[i] = i;
    std::unique_ptr<ruvllm::thread_pool> pool;
    if (threads > 1) pool = std::make_unique<ruvllm::thread_pool>(threads);
    if (!ix->insert_batch(keys, d.base, pool.get())) rb::detail::fail("hnsw build failed");
    return ix;
  }
  struct searcher {
    const index* ix;
    st::hnsw_search_context ctx;
    std::vector<st::search_hit> hits = std::vector<st::search_hit>(k);
    std::uint32_t ef = 64;
    std::uint64_t distances = 0;
    void operator()(const float* q, std::size_t dim, std::uint64_t* out) {
      auto n =
          ix->search(std::span<const float>(q, dim), std::span<st::search_hit>(hits), ctx, st::search_params{.ef = ef});
      for (std::size_t j = 0; j < *n; ++j) out[j] = hits[j].key;
      distances += ctx.stats().distances;
    }
    [[nodiscard]] std::uint64_t distance_count() const { return distances; }
  };
  static searcher make_searcher(index* ix, std::uint32_t ef) {
    return searcher{ix, {}, std::vector<st::search_hit>(k), ef, 0};
  }
  static void save(index* ix, const std::string& path) {
    if (!ix->save(path)) rb::detail::fail("hnsw save failed");
  }
  static void open(const std::string& path, std::size_t) {
    auto view = index::open_view(path);
    if (!view) rb::detail::fail(view.error().describe());
    benchmark::DoNotOptimize(view->size());
  }
};
using ours_f32 = ours_sys<ruvllm::precision::f32, false>;
using ours_f16 = ours_sys<ruvllm::precision::f16, false>;
using ours_i8_rerank = ours_sys<st::i8, true>;

struct hnswlib_sys {
  static constexpr const char* name = "hnswlib";
  struct index {
    hb::index* p = nullptr;
    ~index() { hb::destroy(p); }
  };
  static std::unique_ptr<index> build(const dataset& d, unsigned threads) {
    auto ix = std::make_unique<index>();
    ix->p = hb::build(d.base.data(), d.n, d.dim, m, ef_construction, threads);
    return ix;
  }
  struct searcher {
    hb::index* ix;
    void operator()(const float* q, std::size_t, std::uint64_t* out) { hb::search(ix, q, k, out); }
    // hnswlib's own counter adds every link it scans, visited ones included:
    // not the same measure, so it is not exported.
    [[nodiscard]] std::uint64_t distance_count() const { return 0; }
  };
  static searcher make_searcher(index* ix, std::uint32_t ef) {
    hb::set_ef(ix->p, ef);
    return searcher{ix->p};
  }
  static void save(index* ix, const std::string& path) { hb::save(ix->p, path.c_str()); }
  static void open(const std::string& path, std::size_t dim) { hb::destroy(hb::load(path.c_str(), dim)); }
};

#ifdef RUVLLM_BENCH_FAISS
namespace fb = ruvllm::bench::faiss_baseline;
struct faiss_sys {
  static constexpr const char* name = "faiss";
  struct index {
    fb::index* p = nullptr;
    ~index() { fb::destroy(p); }
  };
  static std::unique_ptr<index> build(const dataset& d, unsigned threads) {
    auto ix = std::make_unique<index>();
    ix->p = fb::build(d.base.data(), d.n, d.dim, m, ef_construction, threads);
    return ix;
  }
  struct searcher {
    fb::index* ix;
    void operator()(const float* q, std::size_t, std::uint64_t* out) { fb::search(ix, q, k, out); }
    [[nodiscard]] std::uint64_t distance_count() const { return 0; }  // FAISS keeps no such counter
  };
  static searcher make_searcher(index* ix, std::uint32_t ef) {
    fb::set_ef(ix->p, ef);
    return searcher{ix->p};
  }
  static void save(index* ix, const std::string& path) { fb::save(ix->p, path.c_str()); }
  static void open(const std::string& path, std::size_t) { fb::destroy(fb::load(path.c_str())); }
};
#endif

// The index of each system and dataset, built once: the one the threads:1
// build row made, or (when that row was filtered out) a 2-thread build.
template <class Sys>
typename Sys::index* cached(std::size_t which, std::unique_ptr<typename Sys::index> fresh = nullptr) {
  static std::unique_ptr<typename Sys::index> built[dataset_count];
  if (fresh && !built[which]) built[which] = std::move(fresh);
  if (!built[which]) built[which] = Sys::build(data(which), 2);
  return built[which].get();
}

// (recall, qps) of every search row that ran, for the summary.
struct point {
  double recall = 0.0, qps = 0.0, distances = 0.0;  // distances computed per query
};
std::map<std::string, point>& results() {
  static std::map<std::string, point> r;
  return r;
}
std::string key_of(const char* sys, std::size_t which, std::uint32_t ef) {
  return std::string(sys) + "/" + std::to_string(which) + "/" + std::to_string(ef);
}

template <class Sys>
point run_queries(std::size_t which, std::uint32_t ef, benchmark::State* state) {
  const auto& d = data(which);
  auto s = Sys::make_searcher(cached<Sys>(which), ef);
  std::vector<std::uint64_t> got(query_count * k, ~std::uint64_t{0});
  const std::uint64_t distances_before = s.distance_count();
  for (std::size_t q = 0; q < query_count; ++q) s(d.query.data() + q * d.dim, d.dim, got.data() + q * k);
  point p;
  p.recall = d.recall(got);
  p.distances = static_cast<double>(s.distance_count() - distances_before) / query_count;
  const auto body = [&] {
    for (std::size_t q = 0; q < query_count; ++q) s(d.query.data() + q * d.dim, d.dim, got.data() + q * k);
    benchmark::DoNotOptimize(got.data());
  };
  const double seconds = state != nullptr ? rb::timed_loop(*state, body) : rb::measure_seconds_per_call(body, 1, 0.3);
  p.qps = static_cast<double>(query_count) / seconds;
  results()[key_of(Sys::name, which, ef)] = p;
  return p;
}

template <class Sys>
void register_search(std::size_t which) {
  for (const std::uint32_t ef : ef_grid) {
    const std::string row = std::string(Sys::name) + "/search/" + shape_of(which) + "/ef:" + std::to_string(ef);
    benchmark::RegisterBenchmark(row.c_str(), [which, ef](benchmark::State& state) {
      const point p = run_queries<Sys>(which, ef, &state);
      state.counters["qps"] = p.qps;
      state.counters["recall"] = p.recall;
      // Machine-independent work per query (none for FAISS, which does not count).
      if (p.distances > 0) state.counters["dists_per_query"] = p.distances;
    });
  }
}

template <class Sys>
void register_build(std::size_t which) {
  for (const unsigned threads : {1u, 2u}) {
    const std::string row =
        std::string(Sys::name) + "/build/" + shape_of(which) + "/threads:" + std::to_string(threads);
    const std::string base_row = "hnswlib/build/" + shape_of(which) + "/threads:" + std::to_string(threads);
    benchmark::RegisterBenchmark(row.c_str(), [which, threads, row, base_row](benchmark::State& state) {
      const auto& d = data(which);
      std::unique_ptr<typename Sys::index> last;
      rb::timed_loop(
          state, [&] { last = Sys::build(d, threads); }, threads);
      if (threads == 1) cached<Sys>(which, std::move(last));
      if constexpr (std::is_same_v<Sys, hnswlib_sys>) {
        rb::record_baseline(state, base_row);
      } else {
        rb::set_speedup(
            state, base_row, [&] { hnswlib_sys::build(d, threads); }, threads);
      }
      state.counters["vectors_per_s"] = static_cast<double>(d.n) / rb::seconds_per_iteration(state);
    });
  }
}

// Where the open rows save their files; removed when the process exits.
const std::filesystem::path& bench_dir() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ruvllm_hnsw_bench_" + std::to_string(::getpid()));
  return dir;
}

// The saved file of a system's index / N, measured once per process (by
// its open row, or on first use by the summary).
std::map<std::string, double>& file_sizes() {
  static std::map<std::string, double> sizes;
  return sizes;
}

template <class Sys>
std::string saved_file(std::size_t which) {
  std::filesystem::create_directories(bench_dir());
  const std::string path = (bench_dir() / (std::string(Sys::name) + std::to_string(which))).string();
  Sys::save(cached<Sys>(which), path);
  file_sizes()[key_of(Sys::name, which, 0)] =
      static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(data(which).n);
  return path;
}

template <class Sys>
double bytes_per_vector(std::size_t which) {
  const auto it = file_sizes().find(key_of(Sys::name, which, 0));
  if (it != file_sizes().end()) return it->second;
  std::filesystem::remove(saved_file<Sys>(which));
  return file_sizes()[key_of(Sys::name, which, 0)];
}

template <class Sys>
void register_open(std::size_t which) {
  const std::string row = std::string(Sys::name) + "/open/" + shape_of(which);
  benchmark::RegisterBenchmark(row.c_str(), [which](benchmark::State& state) {
    const auto& d = data(which);
    const std::string path = saved_file<Sys>(which);
    rb::timed_loop(state, [&] { Sys::open(path, d.dim); });
    state.counters["open_ms"] = rb::seconds_per_iteration(state) * 1e3;
    state.counters["bytes_per_vector"] = bytes_per_vector<Sys>(which);
    std::filesystem::remove(path);
  });
}

// The first ef of the grid reaching `target`, measuring what the search rows
// did not (filtered out).
template <class Sys>
std::pair<std::uint32_t, double> first_reaching(std::size_t which, double target) {
  for (const std::uint32_t ef : ef_grid) {
    auto it = results().find(key_of(Sys::name, which, ef));
    const point p = it != results().end() ? it->second : run_queries<Sys>(which, ef, nullptr);
    if (p.recall >= target) return {ef, p.qps};
  }
  return {0, 0.0};
}

// Per dataset and recall level: each system's first ef reaching it and its
// qps there (ef_<sys>, qps_<sys>; 0 when it never does), our configurations'
// bytes per vector (bytes_<sys>), and two speedups over the faster baseline:
//  * speedup_f32: our f32 index, the like-for-like comparison;
//  * speedup: our fastest configuration whose file is no bigger per vector
//    than hnswlib's (the bytes-per-vector target), named in the label.
template <class... Ours>
void register_summary(std::size_t which) {
  for (const double target : recall_targets) {
    const std::string row =
        "hnsw/summary/" + shape_of(which) + "/recall:" + (target == 0.95 ? std::string("0.95") : std::string("0.99"));
    benchmark::RegisterBenchmark(row.c_str(), [which, target](benchmark::State& state) {
      // The figures come from the search rows; the loop only satisfies the
      // framework (each pass is a few map lookups once they are cached).
      std::pair<std::uint32_t, double> f32;
      for (auto _ : state) f32 = first_reaching<ours_f32>(which, target);
      const auto lib = first_reaching<hnswlib_sys>(which, target);
      state.counters["ef_hnswlib"] = lib.first;
      state.counters["qps_hnswlib"] = lib.second;
      double baseline = lib.second;
#ifdef RUVLLM_BENCH_FAISS
      const auto fa = first_reaching<faiss_sys>(which, target);
      state.counters["ef_faiss"] = fa.first;
      state.counters["qps_faiss"] = fa.second;
      baseline = std::max(baseline, fa.second);
#endif
      const double lib_bytes = bytes_per_vector<hnswlib_sys>(which);
      state.counters["bytes_hnswlib"] = lib_bytes;
      double best = 0.0;
      std::string best_name = "none";
      const auto consider = [&]<class Sys>(Sys*) {
        const auto [ef, qps] = first_reaching<Sys>(which, target);
        const double bytes = bytes_per_vector<Sys>(which);
        state.counters[std::string("ef_") + Sys::name] = ef;
        state.counters[std::string("qps_") + Sys::name] = qps;
        state.counters[std::string("bytes_") + Sys::name] = bytes;
        if (bytes <= lib_bytes && qps > best) {
          best = qps;
          best_name = Sys::name;
        }
      };
      (consider(static_cast<Ours*>(nullptr)), ...);
      // A system that never reaches the target on the grid has qps 0 there.
      state.counters["speedup_f32"] = baseline > 0.0 ? f32.second / baseline : 0.0;
      state.counters["speedup"] = baseline > 0.0 ? best / baseline : 0.0;
      state.SetLabel("best: " + best_name);
    });
  }
}

template <class Sys>
void register_system(std::size_t which) {
  register_build<Sys>(which);
  register_search<Sys>(which);
  register_open<Sys>(which);
}

const bool registered = [] {
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(bench_dir(), ec);
  });
  for (std::size_t which = 0; which < dataset_count; ++which) {
    register_system<hnswlib_sys>(which);
#ifdef RUVLLM_BENCH_FAISS
    register_system<faiss_sys>(which);
#endif
    register_system<ours_f32>(which);
    register_system<ours_f16>(which);
    register_system<ours_i8_rerank>(which);
    register_summary<ours_f32, ours_f16, ours_i8_rerank>(which);
  }
  return true;
}();

}  // namespace
