#ifndef RUVLLM_SONA_ROUTER_HPP
#define RUVLLM_SONA_ROUTER_HPP

// The FastGRNN router: picks the model, context bucket, temperature and top-p
// for a request from its query features, and learns online from what those
// choices earned (SONA's trajectories).
//
// Cell (Kusupati et al., "FastGRNN", NeurIPS 2018), with low-rank W = W1 W2
// and U = U1 U2 and optional hard-thresholded sparsity on the four factors:
//   z   = sigmoid(W x + U h + b_z)
//   c   = tanh   (W x + U h + b_h)
//   h'  = (zeta (1 - z) + nu) * c + z * h,   zeta = sigmoid(zeta_raw), nu = sigmoid(nu_raw)
// A query is one vector, not a sequence: x (query features, then any extra
// inputs such as retrieved policy parameters and per-model success rates) is
// fed at each of `steps` steps from h = 0. The repeated steps let the
// recurrent path build features of depth `steps`, and they are cheap: W x is
// computed once, each step adds only the small U h product.
// Heads on the final h: model logits (softmax over `models`), context bucket
// logits (softmax), temperature and top-p (sigmoids mapped to their ranges)
// and a confidence (sigmoid) that predicts the quality of routing this query.
//
// Learning. train() minimizes, for one example,
//   w_m CE(model) + w_b CE(bucket) + (t - t*)^2/2 + (p - p*)^2/2 + w_q BCE(confidence, quality)
// for whichever targets are given (a negative class weight w means
// |w| (-log(1 - p)) instead: push that class down, boundedly), plus the EWC++ penalty, with Adam.
// observe() is the bandit form used on live traffic, where only the chosen
// model's quality is seen: the cross-entropy toward the model used is
// weighted by the quality's advantage over the confidence head's prediction
// (actor-critic), so better-than-expected models are pulled up and worse ones
// pushed down, and the confidence head learns the expected quality.
//
// Memory layout: every parameter in one contiguous array, in the order of
// router_layout (W1 | W2 | U1 | U2 | b_z | b_h | zeta | nu | model head |
// bucket head | temperature | top-p | confidence); matrices row-major. One
// array makes Adam, EWC++ and a checkpoint single loops or one copy. The
// gradient, Adam moments, EWC++ vectors and the sparsity mask are arrays of
// the same length. Matrix-vector products of the float router go through the
// kernels layer (one dispatch per product); double (the checking path) and
// the backward pass use plain loops.
//
// T is float for serving, double for gradient checks.
// Allocation: create() and make_workspace() allocate; route(), train(),
// observe() never do. Thread-safety: route() is const and reads only the
// parameters, so many threads may route concurrently, each with its own
// workspace, while no thread trains; train()/observe()/consolidate()/
// sparsify() need exclusive access.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/sona/adam.hpp"
#include "ruvllm/sona/ewc.hpp"

