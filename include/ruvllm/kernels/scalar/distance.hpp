#ifndef RUVLLM_KERNELS_SCALAR_DISTANCE_HPP
#define RUVLLM_KERNELS_SCALAR_DISTANCE_HPP

// Scalar reference distance kernels: the results every SIMD backend is
// tested against, so they favour the obvious loop over speed. Also the
// contract of the whole family, which every backend's distance_ops shares:
//
// Kernels, for vectors a and b of n elements:
//   dot(a, b)    = sum a[i] * b[i]
//   l2sq(a, b)   = sum (a[i] - b[i])^2        (squared Euclidean distance)
//   l1(a, b)     = sum |a[i] - b[i]|          (Manhattan distance)
//   cosine(a, b) = dot(a, b) / sqrt(dot(a, a) * dot(b, b)), a similarity
//                  clamped to [-1, 1]; 0 when either vector is zero (its sum
//                  of squares is 0, which includes vectors so small that
//                  every square underflows in float)
//   hamming(a, b) = number of differing bits of two bit-packed vectors
//
// Element types (overloads on the pointer type):
//   float, ruvllm::f16, ruvllm::bf16: halves are widened exactly to float
//     (ruvllm::to_float) and every sum is accumulated in float, so results
//     of different backends and targets differ only by rounding, within
//     n * eps * sum of |terms| (summation order and FMA differ). cosine's
//     final division is done in double from the three float sums.
//   std::int8_t: exact integer arithmetic; dot, l2sq and l1 return
//     std::int32_t, cosine returns float computed in double from the exact
//     integer sums, so every backend returns identical bits. int32 is exact
//     up to the lengths in int8_*_max_length below (a precondition, checked
//     in debug builds; longer vectors overflow the 32-bit accumulators).
//   hamming: std::uint64_t words; bit j of the vector is bit j % 64 of word
//     j / 64 (the natural order of std::bitset or of packing with shifts on
//     a little-endian machine); n counts words, and unused bits of the last
//     word must be equal (e.g. zero) in both vectors. Returns std::uint64_t.
//
// Forms:
//   one-to-one:  f(a, b, n)
//   one-to-many: f_many(query, rows, n, row_count, row_stride, out) writes
//     out[r] = f(query, rows + r * row_stride, n) for r < row_count, with the
//     same bits as the one-to-one call on that backend (and target). One call
//     per batch: the Highway backend pays its dispatch (~1.3 ns) once, not
//     per row; cosine_many computes the query's norm once. row_stride is in
//     elements (words for hamming) and is >= n when row_count > 1; out must
//     not overlap the inputs.
//
//   gather: f_gather(query, rows, n, row_count, out) writes
//     out[r] = f(query, rows[r], n) for r < row_count, rows being an array of
//     row pointers (any addresses, e.g. the neighbours of a graph node),
//     with the bits of the one-to-one call on that backend (and target). The
//     Highway backend also prefetches the next row while it computes one.
//     dot and l2sq only.
//
// Common preconditions: pointers may be null only when n == 0 (rows and out
// only when row_count == 0); any alignment. Non-finite inputs give
// non-finite or unspecified results. No kernel allocates, throws or reads
// past the n elements (row_count rows) it was given.

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/config.hpp"
#include "ruvllm/core/half.hpp"

