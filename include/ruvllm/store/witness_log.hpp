#ifndef RUVLLM_STORE_WITNESS_LOG_HPP
#define RUVLLM_STORE_WITNESS_LOG_HPP

// witness_log<Store>: the audit trail of every request (Ruvector's role C):
// request id, session, the pattern it used, query and response embeddings,
// the routing decision, a latency breakdown, a quality score and an error;
// written asynchronously in batches so the request path never waits for
// the disk, and queried for postmortems ("requests with quality < 0.5",
// "latency spikes in the last hour", "errors like this one") and
// aggregates (latency percentiles, quality trend, model usage).
//
// Write path. push() validates the entry, copies it into a bounded
// lock-free ring (Vyukov's bounded MPMC queue: one CAS on the enqueue
// position, a per-slot sequence word published with release) and returns:
// it never takes a lock that I/O holds, never allocates, never waits. A
// full ring is backpressure the caller sees: push() returns
// errc::budget_exceeded at once (push_wait() is the documented blocking
// variant). The writer moves entries from the ring into the store in
// batches of at most options.batch_max (100) entries, one atomic logged
// batch each (memory_store::commit_with: the records, their embeddings in
// the query and response spaces, and edges to the session and the pattern
// when those records exist), and writes a partial batch once its oldest
// entry has waited options.max_delay (1 s), or at once when the ring holds
// options.wake_at entries (default: half the ring). Who runs the writer is
// explicit: the caller drives pump() (writes what is due) or flush()
// (writes everything queued), or start() launches one owned background
// thread that sleeps until the oldest entry is due or the ring reaches
// wake_at; stop() joins it. Only the push that finds the ring at wake_at
// with the writer asleep wakes it (a futex call); every other push makes
// no system call, so the wake-up stays out of push's p99 unless wake_at is
// set as low as batch_max (then one push per batch pays it). close() stops
// accepting pushes, waits for pushes in flight, stops the thread, flushes
// and syncs the store; the destructor closes. A batch whose write fails
// (io_error) is kept and retried by the next pump, so entries are not lost
// while the disk refuses; an entry whose request id is already stored is
// dropped and counted (stats().duplicates).
//
// Storage: one record per entry (kind witness; time = the entry's time, so
// time ranges and retention walk the (kind, time) index; group = a hash of
// the session id; attribute "quality", indexed when the store's indexed
// attribute is "quality", which open() requires; payload = the remaining
// fields), its query embedding in options.query_space and its response
// embedding in options.response_space.
//
// Concurrency contract: push() and push_wait() from any number of threads
// at once, concurrently with everything else. pump(), flush(), start(),
// stop() and close() from any thread (writes are serialized by an internal
// mutex; only one background thread exists). Queries from any thread,
// concurrently with pushes and writes (the store's contract); they see
// entries once written, not while queued.
//
// Memory layout: `capacity` slots (a power of two) of 256 bytes each,
// 64-byte aligned so one slot's sequence word never shares a cache line
// with its neighbour's, holding the entry's fixed fields and up to
// witness_max_message bytes of error message inline; embeddings go to one
// preallocated float array of capacity x (query dimension + response
// dimension). Everything is allocated by open(); push() allocates nothing.
// The writer allocates (records, batches); queries allocate their results.

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/store/memory_store.hpp"
#include "ruvllm/store/records.hpp"

