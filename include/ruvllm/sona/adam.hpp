#ifndef RUVLLM_SONA_ADAM_HPP
#define RUVLLM_SONA_ADAM_HPP

// The optimizer SONA's learners share: Adam (Kingma & Ba) over one flat
// parameter array, or plain SGD when `sgd` is set. One flat array keeps the
// update a single loop and lets EWC++ and checkpoints treat every learner the
// same way.
//
// Layout: first and second moments, two std::vector<T> of the parameter
// count, allocated by create(); step() never allocates.
// Thread-safety: none; the learner that owns it serializes calls.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"

namespace ruvllm::sona {

/// Optimizer settings.
struct adam_options {
  double learning_rate = 1e-2;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  bool sgd = false;  ///< plain SGD (param -= lr * grad) instead of Adam
};

/// Adam / SGD state for n parameters of type T.
template <class T>
class adam {
 public:
  adam() = default;

  /// Errors: learning_rate <= 0, betas outside [0, 1), epsilon <= 0.
  [[nodiscard]] static result<adam> create(std::size_t n, const adam_options& options) {
    if (!(options.learning_rate > 0.0))
      return make_error(errc::invalid_argument, "learning rate ", options.learning_rate, " is not positive");
    if (!(options.beta1 >= 0.0 && options.beta1 < 1.0 && options.beta2 >= 0.0 && options.beta2 < 1.0))
      return make_error(errc::invalid_argument, "adam betas ", options.beta1, ", ", options.beta2,
                        " are outside [0, 1)");
    if (!(options.epsilon > 0.0)) return make_error(errc::invalid_argument, "adam epsilon ", options.epsilon, " <= 0");
    adam a;
    a.options_ = options;
    a.m_.assign(n, T{0});
    a.v_.assign(n, T{0});
    return a;
  }

  [[nodiscard]] const adam_options& options() const noexcept { return options_; }
  void set_learning_rate(double lr) noexcept {
    RUVLLM_ASSERT(lr > 0.0);
    options_.learning_rate = lr;
  }
  [[nodiscard]] std::uint64_t steps() const noexcept { return t_; }

  /// params -= update(grad), scaled by `scale` (e.g. a quality weight).
  void step(std::span<T> params, std::span<const T> grad, double scale = 1.0) noexcept {
    RUVLLM_ASSERT(params.size() == m_.size() && grad.size() == m_.size());
    ++t_;
    const double lr = options_.learning_rate * scale;
    if (options_.sgd) {
      const T l = static_cast<T>(lr);
      for (std::size_t i = 0; i < params.size(); ++i) params[i] -= l * grad[i];
      return;
    }
    const T b1 = static_cast<T>(options_.beta1);
    const T b2 = static_cast<T>(options_.beta2);
    const double c1 = 1.0 - std::pow(options_.beta1, static_cast<double>(t_));
    const double c2 = 1.0 - std::pow(options_.beta2, static_cast<double>(t_));
    // Bias corrections folded into the step size, as in the paper's
    // "efficient" form: one multiply per element instead of two divides.
    const T alpha = static_cast<T>(lr * std::sqrt(c2) / c1);
    const T eps = static_cast<T>(options_.epsilon * std::sqrt(c2));
    for (std::size_t i = 0; i < params.size(); ++i) {
      m_[i] = b1 * m_[i] + (T{1} - b1) * grad[i];
      v_[i] = b2 * v_[i] + (T{1} - b2) * grad[i] * grad[i];
      params[i] -= alpha * m_[i] / (std::sqrt(v_[i]) + eps);
    }
  }

  [[nodiscard]] std::span<const T> first_moment() const noexcept { return m_; }
  [[nodiscard]] std::span<const T> second_moment() const noexcept { return v_; }

  /// Restores saved moments and step count (a checkpoint). Errors: sizes
  /// other than the parameter count, or non-finite / negative second moments.
  [[nodiscard]] result<void> restore(std::span<const T> m, std::span<const T> v, std::uint64_t steps) {
    if (m.size() != m_.size() || v.size() != v_.size())
      return make_error(errc::invalid_argument, "adam state of ", m.size(), " / ", v.size(), " moments, need ",
                        m_.size());
    for (std::size_t i = 0; i < m.size(); ++i)
      if (!std::isfinite(m[i]) || !std::isfinite(v[i]) || v[i] < T{0})
        return make_error(errc::invalid_argument, "adam moment ", i, " is not finite (or negative)");
    std::copy(m.begin(), m.end(), m_.begin());
    std::copy(v.begin(), v.end(), v_.begin());
    t_ = steps;
    return {};
  }

  /// Clears the moments and the step count.
  void reset() noexcept {
    for (auto& x : m_) x = T{0};
    for (auto& x : v_) x = T{0};
    t_ = 0;
  }

 private:
  adam_options options_{};
  std::vector<T> m_;
  std::vector<T> v_;
  std::uint64_t t_ = 0;
};

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_ADAM_HPP
