#ifndef RUVLLM_SONA_LOOPS_HPP
#define RUVLLM_SONA_LOOPS_HPP

// SONA's three learning loops behind one tick() call:
//   instant     every tick: drain up to instant_batch trajectories from the
//               ring; each is buffered for the background loop and the
//               reasoning bank, steps MicroLoRA (when attached) toward the
//               response that earned a good quality, and scales the graph
//               edge between its session and the pattern that guided it by
//               1 +/- edge_step (up at or above good_quality, down below);
//   background  every background_interval_ms: train the router on the
//               trajectories buffered since the last run (the bandit update
//               of router.hpp, which also feeds the EWC++ Fisher estimate),
//               anchor EWC++ (what was learned is protected from here on),
//               merge MicroLoRA into the active base adapter by EMA, publish
//               the new router to the serving threads and checkpoint it;
//   deep        every deep_interval_ms: k-means++ consolidation of the
//               buffered trajectories into patterns, pruning of
//               near-duplicates, saving the patterns, and retention of old
//               witness entries.
// The clock is the caller's (milliseconds of any monotonic clock), so tests
// and simulations drive the loops deterministically. The engine calls tick()
// from a thread of its own choosing; start() runs an optional owned thread
// that ticks on a period (nothing runs unless asked: no hidden threads).
//
// Where learning goes beyond the loops' memory is the Sink policy: a class
// with any of
//   result<void> scale_edge(const store::uuid& session, const store::uuid& pattern, float factor);
//   result<void> save_router(const fastgrnn_router<float>&);
//   result<void> save_patterns(const reasoning_bank<B>&);
//   result<void> retain(std::uint64_t now_ms);
//   result<void> flush();   // every sink_flush_interval_ms (buffered instant writes)
// Missing members are skipped at compile time; no_sink has none (the loops
// then learn in memory only). persistence.hpp has the store-backed sink.
//
// Serving threads route through a published copy of the router: training
// happens on a private router and the background loop copies its parameters
// into the published one under an exclusive lock, so route() never sees a
// half-trained state and waits at most for that copy.
//
// Allocation: create() allocates the ring, routers, bank and the recent-
// trajectory buffer; the instant phase is allocation-free (sink calls may
// allocate); background allocates only in the sink; deep allocates
// (k-means). Thread-safety: record()/ring() pushes from any threads;
// route(query, workspace) from any threads; tick() is serialized by a mutex
// (the owned thread and the caller may both call it); the accessors router(),
// bank() and the single-threaded route(query) belong to the thread that ticks.
// The loops must not be moved while their owned thread runs.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/sona/adapter_registry.hpp"
#include "ruvllm/sona/exchange.hpp"
#include "ruvllm/sona/lora.hpp"
#include "ruvllm/sona/reasoning_bank.hpp"
#include "ruvllm/sona/router.hpp"
#include "ruvllm/sona/trajectory.hpp"