namespace ruvllm::store {

/// Microseconds spent in each phase of a request.
struct latency_breakdown {
  std::uint32_t queue_us = 0;
  std::uint32_t prefill_us = 0;
  std::uint32_t decode_us = 0;
  std::uint32_t total_us = 0;
  friend bool operator==(const latency_breakdown&, const latency_breakdown&) = default;
};

/// The router's decision for a request (the fields of sona::routing_decision).
struct witness_routing {
  std::uint32_t model = 0;
  float model_probability = 0.0f;
  std::uint32_t context_bucket = 0;
  float temperature = 0.0f;
  float top_p = 0.0f;
  float confidence = 0.0f;
  friend bool operator==(const witness_routing&, const witness_routing&) = default;
};

/// Longest error message kept (longer ones are cut to this many bytes).
inline constexpr std::size_t witness_max_message = 120;

/// One entry as pushed: non-owning views, copied by push().
struct witness_entry {
  uuid request_id{};
  uuid session_id{};  // nil: none
  uuid pattern_id{};  // nil: none
  timestamp_ms time = 0;
  std::span<const float> query_embedding;     // empty, or the query space's dimension
  std::span<const float> response_embedding;  // empty, or the response space's dimension
  witness_routing routing{};
  latency_breakdown latency{};
  float quality = 0.0f;          // [0, 1]
  std::uint32_t error_code = 0;  // 0: no error
  std::string_view error_message;
};

/// One entry as stored and returned by queries.
struct witness_record {
  uuid request_id{};
  uuid session_id{};
  uuid pattern_id{};
  timestamp_ms time = 0;
  witness_routing routing{};
  latency_breakdown latency{};
  float quality = 0.0f;
  std::uint32_t error_code = 0;
  std::string error_message;
  friend bool operator==(const witness_record&, const witness_record&) = default;
};

/// An entry found by embedding similarity.
struct witness_hit {
  witness_record entry;
  float distance = 0.0f;
};

/// Nearest-rank percentiles of one latency component (microseconds).
struct latency_percentiles {
  std::uint32_t p50 = 0;
  std::uint32_t p95 = 0;
  std::uint32_t p99 = 0;
  std::uint32_t max = 0;
  double mean = 0.0;
};

/// Latency percentiles of the entries in a time range, per component.
struct latency_summary {
  std::size_t count = 0;
  latency_percentiles queue, prefill, decode, total;
};

/// Mean quality of the entries in [start, start + bucket).
struct quality_bucket {
  timestamp_ms start = 0;
  std::size_t count = 0;
  double mean = 0.0;
};

/// How often a model was chosen in a time range.
struct model_usage {
  std::uint32_t model = 0;
  std::size_t count = 0;
  std::size_t errors = 0;  // entries with a non-zero error code
  double mean_quality = 0.0;
};

/// Options of a witness_log.
struct witness_log_options {
  std::uint32_t query_space = role_space::witness_query;
  std::uint32_t response_space = role_space::witness_response;
  /// Ring slots (rounded up to a power of two; 2 .. 2^20).
  std::size_t queue_capacity = 1024;
  /// Most entries per written batch (1 .. 100000).
  std::size_t batch_max = 100;
  /// Longest an entry waits in the ring before its batch is written.
  std::chrono::milliseconds max_delay{1000};
  /// Entries in the ring that wake the background writer before max_delay
  /// (0: half the ring; clamped to batch_max .. the ring's capacity).
  std::size_t wake_at = 0;
  /// Pause of the background writer after a failed write, before it retries.
  std::chrono::milliseconds retry_delay{100};
};

/// Counters of a witness_log since open().
struct witness_stats {
  std::uint64_t pushed = 0;            // accepted into the ring
  std::uint64_t rejected_full = 0;     // push() refused: ring full (backpressure)
  std::uint64_t rejected_invalid = 0;  // push() refused: bad entry
  std::uint64_t rejected_closed = 0;   // push() after close()
  std::uint64_t written = 0;           // entries in committed batches
  std::uint64_t batches = 0;           // committed batches
  std::uint64_t duplicates = 0;        // dropped: request id already stored
  std::uint64_t write_errors = 0;      // failed batch writes (retried)
  std::uint64_t queued = 0;            // in the ring now (approximate under concurrency)
};

namespace detail {
[[nodiscard]] inline std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace detail

/// The witness log over a memory_store; see the file comment.
/// Template parameter: Store, a memory_store<Metric, Precision, Backend>.
template <class Store>
class witness_log {
 public:
  static constexpr const char* quality_attribute = "quality";

  /// A witness log over store (which must outlive it); allocates the ring.
  /// Errors: invalid_argument (a space missing, an option out of range, the
  /// store's indexed attribute is not "quality").
  [[nodiscard]] static result<witness_log> open(Store& store, witness_log_options options = {}) {
    for (auto space : {options.query_space, options.response_space})
      if (space >= store.space_count())
        return make_error(errc::invalid_argument, "witness space ", space, " >= the store's space count ",
                          store.space_count());
    if (options.query_space == options.response_space)
      return make_error(errc::invalid_argument, "query and response spaces are both ", options.query_space);
    if (options.queue_capacity < 2 || options.queue_capacity > (std::size_t{1} << 20))
      return make_error(errc::invalid_argument, "queue capacity ", options.queue_capacity, " is not in 2 .. 2^20");
    if (options.batch_max < 1 || options.batch_max > 100000)
      return make_error(errc::invalid_argument, "batch size ", options.batch_max, " is not in 1 .. 100000");
    if (options.max_delay.count() < 0 || options.retry_delay.count() < 0)
      return make_error(errc::invalid_argument, "negative delay");
    const bool indexed = store.read([](const record_graph& g) { return g.indexed_attribute() == quality_attribute; });
    if (!indexed)
      return make_error(errc::invalid_argument, "the store's indexed attribute must be \"", quality_attribute, "\"");
    witness_log log;
    log.st_ = std::make_unique<state>(store, options);
    return log;
  }

  witness_log(witness_log&&) noexcept = default;
  witness_log& operator=(witness_log&& o) noexcept {
    if (this != &o) {
      if (st_) (void)close();
      st_ = std::move(o.st_);
    }
    return *this;
  }
  witness_log(const witness_log&) = delete;
  witness_log& operator=(const witness_log&) = delete;
  /// Closes (flushes what is queued; errors are lost here: call close()).
  ~witness_log() {
    if (st_) (void)close();
  }

  // ---- write path ----------------------------------------------------------