namespace ruvllm::sona {

/// Router shape and learning settings.
struct router_options {
  std::size_t query_dim = 128;      ///< query feature dimension
  std::size_t extra_dim = 0;        ///< appended inputs: policy parameters, success rates
  std::size_t hidden_dim = 32;      ///< FastGRNN state size
  std::size_t rank_w = 8;           ///< rank of W = W1 W2
  std::size_t rank_u = 8;           ///< rank of U = U1 U2
  std::size_t steps = 3;            ///< cell steps per query
  std::size_t models = 4;           ///< model choices
  std::size_t context_buckets = 4;  ///< context size buckets
  double temperature_min = 0.1, temperature_max = 1.5;
  double top_p_min = 0.5, top_p_max = 1.0;
  double sparsity = 0.0;                   ///< fraction of W1, W2, U1, U2 entries sparsify() zeroes, in [0, 1)
  double zeta_init = 1.0, nu_init = -4.0;  ///< raw gate scalars (sigmoid applied), as in the paper
  double confidence_weight = 1.0;          ///< weight of the confidence BCE in observe()
  /// Adam at 3e-3: at 1e-2 Adam's per-parameter normalization turns the
  /// noisy late-training gradients into a random walk that erodes what was learned.
  adam_options optimizer{.learning_rate = 3e-3};
  ewc_options ewc{};
  std::uint64_t seed = 0x5eed;
};

/// Offsets of each parameter block in the flat array.
struct router_layout {
  std::size_t w1, w2, u1, u2, b_z, b_h, zeta, nu, model_w, model_b, bucket_w, bucket_b, temp_w, temp_b, top_p_w,
      top_p_b, conf_w, conf_b, total;
  /// Where the sparsifiable factors end (W1, W2, U1, U2 come first).
  [[nodiscard]] std::size_t factors_end() const noexcept { return b_z; }
};

/// One routing decision.
struct routing_decision {
  std::uint32_t model = 0;           ///< argmax of the model softmax
  float model_probability = 0.0f;    ///< its probability
  std::uint32_t context_bucket = 0;  ///< argmax of the bucket softmax
  float temperature = 0.0f;
  float top_p = 0.0f;
  float confidence = 0.0f;  ///< predicted quality of this routing, in (0, 1)
};

/// Training targets for one example; absent targets are skipped.
struct router_target {
  static constexpr std::int32_t none = -1;
  std::int32_t model = none;  ///< model index to pull toward
  double model_weight = 1.0;  ///< CE weight; negative pushes away (|w| (-log(1 - p)))
  std::int32_t context_bucket = none;
  double bucket_weight = 1.0;
  double temperature = std::numeric_limits<double>::quiet_NaN();
  double top_p = std::numeric_limits<double>::quiet_NaN();
  double quality = std::numeric_limits<double>::quiet_NaN();  ///< confidence target in [0, 1]
  double quality_weight = 1.0;
};

/// Per-thread scratch of a router: activations of the last forward pass,
/// kept for the backward pass. Obtain from router::make_workspace().
template <class T>
struct router_workspace {
  std::vector<T> x, w2x, a, hs, zs, cs, u2h, model_probs, bucket_probs, dh, dh_prev, da, dv, dw2x, tmp;
  T temp_sig{}, top_p_sig{}, conf_sig{}, conf_logit{};
};

namespace detail {
// splitmix64: a reproducible stream on every compiler (the standard
// distributions are not specified bit-exactly).
inline std::uint64_t splitmix64(std::uint64_t& s) noexcept {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline double uniform_pm1(std::uint64_t& s) noexcept {
  return static_cast<double>(splitmix64(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}
template <class T>
T sigmoid(T v) noexcept {
  return v >= T{0} ? T{1} / (T{1} + std::exp(-v)) : std::exp(v) / (T{1} + std::exp(v));
}
template <class T>
T softplus(T v) noexcept {
  return std::max(v, T{0}) + std::log1p(std::exp(-std::abs(v)));
}
// y[r] = sum_c m[r * cols + c] x[c]; float goes through the kernels layer
// (plain loops would leave the reductions scalar: no -ffast-math).
template <class T>
void matvec(const T* m, const T* x, T* y, std::size_t rows, std::size_t cols) noexcept {
  if constexpr (std::is_same_v<T, float>) {
    kernels::ops<backend::highway>::gemv(m, cols, x, y, rows, cols);
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    T s{0};
    const T* row = m + r * cols;
    for (std::size_t c = 0; c < cols; ++c) s += row[c] * x[c];
    y[r] = s;
  }
}
// y[c] += sum_r m[r * cols + c] v[r]
template <class T>
void matvec_t_add(const T* m, const T* v, T* y, std::size_t rows, std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r) {
    const T vr = v[r];
    const T* row = m + r * cols;
    for (std::size_t c = 0; c < cols; ++c) y[c] += row[c] * vr;
  }
}
// g[r * cols + c] += u[r] v[c]
template <class T>
void outer_add(T* g, const T* u, const T* v, std::size_t rows, std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r) {
    const T ur = u[r];
    T* row = g + r * cols;
    for (std::size_t c = 0; c < cols; ++c) row[c] += ur * v[c];
  }
}
// Softmax in place; returns log-sum-exp of the logits.
template <class T>
T softmax(T* v, std::size_t n) noexcept {
  T m = v[0];
  for (std::size_t i = 1; i < n; ++i) m = std::max(m, v[i]);
  T s{0};
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = std::exp(v[i] - m);
    s += v[i];
  }
  for (std::size_t i = 0; i < n; ++i) v[i] /= s;
  return m + std::log(s);
}
}  // namespace detail

/// The FastGRNN router over T (float or double). See the file comment.
template <class T = float>
class fastgrnn_router {
  static_assert(std::is_floating_point_v<T>, "fastgrnn_router<T>: T must be float or double");

 public:
  using value_type = T;
  using workspace = router_workspace<T>;

  fastgrnn_router() = default;

