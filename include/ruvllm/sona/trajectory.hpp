#ifndef RUVLLM_SONA_TRAJECTORY_HPP
#define RUVLLM_SONA_TRAJECTORY_HPP

// What one served request teaches SONA (a trajectory), and the bounded
// lock-free ring the serving threads record them into for the learning loops.
//
// The ring is multi-producer, multi-consumer (D. Vyukov's bounded queue: each
// slot carries a sequence number that says whose turn it is, so a producer
// claims a slot with one CAS on the enqueue counter and publishes it with one
// release store; consumers do the same on their side). Serving threads push;
// the instant/background loops pop. A full ring refuses the push and counts
// it (dropped()) rather than blocking a request: learning is best-effort,
// latency is not.
//
// Layout: slot headers (sequence, scalars) in one array; the vectors of every
// slot in one float array, [slot][query | response | features], so a slot's
// payload is contiguous and a push is three memcpy's. Capacity is a power of
// two (the index is a mask). The two counters sit on their own cache lines so
// producers and consumers do not false-share.
// Allocation: create() only; push/pop/drain never allocate or lock.
// Thread-safety: try_push, try_pop and drain may be called from any threads
// concurrently. Dimensions are fixed at creation.

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/store/records.hpp"

namespace ruvllm::sona {

/// KV cache statistics of a request.
struct kv_stats {
  std::uint32_t total_tokens = 0;
  std::uint32_t cached_tokens = 0;  ///< prefix tokens served from the radix cache
  float compression_ratio = 1.0f;   ///< f16 bytes / stored bytes
};

/// One request's trajectory, as pushed and as seen by drain() (the spans
/// point into the ring and are valid only during the callback).
struct trajectory_view {
  std::uint64_t request_id = 0;
  std::span<const float> query;     ///< query embedding
  std::span<const float> response;  ///< response embedding
  std::span<const float> features;  ///< routing features
  std::uint32_t model = 0;          ///< model used
  float quality = 0.0f;             ///< in [0, 1]
  float latency_ms = 0.0f;
  kv_stats kv{};
  store::uuid session{};  ///< the session served (nil: none)
  store::uuid pattern{};  ///< the stored pattern that guided routing (nil: none)
};

/// Checks a trajectory at the boundary where it enters SONA: dimensions,
/// finite vectors, quality in [0, 1], latency finite and >= 0, model below
/// `models`. Errors name the field and the limit.
[[nodiscard]] inline result<void> check_trajectory(const trajectory_view& t, std::size_t query_dim,
                                                   std::size_t response_dim, std::size_t feature_dim,
                                                   std::size_t models) {
  const auto dims = [](const char* what, std::span<const float> v, std::size_t want) -> result<void> {
    if (v.size() != want)
      return make_error(errc::invalid_argument, "trajectory ", what, " has ", v.size(), " floats, expected ", want);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        return make_error(errc::invalid_argument, "trajectory ", what, "[", i, "] is ", v[i], " (not finite)");
    return {};
  };
  RUVLLM_TRY(dims("query", t.query, query_dim));
  RUVLLM_TRY(dims("response", t.response, response_dim));
  RUVLLM_TRY(dims("features", t.features, feature_dim));
  if (!(t.quality >= 0.0f && t.quality <= 1.0f))
    return make_error(errc::invalid_argument, "trajectory quality ", t.quality, " is outside [0, 1]");
  if (!(t.latency_ms >= 0.0f) || !std::isfinite(t.latency_ms))
    return make_error(errc::invalid_argument, "trajectory latency ", t.latency_ms, " ms is not a finite value >= 0");
  if (t.model >= models)
    return make_error(errc::invalid_argument, "trajectory model ", t.model, " is not below the ", models, " models");
  return {};
}

/// Bounded lock-free MPMC ring of trajectories; see the file comment.
class trajectory_ring {
 public:
  trajectory_ring() = default;

  /// capacity: a power of two >= 2. Errors: bad capacity, or a payload of
  /// capacity x (query + response + features) floats that overflows.
  [[nodiscard]] static result<trajectory_ring> create(std::size_t capacity, std::size_t query_dim,
                                                      std::size_t response_dim, std::size_t feature_dim) {
    if (capacity < 2 || (capacity & (capacity - 1)) != 0)
      return make_error(errc::invalid_argument, "trajectory ring capacity ", capacity, " is not a power of two >= 2");
    const std::size_t stride = query_dim + response_dim + feature_dim;
    if (stride != 0 && capacity > (std::size_t{1} << 40) / stride)
      return make_error(errc::invalid_argument, "trajectory ring of ", capacity, " slots of ", stride,
                        " floats is too large");
    trajectory_ring r;
    r.state_ = std::make_unique<state>();
    r.state_->mask = capacity - 1;
    r.state_->qd = query_dim;
    r.state_->rd = response_dim;
    r.state_->fd = feature_dim;
    r.state_->slots = std::make_unique<slot[]>(capacity);
    r.state_->payload.assign(capacity * stride, 0.0f);
    for (std::size_t i = 0; i < capacity; ++i) r.state_->slots[i].seq.store(i, std::memory_order_relaxed);
    return r;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return state_->mask + 1; }
  [[nodiscard]] std::size_t query_dim() const noexcept { return state_->qd; }
  [[nodiscard]] std::size_t response_dim() const noexcept { return state_->rd; }
  [[nodiscard]] std::size_t feature_dim() const noexcept { return state_->fd; }
  /// Pushes refused because the ring was full.
  [[nodiscard]] std::uint64_t dropped() const noexcept { return state_->dropped.load(std::memory_order_relaxed); }
  /// Approximate number of entries (exact when no push or pop is in flight).
  [[nodiscard]] std::size_t size_approx() const noexcept {
    const auto e = state_->enq.v.load(std::memory_order_acquire);
    const auto d = state_->deq.v.load(std::memory_order_acquire);
    return e >= d ? static_cast<std::size_t>(e - d) : 0;
  }

