#ifndef RUVLLM_MEMORY_UNIFIED_POOL_HPP
#define RUVLLM_MEMORY_UNIFIED_POOL_HPP

// memory::unified_pool<EvictionPolicy, Hooks> -- one byte budget for every
// large allocation an engine makes: KV block regions, LoRA adapters, router
// weights, scratch arenas. After ADR-002's unified memory pool: whatever the
// mix, the process never holds more than the budget, and under pressure the
// coldest evictable allocation goes first (to a store, to a colder tier, or
// simply away, as the request's pressure policy says).
//
// ------------------------------------------------------------------ model
// * Memory comes in whole pages (2 MiB by default, pool_options::page_bytes):
//   each allocation is one page-aligned run of page memory (page_memory.hpp:
//   mmap + MADV_HUGEPAGE, else aligned new), so an allocation is contiguous
//   and a KV slab inside it is read through huge pages. Sizes are rounded up
//   to whole pages and the rounded size is what the budget is charged.
//   Small objects belong inside one allocation of their owner (e.g. all of a
//   tenant's MicroLoRA adapters) or in an arena.
// * The budget is hard: used_bytes() <= budget_bytes() at every instant,
//   because an allocation is charged before its memory is requested and only
//   after enough has been evicted.
// * Allocations carry a kind (alloc_kind) and a tenant namespace
//   (tenant_id < pool_options::tenants); each tenant may have a quota
//   (set_quota; default none). A request that would put its tenant above its quota fails
//   with budget_exceeded under every policy: eviction frees room for the
//   pool, never to let a tenant outgrow its share.
// * Unpinned allocations sit in the EvictionPolicy's intrusive queue (the
//   hooks live in the records, preallocated at create(): no heap allocation
//   per allocation besides its pages). touch() marks use. pin() takes an
//   allocation out of eviction until unpin() (the KV block regions are
//   allocated pinned).
// * Pressure policy per request (alloc_request::policy), applied when the
//   request does not fit (and, with a hysteresis policy, once usage reaches
//   the start watermark, evicting in one batch down to the stop watermark):
//     evict    -- victims are freed; Hooks::evicted(info) is told;
//     spill    -- Hooks::persist(info, bytes) writes each victim to a store
//                 before it is freed;
//     quantize -- Hooks::demote(info, bytes) pushes each victim to a colder
//                 tier (e.g. requantized KV) before it is freed;
//     reject   -- nothing is evicted; the request fails.
//   A request that fails leaves the pool as it was, with one exception: a
//   persist/demote hook that fails midway stops the eviction; victims already
//   handed to the hook stay evicted (their data is safe where the hook put it).
//   Eviction of any kind first checks that evictable bytes can cover the
//   shortfall, so a request that cannot succeed evicts nothing.
//
// ------------------------------------------------------------------ hooks
// Hooks is a class (stored by value in the pool, default no_hooks) with any of
//   result<void> persist(const allocation_info&, std::span<const std::byte>);
//   result<void> demote(const allocation_info&, std::span<const std::byte>);
//   void evicted(const allocation_info&) noexcept;
// A missing persist or demote makes spill or quantize behave as evict. Hooks
// are plain member calls resolved at compile time (no std::function, no
// virtual). They run with the pool's mutex held: they must not call back into
// the pool.
//
// ------------------------------------------------------------ thread-safety
// allocate, free, touch, pin, unpin, data, info, set_quota, trim are
// serialized by one mutex inside the pool and may be called from any thread.
// The statistics (used_bytes, peak_bytes, kind_bytes, tenant_bytes, stats(),
// pressure()) are atomics read without the lock: each value is exact at some
// instant, a set of them is not a snapshot. A pointer from data() stays valid
// until the allocation is freed or evicted: pin it (or hold the handle's owner
// lock) while using it from one thread while another may allocate.

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <type_traits>
#include <utility>

#include "ruvllm/core/error.hpp"
#include "ruvllm/core/eviction.hpp"
#include "ruvllm/memory/page_memory.hpp"