  /// Builds a router with seeded initial weights. Errors name the bad option:
  /// zero dimensions, ranks above min(hidden, input), sparsity outside [0, 1),
  /// inverted ranges, bad optimizer or EWC++ settings.
  [[nodiscard]] static result<fastgrnn_router> create(const router_options& o) {
    const std::size_t d = o.query_dim + o.extra_dim;
    if (o.query_dim == 0 || o.hidden_dim == 0 || o.steps == 0)
      return make_error(errc::invalid_argument, "router query_dim ", o.query_dim, ", hidden_dim ", o.hidden_dim,
                        " and steps ", o.steps, " must be positive");
    if (o.models < 2 || o.context_buckets < 1)
      return make_error(errc::invalid_argument, "router needs at least 2 models and 1 context bucket, got ", o.models,
                        " and ", o.context_buckets);
    if (o.rank_w == 0 || o.rank_w > std::min(o.hidden_dim, d))
      return make_error(errc::invalid_argument, "router rank_w ", o.rank_w, " is outside [1, ",
                        std::min(o.hidden_dim, d), "]");
    if (o.rank_u == 0 || o.rank_u > o.hidden_dim)
      return make_error(errc::invalid_argument, "router rank_u ", o.rank_u, " is outside [1, ", o.hidden_dim, "]");
    if (!(o.sparsity >= 0.0 && o.sparsity < 1.0))
      return make_error(errc::invalid_argument, "router sparsity ", o.sparsity, " is outside [0, 1)");
    if (!(o.temperature_min < o.temperature_max) || !(o.top_p_min < o.top_p_max) ||
        !std::isfinite(o.temperature_max - o.temperature_min) || !std::isfinite(o.top_p_max - o.top_p_min))
      return make_error(errc::invalid_argument, "router temperature range [", o.temperature_min, ", ",
                        o.temperature_max, "] or top-p range [", o.top_p_min, ", ", o.top_p_max, "] is empty");
    if (!std::isfinite(o.zeta_init) || !std::isfinite(o.nu_init) ||
        !(o.confidence_weight >= 0.0 && std::isfinite(o.confidence_weight)))
      return make_error(errc::invalid_argument, "router zeta_init ", o.zeta_init, ", nu_init ", o.nu_init,
                        " must be finite and confidence_weight ", o.confidence_weight, " finite and >= 0");
    fastgrnn_router r;
    r.o_ = o;
    r.input_dim_ = d;
    r.layout_ = make_layout(o);
    const std::size_t n = r.layout_.total;
    RUVLLM_TRY_ASSIGN(r.opt_, adam<T>::create(n, o.optimizer));
    RUVLLM_TRY_ASSIGN(r.ewc_, ewc<T>::create(n, o.ewc));
    r.params_.assign(n, T{0});
    r.grad_.assign(n, T{0});
    r.init_weights();
    return r;
  }

  [[nodiscard]] const router_options& options() const noexcept { return o_; }
  [[nodiscard]] const router_layout& layout() const noexcept { return layout_; }
  [[nodiscard]] std::size_t input_dim() const noexcept { return input_dim_; }
  [[nodiscard]] std::size_t parameter_count() const noexcept { return params_.size(); }
  /// Bumped by every parameter change (train, observe, sparsify, set_parameters).
  [[nodiscard]] std::uint64_t version() const noexcept { return version_; }
  [[nodiscard]] std::span<const T> parameters() const noexcept { return params_; }
  /// Gradient of the last train()/observe() step or gradient() call.
  [[nodiscard]] std::span<const T> last_gradient() const noexcept { return grad_; }
  [[nodiscard]] const ewc<T>& ewc_state() const noexcept { return ewc_; }
  [[nodiscard]] ewc<T>& ewc_state() noexcept { return ewc_; }
  [[nodiscard]] adam<T>& optimizer() noexcept { return opt_; }

  /// Replaces all parameters (a checkpoint, a retrieved policy). Errors: size
  /// mismatch or a non-finite value, with nothing changed.
  [[nodiscard]] result<void> set_parameters(std::span<const T> p) {
    if (p.size() != params_.size())
      return make_error(errc::invalid_argument, "router parameter count ", p.size(), " differs from ", params_.size());
    for (std::size_t i = 0; i < p.size(); ++i)
      if (!std::isfinite(p[i])) return make_error(errc::invalid_argument, "router parameter ", i, " is not finite");
    std::copy(p.begin(), p.end(), params_.begin());
    apply_mask();
    ++version_;
    return {};
  }

  /// The sparsity mask over the parameters (empty until sparsify()).
  [[nodiscard]] std::span<const std::uint8_t> sparsity_mask() const noexcept { return mask_; }
  [[nodiscard]] const adam<T>& optimizer() const noexcept { return opt_; }