  /// Queues an entry; never blocks, never allocates on success. Errors:
  /// invalid_argument (nil request id, embedding dimension, non-finite
  /// value, quality outside [0, 1]), budget_exceeded (the ring is full:
  /// backpressure; nothing was queued), cancelled (closed).
  [[nodiscard]] result<void> push(const witness_entry& e) {
    state& st = *st_;
    if (auto bad = st.check(e)) {
      st.rejected_invalid.fetch_add(1, std::memory_order_relaxed);
      return std::move(*bad);
    }
    st.in_flight.fetch_add(1, std::memory_order_seq_cst);
    if (st.closed.load(std::memory_order_seq_cst)) {
      st.in_flight.fetch_sub(1, std::memory_order_release);
      st.rejected_closed.fetch_add(1, std::memory_order_relaxed);
      return make_error(errc::cancelled, "the witness log is closed");
    }
    std::uint64_t pos = st.enqueue_pos.load(std::memory_order_relaxed);
    slot* s;
    for (;;) {
      s = &st.slots[pos & st.mask];
      const std::uint64_t seq = s->seq.load(std::memory_order_acquire);
      const auto diff = static_cast<std::int64_t>(seq - pos);
      if (diff == 0) {
        // seq_cst (free on x86: a locked instruction) orders this claim
        // before the wake check below and the writer's predicate.
        if (st.enqueue_pos.compare_exchange_weak(pos, pos + 1, std::memory_order_seq_cst, std::memory_order_relaxed))
          break;
      } else if (diff < 0) {
        st.in_flight.fetch_sub(1, std::memory_order_release);
        st.rejected_full.fetch_add(1, std::memory_order_relaxed);
        return make_error(errc::budget_exceeded, "witness queue full (", st.capacity(),
                          " entries): the writer is behind");
      } else {
        pos = st.enqueue_pos.load(std::memory_order_relaxed);
      }
    }
    // Wake a sleeping background writer once the ring reaches wake_at;
    // exchange lets exactly one pusher pay for the notification. Before the
    // copy: a writer woken now writes the ready entries ahead of this one and
    // finds this one published by the time it gets here.
    if (pos + 1 - st.dequeue_pos.load(std::memory_order_relaxed) >= st.wake_at &&
        st.writer_waiting.load(std::memory_order_relaxed) && st.writer_waiting.exchange(false)) {
      { std::lock_guard lk(st.wake_mutex); }
      st.wake.notify_one();
    }
    // Out of in_flight before the copy: close() waits for claimed slots to be
    // published (wait_published), so in_flight only has to cover the claim.
    // A locked instruction after the copy would wait for its ~6 KiB of
    // stores to reach the cache (their lines were last read by the writer,
    // ~1 us); ending on the plain release store below lets push return while
    // they drain.
    st.in_flight.fetch_sub(1, std::memory_order_release);
    st.fill(*s, static_cast<std::size_t>(pos & st.mask), e);
    s->seq.store(pos + 1, std::memory_order_release);
    return {};
  }

  /// Like push(), but when the ring is full waits (sleeping in growing
  /// steps up to 1 ms) until there is room or `timeout` passes. BLOCKS:
  /// for callers that prefer waiting to dropping. Errors: as push().
  [[nodiscard]] result<void> push_wait(const witness_entry& e, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::chrono::microseconds nap{10};
    for (;;) {
      auto r = push(e);
      if (r || r.error().code() != errc::budget_exceeded || std::chrono::steady_clock::now() >= deadline) return r;
      std::this_thread::sleep_for(nap);
      nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(1));
    }
  }

  /// Writes what is due: full batches, and a partial batch whose oldest
  /// entry has waited max_delay or that the ring's wake_at crowding forces
  /// out. Returns the entries written. Errors:
  /// io_error (the batch is kept and retried by the next call).
  [[nodiscard]] result<std::size_t> pump() { return write(*st_, false); }

  /// Writes every entry queued now, in batches. Errors: as pump().
  [[nodiscard]] result<std::size_t> flush() { return write(*st_, true); }

  /// Starts the background writer thread. Errors: already_exists (running),
  /// cancelled (closed).
  [[nodiscard]] result<void> start() {
    state& st = *st_;
    std::lock_guard lk(st.thread_mutex);
    if (st.closed.load()) return make_error(errc::cancelled, "the witness log is closed");
    if (st.thread.joinable()) return make_error(errc::already_exists, "the witness writer thread is running");
    {
      std::lock_guard w(st.wake_mutex);
      st.stop = false;
    }
    // The thread sees only the state, which stays put when the log moves.
    st.thread = std::thread([s = st_.get()] { run(*s); });
    return {};
  }

  /// Stops and joins the background writer (entries stay queued; flush()
  /// or close() writes them).
  void stop() {
    state& st = *st_;
    std::lock_guard lk(st.thread_mutex);
    if (!st.thread.joinable()) return;
    {
      std::lock_guard w(st.wake_mutex);
      st.stop = true;
    }
    st.wake.notify_all();
    st.thread.join();
  }

