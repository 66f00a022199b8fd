#ifndef RUVLLM_MEMORY_ARENA_HPP
#define RUVLLM_MEMORY_ARENA_HPP

// memory::arena -- a bump allocator for per-step scratch (activations,
// attention workspaces, logits). A step allocates by moving one offset
// forward and frees everything at once with reset(), so scratch costs no
// heap call and no bookkeeping per allocation; the memory is a span the
// owner provides (typically a pinned alloc_kind::scratch allocation of the
// unified_pool, sized once for the largest step).
//
// Thread-safety: none; one arena per thread (or per step owner). Errors:
// allocate() returns nullptr when the request does not fit (the hot path
// must not build error messages); try_allocate() returns a ruvllm::error
// naming the size and the space left, for callers at a boundary.

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "ruvllm/core/error.hpp"

namespace ruvllm::memory {

/// A bump allocator over caller-owned bytes. Trivially copyable value of
/// three words; does not own its memory, never allocates.
class arena {
 public:
  arena() noexcept = default;
  /// An arena over `memory` (which must outlive every pointer handed out).
  explicit arena(std::span<std::byte> memory) noexcept : base_(memory.data()), size_(memory.size()) {}

  /// `bytes` bytes aligned to `align` (a power of two), or nullptr when they
  /// do not fit. Contents are whatever the last step left.
  [[nodiscard]] std::byte* allocate(std::size_t bytes, std::size_t align = alignof(std::max_align_t)) noexcept {
    RUVLLM_ASSERT(align != 0 && (align & (align - 1)) == 0);
    const auto addr = reinterpret_cast<std::uintptr_t>(base_) + used_;
    const std::size_t pad = (align - (addr & (align - 1))) & (align - 1);
    if (pad > size_ - used_ || bytes > size_ - used_ - pad) return nullptr;
    std::byte* p = base_ + used_ + pad;
    used_ += pad + bytes;
    if (used_ > high_water_) high_water_ = used_;
    return p;
  }

  /// A span of n T (trivially destructible), aligned for T, or an empty span
  /// when it does not fit (n == 0 also yields an empty span).
  template <class T>
  [[nodiscard]] std::span<T> allocate_span(std::size_t n, std::size_t align = alignof(T)) noexcept {
    static_assert(std::is_trivially_destructible_v<T>, "arena memory is never destroyed element-wise");
    if (n == 0 || n > (size_ + 1) / sizeof(T)) return {};
    std::byte* p = allocate(n * sizeof(T), align < alignof(T) ? alignof(T) : align);
    return p == nullptr ? std::span<T>{} : std::span<T>(reinterpret_cast<T*>(p), n);
  }

  /// allocate() with an error naming the request and the space left.
  [[nodiscard]] result<std::byte*> try_allocate(std::size_t bytes, std::size_t align = alignof(std::max_align_t)) {
    if (align == 0 || (align & (align - 1)) != 0)
      return make_error(errc::invalid_argument, "arena alignment ", align, " must be a power of two");
    std::byte* p = allocate(bytes, align);
    if (p == nullptr)
      return make_error(errc::out_of_memory, "arena request of ", bytes, " bytes aligned to ", align, " exceeds the ",
                        size_ - used_, " bytes left of ", size_);
    return p;
  }

  /// Frees everything handed out since construction or the last reset.
  void reset() noexcept { used_ = 0; }

  /// A mark to roll back to (nested scratch inside a step).
  [[nodiscard]] std::size_t mark() const noexcept { return used_; }
  /// Frees everything allocated after `m` (a value from mark()).
  void rewind(std::size_t m) noexcept {
    RUVLLM_ASSERT(m <= used_);
    used_ = m;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return size_; }
  [[nodiscard]] std::size_t used() const noexcept { return used_; }
  [[nodiscard]] std::size_t remaining() const noexcept { return size_ - used_; }
  /// The most bytes in use at once since construction (sizes the arena).
  [[nodiscard]] std::size_t high_water() const noexcept { return high_water_; }

 private:
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::size_t used_ = 0;
  std::size_t high_water_ = 0;
};

}  // namespace ruvllm::memory

#endif  // RUVLLM_MEMORY_ARENA_HPP