  /// Restores a checkpoint: parameters, sparsity mask (empty or one 0/1 byte
  /// per parameter), optimizer and EWC++ state, version. All or nothing:
  /// every input is validated before anything changes. Errors: sizes, non-
  /// finite values, mask bytes other than 0 and 1.
  [[nodiscard]] result<void> restore(std::span<const T> params, std::span<const std::uint8_t> mask,
                                     std::span<const T> adam_m, std::span<const T> adam_v, std::uint64_t adam_steps,
                                     std::span<const T> fisher_running, std::span<const T> fisher_penalty,
                                     std::span<const T> anchor, bool anchored, std::size_t consolidations,
                                     std::uint64_t version) {
    const std::size_t n = params_.size();
    if (params.size() != n || (!mask.empty() && mask.size() != n))
      return make_error(errc::invalid_argument, "router checkpoint of ", params.size(), " parameters and a mask of ",
                        mask.size(), ", need ", n);
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(params[i]))
        return make_error(errc::invalid_argument, "router parameter ", i, " is not finite");
    for (std::size_t i = 0; i < mask.size(); ++i)
      if (mask[i] > 1) return make_error(errc::invalid_argument, "router mask byte ", i, " is ", int{mask[i]});
    // Validate both optimizer and EWC++ state on copies first, so a bad
    // second half cannot leave the first restored.
    adam<T> opt = opt_;
    ewc<T> e = ewc_;
    RUVLLM_TRY(opt.restore(adam_m, adam_v, adam_steps));
    RUVLLM_TRY(e.restore(fisher_running, fisher_penalty, anchor, anchored, consolidations));
    std::copy(params.begin(), params.end(), params_.begin());
    mask_.assign(mask.begin(), mask.end());
    opt_ = std::move(opt);
    ewc_ = std::move(e);
    version_ = version;
    return {};
  }

  /// Scratch for one thread; allocates.
  [[nodiscard]] workspace make_workspace() const {
    workspace w;
    const std::size_t h = o_.hidden_dim;
    w.x.assign(input_dim_, T{0});
    w.w2x.assign(o_.rank_w, T{0});
    w.a.assign(h, T{0});
    w.hs.assign((o_.steps + 1) * h, T{0});
    w.zs.assign(o_.steps * h, T{0});
    w.cs.assign(o_.steps * h, T{0});
    w.u2h.assign(o_.steps * o_.rank_u, T{0});
    w.model_probs.assign(o_.models, T{0});
    w.bucket_probs.assign(o_.context_buckets, T{0});
    w.dh.assign(h, T{0});
    w.dh_prev.assign(h, T{0});
    w.da.assign(h, T{0});
    w.dv.assign(o_.rank_u, T{0});
    w.dw2x.assign(o_.rank_w, T{0});
    w.tmp.assign(h, T{0});
    return w;
  }

  /// Whether ws was made for a router of this shape.
  [[nodiscard]] bool fits(const workspace& ws) const noexcept {
    return ws.x.size() == input_dim_ && ws.hs.size() == (o_.steps + 1) * o_.hidden_dim &&
           ws.u2h.size() == o_.steps * o_.rank_u && ws.w2x.size() == o_.rank_w && ws.model_probs.size() == o_.models &&
           ws.bucket_probs.size() == o_.context_buckets;
  }

  /// Routes one query: query.size() == query_dim, extra.size() == extra_dim
  /// (preconditions, asserted in debug builds). The model softmax stays in
  /// ws.model_probs. Allocation-free.
  routing_decision route(std::span<const T> query, std::span<const T> extra, workspace& ws) const noexcept {
    forward(query, extra, ws);
    routing_decision d;
    const auto argmax = [](const std::vector<T>& v) {
      return static_cast<std::uint32_t>(std::max_element(v.begin(), v.end()) - v.begin());
    };
    d.model = argmax(ws.model_probs);
    d.model_probability = static_cast<float>(ws.model_probs[d.model]);
    d.context_bucket = argmax(ws.bucket_probs);
    d.temperature = static_cast<float>(o_.temperature_min + (o_.temperature_max - o_.temperature_min) * ws.temp_sig);
    d.top_p = static_cast<float>(o_.top_p_min + (o_.top_p_max - o_.top_p_min) * ws.top_p_sig);
    d.confidence = static_cast<float>(ws.conf_sig);
    return d;
  }

  /// The data loss of `target` at the current parameters (no EWC++ penalty),
  /// its gradient left in last_gradient(). For checks and diagnostics.
  T gradient(std::span<const T> query, std::span<const T> extra, const router_target& target, workspace& ws) noexcept {
    forward(query, extra, ws);
    return backward(target, ws);
  }

