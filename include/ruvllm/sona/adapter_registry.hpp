#ifndef RUVLLM_SONA_ADAPTER_REGISTRY_HPP
#define RUVLLM_SONA_ADAPTER_REGISTRY_HPP

// Named base adapters, one of them active, swapped without touching the
// others: the engine serves through active() and the background loop trains
// any adapter by name. Each adapter keeps its own version; the pair
// (adapter id, version) is what the KV prefix cache namespaces on.
//
// Layout: a std::map from name to {id, adapter}; ids are assigned in
// insertion order and never reused, so a removed and re-added name gets a new
// id and cannot alias cached KV of its predecessor.
// Allocation: add() allocates; lookups and activate() do not.
// Thread-safety: none; the engine serializes registry changes (swapping the
// active adapter is a pointer-sized change the engine publishes itself).

#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "ruvllm/core/error.hpp"

namespace ruvllm::sona {

/// Registry of named adapters of type Adapter (e.g. base_lora<>).
template <class Adapter>
class adapter_registry {
 public:
  struct entry {
    std::uint32_t id = 0;
    Adapter adapter;
  };

  /// Adds `adapter` under `name`. Errors: the name exists already.
  [[nodiscard]] result<std::uint32_t> add(std::string_view name, Adapter adapter) {
    auto [it, inserted] = by_name_.try_emplace(std::string(name));
    if (!inserted) return make_error(errc::already_exists, "adapter '", name, "' is already registered");
    it->second.id = next_id_++;
    it->second.adapter = std::move(adapter);
    return it->second.id;
  }

  /// Removes `name`; deactivates it if active. Errors: unknown name.
  [[nodiscard]] result<void> remove(std::string_view name) {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return make_error(errc::not_found, "adapter '", name, "' is not registered");
    if (active_ == &it->second) active_ = nullptr;
    by_name_.erase(it);
    return {};
  }

  /// Makes `name` the active adapter (hot swap). Errors: unknown name.
  [[nodiscard]] result<void> activate(std::string_view name) {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return make_error(errc::not_found, "adapter '", name, "' is not registered");
    active_ = &it->second;
    return {};
  }
  /// Serves without an adapter.
  void deactivate() noexcept { active_ = nullptr; }

  /// The active entry, or nullptr.
  [[nodiscard]] const entry* active() const noexcept { return active_; }
  [[nodiscard]] entry* active() noexcept { return active_; }
  /// The entry for `name`, or nullptr.
  [[nodiscard]] entry* find(std::string_view name) noexcept {
    const auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &it->second;
  }
  [[nodiscard]] std::size_t size() const noexcept { return by_name_.size(); }

 private:
  std::map<std::string, entry, std::less<>> by_name_;
  entry* active_ = nullptr;  // std::map nodes are stable across inserts
  std::uint32_t next_id_ = 1;
};

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_ADAPTER_REGISTRY_HPP