  /// Stops accepting pushes, waits for pushes in flight, stops the writer
  /// thread, writes every queued entry and syncs the store. Idempotent.
  /// Errors: io_error (entries that could not be written stay queued; a
  /// later flush() may retry).
  [[nodiscard]] result<void> close() {
    state& st = *st_;
    st.closed.store(true, std::memory_order_seq_cst);
    while (st.in_flight.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
    wait_published(st);
    stop();
    RUVLLM_TRY(flush());
    return st.store->sync();
  }

  /// The error of the background writer's last failed write, if any.
  [[nodiscard]] std::optional<error> writer_error() const {
    std::lock_guard lk(st_->error_mutex);
    return st_->last_error;
  }

  [[nodiscard]] witness_stats stats() const {
    const state& st = *st_;
    witness_stats s;
    s.pushed = st.enqueue_pos.load(std::memory_order_relaxed);
    s.rejected_full = st.rejected_full.load(std::memory_order_relaxed);
    s.rejected_invalid = st.rejected_invalid.load(std::memory_order_relaxed);
    s.rejected_closed = st.rejected_closed.load(std::memory_order_relaxed);
    s.written = st.written.load(std::memory_order_relaxed);
    s.batches = st.batches.load(std::memory_order_relaxed);
    s.duplicates = st.duplicates.load(std::memory_order_relaxed);
    s.write_errors = st.write_errors.load(std::memory_order_relaxed);
    s.queued = s.pushed - st.dequeue_pos.load(std::memory_order_relaxed);
    return s;
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return st_->capacity(); }
  [[nodiscard]] const witness_log_options& options() const noexcept { return st_->options; }

  // ---- queries (written entries) ---------------------------------------------

  /// The entry of a request. Errors: not_found, corrupt_data.
  [[nodiscard]] result<witness_record> get(const uuid& request_id) const {
    return st_->store->read([&](const record_graph& g) -> result<witness_record> {
      const record* r = g.get(request_id);
      if (r == nullptr || r->kind != record_kind::witness)
        return make_error(errc::not_found, "witness entry ", to_string(request_id));
      return decode(*r);
    });
  }

  /// Calls fn(const witness_record&) for the entries with time in [from,
  /// to), oldest first; fn may return false to stop. Errors: corrupt_data.
  template <class Fn>
  [[nodiscard]] result<void> visit_time_range(timestamp_ms from, timestamp_ms to, Fn&& fn) const {
    return st_->store->read([&](const record_graph& g) -> result<void> {
      std::optional<error> failure;
      g.visit_time_range(record_kind::witness, from, to, [&](const record& r) {
        auto w = decode(r);
        if (!w) {
          failure = std::move(w).error();
          return false;
        }
        return detail::visit_one(fn, *w);
      });
      if (failure) return std::move(*failure);
      return {};
    });
  }

  /// The entries with time in [from, to), oldest first.
  [[nodiscard]] result<std::vector<witness_record>> in_time_range(timestamp_ms from, timestamp_ms to) const {
    std::vector<witness_record> out;
    RUVLLM_TRY(visit_time_range(from, to, [&](const witness_record& w) { out.push_back(w); }));
    return out;
  }

  /// The entries with quality in [lo, hi], ascending by quality (the
  /// attribute index: "requests with quality < 0.5" is with_quality(0, 0.5)).
  [[nodiscard]] result<std::vector<witness_record>> with_quality(double lo, double hi) const {
    return st_->store->read([&](const record_graph& g) -> result<std::vector<witness_record>> {
      std::vector<witness_record> out;
      std::optional<error> failure;
      g.visit_attribute_range(record_kind::witness, lo, hi, [&](const record& r) {
        auto w = decode(r);
        if (!w) failure = std::move(w).error();
        if (failure) return false;
        out.push_back(std::move(*w));
        return true;
      });
      if (failure) return std::move(*failure);
      return out;
    });
  }

  /// The entries of a session, by request id.
  [[nodiscard]] result<std::vector<witness_record>> of_session(const uuid& session_id) const {
    return st_->store->read([&](const record_graph& g) -> result<std::vector<witness_record>> {
      std::vector<witness_record> out;
      std::optional<error> failure;
      g.visit_group(record_kind::witness, session_group(session_id), [&](const record& r) {
        auto w = decode(r);
        if (!w) failure = std::move(w).error();
        if (failure) return false;
        if (w->session_id == session_id) out.push_back(std::move(*w));  // group hash collisions filtered
        return true;
      });
      if (failure) return std::move(*failure);
      return out;
    });
  }

  /// The k entries whose query embedding is nearest to query, closest first.
  [[nodiscard]] result<std::vector<witness_hit>> similar_queries(std::span<const float> query, std::size_t k,
                                                                 search_params params = {}) const {
    return similar(st_->options.query_space, query, k, params);
  }
  /// The k entries whose response embedding is nearest to response.
  [[nodiscard]] result<std::vector<witness_hit>> similar_responses(std::span<const float> response, std::size_t k,
                                                                   search_params params = {}) const {
    return similar(st_->options.response_space, response, k, params);
  }

  /// Copies an entry's stored query embedding into out. Errors: not_found.
  [[nodiscard]] result<void> query_embedding(const uuid& request_id, std::span<float> out) const {
    return st_->store->embedding(st_->options.query_space, request_id, out);
  }
  /// Copies an entry's stored response embedding into out. Errors: not_found.
  [[nodiscard]] result<void> response_embedding(const uuid& request_id, std::span<float> out) const {
    return st_->store->embedding(st_->options.response_space, request_id, out);
  }

  /// Nearest-rank percentiles (p50, p95, p99, max, mean) of each latency
  /// component over the entries in [from, to).
  [[nodiscard]] result<latency_summary> latency(timestamp_ms from, timestamp_ms to) const {
    std::vector<std::uint32_t> parts[4];
    RUVLLM_TRY(visit_time_range(from, to, [&](const witness_record& w) {
      parts[0].push_back(w.latency.queue_us);
      parts[1].push_back(w.latency.prefill_us);
      parts[2].push_back(w.latency.decode_us);
      parts[3].push_back(w.latency.total_us);
    }));
    latency_summary s;
    s.count = parts[0].size();
    latency_percentiles* out[4] = {&s.queue, &s.prefill, &s.decode, &s.total};
    for (int c = 0; c < 4; ++c) *out[c] = percentiles(parts[c]);
    return s;
  }

  /// Mean quality per bucket of bucket_ms starting at from (buckets with no
  /// entry are left out), oldest first. Errors: invalid_argument (bucket_ms < 1).
  [[nodiscard]] result<std::vector<quality_bucket>> quality_trend(timestamp_ms from, timestamp_ms to,
                                                                  timestamp_ms bucket_ms) const {
    if (bucket_ms < 1) return make_error(errc::invalid_argument, "bucket width ", bucket_ms, " ms is not >= 1");
    std::vector<quality_bucket> out;
    RUVLLM_TRY(visit_time_range(from, to, [&](const witness_record& w) {
      // Unsigned: w.time - from cannot overflow (w.time >= from).
      const auto offset = static_cast<std::uint64_t>(w.time) - static_cast<std::uint64_t>(from);
      const auto width = static_cast<std::uint64_t>(bucket_ms);
      const auto start = static_cast<timestamp_ms>(static_cast<std::uint64_t>(from) + offset / width * width);
      if (out.empty() || out.back().start != start) out.push_back(quality_bucket{start, 0, 0.0});
      quality_bucket& b = out.back();
      ++b.count;
      b.mean += (w.quality - b.mean) / static_cast<double>(b.count);  // running mean
    }));
    return out;
  }

  /// Per model: entries, errors and mean quality over [from, to), by model.
  [[nodiscard]] result<std::vector<model_usage>> usage(timestamp_ms from, timestamp_ms to) const {
    std::vector<model_usage> out;
    RUVLLM_TRY(visit_time_range(from, to, [&](const witness_record& w) {
      auto it = std::lower_bound(out.begin(), out.end(), w.routing.model,
                                 [](const model_usage& u, std::uint32_t m) { return u.model < m; });
      if (it == out.end() || it->model != w.routing.model) it = out.insert(it, model_usage{w.routing.model});
      ++it->count;
      it->errors += w.error_code != 0;
      it->mean_quality += (w.quality - it->mean_quality) / static_cast<double>(it->count);
    }));
    return out;
  }

  /// Retention: removes every entry older than cutoff (time < cutoff), with
  /// its embeddings and edges, in logged batches of up to `batch` entries
  /// (each atomic and durable). Returns how many were removed. Errors:
  /// io_error (earlier batches stay removed).
  [[nodiscard]] result<std::size_t> remove_older_than(timestamp_ms cutoff, std::size_t batch = 4096) {
    std::size_t total = 0;
    for (;;) {
      std::size_t n = 0;
      RUVLLM_TRY(st_->store->commit_with([&](const record_graph& g, memory_batch& b) -> result<void> {
        g.visit_time_range(record_kind::witness, std::numeric_limits<timestamp_ms>::min(), cutoff,
                           [&](const record& r) {
                             b.remove(r.id);
                             return ++n < batch;
                           });
        return {};
      }));
      total += n;
      if (n < batch) return total;
    }
  }

  /// Entries written.
  [[nodiscard]] std::size_t size() const {
    return st_->store->read([](const record_graph& g) { return g.count(record_kind::witness); });
  }

  /// The group (session hash) of a session's entries.
  [[nodiscard]] static std::uint64_t session_group(const uuid& session_id) noexcept {
    return session_id.is_nil() ? 0 : static_cast<std::uint64_t>(uuid_hash{}(session_id)) | 1;
  }

 private:
  static constexpr std::uint8_t payload_format = 1;

  // One ring slot (see the file comment's memory layout).
  struct alignas(64) slot {
    std::atomic<std::uint64_t> seq{0};
    // Steady clock at push, for max_delay. Atomic because the background
    // writer peeks at the head slot without the writer mutex (a stale value
    // only moves its wake-up time).
    std::atomic<std::int64_t> pushed_ns{0};
    uuid request{}, session{}, pattern{};
    timestamp_ms time = 0;
    witness_routing routing{};
    latency_breakdown latency{};
    float quality = 0.0f;
    std::uint32_t error_code = 0;
    std::uint16_t message_bytes = 0;
    bool has_query = false;
    bool has_response = false;
    char message[witness_max_message];
  };
  static_assert(sizeof(slot) == 256);

  // An entry taken off the ring, waiting to be written.
  struct pending_entry {
    uuid request{}, session{}, pattern{};
    timestamp_ms time = 0;
    witness_routing routing{};
    latency_breakdown latency{};
    float quality = 0.0f;
    std::uint32_t error_code = 0;
    std::uint16_t message_bytes = 0;
    bool has_query = false, has_response = false;
    char message[witness_max_message];
    std::size_t floats = 0;  // offset in pending_floats
  };

  struct state {
    state(Store& s, const witness_log_options& o)
        : store(&s),
          options(o),
          qdim(s.dimension(o.query_space)),
          rdim(s.dimension(o.response_space)),
          mask(std::bit_ceil(o.queue_capacity) - 1),
          wake_at(std::min(mask + 1, std::max(o.batch_max, o.wake_at != 0 ? o.wake_at : (mask + 1) / 2))),
          slots(new slot[mask + 1]),
          floats((mask + 1) * (qdim + rdim)) {
      for (std::size_t i = 0; i <= mask; ++i) slots[i].seq.store(i, std::memory_order_relaxed);
    }

    [[nodiscard]] std::size_t capacity() const noexcept { return mask + 1; }

    // Cheap validation before a slot is claimed (a claimed slot cannot be
    // given back). Returns the error, if any.
    [[nodiscard]] std::optional<error> check(const witness_entry& e) const {
      if (e.request_id.is_nil()) return make_error(errc::invalid_argument, "witness request id is nil");
      if (!e.query_embedding.empty() && e.query_embedding.size() != qdim)
        return make_error(errc::invalid_argument, "query embedding dimension ", e.query_embedding.size(), " != ", qdim);
      if (!e.response_embedding.empty() && e.response_embedding.size() != rdim)
        return make_error(errc::invalid_argument, "response embedding dimension ", e.response_embedding.size(),
                          " != ", rdim);
      if (!(e.quality >= 0.0f && e.quality <= 1.0f))  // NaN fails both
        return make_error(errc::invalid_argument, "witness quality ", e.quality, " is not in [0, 1]");
      const float fields[] = {e.routing.model_probability, e.routing.temperature, e.routing.top_p,
                              e.routing.confidence};
      if (!all_finite(fields)) return make_error(errc::invalid_argument, "a routing value is not finite");
      if (!all_finite(e.query_embedding))
        return make_error(errc::invalid_argument, "the query embedding has a non-finite value");
      if (!all_finite(e.response_embedding))
        return make_error(errc::invalid_argument, "the response embedding has a non-finite value");
      return std::nullopt;
    }

    // Exponent bits all ones is inf or NaN; an OR-reduction over integer
    // compares vectorizes, where a std::isfinite loop does not.
    [[nodiscard]] static bool all_finite(std::span<const float> v) noexcept {
      std::uint32_t bad = 0;
      for (float x : v) {
        const auto u = std::bit_cast<std::uint32_t>(x);
        bad |= static_cast<std::uint32_t>((u & 0x7f800000u) == 0x7f800000u);
      }
      return bad == 0;
    }

    void fill(slot& s, std::size_t index, const witness_entry& e) noexcept {
      s.pushed_ns.store(detail::steady_now_ns(), std::memory_order_relaxed);
      s.request = e.request_id;
      s.session = e.session_id;
      s.pattern = e.pattern_id;
      s.time = e.time;
      s.routing = e.routing;
      s.latency = e.latency;
      s.quality = e.quality;
      s.error_code = e.error_code;
      s.message_bytes = static_cast<std::uint16_t>(std::min(e.error_message.size(), witness_max_message));
      if (s.message_bytes != 0) std::memcpy(s.message, e.error_message.data(), s.message_bytes);
      s.has_query = !e.query_embedding.empty();
      s.has_response = !e.response_embedding.empty();
      float* dst = floats.data() + index * (qdim + rdim);
      if (s.has_query) std::memcpy(dst, e.query_embedding.data(), qdim * sizeof(float));
      if (s.has_response) std::memcpy(dst + qdim, e.response_embedding.data(), rdim * sizeof(float));
    }

    Store* store;
    witness_log_options options;
    std::size_t qdim, rdim;
    std::size_t mask;
    std::size_t wake_at;  // effective options.wake_at
    std::unique_ptr<slot[]> slots;
    std::vector<float> floats;
    alignas(64) std::atomic<std::uint64_t> enqueue_pos{0};
    alignas(64) std::atomic<std::uint64_t> dequeue_pos{0};
    alignas(64) std::atomic<std::uint32_t> in_flight{0};
    std::atomic<bool> closed{false};
    std::atomic<bool> writer_waiting{false};
    alignas(64) std::atomic<std::uint64_t> rejected_full{0}, rejected_invalid{0}, rejected_closed{0};
    std::atomic<std::uint64_t> written{0}, batches{0}, duplicates{0}, write_errors{0};
    // Writer side.
    std::mutex writer_mutex;  // serializes pump/flush
    std::vector<pending_entry> pending;
    std::vector<float> pending_floats;
    std::vector<uuid> batch_ids;
    std::mutex thread_mutex;  // start/stop
    std::thread thread;
    std::mutex wake_mutex;
    std::condition_variable wake;
    bool stop = false;  // guarded by wake_mutex
    mutable std::mutex error_mutex;
    std::optional<error> last_error;
  };

  witness_log() = default;

  // Waits until the first `limit` slots claimed now are published (or
  // already taken). A push that won its claim always publishes it (nothing
  // between the CAS and the release store can fail), and a slot holds its
  // claim's position as seq only until then, so the wait ends. close() waits
  // for every claim: no push claims after it saw in_flight at 0.
  static void wait_published(const state& st, std::uint64_t limit = ~std::uint64_t{0}) noexcept {
    const std::uint64_t head = st.dequeue_pos.load(std::memory_order_acquire);
    const std::uint64_t end = head + std::min(limit, st.enqueue_pos.load(std::memory_order_acquire) - head);
    for (std::uint64_t pos = head; pos < end; ++pos)
      while (st.slots[pos & st.mask].seq.load(std::memory_order_acquire) == pos) std::this_thread::yield();
  }

  // Entries ready at the head of the ring (published, in order), up to limit.
  [[nodiscard]] static std::size_t ready(const state& st, std::size_t limit) noexcept {
    const std::uint64_t head = st.dequeue_pos.load(std::memory_order_relaxed);
    std::size_t n = 0;
    while (n < limit && st.slots[(head + n) & st.mask].seq.load(std::memory_order_acquire) == head + n + 1) ++n;
    return n;
  }

  // Moves n ready entries from the ring into pending (writer mutex held).
  static void take(state& st, std::size_t n) {
    const std::size_t dims = st.qdim + st.rdim;
    std::uint64_t head = st.dequeue_pos.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i, ++head) {
      slot& s = st.slots[head & st.mask];
      pending_entry p;
      p.request = s.request;
      p.session = s.session;
      p.pattern = s.pattern;
      p.time = s.time;
      p.routing = s.routing;
      p.latency = s.latency;
      p.quality = s.quality;
      p.error_code = s.error_code;
      p.message_bytes = s.message_bytes;
      std::memcpy(p.message, s.message, s.message_bytes);
      p.has_query = s.has_query;
      p.has_response = s.has_response;
      p.floats = st.pending_floats.size();
      const float* src = st.floats.data() + (head & st.mask) * dims;
      st.pending_floats.insert(st.pending_floats.end(), src, src + dims);
      st.pending.push_back(p);
      s.seq.store(head + st.mask + 1, std::memory_order_release);  // the slot is free for lap + 1
    }
    st.dequeue_pos.store(head, std::memory_order_release);
  }

