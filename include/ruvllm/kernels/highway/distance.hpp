#ifndef RUVLLM_KERNELS_HIGHWAY_DISTANCE_HPP
#define RUVLLM_KERNELS_HIGHWAY_DISTANCE_HPP

// Distance entry points of backend::highway: the bodies in distance-inl.h
// through runtime dispatch. Same overloads and contract as
// distance_ops<backend::scalar> (ruvllm/kernels/scalar/distance.hpp); each
// call, one-to-many included, pays one dispatch (~1.3 ns).

#include <cstddef>
#include <cstdint>

#include "ruvllm/core/config.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/scalar/distance.hpp"

namespace ruvllm::kernels {

template <>
struct distance_ops<backend::highway> {
  // ---- dot
  /// Dot product of two f32 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float dot(const float* a, const float* b, std::size_t n) noexcept {
    return dispatch::distance_dot_f32(a, b, n);
  }
  /// Dot product of two f16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float dot(const f16* a, const f16* b, std::size_t n) noexcept {
    return dispatch::distance_dot_f16(a, b, n);
  }
  /// Dot product of two bf16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float dot(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return dispatch::distance_dot_bf16(a, b, n);
  }
  /// Dot product of two int8 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static std::int32_t dot(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_dot_max_length);
    return dispatch::distance_dot_i8(a, b, n);
  }
  // ---- l2sq
  /// Squared Euclidean distance of two f32 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l2sq(const float* a, const float* b, std::size_t n) noexcept {
    return dispatch::distance_l2sq_f32(a, b, n);
  }
  /// Squared Euclidean distance of two f16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l2sq(const f16* a, const f16* b, std::size_t n) noexcept {
    return dispatch::distance_l2sq_f16(a, b, n);
  }
  /// Squared Euclidean distance of two bf16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l2sq(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return dispatch::distance_l2sq_bf16(a, b, n);
  }
  /// Squared Euclidean distance of two int8 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static std::int32_t l2sq(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_l2sq_max_length);
    return dispatch::distance_l2sq_i8(a, b, n);
  }
  // ---- l1
  /// Manhattan distance of two f32 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l1(const float* a, const float* b, std::size_t n) noexcept {
    return dispatch::distance_l1_f32(a, b, n);
  }
  /// Manhattan distance of two f16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l1(const f16* a, const f16* b, std::size_t n) noexcept {
    return dispatch::distance_l1_f16(a, b, n);
  }
  /// Manhattan distance of two bf16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float l1(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return dispatch::distance_l1_bf16(a, b, n);
  }
  /// Manhattan distance of two int8 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static std::int32_t l1(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_l1_max_length);
    return dispatch::distance_l1_i8(a, b, n);
  }
  // ---- cosine
  /// Cosine similarity of two f32 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float cosine(const float* a, const float* b, std::size_t n) noexcept {
    return dispatch::distance_cosine_f32(a, b, n);
  }
  /// Cosine similarity of two f16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float cosine(const f16* a, const f16* b, std::size_t n) noexcept {
    return dispatch::distance_cosine_f16(a, b, n);
  }
  /// Cosine similarity of two bf16 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float cosine(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return dispatch::distance_cosine_bf16(a, b, n);
  }
  /// Cosine similarity of two int8 vectors (see distance_ops<backend::scalar>).
  [[nodiscard]] static float cosine(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_dot_max_length);
    return dispatch::distance_cosine_i8(a, b, n);
  }
  // ---- dot_many: one dispatch for all rows
  /// dot of a f32 query against each of row_count rows, row_stride elements apart.
  static void dot_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                       std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_dot_many_f32(query, rows, n, row_count, row_stride, out);
  }
  /// dot of a f16 query against each of row_count rows, row_stride elements apart.
  static void dot_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                       float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_dot_many_f16(query, rows, n, row_count, row_stride, out);
  }
  /// dot of a bf16 query against each of row_count rows, row_stride elements apart.
  static void dot_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count,
                       std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_dot_many_bf16(query, rows, n, row_count, row_stride, out);
  }
  /// dot of a int8 query against each of row_count rows, row_stride elements apart.
  static void dot_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                       std::size_t row_stride, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_dot_max_length);
    dispatch::distance_dot_many_i8(query, rows, n, row_count, row_stride, out);
  }
  // ---- l2sq_many: one dispatch for all rows
  /// l2sq of a f32 query against each of row_count rows, row_stride elements apart.
  static void l2sq_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_l2sq_many_f32(query, rows, n, row_count, row_stride, out);
  }
  /// l2sq of a f16 query against each of row_count rows, row_stride elements apart.
  static void l2sq_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                        float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_l2sq_many_f16(query, rows, n, row_count, row_stride, out);
  }
  /// l2sq of a bf16 query against each of row_count rows, row_stride elements apart.
  static void l2sq_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_l2sq_many_bf16(query, rows, n, row_count, row_stride, out);
  }
  /// l2sq of a int8 query against each of row_count rows, row_stride elements apart.
  static void l2sq_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_l2sq_max_length);
    dispatch::distance_l2sq_many_i8(query, rows, n, row_count, row_stride, out);
  }
  // ---- l1_many: one dispatch for all rows
  /// l1 of a f32 query against each of row_count rows, row_stride elements apart.
  static void l1_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                      std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_l1_many_f32(query, rows, n, row_count, row_stride, out);
  }
  /// l1 of a f16 query against each of row_count rows, row_stride elements apart.
  static void l1_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                      float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_l1_many_f16(query, rows, n, row_count, row_stride, out);
  }
  /// l1 of a bf16 query against each of row_count rows, row_stride elements apart.
  static void l1_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                      float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_l1_many_bf16(query, rows, n, row_count, row_stride, out);
  }
  /// l1 of a int8 query against each of row_count rows, row_stride elements apart.
  static void l1_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                      std::size_t row_stride, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_l1_max_length);
    dispatch::distance_l1_many_i8(query, rows, n, row_count, row_stride, out);
  }
  // ---- cosine_many: one dispatch for all rows
  /// cosine of a f32 query against each of row_count rows, row_stride elements apart.
  static void cosine_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_cosine_many_f32(query, rows, n, row_count, row_stride, out);
  }
  /// cosine of a f16 query against each of row_count rows, row_stride elements apart.
  static void cosine_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_cosine_many_f16(query, rows, n, row_count, row_stride, out);
  }
  /// cosine of a bf16 query against each of row_count rows, row_stride elements apart.
  static void cosine_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    dispatch::distance_cosine_many_bf16(query, rows, n, row_count, row_stride, out);
  }
  /// cosine of a int8 query against each of row_count rows, row_stride elements apart.
  static void cosine_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_dot_max_length);
    dispatch::distance_cosine_many_i8(query, rows, n, row_count, row_stride, out);
  }

  // ---- hamming over std::uint64_t words
  /// Number of differing bits of `words` 64-bit words.
  [[nodiscard]] static std::uint64_t hamming(const std::uint64_t* a, const std::uint64_t* b,
                                             std::size_t words) noexcept {
    return dispatch::distance_hamming_u64(a, b, words);
  }
  /// Hamming distance of query against each of row_count rows, row_stride words apart.
  static void hamming_many(const std::uint64_t* query, const std::uint64_t* rows, std::size_t words,
                           std::size_t row_count, std::size_t row_stride, std::uint64_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(words, row_count, row_stride));
    dispatch::distance_hamming_many_u64(query, rows, words, row_count, row_stride, out);
  }
  // ---- dot_gather: one dispatch for all rows, the next row prefetched
  /// dot of a f32 query against each row rows[r].
  static void dot_gather(const float* query, const float* const* rows, std::size_t n, std::size_t row_count,
                         float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    dispatch::distance_dot_gather_f32(query, rows, n, row_count, out);
  }
  /// dot of a f16 query against each row rows[r].
  static void dot_gather(const f16* query, const f16* const* rows, std::size_t n, std::size_t row_count,
                         float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    dispatch::distance_dot_gather_f16(query, rows, n, row_count, out);
  }
  /// dot of a bf16 query against each row rows[r].
  static void dot_gather(const bf16* query, const bf16* const* rows, std::size_t n, std::size_t row_count,
                         float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    dispatch::distance_dot_gather_bf16(query, rows, n, row_count, out);
  }
  /// dot of a i8 query against each row rows[r].
  static void dot_gather(const std::int8_t* query, const std::int8_t* const* rows, std::size_t n, std::size_t row_count,
                         std::int32_t* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || (rows != nullptr && n <= int8_dot_max_length));
    dispatch::distance_dot_gather_i8(query, rows, n, row_count, out);
  }
  // ---- l2sq_gather: one dispatch for all rows, the next row prefetched
  /// l2sq of a f32 query against each row rows[r].
  static void l2sq_gather(const float* query, const float* const* rows, std::size_t n, std::size_t row_count,
                          float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    dispatch::distance_l2sq_gather_f32(query, rows, n, row_count, out);
  }
  /// l2sq of a f16 query against each row rows[r].
  static void l2sq_gather(const f16* query, const f16* const* rows, std::size_t n, std::size_t row_count,
                          float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    dispatch::distance_l2sq_gather_f16(query, rows, n, row_count, out);
  }
  /// l2sq of a bf16 query against each row rows[r].
  static void l2sq_gather(const bf16* query, const bf16* const* rows, std::size_t n, std::size_t row_count,
                          float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    dispatch::distance_l2sq_gather_bf16(query, rows, n, row_count, out);
  }
  /// l2sq of a i8 query against each row rows[r].
  static void l2sq_gather(const std::int8_t* query, const std::int8_t* const* rows, std::size_t n,
                          std::size_t row_count, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || (rows != nullptr && n <= int8_l2sq_max_length));
    dispatch::distance_l2sq_gather_i8(query, rows, n, row_count, out);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_DISTANCE_HPP
