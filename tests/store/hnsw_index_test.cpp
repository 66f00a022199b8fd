// hnsw_index against brute force: recall, filters, deletes and updates,
// multi-threaded builds, and a seeded operation sequence checked against a
// simple model after every step.

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <map>
#include <set>
#include <vector>

#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/store/hnsw_index.hpp"
#include "support/property.hpp"
#include "support/rng.hpp"
#include "store/store_test_support.hpp"

namespace hnsw_index_test {

namespace {

namespace st = ruvllm::store;
namespace p = ruvllm::precision;
using ruvllm::test::rng;
using st_support::brute_force;
using st_support::random_vectors;
using st_support::recall_at;

// Gaussian clusters around uniform random centres (the shape of real
// embedding sets: dense regions, empty space between them).
std::vector<float> clustered_vectors(std::size_t n, std::size_t dim, std::size_t clusters, std::uint64_t stream) {
  rng gen(stream);
  std::vector<float> centres(clusters * dim);
  for (auto& c : centres) c = gen.uniform(-1.0f, 1.0f);
  std::vector<float> v(n * dim);
  for (std::size_t r = 0; r < n; ++r) {
    const std::size_t c = gen.uniform_index(0, clusters - 1);
    for (std::size_t i = 0; i < dim; ++i) v[r * dim + i] = centres[c * dim + i] + gen.normal(0.0f, 0.25f);
  }
  return v;
}

template <class Index>
double measure_recall(const Index& index, const std::vector<float>& data, std::size_t n, std::size_t dim,
                      const std::vector<float>& queries, std::size_t nq, std::uint32_t ef) {
  double total = 0.0;
  for (std::size_t q = 0; q < nq; ++q) {
    std::span<const float> query(queries.data() + q * dim, dim);
    auto hits = index.search(query, 10, st::search_params{.ef = ef});
    REQUIRE(hits);
    auto truth = brute_force<typename Index::metric_type>(data, n, dim, query, 10);
    total += recall_at(*hits, truth);
  }
  return total / static_cast<double>(nq);
}

template <class Metric, class Precision>
void recall_case(bool keep_originals, std::uint32_t ef, double want, std::size_t n = 5000) {
  constexpr std::size_t dim = 64, nq = 100;
  auto data = random_vectors(n, dim, 11);
  auto queries = random_vectors(nq, dim, 12);
  auto index =
      st::hnsw_index<Metric, Precision>::create(
          st::hnsw_options{.dimension = dim, .m = 16, .ef_construction = 100, .keep_originals = keep_originals})
          .value();
  std::vector<std::uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = i;
  ruvllm::thread_pool pool(2);
  REQUIRE(index.insert_batch(keys, data, &pool));
  REQUIRE(index.check_invariants());
  const double r = measure_recall(index, data, n, dim, queries, nq, ef);
  INFO(Metric::name << " " << (keep_originals ? "rerank" : "codes") << " recall@10 " << r);
  CHECK(r >= want);
}

}  // namespace

TEST_CASE("hnsw recall@10 against brute force, f32", "[store][hnsw]") {
  recall_case<st::metric::l2, p::f32>(false, 128, 0.95);
  recall_case<st::metric::cosine, p::f32>(false, 128, 0.95, 2000);
  recall_case<st::metric::dot, p::f32>(false, 128, 0.95, 2000);
}

TEST_CASE("hnsw recall@10 against brute force, f16 and i8", "[store][hnsw]") {
  recall_case<st::metric::cosine, p::f16>(false, 128, 0.95);
  recall_case<st::metric::l2, st::i8>(true, 128, 0.95);
  // Without re-ranking the int8 codes alone still find most true neighbours.
  recall_case<st::metric::cosine, st::i8>(false, 128, 0.85, 2000);
}

TEST_CASE("hnsw i8 codes re-ranked against f16 originals", "[store][hnsw]") {
  // half_originals keeps the originals as f16: recall as with f32 originals,
  // half their bytes, and every returned distance is the one between the
  // f16-rounded normalized query and vector (a scalar reference here).
  constexpr std::size_t n = 3000, dim = 48, nq = 60;
  auto data = clustered_vectors(n + nq, dim, 40, 71);
  const std::vector<float> queries(data.begin() + n * dim, data.end());
  data.resize(n * dim);
  std::vector<std::uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = i;
  const auto make = [&](bool half) {
    auto index = st::hnsw_index<st::metric::cosine, st::i8>::create(
                     st::hnsw_options{.dimension = dim, .m = 12, .keep_originals = true, .half_originals = half})
                     .value();
    REQUIRE(index.insert_batch(keys, data));
    return index;
  };
  auto full = make(false), half = make(true);
  const auto normalized_f16 = [](std::span<const float> v) {
    double ss = 0.0;
    for (float x : v) ss += static_cast<double>(x) * x;
    const float scale = static_cast<float>(1.0 / std::sqrt(ss));
    std::vector<float> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = ruvllm::to_float(ruvllm::to_f16(v[i] * scale));
    return out;
  };
  double recall_full = 0.0, recall_half = 0.0;
  for (std::size_t q = 0; q < nq; ++q) {
    std::span<const float> query(queries.data() + q * dim, dim);
    const auto truth = brute_force<st::metric::cosine>(data, n, dim, query, 10);
    const auto a = full.search(query, 10, st::search_params{.ef = 64}).value();
    const auto b = half.search(query, 10, st::search_params{.ef = 64}).value();
    recall_full += recall_at(a, truth);
    recall_half += recall_at(b, truth);
    const auto qh = normalized_f16(query);
    for (const auto& hit : b) {
      const auto vh = normalized_f16(std::span<const float>(data.data() + hit.key * dim, dim));
      double dot = 0.0;
      for (std::size_t i = 0; i < dim; ++i) dot += static_cast<double>(qh[i]) * vh[i];
      CHECK(hit.distance == Approx(1.0 - dot).margin(1e-5));
    }
  }
  INFO("recall@10 f32 originals " << recall_full / nq << ", f16 originals " << recall_half / nq);
  CHECK(recall_half / nq >= 0.95);
  CHECK(recall_half >= recall_full - 0.01 * nq);
  // get_vector returns the f16 original (normalized, as cosine stores it).
  std::vector<float> got(dim);
  REQUIRE(half.get_vector(7, got));
  const auto want = normalized_f16(std::span<const float>(data.data() + 7 * dim, dim));
  for (std::size_t i = 0; i < dim; ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
  // f16 originals without originals is a contradiction, refused up front.
  const auto bad = st::hnsw_index<st::metric::cosine, st::i8>::create(
      st::hnsw_options{.dimension = dim, .keep_originals = false, .half_originals = true});
  REQUIRE(!bad);
  CHECK(bad.error().code() == ruvllm::errc::invalid_argument);
}

TEST_CASE("hnsw recall@10 sweep over metrics and precisions", "[store][hnsw][slow]") {
  // Built on two threads, whose timing decides which nodes link while others
  // are still being linked: at ef 64 this case measured 0.897-0.906 over 22
  // builds (the same vectors built on one thread: 0.907), so its bar sits
  // below that spread; a broken graph falls far below it.
  recall_case<st::metric::cosine, p::f32>(false, 64, 0.89);
  recall_case<st::metric::dot, p::f32>(false, 128, 0.95);
  recall_case<st::metric::l2, p::f16>(false, 128, 0.95);
  recall_case<st::metric::dot, p::f16>(false, 128, 0.95);
  recall_case<st::metric::cosine, st::i8>(true, 128, 0.95);
  recall_case<st::metric::dot, st::i8>(true, 128, 0.95);
}

TEST_CASE("hnsw filtered search keeps recall at 1%, 10% and 50% selectivity", "[store][hnsw]") {
  constexpr std::size_t n = 5000, dim = 64, nq = 50;
  auto data = clustered_vectors(n + nq, dim, 50, 21);
  const std::vector<float> queries(data.begin() + n * dim, data.end());
  data.resize(n * dim);
  auto index = st::hnsw_index<st::metric::l2, p::f32>::create(st::hnsw_options{.dimension = dim}).value();
  std::vector<std::uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = i;
  REQUIRE(index.insert_batch(keys, data));
  for (std::uint64_t modulus : {100u, 10u, 2u}) {
    const auto accept = [modulus](std::uint64_t key) { return key % modulus == 3 % modulus; };
    double total = 0.0;
    ruvllm::store::hnsw_search_context ctx;
    std::vector<st::search_hit> out(10);
    for (std::size_t q = 0; q < nq; ++q) {
      std::span<const float> query(queries.data() + q * dim, dim);
      auto got = index.search(query, std::span<st::search_hit>(out), ctx, {}, accept);
      REQUIRE(got);
      REQUIRE(*got == 10);
      for (std::size_t i = 0; i < *got; ++i) REQUIRE(accept(out[i].key));
      auto truth = brute_force<st::metric::l2>(data, n, dim, query, 10, accept);
      total += recall_at(std::span<const st::search_hit>(out.data(), *got), truth);
    }
    INFO("filter 1/" << modulus << " recall@10 " << total / nq);
    CHECK(total / nq >= 0.95);
  }
}

TEST_CASE("hnsw rejects bad arguments with errors", "[store][hnsw]") {
  using index_t = st::hnsw_index<st::metric::cosine, p::f32>;
  CHECK(!index_t::create(st::hnsw_options{.dimension = 0}));
  CHECK(!index_t::create(st::hnsw_options{.dimension = 8, .m = 1}));
  CHECK(!index_t::create(st::hnsw_options{.dimension = 8, .m = 16, .ef_construction = 4}));
  auto index = index_t::create(st::hnsw_options{.dimension = 4}).value();
  const float v[4] = {1, 2, 3, 4};
  const float bad[4] = {1, std::numeric_limits<float>::quiet_NaN(), 3, 4};
  CHECK(index.insert(1, v));
  CHECK(index.insert(1, v).error().code() == ruvllm::errc::already_exists);
  CHECK(index.insert(2, bad).error().code() == ruvllm::errc::invalid_argument);
  CHECK(index.insert(3, std::span<const float>(v, 3)).error().code() == ruvllm::errc::invalid_argument);
  CHECK(index.remove(9).error().code() == ruvllm::errc::not_found);
  CHECK(index.update(9, v).error().code() == ruvllm::errc::not_found);
  CHECK(!index.search(std::span<const float>(v, 3), 1));
  auto hits = index.search(v, 5).value();
  REQUIRE(hits.size() == 1);
  CHECK(hits[0].key == 1);
  CHECK(hits[0].distance == Approx(0.0f).margin(1e-6));
}

namespace {

// The model: key -> vector. Every live node must stay reachable from the
// entry point after every step (the index's reachability rule, see
// hnsw_index.hpp), at M = 4 where HNSW's pruning strands nodes most easily;
// so a search with ef above the slot count visits every live node and must
// return the brute-force answer exactly (f32 codes).
template <class Metric, class Precision>
void model_sequence(ruvllm::test::rng& gen, std::size_t steps, double compact_ratio) {
  constexpr std::size_t dim = 8;
  auto index = st::hnsw_index<Metric, Precision>::create(
                   st::hnsw_options{.dimension = dim, .m = 4, .ef_construction = 16, .compact_ratio = compact_ratio})
                   .value();
  std::map<std::uint64_t, std::vector<float>> model;
  std::uint64_t next_key = 1;
  st::hnsw_search_context ctx;
  std::size_t islands = 0, inexact = 0, searches = 0, stranded_before = 0;
  for (std::size_t step = 0; step < steps; ++step) {
    INFO("step " << step);
    const std::size_t op = gen.uniform_index(0, 9);
    INFO("op " << op);
    if (op <= 3 || model.empty()) {
      auto v = gen.uniform_vector(dim);
      const std::uint64_t key = next_key++;
      REQUIRE(index.insert(key, v));
      model[key] = v;
    } else if (op <= 5) {
      auto it = std::next(model.begin(), static_cast<long>(gen.uniform_index(0, model.size() - 1)));
      REQUIRE(index.remove(it->first));
      CHECK(!index.remove(it->first));
      model.erase(it);
    } else if (op == 6) {
      auto it = std::next(model.begin(), static_cast<long>(gen.uniform_index(0, model.size() - 1)));
      it->second = gen.uniform_vector(dim);
      REQUIRE(index.update(it->first, it->second));
    } else if (op == 7 && gen.chance(0.1)) {
      REQUIRE(index.compact());
    } else {
      auto q = gen.uniform_vector(dim);
      std::vector<float> flat;
      std::vector<std::uint64_t> keys;
      for (auto& [k, v] : model) {
        keys.push_back(k);
        flat.insert(flat.end(), v.begin(), v.end());
      }
      const std::size_t k = std::min<std::size_t>(5, model.size());
      std::vector<st::search_hit> out(k);
      auto got = index.search(q, std::span<st::search_hit>(out), ctx,
                              st::search_params{.ef = static_cast<std::uint32_t>(index.slot_count() + 8)});
      REQUIRE(got);
      REQUIRE(*got <= k);
      REQUIRE(*got + 1 >= k);
      auto truth = brute_force<Metric>(flat, model.size(), dim, q, k, nullptr, &keys);
      for (std::size_t i = 0; i < k; ++i) {
        REQUIRE(model.contains(out[i].key));
        if (i > 0) REQUIRE(out[i - 1].distance <= out[i].distance);
      }
      ++searches;
      if constexpr (std::same_as<Precision, p::f32>) inexact += recall_at(out, truth) < 1.0;
    }
    REQUIRE(index.size() == model.size());
    REQUIRE(index.check_invariants());
    const std::size_t stranded = index.unreachable_count();
    CHECK(stranded == 0);
    islands += stranded > stranded_before;
    stranded_before = stranded;
    for (auto& [k, v] : model) REQUIRE(index.contains(k));
  }
  INFO("steps that stranded nodes " << islands << ", inexact searches " << inexact << " of " << searches);
  CHECK(islands == 0);
  CHECK(inexact == 0);
  std::vector<float> got(dim);
  for (auto& [k, v] : model) {
    REQUIRE(index.get_vector(k, got));
    if constexpr (std::same_as<Precision, p::f32> && std::same_as<Metric, st::metric::l2>)
      for (std::size_t i = 0; i < dim; ++i) CHECK(got[i] == v[i]);
  }
}

}  // namespace

TEST_CASE("hnsw insert/remove/update/compact sequences match a brute-force model", "[store][hnsw][property]") {
  ruvllm::test::check_property(31, 8, [](ruvllm::test::rng& gen, std::size_t trial) {
    model_sequence<st::metric::l2, p::f32>(gen, 400, trial % 2 == 0 ? 0.3 : 0.0);
  });
  ruvllm::test::check_property(
      32, 3, [](ruvllm::test::rng& gen, std::size_t) { model_sequence<st::metric::cosine, p::f32>(gen, 300, 0.5); });
  ruvllm::test::check_property(
      33, 3, [](ruvllm::test::rng& gen, std::size_t) { model_sequence<st::metric::dot, st::i8>(gen, 300, 0.5); });
}

TEST_CASE("hnsw long model sequences", "[store][hnsw][property][slow]") {
  ruvllm::test::check_property(34, 20, [](ruvllm::test::rng& gen, std::size_t trial) {
    model_sequence<st::metric::l2, p::f32>(gen, 2000, trial % 2 == 0 ? 0.3 : 0.0);
  });
}

TEST_CASE("hnsw deletes keep recall and reuse slots", "[store][hnsw]") {
  constexpr std::size_t n = 3000, dim = 32, nq = 50;
  auto data = random_vectors(n, dim, 41);
  auto queries = random_vectors(nq, dim, 42);
  auto index =
      st::hnsw_index<st::metric::l2, p::f32>::create(st::hnsw_options{.dimension = dim, .compact_ratio = 0.0}).value();
  std::vector<std::uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = i;
  REQUIRE(index.insert_batch(keys, data));
  // Remove every third key, then reinsert half of them: slots are reused.
  for (std::size_t i = 0; i < n; i += 3) REQUIRE(index.remove(i));
  CHECK(index.tombstone_count() == (n + 2) / 3);
  for (std::size_t i = 0; i < n; i += 6) REQUIRE(index.insert(i, std::span<const float>(data.data() + i * dim, dim)));
  CHECK(index.slot_count() == n);
  REQUIRE(index.check_invariants());
  std::vector<std::uint64_t> live;
  std::vector<float> flat;
  for (std::size_t i = 0; i < n; ++i)
    if (i % 3 != 0 || i % 6 == 0) {
      live.push_back(i);
      flat.insert(flat.end(), data.begin() + static_cast<long>(i * dim),
                  data.begin() + static_cast<long>((i + 1) * dim));
    }
  double total = 0.0;
  for (std::size_t q = 0; q < nq; ++q) {
    std::span<const float> query(queries.data() + q * dim, dim);
    auto hits = index.search(query, 10).value();
    for (auto& h : hits) REQUIRE((h.key % 3 != 0 || h.key % 6 == 0));
    total += recall_at(hits, brute_force<st::metric::l2>(flat, live.size(), dim, query, 10, nullptr, &live));
  }
  CHECK(total / nq >= 0.95);
  REQUIRE(index.compact());
  CHECK(index.tombstone_count() == 0);
  CHECK(index.size() == live.size());
  REQUIRE(index.check_invariants());
}

TEST_CASE("hnsw readers search while a writer inserts, updates, removes and batches", "[store][hnsw][threads]") {
  constexpr std::size_t dim = 16;
  auto index = st::hnsw_index<st::metric::cosine, p::f32>::create(
                   st::hnsw_options{.dimension = dim, .m = 8, .ef_construction = 64, .compact_ratio = 0.3})
                   .value();
  auto data = random_vectors(3000, dim, 81);
  std::vector<std::uint64_t> keys(1000);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = i;
  REQUIRE(index.insert_batch(keys, std::span<const float>(data.data(), 1000 * dim)));
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> searches{0}, bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      st::hnsw_search_context ctx;
      std::vector<st::search_hit> out(10);
      std::size_t q = static_cast<std::size_t>(t);
      while (!stop.load(std::memory_order_relaxed)) {
        std::span<const float> query(data.data() + (q++ % 3000) * dim, dim);
        auto n = index.search(query, std::span<st::search_hit>(out), ctx);
        if (!n) {
          ++bad;
          continue;
        }
        for (std::size_t i = 1; i < *n; ++i)
          if (out[i - 1].distance > out[i].distance) ++bad;
        for (std::size_t i = 0; i < *n; ++i)
          if (out[i].key >= 3000) ++bad;
        ++searches;
      }
    });
  }
  ruvllm::thread_pool pool(2);
  std::vector<std::uint64_t> batch_keys(1000);
  for (std::size_t i = 0; i < 1000; ++i) batch_keys[i] = 2000 + i;
  REQUIRE(index.insert_batch(batch_keys, std::span<const float>(data.data() + 2000 * dim, 1000 * dim), &pool));
  for (std::size_t i = 1000; i < 2000; ++i) {
    REQUIRE(index.insert(i, std::span<const float>(data.data() + i * dim, dim)));
    if (i % 3 == 0) REQUIRE(index.remove(i - 1000));
    if (i % 5 == 0) REQUIRE(index.update(i, std::span<const float>(data.data() + (i - 500) * dim, dim)));
  }
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(bad == 0);
  CHECK(searches > 0);
  REQUIRE(index.check_invariants());
}

