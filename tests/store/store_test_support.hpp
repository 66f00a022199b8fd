#ifndef RUVLLM_TESTS_STORE_STORE_TEST_SUPPORT_HPP
#define RUVLLM_TESTS_STORE_STORE_TEST_SUPPORT_HPP

// Brute-force references for the store tests: exact k-NN in double precision,
// independent of the kernels layer, and recall@k.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ruvllm/store/vector_space.hpp"
#include "support/rng.hpp"

namespace st_support {

inline std::vector<float> random_vectors(std::size_t n, std::size_t dim, std::uint64_t stream) {
  ruvllm::test::rng gen(stream);
  std::vector<float> v(n * dim);
  for (auto& x : v) x = gen.uniform(-1.0f, 1.0f);
  return v;
}

template <class Metric>
double reference_distance(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0, bb = 0, l2 = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
    l2 += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
  }
  if constexpr (std::same_as<Metric, ruvllm::store::metric::l2>)
    return l2;
  else if constexpr (std::same_as<Metric, ruvllm::store::metric::dot>)
    return 1.0 - ab;
  else
    return aa == 0 || bb == 0 ? 1.0 : 1.0 - ab / std::sqrt(aa * bb);
}

/// Keys (row indices, or keys[i] when given) of the k nearest rows, closest first.
template <class Metric, class Accept = bool (*)(std::uint64_t)>
std::vector<std::uint64_t> brute_force(const std::vector<float>& data, std::size_t n, std::size_t dim,
                                       std::span<const float> query, std::size_t k, Accept accept = nullptr,
                                       const std::vector<std::uint64_t>* keys = nullptr) {
  std::vector<std::pair<double, std::uint64_t>> all;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t key = keys != nullptr ? (*keys)[i] : i;
    if constexpr (std::is_pointer_v<Accept>) {
      if (accept != nullptr && !accept(key)) continue;
    } else if constexpr (!std::is_null_pointer_v<Accept>) {
      if (!accept(key)) continue;
    }
    all.emplace_back(reference_distance<Metric>(query, std::span<const float>(data.data() + i * dim, dim)), key);
  }
  std::sort(all.begin(), all.end());
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < std::min(k, all.size()); ++i) out.push_back(all[i].second);
  return out;
}

template <class Hits>
double recall_at(const Hits& hits, const std::vector<std::uint64_t>& truth) {
  if (truth.empty()) return 1.0;
  std::size_t found = 0;
  for (auto t : truth)
    for (const auto& h : hits)
      if (h.key == t) {
        ++found;
        break;
      }
  return static_cast<double>(found) / static_cast<double>(truth.size());
}

}  // namespace st_support

#endif  // RUVLLM_TESTS_STORE_STORE_TEST_SUPPORT_HPP