namespace ruvllm::memory {

/// What an allocation holds (statistics per kind; owners interpret evictions).
enum class alloc_kind : std::uint8_t { kv_pages = 0, lora_adapter, router_weights, scratch };
inline constexpr std::size_t alloc_kind_count = 4;

/// What to do when a request does not fit (see the file comment).
enum class pressure_policy : std::uint8_t { evict = 0, quantize, reject, spill };

/// How full the pool is: normal below the stop watermark, elevated from it,
/// high from the start watermark, critical when one more page would not fit.
enum class pressure_state : std::uint8_t { normal = 0, elevated, high, critical };

/// A tenant namespace: an index below pool_options::tenants.
using tenant_id = std::uint16_t;

/// A request's tags and pressure policy.
struct alloc_request {
  alloc_kind kind = alloc_kind::scratch;
  tenant_id tenant = 0;
  pressure_policy policy = pressure_policy::evict;
  bool pinned = false;  // never evicted until unpin()
};

/// Handle to an allocation: a slot and the generation that detects stale use
/// after a free or an eviction. A value; default-constructed = no allocation.
struct allocation {
  std::uint32_t slot = 0xFFFF'FFFFu;
  std::uint32_t generation = 0;

  [[nodiscard]] bool valid() const noexcept { return slot != 0xFFFF'FFFFu; }
  friend constexpr bool operator==(allocation, allocation) noexcept = default;
};

/// What the hooks (and info()) see of an allocation.
struct allocation_info {
  allocation handle{};
  alloc_kind kind = alloc_kind::scratch;
  tenant_id tenant = 0;
  std::size_t bytes = 0;     // requested
  std::size_t reserved = 0;  // charged: bytes rounded up to whole pages
  bool pinned = false;
};

/// Construction options of a unified_pool.
struct pool_options {
  std::size_t budget_bytes = 0;              // hard cap, a multiple of page_bytes
  std::size_t page_bytes = huge_page_bytes;  // power of two >= 4096
  std::uint32_t max_allocations = 4096;      // records preallocated by create()
  std::uint32_t tenants = 1;                 // tenant ids 0 .. tenants - 1
  eviction::watermarks watermarks{};         // start/stop percent (hysteresis policies)
};

/// Counters of a pool (relaxed atomics read at slightly different instants).
struct pool_stats {
  std::size_t used_bytes = 0;
  std::size_t peak_bytes = 0;
  std::size_t budget_bytes = 0;
  std::size_t live_allocations = 0;
  std::uint64_t allocations = 0;  // successful allocate() calls
  std::uint64_t evictions = 0;    // victims freed under any policy
  std::uint64_t spills = 0;       // victims handed to persist
  std::uint64_t demotions = 0;    // victims handed to demote
  std::uint64_t rejections = 0;   // failed allocate() calls
};

/// Hooks that do nothing: every policy but reject behaves as evict.
struct no_hooks {};

namespace detail {
template <class H>
concept has_persist_hook = requires(H& h, const allocation_info& i, std::span<const std::byte> b) {
  { h.persist(i, b) } -> std::same_as<result<void>>;
};
template <class H>
concept has_demote_hook = requires(H& h, const allocation_info& i, std::span<const std::byte> b) {
  { h.demote(i, b) } -> std::same_as<result<void>>;
};
template <class H>
concept has_evicted_hook = requires(H& h, const allocation_info& i) {
  h.evicted(i);
};
template <class Q>
concept watermark_queue = requires(Q& q, std::size_t n, eviction::watermarks w) {
  { q.should_evict(n, n) } -> std::convertible_to<bool>;
  { q.set_watermarks(w) } -> std::same_as<result<void>>;
};
}  // namespace detail

/// A hook set for unified_pool: a class type offering any of persist, demote
/// and evicted with the signatures in the file comment.
template <class H>
concept PoolHooks = std::is_class_v<H> && std::is_move_constructible_v<H>;

/// The unified memory pool (contract in the file comment).
///
/// Template parameters: Policy, an EvictionPolicy (eviction::lru, lfu,
/// hysteresis<lru>, ...); Hooks, the eviction hooks (no_hooks by default).
/// Movable (the state lives behind one pointer); create() allocates the
/// records once, allocate() maps pages, nothing else allocates except error
/// messages.
template <EvictionPolicy Policy, PoolHooks Hooks = no_hooks>
class unified_pool {
 public:
  using policy_type = Policy;
  using hooks_type = Hooks;
  /// The quota of a tenant without one.
  static constexpr std::size_t no_quota = ~std::size_t{0};

  unified_pool() noexcept = default;

