#ifndef RUVLLM_SONA_ADAPTER_POOL_HPP
#define RUVLLM_SONA_ADAPTER_POOL_HPP

// pooled_adapters<Adapter, Pool, Backing>: named LoRA adapters whose
// parameters live in the engine's unified memory pool (memory/unified_pool),
// so adapters share one hard budget with the KV cache and everything else.
// Under pressure the pool may evict an adapter that is not in use: its
// parameters are first written to the Backing (the store, in
// persistence.hpp), and it is reloaded from there the next time it is
// activated or acquired. The active adapter and every acquired one are
// pinned, so what is being served is never evicted.
//
// Each adapter keeps its id (assigned once, never reused) and its version
// (bumped by every update, carried through eviction and reload): the pair is
// what the KV prefix cache namespaces on, so no KV computed under other
// weights is reused.
//
// Backing is a class with
//   result<void> save(std::uint32_t id, std::string_view name, const lora_options&,
//                     std::span<const float> parameters, std::uint64_t version);
//   result<std::uint64_t> load(std::uint32_t id, std::string_view name, std::span<float> parameters);
//   result<void> erase(std::uint32_t id, std::string_view name);
// (load fills exactly parameters.size() floats and returns the saved
// version). memory_backing below keeps them in a map (tests, or a process
// that only needs the budget).
//
// Pool wiring: the pool's Hooks must forward persist/evicted of kind
// lora_adapter to the registry; adapter_pool_hooks does exactly that and
// ignores other kinds (an engine sharing the pool composes its own hooks
// around one). Bind it once the registry exists: registry.bind(pool.hooks()).
//
// Thread-safety: the registry's calls are serialized by its mutex. The pool
// calls the hooks, possibly from another thread's allocation, with the pool's
// mutex held; they touch only a separate small table under their own mutex
// (lock order: registry -> pool -> hook table), and the registry notices
// evictions at its next call. An Adapter* from active() stays valid until the
// next activate/deactivate/remove; a lease from acquire() until it is
// destroyed. Allocation: add/activate/acquire allocate pool memory and
// registry nodes; lookups do not.

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ruvllm/core/error.hpp"
#include "ruvllm/memory/unified_pool.hpp"
#include "ruvllm/sona/lora.hpp"

namespace ruvllm::sona {

/// A Backing that keeps evicted adapters in memory (a map by id).
class memory_backing {
 public:
  [[nodiscard]] result<void> save(std::uint32_t id, std::string_view, const lora_options&,
                                  std::span<const float> parameters, std::uint64_t version) {
    auto& e = saved_[id];
    e.parameters.assign(parameters.begin(), parameters.end());
    e.version = version;
    ++saves_;
    return {};
  }
  [[nodiscard]] result<std::uint64_t> load(std::uint32_t id, std::string_view name, std::span<float> parameters) {
    const auto it = saved_.find(id);
    if (it == saved_.end()) return make_error(errc::not_found, "adapter '", name, "' (id ", id, ") was never saved");
    if (it->second.parameters.size() != parameters.size())
      return make_error(errc::corrupt_data, "adapter '", name, "' was saved with ", it->second.parameters.size(),
                        " parameters, not ", parameters.size());
    std::copy(it->second.parameters.begin(), it->second.parameters.end(), parameters.begin());
    return it->second.version;
  }
  [[nodiscard]] result<void> erase(std::uint32_t id, std::string_view) {
    saved_.erase(id);
    return {};
  }
  [[nodiscard]] std::size_t saves() const noexcept { return saves_; }

 private:
  struct entry {
    std::vector<float> parameters;
    std::uint64_t version = 0;
  };
  std::unordered_map<std::uint32_t, entry> saved_;
  std::size_t saves_ = 0;
};

/// Pool hooks that hand evicted adapter allocations to the pooled_adapters
/// registry bound to them (pooled_adapters::bind); other kinds pass through.
/// The registry is reached through two plain function pointers rather than
/// its type, because the registry's type names the pool's, which names
/// these hooks.
struct adapter_pool_hooks {
  void* target = nullptr;
  result<void> (*persist_fn)(void*, const memory::allocation_info&, std::span<const std::byte>) = nullptr;
  void (*evicted_fn)(void*, const memory::allocation_info&) noexcept = nullptr;

