#ifndef RUVLLM_MODEL_TOKENIZER_HPP
#define RUVLLM_MODEL_TOKENIZER_HPP

// Tokenizers built from GGUF metadata, matching llama.cpp token for token:
//
// - "llama" (SentencePiece-style, llama.cpp's llm_tokenizer_spm): spaces are
//   escaped to U+2581, one U+2581 is prepended to each text fragment that
//   follows the start or a special token (tokenizer.ggml.add_space_prefix,
//   default true), symbols are UTF-8 characters, and adjacent symbols merge
//   greedily by the score of the merged piece (highest first, leftmost on
//   ties). A final symbol missing from the vocabulary falls back to its
//   bytes as <0xXX> tokens (unknown token if those are missing too).
// - "gpt2" (byte-level BPE): the text is split by the pre-tokenizer regex of
//   tokenizer.ggml.pre ("llama-bpe"/"llama3": digit runs of up to 3;
//   "qwen2": single digits; see split_pretokens), each piece's UTF-8 bytes are
//   mapped to GPT-2's printable byte alphabet, and merges apply lowest rank
//   first. "llama-bpe" emits a piece that is already a vocabulary entry
//   without merging (llama.cpp's ignore_merges).
//
// Special tokens are cut out of the text first, longest text first:
// USER_DEFINED always, CONTROL and UNKNOWN only with parse_special. BOS is
// prepended when add_special and tokenizer.ggml.add_bos_token are both true
// (EOS appended likewise).
//
// Decoding renders NORMAL tokens (U+2581 back to spaces for SPM; the byte
// alphabet back to bytes for BPE), BYTE tokens as their byte, USER_DEFINED
// as their text, CONTROL only when asked. Output is always valid UTF-8:
// invalid or truncated sequences become U+FFFD (the maximal-subpart rule),
// decided by the same state machine in decode() and in stream_detokenizer,
// so a stream concatenates to exactly decode() of the same tokens.
//
// Memory layout: the tokenizer owns one char buffer holding all token texts
// back to back (views into it index the vocabulary), per-token type and score
// arrays, a hash map from text to id, and for BPE a hash map from the pair
// (left id, right id) to (rank, merged id); it does not reference the
// gguf_file after construction. Encoding allocates its working vectors;
// const methods are safe to call from many threads.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <queue>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ruvllm/core/error.hpp"
#include "ruvllm/model/gguf.hpp"
#include "ruvllm/model/unicode_tables.hpp"

namespace ruvllm::model {

/// A token id (int32 as in llama.cpp).
using token_id = std::int32_t;
/// "No such token" (e.g. a vocabulary without a padding token).
inline constexpr token_id no_token = -1;

/// tokenizer.ggml.token_type values.
enum class token_type : std::int32_t {
  undefined = 0,
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

namespace unicode {

[[nodiscard]] constexpr bool in_ranges(std::span<const unicode_range> ranges, std::uint32_t cp) noexcept {
  std::size_t lo = 0, hi = ranges.size();
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (ranges[mid].last < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < ranges.size() && ranges[lo].first <= cp;
}

/// \p{L}: general category L*.
[[nodiscard]] constexpr bool is_letter(std::uint32_t cp) noexcept {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(letter_ranges, cp);
}
/// \p{N}: general category N*.
[[nodiscard]] constexpr bool is_number(std::uint32_t cp) noexcept {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(number_ranges, cp);
}
/// \s: the White_Space property.
[[nodiscard]] constexpr bool is_whitespace(std::uint32_t cp) noexcept { return in_ranges(white_space_ranges, cp); }

/// Marks a byte that does not start a valid UTF-8 sequence (decoded as one
/// code point of no letter/number/space category).
inline constexpr std::uint32_t invalid_code_point = 0xFFFFFFFFu;

/// Decodes one code point at s[i]: returns {code point, length}. Invalid
/// sequences (bad lead or continuation, overlong, surrogates, > U+10FFFF,
/// truncated) give {invalid_code_point, 1}.
[[nodiscard]] constexpr std::pair<std::uint32_t, std::size_t> decode_utf8(std::string_view s, std::size_t i) noexcept {
  const auto b0 = static_cast<std::uint8_t>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  std::size_t len = 0;
  std::uint32_t cp = 0;
  std::uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0Fu;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07u;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {invalid_code_point, 1};
  }
  if (i + len > s.size()) return {invalid_code_point, 1};
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<std::uint8_t>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return {invalid_code_point, 1};
    cp = (cp << 6) | (b & 0x3Fu);
  }
  return {cp, len};
}

/// Appends the UTF-8 encoding of cp (cp <= U+10FFFF, not a surrogate).
inline void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// True when s is entirely valid UTF-8.
[[nodiscard]] constexpr bool valid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const auto [cp, len] = decode_utf8(s, i);
    if (cp == invalid_code_point) return false;
    i += len;
  }
  return true;
}

/// Incremental UTF-8 sanitizer: bytes in, valid UTF-8 out. A sequence is
/// held back until complete; a byte that cannot continue it turns the held
/// prefix into one U+FFFD (the maximal-subpart rule) and is then read again
/// as a lead byte. finish() turns an incomplete tail into U+FFFD.
class utf8_sanitizer {
 public:
  /// Appends the valid output of `bytes` to out; allocates only by growing out.
  void push(std::string_view bytes, std::string& out) {
    for (char ch : bytes) push_byte(static_cast<std::uint8_t>(ch), out);
  }
  void finish(std::string& out) {
    if (held_ != 0) replacement(out);
  }
  /// Bytes held back waiting for the rest of a sequence.
  [[nodiscard]] std::size_t pending() const noexcept { return held_; }