  [[nodiscard]] static record to_record(const pending_entry& p) {
    record r;
    r.id = p.request;
    r.kind = record_kind::witness;
    r.time = p.time;
    r.group = session_group(p.session);
    r.set(quality_attribute, static_cast<double>(p.quality));
    r.payload.reserve(128 + p.message_bytes);
    detail::put_bytes(r.payload, payload_format);
    detail::put_uuid(r.payload, p.session);
    detail::put_uuid(r.payload, p.pattern);
    detail::put_bytes(r.payload, p.routing.model);
    detail::put_bytes(r.payload, p.routing.model_probability);
    detail::put_bytes(r.payload, p.routing.context_bucket);
    detail::put_bytes(r.payload, p.routing.temperature);
    detail::put_bytes(r.payload, p.routing.top_p);
    detail::put_bytes(r.payload, p.routing.confidence);
    detail::put_bytes(r.payload, p.latency.queue_us);
    detail::put_bytes(r.payload, p.latency.prefill_us);
    detail::put_bytes(r.payload, p.latency.decode_us);
    detail::put_bytes(r.payload, p.latency.total_us);
    detail::put_bytes(r.payload, p.error_code);
    detail::put_text(r.payload, std::string_view(p.message, p.message_bytes));
    return r;
  }

  [[nodiscard]] static result<witness_record> decode(const record& r) {
    witness_record w;
    w.request_id = r.id;
    w.time = r.time;
    const auto q = r.number(quality_attribute);
    byte_reader b(r.payload, "witness payload");
    auto fail = [&](std::string_view what) {
      return make_error(errc::corrupt_data, "witness entry ", to_string(r.id), ": ", what);
    };
    if (!q) return fail("no quality");
    w.quality = static_cast<float>(*q);
    auto format = b.read<std::uint8_t>("format");
    if (!format || *format != payload_format) return fail("unknown payload format");
    auto session = detail::read_uuid(b);
    auto pattern = detail::read_uuid(b);
    auto model = b.read<std::uint32_t>();
    auto prob = b.read<float>();
    auto bucket = b.read<std::uint32_t>();
    auto temp = b.read<float>();
    auto top_p = b.read<float>();
    auto conf = b.read<float>();
    auto lq = b.read<std::uint32_t>();
    auto lp = b.read<std::uint32_t>();
    auto ld = b.read<std::uint32_t>();
    auto lt = b.read<std::uint32_t>();
    auto code = b.read<std::uint32_t>();
    if (!session || !pattern || !model || !prob || !bucket || !temp || !top_p || !conf || !lq || !lp || !ld || !lt ||
        !code)
      return fail("truncated payload");
    auto message = detail::read_text(b, "error message");
    if (!message || message->size() > witness_max_message || b.remaining() != 0) return fail("bad error message");
    w.session_id = *session;
    w.pattern_id = *pattern;
    w.routing = witness_routing{*model, *prob, *bucket, *temp, *top_p, *conf};
    w.latency = latency_breakdown{*lq, *lp, *ld, *lt};
    w.error_code = *code;
    w.error_message.assign(*message);
    return w;
  }

