#ifndef RUVLLM_SONA_LORA_HPP
#define RUVLLM_SONA_LORA_HPP

// Low-rank adapters: y += scale * B (A x) on a projection's output, per layer.
// micro_lora (rank 1-2) learns per request in SONA's instant loop; base_lora
// (rank 4-8) is the slower adapter the background loop merges micro into.
//
// Layout: A of every layer in one array, [layer][rank][in_dim] row-major, so
// A x is one gemv over `rank` rows through the kernels layer; B in another,
// [layer][out_dim][rank], so each output reads `rank` contiguous floats.
// A starts small and random, B at zero: a fresh adapter changes nothing.
// Every update bumps version(); the KV prefix cache keys cached prefixes on
// (adapter, version), so stale KV is never reused under a changed adapter.
//
// Allocation: create() only. forward(), instant_update() and merge_from()
// are allocation-free (rank is bounded at compile time, so A x lives on the
// stack). Thread-safety: forward() is const and may run on many threads while
// nothing updates the adapter; updates need exclusive access (the engine
// swaps adapters rather than updating one that is serving).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/sona/router.hpp"

namespace ruvllm::sona {

/// Shape and learning settings of an adapter.
struct lora_options {
  std::size_t layers = 1;
  std::size_t in_dim = 0;
  std::size_t out_dim = 0;
  std::size_t rank = 1;
  float scale = 1.0f;           ///< alpha / rank
  float learning_rate = 1e-3f;  ///< instant_update step, times quality
  std::uint64_t seed = 0x10a;
};

/// A per-layer low-rank adapter with rank in [MinRank, MaxRank]; kernels
/// from backend B.
template <std::size_t MinRank, std::size_t MaxRank, Backend B = backend::highway>
class lora_adapter {
  static_assert(MinRank >= 1 && MinRank <= MaxRank && MaxRank <= 64,
                "lora_adapter: need 1 <= MinRank <= MaxRank <= 64");

 public:
  static constexpr std::size_t min_rank = MinRank;
  static constexpr std::size_t max_rank = MaxRank;

  lora_adapter() = default;

  /// Errors: rank outside [MinRank, MaxRank], a zero dimension or layer count,
  /// a non-finite scale or negative learning rate.
  [[nodiscard]] static result<lora_adapter> create(const lora_options& o) {
    if (o.rank < MinRank || o.rank > MaxRank)
      return make_error(errc::invalid_argument, "lora rank ", o.rank, " is outside [", MinRank, ", ", MaxRank, "]");
    if (o.layers == 0 || o.in_dim == 0 || o.out_dim == 0)
      return make_error(errc::invalid_argument, "lora layers ", o.layers, ", in_dim ", o.in_dim, ", out_dim ",
                        o.out_dim, " must be positive");
    if (!std::isfinite(o.scale) || !(o.learning_rate >= 0.0f))
      return make_error(errc::invalid_argument, "lora scale ", o.scale, " or learning rate ", o.learning_rate,
                        " is invalid");
    lora_adapter a;
    a.o_ = o;
    a.a_.assign(o.layers * o.rank * o.in_dim, 0.0f);
    a.b_.assign(o.layers * o.out_dim * o.rank, 0.0f);
    std::uint64_t s = o.seed;
    const double bound = std::sqrt(1.0 / static_cast<double>(o.in_dim));
    for (auto& v : a.a_) v = static_cast<float>(bound * detail::uniform_pm1(s));
    return a;
  }

  [[nodiscard]] const lora_options& options() const noexcept { return o_; }
  [[nodiscard]] std::size_t rank() const noexcept { return o_.rank; }
  [[nodiscard]] std::uint64_t version() const noexcept { return version_; }
  /// A of `layer`: rank rows of in_dim.
  [[nodiscard]] std::span<float> a(std::size_t layer) noexcept {
    return {a_.data() + layer * o_.rank * o_.in_dim, o_.rank * o_.in_dim};
  }
  [[nodiscard]] std::span<const float> a(std::size_t layer) const noexcept {
    return {a_.data() + layer * o_.rank * o_.in_dim, o_.rank * o_.in_dim};
  }
  /// B of `layer`: out_dim rows of rank.
  [[nodiscard]] std::span<float> b(std::size_t layer) noexcept {
    return {b_.data() + layer * o_.out_dim * o_.rank, o_.out_dim * o_.rank};
  }
  [[nodiscard]] std::span<const float> b(std::size_t layer) const noexcept {
    return {b_.data() + layer * o_.out_dim * o_.rank, o_.out_dim * o_.rank};
  }
  /// Marks a direct edit through a() / b() (bumps the version).
  void touch() noexcept { ++version_; }

  /// y += scale * B (A x) for `layer`; x has in_dim, y out_dim floats.
  void forward(std::size_t layer, const float* x, float* y) const noexcept {
    RUVLLM_ASSERT(layer < o_.layers);
    float ax[MaxRank];
    project(layer, x, ax);
    const float* bl = b_.data() + layer * o_.out_dim * o_.rank;
    for (std::size_t o = 0; o < o_.out_dim; ++o) {
      float s = 0.0f;
      for (std::size_t r = 0; r < o_.rank; ++r) s += bl[o * o_.rank + r] * ax[r];
      y[o] += o_.scale * s;
    }
  }

