#ifndef RUVLLM_CORE_BYTE_WRITER_HPP
#define RUVLLM_CORE_BYTE_WRITER_HPP

// Appending little-endian binary formats to a byte vector: the writing side
// of byte_reader.hpp (which states the little-endian requirement). Values
// are copied as their object representation, so only trivially copyable
// types of fixed size belong in a file format.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

namespace ruvllm {

/// Appends the bytes of one trivially copyable value.
template <class T>
requires std::is_trivially_copyable_v<T>
void append_value(std::vector<std::byte>& out, const T& v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

/// Appends the bytes of a contiguous array of trivially copyable values.
template <class T>
requires std::is_trivially_copyable_v<T>
void append_array(std::vector<std::byte>& out, std::span<const T> values) {
  const auto* p = reinterpret_cast<const std::byte*>(values.data());
  out.insert(out.end(), p, p + values.size_bytes());
}

/// Appends zero bytes up to the next multiple of alignment (a power of two).
inline void append_padding(std::vector<std::byte>& out, std::size_t alignment) {
  while (out.size() % alignment != 0) out.push_back(std::byte{0});
}

/// Overwrites sizeof(T) bytes at offset (a field written before its value was known).
template <class T>
requires std::is_trivially_copyable_v<T>
void patch_value(std::vector<std::byte>& out, std::size_t offset, const T& v) {
  std::memcpy(out.data() + offset, &v, sizeof(T));
}

}  // namespace ruvllm

#endif  // RUVLLM_CORE_BYTE_WRITER_HPP