  /// One optimizer step toward `target`, with the EWC++ penalty once
  /// consolidated. Returns the data loss before the step. Allocation-free.
  T train(std::span<const T> query, std::span<const T> extra, const router_target& target, workspace& ws) noexcept {
    forward(query, extra, ws);
    const T loss = backward(target, ws);
    step();
    return loss;
  }

  /// Learns from one served request: `model_used` earned `quality` (in
  /// [0, 1]). Cross-entropy toward model_used weighted by the advantage of
  /// quality over the predicted confidence; the confidence head regresses to
  /// quality. Returns the advantage. Allocation-free.
  T observe(std::span<const T> query, std::span<const T> extra, std::uint32_t model_used, double quality,
            workspace& ws) noexcept {
    RUVLLM_ASSERT(model_used < o_.models);
    forward(query, extra, ws);
    const T advantage = static_cast<T>(quality) - ws.conf_sig;
    router_target t;
    t.model = static_cast<std::int32_t>(model_used);
    t.model_weight = static_cast<double>(advantage);
    t.quality = std::clamp(quality, 0.0, 1.0);
    t.quality_weight = o_.confidence_weight;
    static_cast<void>(backward(t, ws));
    step();
    return advantage;
  }

  /// Ends a task for EWC++: anchors the current parameters.
  void consolidate() noexcept { ewc_.consolidate(params_); }

  /// Hard-thresholds W1, W2, U1 and U2 to keep the largest 1 - sparsity of
  /// each by magnitude (the paper's iterative hard thresholding); later
  /// steps keep the zeroed entries at zero. Allocates the mask once.
  void sparsify() {
    if (o_.sparsity <= 0.0) return;
    mask_.assign(params_.size(), 1);
    const std::size_t bounds[5] = {layout_.w1, layout_.w2, layout_.u1, layout_.u2, layout_.b_z};
    std::vector<T> mags;
    for (int b = 0; b < 4; ++b) {
      const std::size_t lo = bounds[b], hi = bounds[b + 1], n = hi - lo;
      const auto keep = static_cast<std::size_t>(std::ceil((1.0 - o_.sparsity) * static_cast<double>(n)));
      if (keep >= n) continue;
      mags.assign(n, T{0});
      for (std::size_t i = 0; i < n; ++i) mags[i] = std::abs(params_[lo + i]);
      std::nth_element(mags.begin(), mags.begin() + static_cast<std::ptrdiff_t>(n - keep), mags.end());
      const T threshold = mags[n - keep];
      // Ties at the threshold: keep exactly `keep` entries, first come first kept.
      std::size_t kept = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (std::abs(params_[lo + i]) > threshold) ++kept;
      for (std::size_t i = 0; i < n; ++i) {
        const T m = std::abs(params_[lo + i]);
        bool k = m > threshold;
        if (!k && m == threshold && kept < keep) {
          k = true;
          ++kept;
        }
        mask_[lo + i] = k ? 1 : 0;
      }
    }
    apply_mask();
    ++version_;
  }
  /// Nonzero entries among W1, W2, U1, U2.
  [[nodiscard]] std::size_t nonzero_factors() const noexcept {
    return static_cast<std::size_t>(std::count_if(
        params_.begin(), params_.begin() + static_cast<std::ptrdiff_t>(layout_.b_z), [](T v) { return v != T{0}; }));
  }

 private:
  static router_layout make_layout(const router_options& o) {
    router_layout l{};
    const std::size_t h = o.hidden_dim, d = o.query_dim + o.extra_dim;
    std::size_t at = 0;
    const auto take = [&](std::size_t n) {
      const std::size_t here = at;
      at += n;
      return here;
    };
    l.w1 = take(h * o.rank_w);
    l.w2 = take(o.rank_w * d);
    l.u1 = take(h * o.rank_u);
    l.u2 = take(o.rank_u * h);
    l.b_z = take(h);
    l.b_h = take(h);
    l.zeta = take(1);
    l.nu = take(1);
    l.model_w = take(o.models * h);
    l.model_b = take(o.models);
    l.bucket_w = take(o.context_buckets * h);
    l.bucket_b = take(o.context_buckets);
    l.temp_w = take(h);
    l.temp_b = take(1);
    l.top_p_w = take(h);
    l.top_p_b = take(1);
    l.conf_w = take(h);
    l.conf_b = take(1);
    l.total = at;
    return l;
  }