namespace ruvllm::sona {

/// Loop schedule and sizes.
struct loop_options {
  std::size_t ring_capacity = 1024;  ///< power of two
  std::size_t response_dim = 0;      ///< response embedding size in trajectories
  /// Routing features per trajectory: the router's extra inputs (its
  /// extra_dim), e.g. retrieved policy parameters and per-model success
  /// rates (routing_features() builds them from a pattern). A trajectory
  /// carries the features its request was routed with, so the background
  /// loop trains on what the router saw.
  std::size_t feature_dim = 0;
  std::size_t instant_batch = 64;                    ///< trajectories per tick, bounding its latency
  std::size_t recent_capacity = 4096;                ///< trajectories kept for the background loop
  std::uint64_t background_interval_ms = 3'600'000;  ///< hourly, as in the reference design
  std::uint64_t deep_interval_ms = 604'800'000;      ///< weekly
  float micro_merge_alpha = 0.01f;                   ///< EMA weight of MicroLoRA in the base adapter
  double prune_similarity = 0.98;
  float good_quality = 0.5f;  ///< edges grow and MicroLoRA learns at or above this quality
  float edge_step = 0.05f;    ///< relative edge-weight change per trajectory (the reference's 5%)
  /// Router training skips trajectories below this quality. 0 keeps them
  /// all: the bandit update learns from bad outcomes too (it pushes the model
  /// that earned them down), so filtering them out slows learning.
  float train_min_quality = 0.0f;
  /// How often tick() asks the sink to write what the instant phase buffered.
  std::uint64_t sink_flush_interval_ms = 1000;
};

/// What one tick did.
struct tick_report {
  std::size_t instant_trajectories = 0;
  std::size_t micro_steps = 0;   ///< MicroLoRA updates in the instant phase
  std::size_t edge_updates = 0;  ///< session-pattern edges scaled
  std::size_t router_steps = 0;  ///< background router training steps
  bool background_ran = false;
  bool deep_ran = false;
  std::size_t patterns = 0;
};

/// The sink that stores nothing: the loops learn in memory only.
struct no_sink {};

namespace detail {
template <class S>
concept sink_scales_edges = requires(S& s, const store::uuid& a) {
  { s.scale_edge(a, a, 1.0f) } -> std::same_as<result<void>>;
};
template <class S>
concept sink_saves_router = requires(S& s, const fastgrnn_router<float>& r) {
  { s.save_router(r) } -> std::same_as<result<void>>;
};
template <class S, class Bank>
concept sink_saves_patterns = requires(S& s, const Bank& b) {
  { s.save_patterns(b) } -> std::same_as<result<void>>;
};
template <class S>
concept sink_retains = requires(S& s, std::uint64_t now) {
  { s.retain(now) } -> std::same_as<result<void>>;
};
template <class S>
concept sink_flushes = requires(S& s) {
  { s.flush() } -> std::same_as<result<void>>;
};
}  // namespace detail

/// The loops over a float router, a trajectory ring and a reasoning bank,
/// with optional (non-owning) LoRA adapters and a Sink; see the file comment.
template <Backend B = backend::highway, class Sink = no_sink>
class sona_loops {
 public:
  using bank_type = reasoning_bank<B>;

  sona_loops() = default;  // deleted when Sink has no default constructor
  sona_loops(sona_loops&&) noexcept = default;
  sona_loops& operator=(sona_loops&&) noexcept = default;
  sona_loops(const sona_loops&) = delete;
  sona_loops& operator=(const sona_loops&) = delete;
  ~sona_loops() { stop(); }

  /// Trajectories carry the router's query features as their query embedding
  /// (query_dim = router query_dim), and the router has no extra inputs here.
  /// Errors: from each component, a bank dim different from query_dim, a
  /// zero instant batch or recent capacity, an edge step outside [0, 1), a
  /// good_quality outside [0, 1].
  [[nodiscard]] static result<sona_loops> create(const loop_options& lo, const router_options& ro,
                                                 const reasoning_bank_options& bo, Sink sink = {}) {
    if (ro.extra_dim != lo.feature_dim)
      return make_error(errc::invalid_argument, "the router's extra_dim ", ro.extra_dim,
                        " must equal the trajectories' feature_dim ", lo.feature_dim);
    if (bo.dim != ro.query_dim || bo.models != ro.models)
      return make_error(errc::invalid_argument, "reasoning bank dim ", bo.dim, " / models ", bo.models,
                        " differ from the router's ", ro.query_dim, " / ", ro.models);
    if (bo.params_dim != 0)
      return make_error(errc::unsupported, "sona_loops records no pattern parameters, got params_dim ", bo.params_dim);
    if (lo.instant_batch == 0 || lo.recent_capacity == 0)
      return make_error(errc::invalid_argument, "instant_batch ", lo.instant_batch, " and recent_capacity ",
                        lo.recent_capacity, " must be positive");
    if (!(lo.edge_step >= 0.0f && lo.edge_step < 1.0f) || !(lo.good_quality >= 0.0f && lo.good_quality <= 1.0f))
      return make_error(errc::invalid_argument, "edge_step ", lo.edge_step, " must be in [0, 1) and good_quality ",
                        lo.good_quality, " in [0, 1]");
    if (!(lo.micro_merge_alpha >= 0.0f && lo.micro_merge_alpha <= 1.0f))
      return make_error(errc::invalid_argument, "micro_merge_alpha ", lo.micro_merge_alpha, " is outside [0, 1]");
    sona_loops l(std::move(sink));
    l.o_ = lo;
    RUVLLM_TRY_ASSIGN(l.ring_,
                      trajectory_ring::create(lo.ring_capacity, ro.query_dim, lo.response_dim, lo.feature_dim));
    RUVLLM_TRY_ASSIGN(l.router_, fastgrnn_router<float>::create(ro));
    RUVLLM_TRY_ASSIGN(l.bank_, bank_type::create(bo));
    l.serving_ = l.router_;
    l.ws_ = l.router_.make_workspace();
    l.train_ws_ = l.router_.make_workspace();
    l.recent_query_.assign(lo.recent_capacity * ro.query_dim, 0.0f);
    l.recent_features_.assign(lo.recent_capacity * lo.feature_dim, 0.0f);
    l.recent_model_.assign(lo.recent_capacity, 0);
    l.recent_quality_.assign(lo.recent_capacity, 0.0f);
    l.micro_grad_.assign(lo.response_dim, 0.0f);
    l.sync_ = std::make_unique<sync_state>();
    return l;
  }