TEST_CASE("hnsw recall@10 on clustered data against brute force", "[store][hnsw]") {
  constexpr std::size_t n = 4000, nq = 100, dim = 32;
  auto data = clustered_vectors(n + nq, dim, 40, 91);
  const std::vector<float> queries(data.begin() + n * dim, data.end());
  data.resize(n * dim);
  std::vector<std::uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = i;
  const auto check = [&](auto index, std::uint32_t ef, double want, ruvllm::thread_pool* pool) {
    REQUIRE(index.insert_batch(keys, data, pool));
    REQUIRE(index.check_invariants());
    CHECK(index.unreachable_count() == 0);
    const double r = measure_recall(index, data, n, dim, queries, nq, ef);
    INFO("recall@10 " << r << " at ef " << ef);
    CHECK(r >= want);
  };
  ruvllm::thread_pool pool(2);
  check(st::hnsw_index<st::metric::cosine, p::f32>::create(
            st::hnsw_options{.dimension = dim, .m = 16, .ef_construction = 100})
            .value(),
        64, 0.97, nullptr);
  check(st::hnsw_index<st::metric::l2, p::f16>::create(st::hnsw_options{.dimension = dim, .m = 8}).value(), 64, 0.95,
        &pool);
  check(st::hnsw_index<st::metric::cosine, st::i8>::create(
            st::hnsw_options{.dimension = dim, .m = 12, .keep_originals = true})
            .value(),
        64, 0.95, &pool);
}