  void init_weights() {
    std::uint64_t s = o_.seed;
    const std::size_t h = o_.hidden_dim;
    // Uniform with variance 1/fan_in per factor, so W = W1 W2 has entries of
    // variance 1/input_dim and W x starts at unit scale.
    const auto fill = [&](std::size_t at, std::size_t n, double fan_in, double gain) {
      const double a = gain * std::sqrt(3.0 / fan_in);
      for (std::size_t i = 0; i < n; ++i) params_[at + i] = static_cast<T>(a * detail::uniform_pm1(s));
    };
    fill(layout_.w1, h * o_.rank_w, static_cast<double>(o_.rank_w), 1.0);
    fill(layout_.w2, o_.rank_w * input_dim_, static_cast<double>(input_dim_), 1.0);
    fill(layout_.u1, h * o_.rank_u, static_cast<double>(o_.rank_u), 1.0);
    fill(layout_.u2, o_.rank_u * h, static_cast<double>(h), 1.0);
    params_[layout_.zeta] = static_cast<T>(o_.zeta_init);
    params_[layout_.nu] = static_cast<T>(o_.nu_init);
    // Small heads: the first decisions are near-uniform, which is what
    // exploration on live traffic wants.
    fill(layout_.model_w, o_.models * h, static_cast<double>(h), 0.1);
    fill(layout_.bucket_w, o_.context_buckets * h, static_cast<double>(h), 0.1);
    fill(layout_.temp_w, h, static_cast<double>(h), 0.1);
    fill(layout_.top_p_w, h, static_cast<double>(h), 0.1);
    fill(layout_.conf_w, h, static_cast<double>(h), 0.1);
  }

  void forward(std::span<const T> query, std::span<const T> extra, workspace& ws) const noexcept {
    RUVLLM_ASSERT(query.size() == o_.query_dim && extra.size() == o_.extra_dim);
    RUVLLM_ASSERT(ws.x.size() == input_dim_ && ws.hs.size() == (o_.steps + 1) * o_.hidden_dim);
    const std::size_t h = o_.hidden_dim, rw = o_.rank_w, ru = o_.rank_u;
    const T* p = params_.data();
    std::copy(query.begin(), query.end(), ws.x.begin());
    std::copy(extra.begin(), extra.end(), ws.x.begin() + static_cast<std::ptrdiff_t>(query.size()));
    detail::matvec(p + layout_.w2, ws.x.data(), ws.w2x.data(), rw, input_dim_);
    detail::matvec(p + layout_.w1, ws.w2x.data(), ws.a.data(), h, rw);
    const T zeta = detail::sigmoid(p[layout_.zeta]);
    const T nu = detail::sigmoid(p[layout_.nu]);
    std::fill(ws.hs.begin(), ws.hs.begin() + static_cast<std::ptrdiff_t>(h), T{0});
    T* uh = ws.tmp.data();
    for (std::size_t t = 0; t < o_.steps; ++t) {
      const T* hp = ws.hs.data() + t * h;
      T* hn = ws.hs.data() + (t + 1) * h;
      T* v = ws.u2h.data() + t * ru;
      T* z = ws.zs.data() + t * h;
      T* c = ws.cs.data() + t * h;
      detail::matvec(p + layout_.u2, hp, v, ru, h);
      detail::matvec(p + layout_.u1, v, uh, h, ru);
      for (std::size_t i = 0; i < h; ++i) {
        const T pre = ws.a[i] + uh[i];
        z[i] = detail::sigmoid(pre + p[layout_.b_z + i]);
        c[i] = std::tanh(pre + p[layout_.b_h + i]);
        hn[i] = (zeta * (T{1} - z[i]) + nu) * c[i] + z[i] * hp[i];
      }
    }
    const T* hf = ws.hs.data() + o_.steps * h;
    detail::matvec(p + layout_.model_w, hf, ws.model_probs.data(), o_.models, h);
    for (std::size_t m = 0; m < o_.models; ++m) ws.model_probs[m] += p[layout_.model_b + m];
    detail::softmax(ws.model_probs.data(), o_.models);
    detail::matvec(p + layout_.bucket_w, hf, ws.bucket_probs.data(), o_.context_buckets, h);
    for (std::size_t m = 0; m < o_.context_buckets; ++m) ws.bucket_probs[m] += p[layout_.bucket_b + m];
    detail::softmax(ws.bucket_probs.data(), o_.context_buckets);
    const auto head = [&](std::size_t w, std::size_t b) {
      T s = p[b];
      for (std::size_t i = 0; i < h; ++i) s += p[w + i] * hf[i];
      return s;
    };
    ws.temp_sig = detail::sigmoid(head(layout_.temp_w, layout_.temp_b));
    ws.top_p_sig = detail::sigmoid(head(layout_.top_p_w, layout_.top_p_b));
    ws.conf_logit = head(layout_.conf_w, layout_.conf_b);
    ws.conf_sig = detail::sigmoid(ws.conf_logit);
  }