  /// Where serving threads record trajectories without checks (dimensions
  /// are preconditions); record() is the checked form.
  [[nodiscard]] trajectory_ring& ring() noexcept { return ring_; }
  /// The training router (owned by the ticking thread).
  [[nodiscard]] fastgrnn_router<float>& router() noexcept { return router_; }
  [[nodiscard]] const fastgrnn_router<float>& router() const noexcept { return router_; }
  [[nodiscard]] bank_type& bank() noexcept { return bank_; }
  [[nodiscard]] const bank_type& bank() const noexcept { return bank_; }
  [[nodiscard]] Sink& sink() noexcept { return sink_; }
  [[nodiscard]] const loop_options& options() const noexcept { return o_; }
  /// Trajectories that overflowed the recent buffer before a background run.
  [[nodiscard]] std::uint64_t recent_dropped() const noexcept { return recent_dropped_; }

  /// Checks a trajectory (check_trajectory) and pushes it. Returns false when
  /// the ring is full (the trajectory is dropped and counted, never waited
  /// for). Errors: a malformed trajectory, nothing recorded.
  [[nodiscard]] result<bool> record(const trajectory_view& t) noexcept {
    RUVLLM_TRY(
        check_trajectory(t, ring_.query_dim(), ring_.response_dim(), ring_.feature_dim(), router_.options().models));
    return ring_.try_push(t);
  }

  /// Attaches adapters (either may be null). MicroLoRA learns in the instant
  /// phase when its in_dim is the query dimension and its out_dim the
  /// response dimension, at layer `micro_layer`; it merges into the active
  /// base adapter of `bases` (an adapter_registry<base_lora<B>> or a
  /// pooled_adapters of base_lora<B>) in the background phase. Errors: a
  /// layer out of range.
  template <class Registry = adapter_registry<base_lora<B>>>
  [[nodiscard]] result<void> attach_lora(micro_lora<B>* micro, Registry* bases, std::size_t micro_layer = 0) noexcept {
    if (micro != nullptr && micro_layer >= micro->options().layers)
      return make_error(errc::out_of_range, "micro_layer ", micro_layer, " is not below the adapter's ",
                        micro->options().layers, " layers");
    micro_ = micro;
    micro_layer_ = micro_layer;
    bases_ = bases;
    // One plain function per registry type finds the active adapter: the
    // loops need no virtual interface to work with either registry.
    active_base_ = bases == nullptr ? nullptr : +[](void* r) -> base_lora<B>* {
      auto* a = static_cast<Registry*>(r)->active();
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>, base_lora<B>*>) {
        return a;
      } else {
        return a != nullptr ? &a->adapter : nullptr;
      }
    };
    return {};
  }
  /// MicroLoRA alone, without base adapters to merge into.
  [[nodiscard]] result<void> attach_lora(micro_lora<B>* micro, std::nullptr_t, std::size_t micro_layer = 0) noexcept {
    return attach_lora<adapter_registry<base_lora<B>>>(micro, nullptr, micro_layer);
  }