  /// A pool with the given options. Errors (invalid_argument): page size not
  /// a power of two >= 4096, budget 0 or not a multiple of the page size,
  /// max_allocations 0, tenants outside [1, 65536], bad watermarks.
  [[nodiscard]] static result<unified_pool> create(const pool_options& o, Hooks hooks = Hooks{}) {
    if (o.page_bytes < 4096 || (o.page_bytes & (o.page_bytes - 1)) != 0)
      return make_error(errc::invalid_argument, "pool page size ", o.page_bytes, " must be a power of two >= 4096");
    if (o.budget_bytes == 0 || o.budget_bytes % o.page_bytes != 0)
      return make_error(errc::invalid_argument, "pool budget ", o.budget_bytes,
                        " must be a positive multiple of the page size ", o.page_bytes);
    if (o.max_allocations == 0 || o.max_allocations >= 0xFFFF'FFFFu)
      return make_error(errc::invalid_argument, "pool max_allocations ", o.max_allocations,
                        " must be in [1, 2^32 - 2]");
    if (o.tenants == 0 || o.tenants > 65536)
      return make_error(errc::invalid_argument, "pool tenants ", o.tenants, " must be in [1, 65536]");
    if (o.watermarks.start_percent == 0 || o.watermarks.start_percent > 100 ||
        o.watermarks.stop_percent >= o.watermarks.start_percent)
      return make_error(errc::invalid_argument, "pool watermarks ", o.watermarks.start_percent, "/",
                        o.watermarks.stop_percent, " need 0 <= stop < start <= 100");
    auto s = std::make_unique<state>(o, std::move(hooks));
    if constexpr (detail::watermark_queue<queue_type>) RUVLLM_TRY(s->queue.set_watermarks(o.watermarks));
    unified_pool p;
    p.s_ = std::move(s);
    return p;
  }

  /// Reserves `bytes` (rounded up to whole pages) for req.kind and
  /// req.tenant, making room under req.policy when the budget is short.
  /// The memory is zero-filled and page aligned. Errors: invalid_argument
  /// (bytes 0, tenant unknown); budget_exceeded (over the tenant's quota, over
  /// the budget under reject, or more than eviction can free -- the message
  /// names the size, the budget and the usage); out_of_memory (no free record
  /// or the system refused); a persist/demote hook's error.
  [[nodiscard]] result<allocation> allocate(std::size_t bytes, const alloc_request& req) {
    state& s = *s_;
    if (bytes == 0) return make_error(errc::invalid_argument, "pool allocation of 0 bytes");
    if (req.tenant >= s.options.tenants)
      return make_error(errc::invalid_argument, "tenant ", req.tenant, " >= pool tenants ", s.options.tenants);
    if (static_cast<std::size_t>(req.kind) >= alloc_kind_count)
      return make_error(errc::invalid_argument, "allocation kind ", static_cast<unsigned>(req.kind), " unknown");
    const std::size_t page = s.options.page_bytes;
    const std::size_t budget = s.options.budget_bytes;
    if (bytes > budget) {
      s.rejections.fetch_add(1, std::memory_order_relaxed);
      return make_error(errc::budget_exceeded, "allocation of ", bytes, " bytes exceeds the pool budget ", budget);
    }
    const std::size_t reserved = (bytes + page - 1) / page * page;

    std::lock_guard<std::mutex> lock(s.mutex);
    const std::size_t tenant_used = s.tenant_used[req.tenant].load(std::memory_order_relaxed);
    if (reserved > s.quota[req.tenant] - std::min(tenant_used, s.quota[req.tenant])) {
      s.rejections.fetch_add(1, std::memory_order_relaxed);
      return make_error(errc::budget_exceeded, "allocation of ", bytes, " bytes (", reserved, " reserved) by tenant ",
                        req.tenant, " would exceed its quota ", s.quota[req.tenant], " (tenant uses ", tenant_used,
                        ")");
    }
    if (s.free_top == 0) {
      s.rejections.fetch_add(1, std::memory_order_relaxed);
      return make_error(errc::out_of_memory, "pool holds its maximum of ", s.options.max_allocations, " allocations");
    }
    const std::size_t used = s.used.load(std::memory_order_relaxed);
    if (used + reserved > budget) {
      const std::size_t shortfall = used + reserved - budget;
      if (req.policy == pressure_policy::reject || s.evictable < shortfall) {
        s.rejections.fetch_add(1, std::memory_order_relaxed);
        return make_error(errc::budget_exceeded, "allocation of ", bytes, " bytes (", reserved,
                          " reserved) would exceed the pool budget ", budget, " (used ", used, ", evictable ",
                          req.policy == pressure_policy::reject ? std::size_t{0} : s.evictable, ", policy ",
                          policy_name(req.policy), ")");
      }
    }
    if (req.policy != pressure_policy::reject) RUVLLM_TRY(make_room_locked(reserved, req.policy));

    RUVLLM_TRY_ASSIGN(page_memory mem, page_memory::allocate(reserved, page));
    const std::uint32_t slot = s.free_slots[--s.free_top];
    record& r = s.records[slot];
    r.mem = std::move(mem);
    r.info.handle = allocation{slot, r.generation};
    r.info.kind = req.kind;
    r.info.tenant = req.tenant;
    r.info.bytes = bytes;
    r.info.reserved = reserved;
    r.info.pinned = req.pinned;
    r.pins = req.pinned ? 1 : 0;
    r.live = true;
    if (!req.pinned) {
      s.queue.insert(r);
      s.evictable += reserved;
    }
    charge(r.info, true);
    s.allocations.fetch_add(1, std::memory_order_relaxed);
    return r.info.handle;
  }

  /// Frees allocation `a` (no hook runs: the owner is done with it). Errors:
  /// not_found for a handle that is stale (freed or evicted) or was never
  /// issued.
  result<void> free(allocation a) {
    state& s = *s_;
    std::lock_guard<std::mutex> lock(s.mutex);
    RUVLLM_TRY_ASSIGN(record * r, find_locked(a));
    release_locked(*r);
    return {};
  }

  /// Marks a use of `a` for the eviction policy. Errors: not_found.
  result<void> touch(allocation a) {
    state& s = *s_;
    std::lock_guard<std::mutex> lock(s.mutex);
    RUVLLM_TRY_ASSIGN(record * r, find_locked(a));
    if (r->pins == 0) s.queue.touch(*r);
    return {};
  }

  /// Takes `a` out of eviction (counted: pin twice, unpin twice). Errors: not_found.
  result<void> pin(allocation a) {
    state& s = *s_;
    std::lock_guard<std::mutex> lock(s.mutex);
    RUVLLM_TRY_ASSIGN(record * r, find_locked(a));
    if (r->pins++ == 0) {
      s.queue.erase(*r);
      s.evictable -= r->info.reserved;
    }
    r->info.pinned = true;
    return {};
  }

  /// Undoes one pin(); at zero pins `a` is evictable again (as most recently
  /// used). Errors: not_found, invalid_argument when `a` is not pinned.
  result<void> unpin(allocation a) {
    state& s = *s_;
    std::lock_guard<std::mutex> lock(s.mutex);
    RUVLLM_TRY_ASSIGN(record * r, find_locked(a));
    if (r->pins == 0) return make_error(errc::invalid_argument, "unpin of allocation ", a.slot, " which is not pinned");
    if (--r->pins == 0) {
      r->info.pinned = false;
      s.queue.insert(*r);
      s.evictable += r->info.reserved;
    }
    return {};
  }

  /// The memory of `a` (reserved bytes, page aligned), or nullptr for a
  /// stale handle. See the file comment for how long the pointer lives.
  [[nodiscard]] std::byte* data(allocation a) const noexcept {
    state& s = *s_;
    std::lock_guard<std::mutex> lock(s.mutex);
    const record* r = lookup_locked(a);
    return r == nullptr ? nullptr : r->mem.data();
  }

  /// Tags and sizes of `a`. Errors: not_found.
  [[nodiscard]] result<allocation_info> info(allocation a) const {
    state& s = *s_;
    std::lock_guard<std::mutex> lock(s.mutex);
    const record* r = lookup_locked(a);
    if (r == nullptr) return not_found(a);
    return r->info;
  }

  /// Sets tenant t's quota in bytes (existing allocations stay; new ones must
  /// fit). Errors: invalid_argument for an unknown tenant.
  result<void> set_quota(tenant_id t, std::size_t bytes) {
    state& s = *s_;
    if (t >= s.options.tenants)
      return make_error(errc::invalid_argument, "tenant ", t, " >= pool tenants ", s.options.tenants);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.quota[t] = bytes;
    return {};
  }

  /// Evicts (under `policy`, not reject) until usage is at most
  /// `target_bytes` or nothing evictable is left; an engine calls it between
  /// steps to relieve pressure ahead of demand. Errors: a hook's error.
  result<void> trim(std::size_t target_bytes, pressure_policy policy = pressure_policy::evict) {
    state& s = *s_;
    std::lock_guard<std::mutex> lock(s.mutex);
    while (s.used.load(std::memory_order_relaxed) > target_bytes) {
      record* victim = s.queue.pick_victim();
      if (victim == nullptr) break;
      RUVLLM_TRY(evict_locked(*victim, policy));
    }
    return {};
  }

  // ---------------------------------------------------------- statistics
  [[nodiscard]] std::size_t budget_bytes() const noexcept { return s_->options.budget_bytes; }
  [[nodiscard]] std::size_t page_bytes() const noexcept { return s_->options.page_bytes; }
  [[nodiscard]] std::size_t used_bytes() const noexcept { return s_->used.load(std::memory_order_relaxed); }
  [[nodiscard]] std::size_t peak_bytes() const noexcept { return s_->peak.load(std::memory_order_relaxed); }
  [[nodiscard]] std::size_t kind_bytes(alloc_kind k) const noexcept {
    return s_->kind_used[static_cast<std::size_t>(k)].load(std::memory_order_relaxed);
  }
  /// Bytes charged to tenant t (0 for an unknown tenant).
  [[nodiscard]] std::size_t tenant_bytes(tenant_id t) const noexcept {
    return t < s_->options.tenants ? s_->tenant_used[t].load(std::memory_order_relaxed) : 0;
  }
  [[nodiscard]] pool_stats stats() const noexcept {
    const state& s = *s_;
    pool_stats st;
    st.used_bytes = s.used.load(std::memory_order_relaxed);
    st.peak_bytes = s.peak.load(std::memory_order_relaxed);
    st.budget_bytes = s.options.budget_bytes;
    st.live_allocations = s.live.load(std::memory_order_relaxed);
    st.allocations = s.allocations.load(std::memory_order_relaxed);
    st.evictions = s.evictions.load(std::memory_order_relaxed);
    st.spills = s.spills.load(std::memory_order_relaxed);
    st.demotions = s.demotions.load(std::memory_order_relaxed);
    st.rejections = s.rejections.load(std::memory_order_relaxed);
    return st;
  }
  /// The pressure state from current usage and the watermarks (lock-free).
  [[nodiscard]] pressure_state pressure() const noexcept {
    const state& s = *s_;
    __extension__ using u128 = unsigned __int128;
    const std::size_t used = s.used.load(std::memory_order_relaxed);
    const std::size_t budget = s.options.budget_bytes;
    if (used + s.options.page_bytes > budget) return pressure_state::critical;
    const u128 scaled = static_cast<u128>(used) * 100u;
    if (scaled >= static_cast<u128>(budget) * s.options.watermarks.start_percent) return pressure_state::high;
    if (scaled >= static_cast<u128>(budget) * s.options.watermarks.stop_percent) return pressure_state::elevated;
    return pressure_state::normal;
  }
  /// The hooks object (e.g. to read what a persist hook collected). Not
  /// synchronized: call while no other thread uses the pool.
  [[nodiscard]] Hooks& hooks() noexcept { return s_->hooks; }

 private:
  struct record : Policy::hook {
    allocation_info info{};
    page_memory mem;
    std::uint32_t generation = 1;
    std::uint32_t pins = 0;
    bool live = false;
  };
  using queue_type = typename Policy::template queue<record>;

  struct state {
    state(const pool_options& o, Hooks&& h)
        : options(o),
          hooks(std::move(h)),
          records(std::make_unique<record[]>(o.max_allocations)),
          free_slots(std::make_unique<std::uint32_t[]>(o.max_allocations)),
          quota(std::make_unique<std::size_t[]>(o.tenants)),
          tenant_used(std::make_unique<std::atomic<std::size_t>[]>(o.tenants)) {
      for (std::uint32_t i = 0; i < o.max_allocations; ++i) free_slots[i] = o.max_allocations - 1 - i;
      free_top = o.max_allocations;
      for (std::uint32_t t = 0; t < o.tenants; ++t) quota[t] = no_quota;
    }
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
      // The queue unlinks its (safe-mode) hooks before the records die.
      for (std::uint32_t i = 0; i < options.max_allocations; ++i)
        if (records[i].live && records[i].pins == 0) queue.erase(records[i]);
    }

    pool_options options;
    Hooks hooks;
    std::unique_ptr<record[]> records;
    std::unique_ptr<std::uint32_t[]> free_slots;
    std::uint32_t free_top = 0;
    std::unique_ptr<std::size_t[]> quota;
    std::unique_ptr<std::atomic<std::size_t>[]> tenant_used;
    queue_type queue;
    std::size_t evictable = 0;  // reserved bytes in the queue; guarded by mutex
    mutable std::mutex mutex;
    std::atomic<std::size_t> used{0};
    std::atomic<std::size_t> peak{0};
    std::atomic<std::size_t> live{0};
    std::atomic<std::size_t> kind_used[alloc_kind_count] = {};
    std::atomic<std::uint64_t> allocations{0}, evictions{0}, spills{0}, demotions{0}, rejections{0};
  };