namespace {

// Rounds of churn: remove a random 30% of the live keys, then insert them
// again (half with their old vector, half with a new one), through single
// calls; after each round recall against brute force over the live set
// stays high, every live node is reachable, and the invariants hold.
template <class Metric>
void churn_case(std::uint32_t m, double compact_ratio, std::uint64_t stream) {
  constexpr std::size_t n = 2000, nq = 50, dim = 16, rounds = 4;
  auto pool_of_vectors = clustered_vectors(2 * n + nq, dim, 30, stream);
  const std::vector<float> queries(pool_of_vectors.end() - static_cast<long>(nq * dim), pool_of_vectors.end());
  auto index = st::hnsw_index<Metric, p::f32>::create(
                   st::hnsw_options{.dimension = dim, .m = m, .ef_construction = 64, .compact_ratio = compact_ratio})
                   .value();
  std::map<std::uint64_t, std::size_t> row_of;  // key -> row of pool_of_vectors
  std::vector<std::uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = i * 3 + 1;
    row_of[keys[i]] = i;
  }
  REQUIRE(index.insert_batch(keys, std::span<const float>(pool_of_vectors.data(), n * dim)));
  rng gen(stream + 1);
  const auto row = [&](std::size_t r) { return std::span<const float>(pool_of_vectors.data() + r * dim, dim); };
  for (std::size_t round = 0; round < rounds; ++round) {
    INFO("round " << round);
    std::vector<std::uint64_t> live;
    for (auto& [k, r] : row_of) live.push_back(k);
    std::vector<std::uint64_t> gone;
    for (auto k : live)
      if (gen.chance(0.3)) gone.push_back(k);
    for (auto k : gone) REQUIRE(index.remove(k));
    REQUIRE(index.check_invariants());
    REQUIRE(index.unreachable_count() == 0);
    for (auto k : gone) {
      if (gen.chance(0.5)) row_of[k] = n + gen.uniform_index(0, n - 1);
      REQUIRE(index.insert(k, row(row_of[k])));
    }
    REQUIRE(index.size() == n);
    REQUIRE(index.check_invariants());
    REQUIRE(index.unreachable_count() == 0);
    std::vector<std::uint64_t> live_keys;
    std::vector<float> flat;
    for (auto& [k, r] : row_of) {
      live_keys.push_back(k);
      flat.insert(flat.end(), row(r).begin(), row(r).end());
    }
    double total = 0.0;
    for (std::size_t q = 0; q < nq; ++q) {
      std::span<const float> query(queries.data() + q * dim, dim);
      auto hits = index.search(query, 10, st::search_params{.ef = 64}).value();
      total += recall_at(hits, brute_force<Metric>(flat, live_keys.size(), dim, query, 10, nullptr, &live_keys));
    }
    INFO("recall@10 after churn " << total / nq);
    CHECK(total / nq >= 0.95);
  }
}

}  // namespace