  // Commits pending as one logged batch (writer mutex held). On success
  // pending is emptied; on an io_error it is kept for the next attempt.
  [[nodiscard]] static result<void> commit_pending(state& st) {
    if (st.pending.empty()) return {};
    std::uint64_t dups = 0;
    auto built = st.store->commit_with([&](const record_graph& g, memory_batch& b) -> result<void> {
      dups = 0;
      st.batch_ids.clear();
      for (const pending_entry& p : st.pending) {
        if (g.get(p.request) != nullptr ||
            std::find(st.batch_ids.begin(), st.batch_ids.end(), p.request) != st.batch_ids.end()) {
          ++dups;
          continue;
        }
        st.batch_ids.push_back(p.request);
        const float* v = st.pending_floats.data() + p.floats;
        embedding_ref embs[2];
        std::size_t n = 0;
        if (p.has_query) embs[n++] = embedding_ref{st.options.query_space, std::span<const float>(v, st.qdim)};
        if (p.has_response)
          embs[n++] = embedding_ref{st.options.response_space, std::span<const float>(v + st.qdim, st.rdim)};
        b.insert(to_record(p), std::span<const embedding_ref>(embs, n));
        if (!p.session.is_nil() && p.session != p.request && g.get(p.session) != nullptr)
          b.link(p.request, p.session, edge_type::session_witness, 1.0f);
        if (!p.pattern.is_nil() && p.pattern != p.request && g.get(p.pattern) != nullptr)
          b.link(p.request, p.pattern, edge_type::pattern_witness, p.quality);
      }
      return {};
    });
    if (!built) {
      st.write_errors.fetch_add(1, std::memory_order_relaxed);
      // Only a failed write is worth retrying; anything else would fail
      // again forever, so that batch is dropped (and reported).
      if (built.error().code() != errc::io_error) {
        st.pending.clear();
        st.pending_floats.clear();
      }
      return built;
    }
    st.written.fetch_add(st.pending.size() - dups, std::memory_order_relaxed);
    st.duplicates.fetch_add(dups, std::memory_order_relaxed);
    st.batches.fetch_add(1, std::memory_order_relaxed);
    st.pending.clear();
    st.pending_floats.clear();
    return {};
  }

