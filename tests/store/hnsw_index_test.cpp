// hnsw_index against brute force: recall, filters, deletes and updates,
// multi-threaded builds, and a seeded operation sequence checked against a
// simple model after every step.

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <map>
#include <set>
#include <vector>

#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/store/hnsw_index.hpp"
#include "support/property.hpp"
#include "support/rng.hpp"
#include "store/store_test_support.hpp"

namespace {

namespace st = ruvllm::store;
namespace p = ruvllm::precision;
using ruvllm::test::rng;
using st_support::brute_force;
using st_support::random_vectors;
using st_support::recall_at;

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

TEST_CASE("hnsw recall@10 sweep over metrics and precisions", "[store][hnsw][slow]") {
  recall_case<st::metric::cosine, p::f32>(false, 64, 0.90);
  recall_case<st::metric::dot, p::f32>(false, 128, 0.95);
  recall_case<st::metric::l2, p::f16>(false, 128, 0.95);
  recall_case<st::metric::dot, p::f16>(false, 128, 0.95);
  recall_case<st::metric::cosine, st::i8>(true, 128, 0.95);
  recall_case<st::metric::dot, st::i8>(true, 128, 0.95);
}

TEST_CASE("hnsw filtered search keeps recall under a 1% filter", "[store][hnsw]") {
  constexpr std::size_t n = 5000, dim = 64, nq = 50;
  auto data = random_vectors(n, dim, 21);
  auto queries = random_vectors(nq, dim, 22);
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

// The model: key -> vector. A search with ef >= the slot count returns the
// brute-force answer whenever every live node is reachable from the entry
// point; deletes and updates repair the graph and rescue nodes left without
// in-links, but a rare island can remain (HNSW's known weakness), so the
// steps that see one are counted and must stay rare.
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
    islands += stranded > stranded_before;
    stranded_before = stranded;
    for (auto& [k, v] : model) REQUIRE(index.contains(k));
  }
  INFO("steps that stranded nodes " << islands << ", inexact searches " << inexact << " of " << searches);
  CHECK(islands * 500 <= steps);
  CHECK(inexact * 100 <= searches);
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
