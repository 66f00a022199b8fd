#ifndef RUVLLM_MODEL_SAMPLER_HPP
#define RUVLLM_MODEL_SAMPLER_HPP

// Token sampling from logits, in llama.cpp's default order: repetition /
// frequency / presence penalties over the last tokens, top-k, top-p, min-p,
// temperature, then a draw from the remaining softmax with a seeded
// generator. Temperature 0 is greedy (argmax, lowest id on ties).
//
// Logits a model cannot mean (NaN, from a broken model or a hostile weight
// file; infinities; and what the penalties make of them) are made orderable
// first: NaN as -inf, never drawn; +inf as the largest float, so several of
// them share the top equally. When no candidate is finite, nothing is more
// likely than anything else: sample() returns the lowest id, as greedy does.
//
// Reproducibility: the generator is xoshiro256** seeded by splitmix64, and
// the uniform draw is (bits >> 11) * 2^-53, so a seed gives the same tokens
// with every standard library and platform.
// Allocation: create() sizes every buffer for the vocabulary; sample() and
// accept() never allocate.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "ruvllm/core/error.hpp"

namespace ruvllm::model {

using sampler_token = std::int32_t;

/// Sampling settings (llama.cpp's names and meanings). Neutral values turn a
/// stage off: top_k 0, top_p 1, min_p 0, repeat_penalty 1, frequency and
/// presence 0.
struct sampler_params {
  float temperature = 0.8f;         ///< >= 0; 0 means greedy
  std::size_t top_k = 40;           ///< keep the k most likely (0: all)
  float top_p = 0.95f;              ///< keep the smallest set with probability >= top_p, in (0, 1]
  float min_p = 0.05f;              ///< drop tokens below min_p * p(most likely), in [0, 1]
  float repeat_penalty = 1.0f;      ///< > 0; divides positive / multiplies negative logits of recent tokens
  float frequency_penalty = 0.0f;   ///< subtracted once per recent occurrence
  float presence_penalty = 0.0f;    ///< subtracted once if a token occurred recently
  std::size_t penalty_last_n = 64;  ///< window of recent tokens the penalties see
  std::uint64_t seed = 0;
};

/// A sampler for one sequence. Move-only value; one thread at a time.
class sampler {
 public:
  /// Validates `p` (naming the offending value and its range) and allocates
  /// for n_vocab tokens.
  [[nodiscard]] static result<sampler> create(const sampler_params& p, std::size_t n_vocab) {
    if (n_vocab == 0 || n_vocab > static_cast<std::size_t>(std::numeric_limits<sampler_token>::max()))
      return make_error(errc::invalid_argument, "vocabulary size ", n_vocab, " must be in [1, 2^31 - 1]");
    if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature))
      return make_error(errc::invalid_argument, "temperature ", p.temperature, " must be finite and >= 0");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
      return make_error(errc::invalid_argument, "top_p ", p.top_p, " must be in (0, 1]");
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
      return make_error(errc::invalid_argument, "min_p ", p.min_p, " must be in [0, 1]");
    if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty))
      return make_error(errc::invalid_argument, "repeat_penalty ", p.repeat_penalty, " must be finite and > 0");
    if (!std::isfinite(p.frequency_penalty) || !std::isfinite(p.presence_penalty))
      return make_error(errc::invalid_argument, "frequency and presence penalties must be finite");
    if (p.penalty_last_n > (std::size_t{1} << 20))
      return make_error(errc::invalid_argument, "penalty_last_n ", p.penalty_last_n, " exceeds 2^20");
    sampler s;
    s.params_ = p;
    s.candidates_.resize(n_vocab);
    s.counts_.assign(n_vocab, 0);
    s.history_.assign(std::max<std::size_t>(p.penalty_last_n, 1), 0);
    s.seed(p.seed);
    return s;
  }

  [[nodiscard]] const sampler_params& params() const noexcept { return params_; }

  /// Draws the next token from vocab-sized `logits` (not modified).
  /// Precondition (asserted in debug builds): logits.size() == n_vocab.
  [[nodiscard]] sampler_token sample(std::span<const float> logits) noexcept {
    RUVLLM_ASSERT(logits.size() == candidates_.size());
    const std::size_t n = candidates_.size();
    for (std::size_t i = 0; i < n; ++i) candidates_[i] = {orderable(logits[i]), static_cast<sampler_token>(i)};
    apply_penalties();
    if (params_.temperature == 0.0f) return greedy(n);

    // Top-k: the k best first, sorted (ties by lower id, as argmax).
    std::size_t kept = n;
    const auto better = [](const candidate& a, const candidate& b) {
      return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    if (params_.top_k > 0 && params_.top_k < n) {
      kept = params_.top_k;
      std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(kept), candidates_.end(),
                        better);
    } else {
      std::sort(candidates_.begin(), candidates_.end(), better);
    }
    if (candidates_[0].logit == -std::numeric_limits<float>::infinity()) return candidates_[0].id;
    // Probabilities of the kept candidates (before temperature, as llama.cpp's
    // top-p and min-p see them).
    softmax(kept, 1.0f);
    if (params_.top_p < 1.0f) {
      double cumulative = 0.0;
      std::size_t i = 0;
      while (i < kept) {
        cumulative += candidates_[i].p;
        ++i;
        if (cumulative >= params_.top_p) break;
      }
      kept = i;
    }
    if (params_.min_p > 0.0f) {
      const float floor = params_.min_p * candidates_[0].p;
      std::size_t i = 1;
      while (i < kept && candidates_[i].p >= floor) ++i;
      kept = i;
    }
    softmax(kept, params_.temperature);
    double u = uniform();
    std::size_t last_possible = 0;
    for (std::size_t i = 0; i < kept; ++i) {
      if (candidates_[i].p > 0.0f) last_possible = i;
      u -= candidates_[i].p;
      if (u < 0.0) return candidates_[i].id;
    }
    // Rounding left u just above the total: the last candidate that can be
    // drawn, never one whose probability is 0.
    return candidates_[last_possible].id;
  }

  /// Records a token the sequence now contains (a prompt token or a sampled
  /// one), for the penalties. Precondition: 0 <= id < n_vocab.
  void accept(sampler_token id) noexcept {
    RUVLLM_ASSERT(id >= 0 && static_cast<std::size_t>(id) < counts_.size());
    if (params_.penalty_last_n == 0) return;
    if (window_ == history_.size()) {
      --counts_[static_cast<std::size_t>(history_[head_])];
    } else {
      ++window_;
    }
    history_[head_] = id;
    ++counts_[static_cast<std::size_t>(id)];
    head_ = (head_ + 1) % history_.size();
  }

  /// Forgets the history and restarts the generator from the seed.
  void reset() noexcept {
    for (std::size_t i = 0; i < window_; ++i) counts_[static_cast<std::size_t>(history_[i])] = 0;
    window_ = head_ = 0;
    seed(params_.seed);
  }

 private:
  struct candidate {
    float logit = 0.0f;
    sampler_token id = 0;
    float p = 0.0f;
  };

  sampler() = default;

  [[nodiscard]] static float orderable(float logit) noexcept {
    return std::isnan(logit) ? -std::numeric_limits<float>::infinity()
                             : std::min(logit, std::numeric_limits<float>::max());
  }

  [[nodiscard]] sampler_token greedy(std::size_t n) const noexcept {
    std::size_t best = 0;
    for (std::size_t i = 1; i < n; ++i)
      if (candidates_[i].logit > candidates_[best].logit) best = i;
    return candidates_[best].id;
  }

  void apply_penalties() noexcept {
    const bool any =
        params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f || params_.presence_penalty != 0.0f;
    if (!any) return;
    // candidates_ is still in id order here; each distinct recent token is
    // penalized once, with its count in the window.
    for (std::size_t i = 0; i < window_; ++i) {
      const auto id = static_cast<std::size_t>(history_[i]);
      float& logit = candidates_[id].logit;
      if (candidates_[id].p != 0.0f) continue;  // already penalized (p marks it until the cleanup below)
      const float count = static_cast<float>(counts_[id]);
      logit = logit > 0.0f ? logit / params_.repeat_penalty : logit * params_.repeat_penalty;
      logit = orderable(logit - (count * params_.frequency_penalty + params_.presence_penalty));
      candidates_[id].p = 1.0f;
    }
    for (std::size_t i = 0; i < window_; ++i) candidates_[static_cast<std::size_t>(history_[i])].p = 0.0f;
  }

  /// p of the first `kept` candidates (sorted, best first) at temperature t.
  void softmax(std::size_t kept, float t) noexcept {
    const float top = candidates_[0].logit;
    double total = 0.0;
    for (std::size_t i = 0; i < kept; ++i) {
      const double e = std::exp(static_cast<double>(candidates_[i].logit - top) / t);
      candidates_[i].p = static_cast<float>(e);
      total += e;
    }
    for (std::size_t i = 0; i < kept; ++i) candidates_[i].p = static_cast<float>(candidates_[i].p / total);
  }

  void seed(std::uint64_t s) noexcept {
    for (auto& word : state_) {
      s += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = s;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      word = z ^ (z >> 31);
    }
  }
  [[nodiscard]] static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  [[nodiscard]] double uniform() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return static_cast<double>(result >> 11) * 0x1.0p-53;
  }

  sampler_params params_{};
  std::vector<candidate> candidates_;
  std::vector<std::uint32_t> counts_;
  std::vector<sampler_token> history_;
  std::size_t window_ = 0, head_ = 0;
  std::array<std::uint64_t, 4> state_{};
};

}  // namespace ruvllm::model

#endif  // RUVLLM_MODEL_SAMPLER_HPP