  [[nodiscard]] static result<std::size_t> write(state& st, bool everything) {
    std::lock_guard lk(st.writer_mutex);
    std::size_t total = 0;
    if (!st.pending.empty()) {  // a batch whose write failed earlier goes first
      const std::size_t n = st.pending.size();
      RUVLLM_TRY(commit_pending(st));
      total += n;
    }
    for (;;) {
      std::size_t n = ready(st, st.options.batch_max);
      const bool crowded =
          st.enqueue_pos.load(std::memory_order_relaxed) - st.dequeue_pos.load(std::memory_order_relaxed) >= st.wake_at;
      if (crowded && n < st.options.batch_max) {
        // The push that crowded the ring (and woke this writer) may still be
        // copying its entry: its claim is published within microseconds, so
        // wait for the claims of a full batch rather than commit a short one
        // (a commit costs a log append and possibly an fsync).
        wait_published(st, st.options.batch_max);
        n = ready(st, st.options.batch_max);
      }
      if (n == 0) break;
      if (n < st.options.batch_max && !everything && !crowded) {
        const std::int64_t waited = detail::steady_now_ns() -
                                    st.slots[st.dequeue_pos.load() & st.mask].pushed_ns.load(std::memory_order_relaxed);
        if (waited < std::chrono::duration_cast<std::chrono::nanoseconds>(st.options.max_delay).count()) break;
      }
      take(st, n);
      RUVLLM_TRY(commit_pending(st));
      total += n;
    }
    return total;
  }