  // Loss of `target` for the activations in ws; gradient into grad_ (overwritten).
  T backward(const router_target& tg, workspace& ws) noexcept {
    const std::size_t h = o_.hidden_dim, rw = o_.rank_w, ru = o_.rank_u;
    const T* p = params_.data();
    T* g = grad_.data();
    std::fill(grad_.begin(), grad_.end(), T{0});
    std::fill(ws.dh.begin(), ws.dh.end(), T{0});
    std::fill(ws.da.begin(), ws.da.end(), T{0});
    const T* hf = ws.hs.data() + o_.steps * h;
    T loss{0};
    // Softmax head. Weight w >= 0: w CE toward the target, d/dlogits = w (p - onehot).
    // w < 0: |w| (-log(1 - p_target)), pushing the target down with a gradient
    // that vanishes as p_target -> 0. (A negatively weighted CE would be
    // unbounded below: its gradient never fades, the logits grow without end
    // and the cell saturates, which undid learned routes after a few thousand
    // bandit updates.)
    const auto ce_head = [&](const std::vector<T>& probs, std::size_t n, std::int32_t target, double weight,
                             std::size_t w_at, std::size_t b_at) {
      if (target < 0 || weight == 0.0) return;
      RUVLLM_ASSERT(static_cast<std::size_t>(target) < n);
      const auto a = static_cast<std::size_t>(target);
      const T wt = static_cast<T>(std::abs(weight));
      T rest{0};  // 1 - p_a, summed from the other classes so it keeps its precision
      for (std::size_t k = 0; k < n; ++k)
        if (k != a) rest += probs[k];
      const T tiny = std::numeric_limits<T>::min();
      if (weight > 0.0) {
        loss += -wt * std::log(std::max(probs[a], tiny));
      } else {
        loss += -wt * std::log(std::max(rest, tiny));
      }
      const T ratio = probs[a] / std::max(rest, tiny);
      for (std::size_t k = 0; k < n; ++k) {
        const T dl =
            weight > 0.0 ? wt * (probs[k] - (k == a ? T{1} : T{0})) : wt * (k == a ? probs[a] : -ratio * probs[k]);
        g[b_at + k] += dl;
        for (std::size_t i = 0; i < h; ++i) {
          g[w_at + k * h + i] += dl * hf[i];
          ws.dh[i] += dl * p[w_at + k * h + i];
        }
      }
    };
    ce_head(ws.model_probs, o_.models, tg.model, tg.model_weight, layout_.model_w, layout_.model_b);
    ce_head(ws.bucket_probs, o_.context_buckets, tg.context_bucket, tg.bucket_weight, layout_.bucket_w,
            layout_.bucket_b);
    const auto scalar_head = [&](T d_logit, std::size_t w_at, std::size_t b_at) {
      g[b_at] += d_logit;
      for (std::size_t i = 0; i < h; ++i) {
        g[w_at + i] += d_logit * hf[i];
        ws.dh[i] += d_logit * p[w_at + i];
      }
    };
    if (!std::isnan(tg.temperature)) {
      const T span = static_cast<T>(o_.temperature_max - o_.temperature_min);
      const T diff = static_cast<T>(o_.temperature_min) + span * ws.temp_sig - static_cast<T>(tg.temperature);
      loss += T{0.5} * diff * diff;
      scalar_head(diff * span * ws.temp_sig * (T{1} - ws.temp_sig), layout_.temp_w, layout_.temp_b);
    }
    if (!std::isnan(tg.top_p)) {
      const T span = static_cast<T>(o_.top_p_max - o_.top_p_min);
      const T diff = static_cast<T>(o_.top_p_min) + span * ws.top_p_sig - static_cast<T>(tg.top_p);
      loss += T{0.5} * diff * diff;
      scalar_head(diff * span * ws.top_p_sig * (T{1} - ws.top_p_sig), layout_.top_p_w, layout_.top_p_b);
    }
    if (!std::isnan(tg.quality)) {
      const T q = static_cast<T>(tg.quality), wq = static_cast<T>(tg.quality_weight);
      loss += wq * (q * detail::softplus(-ws.conf_logit) + (T{1} - q) * detail::softplus(ws.conf_logit));
      scalar_head(wq * (ws.conf_sig - q), layout_.conf_w, layout_.conf_b);
    }

    // Back through the cell steps.
    const T zeta = detail::sigmoid(p[layout_.zeta]);
    const T nu = detail::sigmoid(p[layout_.nu]);
    T d_zeta{0}, d_nu{0};
    T* dh_prev = ws.dh_prev.data();
    T* dpre = ws.tmp.data();  // gradient of the shared pre-activation W x + U h
    for (std::size_t t = o_.steps; t-- > 0;) {
      const T* hp = ws.hs.data() + t * h;
      const T* z = ws.zs.data() + t * h;
      const T* c = ws.cs.data() + t * h;
      const T* v = ws.u2h.data() + t * ru;
      for (std::size_t i = 0; i < h; ++i) {
        const T dh = ws.dh[i];
        const T gate = zeta * (T{1} - z[i]) + nu;
        d_zeta += dh * (T{1} - z[i]) * c[i];
        d_nu += dh * c[i];
        const T dz = dh * (hp[i] - zeta * c[i]);
        const T dc = dh * gate;
        const T dpz = dz * z[i] * (T{1} - z[i]);
        const T dph = dc * (T{1} - c[i] * c[i]);
        g[layout_.b_z + i] += dpz;
        g[layout_.b_h + i] += dph;
        dpre[i] = dpz + dph;
        ws.da[i] += dpre[i];
        dh_prev[i] = dh * z[i];  // the direct path z * h_{t-1}
      }
      // U = U1 U2: dU1 += dpre (U2 h)^T, dv = U1^T dpre, dU2 += dv h^T, dh_prev += U2^T dv.
      detail::outer_add(g + layout_.u1, dpre, v, h, ru);
      std::fill(ws.dv.begin(), ws.dv.end(), T{0});
      detail::matvec_t_add(p + layout_.u1, dpre, ws.dv.data(), h, ru);
      detail::outer_add(g + layout_.u2, ws.dv.data(), hp, ru, h);
      detail::matvec_t_add(p + layout_.u2, ws.dv.data(), dh_prev, ru, h);
      std::copy(dh_prev, dh_prev + h, ws.dh.begin());
    }
    // W x is shared by every step, so its gradient is the sum over steps (da):
    // dW1 += da (W2 x)^T, dW2 += (W1^T da) x^T.
    detail::outer_add(g + layout_.w1, ws.da.data(), ws.w2x.data(), h, rw);
    std::fill(ws.dw2x.begin(), ws.dw2x.end(), T{0});
    detail::matvec_t_add(p + layout_.w1, ws.da.data(), ws.dw2x.data(), h, rw);
    detail::outer_add(g + layout_.w2, ws.dw2x.data(), ws.x.data(), rw, input_dim_);
    g[layout_.zeta] += d_zeta * zeta * (T{1} - zeta);
    g[layout_.nu] += d_nu * nu * (T{1} - nu);
    if (!mask_.empty())
      for (std::size_t i = 0; i < layout_.factors_end(); ++i)
        if (mask_[i] == 0) g[i] = T{0};
    return loss;
  }