  [[nodiscard]] result<void> persist(const memory::allocation_info& info, std::span<const std::byte> bytes) {
    if (target == nullptr || info.kind != memory::alloc_kind::lora_adapter) return {};
    return persist_fn(target, info, bytes);
  }
  void evicted(const memory::allocation_info& info) noexcept {
    if (target != nullptr && info.kind == memory::alloc_kind::lora_adapter) evicted_fn(target, info);
  }
};

/// Settings of a pooled_adapters registry.
struct pooled_adapters_options {
  memory::tenant_id tenant = 0;
  /// spill writes an evicted adapter to the backing first; evict drops it
  /// (it then restarts from fresh weights when reloaded would fail: use spill).
  memory::pressure_policy policy = memory::pressure_policy::spill;
};

/// Named adapters in the unified pool; see the file comment.
template <class Adapter, class Pool, class Backing = memory_backing>
class pooled_adapters {
  struct entry;

 public:
  /// Keeps an adapter pinned and resident while alive.
  class lease {
   public:
    lease() = default;
    lease(lease&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), e_(o.e_) {}
    lease& operator=(lease&& o) noexcept {
      if (this != &o) {
        release();
        owner_ = std::exchange(o.owner_, nullptr);
        e_ = o.e_;
      }
      return *this;
    }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() { release(); }
    [[nodiscard]] Adapter& adapter() const noexcept { return *e_->adapter; }
    [[nodiscard]] std::uint32_t id() const noexcept { return e_->id; }

   private:
    friend class pooled_adapters;
    lease(pooled_adapters* owner, entry* e) noexcept : owner_(owner), e_(e) {}
    void release() noexcept {
      if (owner_ != nullptr) owner_->unpin(*e_);
      owner_ = nullptr;
    }
    pooled_adapters* owner_ = nullptr;
    entry* e_ = nullptr;
  };

  pooled_adapters(Pool& pool, Backing backing = {}, pooled_adapters_options o = {})
      : pool_(&pool), backing_(std::move(backing)), o_(o) {}
  pooled_adapters(const pooled_adapters&) = delete;
  pooled_adapters& operator=(const pooled_adapters&) = delete;
  ~pooled_adapters() {
    std::lock_guard lock(m_);
    for (auto& [name, e] : by_name_) drop_memory(e);
  }

  /// Adds a fresh adapter (Adapter::create_in over a pool allocation) under
  /// name; returns its id. Errors: the name exists, bad options, the pool
  /// cannot make room.
  [[nodiscard]] result<std::uint32_t> add(std::string_view name, const lora_options& options) {
    std::lock_guard lock(m_);
    collect_evictions();
    if (by_name_.find(name) != by_name_.end())
      return make_error(errc::already_exists, "adapter '", name, "' is already registered");
    RUVLLM_TRY(Adapter::check(options));
    entry e;
    e.id = next_id_;
    e.options = options;
    e.name.assign(name);
    // Pinned until the hooks can find it, so an eviction in between cannot
    // free memory the registry still believes resident.
    RUVLLM_TRY(allocate(e, true));
    auto created = Adapter::create_in(options, floats_of(e));
    if (!created) {
      drop_memory(e);
      return std::move(created).error();
    }
    e.adapter.emplace(std::move(created).value());
    ++next_id_;
    auto [it, inserted] = by_name_.emplace(std::string(name), std::move(e));
    register_handle(it->second);
    static_cast<void>(pool_->unpin(it->second.handle));
    return it->second.id;
  }

  /// Removes name (its pool memory and its saved copy). Errors: unknown
  /// name, an acquired lease still holding it.
  [[nodiscard]] result<void> remove(std::string_view name) {
    std::lock_guard lock(m_);
    collect_evictions();
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return make_error(errc::not_found, "adapter '", name, "' is not registered");
    entry& e = it->second;
    if (e.leases > 0)
      return make_error(errc::invalid_argument, "adapter '", name, "' is in use by ", e.leases, " leases");
    if (active_ == &e) {
      active_ = nullptr;
      if (e.handle.valid()) static_cast<void>(pool_->unpin(e.handle));
    }
    drop_memory(e);
    static_cast<void>(backing_.erase(e.id, e.name));
    by_name_.erase(it);
    return {};
  }