  /// Gradients of a loss with dL/dy = grad_y through forward(): dB = scale
  /// grad_y (A x)^T, dA = scale (B^T grad_y) x^T, written to da (rank x
  /// in_dim) and db (out_dim x rank).
  void gradient(std::size_t layer, const float* x, const float* grad_y, float* da, float* db) const noexcept {
    float ax[MaxRank], bg[MaxRank];
    project(layer, x, ax);
    back_project(layer, grad_y, bg);
    for (std::size_t o = 0; o < o_.out_dim; ++o)
      for (std::size_t r = 0; r < o_.rank; ++r) db[o * o_.rank + r] = o_.scale * grad_y[o] * ax[r];
    for (std::size_t r = 0; r < o_.rank; ++r)
      for (std::size_t i = 0; i < o_.in_dim; ++i) da[r * o_.in_dim + i] = o_.scale * bg[r] * x[i];
  }

  /// One SGD step from a gradient signal on the output, scaled by the
  /// request's quality in [0, 1]: good responses move the adapter more.
  /// Both factors step from the same pre-update values.
  void instant_update(std::size_t layer, const float* x, const float* grad_y, float quality) noexcept {
    RUVLLM_ASSERT(layer < o_.layers);
    const float lr = o_.learning_rate * std::clamp(quality, 0.0f, 1.0f) * o_.scale;
    if (lr == 0.0f) return;
    float ax[MaxRank], bg[MaxRank];
    project(layer, x, ax);
    back_project(layer, grad_y, bg);
    float* al = a_.data() + layer * o_.rank * o_.in_dim;
    float* bl = b_.data() + layer * o_.out_dim * o_.rank;
    for (std::size_t o = 0; o < o_.out_dim; ++o)
      for (std::size_t r = 0; r < o_.rank; ++r) bl[o * o_.rank + r] -= lr * grad_y[o] * ax[r];
    for (std::size_t r = 0; r < o_.rank; ++r)
      for (std::size_t i = 0; i < o_.in_dim; ++i) al[r * o_.in_dim + i] -= lr * bg[r] * x[i];
    ++version_;
  }

  /// Exponential moving average toward `other`: this <- (1 - alpha) this +
  /// alpha other, rank slot by rank slot (other's rank r merges into slot r;
  /// the scale ratio keeps the merged delta in this adapter's units). The
  /// product B A of a sum is not the sum of products, so this is the cheap
  /// approximation the background loop uses, not an exact projection.
  /// Errors: other's layers or dimensions differ, or its rank exceeds ours.
  template <std::size_t Min2, std::size_t Max2, Backend B2>
  [[nodiscard]] result<void> merge_from(const lora_adapter<Min2, Max2, B2>& other, float alpha) noexcept {
    const auto& p = other.options();
    if (p.layers != o_.layers || p.in_dim != o_.in_dim || p.out_dim != o_.out_dim || p.rank > o_.rank)
      return make_error(errc::invalid_argument, "lora merge of layers ", p.layers, " dims ", p.in_dim, "x", p.out_dim,
                        " rank ", p.rank, " into layers ", o_.layers, " dims ", o_.in_dim, "x", o_.out_dim, " rank ",
                        o_.rank);
    const float ratio = o_.scale != 0.0f ? p.scale / o_.scale : 0.0f;
    for (std::size_t l = 0; l < o_.layers; ++l) {
      const auto oa = other.a(l);
      const auto ob = other.b(l);
      float* al = a_.data() + l * o_.rank * o_.in_dim;
      float* bl = b_.data() + l * o_.out_dim * o_.rank;
      for (std::size_t r = 0; r < p.rank; ++r)
        for (std::size_t i = 0; i < o_.in_dim; ++i)
          al[r * o_.in_dim + i] = (1.0f - alpha) * al[r * o_.in_dim + i] + alpha * oa[r * o_.in_dim + i];
      for (std::size_t o = 0; o < o_.out_dim; ++o)
        for (std::size_t r = 0; r < p.rank; ++r)
          bl[o * o_.rank + r] = (1.0f - alpha) * bl[o * o_.rank + r] + alpha * ratio * ob[o * p.rank + r];
    }
    ++version_;
    return {};
  }

 private:
  // ax = A x through the kernels layer (one dispatch for all rank rows).
  void project(std::size_t layer, const float* x, float* ax) const noexcept {
    kernels::ops<B>::gemv(a_.data() + layer * o_.rank * o_.in_dim, o_.in_dim, x, ax, o_.rank, o_.in_dim);
  }
  // bg = B^T grad_y
  void back_project(std::size_t layer, const float* grad_y, float* bg) const noexcept {
    const float* bl = b_.data() + layer * o_.out_dim * o_.rank;
    std::fill(bg, bg + o_.rank, 0.0f);
    for (std::size_t o = 0; o < o_.out_dim; ++o)
      for (std::size_t r = 0; r < o_.rank; ++r) bg[r] += bl[o * o_.rank + r] * grad_y[o];
  }

  lora_options o_{};
  std::vector<float> a_;
  std::vector<float> b_;
  std::uint64_t version_ = 0;
};

/// Rank 1-2, updated per request (instant loop).
template <Backend B = backend::highway>
using micro_lora = lora_adapter<1, 2, B>;
/// Rank 4-8, trained in the background loop, merged from micro_lora.
template <Backend B = backend::highway>
using base_lora = lora_adapter<4, 8, B>;

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_LORA_HPP