  void step() noexcept {
    ewc_.accumulate(grad_);
    ewc_.add_penalty_gradient(params_, grad_);
    opt_.step(params_, grad_);
    apply_mask();
    ++version_;
  }

  void apply_mask() noexcept {
    if (mask_.empty()) return;
    for (std::size_t i = 0; i < layout_.factors_end(); ++i)
      if (mask_[i] == 0) params_[i] = T{0};
  }

  router_options o_{};
  std::size_t input_dim_ = 0;
  router_layout layout_{};
  std::vector<T> params_;
  std::vector<T> grad_;
  std::vector<std::uint8_t> mask_;
  adam<T> opt_;
  ewc<T> ewc_;
  std::uint64_t version_ = 0;
};

/// Picks a model for exploration on live traffic: with probability epsilon a
/// uniform choice, otherwise a draw from the router's softmax. u1, u2 are
/// uniform numbers in [0, 1) supplied by the caller (the library holds no
/// global random state).
template <class T>
[[nodiscard]] std::uint32_t sample_model(std::span<const T> probs, double epsilon, double u1, double u2) noexcept {
  RUVLLM_ASSERT(!probs.empty());
  const std::size_t n = probs.size();
  if (u1 < epsilon)
    return static_cast<std::uint32_t>(std::min(n - 1, static_cast<std::size_t>(u2 * static_cast<double>(n))));
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    acc += static_cast<double>(probs[i]);
    if (u2 < acc) return static_cast<std::uint32_t>(i);
  }
  return static_cast<std::uint32_t>(n - 1);
}

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_ROUTER_HPP