namespace ruvllm::kernels {

/// Distance entry points of backend B (one specialization per backend); the
/// contract is at the top of ruvllm/kernels/scalar/distance.hpp.
template <Backend B>
struct distance_ops;

/// Longest int8 vectors whose dot product, and cosine's three sums, are
/// exact in std::int32_t for any values: |a[i] * b[i]| <= 128 * 128.
inline constexpr std::size_t int8_dot_max_length = 131071;
/// Longest int8 vectors whose l2sq is exact in std::int32_t: (a - b)^2 <= 255^2.
inline constexpr std::size_t int8_l2sq_max_length = 33025;
/// Longest int8 vectors whose l1 is exact in std::int32_t: |a - b| <= 255.
inline constexpr std::size_t int8_l1_max_length = 8421504;

namespace distance_detail {

inline constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();

// Each limit is the largest length whose worst case still fits.
static_assert(int8_dot_max_length * 128 * 128 <= int32_max && (int8_dot_max_length + 1) * 128 * 128 > int32_max);
static_assert(int8_l2sq_max_length * 255 * 255 <= int32_max && (int8_l2sq_max_length + 1) * 255 * 255 > int32_max);
static_assert(int8_l1_max_length * 255 <= int32_max && (int8_l1_max_length + 1) * 255 > int32_max);

/// The cosine similarity from its three sums, shared by every backend so
/// that equal sums give equal bits: in double, so that the product of two
/// large float norms cannot overflow; clamped to [-1, 1], which rounding
/// can otherwise leave by an ulp; 0 for a zero vector. NaN propagates.
[[nodiscard]] inline float cosine_from_sums(double dot, double norm_a, double norm_b) noexcept {
  if (norm_a == 0.0 || norm_b == 0.0) return 0.0f;
  const double c = dot / std::sqrt(norm_a * norm_b);
  if (c > 1.0) return 1.0f;
  if (c < -1.0) return -1.0f;
  return static_cast<float>(c);
}

/// The one-to-many shape precondition: rows do not overlap each other.
[[nodiscard]] constexpr bool rows_fit(std::size_t n, std::size_t row_count, std::size_t row_stride) noexcept {
  return row_count <= 1 || row_stride >= n;
}

[[nodiscard]] constexpr float widen(float x) noexcept { return x; }
[[nodiscard]] constexpr float widen(f16 x) noexcept { return to_float(x); }
[[nodiscard]] constexpr float widen(bf16 x) noexcept { return to_float(x); }

template <class T>
[[nodiscard]] float dot(const T* a, const T* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += widen(a[i]) * widen(b[i]);
  return sum;
}

template <class T>
[[nodiscard]] float l2sq(const T* a, const T* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float d = widen(a[i]) - widen(b[i]);
    sum += d * d;
  }
  return sum;
}

template <class T>
[[nodiscard]] float l1(const T* a, const T* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += std::fabs(widen(a[i]) - widen(b[i]));
  return sum;
}

template <class T>
[[nodiscard]] float squared_norm(const T* a, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += widen(a[i]) * widen(a[i]);
  return sum;
}

// cosine computes its three sums in one pass; each sum runs left to right
// on its own, so cosine_many's separately computed query norm has the same
// bits as the one cosine computes.
template <class T>
[[nodiscard]] float cosine(const T* a, const T* b, std::size_t n) noexcept {
  float ab = 0.0f, aa = 0.0f, bb = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = widen(a[i]), y = widen(b[i]);
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return cosine_from_sums(ab, aa, bb);
}

template <class T>
void cosine_many(const T* query, const T* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                 float* out) noexcept {
  const float qq = squared_norm(query, n);
  for (std::size_t r = 0; r < row_count; ++r) {
    const T* row = rows + r * row_stride;
    float ab = 0.0f, bb = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
      const float x = widen(query[i]), y = widen(row[i]);
      ab += x * y;
      bb += y * y;
    }
    out[r] = cosine_from_sums(ab, qq, bb);
  }
}

// int8: products and sums in int64, which cannot overflow for any length
// that fits in memory; the results fit int32 under the documented limits.
[[nodiscard]] inline std::int64_t dot_i64(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += std::int64_t{a[i]} * b[i];
  return sum;
}

[[nodiscard]] inline float cosine_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  return cosine_from_sums(static_cast<double>(dot_i64(a, b, n)), static_cast<double>(dot_i64(a, a, n)),
                          static_cast<double>(dot_i64(b, b, n)));
}

}  // namespace distance_detail