 private:
  void replacement(std::string& out) {
    out.append("\xEF\xBF\xBD");
    held_ = 0;
  }
  void push_byte(std::uint8_t b, std::string& out) {
    if (held_ != 0) {
      const std::uint8_t lo = held_ == 1 ? lo_ : 0x80, hi = held_ == 1 ? hi_ : 0xBF;
      if (b >= lo && b <= hi) {
        buf_[held_++] = static_cast<char>(b);
        if (held_ == need_) {
          out.append(buf_.data(), held_);
          held_ = 0;
        }
        return;
      }
      replacement(out);
    }
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      return;
    }
    lo_ = 0x80;
    hi_ = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      need_ = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need_ = 3;
      if (b == 0xE0) lo_ = 0xA0;
      if (b == 0xED) hi_ = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      need_ = 4;
      if (b == 0xF0) lo_ = 0x90;
      if (b == 0xF4) hi_ = 0x8F;
    } else {
      out.append("\xEF\xBF\xBD");
      return;
    }
    buf_[0] = static_cast<char>(b);
    held_ = 1;
  }

  std::array<char, 4> buf_{};
  std::size_t held_ = 0;
  std::size_t need_ = 0;
  std::uint8_t lo_ = 0x80, hi_ = 0xBF;
};

}  // namespace unicode

/// Pre-tokenizer regex families of byte-level BPE vocabularies.
enum class pretokenizer : std::uint8_t {
  llama3,  // \p{N}{1,3}; ignore_merges
  qwen2,   // \p{N}
};

/// Splits `text` into pre-tokens the way the regex
///   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}
///   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
/// does (D = 3 for llama3, 1 for qwen2), written out by hand: each
/// alternative is tried in order at the current position, with the regex's
/// greedy-then-backtrack results computed directly. Bytes that are not valid
/// UTF-8 count as single characters of no letter/number/space category.
/// Appends (offset, length) byte ranges of `text` to out.
inline void split_pretokens(std::string_view text, pretokenizer kind,
                            std::vector<std::pair<std::size_t, std::size_t>>& out) {
  struct cpt {
    std::uint32_t cp;
    std::size_t offset;
  };
  std::vector<cpt> cps;
  cps.reserve(text.size() + 1);
  for (std::size_t i = 0; i < text.size();) {
    const auto [cp, len] = unicode::decode_utf8(text, i);
    cps.push_back({cp, i});
    i += len;
  }
  const std::size_t n = cps.size();
  cps.push_back({0, text.size()});
  auto cp_at = [&](std::size_t i) -> std::uint32_t { return i < n ? cps[i].cp : unicode::invalid_code_point; };
  auto letter = [&](std::size_t i) { return i < n && unicode::is_letter(cps[i].cp); };
  auto number = [&](std::size_t i) { return i < n && unicode::is_number(cps[i].cp); };
  auto space = [&](std::size_t i) { return i < n && unicode::is_whitespace(cps[i].cp); };
  auto other = [&](std::size_t i) { return i < n && !letter(i) && !number(i) && !space(i); };
  auto newline = [&](std::size_t i) { return i < n && (cps[i].cp == '\r' || cps[i].cp == '\n'); };
  auto lower = [&](std::size_t i) -> std::uint32_t {
    const std::uint32_t c = cp_at(i);
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
  };
  const std::size_t max_digits = kind == pretokenizer::llama3 ? 3 : 1;

  std::size_t i = 0;
  auto emit = [&](std::size_t end) {
    out.emplace_back(cps[i].offset, cps[end].offset - cps[i].offset);
    i = end;
  };
  while (i < n) {
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (cp_at(i) == '\'' && i + 1 < n) {
      const std::uint32_t a = lower(i + 1), b = lower(i + 2);
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        emit(i + 2);
        continue;
      }
      if (i + 2 < n && ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))) {
        emit(i + 3);
        continue;
      }
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (letter(i) || (!newline(i) && !letter(i) && !number(i) && letter(i + 1))) {
      std::size_t j = i + 1;
      while (letter(j)) ++j;
      emit(j);
      continue;
    }
    // \p{N}{1,D}
    if (number(i)) {
      std::size_t j = i + 1;
      while (j - i < max_digits && number(j)) ++j;
      emit(j);
      continue;
    }
    // ' '?[^\s\p{L}\p{N}]+[\r\n]*
    if (other(i) || (cp_at(i) == ' ' && other(i + 1))) {
      std::size_t j = cp_at(i) == ' ' ? i + 1 : i;
      while (other(j)) ++j;
      while (newline(j)) ++j;
      emit(j);
      continue;
    }
    // Whitespace: \s*[\r\n]+ | \s+(?!\S) | \s+
    std::size_t j = i;
    std::size_t last_newline = n;
    while (space(j)) {
      if (newline(j)) last_newline = j;
      ++j;
    }
    if (j == i) {  // not reachable: every code point is letter, number, space or other
      emit(i + 1);
      continue;
    }
    if (last_newline != n) {
      emit(last_newline + 1);
    } else if (j < n && j - i > 1) {
      emit(j - 1);
    } else {
      emit(j);
    }
  }
}

