#ifndef RUVLLM_MODEL_GENERATE_HPP
#define RUVLLM_MODEL_GENERATE_HPP

// Streaming generation over a llama_context and a sampler: prompt prefill
// (reusing whatever prefix the context already holds), then one token per
// step until max tokens, a stop token, a stop sequence, cancellation or a
// full context; every token is handed to a callback as it is produced.
//
// Stop sequences are matched on text, so generate() does not know about
// them; the caller feeds detokenized text through a stop_sequence_matcher,
// which holds back any tail that could still become a stop sequence, and
// ends generation by returning false from the callback.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ruvllm/core/error.hpp"
#include "ruvllm/model/llama.hpp"
#include "ruvllm/model/sampler.hpp"

namespace ruvllm::model {

/// Why generation ended.
enum class stop_reason : std::uint8_t { max_tokens, stop_token, callback, cancelled, context_full };

[[nodiscard]] constexpr std::string_view to_string(stop_reason r) noexcept {
  switch (r) {
    case stop_reason::max_tokens: return "max tokens";
    case stop_reason::stop_token: return "stop token";
    case stop_reason::callback: return "stopped by the caller";
    case stop_reason::cancelled: return "cancelled";
    case stop_reason::context_full: return "context full";
  }
  return "unknown";
}

struct generate_options {
  std::size_t max_tokens = 256;
  /// Tokens that end generation (typically EOS / end-of-turn); not passed to the callback.
  std::span<const token_id> stop_tokens{};
  /// Checked before every step; set from any thread to stop early.
  const std::atomic<bool>* cancel = nullptr;
};

/// Counts and timings of one generate() call.
struct generate_stats {
  std::size_t prompt_tokens = 0;  ///< tokens evaluated for the prompt (after the reused prefix)
  std::size_t reused_tokens = 0;  ///< prompt tokens already in the context's cache
  std::size_t generated_tokens = 0;
  double prompt_seconds = 0.0;
  double generation_seconds = 0.0;
  stop_reason reason = stop_reason::max_tokens;

  [[nodiscard]] double prompt_tokens_per_second() const noexcept {
    return prompt_seconds > 0.0 ? static_cast<double>(prompt_tokens) / prompt_seconds : 0.0;
  }
  [[nodiscard]] double generation_tokens_per_second() const noexcept {
    return generation_seconds > 0.0 ? static_cast<double>(generated_tokens) / generation_seconds : 0.0;
  }
};

/// Holds back streamed text that could be the start of a stop sequence.
/// feed() returns the text that is safe to show; once a stop sequence
/// appears, stopped() is true and the text before it has been returned.
class stop_sequence_matcher {
 public:
  explicit stop_sequence_matcher(std::vector<std::string> stops = {}) : stops_(std::move(stops)) {
    std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  }

  /// Appends `text`; returns the part that can be emitted now.
  [[nodiscard]] std::string feed(std::string_view text) {
    if (stopped_) return {};
    pending_ += text;
    std::size_t cut = std::string::npos;
    for (const std::string& s : stops_) cut = std::min(cut, pending_.find(s));
    if (cut != std::string::npos) {
      stopped_ = true;
      std::string out = pending_.substr(0, cut);
      pending_.clear();
      return out;
    }
    // Keep the longest suffix that is a proper prefix of some stop sequence.
    std::size_t keep = 0;
    for (const std::string& s : stops_) {
      for (std::size_t n = std::min(s.size() - 1, pending_.size()); n > keep; --n) {
        if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
          keep = n;
          break;
        }
      }
    }
    std::string out = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return out;
  }
  /// The held-back text, when generation ends without a stop sequence.
  [[nodiscard]] std::string flush() {
    std::string out = stopped_ ? std::string() : std::move(pending_);
    pending_.clear();
    return out;
  }
  [[nodiscard]] bool stopped() const noexcept { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

/// Generates after `prompt`. The context keeps the longest common prefix of
/// its cached tokens (`cached`, the tokens it was fed before, maintained by
/// the caller or empty) and the prompt, so a follow-up turn only evaluates
/// what is new. The sampler sees the prompt through accept(). on_token(id)
/// is called for each generated token (stop tokens excluded) and returns
/// false to stop. Errors: an empty prompt, a prompt that does not fit the
/// context, and the context's own errors.
template <Backend B, class Kv, ProjectionHook Hook, class OnToken>
[[nodiscard]] result<generate_stats> generate(llama_context<B, Kv, Hook>& ctx, sampler& smp,
                                              std::span<const token_id> prompt, std::vector<token_id>& cached,
                                              const generate_options& o, OnToken&& on_token) {
  using clock = std::chrono::steady_clock;
  generate_stats st;
  if (prompt.empty()) return make_error(errc::invalid_argument, "generate needs a non-empty prompt");
  if (prompt.size() > ctx.n_ctx())
    return make_error(errc::out_of_range, "prompt of ", prompt.size(), " tokens exceeds the context of ", ctx.n_ctx());
  // Reuse the cached prefix, but always evaluate at least the last prompt
  // token: its logits start the generation.
  std::size_t common = 0;
  const std::size_t limit = std::min({cached.size(), prompt.size() - 1, ctx.n_past()});
  while (common < limit && cached[common] == prompt[common]) ++common;
  RUVLLM_TRY(ctx.truncate(common));
  cached.assign(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(common));
  st.reused_tokens = common;

  const std::size_t vocab = ctx.model().hparams().n_vocab;
  std::vector<float> logits(vocab);
  const auto t0 = clock::now();
  RUVLLM_TRY(ctx.eval(prompt.subspan(common), logits));
  cached.insert(cached.end(), prompt.begin() + static_cast<std::ptrdiff_t>(common), prompt.end());
  st.prompt_tokens = prompt.size() - common;
  const auto t1 = clock::now();
  st.prompt_seconds = std::chrono::duration<double>(t1 - t0).count();
  for (const token_id t : prompt) smp.accept(t);

  st.reason = stop_reason::max_tokens;
  for (std::size_t k = 0; k < o.max_tokens; ++k) {
    if (o.cancel != nullptr && o.cancel->load(std::memory_order_relaxed)) {
      st.reason = stop_reason::cancelled;
      break;
    }
    const token_id next = smp.sample(logits);
    if (std::find(o.stop_tokens.begin(), o.stop_tokens.end(), next) != o.stop_tokens.end()) {
      st.reason = stop_reason::stop_token;
      break;
    }
    smp.accept(next);
    ++st.generated_tokens;
    if (!on_token(next)) {
      st.reason = stop_reason::callback;
      break;
    }
    if (k + 1 == o.max_tokens) break;
    if (ctx.n_past() == ctx.n_ctx()) {
      st.reason = stop_reason::context_full;
      break;
    }
    RUVLLM_TRY(ctx.eval(std::span(&next, 1), logits));
    cached.push_back(next);
  }
  st.generation_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return st;
}

}  // namespace ruvllm::model

#endif  // RUVLLM_MODEL_GENERATE_HPP
