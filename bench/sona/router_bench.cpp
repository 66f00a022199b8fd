// The FastGRNN router (sona_bench).
//  * sona/router_route/f32/<shape>: one routing decision (cell + heads) for a
//    128-D query; baseline: the same router with full-rank W and U.
//  * sona/router_observe/f32/<shape>: one online update (forward, backward,
//    Adam); baseline as above.
//  * sona/router_learn/f32/2000traj: a fresh router learns the synthetic
//    routing task (8 Gaussian clusters in 128-D, 4 models, noisy quality,
//    bandit feedback with exploration) from 2,000 trajectories; counter
//    `accuracy` (greedy, on fresh queries).
//  * sona/router_ewc/f32/2000+2000traj: task A, then task B (new clusters,
//    another cluster->model map), with and without EWC++ (lambda 1000),
//    averaged over four task draws; counters `accuracy_ewc` and
//    `accuracy_no_ewc` (task A after task B) and `task_b_ewc`, `task_b_no_ewc`.
// Counters: ns_per_op for the latency rows.

#include <benchmark/benchmark.h>

#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "ruvllm/sona/router.hpp"
#include "sona/routing_task.hpp"
#include "support/bench.hpp"

namespace {

namespace rb = ruvllm::bench;
namespace sona = ruvllm::sona;

sona::router_options shape(bool full_rank) {
  sona::router_options o;
  if (full_rank) {
    o.rank_w = o.hidden_dim;
    o.rank_u = o.hidden_dim;
  }
  return o;
}

void register_latency(const char* kernel, bool update) {
  const std::string row = rb::row_name("sona", kernel, "f32", "128x32r8s3", 1);
  const std::string base = rb::baseline_of(row);
  const auto make_body = [update](bool full_rank) {
    return [update, full_rank](benchmark::State& state, const std::string& name, bool is_baseline,
                               const std::string& base_name) {
      auto r = sona::fastgrnn_router<float>::create(shape(full_rank)).value();
      auto ws = r.make_workspace();
      std::mt19937_64 gen(1);
      std::vector<float> q(128);
      std::normal_distribution<float> n;
      for (auto& v : q) v = n(gen);
      std::uint32_t i = 0;
      const auto body = [&] {
        if (update) {
          benchmark::DoNotOptimize(r.observe(q, {}, i++ % 4, 0.7, ws));
        } else {
          benchmark::DoNotOptimize(r.route(q, {}, ws));
        }
      };
      rb::timed_loop(state, body);
      state.counters["ns_per_op"] = rb::seconds_per_iteration(state) * 1e9;
      if (is_baseline) {
        rb::record_baseline(state, name);
      } else {
        auto rf = sona::fastgrnn_router<float>::create(shape(true)).value();
        auto wf = rf.make_workspace();
        rb::set_speedup(state, base_name, [&] {
          if (update) {
            benchmark::DoNotOptimize(rf.observe(q, {}, i++ % 4, 0.7, wf));
          } else {
            benchmark::DoNotOptimize(rf.route(q, {}, wf));
          }
        });
      }
    };
  };
  benchmark::RegisterBenchmark(base.c_str(),
                               [base, f = make_body(true)](benchmark::State& s) { f(s, base, true, base); });
  benchmark::RegisterBenchmark(row.c_str(),
                               [row, base, f = make_body(false)](benchmark::State& s) { f(s, row, false, base); });
}

void learn(benchmark::State& state) {
  double acc = 0.0;
  rb::timed_loop(state, [&] {
    std::mt19937_64 gen(ruvllm::test::routing_task_seed);
    const auto task = ruvllm::test::routing_task::make(8, 128, 4, 0, gen);
    auto r = sona::fastgrnn_router<float>::create(sona::router_options{}).value();
    auto ws = r.make_workspace();
    ruvllm::test::run_trajectories(r, ws, task, 2000, gen, 0.2);
    std::mt19937_64 eval(7);
    acc = ruvllm::test::accuracy(r, ws, task, 1000, eval);
  });
  state.counters["accuracy"] = acc;
}

void ewc(benchmark::State& state) {
  double a_ewc = 0, a_plain = 0, b_ewc = 0, b_plain = 0;
  rb::timed_loop(state, [&] {
    a_ewc = a_plain = b_ewc = b_plain = 0;
    const double n = static_cast<double>(std::size(ruvllm::test::forgetting_seeds));
    for (const std::uint64_t seed : ruvllm::test::forgetting_seeds) {
      const auto r = ruvllm::test::forgetting_experiment(seed, ruvllm::test::forgetting_lambda);
      a_ewc += r.a_ewc / n;
      a_plain += r.a_plain / n;
      b_ewc += r.b_ewc / n;
      b_plain += r.b_plain / n;
    }
  });
  state.counters["accuracy_ewc"] = a_ewc;
  state.counters["accuracy_no_ewc"] = a_plain;
  state.counters["task_b_ewc"] = b_ewc;
  state.counters["task_b_no_ewc"] = b_plain;
}

const int registered = [] {
  register_latency("router_route", false);
  register_latency("router_observe", true);
  benchmark::RegisterBenchmark(rb::join_name({"sona", "router_learn", "f32", "2000traj"}, 1).c_str(), learn);
  benchmark::RegisterBenchmark(rb::join_name({"sona", "router_ewc", "f32", "2000+2000traj"}, 1).c_str(), ewc);
  return 0;
}();

}  // namespace