  /// Makes name the active adapter: reloaded if evicted, pinned; the
  /// previous one is unpinned. Errors: unknown name, the pool cannot make
  /// room, the backing cannot load it (the previous adapter stays active).
  [[nodiscard]] result<void> activate(std::string_view name) {
    std::lock_guard lock(m_);
    collect_evictions();
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return make_error(errc::not_found, "adapter '", name, "' is not registered");
    entry& e = it->second;
    if (active_ == &e) return {};
    RUVLLM_TRY(pin_resident(e));
    if (active_ != nullptr) unpin_locked(*active_);
    active_ = &e;
    return {};
  }

  /// Serves without an adapter (the previous one is unpinned).
  void deactivate() {
    std::lock_guard lock(m_);
    if (active_ != nullptr) unpin_locked(*active_);
    active_ = nullptr;
  }

  /// The active adapter, or nullptr (pinned: valid until activate,
  /// deactivate or remove).
  [[nodiscard]] Adapter* active() noexcept {
    std::lock_guard lock(m_);
    return active_ != nullptr ? &*active_->adapter : nullptr;
  }
  [[nodiscard]] std::optional<std::uint32_t> active_id() const {
    std::lock_guard lock(m_);
    if (active_ == nullptr) return std::nullopt;
    return active_->id;
  }

  /// Pins name (reloading it if evicted) for as long as the lease lives, e.g.
  /// for the background loop to train an adapter that is not active.
  [[nodiscard]] result<lease> acquire(std::string_view name) {
    std::lock_guard lock(m_);
    collect_evictions();
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return make_error(errc::not_found, "adapter '", name, "' is not registered");
    RUVLLM_TRY(pin_resident(it->second));
    ++it->second.leases;
    return lease(this, &it->second);
  }

  /// Whether name's parameters are in the pool now.
  [[nodiscard]] bool resident(std::string_view name) {
    std::lock_guard lock(m_);
    collect_evictions();
    const auto it = by_name_.find(name);
    return it != by_name_.end() && it->second.adapter.has_value();
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(m_);
    return by_name_.size();
  }
  [[nodiscard]] Backing& backing() noexcept { return backing_; }

  /// Points the pool's hooks at this registry (the registry must then not
  /// move; it is not movable).
  void bind(adapter_pool_hooks& hooks) noexcept {
    hooks.target = this;
    hooks.persist_fn = [](void* self, const memory::allocation_info& info, std::span<const std::byte> bytes) {
      return static_cast<pooled_adapters*>(self)->persist_evicted(info, bytes);
    };
    hooks.evicted_fn = [](void* self, const memory::allocation_info& info) noexcept {
      static_cast<pooled_adapters*>(self)->note_evicted(info);
    };
  }

  // ---- called by adapter_pool_hooks, with the pool's mutex held ----------

  /// Saves an evicted adapter's bytes to the backing.
  [[nodiscard]] result<void> persist_evicted(const memory::allocation_info& info, std::span<const std::byte> bytes) {
    std::lock_guard lock(hook_m_);
    const auto it = by_handle_.find(info.handle.slot);
    if (it == by_handle_.end() || it->second.handle != info.handle) return {};  // not ours
    const handle_entry& h = it->second;
    if (bytes.size() < h.floats * sizeof(float))
      return make_error(errc::corrupt_data, "adapter '", h.name, "' allocation of ", bytes.size(),
                        " bytes holds fewer than ", h.floats, " floats");
    const std::span<const float> params(reinterpret_cast<const float*>(bytes.data()), h.floats);
    return backing_.save(h.id, h.name, h.options, params, h.version_at_eviction());
  }
  /// Records that an allocation of ours is gone (applied at the next call).
  void note_evicted(const memory::allocation_info& info) noexcept {
    std::lock_guard lock(hook_m_);
    const auto it = by_handle_.find(info.handle.slot);
    if (it == by_handle_.end() || it->second.handle != info.handle) return;
    evicted_.push_back(info.handle);
    by_handle_.erase(it);
  }

