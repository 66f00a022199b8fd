#ifndef RUVLLM_CORE_ERROR_HPP
#define RUVLLM_CORE_ERROR_HPP

// The error model. The library never throws: every fallible call returns a
// ruvllm::result<T> holding either the value or a ruvllm::error (a code plus a
// message that names the bad value and the limit it broke, and for file
// formats the file and byte offset). There is deliberately no
// std::error_category subclass: it would bring a vtable into every program.

#include <charconv>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "ruvllm/core/config.hpp"

namespace ruvllm {

enum class errc : std::uint8_t {
  invalid_argument = 1,  // a caller-supplied value is outside its domain
  out_of_range,          // an index, id or position past a limit
  not_found,             // an id or key that does not exist
  already_exists,        // a duplicate id or key
  unsupported,           // a valid but unimplemented format, type or option
  corrupt_data,          // a file or buffer whose contents fail validation
  io_error,              // the operating system refused a file operation
  out_of_memory,         // an allocation failed or would exceed a hard cap
  budget_exceeded,       // a memory budget or quota would be exceeded
  cancelled,             // the caller asked to stop
};

[[nodiscard]] constexpr std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument: return "invalid argument";
    case errc::out_of_range: return "out of range";
    case errc::not_found: return "not found";
    case errc::already_exists: return "already exists";
    case errc::unsupported: return "unsupported";
    case errc::corrupt_data: return "corrupt data";
    case errc::io_error: return "i/o error";
    case errc::out_of_memory: return "out of memory";
    case errc::budget_exceeded: return "budget exceeded";
    case errc::cancelled: return "cancelled";
  }
  return "unknown error";
}

namespace detail {

// Message formatting without <format> (g++ 12 lacks it): each part is
// appended with std::to_chars, so numbers print exactly and locale-free.
inline void append_part(std::string& out, std::string_view s) { out.append(s); }
inline void append_part(std::string& out, const char* s) { out.append(s); }
inline void append_part(std::string& out, const std::string& s) { out.append(s); }
inline void append_part(std::string& out, char c) { out.push_back(c); }
inline void append_part(std::string& out, bool b) { out.append(b ? "true" : "false"); }

template <class T>
concept message_number = std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>;
template <class T>
concept message_enum = std::is_enum_v<T>;

template <message_number T>
void append_part(std::string& out, T value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  if (ec == std::errc{}) out.append(std::string_view(buf, static_cast<std::size_t>(end - buf)));
}

template <message_enum T>
void append_part(std::string& out, T value) {
  append_part(out, static_cast<std::underlying_type_t<T>>(value));
}

}  // namespace detail

/// A failure: what went wrong (code), why (message naming the value and the
/// limit), and for file formats where (file and byte offset).
/// Constructing one allocates; errors are for the cold path.
class error {
 public:
  static constexpr std::uint64_t no_offset = ~std::uint64_t{0};

  error(errc code, std::string message) : code_(code), message_(std::move(message)) {}

  [[nodiscard]] errc code() const noexcept { return code_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] bool has_offset() const noexcept { return offset_ != no_offset; }
  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }

  /// Attaches the file and byte offset the error refers to.
  error&& at(std::string_view file, std::uint64_t offset = no_offset) && {
    file_.assign(file);
    offset_ = offset;
    return std::move(*this);
  }

  /// "corrupt data: model.gguf at offset 24: tensor count 4294967296 exceeds ..."
  [[nodiscard]] std::string describe() const {
    std::string out;
    detail::append_part(out, to_string(code_));
    out.append(": ");
    if (!file_.empty()) {
      out.append(file_);
      if (has_offset()) {
        out.append(" at offset ");
        detail::append_part(out, offset_);
      }
      out.append(": ");
    }
    out.append(message_);
    return out;
  }

 private:
  errc code_;
  std::string message_;
  std::string file_;
  std::uint64_t offset_ = no_offset;
};

/// Builds an error from message parts: make_error(errc::out_of_range, "dimension ", d,
/// " exceeds the limit ", limit).
template <class... Parts>
[[nodiscard]] error make_error(errc code, const Parts&... parts) {
  std::string message;
  (detail::append_part(message, parts), ...);
  return error(code, std::move(message));
}

namespace detail {
[[noreturn]] inline void fail_unchecked(const error& e) noexcept {
  std::fprintf(stderr, "ruvllm: value() called on an error result: %s\n", e.describe().c_str());
  std::abort();
}
[[noreturn]] inline void fail_no_error() noexcept {
  std::fprintf(stderr, "ruvllm: error() called on a successful result\n");
  std::abort();
}
}  // namespace detail

template <class T>
class result;