  /// Routes with the loops' own workspace from the ticking thread (tests,
  /// single-threaded engines). The model softmax stays in model_probs().
  routing_decision route(std::span<const float> query, std::span<const float> features = {}) {
    return route(query, features, ws_);
  }
  /// The model softmax of the last route(query).
  [[nodiscard]] std::span<const float> model_probs() const noexcept { return ws_.model_probs; }

  /// Routes through the published router; safe on any thread, each with its
  /// own workspace (router().make_workspace()), concurrently with tick().
  /// features: the routing features (feature_dim floats; none by default).
  /// A workspace made for another router shape (adopt() may change it) is
  /// remade, which allocates; otherwise allocation-free.
  routing_decision route(std::span<const float> query, std::span<const float> features,
                         router_workspace<float>& ws) const {
    std::shared_lock lock(sync_->publish);
    if (!serving_.fits(ws)) ws = serving_.make_workspace();
    RUVLLM_ASSERT(query.size() == serving_.options().query_dim && features.size() == serving_.options().extra_dim);
    return serving_.route(query, features, ws);
  }
  routing_decision route(std::span<const float> query, router_workspace<float>& ws) const {
    return route(query, {}, ws);
  }

  /// Version of the published router (bumped by every publish).
  [[nodiscard]] std::uint64_t published_version() const noexcept {
    std::shared_lock lock(sync_->publish);
    return serving_.version();
  }

  /// Makes the training router's current parameters the serving ones (the
  /// background phase does this; call it after restoring a checkpoint).
  void publish() {
    std::unique_lock lock(sync_->publish);
    serving_ = router_;
  }

  /// Writes the training router and the bank to an exchange file
  /// (exchange.hpp), atomically. Errors: io_error.
  [[nodiscard]] result<void> export_learning(std::string_view path) {
    std::lock_guard lock(sync_->tick);
    return sona::export_learning(path, router_, bank_);
  }

  /// Replaces the router and the bank with an exchange file's (another
  /// node's learning, or this one's from before a restart) and publishes the
  /// router. The file must fit these loops: the same query dimension and
  /// model count, no extra router inputs, a bank of the query dimension
  /// without parameters. Errors (nothing changed): the file's, or a shape
  /// that does not fit.
  [[nodiscard]] result<void> import_learning(std::string_view path) {
    RUVLLM_TRY_ASSIGN(auto map, mapped_file::open(path));
    RUVLLM_TRY_ASSIGN(auto state, decode_learning<B>(map.bytes(), path));
    return adopt(std::move(state.router), std::move(state.bank), path);
  }

  /// Takes a router and bank (e.g. decoded from a checkpoint) if they fit
  /// these loops (see import_learning), and publishes the router.
  [[nodiscard]] result<void> adopt(fastgrnn_router<float> router, bank_type bank, std::string_view source = {}) {
    const auto& ro = router.options();
    const auto& bo = bank.options();
    if (ro.query_dim != ring_.query_dim() || ro.models != router_.options().models ||
        ro.extra_dim != ring_.feature_dim() || bo.dim != ring_.query_dim() || bo.models != ro.models ||
        bo.params_dim != 0)
      return make_error(errc::invalid_argument, "learned state of query_dim ", ro.query_dim, ", models ", ro.models,
                        ", extra_dim ", ro.extra_dim, ", bank dim ", bo.dim, ", params ", bo.params_dim,
                        " does not fit loops of query_dim ", ring_.query_dim(), " and ", router_.options().models,
                        " models")
          .at(source);
    std::lock_guard lock(sync_->tick);
    router_ = std::move(router);
    bank_ = std::move(bank);
    ws_ = router_.make_workspace();
    train_ws_ = router_.make_workspace();
    publish();
    return {};
  }