namespace scalar {

// The references, one overload per element type; see the file comment.

/// Sum of a[i] * b[i], accumulated left to right in float.
[[nodiscard]] inline float dot(const float* a, const float* b, std::size_t n) noexcept {
  return distance_detail::dot(a, b, n);
}
[[nodiscard]] inline float dot(const f16* a, const f16* b, std::size_t n) noexcept {
  return distance_detail::dot(a, b, n);
}
[[nodiscard]] inline float dot(const bf16* a, const bf16* b, std::size_t n) noexcept {
  return distance_detail::dot(a, b, n);
}
[[nodiscard]] inline std::int32_t dot(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  return static_cast<std::int32_t>(distance_detail::dot_i64(a, b, n));
}

/// Sum of (a[i] - b[i])^2, left to right in float (exact for int8).
[[nodiscard]] inline float l2sq(const float* a, const float* b, std::size_t n) noexcept {
  return distance_detail::l2sq(a, b, n);
}
[[nodiscard]] inline float l2sq(const f16* a, const f16* b, std::size_t n) noexcept {
  return distance_detail::l2sq(a, b, n);
}
[[nodiscard]] inline float l2sq(const bf16* a, const bf16* b, std::size_t n) noexcept {
  return distance_detail::l2sq(a, b, n);
}
[[nodiscard]] inline std::int32_t l2sq(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t d = std::int64_t{a[i]} - b[i];
    sum += d * d;
  }
  return static_cast<std::int32_t>(sum);
}

/// Sum of |a[i] - b[i]|, left to right in float (exact for int8).
[[nodiscard]] inline float l1(const float* a, const float* b, std::size_t n) noexcept {
  return distance_detail::l1(a, b, n);
}
[[nodiscard]] inline float l1(const f16* a, const f16* b, std::size_t n) noexcept {
  return distance_detail::l1(a, b, n);
}
[[nodiscard]] inline float l1(const bf16* a, const bf16* b, std::size_t n) noexcept {
  return distance_detail::l1(a, b, n);
}
[[nodiscard]] inline std::int32_t l1(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t d = std::int64_t{a[i]} - b[i];
    sum += d < 0 ? -d : d;
  }
  return static_cast<std::int32_t>(sum);
}

/// Cosine similarity in [-1, 1] (0 for a zero vector) from three float sums
/// run left to right (exact integer sums for int8).
[[nodiscard]] inline float cosine(const float* a, const float* b, std::size_t n) noexcept {
  return distance_detail::cosine(a, b, n);
}
[[nodiscard]] inline float cosine(const f16* a, const f16* b, std::size_t n) noexcept {
  return distance_detail::cosine(a, b, n);
}
[[nodiscard]] inline float cosine(const bf16* a, const bf16* b, std::size_t n) noexcept {
  return distance_detail::cosine(a, b, n);
}
[[nodiscard]] inline float cosine(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  return distance_detail::cosine_i8(a, b, n);
}

/// Number of differing bits of `words` 64-bit words.
[[nodiscard]] inline std::uint64_t hamming(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < words; ++i) sum += static_cast<std::uint64_t>(std::popcount(a[i] ^ b[i]));
  return sum;
}

