#ifndef RUVLLM_STORE_VECTOR_SPACE_HPP
#define RUVLLM_STORE_VECTOR_SPACE_HPP

// How the vector store encodes vectors and measures distances between them:
// the Metric tags (cosine, l2, dot), the storage precisions of a stored
// vector (precision::f32, precision::f16, store::i8) and vector_space<Metric,
// Precision, Backend>, which turns a float vector into a fixed-size code and
// computes the distance of two codes with the kernels layer.
//
// Every distance here is "smaller is closer", so one search loop serves all
// metrics:
//   l2:     squared Euclidean distance
//   cosine: 1 - cosine similarity. Vectors are normalized once on encode, so
//           a search pays a dot product per candidate, not three sums
//   dot:    1 - dot product (inner-product search, as in hnswlib)
//
// Codes (fixed size per index, read in place from a memory-mapped file):
//   f32: dim floats
//   f16: dim IEEE halves (ruvllm::f16), widened exactly by the kernels
//   i8:  { float scale; int32 sum of q^2; int8 q[dim] }, symmetric per-vector
//        quantization q = round(x / scale), scale = max|x| / 127. Per-vector
//        rather than per-index scales, because vectors of an edge store come
//        from different sources with different ranges; the exact int8 dot
//        kernel does the work and the scales are applied to its result:
//          dot(a, b)  ~ sa * sb * dot_i8(qa, qb)
//          l2sq(a, b) ~ sa^2 |qa|^2 + sb^2 |qb|^2 - 2 sa sb dot_i8(qa, qb)
// Non-finite distances (from a corrupt file) are mapped to +infinity so the
// search heaps always see a strict weak order.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/core/precision.hpp"
#include "ruvllm/kernels/ops.hpp"

namespace ruvllm::store {

/// Distance tags of the vector store (empty types; see the file comment).
namespace metric {
/// 1 - cosine similarity; vectors are stored normalized.
struct cosine {
  static constexpr std::uint8_t id = 1;
  static constexpr const char* name = "cosine";
};
/// Squared Euclidean distance.
struct l2 {
  static constexpr std::uint8_t id = 2;
  static constexpr const char* name = "l2";
};
/// 1 - inner product.
struct dot {
  static constexpr std::uint8_t id = 3;
  static constexpr const char* name = "dot";
};
}  // namespace metric

/// Symmetric per-vector int8 storage (see the file comment).
struct i8 {
  static constexpr std::uint8_t id = 3;
  static constexpr const char* name = "i8";
};

/// A distance tag of the store.
template <class M>
concept Metric = std::same_as<M, metric::cosine> || std::same_as<M, metric::l2> || std::same_as<M, metric::dot>;

/// A storage precision of the store: precision::f32, precision::f16 or store::i8.
template <class P>
concept VectorPrecision = std::same_as<P, precision::f32> || std::same_as<P, precision::f16> || std::same_as<P, i8>;

namespace detail {
template <class P>
struct precision_id;
template <>
struct precision_id<precision::f32> {
  static constexpr std::uint8_t value = 1;
};
template <>
struct precision_id<precision::f16> {
  static constexpr std::uint8_t value = 2;
};
template <>
struct precision_id<i8> {
  static constexpr std::uint8_t value = 3;
};

[[nodiscard]] inline float finite_or_inf(float d) noexcept {
  return std::isfinite(d) ? d : std::numeric_limits<float>::infinity();
}

struct i8_code_header {
  float scale;
  std::int32_t sum_sq;
};
static_assert(sizeof(i8_code_header) == 8);
}  // namespace detail

/// Encoding and distances of one (Metric, Precision) pair; all static, no
/// state, no allocation; safe from any thread.
template <Metric M, VectorPrecision P, Backend B = backend::highway>
struct vector_space {
  using ops = kernels::ops<B>;
  static constexpr std::uint8_t metric_id = M::id;
  static constexpr std::uint8_t precision_id = detail::precision_id<P>::value;

  /// Bytes of one code of `dim` elements.
  [[nodiscard]] static constexpr std::size_t code_bytes(std::size_t dim) noexcept {
    if constexpr (std::same_as<P, precision::f32>)
      return dim * sizeof(float);
    else if constexpr (std::same_as<P, precision::f16>)
      return dim * sizeof(f16);
    else
      return sizeof(detail::i8_code_header) + dim;
  }