  /// Runs whatever is due at now_ms. The first call starts the schedules.
  /// Errors from the sink or a phase stop that phase; the loops stay usable.
  [[nodiscard]] result<tick_report> tick(std::uint64_t now_ms) {
    std::lock_guard lock(sync_->tick);
    tick_report r;
    if (!started_) {
      started_ = true;
      last_background_ = last_deep_ = last_flush_ = now_ms;
    }
    result<void> first_error{};
    const auto keep = [&](result<void>&& e) {
      if (!e && first_error) first_error = std::move(e);
    };
    r.instant_trajectories =
        ring_.drain([&](const trajectory_view& t) noexcept { instant(t, r, keep); }, o_.instant_batch);
    if constexpr (detail::sink_flushes<Sink>) {
      if (now_ms - last_flush_ >= o_.sink_flush_interval_ms) {
        last_flush_ = now_ms;
        keep(sink_.flush());
      }
    }
    if (now_ms - last_background_ >= o_.background_interval_ms) {
      last_background_ = now_ms;
      keep(background(r));
      r.background_ran = true;
    }
    if (now_ms - last_deep_ >= o_.deep_interval_ms) {
      last_deep_ = now_ms;
      keep(deep(now_ms));
      r.deep_ran = true;
    }
    r.patterns = bank_.patterns().size();
    if (!first_error) return std::move(first_error).error();
    return r;
  }

  /// Starts an owned thread that calls tick(milliseconds of steady_clock)
  /// every `period` until stop() (or destruction). Errors: already running,
  /// a zero period. Tick errors are kept for last_error().
  [[nodiscard]] result<void> start(std::chrono::milliseconds period) {
    if (period.count() <= 0) return make_error(errc::invalid_argument, "tick period ", period.count(), " ms");
    if (sync_->thread.joinable()) return make_error(errc::already_exists, "the loops' thread is already running");
    sync_->stopping = false;
    sync_->thread = std::thread([this, period] {
      std::unique_lock lock(sync_->wait);
      while (!sync_->stopping) {
        lock.unlock();
        const auto now =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
                .count();
        auto r = tick(static_cast<std::uint64_t>(now));
        lock.lock();
        if (!r) sync_->last_error = r.error().describe();
        sync_->wake.wait_for(lock, period, [this] { return sync_->stopping; });
      }
    });
    return {};
  }
  /// Stops and joins the owned thread (no-op when none runs).
  void stop() noexcept {
    if (!sync_ || !sync_->thread.joinable()) return;
    {
      std::lock_guard lock(sync_->wait);
      sync_->stopping = true;
    }
    sync_->wake.notify_all();
    sync_->thread.join();
  }
  /// The description of the owned thread's last failed tick (empty if none).
  [[nodiscard]] std::string last_error() const {
    std::lock_guard lock(sync_->wait);
    return sync_->last_error;
  }

 private:
  explicit sona_loops(Sink&& sink) : sink_(std::move(sink)) {}

  struct sync_state {
    std::mutex tick;
    mutable std::shared_mutex publish;
    mutable std::mutex wait;
    std::condition_variable wake;
    bool stopping = false;
    std::string last_error;
    std::thread thread;
  };

