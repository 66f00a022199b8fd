// k-means++ against a brute-force optimal partition on small separable sets,
// cluster recovery on larger ones, and the reasoning bank's patterns, search
// and pruning against the generating clusters.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "ruvllm/sona/reasoning_bank.hpp"
#include "sona/routing_task.hpp"
#include "support/property.hpp"

namespace reasoning_bank_test {

namespace {

namespace sona = ruvllm::sona;

// n points around k centers spaced far apart (separable).
std::vector<float> blobs(ruvllm::test::rng& gen, std::size_t k, std::size_t per, std::size_t dim,
                         std::vector<std::uint32_t>& label) {
  std::vector<float> centers(k * dim), data;
  for (auto& c : centers) c = gen.uniform(-20.0f, 20.0f);
  label.clear();
  for (std::size_t c = 0; c < k; ++c)
    for (std::size_t i = 0; i < per; ++i) {
      for (std::size_t d = 0; d < dim; ++d) data.push_back(centers[c * dim + d] + gen.normal(0.0f, 0.5f));
      label.push_back(static_cast<std::uint32_t>(c));
    }
  return data;
}

// The optimal k-means inertia by enumerating all k^n assignments (each
// cluster nonempty), in double.
double brute_force_inertia(const std::vector<float>& data, std::size_t n, std::size_t dim, std::size_t k,
                           std::vector<std::uint32_t>& best_assign) {
  std::vector<std::uint32_t> a(n, 0);
  double best = std::numeric_limits<double>::infinity();
  for (;;) {
    std::vector<double> sum(k * dim, 0.0);
    std::vector<std::size_t> cnt(k, 0);
    for (std::size_t i = 0; i < n; ++i) {
      ++cnt[a[i]];
      for (std::size_t d = 0; d < dim; ++d) sum[a[i] * dim + d] += data[i * dim + d];
    }
    if (std::all_of(cnt.begin(), cnt.end(), [](std::size_t c) { return c > 0; })) {
      double in = 0.0;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t d = 0; d < dim; ++d) {
          const double e = data[i * dim + d] - sum[a[i] * dim + d] / static_cast<double>(cnt[a[i]]);
          in += e * e;
        }
      if (in < best) {
        best = in;
        best_assign = a;
      }
    }
    std::size_t i = 0;
    while (i < n && ++a[i] == k) a[i++] = 0;
    if (i == n) break;
  }
  return best;
}

// Same partition up to relabeling.
bool same_partition(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::map<std::uint32_t, std::uint32_t> ab, ba;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ab.emplace(a[i], b[i]).first->second != b[i] || ba.emplace(b[i], a[i]).first->second != a[i]) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("k-means++ finds the brute-force optimum on small separable sets", "[sona][kmeans]") {
  ruvllm::test::check_property(501, 6, [](ruvllm::test::rng& gen, std::size_t trial) {
    const std::size_t k = 3, per = 4, dim = 3, n = k * per;
    std::vector<std::uint32_t> label, brute;
    const auto data = blobs(gen, k, per, dim, label);
    const double opt = brute_force_inertia(data, n, dim, k, brute);
    const auto km = sona::kmeans_pp<>(data, dim, {.k = k, .seed = trial}).value();
    CHECK(km.inertia == Approx(opt).epsilon(1e-4));
    CHECK(same_partition(km.assignment, brute));
    CHECK(same_partition(km.assignment, label));
  });
}

TEST_CASE("k-means++ recovers separable clusters; bad arguments are refused", "[sona][kmeans]") {
  ruvllm::test::rng gen(502);
  std::vector<std::uint32_t> label;
  const auto data = blobs(gen, 6, 100, 32, label);
  const auto km = sona::kmeans_pp<>(data, 32, {.k = 6}).value();
  CHECK(same_partition(km.assignment, label));
  const auto scalar = sona::kmeans_pp<ruvllm::backend::scalar>(data, 32, {.k = 6}).value();
  CHECK(same_partition(scalar.assignment, label));
  CHECK_FALSE(sona::kmeans_pp<>(data, 0, {.k = 2}));
  CHECK_FALSE(sona::kmeans_pp<>(data, 33, {.k = 2}));
  CHECK_FALSE(sona::kmeans_pp<>(data, 32, {.k = 601}));
  CHECK_FALSE(sona::kmeans_pp<>(data, 32, {.k = 0}));
}

TEST_CASE("reasoning bank: patterns carry the best model and parameters; search and pruning", "[sona][bank]") {
  std::mt19937_64 gen(503);
  const auto task = ruvllm::test::routing_task::make(6, 64, 4, 0, gen);
  auto bank =
      sona::reasoning_bank<>::create({.dim = 64, .models = 4, .params_dim = 1, .max_samples = 2048, .kmeans = {.k = 6}})
          .value();
  std::vector<float> x;
  std::uniform_int_distribution<std::uint32_t> pick(0, 3);
  for (int i = 0; i < 1200; ++i) {
    const std::size_t k = task.sample(gen, x);
    const std::uint32_t m = pick(gen);
    const float param = static_cast<float>(k);
    bank.record(x, m, static_cast<float>(task.quality(k, m, gen)), std::span<const float>(&param, 1));
  }
  CHECK(bank.pending_samples() == 1200);
  REQUIRE(bank.consolidate().value() == 6);
  CHECK(bank.pending_samples() == 0);
  std::vector<std::pair<std::size_t, float>> hits;
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < 6; ++k) {
    bank.search(task.centers[k], 2, hits);
    REQUIRE(hits.size() == 2);
    CHECK(hits[0].second >= hits[1].second);
    const auto& p = bank.patterns()[hits[0].first];
    CHECK(p.best_model == task.best[k]);
    CHECK(p.params[0] == Approx(static_cast<float>(k)));
    CHECK(hits[0].second > 0.95f);
    total += p.count;
  }
  CHECK(total == 1200);
  // A second consolidation of the same clusters folds into the same patterns.
  for (int i = 0; i < 600; ++i) {
    const std::size_t k = task.sample(gen, x);
    const float param = static_cast<float>(k);
    bank.record(x, task.best[k], 0.9f, std::span<const float>(&param, 1));
  }
  REQUIRE(bank.consolidate().value() == 6);
  std::uint64_t sum = 0;
  for (const auto& p : bank.patterns()) sum += p.count;
  CHECK(sum == 1800);
  // Pruning at a low similarity merges everything that is alike.
  const std::size_t before = bank.patterns().size();
  CHECK(bank.prune(0.9999) == 0);
  CHECK(bank.prune(-1.0) == before - 1);
  CHECK(bank.patterns().size() == 1);
  CHECK(bank.patterns()[0].count == 1800);
}