TEST_CASE("hnsw recall and reachability survive rounds of 30% delete and re-insert", "[store][hnsw]") {
  churn_case<st::metric::l2>(8, 0.0, 101);      // tombstones reused, never compacted
  churn_case<st::metric::cosine>(4, 0.0, 102);  // M = 4: pruning strands nodes most easily
  churn_case<st::metric::l2>(6, 0.25, 103);     // compactions rebuild in between
}

// Many equal vectors (a witness log of repeated queries): every neighbour's
// heuristic ties on distance and drops the newcomer, so each new node's
// in-link is forced in; every copy must stay reachable and findable.
TEST_CASE("hnsw keeps many copies of equal vectors reachable and findable", "[store][hnsw]") {
  constexpr std::size_t dim = 32, n = 3000, distinct = 5;
  auto index = st::hnsw_index<st::metric::cosine, p::f16>::create(
                   st::hnsw_options{.dimension = dim, .m = 8, .ef_construction = 64})
                   .value();
  const auto vectors = random_vectors(distinct, dim, 131);
  const auto vector_of = [&](std::size_t i) {
    // Four in five inserts repeat vector 0; the rest cycle through 1 .. 4.
    const std::size_t v = i % 5 == 0 ? 1 + (i / 5) % (distinct - 1) : 0;
    return std::span<const float>(vectors.data() + v * dim, dim);
  };
  for (std::size_t i = 0; i < n; ++i) REQUIRE(index.insert(i, vector_of(i)));
  REQUIRE(index.check_invariants());
  CHECK(index.unreachable_count() == 0);
  for (std::size_t v = 0; v < distinct; ++v) {
    const auto hits = index.search(std::span<const float>(vectors.data() + v * dim, dim), 10).value();
    REQUIRE(hits.size() == 10);
    for (const auto& h : hits) {
      CHECK(std::abs(h.distance) < 1e-3f);
      CHECK(vector_of(h.key).data() == vectors.data() + v * dim);
    }
  }
  // Removing most copies of vector 0 keeps the rest reachable too.
  for (std::size_t i = 0; i < n; ++i)
    if (i % 5 != 0 && i % 3 != 0) REQUIRE(index.remove(i));
  REQUIRE(index.check_invariants());
  CHECK(index.unreachable_count() == 0);
}