/// One-to-many forms: out[r] = f(query, rows + r * row_stride, n).
template <class T, class R>
void dot_many(const T* query, const T* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
              R* out) noexcept {
  for (std::size_t r = 0; r < row_count; ++r) out[r] = dot(query, rows + r * row_stride, n);
}
template <class T, class R>
void l2sq_many(const T* query, const T* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
               R* out) noexcept {
  for (std::size_t r = 0; r < row_count; ++r) out[r] = l2sq(query, rows + r * row_stride, n);
}
template <class T, class R>
void l1_many(const T* query, const T* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
             R* out) noexcept {
  for (std::size_t r = 0; r < row_count; ++r) out[r] = l1(query, rows + r * row_stride, n);
}
template <class T>
void cosine_many(const T* query, const T* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                 float* out) noexcept {
  distance_detail::cosine_many(query, rows, n, row_count, row_stride, out);
}
inline void cosine_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, float* out) noexcept {
  const auto qq = static_cast<double>(distance_detail::dot_i64(query, query, n));
  for (std::size_t r = 0; r < row_count; ++r) {
    const std::int8_t* row = rows + r * row_stride;
    out[r] = distance_detail::cosine_from_sums(static_cast<double>(distance_detail::dot_i64(query, row, n)), qq,
                                               static_cast<double>(distance_detail::dot_i64(row, row, n)));
  }
}
/// Gather forms: out[r] = f(query, rows[r], n).
template <class T, class R>
void dot_gather(const T* query, const T* const* rows, std::size_t n, std::size_t row_count, R* out) noexcept {
  for (std::size_t r = 0; r < row_count; ++r) out[r] = dot(query, rows[r], n);
}
template <class T, class R>
void l2sq_gather(const T* query, const T* const* rows, std::size_t n, std::size_t row_count, R* out) noexcept {
  for (std::size_t r = 0; r < row_count; ++r) out[r] = l2sq(query, rows[r], n);
}
inline void hamming_many(const std::uint64_t* query, const std::uint64_t* rows, std::size_t words,
                         std::size_t row_count, std::size_t row_stride, std::uint64_t* out) noexcept {
  for (std::size_t r = 0; r < row_count; ++r) out[r] = hamming(query, rows + r * row_stride, words);
}

}  // namespace scalar

