#ifndef RUVLLM_SONA_LORA_HPP
#define RUVLLM_SONA_LORA_HPP

// Low-rank adapters: y += scale * B (A x) on a projection's output, per layer.
// micro_lora (rank 1-2) learns per request in SONA's instant loop; base_lora
// (rank 4-8) is the slower adapter the background loop merges micro into.
//
// Layout: every parameter in one float array, A of every layer first
// ([layer][rank][in_dim]) then B ([layer][rank][out_dim]). A x is one gemv
// over `rank` rows through the kernels layer; B is stored transposed (a row
// per rank slot) so that adding B (A x) to the output is `rank` contiguous
// multiply-adds over out_dim, which the compiler vectorizes, instead of
// out_dim dot products of length rank (2 for MicroLoRA). One array makes a
// checkpoint, an export and an EMA merge single loops.
// A starts small and random, B at zero: a fresh adapter changes nothing.
// Every update bumps version(); the KV prefix cache keys cached prefixes on
// (adapter, version), so stale KV is never reused under a changed adapter.
//
// Allocation: create() allocates the parameters on the heap; create_in()
// and view() use caller memory (a unified-pool allocation: see
// adapter_pool.hpp); copies own theirs. forward(), instant_update() and
// merge_from() are allocation-free (rank is bounded at compile time, so A x lives on the
// stack). Thread-safety: forward() is const and may run on many threads while
// nothing updates the adapter; updates need exclusive access (the engine
// swaps adapters rather than updating one that is serving).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
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
  // Copies own their parameters (a copy of an adapter living in pool memory
  // is an ordinary heap adapter); moves keep the storage they point to.
  lora_adapter(const lora_adapter& o) : o_(o.o_), b_offset_(o.b_offset_), version_(o.version_) {
    owned_.assign(o.data_, o.data_ + o.size_);
    data_ = owned_.data();
    size_ = owned_.size();
  }
  lora_adapter& operator=(const lora_adapter& o) {
    if (this != &o) *this = lora_adapter(o);
    return *this;
  }
  lora_adapter(lora_adapter&& o) noexcept
      : o_(o.o_),
        owned_(std::move(o.owned_)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        b_offset_(o.b_offset_),
        version_(o.version_) {}
  lora_adapter& operator=(lora_adapter&& o) noexcept {
    o_ = o.o_;
    owned_ = std::move(o.owned_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    b_offset_ = o.b_offset_;
    version_ = o.version_;
    return *this;
  }
  ~lora_adapter() = default;

  /// Floats of parameters an adapter of these options holds (A and B of every layer).
  [[nodiscard]] static constexpr std::size_t parameter_count(const lora_options& o) noexcept {
    return o.layers * o.rank * (o.in_dim + o.out_dim);
  }

  /// A fresh adapter (A small and random, B zero) in its own heap memory.
  /// Errors: rank outside [MinRank, MaxRank], a zero dimension or layer count,
  /// a non-finite scale or negative learning rate, sizes beyond max_dim /
  /// max_layers.
  [[nodiscard]] static result<lora_adapter> create(const lora_options& o) {
    RUVLLM_TRY(check(o));
    lora_adapter a;
    a.owned_.assign(parameter_count(o), 0.0f);
    a.adopt(o, a.owned_);
    a.initialize();
    return a;
  }

  /// A fresh adapter whose parameters live in `storage` (e.g. an allocation
  /// of the unified pool), which must hold exactly parameter_count(o) floats
  /// and outlive the adapter. Errors: as create(), or a storage size mismatch.
  [[nodiscard]] static result<lora_adapter> create_in(const lora_options& o, std::span<float> storage) {
    RUVLLM_TRY(check(o));
    RUVLLM_TRY(check_storage(o, storage));
    lora_adapter a;
    a.adopt(o, storage);
    a.initialize();
    return a;
  }

  /// An adapter over parameters already in `storage` (reloaded from a store)
  /// at `version`. Errors: as create_in(), or a non-finite parameter.
  [[nodiscard]] static result<lora_adapter> view(const lora_options& o, std::span<float> storage,
                                                 std::uint64_t version) {
    RUVLLM_TRY(check(o));
    RUVLLM_TRY(check_storage(o, storage));
    for (std::size_t i = 0; i < storage.size(); ++i)
      if (!std::isfinite(storage[i])) return make_error(errc::invalid_argument, "lora parameter ", i, " is not finite");
    lora_adapter a;
    a.adopt(o, storage);
    a.version_ = version;
    return a;
  }

  /// Checks options as create() does.
  [[nodiscard]] static result<void> check(const lora_options& o) {
    if (o.rank < MinRank || o.rank > MaxRank)
      return make_error(errc::invalid_argument, "lora rank ", o.rank, " is outside [", MinRank, ", ", MaxRank, "]");
    if (o.layers == 0 || o.in_dim == 0 || o.out_dim == 0)
      return make_error(errc::invalid_argument, "lora layers ", o.layers, ", in_dim ", o.in_dim, ", out_dim ",
                        o.out_dim, " must be positive");
    if (!std::isfinite(o.scale) || !(o.learning_rate >= 0.0f))
      return make_error(errc::invalid_argument, "lora scale ", o.scale, " or learning rate ", o.learning_rate,
                        " is invalid");
    if (o.in_dim > max_dim || o.out_dim > max_dim || o.layers > max_layers)
      return make_error(errc::invalid_argument, "lora dims ", o.in_dim, "x", o.out_dim, " or ", o.layers,
                        " layers exceed the limits ", max_dim, " / ", max_layers);
    return {};
  }

  /// Largest in/out dimension and layer count create() accepts (bounds the
  /// allocation a hostile checkpoint could ask for).
  static constexpr std::size_t max_dim = std::size_t{1} << 20;
  static constexpr std::size_t max_layers = 4096;

  [[nodiscard]] const lora_options& options() const noexcept { return o_; }
  [[nodiscard]] std::size_t rank() const noexcept { return o_.rank; }
  [[nodiscard]] std::uint64_t version() const noexcept { return version_; }
  /// A of `layer`: rank rows of in_dim.
  [[nodiscard]] std::span<float> a(std::size_t layer) noexcept { return {a_row(layer, 0), o_.rank * o_.in_dim}; }
  [[nodiscard]] std::span<const float> a(std::size_t layer) const noexcept {
    return {a_row(layer, 0), o_.rank * o_.in_dim};
  }
  /// B of `layer`, transposed: rank rows of out_dim (row r is column r of B).
  [[nodiscard]] std::span<float> b(std::size_t layer) noexcept { return {b_row(layer, 0), o_.rank * o_.out_dim}; }
  [[nodiscard]] std::span<const float> b(std::size_t layer) const noexcept {
    return {b_row(layer, 0), o_.rank * o_.out_dim};
  }
  /// Every parameter, A of all layers then B of all layers (see the file comment).
  [[nodiscard]] std::span<const float> parameters() const noexcept { return {data_, size_}; }
  /// Replaces every parameter (a checkpoint being restored) and sets the
  /// version. Errors: a size other than parameters().size() or a non-finite value.
  [[nodiscard]] result<void> set_parameters(std::span<const float> p, std::uint64_t version) {
    if (p.size() != size_)
      return make_error(errc::invalid_argument, "lora parameters: got ", p.size(), " floats, need ", size_);
    for (std::size_t i = 0; i < p.size(); ++i)
      if (!std::isfinite(p[i])) return make_error(errc::invalid_argument, "lora parameter ", i, " is not finite");
    std::copy(p.begin(), p.end(), data_);
    version_ = version;
    return {};
  }
  /// Marks a direct edit through a() / b() (bumps the version).
  void touch() noexcept { ++version_; }

  /// y += scale * B (A x) for `layer`; x has in_dim, y out_dim floats.
  void forward(std::size_t layer, const float* x, float* y) const noexcept {
    RUVLLM_ASSERT(layer < o_.layers);
    float ax[MaxRank];
    project(layer, x, ax);
    add_b(layer, ax, y);
  }

  /// forward() for `tokens` rows: x rows x_stride floats apart, y rows y_stride apart.
  void forward_rows(std::size_t layer, const float* x, std::size_t x_stride, float* y, std::size_t y_stride,
                    std::size_t tokens) const noexcept {
    for (std::size_t t = 0; t < tokens; ++t) forward(layer, x + t * x_stride, y + t * y_stride);
  }

  /// Gradients of a loss with dL/dy = grad_y through forward(): dB = scale
  /// grad_y (A x)^T, dA = scale (B^T grad_y) x^T, written to da (rank x
  /// in_dim) and db (rank x out_dim, transposed like b()).
  void gradient(std::size_t layer, const float* x, const float* grad_y, float* da, float* db) const noexcept {
    float ax[MaxRank], bg[MaxRank];
    project(layer, x, ax);
    back_project(layer, grad_y, bg);
    for (std::size_t r = 0; r < o_.rank; ++r)
      for (std::size_t o = 0; o < o_.out_dim; ++o) db[r * o_.out_dim + o] = o_.scale * grad_y[o] * ax[r];
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
    for (std::size_t r = 0; r < o_.rank; ++r) {
      const float step_b = -lr * ax[r], step_a = -lr * bg[r];
      kernels::ops<B>::add_scaled_rows(grad_y, 0, &step_b, 1, b_row(layer, r), o_.out_dim);
      kernels::ops<B>::add_scaled_rows(x, 0, &step_a, 1, a_row(layer, r), o_.in_dim);
    }
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
    if (!(alpha >= 0.0f && alpha <= 1.0f))
      return make_error(errc::invalid_argument, "lora merge weight ", alpha, " is outside [0, 1]");
    const float ratio = o_.scale != 0.0f ? p.scale / o_.scale : 0.0f;
    for (std::size_t l = 0; l < o_.layers; ++l) {
      const auto oa = other.a(l);
      const auto ob = other.b(l);
      for (std::size_t r = 0; r < p.rank; ++r) {
        float* ar = a_row(l, r);
        for (std::size_t i = 0; i < o_.in_dim; ++i) ar[i] = (1.0f - alpha) * ar[i] + alpha * oa[r * o_.in_dim + i];
        float* br = b_row(l, r);
        for (std::size_t o = 0; o < o_.out_dim; ++o)
          br[o] = (1.0f - alpha) * br[o] + alpha * ratio * ob[r * o_.out_dim + o];
      }
    }
    ++version_;
    return {};
  }

 private:
  [[nodiscard]] static result<void> check_storage(const lora_options& o, std::span<float> storage) {
    if (storage.size() != parameter_count(o))
      return make_error(errc::invalid_argument, "lora storage of ", storage.size(), " floats, need ",
                        parameter_count(o));
    return {};
  }
  void adopt(const lora_options& o, std::span<float> storage) noexcept {
    o_ = o;
    data_ = storage.data();
    size_ = storage.size();
    b_offset_ = o.layers * o.rank * o.in_dim;
  }
  // A uniform in +-sqrt(1 / in_dim) from the seed, B zero.
  void initialize() noexcept {
    std::uint64_t s = o_.seed;
    const double bound = std::sqrt(1.0 / static_cast<double>(o_.in_dim));
    for (std::size_t i = 0; i < b_offset_; ++i) data_[i] = static_cast<float>(bound * detail::uniform_pm1(s));
    std::fill(data_ + b_offset_, data_ + size_, 0.0f);
  }

  float* a_row(std::size_t layer, std::size_t r) noexcept { return data_ + (layer * o_.rank + r) * o_.in_dim; }
  const float* a_row(std::size_t layer, std::size_t r) const noexcept {
    return data_ + (layer * o_.rank + r) * o_.in_dim;
  }
  float* b_row(std::size_t layer, std::size_t r) noexcept {
    return data_ + b_offset_ + (layer * o_.rank + r) * o_.out_dim;
  }
  const float* b_row(std::size_t layer, std::size_t r) const noexcept {
    return data_ + b_offset_ + (layer * o_.rank + r) * o_.out_dim;
  }

  // ax = A x through the kernels layer (one dispatch for all rank rows).
  void project(std::size_t layer, const float* x, float* ax) const noexcept {
    kernels::ops<B>::gemv(a_row(layer, 0), o_.in_dim, x, ax, o_.rank, o_.in_dim);
  }
  // y += scale * B ax: every rank slot's row in one pass over y (one kernel
  // dispatch), so y is read and written once.
  void add_b(std::size_t layer, const float* ax, float* y) const noexcept {
    float coeffs[MaxRank];
    for (std::size_t r = 0; r < o_.rank; ++r) coeffs[r] = o_.scale * ax[r];
    kernels::ops<B>::add_scaled_rows(b_row(layer, 0), o_.out_dim, coeffs, o_.rank, y, o_.out_dim);
  }
  // bg = B^T grad_y: one dot product per rank slot.
  void back_project(std::size_t layer, const float* grad_y, float* bg) const noexcept {
    for (std::size_t r = 0; r < o_.rank; ++r) bg[r] = kernels::ops<B>::dot(b_row(layer, r), grad_y, o_.out_dim);
  }

  lora_options o_{};
  std::vector<float> owned_;  // the parameters when the adapter owns them
  float* data_ = nullptr;     // owned_.data() or caller-provided storage
  std::size_t size_ = 0;
  std::size_t b_offset_ = 0;
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
