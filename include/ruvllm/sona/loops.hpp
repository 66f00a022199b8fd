#ifndef RUVLLM_SONA_LOOPS_HPP
#define RUVLLM_SONA_LOOPS_HPP

// SONA's three learning loops behind one tick() call, run on whatever thread
// the engine calls it from (no hidden threads):
//   instant     every tick: drain up to instant_batch trajectories from the
//               ring; the router learns from each (observe), the reasoning
//               bank buffers it;
//   background  every background_interval_ms: anchor the router for EWC++
//               (what was learned so far is protected from here on) and
//               merge MicroLoRA into the active base adapter by EMA;
//   deep        every deep_interval_ms: k-means++ consolidation of the
//               buffered trajectories into patterns, then pruning of
//               near-duplicates.
// The clock is the caller's (milliseconds of any monotonic clock), so tests
// and simulations drive the loops deterministically.
//
// Allocation: create() allocates the ring, router and bank; the instant phase
// is allocation-free; background may allocate nothing; deep allocates
// (k-means). Thread-safety: serving threads push into ring() concurrently;
// tick(), route() and the accessors belong to one thread at a time.

#include <cstddef>
#include <cstdint>
#include <span>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/sona/adapter_registry.hpp"
#include "ruvllm/sona/lora.hpp"
#include "ruvllm/sona/reasoning_bank.hpp"
#include "ruvllm/sona/router.hpp"
#include "ruvllm/sona/trajectory.hpp"

namespace ruvllm::sona {

/// Loop schedule and sizes.
struct loop_options {
  std::size_t ring_capacity = 1024;                  ///< power of two
  std::size_t response_dim = 0;                      ///< response embedding size in trajectories
  std::size_t instant_batch = 64;                    ///< trajectories per tick, bounding its latency
  std::uint64_t background_interval_ms = 3'600'000;  ///< hourly, as in the reference design
  std::uint64_t deep_interval_ms = 604'800'000;      ///< weekly
  float micro_merge_alpha = 0.01f;                   ///< EMA weight of MicroLoRA in the base adapter
  double prune_similarity = 0.98;
};

/// What one tick did.
struct tick_report {
  std::size_t instant_trajectories = 0;
  bool background_ran = false;
  bool deep_ran = false;
  std::size_t patterns = 0;
};

/// The loops over a float router, a trajectory ring and a reasoning bank,
/// with optional (non-owning) LoRA adapters.
template <Backend B = backend::highway>
class sona_loops {
 public:
  sona_loops() = default;

  /// Trajectories carry the router's query features as their query embedding
  /// (query_dim = router query_dim), and the router has no extra inputs here.
  /// Errors: from each component, or a bank dim different from query_dim.
  [[nodiscard]] static result<sona_loops> create(const loop_options& lo, const router_options& ro,
                                                 const reasoning_bank_options& bo) {
    if (ro.extra_dim != 0)
      return make_error(errc::unsupported, "sona_loops drives a router without extra inputs, got extra_dim ",
                        ro.extra_dim);
    if (bo.dim != ro.query_dim || bo.models != ro.models)
      return make_error(errc::invalid_argument, "reasoning bank dim ", bo.dim, " / models ", bo.models,
                        " differ from the router's ", ro.query_dim, " / ", ro.models);
    if (bo.params_dim != 0)
      return make_error(errc::unsupported, "sona_loops records no pattern parameters, got params_dim ", bo.params_dim);
    sona_loops l;
    l.o_ = lo;
    RUVLLM_TRY_ASSIGN(l.ring_, trajectory_ring::create(lo.ring_capacity, ro.query_dim, lo.response_dim, 0));
    RUVLLM_TRY_ASSIGN(l.router_, fastgrnn_router<float>::create(ro));
    RUVLLM_TRY_ASSIGN(l.bank_, reasoning_bank<B>::create(bo));
    l.ws_ = l.router_.make_workspace();
    return l;
  }

  /// Where serving threads record trajectories.
  [[nodiscard]] trajectory_ring& ring() noexcept { return ring_; }
  [[nodiscard]] fastgrnn_router<float>& router() noexcept { return router_; }
  [[nodiscard]] reasoning_bank<B>& bank() noexcept { return bank_; }

  /// Attaches adapters for the background merge (either may be null).
  void attach_lora(micro_lora<B>* micro, adapter_registry<base_lora<B>>* bases) noexcept {
    micro_ = micro;
    bases_ = bases;
  }

  /// Routes with the loop's own workspace (the caller's thread owns the loops).
  routing_decision route(std::span<const float> query) noexcept { return router_.route(query, {}, ws_); }
  /// The model softmax of the last route(), for exploration.
  [[nodiscard]] std::span<const float> model_probs() const noexcept { return ws_.model_probs; }

  /// Runs whatever is due at now_ms. The first call starts the schedules.
  [[nodiscard]] result<tick_report> tick(std::uint64_t now_ms) {
    tick_report r;
    if (!started_) {
      started_ = true;
      last_background_ = last_deep_ = now_ms;
    }
    r.instant_trajectories = ring_.drain(
        [this](const trajectory_view& t) {
          static_cast<void>(router_.observe(t.query, {}, t.model, t.quality, ws_));
          bank_.record(t.query, t.model, t.quality);
        },
        o_.instant_batch);
    if (now_ms - last_background_ >= o_.background_interval_ms) {
      last_background_ = now_ms;
      router_.consolidate();
      if (micro_ != nullptr && bases_ != nullptr && bases_->active() != nullptr)
        RUVLLM_TRY(bases_->active()->adapter.merge_from(*micro_, o_.micro_merge_alpha));
      r.background_ran = true;
    }
    if (now_ms - last_deep_ >= o_.deep_interval_ms) {
      last_deep_ = now_ms;
      RUVLLM_TRY(bank_.consolidate());
      static_cast<void>(bank_.prune(o_.prune_similarity));
      r.deep_ran = true;
    }
    r.patterns = bank_.patterns().size();
    return r;
  }

 private:
  loop_options o_{};
  trajectory_ring ring_;
  fastgrnn_router<float> router_;
  router_workspace<float> ws_;
  reasoning_bank<B> bank_;
  micro_lora<B>* micro_ = nullptr;
  adapter_registry<base_lora<B>>* bases_ = nullptr;
  bool started_ = false;
  std::uint64_t last_background_ = 0, last_deep_ = 0;
};

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_LOOPS_HPP