  // The background writer: sleeps until the oldest entry is due, the ring
  // reaches wake_at, or stop(); then pumps.
  static void run(state& st) {
    const auto max_delay = std::chrono::duration_cast<std::chrono::nanoseconds>(st.options.max_delay);
    std::unique_lock lk(st.wake_mutex);
    while (!st.stop) {
      auto deadline = std::chrono::steady_clock::now() + max_delay;
      if (ready(st, 1) == 1) {
        const std::int64_t head = st.slots[st.dequeue_pos.load() & st.mask].pushed_ns.load(std::memory_order_relaxed);
        deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(head)) + max_delay;
      }
      st.writer_waiting.store(true, std::memory_order_seq_cst);
      st.wake.wait_until(lk, deadline, [&] {
        return st.stop ||
               st.enqueue_pos.load(std::memory_order_seq_cst) - st.dequeue_pos.load(std::memory_order_relaxed) >=
                   st.wake_at;
      });
      st.writer_waiting.store(false, std::memory_order_relaxed);
      if (st.stop) break;
      lk.unlock();
      auto r = write(st, false);
      lk.lock();
      if (!r) {
        {
          std::lock_guard e(st.error_mutex);
          st.last_error = std::move(r).error();
        }
        st.wake.wait_for(lk, st.options.retry_delay, [&] { return st.stop; });
      }
    }
  }

  [[nodiscard]] result<std::vector<witness_hit>> similar(std::uint32_t space, std::span<const float> query,
                                                         std::size_t k, search_params params) const {
    std::vector<witness_hit> out;
    std::optional<error> failure;
    RUVLLM_TRY(st_->store->visit_nearest(
        space, query, k, [](const record& r) { return r.kind == record_kind::witness; },
        [&](const record& r, float d) {
          if (failure) return;
          auto w = decode(r);
          if (!w)
            failure = std::move(w).error();
          else
            out.push_back(witness_hit{std::move(*w), d});
        },
        params));
    if (failure) return std::move(*failure);
    return out;
  }

  [[nodiscard]] static latency_percentiles percentiles(std::vector<std::uint32_t>& v) {
    latency_percentiles p;
    if (v.empty()) return p;
    std::sort(v.begin(), v.end());
    const auto rank = [&](double q) {
      const auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
      return v[std::min(v.size(), std::max<std::size_t>(r, 1)) - 1];
    };
    p.p50 = rank(0.50);
    p.p95 = rank(0.95);
    p.p99 = rank(0.99);
    p.max = v.back();
    double sum = 0.0;
    for (auto x : v) sum += x;
    p.mean = sum / static_cast<double>(v.size());
    return p;
  }

  std::unique_ptr<state> st_;
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_WITNESS_LOG_HPP
