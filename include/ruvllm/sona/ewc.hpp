#ifndef RUVLLM_SONA_EWC_HPP
#define RUVLLM_SONA_EWC_HPP

// EWC++: elastic weight consolidation with an online Fisher estimate, the
// regularizer that lets SONA keep learning without forgetting what earlier
// traffic taught it.
//
// Three diagonal vectors over one flat parameter array:
//   running   F  <- gamma F + (1 - gamma) g^2 after every training gradient g
//             (the EWC++ moving average: old tasks fade instead of piling up);
//   anchor    theta*, the parameters at the last consolidation;
//   penalty   F* <- task_decay F* + F at each consolidation, the importance
//             the penalty uses. Keeping it apart from the running estimate
//             matters: while a new task trains, F fills with the new task's
//             gradients, and a penalty weighted by F alone would stop
//             protecting the old task after a few thousand steps.
// Penalty  lambda/2 * sum_i F*_i (theta_i - theta*_i)^2, its gradient
//          lambda * F*_i (theta_i - theta*_i).
//
// Layout: three std::vector<T> of the parameter count, allocated once by the
// constructor; every other call is allocation-free and O(n).
// Thread-safety: none; the owner (the router) serializes calls.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"

namespace ruvllm::sona {

/// EWC++ settings.
struct ewc_options {
  double lambda = 0.0;      ///< penalty strength; 0 disables the penalty
  double gamma = 0.99;      ///< running Fisher decay per gradient, in [0, 1)
  double task_decay = 1.0;  ///< weight of earlier consolidations in F*, in [0, 1]
};

/// The EWC++ state over `size()` parameters of type T (float or double).
template <class T>
class ewc {
 public:
  ewc() = default;

  /// n parameters; allocates three vectors of n. Errors: gamma outside [0, 1),
  /// task_decay outside [0, 1], negative lambda.
  [[nodiscard]] static result<ewc> create(std::size_t n, const ewc_options& options) {
    if (!(options.gamma >= 0.0 && options.gamma < 1.0))
      return make_error(errc::invalid_argument, "ewc gamma ", options.gamma, " is outside [0, 1)");
    if (!(options.task_decay >= 0.0 && options.task_decay <= 1.0))
      return make_error(errc::invalid_argument, "ewc task_decay ", options.task_decay, " is outside [0, 1]");
    if (!(options.lambda >= 0.0))
      return make_error(errc::invalid_argument, "ewc lambda ", options.lambda, " is negative");
    ewc e;
    e.options_ = options;
    e.running_.assign(n, T{0});
    e.penalty_fisher_.assign(n, T{0});
    e.anchor_.assign(n, T{0});
    return e;
  }

  [[nodiscard]] std::size_t size() const noexcept { return running_.size(); }
  [[nodiscard]] const ewc_options& options() const noexcept { return options_; }
  /// Sets the penalty strength (>= 0) without touching the estimates.
  void set_lambda(double lambda) noexcept {
    RUVLLM_ASSERT(lambda >= 0.0);
    options_.lambda = lambda;
  }
  /// True once consolidate() has run: the penalty has an anchor.
  [[nodiscard]] bool anchored() const noexcept { return anchored_; }
  [[nodiscard]] std::size_t consolidations() const noexcept { return consolidations_; }

  /// F <- gamma F + (1 - gamma) g^2 with g the data-loss gradient (without the
  /// penalty's own gradient, which carries no information about the data).
  void accumulate(std::span<const T> grad) noexcept {
    RUVLLM_ASSERT(grad.size() == running_.size());
    const T g = static_cast<T>(options_.gamma);
    const T one_minus = T{1} - g;
    for (std::size_t i = 0; i < running_.size(); ++i) running_[i] = g * running_[i] + one_minus * grad[i] * grad[i];
  }

  /// Ends a task: theta* <- params and F* <- task_decay F* + F.
  void consolidate(std::span<const T> params) noexcept {
    RUVLLM_ASSERT(params.size() == anchor_.size());
    std::copy(params.begin(), params.end(), anchor_.begin());
    const T d = static_cast<T>(options_.task_decay);
    for (std::size_t i = 0; i < penalty_fisher_.size(); ++i) penalty_fisher_[i] = d * penalty_fisher_[i] + running_[i];
    anchored_ = true;
    ++consolidations_;
  }

  /// lambda/2 * sum F* (theta - theta*)^2; 0 before the first consolidation.
  [[nodiscard]] T penalty(std::span<const T> params) const noexcept {
    RUVLLM_ASSERT(params.size() == anchor_.size());
    if (!anchored_ || options_.lambda == 0.0) return T{0};
    T sum{0};
    for (std::size_t i = 0; i < anchor_.size(); ++i) {
      const T d = params[i] - anchor_[i];
      sum += penalty_fisher_[i] * d * d;
    }
    return static_cast<T>(options_.lambda) * T{0.5} * sum;
  }

  /// grad += lambda F* (theta - theta*), the penalty's gradient.
  void add_penalty_gradient(std::span<const T> params, std::span<T> grad) const noexcept {
    RUVLLM_ASSERT(params.size() == anchor_.size() && grad.size() == anchor_.size());
    if (!anchored_ || options_.lambda == 0.0) return;
    const T l = static_cast<T>(options_.lambda);
    for (std::size_t i = 0; i < anchor_.size(); ++i) grad[i] += l * penalty_fisher_[i] * (params[i] - anchor_[i]);
  }

  /// Restores saved estimates (a checkpoint). Errors: sizes other than
  /// size(), or non-finite values, or negative Fisher entries.
  [[nodiscard]] result<void> restore(std::span<const T> running, std::span<const T> penalty_fisher,
                                     std::span<const T> anchor, bool anchored, std::size_t consolidations) {
    const std::size_t n = running_.size();
    if (running.size() != n || penalty_fisher.size() != n || anchor.size() != n)
      return make_error(errc::invalid_argument, "ewc state of ", running.size(), " / ", penalty_fisher.size(), " / ",
                        anchor.size(), " values, need ", n);
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(running[i]) || !std::isfinite(penalty_fisher[i]) || !std::isfinite(anchor[i]) ||
          running[i] < T{0} || penalty_fisher[i] < T{0})
        return make_error(errc::invalid_argument, "ewc entry ", i, " is not finite (or a negative Fisher value)");
    std::copy(running.begin(), running.end(), running_.begin());
    std::copy(penalty_fisher.begin(), penalty_fisher.end(), penalty_fisher_.begin());
    std::copy(anchor.begin(), anchor.end(), anchor_.begin());
    anchored_ = anchored;
    consolidations_ = consolidations;
    return {};
  }

  /// Forgets every estimate and the anchor.
  void reset() noexcept {
    std::fill(running_.begin(), running_.end(), T{0});
    std::fill(penalty_fisher_.begin(), penalty_fisher_.end(), T{0});
    std::fill(anchor_.begin(), anchor_.end(), T{0});
    anchored_ = false;
    consolidations_ = 0;
  }

  [[nodiscard]] std::span<const T> running_fisher() const noexcept { return running_; }
  [[nodiscard]] std::span<const T> penalty_fisher() const noexcept { return penalty_fisher_; }
  [[nodiscard]] std::span<const T> anchor() const noexcept { return anchor_; }

 private:
  ewc_options options_{};
  std::vector<T> running_;
  std::vector<T> penalty_fisher_;
  std::vector<T> anchor_;
  bool anchored_ = false;
  std::size_t consolidations_ = 0;
};

}  // namespace ruvllm::sona

#endif  // RUVLLM_SONA_EWC_HPP
