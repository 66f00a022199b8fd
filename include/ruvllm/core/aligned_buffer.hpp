#ifndef RUVLLM_CORE_ALIGNED_BUFFER_HPP
#define RUVLLM_CORE_ALIGNED_BUFFER_HPP

// An owning, fixed-size array of trivially copyable elements at a chosen
// alignment (64 bytes by default: one cache line, and the widest SIMD load).
// Allocation happens only in allocate(); failure is a ruvllm::error, never an
// exception or a null dereference.

#include <cstddef>
#include <cstring>
#include <limits>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include "ruvllm/core/error.hpp"

namespace ruvllm {

/// Owning aligned array of Count T. Move-only. Not synchronized.
template <class T, std::size_t Align = 64>
class aligned_buffer {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "aligned_buffer holds trivially copyable, trivially destructible elements");
  static_assert(Align >= alignof(T) && (Align & (Align - 1)) == 0, "Align must be a power of two >= alignof(T)");

 public:
  /// Largest element count allocate() accepts.
  static constexpr std::size_t max_count = std::numeric_limits<std::ptrdiff_t>::max() / sizeof(T);

  aligned_buffer() noexcept = default;
  aligned_buffer(aligned_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  aligned_buffer& operator=(aligned_buffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  aligned_buffer(const aligned_buffer&) = delete;
  aligned_buffer& operator=(const aligned_buffer&) = delete;
  ~aligned_buffer() { release(); }

  /// Allocates count zero-initialized elements.
  [[nodiscard]] static result<aligned_buffer> allocate(std::size_t count) {
    if (count > max_count)
      return make_error(errc::out_of_memory, "aligned_buffer of ", count, " elements exceeds the limit ", max_count);
    aligned_buffer buffer;
    if (count == 0) return buffer;
    void* p = ::operator new (count * sizeof(T), std::align_val_t{Align}, std::nothrow);
    if (p == nullptr)
      return make_error(errc::out_of_memory, "allocating ", count * sizeof(T), " bytes aligned to ", Align, " failed");
    std::memset(p, 0, count * sizeof(T));
    buffer.data_ = static_cast<T*>(p);
    buffer.size_ = count;
    return buffer;
  }

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::span<T> span() noexcept { return {data_, size_}; }
  [[nodiscard]] std::span<const T> span() const noexcept { return {data_, size_}; }
  [[nodiscard]] T* begin() noexcept { return data_; }
  [[nodiscard]] T* end() noexcept { return data_ + size_; }
  [[nodiscard]] const T* begin() const noexcept { return data_; }
  [[nodiscard]] const T* end() const noexcept { return data_ + size_; }
  [[nodiscard]] T& operator[](std::size_t i) noexcept {
    RUVLLM_ASSERT(i < size_);
    return data_[i];
  }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept {
    RUVLLM_ASSERT(i < size_);
    return data_[i];
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) ::operator delete (data_, std::align_val_t{Align});
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace ruvllm

#endif  // RUVLLM_CORE_ALIGNED_BUFFER_HPP