/// Options of decode() and stream_detokenizer (llama.cpp's detokenize flags).
struct decode_options {
  /// Drop a leading BOS (and a trailing EOS) the vocabulary adds. As in
  /// llama.cpp, the first piece loses one leading space when the vocabulary
  /// has add_space_prefix, unless a leading BOS was removed.
  bool remove_special = true;
  /// Render CONTROL tokens as their text (otherwise they render as nothing).
  bool render_special = false;
  /// Apply llama.cpp's clean-up of tokenization spaces: drop the space before
  /// ? ! . , and before 's 'm 're 've, and the spaces around a lone ' (as
  /// llama.cpp does for byte-level BPE vocabularies except qwen2's;
  /// tokenizer::clean_spaces() says which). Lossy, so off by default; applied
  /// by decode() only (stream_detokenizer output is never cleaned).
  bool clean_spaces = false;
};

namespace detail {

// llama.cpp's three clean-up passes, each over the previous pass's output.
inline void clean_tokenization_spaces(std::string& text) {
  auto punct = [](char c) { return c == '?' || c == '!' || c == '.' || c == ','; };
  std::string a;
  a.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i > 0 && text[i - 1] == ' ' && punct(text[i])) a.pop_back();
    a.push_back(text[i]);
  }
  // " ' " -> "'": both spaces go; the dropped right space cannot start a match.
  std::string b;
  b.reserve(a.size());
  bool prev_dropped = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool match = i > 0 && !prev_dropped && a[i] == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ';
    prev_dropped = false;
    if (match) {
      b.pop_back();
      b.push_back(a[i]);
      ++i;
      prev_dropped = true;
      continue;
    }
    b.push_back(a[i]);
  }
  // " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it).
  text.clear();
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i > 0 && b[i - 1] == ' ' && b[i] == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      const char x2 = i + 2 < b.size() ? b[i + 2] : '\0';
      if (x1 == 's' || x1 == 'm' || ((x1 == 'r' || x1 == 'v') && x2 == 'e')) text.pop_back();
    }
    text.push_back(b[i]);
  }
}

}  // namespace detail

/// A GGUF vocabulary with its encoder and decoder. Move-only value type.
/// Construction allocates the vocabulary tables; encode allocates its
/// result and working vectors; const methods are thread-safe.
class tokenizer {
 public:
  enum class kind : std::uint8_t { spm, bpe };

  tokenizer(tokenizer&&) noexcept = default;
  tokenizer& operator=(tokenizer&&) noexcept = default;
  tokenizer(const tokenizer&) = delete;
  tokenizer& operator=(const tokenizer&) = delete;
  ~tokenizer() = default;

  /// Builds the tokenizer from a GGUF file's tokenizer.ggml.* metadata.
  /// Errors (naming the key and file): a missing or mistyped key, an
  /// unsupported model or pre-tokenizer, array lengths that disagree, token
  /// ids out of range, malformed merges. Copies what it needs.
  [[nodiscard]] static result<tokenizer> from_gguf(const gguf_file& f) {
    tokenizer t;
    RUVLLM_TRY_ASSIGN(const auto model, f.get<std::string_view>("tokenizer.ggml.model"));
    if (model == "llama") {
      t.kind_ = kind::spm;
    } else if (model == "gpt2") {
      t.kind_ = kind::bpe;
    } else {
      return make_error(errc::unsupported, "tokenizer.ggml.model '", model, "' is not supported (llama, gpt2 are)")
          .at(f.source());
    }
    RUVLLM_TRY_ASSIGN(const auto tokens_value, f.get<gguf_value>("tokenizer.ggml.tokens"));
    auto tokens = tokens_value.strings();
    if (!tokens) return key_error(f, "tokenizer.ggml.tokens", tokens.error());
    const std::size_t n = tokens->size();
    if (n == 0 || n > static_cast<std::size_t>(std::numeric_limits<token_id>::max()))
      return make_error(errc::corrupt_data, "tokenizer.ggml.tokens has ", n, " entries").at(f.source());

    std::size_t total = 0;
    for (auto s : *tokens) total += s.size();
    if (total >= std::numeric_limits<std::uint32_t>::max())
      return make_error(errc::unsupported, "tokenizer.ggml.tokens holds more than 4 GiB of text").at(f.source());
    t.text_.reserve(total);
    t.offsets_.reserve(n + 1);
    for (auto s : *tokens) {
      t.offsets_.push_back(static_cast<std::uint32_t>(t.text_.size()));
      t.text_.insert(t.text_.end(), s.begin(), s.end());
    }
    t.offsets_.push_back(static_cast<std::uint32_t>(t.text_.size()));

    t.types_.assign(n, token_type::normal);
    if (const gguf_value* v = f.find("tokenizer.ggml.token_type")) {
      auto types = v->numbers<std::int32_t>();
      if (!types) return key_error(f, "tokenizer.ggml.token_type", types.error());
      if (types->size() != n)
        return make_error(errc::corrupt_data, "tokenizer.ggml.token_type has ", types->size(), " entries, tokens has ",
                          n)
            .at(f.source(), v->file_offset());
      for (std::size_t i = 0; i < n; ++i) t.types_[i] = static_cast<token_type>((*types)[i]);
    }
    t.scores_.assign(n, 0.0f);
    if (const gguf_value* v = f.find("tokenizer.ggml.scores")) {
      auto scores = v->numbers<float>();
      if (!scores) return key_error(f, "tokenizer.ggml.scores", scores.error());
      if (scores->size() != n)
        return make_error(errc::corrupt_data, "tokenizer.ggml.scores has ", scores->size(), " entries, tokens has ", n)
            .at(f.source(), v->file_offset());
      t.scores_ = std::move(*scores);
    }

    t.ids_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) t.ids_.emplace(t.text(static_cast<token_id>(i)), static_cast<token_id>(i));