  [[nodiscard]] static const char* policy_name(pressure_policy p) noexcept {
    switch (p) {
      case pressure_policy::evict: return "evict";
      case pressure_policy::quantize: return "quantize";
      case pressure_policy::reject: return "reject";
      case pressure_policy::spill: return "spill";
    }
    return "unknown";
  }

  [[nodiscard]] static ruvllm::error not_found(allocation a) {
    return make_error(errc::not_found, "allocation ", a.slot, " generation ", a.generation,
                      " is not live (freed, evicted or never issued)");
  }

  [[nodiscard]] record* lookup_locked(allocation a) const noexcept {
    const state& s = *s_;
    if (a.slot >= s.options.max_allocations) return nullptr;
    record& r = s.records[a.slot];
    return r.live && r.generation == a.generation ? &r : nullptr;
  }
  [[nodiscard]] result<record*> find_locked(allocation a) const {
    record* r = lookup_locked(a);
    if (r == nullptr) return not_found(a);
    return r;
  }

  // Adds (or removes) r's reserved bytes to the usage counters. Writers hold
  // the mutex, so load + store is exact; readers see each counter atomically.
  void charge(const allocation_info& i, bool add) noexcept {
    state& s = *s_;
    const auto bump = [add, n = i.reserved](std::atomic<std::size_t>& c) {
      c.store(add ? c.load(std::memory_order_relaxed) + n : c.load(std::memory_order_relaxed) - n,
              std::memory_order_relaxed);
    };
    bump(s.used);
    bump(s.tenant_used[i.tenant]);
    bump(s.kind_used[static_cast<std::size_t>(i.kind)]);
    s.live.store(s.live.load(std::memory_order_relaxed) + (add ? 1 : std::size_t(-1)), std::memory_order_relaxed);
    if (add) {
      const std::size_t u = s.used.load(std::memory_order_relaxed);
      if (u > s.peak.load(std::memory_order_relaxed)) s.peak.store(u, std::memory_order_relaxed);
    }
  }