TEST_CASE("reasoning bank: a large bank searches through its HNSW index with the exact scan's answers",
          "[sona][bank]") {
  ruvllm::test::rng gen(131);
  constexpr std::size_t dim = 24, n = 3000, k = 5;
  std::vector<sona::pattern> patterns(n);
  std::vector<float> centres(60 * dim);
  for (auto& c : centres) c = gen.normal();
  for (std::size_t i = 0; i < n; ++i) {
    auto& p = patterns[i];
    p.id = {1, i + 1};
    for (std::size_t d = 0; d < dim; ++d) p.centroid.push_back(centres[(i % 60) * dim + d] + gen.normal(0.0f, 0.4f));
    p.count = 1 + i % 7;
    p.mean_quality = 0.5f;
    p.best_model = static_cast<std::uint32_t>(i % 4);
    p.model_quality.assign(4, 0.25f);
    p.model_count.assign(4, 1);
  }
  auto indexed =
      sona::reasoning_bank<>::create({.dim = dim, .models = 4, .max_patterns = n, .index_min_patterns = 1000}).value();
  auto exact =
      sona::reasoning_bank<>::create({.dim = dim, .models = 4, .max_patterns = n, .index_min_patterns = 0}).value();
  REQUIRE(indexed.restore(patterns, 3));
  REQUIRE(exact.restore(patterns, 3));
  std::vector<std::pair<std::size_t, float>> a, b;
  std::size_t found = 0, queries = 200;
  for (std::size_t q = 0; q < queries; ++q) {
    const auto query = gen.uniform_vector(dim);
    indexed.search(query, k, a);
    exact.search(query, k, b);
    REQUIRE(a.size() == k);
    for (std::size_t i = 1; i < a.size(); ++i) REQUIRE(a[i - 1].second >= a[i].second);  // best first
    for (const auto& t : b) {
      const auto hit = std::find_if(a.begin(), a.end(), [&](const auto& h) { return h.first == t.first; });
      if (hit != a.end()) {
        ++found;
        CHECK(hit->second == Approx(t.second).margin(1e-5));  // the same cosine either way
      }
    }
  }
  const double recall = double(found) / double(queries * k);
  INFO("recall@" << k << " of the indexed bank: " << recall);
  CHECK(recall >= 0.95);
  // Shrinking below the threshold (pruning merges near-duplicates) drops the index: answers become exact again.
  REQUIRE(indexed.restore(std::vector<sona::pattern>(patterns.begin(), patterns.begin() + 100), 4));
  const auto query = gen.uniform_vector(dim);
  indexed.search(query, k, a);
  REQUIRE(exact.restore(std::vector<sona::pattern>(patterns.begin(), patterns.begin() + 100), 4));
  exact.search(query, k, b);
  CHECK(a == b);
}