    RUVLLM_TRY(t.read_id(f, "tokenizer.ggml.bos_token_id", t.bos_));
    RUVLLM_TRY(t.read_id(f, "tokenizer.ggml.eos_token_id", t.eos_));
    RUVLLM_TRY(t.read_id(f, "tokenizer.ggml.unknown_token_id", t.unk_));
    RUVLLM_TRY(t.read_id(f, "tokenizer.ggml.padding_token_id", t.pad_));
    RUVLLM_TRY_ASSIGN(t.add_bos_, f.get_or<bool>("tokenizer.ggml.add_bos_token", t.kind_ == kind::spm));
    RUVLLM_TRY_ASSIGN(t.add_eos_, f.get_or<bool>("tokenizer.ggml.add_eos_token", false));
    RUVLLM_TRY_ASSIGN(t.add_space_prefix_, f.get_or<bool>("tokenizer.ggml.add_space_prefix", t.kind_ == kind::spm));
    if (t.kind_ == kind::spm && t.unk_ == no_token) {
      if (auto it = t.ids_.find("<unk>"); it != t.ids_.end()) t.unk_ = it->second;
    }

    if (t.kind_ == kind::spm) {
      char name[7] = {'<', '0', 'x', 0, 0, '>', 0};
      for (int b = 0; b < 256; ++b) {
        name[3] = "0123456789ABCDEF"[b >> 4];
        name[4] = "0123456789ABCDEF"[b & 15];
        auto it = t.ids_.find(std::string_view(name, 6));
        t.byte_tokens_[static_cast<std::size_t>(b)] = it != t.ids_.end() ? it->second : t.unk_;
      }
    } else {
      RUVLLM_TRY(t.init_bpe(f));
    }

