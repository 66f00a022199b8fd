#ifndef RUVLLM_TESTS_SONA_ROUTING_TASK_HPP
#define RUVLLM_TESTS_SONA_ROUTING_TASK_HPP

// A synthetic routing task shared by the router tests and benchmark: queries
// drawn from K Gaussian clusters in D dimensions, each cluster best served by
// one of M models; serving a query returns a noisy quality that is high only
// for the cluster's best model.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "ruvllm/sona/router.hpp"

namespace ruvllm::test {

/// The task draw the benchmark's accuracy row uses.
inline constexpr std::uint64_t routing_task_seed = 0x5eed'2026;

struct routing_task {
  std::size_t dim = 128;
  std::size_t models = 4;
  std::vector<std::vector<float>> centers;
  std::vector<std::uint32_t> best;  // cluster -> model
  float spread = 0.5f;              // per-coordinate stddev around a center
  float noise = 0.1f;               // quality noise stddev

  /// K clusters with centers N(0, 1) per coordinate; cluster k is best served
  /// by model (k + shift) % models, so every model is best for some cluster.
  static routing_task make(std::size_t clusters, std::size_t dim, std::size_t models, std::uint32_t shift,
                           std::mt19937_64& gen) {
    routing_task t;
    t.dim = dim;
    t.models = models;
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (std::size_t k = 0; k < clusters; ++k) {
      std::vector<float> c(dim);
      for (auto& v : c) v = n(gen);
      t.centers.push_back(std::move(c));
      t.best.push_back(static_cast<std::uint32_t>((k + shift) % models));
    }
    return t;
  }

  std::size_t sample(std::mt19937_64& gen, std::vector<float>& x) const {
    const std::size_t k = std::uniform_int_distribution<std::size_t>(0, centers.size() - 1)(gen);
    std::normal_distribution<float> n(0.0f, spread);
    x.resize(dim);
    for (std::size_t i = 0; i < dim; ++i) x[i] = centers[k][i] + n(gen);
    return k;
  }

  /// Quality of serving cluster k with model m: 0.85 for the best model, 0.35
  /// to 0.5 for the others, plus N(0, noise), clamped to [0, 1].
  double quality(std::size_t k, std::uint32_t m, std::mt19937_64& gen) const {
    const double base = m == best[k] ? 0.85 : 0.35 + 0.05 * static_cast<double>((m + k) % 4);
    const double q = base + std::normal_distribution<double>(0.0, noise)(gen);
    return std::clamp(q, 0.0, 1.0);
  }
};

/// Serves `n` requests with exploration and learns from each.
inline void run_trajectories(sona::fastgrnn_router<float>& router, sona::router_workspace<float>& ws,
                             const routing_task& task, std::size_t n, std::mt19937_64& gen, double epsilon = 0.1) {
  std::vector<float> x;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = task.sample(gen, x);
    static_cast<void>(router.route(x, {}, ws));
    const std::uint32_t m = sona::sample_model<float>(ws.model_probs, epsilon, u(gen), u(gen));
    static_cast<void>(router.observe(x, {}, m, task.quality(k, m, gen), ws));
  }
}

/// Greedy accuracy on `n` fresh queries.
inline double accuracy(const sona::fastgrnn_router<float>& router, sona::router_workspace<float>& ws,
                       const routing_task& task, std::size_t n, std::mt19937_64& gen) {
  std::vector<float> x;
  std::size_t hits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = task.sample(gen, x);
    if (router.route(x, {}, ws).model == task.best[k]) ++hits;
  }
  return static_cast<double>(hits) / static_cast<double>(n);
}

/// Task-A accuracy of two routers (with and without EWC++) after they learn
/// task A and then task B (new clusters, another cluster->model map), each
/// from `n` trajectories, and their task-B accuracy.
struct forgetting_result {
  double a_before = 0, a_ewc = 0, a_plain = 0, b_ewc = 0, b_plain = 0;
};

inline forgetting_result forgetting_experiment(std::uint64_t seed, double lambda, std::size_t n = 2000) {
  std::mt19937_64 gen(seed);
  const auto task_a = routing_task::make(8, 128, 4, 0, gen);
  const auto task_b = routing_task::make(8, 128, 4, 1, gen);
  sona::router_options with;
  with.ewc.lambda = lambda;
  sona::router_options without = with;
  without.ewc.lambda = 0.0;
  auto re = sona::fastgrnn_router<float>::create(with).value();
  auto rp = sona::fastgrnn_router<float>::create(without).value();
  auto ws = re.make_workspace();
  std::mt19937_64 ge(seed + 1), gp(seed + 1), eval(seed + 2);
  forgetting_result r;
  run_trajectories(re, ws, task_a, n, ge, 0.2);
  run_trajectories(rp, ws, task_a, n, gp, 0.2);
  r.a_before = accuracy(re, ws, task_a, 1000, eval);
  re.consolidate();
  rp.consolidate();  // lambda 0: the anchor is never used
  run_trajectories(re, ws, task_b, n, ge, 0.2);
  run_trajectories(rp, ws, task_b, n, gp, 0.2);
  r.a_ewc = accuracy(re, ws, task_a, 1000, eval);
  r.a_plain = accuracy(rp, ws, task_a, 1000, eval);
  r.b_ewc = accuracy(re, ws, task_b, 1000, eval);
  r.b_plain = accuracy(rp, ws, task_b, 1000, eval);
  return r;
}

/// The task seeds the forgetting test and benchmark average over.
inline constexpr std::uint64_t forgetting_seeds[] = {1, 3, 5, 9};
inline constexpr double forgetting_lambda = 1000.0;

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_SONA_ROUTING_TASK_HPP