namespace detail {
// What converts implicitly into a successful result<T>: anything T can be
// built from, except an error or another result.
template <class U, class T>
concept result_value_source = std::constructible_from<T, U&&> && !std::is_same_v<std::remove_cvref_t<U>, error> &&
                              !std::is_same_v<std::remove_cvref_t<U>, result<T>>;
}  // namespace detail

/// Either a T or a ruvllm::error. Reading the value of an error result aborts
/// with the error's description (never undefined behaviour); check first.
template <class T>
class [[nodiscard]] result {
  static_assert(!std::is_reference_v<T>, "result<T&> is not supported: return a pointer");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, ruvllm::error>, "result<error> is ambiguous");

 public:
  using value_type = T;

  // Implicit on purpose: `return value;` and `return make_error(...);` both
  // work. The constraint excludes result itself, so copy and move stay visible.
  template <detail::result_value_source<T> U = T>
  // NOLINTNEXTLINE(bugprone-forwarding-reference-overload)
  result(U&& value) : storage_(std::in_place_index<0>, std::forward<U>(value)) {}
  result(ruvllm::error e) : storage_(std::in_place_index<1>, std::move(e)) {}

  [[nodiscard]] bool has_value() const noexcept { return storage_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  [[nodiscard]] T& value() & {
    check();
    return *std::get_if<0>(&storage_);
  }
  [[nodiscard]] const T& value() const& {
    check();
    return *std::get_if<0>(&storage_);
  }
  [[nodiscard]] T&& value() && {
    check();
    return std::move(*std::get_if<0>(&storage_));
  }
  [[nodiscard]] T& operator*() & { return value(); }
  [[nodiscard]] const T& operator*() const& { return value(); }
  [[nodiscard]] T&& operator*() && { return std::move(*this).value(); }
  [[nodiscard]] T* operator->() { return &value(); }
  [[nodiscard]] const T* operator->() const { return &value(); }

  template <class U>
  [[nodiscard]] T value_or(U&& fallback) const& {
    return has_value() ? *std::get_if<0>(&storage_) : static_cast<T>(std::forward<U>(fallback));
  }

  /// The error; only meaningful when !has_value().
  [[nodiscard]] const ruvllm::error& error() const& {
    if (has_value()) detail::fail_no_error();
    return *std::get_if<1>(&storage_);
  }
  [[nodiscard]] ruvllm::error&& error() && {
    if (has_value()) detail::fail_no_error();
    return std::move(*std::get_if<1>(&storage_));
  }

 private:
  void check() const {
    if (!has_value()) detail::fail_unchecked(*std::get_if<1>(&storage_));
  }
  std::variant<T, ruvllm::error> storage_;
};

/// Success or a ruvllm::error.
template <>
class [[nodiscard]] result<void> {
 public:
  using value_type = void;
  result() = default;
  result(ruvllm::error e) : error_(std::in_place_index<1>, std::move(e)) {}

  [[nodiscard]] bool has_value() const noexcept { return error_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  void value() const {
    if (!has_value()) detail::fail_unchecked(*std::get_if<1>(&error_));
  }
  [[nodiscard]] const ruvllm::error& error() const& {
    if (has_value()) detail::fail_no_error();
    return *std::get_if<1>(&error_);
  }
  [[nodiscard]] ruvllm::error&& error() && {
    if (has_value()) detail::fail_no_error();
    return std::move(*std::get_if<1>(&error_));
  }

 private:
  std::variant<std::monostate, ruvllm::error> error_;
};

}  // namespace ruvllm

#define RUVLLM_DETAIL_CONCAT2(a, b) a##b
#define RUVLLM_DETAIL_CONCAT(a, b) RUVLLM_DETAIL_CONCAT2(a, b)

/// Returns the error of a result-producing expression from the enclosing
/// function, whose return type must be constructible from ruvllm::error.
#define RUVLLM_TRY(expr)                                                                                       \
  do {                                                                                                         \
    if (auto&& ruvllm_try_result_ = (expr); !ruvllm_try_result_) return std::move(ruvllm_try_result_).error(); \
  } while (0)

/// `RUVLLM_TRY_ASSIGN(auto x, f());` declares x from f()'s value, or returns
/// f()'s error from the enclosing function.
#define RUVLLM_TRY_ASSIGN(decl, expr)                                          \
  auto RUVLLM_DETAIL_CONCAT(ruvllm_try_tmp_, __LINE__) = (expr);               \
  if (!RUVLLM_DETAIL_CONCAT(ruvllm_try_tmp_, __LINE__))                        \
    return std::move(RUVLLM_DETAIL_CONCAT(ruvllm_try_tmp_, __LINE__)).error(); \
  decl = std::move(RUVLLM_DETAIL_CONCAT(ruvllm_try_tmp_, __LINE__)).value()

#endif  // RUVLLM_CORE_ERROR_HPP