// The entry points of backend::scalar; every backend's distance_ops has the
// same overloads with the same contract (file comment). The precondition
// checks live here, at the entry points, so the kernels stay branch-free.
template <>
struct distance_ops<backend::scalar> {
  // ---- dot: sum a[i] * b[i]
  /// Dot product of two float vectors of n elements.
  [[nodiscard]] static float dot(const float* a, const float* b, std::size_t n) noexcept {
    return scalar::dot(a, b, n);
  }
  /// Dot product of two f16 vectors, accumulated in float.
  [[nodiscard]] static float dot(const f16* a, const f16* b, std::size_t n) noexcept { return scalar::dot(a, b, n); }
  /// Dot product of two bf16 vectors, accumulated in float.
  [[nodiscard]] static float dot(const bf16* a, const bf16* b, std::size_t n) noexcept { return scalar::dot(a, b, n); }
  /// Exact dot product of two int8 vectors; n <= int8_dot_max_length.
  [[nodiscard]] static std::int32_t dot(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_dot_max_length);
    return scalar::dot(a, b, n);
  }

  // ---- l2sq: sum (a[i] - b[i])^2
  /// Squared Euclidean distance of two float vectors.
  [[nodiscard]] static float l2sq(const float* a, const float* b, std::size_t n) noexcept {
    return scalar::l2sq(a, b, n);
  }
  /// Squared Euclidean distance of two f16 vectors, accumulated in float.
  [[nodiscard]] static float l2sq(const f16* a, const f16* b, std::size_t n) noexcept { return scalar::l2sq(a, b, n); }
  /// Squared Euclidean distance of two bf16 vectors, accumulated in float.
  [[nodiscard]] static float l2sq(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return scalar::l2sq(a, b, n);
  }
  /// Exact squared Euclidean distance of two int8 vectors; n <= int8_l2sq_max_length.
  [[nodiscard]] static std::int32_t l2sq(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_l2sq_max_length);
    return scalar::l2sq(a, b, n);
  }

  // ---- l1: sum |a[i] - b[i]|
  /// Manhattan distance of two float vectors.
  [[nodiscard]] static float l1(const float* a, const float* b, std::size_t n) noexcept { return scalar::l1(a, b, n); }
  /// Manhattan distance of two f16 vectors, accumulated in float.
  [[nodiscard]] static float l1(const f16* a, const f16* b, std::size_t n) noexcept { return scalar::l1(a, b, n); }
  /// Manhattan distance of two bf16 vectors, accumulated in float.
  [[nodiscard]] static float l1(const bf16* a, const bf16* b, std::size_t n) noexcept { return scalar::l1(a, b, n); }
  /// Exact Manhattan distance of two int8 vectors; n <= int8_l1_max_length.
  [[nodiscard]] static std::int32_t l1(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_l1_max_length);
    return scalar::l1(a, b, n);
  }

  // ---- cosine: similarity in [-1, 1], 0 for a zero vector
  /// Cosine similarity of two float vectors.
  [[nodiscard]] static float cosine(const float* a, const float* b, std::size_t n) noexcept {
    return scalar::cosine(a, b, n);
  }
  /// Cosine similarity of two f16 vectors (sums in float).
  [[nodiscard]] static float cosine(const f16* a, const f16* b, std::size_t n) noexcept {
    return scalar::cosine(a, b, n);
  }
  /// Cosine similarity of two bf16 vectors (sums in float).
  [[nodiscard]] static float cosine(const bf16* a, const bf16* b, std::size_t n) noexcept {
    return scalar::cosine(a, b, n);
  }
  /// Cosine similarity of two int8 vectors (exact integer sums); n <= int8_dot_max_length.
  [[nodiscard]] static float cosine(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
    RUVLLM_ASSERT(n <= int8_dot_max_length);
    return scalar::cosine(a, b, n);
  }

  // ---- hamming: differing bits of bit-packed vectors of `words` uint64 words
  /// Number of differing bits.
  [[nodiscard]] static std::uint64_t hamming(const std::uint64_t* a, const std::uint64_t* b,
                                             std::size_t words) noexcept {
    return scalar::hamming(a, b, words);
  }

  // ---- one-to-many: out[r] = f(query, rows + r * row_stride, n), r < row_count
  /// dot of query against each of row_count rows (row_stride elements apart).
  static void dot_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                       std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::dot_many(query, rows, n, row_count, row_stride, out);
  }
  /// dot of an f16 query against each of row_count f16 rows.
  static void dot_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                       float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::dot_many(query, rows, n, row_count, row_stride, out);
  }
  /// dot of a bf16 query against each of row_count bf16 rows.
  static void dot_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count,
                       std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::dot_many(query, rows, n, row_count, row_stride, out);
  }
  /// Exact dot of an int8 query against each of row_count int8 rows.
  static void dot_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                       std::size_t row_stride, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_dot_max_length);
    scalar::dot_many(query, rows, n, row_count, row_stride, out);
  }
  /// l2sq of query against each of row_count rows.
  static void l2sq_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::l2sq_many(query, rows, n, row_count, row_stride, out);
  }
  /// l2sq of an f16 query against each of row_count f16 rows.
  static void l2sq_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                        float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::l2sq_many(query, rows, n, row_count, row_stride, out);
  }
  /// l2sq of a bf16 query against each of row_count bf16 rows.
  static void l2sq_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::l2sq_many(query, rows, n, row_count, row_stride, out);
  }
  /// Exact l2sq of an int8 query against each of row_count int8 rows.
  static void l2sq_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                        std::size_t row_stride, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_l2sq_max_length);
    scalar::l2sq_many(query, rows, n, row_count, row_stride, out);
  }
  /// l1 of query against each of row_count rows.
  static void l1_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                      std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::l1_many(query, rows, n, row_count, row_stride, out);
  }
  /// l1 of an f16 query against each of row_count f16 rows.
  static void l1_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                      float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::l1_many(query, rows, n, row_count, row_stride, out);
  }
  /// l1 of a bf16 query against each of row_count bf16 rows.
  static void l1_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count, std::size_t row_stride,
                      float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::l1_many(query, rows, n, row_count, row_stride, out);
  }
  /// Exact l1 of an int8 query against each of row_count int8 rows.
  static void l1_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                      std::size_t row_stride, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_l1_max_length);
    scalar::l1_many(query, rows, n, row_count, row_stride, out);
  }
  /// Cosine of query against each of row_count rows; the query norm is computed once.
  static void cosine_many(const float* query, const float* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::cosine_many(query, rows, n, row_count, row_stride, out);
  }
  /// Cosine of an f16 query against each of row_count f16 rows.
  static void cosine_many(const f16* query, const f16* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::cosine_many(query, rows, n, row_count, row_stride, out);
  }
  /// Cosine of a bf16 query against each of row_count bf16 rows.
  static void cosine_many(const bf16* query, const bf16* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride));
    scalar::cosine_many(query, rows, n, row_count, row_stride, out);
  }
  /// Cosine of an int8 query against each of row_count int8 rows.
  static void cosine_many(const std::int8_t* query, const std::int8_t* rows, std::size_t n, std::size_t row_count,
                          std::size_t row_stride, float* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(n, row_count, row_stride) && n <= int8_dot_max_length);
    scalar::cosine_many(query, rows, n, row_count, row_stride, out);
  }
  /// Hamming distance of query against each of row_count rows (row_stride words apart).
  static void hamming_many(const std::uint64_t* query, const std::uint64_t* rows, std::size_t words,
                           std::size_t row_count, std::size_t row_stride, std::uint64_t* out) noexcept {
    RUVLLM_ASSERT(distance_detail::rows_fit(words, row_count, row_stride));
    scalar::hamming_many(query, rows, words, row_count, row_stride, out);
  }
  // ---- dot_gather: out[r] = dot(query, rows[r], n)
  static void dot_gather(const float* query, const float* const* rows, std::size_t n, std::size_t row_count,
                         float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    scalar::dot_gather(query, rows, n, row_count, out);
  }
  static void dot_gather(const f16* query, const f16* const* rows, std::size_t n, std::size_t row_count,
                         float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    scalar::dot_gather(query, rows, n, row_count, out);
  }
  static void dot_gather(const bf16* query, const bf16* const* rows, std::size_t n, std::size_t row_count,
                         float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    scalar::dot_gather(query, rows, n, row_count, out);
  }
  static void dot_gather(const std::int8_t* query, const std::int8_t* const* rows, std::size_t n, std::size_t row_count,
                         std::int32_t* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || (rows != nullptr && n <= int8_dot_max_length));
    scalar::dot_gather(query, rows, n, row_count, out);
  }
  // ---- l2sq_gather: out[r] = l2sq(query, rows[r], n)
  static void l2sq_gather(const float* query, const float* const* rows, std::size_t n, std::size_t row_count,
                          float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    scalar::l2sq_gather(query, rows, n, row_count, out);
  }
  static void l2sq_gather(const f16* query, const f16* const* rows, std::size_t n, std::size_t row_count,
                          float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    scalar::l2sq_gather(query, rows, n, row_count, out);
  }
  static void l2sq_gather(const bf16* query, const bf16* const* rows, std::size_t n, std::size_t row_count,
                          float* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || rows != nullptr);
    scalar::l2sq_gather(query, rows, n, row_count, out);
  }
  static void l2sq_gather(const std::int8_t* query, const std::int8_t* const* rows, std::size_t n,
                          std::size_t row_count, std::int32_t* out) noexcept {
    RUVLLM_ASSERT(row_count == 0 || (rows != nullptr && n <= int8_l2sq_max_length));
    scalar::l2sq_gather(query, rows, n, row_count, out);
  }
};

}  // namespace ruvllm::kernels