 private:
  // What the hooks need of an allocation, kept apart from the entries so the
  // hooks never touch registry state the registry's own calls are changing.
  struct handle_entry {
    memory::allocation handle{};
    std::uint32_t id = 0;
    std::string name;
    lora_options options{};
    std::size_t floats = 0;
    const Adapter* adapter = nullptr;  // its version is read at eviction
    [[nodiscard]] std::uint64_t version_at_eviction() const noexcept {
      return adapter != nullptr ? adapter->version() : 0;
    }
  };
  struct entry {
    std::uint32_t id = 0;
    std::string name;
    lora_options options{};
    memory::allocation handle{};
    std::optional<Adapter> adapter;  // a view over the allocation while resident
    std::uint64_t version = 0;       // kept when evicted
    std::size_t pins = 0;            // active + leases
    std::size_t leases = 0;
  };

  [[nodiscard]] std::span<float> floats_of(const entry& e) const noexcept {
    return {reinterpret_cast<float*>(pool_->data(e.handle)), Adapter::parameter_count(e.options)};
  }

  [[nodiscard]] result<void> allocate(entry& e, bool pinned) {
    const std::size_t bytes = Adapter::parameter_count(e.options) * sizeof(float);
    RUVLLM_TRY_ASSIGN(e.handle, pool_->allocate(bytes, {.kind = memory::alloc_kind::lora_adapter,
                                                        .tenant = o_.tenant,
                                                        .policy = o_.policy,
                                                        .pinned = pinned}));
    return {};
  }

  void register_handle(entry& e) {
    std::lock_guard lock(hook_m_);
    by_handle_[e.handle.slot] = handle_entry{
        e.handle, e.id, e.name, e.options, Adapter::parameter_count(e.options), e.adapter ? &*e.adapter : nullptr};
  }

  // Frees e's allocation (if any) without saving it.
  void drop_memory(entry& e) noexcept {
    if (!e.handle.valid()) return;
    {
      std::lock_guard lock(hook_m_);
      by_handle_.erase(e.handle.slot);
    }
    if (e.adapter) e.version = e.adapter->version();
    e.adapter.reset();
    static_cast<void>(pool_->free(e.handle));
    e.handle = {};
  }

  // Marks the entries whose allocations the pool evicted as not resident.
  void collect_evictions() {
    std::vector<memory::allocation> gone;
    {
      std::lock_guard lock(hook_m_);
      gone.swap(evicted_);
    }
    for (const auto& h : gone)
      for (auto& [name, e] : by_name_)
        if (e.handle == h) {
          if (e.adapter) e.version = e.adapter->version();
          e.adapter.reset();
          e.handle = {};
        }
  }

  // Makes e resident (reloading from the backing) and pins it once more.
  [[nodiscard]] result<void> pin_resident(entry& e) {
    if (!e.adapter) {
      RUVLLM_TRY(allocate(e, true));
      collect_evictions();  // room may have been made by evicting others
      auto loaded = backing_.load(e.id, e.name, floats_of(e));
      if (!loaded) {
        drop_memory(e);
        return std::move(loaded).error();
      }
      auto view = Adapter::view(e.options, floats_of(e), *loaded);
      if (!view) {
        drop_memory(e);
        return std::move(view).error();
      }
      e.adapter.emplace(std::move(view).value());
      register_handle(e);
    } else if (e.pins == 0) {
      RUVLLM_TRY(pool_->pin(e.handle));
    }
    ++e.pins;
    return {};
  }

  void unpin_locked(entry& e) noexcept {
    if (e.pins == 0) return;
    if (--e.pins == 0 && e.handle.valid()) static_cast<void>(pool_->unpin(e.handle));
  }
  void unpin(entry& e) noexcept {
    std::lock_guard lock(m_);
    --e.leases;
    unpin_locked(e);
  }

  Pool* pool_;
  Backing backing_;
  pooled_adapters_options o_;
  mutable std::mutex m_;
  std::map<std::string, entry, std::less<>> by_name_;  // nodes are stable: entry* stays valid
  entry* active_ = nullptr;
  std::uint32_t next_id_ = 1;
  std::mutex hook_m_;
  std::unordered_map<std::uint32_t, handle_entry> by_handle_;  // pool slot -> what persist needs
  std::vector<memory::allocation> evicted_;
};

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_ADAPTER_POOL_HPP