namespace {

// Every byte of the saved index: a rejected call must leave all of it as it was.
template <class Index>
std::vector<char> snapshot(const Index& index, const std::string& path) {
  REQUIRE(index.save(path));
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("hnsw rejected calls leave the index unchanged", "[store][hnsw]") {
  using index_t = st::hnsw_index<st::metric::cosine, p::f32>;
  constexpr std::size_t dim = 8, n = 300;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ruvllm_hnsw_reject_" + std::to_string(::getpid()))).string();
  auto data = random_vectors(n, dim, 111);
  auto index = index_t::create(st::hnsw_options{.dimension = dim, .m = 6}).value();
  std::vector<std::uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = 1000 + i;
  REQUIRE(index.insert_batch(keys, data));
  REQUIRE(index.remove(1005));
  const auto before = snapshot(index, path);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> good(dim, 0.5f), with_nan(dim, 0.5f), with_inf(dim, 0.5f), with_neg_inf(dim, 0.5f);
  with_nan[3] = nan;
  with_inf[0] = inf;
  with_neg_inf[dim - 1] = -inf;
  const auto expect = [&](ruvllm::result<void> r, ruvllm::errc code, const char* what) {
    INFO(what);
    REQUIRE(!r);
    CHECK(r.error().code() == code);
    CHECK(!r.error().message().empty());
    CHECK(snapshot(index, path) == before);
  };
  using ruvllm::errc;
  expect(index.insert(1000, good), errc::already_exists, "duplicate key");
  expect(index.insert(1, with_nan), errc::invalid_argument, "NaN component");
  expect(index.insert(1, with_inf), errc::invalid_argument, "infinite component");
  expect(index.insert(1, with_neg_inf), errc::invalid_argument, "negative infinite component");
  expect(index.insert(1, std::span<const float>(good.data(), dim - 1)), errc::invalid_argument, "short vector");
  expect(index.insert(1005, with_nan), errc::invalid_argument, "NaN into a freed key");
  expect(index.update(1, good), errc::not_found, "update of an unknown key");
  expect(index.update(1005, good), errc::not_found, "update of a removed key");
  expect(index.update(1000, with_inf), errc::invalid_argument, "update with an infinite component");
  expect(index.update(1000, std::span<const float>(good.data(), dim - 1)), errc::invalid_argument,
         "update with the wrong dimension");
  expect(index.upsert(1000, with_nan), errc::invalid_argument, "upsert with NaN");
  expect(index.remove(1), errc::not_found, "remove of an unknown key");
  expect(index.remove(1005), errc::not_found, "second remove");
  // Batches are checked whole before anything changes: a bad vector, a
  // repeated key or a present key anywhere in it rejects all of it.
  std::vector<std::uint64_t> batch_keys = {1, 2, 3, 4};
  std::vector<float> batch(4 * dim, 0.25f);
  batch[2 * dim + 1] = nan;
  expect(index.insert_batch(batch_keys, batch), errc::invalid_argument, "batch with a NaN in its third vector");
  std::fill(batch.begin(), batch.end(), 0.25f);
  batch_keys[3] = 2;
  expect(index.insert_batch(batch_keys, batch), errc::already_exists, "batch repeating a key");
  batch_keys[3] = 1010;
  expect(index.insert_batch(batch_keys, batch), errc::already_exists, "batch holding a present key");
  expect(index.insert_batch(std::span<const std::uint64_t>(batch_keys.data(), 3), batch), errc::invalid_argument,
         "batch with more floats than keys");
  std::vector<float> wrong_query(dim + 1, 0.0f);
  CHECK(!index.search(wrong_query, 3));
  CHECK(snapshot(index, path) == before);
  std::filesystem::remove(path);
}

}  // namespace hnsw_index_test