TEST_CASE("reasoning bank: restore refuses malformed patterns and leaves the bank unchanged", "[sona][bank]") {
  auto bank = sona::reasoning_bank<>::create({.dim = 4, .models = 2, .max_patterns = 3}).value();
  sona::pattern good;
  good.id = {5, 5};
  good.centroid = {1, 0, 0, 0};
  good.count = 2;
  good.mean_quality = 0.7f;
  good.model_quality = {0.7f, 0.0f};
  good.model_count = {2, 0};
  REQUIRE(bank.restore({good}, 1));
  const auto bad_with = [&](auto&& change) {
    sona::pattern p = good;
    p.id = {5, 6};
    change(p);
    return bank.restore({good, p}, 2);
  };
  CHECK_FALSE(bad_with([](sona::pattern& p) { p.centroid.pop_back(); }));
  CHECK_FALSE(bad_with([](sona::pattern& p) { p.centroid[1] = std::nanf(""); }));
  CHECK_FALSE(bad_with([](sona::pattern& p) { p.best_model = 2; }));
  CHECK_FALSE(bad_with([](sona::pattern& p) { p.count = 0; }));
  CHECK_FALSE(bad_with([](sona::pattern& p) { p.mean_quality = 1.5f; }));
  CHECK_FALSE(bad_with([](sona::pattern& p) { p.model_count.push_back(1); }));
  CHECK_FALSE(bad_with([](sona::pattern& p) { p.id = {5, 5}; }));  // duplicate id
  CHECK_FALSE(bad_with([](sona::pattern& p) { p.id = {}; }));      // nil id
  std::vector<sona::pattern> four(4, good);
  for (std::uint64_t i = 0; i < 4; ++i) four[i].id = {6, i + 1};
  CHECK_FALSE(bank.restore(four, 2));  // beyond max_patterns
  CHECK(bank.patterns().size() == 1);
  CHECK(bank.consolidations() == 1);
  CHECK_FALSE(sona::reasoning_bank<>::create({.dim = 4, .merge_similarity = std::nan("")}));
}

TEST_CASE("reasoning bank: pattern ids are stable across consolidations that merge into them", "[sona][bank]") {
  std::mt19937_64 gen(141);
  const auto task = ruvllm::test::routing_task::make(4, 32, 4, 0, gen);
  auto bank =
      sona::reasoning_bank<>::create({.dim = 32, .models = 4, .merge_similarity = 0.9, .kmeans = {.k = 4}}).value();
  std::vector<float> x;
  const auto feed = [&] {
    for (int i = 0; i < 200; ++i) {
      const std::size_t k = task.sample(gen, x);
      bank.record(x, task.best[k], 0.8f);
    }
    REQUIRE(bank.consolidate());
  };
  feed();
  REQUIRE(bank.patterns().size() == 4);
  std::vector<ruvllm::store::uuid> first;
  for (const auto& p : bank.patterns()) first.push_back(p.id);
  std::sort(first.begin(), first.end());
  CHECK(std::adjacent_find(first.begin(), first.end()) == first.end());
  CHECK(std::none_of(first.begin(), first.end(), [](const auto& id) { return id.is_nil(); }));
  feed();  // the same clusters again: merged into the existing patterns
  REQUIRE(bank.patterns().size() == 4);
  std::vector<ruvllm::store::uuid> second;
  std::uint64_t total = 0;
  for (const auto& p : bank.patterns()) {
    second.push_back(p.id);
    total += p.count;
    CHECK(bank.find(p.id) < 4);
  }
  CHECK(total == 400);  // both rounds' samples, merged
  std::sort(second.begin(), second.end());
  CHECK(first == second);
  CHECK(bank.find(ruvllm::store::uuid{1, 2}) == sona::reasoning_bank<>::npos);
}

}  // namespace reasoning_bank_test