  template <class Keep>
  void instant(const trajectory_view& t, tick_report& r, Keep& keep) noexcept {
    bank_.record(t.query, t.model, t.quality);
    const std::size_t qd = ring_.query_dim();
    if (recent_count_ == o_.recent_capacity) {
      ++recent_dropped_;  // keep the newest: overwrite the oldest slot
      recent_start_ = (recent_start_ + 1) % o_.recent_capacity;
      --recent_count_;
    }
    const std::size_t at = (recent_start_ + recent_count_) % o_.recent_capacity;
    std::copy(t.query.begin(), t.query.end(), recent_query_.begin() + static_cast<std::ptrdiff_t>(at * qd));
    const std::size_t fd = ring_.feature_dim();
    std::copy(t.features.begin(), t.features.end(), recent_features_.begin() + static_cast<std::ptrdiff_t>(at * fd));
    recent_model_[at] = t.model;
    recent_quality_[at] = t.quality;
    ++recent_count_;

    const bool good = t.quality >= o_.good_quality;
    if (micro_ != nullptr && good && micro_->options().in_dim == qd && micro_->options().out_dim == t.response.size() &&
        !t.response.empty()) {
      // The instant signal: pull the adapter's output for this query toward
      // the (unit) response embedding that earned a good quality; the step
      // scales with the quality (lora_adapter::instant_update).
      const float norm = std::sqrt(kernels::ops<B>::dot(t.response.data(), t.response.data(), t.response.size()));
      if (norm > 0.0f) {
        for (std::size_t i = 0; i < t.response.size(); ++i) micro_grad_[i] = -t.response[i] / norm;
        micro_->instant_update(micro_layer_, t.query.data(), micro_grad_.data(), t.quality);
        ++r.micro_steps;
      }
    }
    if constexpr (detail::sink_scales_edges<Sink>) {
      if (!t.session.is_nil() && !t.pattern.is_nil()) {
        const float factor = good ? 1.0f + o_.edge_step : 1.0f - o_.edge_step;
        keep(sink_.scale_edge(t.session, t.pattern, factor));
        ++r.edge_updates;
      }
    }
  }

  [[nodiscard]] result<void> background(tick_report& r) {
    const std::size_t qd = ring_.query_dim();
    for (std::size_t i = 0; i < recent_count_; ++i) {
      const std::size_t at = (recent_start_ + i) % o_.recent_capacity;
      if (recent_quality_[at] < o_.train_min_quality) continue;
      const std::size_t fd = ring_.feature_dim();
      static_cast<void>(router_.observe(std::span<const float>(recent_query_.data() + at * qd, qd),
                                        std::span<const float>(recent_features_.data() + at * fd, fd),
                                        recent_model_[at], recent_quality_[at], train_ws_));
      ++r.router_steps;
    }
    recent_start_ = recent_count_ = 0;
    router_.consolidate();
    if (micro_ != nullptr && active_base_ != nullptr)
      if (base_lora<B>* base = active_base_(bases_); base != nullptr)
        RUVLLM_TRY(base->merge_from(*micro_, o_.micro_merge_alpha));
    publish();
    if constexpr (detail::sink_saves_router<Sink>) RUVLLM_TRY(sink_.save_router(router_));
    return {};
  }

  [[nodiscard]] result<void> deep(std::uint64_t now_ms) {
    RUVLLM_TRY(bank_.consolidate());
    static_cast<void>(bank_.prune(o_.prune_similarity));
    if constexpr (detail::sink_saves_patterns<Sink, bank_type>) RUVLLM_TRY(sink_.save_patterns(bank_));
    if constexpr (detail::sink_retains<Sink>) RUVLLM_TRY(sink_.retain(now_ms));
    return {};
  }

  loop_options o_{};
  trajectory_ring ring_;
  fastgrnn_router<float> router_;   // trained by the ticking thread
  fastgrnn_router<float> serving_;  // published copy, read under sync_->publish
  router_workspace<float> ws_, train_ws_;
  bank_type bank_;
  std::vector<float> recent_query_;     // [recent_capacity][query_dim], a ring from recent_start_
  std::vector<float> recent_features_;  // [recent_capacity][feature_dim], the router's extra inputs
  std::vector<std::uint32_t> recent_model_;
  std::vector<float> recent_quality_;
  std::size_t recent_start_ = 0, recent_count_ = 0;
  std::uint64_t recent_dropped_ = 0;
  std::vector<float> micro_grad_;  // response_dim: the instant signal
  micro_lora<B>* micro_ = nullptr;
  void* bases_ = nullptr;  // the attached registry, for active_base_
  base_lora<B>* (*active_base_)(void*) = nullptr;
  std::size_t micro_layer_ = 0;
  Sink sink_;
  bool started_ = false;
  std::uint64_t last_background_ = 0, last_deep_ = 0, last_flush_ = 0;
  std::unique_ptr<sync_state> sync_;
};

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_LOOPS_HPP
