// The loops end to end: a serving thread records trajectories of the
// synthetic routing task into the ring, tick() drives the instant, background
// and deep loops on a simulated clock; the router learns, the bank holds the
// clusters, EWC++ anchors, MicroLoRA merges into the active base adapter.

#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "ruvllm/sona/loops.hpp"
#include "sona/routing_task.hpp"

namespace sona = ruvllm::sona;

TEST_CASE("sona loops: instant, background and deep phases on a simulated clock", "[sona][loops]") {
  std::mt19937_64 gen(601);
  const auto task = ruvllm::test::routing_task::make(8, 128, 4, 0, gen);
  sona::loop_options lo;
  lo.ring_capacity = 256;
  lo.instant_batch = 32;
  lo.background_interval_ms = 1000;
  lo.deep_interval_ms = 5000;
  auto loops =
      sona::sona_loops<>::create(lo, sona::router_options{}, {.dim = 128, .models = 4, .kmeans = {.k = 8}}).value();
  auto micro = sona::micro_lora<>::create({.in_dim = 16, .out_dim = 16, .rank = 1}).value();
  for (auto& v : micro.b(0)) v = 0.5f;
  sona::adapter_registry<sona::base_lora<>> bases;
  REQUIRE(bases.add("default", sona::base_lora<>::create({.in_dim = 16, .out_dim = 16, .rank = 4}).value()));
  REQUIRE(bases.activate("default"));
  loops.attach_lora(&micro, &bases);

  std::vector<float> x;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uint64_t now = 0, id = 0;
  std::size_t backgrounds = 0, deeps = 0, learned = 0;
  for (int request = 0; request < 3000; ++request) {
    const std::size_t k = task.sample(gen, x);
    static_cast<void>(loops.route(x));
    // Explore as a serving engine would, then record what happened.
    const std::uint32_t m = sona::sample_model<float>(loops.model_probs(), 0.2, u(gen), u(gen));
    sona::trajectory_view t;
    t.request_id = id++;
    t.query = x;
    t.model = m;
    t.quality = static_cast<float>(task.quality(k, m, gen));
    REQUIRE(loops.ring().try_push(t));
    now += 10;
    if (request % 8 == 7) {
      const auto r = loops.tick(now).value();
      learned += r.instant_trajectories;
      backgrounds += r.background_ran ? 1 : 0;
      deeps += r.deep_ran ? 1 : 0;
    }
  }
  CHECK(learned == 3000);
  CHECK(backgrounds == 28);  // ticks every 80 ms: a background run every 13 ticks after the first
  CHECK(deeps == 5);         // and a deep run every 63 ticks
  CHECK(loops.router().ewc_state().consolidations() == backgrounds);
  CHECK(bases.active()->adapter.version() == backgrounds);
  CHECK(loops.bank().patterns().size() >= 8);
  std::mt19937_64 eval(602);
  auto ws = loops.router().make_workspace();
  const double acc = ruvllm::test::accuracy(loops.router(), ws, task, 500, eval);
  WARN("router accuracy through the loops after 3000 trajectories: " << acc);
  CHECK(acc >= 0.9);
  // The deep loop's patterns know the best model of each cluster.
  std::vector<std::pair<std::size_t, float>> hits;
  std::size_t right = 0;
  for (std::size_t k = 0; k < 8; ++k) {
    loops.bank().search(task.centers[k], 1, hits);
    if (loops.bank().patterns()[hits[0].first].best_model == task.best[k]) ++right;
  }
  CHECK(right == 8);
}