  /// Writes the code of v (dim floats) to out (code_bytes(dim) bytes, any
  /// alignment). Cosine normalizes first. Does not allocate.
  static void encode(const float* v, std::size_t dim, std::byte* out) noexcept {
    float scale = 1.0f;
    if constexpr (std::same_as<M, metric::cosine>) {
      double ss = 0.0;
      for (std::size_t i = 0; i < dim; ++i) ss += static_cast<double>(v[i]) * v[i];
      scale = ss > 0.0 ? static_cast<float>(1.0 / std::sqrt(ss)) : 0.0f;
    }
    if constexpr (std::same_as<P, precision::f32>) {
      for (std::size_t i = 0; i < dim; ++i) {
        const float x = v[i] * scale;
        std::memcpy(out + i * sizeof(float), &x, sizeof(float));
      }
    } else if constexpr (std::same_as<P, precision::f16>) {
      for (std::size_t i = 0; i < dim; ++i) {
        const f16 h = to_f16(v[i] * scale);
        std::memcpy(out + i * sizeof(f16), &h, sizeof(f16));
      }
    } else {
      float max_abs = 0.0f;
      for (std::size_t i = 0; i < dim; ++i) max_abs = std::max(max_abs, std::fabs(v[i] * scale));
      const float q_scale = max_abs > 0.0f && std::isfinite(max_abs) ? max_abs / 127.0f : 0.0f;
      const float inv = q_scale > 0.0f ? 1.0f / q_scale : 0.0f;
      std::int32_t sum_sq = 0;
      auto* q = reinterpret_cast<std::int8_t*>(out + sizeof(detail::i8_code_header));
      for (std::size_t i = 0; i < dim; ++i) {
        const float r = std::nearbyint(v[i] * scale * inv);
        const auto qi = static_cast<std::int8_t>(std::clamp(r, -127.0f, 127.0f));
        q[i] = qi;
        sum_sq += std::int32_t{qi} * qi;
      }
      const detail::i8_code_header h{q_scale, sum_sq};
      std::memcpy(out, &h, sizeof h);
    }
  }

  /// The element type of a code's vector part (float, f16 or int8).
  using element_type = std::conditional_t<std::same_as<P, precision::f32>, float,
                                          std::conditional_t<std::same_as<P, precision::f16>, f16, std::int8_t>>;

  /// The elements of a code (past the int8 header).
  [[nodiscard]] static const element_type* elements(const std::byte* code) noexcept {
    if constexpr (std::same_as<P, i8>)
      return reinterpret_cast<const element_type*>(code + sizeof(detail::i8_code_header));
    else
      return reinterpret_cast<const element_type*>(code);
  }

  /// out[r] = distance(query, the code whose elements rows[r] points at), for
  /// r < count: one kernels dispatch for all rows (a graph node's
  /// neighbours), the next row prefetched while one is computed. Equal to
  /// distance() row by row. Does not allocate.
  static void distances(const std::byte* query, const element_type* const* rows, std::size_t count, std::size_t dim,
                        float* out) noexcept {
    if constexpr (std::same_as<P, i8>) {
      constexpr std::size_t chunk = 256;
      std::int32_t dots[chunk];
      detail::i8_code_header hq;
      std::memcpy(&hq, query, sizeof hq);
      for (std::size_t first = 0; first < count; first += chunk) {
        const std::size_t rows_here = std::min(chunk, count - first);
        ops::dot_gather(elements(query), rows + first, dim, rows_here, dots);
        for (std::size_t r = 0; r < rows_here; ++r) {
          detail::i8_code_header hr;
          std::memcpy(&hr, reinterpret_cast<const std::byte*>(rows[first + r]) - sizeof hr, sizeof hr);
          out[first + r] = detail::finite_or_inf(i8_distance(hq, hr, dots[r]));
        }
      }
    } else {
      if constexpr (std::same_as<M, metric::l2>) {
        ops::l2sq_gather(elements(query), rows, dim, count, out);
        for (std::size_t r = 0; r < count; ++r) out[r] = detail::finite_or_inf(out[r]);
      } else {
        ops::dot_gather(elements(query), rows, dim, count, out);
        for (std::size_t r = 0; r < count; ++r) out[r] = detail::finite_or_inf(1.0f - out[r]);
      }
    }
  }

