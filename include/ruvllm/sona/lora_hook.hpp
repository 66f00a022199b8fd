#ifndef RUVLLM_SONA_LORA_HOOK_HPP
#define RUVLLM_SONA_LORA_HOOK_HPP

// lora_hook<Targets, Adapter>: LoRA adapters inside the model's forward pass.
// One adapter per adapted projection, each with one A/B pair per layer and
// the projection's own shape (q: n_embd -> heads x head_dim, k and v: n_embd
// -> KV heads x head_dim, o: heads x head_dim -> n_embd, gate and up: n_embd
// -> n_ff, down: n_ff -> n_embd). Which projections are adapted is a policy:
//   lora_targets::qv    q and v (the usual choice, and the reference's default)
//   lora_targets::qkvo  every attention projection
//   lora_targets::all   attention and feed-forward
// A projection the policy leaves out costs one compile-time test.
//
// It is a ProjectionHook (model/projection_hook.hpp): attach it with
// llama_context<B, KvConfig, lora_hook<...>>::set_hook(&hook). Its kv_key() combines
// the hook's identity with every adapter's version, so the context drops KV
// computed before an update or under another hook.
//
// Thread-safety: apply() is const and may run while nothing updates the
// adapters (the engine swaps hooks rather than updating one in use).
// Allocation: create() allocates every adapter; apply() never allocates.

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "ruvllm/core/error.hpp"
#include "ruvllm/model/llama.hpp"
#include "ruvllm/model/projection_hook.hpp"
#include "ruvllm/sona/lora.hpp"
#include "ruvllm/sona/router.hpp"

namespace ruvllm::sona {

/// Which projections a lora_hook adapts (policy tags).
namespace lora_targets {
struct qv {
  static constexpr bool adapts(model::projection p) noexcept {
    return p == model::projection::q || p == model::projection::v;
  }
};
struct qkvo {
  static constexpr bool adapts(model::projection p) noexcept {
    return p == model::projection::q || p == model::projection::k || p == model::projection::v ||
           p == model::projection::o;
  }
};
struct all {
  static constexpr bool adapts(model::projection) noexcept { return true; }
};
}  // namespace lora_targets

/// A policy naming the projections a lora_hook adapts.
template <class T>
concept LoraTargets = requires {
  { T::adapts(model::projection::q) } -> std::same_as<bool>;
};

/// The adapters of a model's forward pass; see the file comment.
template <LoraTargets Targets, class Adapter = micro_lora<>>
class lora_hook {
 public:
  static constexpr bool enabled = true;

  lora_hook() = default;
  lora_hook(lora_hook&&) noexcept = default;
  lora_hook& operator=(lora_hook&&) noexcept = default;
  // A copy would share the original's identity and so its KV key.
  lora_hook(const lora_hook&) = delete;
  lora_hook& operator=(const lora_hook&) = delete;
  ~lora_hook() = default;

  /// One adapter per adapted projection, shaped for the model; `shape`
  /// gives rank, scale, learning rate and seed (its layers and dimensions
  /// are replaced; each projection's seed is shape.seed + its index).
  /// Errors: the adapter's (rank outside its range, bad values).
  [[nodiscard]] static result<lora_hook> create(const model::llama_hparams& h, const lora_options& shape) {
    lora_hook hook;
    const std::size_t q_dim = h.n_head * h.head_dim, kv_dim = h.n_head_kv * h.head_dim;
    const std::size_t in[model::projection_count] = {h.n_embd, h.n_embd, h.n_embd, q_dim, h.n_embd, h.n_embd, h.n_ff};
    const std::size_t out[model::projection_count] = {q_dim, kv_dim, kv_dim, h.n_embd, h.n_ff, h.n_ff, h.n_embd};
    for (std::size_t i = 0; i < model::projection_count; ++i) {
      if (!Targets::adapts(static_cast<model::projection>(i))) continue;
      lora_options o = shape;
      o.layers = h.n_layer;
      o.in_dim = in[i];
      o.out_dim = out[i];
      o.seed = shape.seed + i;
      RUVLLM_TRY_ASSIGN(auto a, Adapter::create(o));
      hook.adapters_[i].emplace(std::move(a));
    }
    hook.identity_ = next_identity().fetch_add(1, std::memory_order_relaxed);
    return hook;
  }

  /// The adapter of projection p, or nullptr when the policy leaves p out.
  [[nodiscard]] Adapter* adapter(model::projection p) noexcept {
    auto& a = adapters_[static_cast<std::size_t>(p)];
    return a ? &*a : nullptr;
  }
  [[nodiscard]] const Adapter* adapter(model::projection p) const noexcept {
    const auto& a = adapters_[static_cast<std::size_t>(p)];
    return a ? &*a : nullptr;
  }

  /// Whether the policy adapts projection p (ProjectionHook).
  static constexpr bool adapts(model::projection p) noexcept { return Targets::adapts(p); }

  /// y += the adapter's update for `tokens` rows (ProjectionHook).
  void apply(std::size_t layer, model::projection p, const float* x, std::size_t x_stride, float* y,
             std::size_t y_stride, std::size_t tokens) const noexcept {
    if (!Targets::adapts(p)) return;
    adapters_[static_cast<std::size_t>(p)]->forward_rows(layer, x, x_stride, y, y_stride, tokens);
  }

  /// The hook's identity and every adapter's version, mixed (ProjectionHook).
  [[nodiscard]] std::uint64_t kv_key() const noexcept {
    std::uint64_t s = identity_ * 0x9E3779B97F4A7C15ull;
    std::uint64_t key = detail::splitmix64(s);
    for (const auto& a : adapters_) {
      if (!a) continue;
      s ^= a->version();
      key ^= detail::splitmix64(s);
    }
    return key == 0 ? 1 : key;  // 0 means "no hook" to the context
  }

 private:
  // Hook identities are handed out once per process, so two hooks never
  // share a key even at equal adapter versions.
  static std::atomic<std::uint64_t>& next_identity() noexcept {
    static std::atomic<std::uint64_t> next{1};
    return next;
  }

  std::array<std::optional<Adapter>, model::projection_count> adapters_{};
  std::uint64_t identity_ = 0;
};

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_LORA_HOOK_HPP