    // Special tokens for partitioning, longest text first (id order on ties).
    for (std::size_t i = 0; i < n; ++i) {
      const token_type ty = t.types_[i];
      if ((ty == token_type::control || ty == token_type::user_defined || ty == token_type::unknown) &&
          !t.text(static_cast<token_id>(i)).empty())
        t.specials_.push_back(static_cast<token_id>(i));
    }
    std::stable_sort(t.specials_.begin(), t.specials_.end(),
                     [&](token_id a, token_id b) { return t.text(a).size() > t.text(b).size(); });
    return t;
  }

  [[nodiscard]] kind type() const noexcept { return kind_; }
  [[nodiscard]] std::size_t n_vocab() const noexcept { return types_.size(); }

  /// Whether this vocabulary names exactly the rows of a model's token
  /// embedding (llama_hparams::n_vocab), as llama.cpp requires of a file:
  /// with fewer tokens, generated ids past the last could not be printed;
  /// with more, prompt ids past the last row could not be evaluated.
  /// Errors: invalid_argument naming both sizes.
  [[nodiscard]] result<void> check_model_vocab(std::size_t model_vocab) const {
    if (n_vocab() != model_vocab)
      return make_error(errc::invalid_argument, "the tokenizer's ", n_vocab(),
                        " tokens do not match the model's vocabulary of ", model_vocab, " (token_embd.weight rows)");
    return {};
  }
  [[nodiscard]] token_id bos() const noexcept { return bos_; }
  [[nodiscard]] token_id eos() const noexcept { return eos_; }
  [[nodiscard]] token_id unk() const noexcept { return unk_; }
  [[nodiscard]] token_id pad() const noexcept { return pad_; }
  [[nodiscard]] bool add_bos() const noexcept { return add_bos_; }
  [[nodiscard]] bool add_eos() const noexcept { return add_eos_; }
  [[nodiscard]] bool add_space_prefix() const noexcept { return add_space_prefix_; }
  /// Whether llama.cpp cleans tokenization spaces when detokenizing this
  /// vocabulary (byte-level BPE except qwen2): the value to pass as
  /// decode_options::clean_spaces to reproduce llama.cpp's text exactly.
  [[nodiscard]] bool clean_spaces() const noexcept { return kind_ == kind::bpe && pre_ != pretokenizer::qwen2; }

  /// The vocabulary text of id (id < n_vocab()).
  [[nodiscard]] std::string_view text(token_id id) const noexcept {
    const auto i = static_cast<std::size_t>(id);
    return std::string_view(text_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  [[nodiscard]] token_type type_of(token_id id) const noexcept { return types_[static_cast<std::size_t>(id)]; }
  [[nodiscard]] float score(token_id id) const noexcept { return scores_[static_cast<std::size_t>(id)]; }
  /// The id of a vocabulary text, or no_token.
  [[nodiscard]] token_id find(std::string_view text) const noexcept {
    const auto it = ids_.find(text);
    return it != ids_.end() ? it->second : no_token;
  }

  /// Tokenizes `text`. add_special: prepend BOS / append EOS as the
  /// vocabulary asks. parse_special: cut CONTROL tokens out of the text too
  /// (USER_DEFINED ones always are). Allocates the result.
  [[nodiscard]] std::vector<token_id> encode(std::string_view text, bool add_special = true,
                                             bool parse_special = false) const {
    std::vector<token_id> out;
    if (add_special && add_bos_ && bos_ != no_token) out.push_back(bos_);
    std::vector<fragment> fragments;
    if (!text.empty()) fragments.push_back({no_token, 0, text.size()});
    partition_special(text, parse_special, fragments);
    bool prev_special = true;
    std::string scratch;
    std::vector<std::pair<std::size_t, std::size_t>> pieces;
    for (const auto& fr : fragments) {
      if (fr.token != no_token) {
        out.push_back(fr.token);
        prev_special = true;
        continue;
      }
      const std::string_view raw = text.substr(fr.offset, fr.length);
      if (kind_ == kind::spm) {
        scratch.clear();
        if (add_space_prefix_ && prev_special) scratch.append("\xE2\x96\x81");
        for (char c : raw) {
          if (c == ' ')
            scratch.append("\xE2\x96\x81");
          else
            scratch.push_back(c);
        }
        encode_spm(scratch, out);
      } else {
        pieces.clear();
        split_pretokens(raw, pre_, pieces);
        for (const auto& [off, len] : pieces) encode_bpe(raw.substr(off, len), out, scratch);
      }
      prev_special = false;
    }
    if (add_special && add_eos_ && eos_ != no_token) out.push_back(eos_);
    return out;
  }

  /// Appends the raw bytes of one token (possibly part of a UTF-8 sequence)
  /// to out. `render_special` renders CONTROL tokens as their text.
  /// Precondition: id < n_vocab() (checked by decode and the detokenizer).
  void append_piece(token_id id, std::string& out, bool render_special = false) const {
    const std::string_view s = text(id);
    switch (type_of(id)) {
      case token_type::normal:
      case token_type::undefined:
      case token_type::unused:
        if (kind_ == kind::spm) {
          for (std::size_t i = 0; i < s.size(); ++i) {
            if (s.compare(i, 3, "\xE2\x96\x81") == 0) {
              out.push_back(' ');
              i += 2;
            } else {
              out.push_back(s[i]);
            }
          }
        } else {
          for (std::size_t i = 0; i < s.size();) {
            const auto [cp, len] = unicode::decode_utf8(s, i);
            i += len;
            if (cp < byte_of_cp_.size() && byte_of_cp_[cp] >= 0) out.push_back(static_cast<char>(byte_of_cp_[cp]));
          }
        }
        break;
      case token_type::byte: {
        // "<0xXX>"
        int v = -1;
        if (s.size() == 6 && s.starts_with("<0x") && s.ends_with(">")) v = hex_byte(s[3], s[4]);
        if (v >= 0) out.push_back(static_cast<char>(v));
        break;
      }
      case token_type::unknown: out.append("\xE2\x96\x85"); break;
      case token_type::control:
        if (render_special) out.append(s);
        break;
      case token_type::user_defined: out.append(s); break;
    }
  }

  /// Decodes ids to valid UTF-8 (invalid byte sequences become U+FFFD), as
  /// llama.cpp's detokenize with the given options. Errors on an id out of
  /// range. Allocates the result.
  [[nodiscard]] result<std::string> decode(std::span<const token_id> ids, decode_options options = {}) const;

 private:
  friend class stream_detokenizer;

  struct fragment {
    token_id token;  // no_token for raw text
    std::size_t offset;
    std::size_t length;
  };

  tokenizer() = default;

  [[nodiscard]] static error key_error(const gguf_file& f, std::string_view key, const error& e) {
    return make_error(e.code(), key, ": ", e.message()).at(f.source());
  }

  [[nodiscard]] result<void> read_id(const gguf_file& f, std::string_view key, token_id& out) {
    const gguf_value* v = f.find(key);
    if (v == nullptr) return {};
    auto id = v->as<std::uint32_t>();
    if (!id) {
      auto signed_id = v->as<std::int32_t>();
      if (!signed_id) return key_error(f, key, id.error());
      if (*signed_id < 0) return {};  // -1 = none
      id = static_cast<std::uint32_t>(*signed_id);
    }
    if (*id >= n_vocab())
      return make_error(errc::corrupt_data, key, " = ", *id, " is not below the vocabulary size ", n_vocab())
          .at(f.source(), v->file_offset());
    out = static_cast<token_id>(*id);
    return {};
  }

  [[nodiscard]] static int hex_byte(char hi, char lo) noexcept {
    auto digit = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    const int a = digit(hi), b = digit(lo);
    return a < 0 || b < 0 ? -1 : a * 16 + b;
  }

  // GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the
  // other 68 bytes to U+0100.. in byte order.
  void init_byte_alphabet() {
    byte_of_cp_.assign(0x100 + 68, -1);
    std::uint32_t next = 0x100;
    for (std::uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const std::uint32_t cp = printable ? b : next++;
      cp_of_byte_[b] = cp;
      byte_of_cp_[cp] = static_cast<std::int16_t>(b);
    }
  }

  [[nodiscard]] result<void> init_bpe(const gguf_file& f) {
    init_byte_alphabet();
    RUVLLM_TRY_ASSIGN(const auto pre, f.get_or<std::string_view>("tokenizer.ggml.pre", "default"));
    if (pre == "qwen2") {
      pre_ = pretokenizer::qwen2;
    } else if (pre == "llama-bpe" || pre == "llama3") {
      pre_ = pretokenizer::llama3;
      ignore_merges_ = true;
    } else {
      return make_error(errc::unsupported, "tokenizer.ggml.pre '", pre,
                        "' is not supported (llama-bpe, llama3, qwen2 are)")
          .at(f.source());
    }
    for (std::uint32_t b = 0; b < 256; ++b) {
      std::string s;
      unicode::append_utf8(s, cp_of_byte_[b]);
      const token_id id = find(s);
      if (id == no_token)
        return make_error(errc::corrupt_data, "byte-level vocabulary lacks the symbol of byte ", b).at(f.source());
      byte_symbol_[b] = id;
    }
    RUVLLM_TRY_ASSIGN(const auto merges_value, f.get<gguf_value>("tokenizer.ggml.merges"));
    auto merges = merges_value.strings();
    if (!merges) return key_error(f, "tokenizer.ggml.merges", merges.error());
    merges_.reserve(merges->size());
    std::string joined;
    for (std::size_t rank = 0; rank < merges->size(); ++rank) {
      const std::string_view m = (*merges)[rank];
      const std::size_t sp = m.find(' ', 1);
      if (sp == std::string_view::npos)
        return make_error(errc::corrupt_data, "tokenizer.ggml.merges[", rank, "] '", m, "' is not 'left right'")
            .at(f.source(), merges_value.file_offset());
      const token_id left = find(m.substr(0, sp)), right = find(m.substr(sp + 1));
      joined.assign(m.substr(0, sp));
      joined.append(m.substr(sp + 1));
      const token_id merged = find(joined);
      // A merge whose parts or result are not tokens can never fire.
      if (left == no_token || right == no_token || merged == no_token) continue;
      merges_.emplace(pair_key(left, right), merge_info{static_cast<std::uint32_t>(rank), merged});
    }
    return {};
  }

  [[nodiscard]] static std::uint64_t pair_key(token_id a, token_id b) noexcept {
    return (std::uint64_t{static_cast<std::uint32_t>(a)} << 32) | static_cast<std::uint32_t>(b);
  }

  // Cuts special tokens out of raw fragments, longest text first.
  void partition_special(std::string_view text, bool parse_special, std::vector<fragment>& fragments) const {
    if (fragments.empty()) return;
    std::vector<fragment> next;
    for (const token_id sp : specials_) {
      const token_type ty = type_of(sp);
      if (!parse_special && ty != token_type::user_defined) continue;
      const std::string_view needle = text_of_special(sp);
      bool any = false;
      next.clear();
      for (const auto& fr : fragments) {
        if (fr.token != no_token) {
          next.push_back(fr);
          continue;
        }
        std::size_t pos = fr.offset;
        const std::size_t end = fr.offset + fr.length;
        while (pos < end) {
          const std::size_t hit = text.substr(0, end).find(needle, pos);
          if (hit == std::string_view::npos) break;
          any = true;
          if (hit > pos) next.push_back({no_token, pos, hit - pos});
          next.push_back({sp, hit, needle.size()});
          pos = hit + needle.size();
        }
        if (pos < end) next.push_back({no_token, pos, end - pos});
      }
      if (any) fragments.swap(next);
    }
  }
  [[nodiscard]] std::string_view text_of_special(token_id id) const noexcept { return text(id); }

  // llama.cpp's llm_tokenizer_spm: symbols are UTF-8 characters (length from
  // the lead byte, clipped to the text), merged greedily by score.
  void encode_spm(std::string_view text, std::vector<token_id>& out) const {
    struct symbol {
      std::int64_t prev;
      std::int64_t next;
      std::size_t offset;
      std::size_t length;
    };
    struct bigram {
      float score;
      std::int64_t left;
      std::size_t size;
      bool operator<(const bigram& o) const noexcept { return score < o.score || (score == o.score && left > o.left); }
    };
    std::vector<symbol> symbols;
    for (std::size_t i = 0; i < text.size();) {
      constexpr std::uint8_t lengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
      const std::size_t len = std::min<std::size_t>(lengths[static_cast<std::uint8_t>(text[i]) >> 4], text.size() - i);
      const auto idx = static_cast<std::int64_t>(symbols.size());
      symbols.push_back({idx - 1, idx + 1, i, len});
      i += len;
    }
    if (symbols.empty()) return;
    symbols.back().next = -1;
    std::priority_queue<bigram> queue;
    auto try_add = [&](std::int64_t left, std::int64_t right) {
      if (left < 0 || right < 0) return;
      const auto& l = symbols[static_cast<std::size_t>(left)];
      const auto& r = symbols[static_cast<std::size_t>(right)];
      const auto piece = text.substr(l.offset, l.length + r.length);
      const token_id id = find(piece);
      if (id == no_token) return;
      queue.push({score(id), left, piece.size()});
    };
    for (std::size_t i = 1; i < symbols.size(); ++i)
      try_add(static_cast<std::int64_t>(i - 1), static_cast<std::int64_t>(i));
    while (!queue.empty()) {
      const bigram b = queue.top();
      queue.pop();
      auto& left = symbols[static_cast<std::size_t>(b.left)];
      if (left.length == 0 || left.next < 0) continue;
      auto& right = symbols[static_cast<std::size_t>(left.next)];
      if (right.length == 0 || left.length + right.length != b.size) continue;  // outdated
      left.length += right.length;
      right.length = 0;
      left.next = right.next;
      if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = b.left;
      try_add(left.prev, b.left);
      try_add(b.left, left.next);
    }
    for (std::int64_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next) {
      const auto& s = symbols[static_cast<std::size_t>(i)];
      const auto piece = text.substr(s.offset, s.length);
      const token_id id = find(piece);
      if (id != no_token) {
        out.push_back(id);
        continue;
      }
      for (char c : piece) {
        const token_id bt = byte_tokens_[static_cast<std::uint8_t>(c)];
        if (bt != no_token) out.push_back(bt);
      }
    }
  }

  // Byte-level BPE over one pre-token.
  void encode_bpe(std::string_view piece, std::vector<token_id>& out, std::string& scratch) const {
    if (ignore_merges_) {
      scratch.clear();
      for (char c : piece) unicode::append_utf8(scratch, cp_of_byte_[static_cast<std::uint8_t>(c)]);
      if (const token_id id = find(scratch); id != no_token) {
        out.push_back(id);
        return;
      }
    }
    // Merge the lowest-rank adjacent pair, leftmost on ties, until none
    // applies: a heap of candidate pairs over a linked list of symbols, so a
    // long pre-token (a run of letters can be megabytes) costs O(n log n).
    struct symbol {
      token_id id;
      std::int64_t prev;
      std::int64_t next;
    };
    struct candidate {
      std::uint32_t rank;
      std::int64_t left;
      std::int64_t right;
      token_id left_id;
      token_id right_id;
      bool operator<(const candidate& o) const noexcept { return rank > o.rank || (rank == o.rank && left > o.left); }
    };
    std::vector<symbol> symbols;
    symbols.reserve(piece.size());
    for (std::size_t i = 0; i < piece.size(); ++i) {
      const auto idx = static_cast<std::int64_t>(i);
      symbols.push_back(
          {byte_symbol_[static_cast<std::uint8_t>(piece[i])], idx - 1, i + 1 < piece.size() ? idx + 1 : -1});
    }
    std::priority_queue<candidate> queue;
    auto consider = [&](std::int64_t left, std::int64_t right) {
      if (left < 0 || right < 0) return;
      const token_id a = symbols[static_cast<std::size_t>(left)].id, b = symbols[static_cast<std::size_t>(right)].id;
      const auto it = merges_.find(pair_key(a, b));
      if (it != merges_.end()) queue.push({it->second.rank, left, right, a, b});
    };
    for (std::size_t i = 1; i < symbols.size(); ++i)
      consider(static_cast<std::int64_t>(i - 1), static_cast<std::int64_t>(i));
    while (!queue.empty()) {
      const candidate c = queue.top();
      queue.pop();
      auto& left = symbols[static_cast<std::size_t>(c.left)];
      auto& right = symbols[static_cast<std::size_t>(c.right)];
      // Stale when either side has merged since (a symbol's id only changes
      // by growing, so equal ids and adjacency mean the pair is current).
      if (left.id != c.left_id || right.id != c.right_id || left.next != c.right || right.id == no_token) continue;
      left.id = merges_.find(pair_key(c.left_id, c.right_id))->second.merged;
      left.next = right.next;
      if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = c.left;
      right.id = no_token;
      consider(left.prev, c.left);
      consider(c.left, left.next);
    }
    for (std::int64_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next)
      out.push_back(symbols[static_cast<std::size_t>(i)].id);
  }

  struct merge_info {
    std::uint32_t rank;
    token_id merged;
  };

  kind kind_ = kind::spm;
  // A vector, not a std::string: the hash map's keys view this buffer, and a
  // moved short string would leave them pointing into the moved-from object.
  std::vector<char> text_;
  std::vector<std::uint32_t> offsets_;
  std::vector<token_type> types_;
  std::vector<float> scores_;
  std::unordered_map<std::string_view, token_id> ids_;
  std::vector<token_id> specials_;
  token_id bos_ = no_token, eos_ = no_token, unk_ = no_token, pad_ = no_token;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
  // SPM
  std::array<token_id, 256> byte_tokens_{};
  // BPE
  pretokenizer pre_ = pretokenizer::llama3;
  bool ignore_merges_ = false;
  std::array<std::uint32_t, 256> cp_of_byte_{};
  std::vector<std::int16_t> byte_of_cp_;
  std::array<token_id, 256> byte_symbol_{};
  std::unordered_map<std::uint64_t, merge_info> merges_;
};

/// Incremental detokenizer for generated tokens: push() appends only complete,
/// valid UTF-8 (a character split across tokens is held back until its last
/// byte arrives), finish() flushes the tail. The concatenated output equals
/// tokenizer::decode of the same ids with the same options, except that a
/// trailing EOS is not removed (the stream cannot know it is the last).
/// Borrows the tokenizer. Not synchronized; push allocates only by growing out.
class stream_detokenizer {
 public:
  explicit stream_detokenizer(const tokenizer& t, decode_options options = {}) noexcept
      : tok_(&t), options_(options), strip_space_(t.add_space_prefix()) {}

  /// Appends the text completed by `id` to out. Errors on an id out of range
  /// (nothing is appended).
  [[nodiscard]] result<void> push(token_id id, std::string& out) {
    if (id < 0 || static_cast<std::size_t>(id) >= tok_->n_vocab())
      return make_error(errc::out_of_range, "token id ", id, " is not below the vocabulary size ", tok_->n_vocab());
    const bool first = first_;
    first_ = false;
    // llama.cpp: a removed leading BOS cancels the prefix-space strip;
    // otherwise the first piece loses one leading space when the vocabulary
    // adds a space prefix.
    if (first && options_.remove_special && tok_->add_bos() && id == tok_->bos()) {
      strip_space_ = false;
      return {};
    }
    piece_.clear();
    tok_->append_piece(id, piece_, options_.render_special);
    std::string_view p = piece_;
    if (strip_space_ && p.starts_with(' ')) p.remove_prefix(1);
    strip_space_ = false;
    utf8_.push(p, out);
    return {};
  }
  /// Flushes an incomplete trailing sequence as U+FFFD.
  void finish(std::string& out) { utf8_.finish(out); }
  /// Bytes held back waiting for the rest of a character.
  [[nodiscard]] std::size_t pending() const noexcept { return utf8_.pending(); }

 private:
  const tokenizer* tok_;
  decode_options options_;
  bool first_ = true;
  bool strip_space_ = false;
  std::string piece_;
  unicode::utf8_sanitizer utf8_;
};

inline result<std::string> tokenizer::decode(std::span<const token_id> ids, decode_options options) const {
  if (options.remove_special && add_eos_ && !ids.empty() && ids.back() == eos_) ids = ids.first(ids.size() - 1);
  std::string out;
  stream_detokenizer stream(*this, options);
  for (token_id id : ids) RUVLLM_TRY(stream.push(id, out));
  stream.finish(out);
  if (options.clean_spaces) detail::clean_tokenization_spaces(out);
  return out;
}

/// Chat prompt formats, as llama.cpp's llm_chat_apply_template renders them.
enum class chat_template : std::uint8_t {
  /// [INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]{assistant}</s><s>[INST] {user} [/INST]
  llama2,
  /// <|start_header_id|>{role}<|end_header_id|>\n\n{content, trimmed}<|eot_id|> per message
  llama3,
  /// <|im_start|>{role}\n{content}<|im_end|>\n per message
  chatml,
  /// [INST] {system}\n\n{user}[/INST] {assistant}</s> (Mistral v3)
  mistral,
};

/// One chat message; role is "system", "user" or "assistant".
struct chat_message {
  std::string_view role;
  std::string_view content;
};

/// The template named "llama2", "llama3", "chatml" or "mistral".
[[nodiscard]] inline result<chat_template> chat_template_from_name(std::string_view name) {
  if (name == "llama2") return chat_template::llama2;
  if (name == "llama3") return chat_template::llama3;
  if (name == "chatml") return chat_template::chatml;
  if (name == "mistral") return chat_template::mistral;
  return make_error(errc::not_found, "unknown chat template '", name, "' (llama2, llama3, chatml, mistral are known)");
}

/// Recognizes a Jinja chat template (tokenizer.chat_template) by its marker
/// tokens, in llama.cpp's order; a template name is accepted too.
[[nodiscard]] inline result<chat_template> detect_chat_template(std::string_view jinja) {
  if (auto named = chat_template_from_name(jinja)) return named;
  auto has = [&](std::string_view s) { return jinja.find(s) != std::string_view::npos; };
  if (has("<|im_start|>")) return chat_template::chatml;
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return chat_template::llama3;
  if (has("[INST]")) return has("<<SYS>>") ? chat_template::llama2 : chat_template::mistral;
  return make_error(errc::unsupported,
                    "chat template not recognized (expected llama2, llama3, chatml or mistral markers)");
}

/// The chat template of a GGUF file's tokenizer.chat_template.
[[nodiscard]] inline result<chat_template> detect_chat_template(const gguf_file& f) {
  RUVLLM_TRY_ASSIGN(const auto jinja, f.get<std::string_view>("tokenizer.chat_template"));
  auto t = detect_chat_template(jinja);
  if (!t) return std::move(t).error().at(f.source());
  return t;
}

namespace detail {
[[nodiscard]] inline std::string_view trim_spaces(std::string_view s) noexcept {
  const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}
}  // namespace detail

/// Renders messages into a prompt string; add_assistant appends the opening
/// of an assistant turn. BOS is not included (the tokenizer adds it).
/// Allocates the result.
[[nodiscard]] inline std::string apply_chat_template(chat_template t, std::span<const chat_message> messages,
                                                     bool add_assistant = true) {
  std::string out;
  switch (t) {
    case chat_template::chatml:
      for (const auto& m : messages) {
        out.append("<|im_start|>").append(m.role).append("\n").append(m.content).append("<|im_end|>\n");
      }
      if (add_assistant) out.append("<|im_start|>assistant\n");
      break;
    case chat_template::llama3:
      for (const auto& m : messages) {
        out.append("<|start_header_id|>").append(m.role).append("<|end_header_id|>\n\n");
        out.append(detail::trim_spaces(m.content)).append("<|eot_id|>");
      }
      if (add_assistant) out.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
      break;
    case chat_template::llama2: {
      // The first turn's BOS comes from the tokenizer; later turns carry it.
      bool inside_turn = true;
      out.append("[INST] ");
      for (const auto& m : messages) {
        if (!inside_turn) {
          inside_turn = true;
          out.append("<s>[INST] ");
        }
        if (m.role == "system") {
          out.append("<<SYS>>\n").append(m.content).append("\n<</SYS>>\n\n");
        } else if (m.role == "user") {
          out.append(m.content).append(" [/INST]");
        } else {
          out.append(m.content).append("</s>");
          inside_turn = false;
        }
      }
      break;
    }
    case chat_template::mistral: {
      bool inside_turn = false;
      for (const auto& m : messages) {
        if (!inside_turn) {
          out.append("[INST] ");
          inside_turn = true;
        }
        if (m.role == "system") {
          out.append(m.content).append("\n\n");
        } else if (m.role == "user") {
          out.append(m.content).append("[/INST]");
        } else {
          out.append(" ").append(detail::trim_spaces(m.content)).append("</s>");
          inside_turn = false;
        }
      }
      break;
    }
  }
  return out;
}

}  // namespace ruvllm::model

#endif  // RUVLLM_MODEL_TOKENIZER_HPP