  /// Copies t into a free slot; false (and dropped()++) when full. The spans
  /// must have the ring's dimensions (asserted in debug builds).
  bool try_push(const trajectory_view& t) noexcept {
    state& s = *state_;
    RUVLLM_ASSERT(t.query.size() == s.qd && t.response.size() == s.rd && t.features.size() == s.fd);
    std::uint64_t pos = s.enq.v.load(std::memory_order_relaxed);
    slot* sl = nullptr;
    for (;;) {
      sl = &s.slots[pos & s.mask];
      const std::uint64_t seq = sl->seq.load(std::memory_order_acquire);
      const auto dif = static_cast<std::int64_t>(seq - pos);
      if (dif == 0) {
        if (s.enq.v.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (dif < 0) {
        s.dropped.fetch_add(1, std::memory_order_relaxed);
        return false;
      } else {
        pos = s.enq.v.load(std::memory_order_relaxed);
      }
    }
    float* p = payload(pos);
    copy_floats(p, t.query);
    copy_floats(p + s.qd, t.response);
    copy_floats(p + s.qd + s.rd, t.features);
    sl->request_id = t.request_id;
    sl->model = t.model;
    sl->quality = t.quality;
    sl->latency_ms = t.latency_ms;
    sl->kv = t.kv;
    sl->session = t.session;
    sl->pattern = t.pattern;
    sl->seq.store(pos + 1, std::memory_order_release);
    return true;
  }

  /// Pops up to max_items entries, calling f(const trajectory_view&) on each
  /// while it still sits in its slot (no copy); returns how many.
  template <class F>
  std::size_t drain(F&& f, std::size_t max_items = ~std::size_t{0}) noexcept(noexcept(f(trajectory_view{}))) {
    state& s = *state_;
    std::size_t n = 0;
    while (n < max_items) {
      std::uint64_t pos = s.deq.v.load(std::memory_order_relaxed);
      slot* sl = nullptr;
      for (;;) {
        sl = &s.slots[pos & s.mask];
        const std::uint64_t seq = sl->seq.load(std::memory_order_acquire);
        const auto dif = static_cast<std::int64_t>(seq - (pos + 1));
        if (dif == 0) {
          if (s.deq.v.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
        } else if (dif < 0) {
          return n;  // empty
        } else {
          pos = s.deq.v.load(std::memory_order_relaxed);
        }
      }
      const float* p = payload(pos);
      trajectory_view v;
      v.request_id = sl->request_id;
      v.query = {p, s.qd};
      v.response = {p + s.qd, s.rd};
      v.features = {p + s.qd + s.rd, s.fd};
      v.model = sl->model;
      v.quality = sl->quality;
      v.latency_ms = sl->latency_ms;
      v.kv = sl->kv;
      v.session = sl->session;
      v.pattern = sl->pattern;
      f(static_cast<const trajectory_view&>(v));
      sl->seq.store(pos + s.mask + 1, std::memory_order_release);
      ++n;
    }
    return n;
  }

 private:
  struct slot {
    std::atomic<std::uint64_t> seq{0};
    std::uint64_t request_id = 0;
    std::uint32_t model = 0;
    float quality = 0.0f;
    float latency_ms = 0.0f;
    kv_stats kv{};
    store::uuid session{}, pattern{};
  };
  struct alignas(64) counter {
    std::atomic<std::uint64_t> v{0};
  };
  // Kept behind one pointer so the ring is movable (atomics are not).
  struct state {
    counter enq;
    counter deq;
    std::atomic<std::uint64_t> dropped{0};
    std::uint64_t mask = 0;
    std::size_t qd = 0, rd = 0, fd = 0;
    std::unique_ptr<slot[]> slots;
    std::vector<float> payload;
  };

  float* payload(std::uint64_t pos) const noexcept {
    return state_->payload.data() + (pos & state_->mask) * (state_->qd + state_->rd + state_->fd);
  }
  static void copy_floats(float* dst, std::span<const float> src) noexcept {
    if (!src.empty()) std::memcpy(dst, src.data(), src.size_bytes());
  }

  std::unique_ptr<state> state_;
};

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_TRAJECTORY_HPP
