#ifndef RUVLLM_CORE_BYTE_READER_HPP
#define RUVLLM_CORE_BYTE_READER_HPP

// Bounds-checked reading of little-endian binary formats (GGUF, store files).
// Every read checks the remaining length first and every size arithmetic is
// overflow-checked, so a hostile file yields a ruvllm::error naming the file
// and offset instead of a crash or a huge allocation.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "ruvllm/core/error.hpp"

namespace ruvllm {

static_assert(std::endian::native == std::endian::little,
              "ruvllm's file formats are little-endian and it reads them in place");

namespace detail {
template <class T>
concept trivially_copyable = std::is_trivially_copyable_v<T>;
}  // namespace detail

/// a * b, or an error naming both operands when it would overflow.
[[nodiscard]] inline result<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out))
    return make_error(errc::out_of_range, what, ": ", a, " * ", b, " overflows 64 bits");
  return out;
}

/// a + b, or an error naming both operands when it would overflow.
[[nodiscard]] inline result<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b, std::string_view what) {
  std::uint64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    return make_error(errc::out_of_range, what, ": ", a, " + ", b, " overflows 64 bits");
  return out;
}

/// A cursor over immutable bytes. Does not own them and never allocates except
/// to build an error. Not synchronized; cheap to copy.
class byte_reader {
 public:
  /// `source` names the file (or buffer) in errors; `base_offset` is the file
  /// offset of bytes[0], so errors report absolute offsets.
  explicit byte_reader(std::span<const std::byte> bytes, std::string_view source = {},
                       std::uint64_t base_offset = 0) noexcept
      : bytes_(bytes), source_(source), base_(base_offset) {}

  [[nodiscard]] std::size_t position() const noexcept { return pos_; }
  [[nodiscard]] std::uint64_t file_offset() const noexcept { return base_ + pos_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] std::size_t remaining() const noexcept { return bytes_.size() - pos_; }
  [[nodiscard]] std::string_view source() const noexcept { return source_; }

  /// Reads one trivially copyable value (unaligned reads are fine).
  template <detail::trivially_copyable T>
  [[nodiscard]] result<T> read(std::string_view what = "value") {
    if (remaining() < sizeof(T)) return truncated(what, sizeof(T));
    T out;
    std::memcpy(&out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return out;
  }

  /// Returns a view of the next n bytes and advances past them.
  [[nodiscard]] result<std::span<const std::byte>> read_bytes(std::uint64_t n, std::string_view what = "bytes") {
    if (n > remaining()) return truncated(what, n);
    std::span<const std::byte> out = bytes_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return out;
  }

  /// Returns the next n bytes as characters (not validated as UTF-8).
  [[nodiscard]] result<std::string_view> read_string(std::uint64_t n, std::string_view what = "string") {
    RUVLLM_TRY_ASSIGN(auto bytes, read_bytes(n, what));
    return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }

  [[nodiscard]] result<void> skip(std::uint64_t n, std::string_view what = "bytes") {
    if (n > remaining()) return truncated(what, n);
    pos_ += static_cast<std::size_t>(n);
    return {};
  }

  /// Moves to an absolute position within the span (not the file).
  [[nodiscard]] result<void> seek(std::uint64_t position) {
    if (position > bytes_.size())
      return fail(errc::corrupt_data, "seek to ", position, " past the end (size ", bytes_.size(), ")");
    pos_ = static_cast<std::size_t>(position);
    return {};
  }

  /// Advances to the next multiple of alignment (a power of two) in file offsets.
  [[nodiscard]] result<void> align_to(std::uint64_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      return fail(errc::corrupt_data, "alignment ", alignment, " is not a power of two");
    const std::uint64_t pad = (alignment - file_offset() % alignment) % alignment;
    return skip(pad, "alignment padding");
  }

  /// An error at the current offset of this reader's source.
  template <class... Parts>
  [[nodiscard]] error fail(errc code, const Parts&... parts) const {
    return make_error(code, parts...).at(source_, file_offset());
  }

 private:
  [[nodiscard]] error truncated(std::string_view what, std::uint64_t wanted) const {
    return fail(errc::corrupt_data, "truncated: ", what, " needs ", wanted, " bytes but ", remaining(), " remain");
  }

  std::span<const std::byte> bytes_;
  std::string_view source_;
  std::uint64_t base_ = 0;
  std::size_t pos_ = 0;
};

}  // namespace ruvllm

#endif  // RUVLLM_CORE_BYTE_READER_HPP