// The family's rows of the Highway dispatch table (RUVLLM_KERNELS_EXPORTED in
// ruvllm/kernels/dispatch.hpp, which includes this header), in the form
// X(return type, name, (parameters), (arguments)). Each name is defined per
// target in distance-inl.h and called by kernels/highway/distance.hpp.
#define RUVLLM_DETAIL_DISTANCE_PAIR(X, R, NAME, T) X(R, NAME, (const T* a, const T* b, std::size_t n), (a, b, n))
#define RUVLLM_DETAIL_DISTANCE_MANY(X, R, NAME, T)                                                                     \
  X(void, NAME, (const T* query, const T* rows, std::size_t n, std::size_t row_count, std::size_t row_stride, R* out), \
    (query, rows, n, row_count, row_stride, out))
#define RUVLLM_DETAIL_DISTANCE_METRIC(X, METRIC, R_I8)                               \
  RUVLLM_DETAIL_DISTANCE_PAIR(X, float, distance_##METRIC##_f32, float)              \
  RUVLLM_DETAIL_DISTANCE_PAIR(X, float, distance_##METRIC##_f16, ruvllm::f16)        \
  RUVLLM_DETAIL_DISTANCE_PAIR(X, float, distance_##METRIC##_bf16, ruvllm::bf16)      \
  RUVLLM_DETAIL_DISTANCE_PAIR(X, R_I8, distance_##METRIC##_i8, std::int8_t)          \
  RUVLLM_DETAIL_DISTANCE_MANY(X, float, distance_##METRIC##_many_f32, float)         \
  RUVLLM_DETAIL_DISTANCE_MANY(X, float, distance_##METRIC##_many_f16, ruvllm::f16)   \
  RUVLLM_DETAIL_DISTANCE_MANY(X, float, distance_##METRIC##_many_bf16, ruvllm::bf16) \
  RUVLLM_DETAIL_DISTANCE_MANY(X, R_I8, distance_##METRIC##_many_i8, std::int8_t)
#define RUVLLM_DETAIL_DISTANCE_GATHER(X, R, NAME, T)                                                  \
  X(void, NAME, (const T* query, const T* const* rows, std::size_t n, std::size_t row_count, R* out), \
    (query, rows, n, row_count, out))
#define RUVLLM_DETAIL_DISTANCE_GATHERS(X, METRIC, R_I8)                                  \
  RUVLLM_DETAIL_DISTANCE_GATHER(X, float, distance_##METRIC##_gather_f32, float)         \
  RUVLLM_DETAIL_DISTANCE_GATHER(X, float, distance_##METRIC##_gather_f16, ruvllm::f16)   \
  RUVLLM_DETAIL_DISTANCE_GATHER(X, float, distance_##METRIC##_gather_bf16, ruvllm::bf16) \
  RUVLLM_DETAIL_DISTANCE_GATHER(X, R_I8, distance_##METRIC##_gather_i8, std::int8_t)
#define RUVLLM_DISTANCE_EXPORTED(X)                                                                           \
  RUVLLM_DETAIL_DISTANCE_METRIC(X, dot, std::int32_t)                                                         \
  RUVLLM_DETAIL_DISTANCE_GATHERS(X, dot, std::int32_t)                                                        \
  RUVLLM_DETAIL_DISTANCE_METRIC(X, l2sq, std::int32_t)                                                        \
  RUVLLM_DETAIL_DISTANCE_GATHERS(X, l2sq, std::int32_t)                                                       \
  RUVLLM_DETAIL_DISTANCE_METRIC(X, l1, std::int32_t)                                                          \
  RUVLLM_DETAIL_DISTANCE_METRIC(X, cosine, float)                                                             \
  X(std::uint64_t, distance_hamming_u64, (const std::uint64_t* a, const std::uint64_t* b, std::size_t words), \
    (a, b, words))                                                                                            \
  X(void, distance_hamming_many_u64,                                                                          \
    (const std::uint64_t* query, const std::uint64_t* rows, std::size_t words, std::size_t row_count,         \
     std::size_t row_stride, std::uint64_t* out),                                                             \
    (query, rows, words, row_count, row_stride, out))

#endif  // RUVLLM_KERNELS_SCALAR_DISTANCE_HPP