  /// Reconstructs the (normalized, for cosine) float vector of a code.
  static void decode(const std::byte* code, std::size_t dim, float* out) noexcept {
    if constexpr (std::same_as<P, precision::f32>) {
      std::memcpy(out, code, dim * sizeof(float));
    } else if constexpr (std::same_as<P, precision::f16>) {
      for (std::size_t i = 0; i < dim; ++i) {
        f16 h;
        std::memcpy(&h, code + i * sizeof(f16), sizeof(f16));
        out[i] = to_float(h);
      }
    } else {
      detail::i8_code_header h;
      std::memcpy(&h, code, sizeof h);
      const auto* q = reinterpret_cast<const std::int8_t*>(code + sizeof h);
      for (std::size_t i = 0; i < dim; ++i) out[i] = h.scale * q[i];
    }
  }

  /// Distance of two codes (smaller is closer, never NaN).
  [[nodiscard]] static float distance(const std::byte* a, const std::byte* b, std::size_t dim) noexcept {
    float d;
    if constexpr (std::same_as<P, i8>) {
      detail::i8_code_header ha, hb;
      std::memcpy(&ha, a, sizeof ha);
      std::memcpy(&hb, b, sizeof hb);
      const auto* qa = reinterpret_cast<const std::int8_t*>(a + sizeof ha);
      const auto* qb = reinterpret_cast<const std::int8_t*>(b + sizeof hb);
      d = i8_distance(ha, hb, ops::dot(qa, qb, dim));
    } else {
      using T = std::conditional_t<std::same_as<P, precision::f32>, float, f16>;
      const auto* ta = reinterpret_cast<const T*>(a);
      const auto* tb = reinterpret_cast<const T*>(b);
      if constexpr (std::same_as<M, metric::l2>)
        d = ops::l2sq(ta, tb, dim);
      else
        d = 1.0f - ops::dot(ta, tb, dim);
    }
    return detail::finite_or_inf(d);
  }

  /// The distance of two int8 codes from their headers and exact int8 dot.
  [[nodiscard]] static float i8_distance(const detail::i8_code_header& ha, const detail::i8_code_header& hb,
                                         std::int32_t dot) noexcept {
    const float ab = ha.scale * hb.scale * static_cast<float>(dot);
    if constexpr (std::same_as<M, metric::l2>) {
      const float aa = ha.scale * ha.scale * static_cast<float>(ha.sum_sq);
      const float bb = hb.scale * hb.scale * static_cast<float>(hb.sum_sq);
      return std::max(0.0f, aa + bb - 2.0f * ab);
    } else {
      return 1.0f - ab;
    }
  }

  /// The exact float distance of two float vectors under this metric (used
  /// for re-ranking against stored f32 copies and by tests as the reference).
  /// For cosine both vectors must already be normalized (as encode does).
  [[nodiscard]] static float exact_distance(const float* a, const float* b, std::size_t dim) noexcept {
    if constexpr (std::same_as<M, metric::l2>)
      return detail::finite_or_inf(ops::l2sq(a, b, dim));
    else
      return detail::finite_or_inf(1.0f - ops::dot(a, b, dim));
  }

  /// out[r] = exact_distance(query, rows[r], dim) for r < count: one kernels
  /// gather for all rows (re-ranking reads scattered f32 originals, which
  /// the gather prefetches). Does not allocate.
  static void exact_distances(const float* query, const float* const* rows, std::size_t count, std::size_t dim,
                              float* out) noexcept {
    if constexpr (std::same_as<M, metric::l2>) {
      ops::l2sq_gather(query, rows, dim, count, out);
      for (std::size_t r = 0; r < count; ++r) out[r] = detail::finite_or_inf(out[r]);
    } else {
      ops::dot_gather(query, rows, dim, count, out);
      for (std::size_t r = 0; r < count; ++r) out[r] = detail::finite_or_inf(1.0f - out[r]);
    }
  }

  /// Normalizes in place for cosine (what encode does before quantizing); a
  /// no-op for the other metrics.
  static void prepare(float* v, std::size_t dim) noexcept {
    if constexpr (std::same_as<M, metric::cosine>) {
      double ss = 0.0;
      for (std::size_t i = 0; i < dim; ++i) ss += static_cast<double>(v[i]) * v[i];
      const float s = ss > 0.0 ? static_cast<float>(1.0 / std::sqrt(ss)) : 0.0f;
      for (std::size_t i = 0; i < dim; ++i) v[i] *= s;
    } else {
      (void)v;
      (void)dim;
    }
  }
};

}  // namespace ruvllm::store

#endif  // RUVLLM_STORE_VECTOR_SPACE_HPP
