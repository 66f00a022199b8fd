#ifndef RUVLLM_MODEL_PROJECTION_HOOK_HPP
#define RUVLLM_MODEL_PROJECTION_HOOK_HPP

// The point where adapters (LoRA, sona/lora_hook.hpp) join the forward pass:
// after each projection y = W x of a transformer block (and its bias), the
// context calls hook.apply(layer, projection, x, y) to add to y. The hook is
// a template parameter of llama_context, so the default, no_projection_hook,
// costs nothing: no pointer test, no call.
//
// A ProjectionHook is a class with
//   static constexpr bool enabled = true;
//   static constexpr bool adapts(projection p) noexcept;  // which outputs apply() may change
//   void apply(std::size_t layer, projection p, const float* x, std::size_t x_stride,
//              float* y, std::size_t y_stride, std::size_t tokens) const noexcept;
//   std::uint64_t kv_key() const noexcept;
// apply adds to `tokens` rows of y (y_stride apart) from the rows of x
// (x_stride apart); projections it does not adapt it leaves alone. kv_key()
// identifies the weights the hook adds (its adapters and their versions):
// K and V computed under one key are never reused under another (the
// context drops them; see llama_context::n_past()).

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace ruvllm::model {

/// The projections of a llama-family block, in forward order.
enum class projection : std::uint8_t { q = 0, k, v, o, gate, up, down };
inline constexpr std::size_t projection_count = 7;

/// No adapter: compiles away.
struct no_projection_hook {
  static constexpr bool enabled = false;
};

/// What llama_context requires of its Hook parameter.
template <class H>
concept ProjectionHook = std::is_class_v<H> &&(!H::enabled || requires(const H& h, float* y, const float* x) {
  h.apply(std::size_t{0}, projection::q, x, std::size_t{0}, y, std::size_t{0}, std::size_t{0});
  { h.kv_key() } -> std::convertible_to<std::uint64_t>;
});

}  // namespace ruvllm::model

#endif  // RUVLLM_MODEL_PROJECTION_HOOK_HPP