  void release_locked(record& r) noexcept {
    state& s = *s_;
    if (r.pins == 0) {
      s.queue.erase(r);
      s.evictable -= r.info.reserved;
    }
    charge(r.info, false);
    r.mem.reset();
    r.live = false;
    r.pins = 0;
    ++r.generation;  // stale handles now miss
    if (r.generation == 0) r.generation = 1;
    s.free_slots[s.free_top++] = r.info.handle.slot;
  }

  // Hands victim r to the policy's hook, then frees it.
  result<void> evict_locked(record& r, pressure_policy policy) {
    state& s = *s_;
    const std::span<const std::byte> bytes(r.mem.data(), r.info.bytes);
    if (policy == pressure_policy::spill) {
      if constexpr (detail::has_persist_hook<Hooks>) {
        RUVLLM_TRY(s.hooks.persist(r.info, bytes));
        s.spills.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (policy == pressure_policy::quantize) {
      if constexpr (detail::has_demote_hook<Hooks>) {
        RUVLLM_TRY(s.hooks.demote(r.info, bytes));
        s.demotions.fetch_add(1, std::memory_order_relaxed);
      }
    }
    const allocation_info info = r.info;
    release_locked(r);
    s.evictions.fetch_add(1, std::memory_order_relaxed);
    if constexpr (detail::has_evicted_hook<Hooks>) s.hooks.evicted(info);
    return {};
  }

  // Evicts until `reserved` more bytes fit; with a watermark policy, keeps
  // going in the same batch while the policy says usage is above its marks.
  result<void> make_room_locked(std::size_t reserved, pressure_policy policy) {
    state& s = *s_;
    const std::size_t budget = s.options.budget_bytes;
    for (;;) {
      const std::size_t projected = s.used.load(std::memory_order_relaxed) + reserved;
      bool more = projected > budget;
      if constexpr (detail::watermark_queue<queue_type>) more = s.queue.should_evict(projected, budget) || more;
      if (!more) return {};
      record* victim = s.queue.pick_victim();
      if (victim == nullptr) return {};  // watermarks only; the hard shortfall was checked
      RUVLLM_TRY(evict_locked(*victim, policy));
    }
  }

  std::unique_ptr<state> s_;
};

}  // namespace ruvllm::memory

#endif  // RUVLLM_MEMORY_UNIFIED_POOL_HPP
