#ifndef RUVLLM_KERNELS_SCALAR_NORM_HPP
#define RUVLLM_KERNELS_SCALAR_NORM_HPP

// Scalar reference normalization kernels (RMSNorm, LayerNorm): the results
// every SIMD backend is tested against, so they favour the obvious loop over
// speed. Sums run left to right in float, as llama.cpp's float paths do apart
// from its double accumulator; the SIMD backends use several float
// accumulators and are tested against these within the float summation bound.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/config.hpp"

namespace ruvllm::kernels {

/// Normalization entry points of backend B (one specialization per backend).
template <Backend B>
struct norm_ops;

namespace detail {

/// True when [a, a + n) and [b, b + n) are the same range or do not overlap:
/// the kernels allow exact in-place use (y == x) but not shifted overlaps.
[[nodiscard]] inline bool same_or_disjoint(const float* a, const float* b, std::size_t n) noexcept {
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  const std::uintptr_t bytes = n * sizeof(float);
  return pa == pb || pa + bytes <= pb || pb + bytes <= pa;
}

// Hot-path preconditions shared by every backend's entry points (debug
// builds only).
inline void check_rms_norm_args([[maybe_unused]] const float* x, [[maybe_unused]] const float* weight,
                                [[maybe_unused]] const float* y, [[maybe_unused]] std::size_t rows,
                                [[maybe_unused]] std::size_t n, [[maybe_unused]] float eps) noexcept {
  RUVLLM_ASSERT(rows == 0 || n == 0 || (x != nullptr && weight != nullptr && y != nullptr));
  RUVLLM_ASSERT(eps >= 0.0f && eps <= std::numeric_limits<float>::max());
  RUVLLM_ASSERT(rows == 0 || n <= std::numeric_limits<std::size_t>::max() / sizeof(float) / rows);
  RUVLLM_ASSERT(same_or_disjoint(x, y, rows * n));
}

inline void check_layer_norm_args([[maybe_unused]] const float* x, [[maybe_unused]] const float* weight,
                                  [[maybe_unused]] const float* bias, [[maybe_unused]] const float* y,
                                  [[maybe_unused]] std::size_t rows, [[maybe_unused]] std::size_t n,
                                  [[maybe_unused]] float eps) noexcept {
  check_rms_norm_args(x, weight, y, rows, n, eps);
  RUVLLM_ASSERT(rows == 0 || n == 0 || bias != nullptr);
}

}  // namespace detail

namespace scalar {

/// RMSNorm of `rows` contiguous rows of n floats (llama.cpp semantics):
/// y = (x * (1 / sqrt(mean(x^2) + eps))) * weight, the weight shared by all rows.
inline void rms_norm_rows(const float* x, const float* weight, float* y, std::size_t rows, std::size_t n,
                          float eps) noexcept {
  if (n == 0) return;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float sum = 0.0f;
    for (std::size_t i = 0; i < n; ++i) sum += xr[i] * xr[i];
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    for (std::size_t i = 0; i < n; ++i) yr[i] = (xr[i] * scale) * weight[i];
  }
}

/// LayerNorm of `rows` contiguous rows of n floats, with the variance taken
/// about the mean in a second pass (no E[x^2] - E[x]^2 cancellation):
/// y = ((x - mean) * (1 / sqrt(var + eps))) * weight + bias.
inline void layer_norm_rows(const float* x, const float* weight, const float* bias, float* y, std::size_t rows,
                            std::size_t n, float eps) noexcept {
  if (n == 0) return;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float sum = 0.0f;
    for (std::size_t i = 0; i < n; ++i) sum += xr[i];
    const float mean = sum / static_cast<float>(n);
    float sq = 0.0f;
    for (std::size_t i = 0; i < n; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
    const float scale = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
    for (std::size_t i = 0; i < n; ++i) yr[i] = ((xr[i] - mean) * scale) * weight[i] + bias[i];
  }
}

}  // namespace scalar

/// The scalar reference. Every backend's norm_ops has these entry points with
/// the same contract:
///  * rows are contiguous, n floats each (row r starts at x + r * n);
///  * y may equal x (in place) but must not otherwise overlap it;
///  * weight and bias hold n floats, shared by every row;
///  * eps is finite and >= 0 (with eps == 0, an all-zero row (RMSNorm) or a
///    constant row (LayerNorm) divides by zero);
///  * sums of squares must stay finite in float (|x| up to ~1e17 at n = 4096);
///  * no allocation; preconditions are checked by RUVLLM_ASSERT in debug builds.
/// Call the _rows forms for a batch (e.g. every token of a prefill): each call
/// of a runtime-dispatched backend costs one indirect jump.
template <>
struct norm_ops<backend::scalar> {
  /// RMSNorm of one row: y = x / sqrt(mean(x^2) + eps) * weight.
  static void rms_norm(const float* x, const float* weight, float* y, std::size_t n, float eps) noexcept {
    rms_norm_rows(x, weight, y, 1, n, eps);
  }
  /// RMSNorm of `rows` contiguous rows of n floats.
  static void rms_norm_rows(const float* x, const float* weight, float* y, std::size_t rows, std::size_t n,
                            float eps) noexcept {
    detail::check_rms_norm_args(x, weight, y, rows, n, eps);
    scalar::rms_norm_rows(x, weight, y, rows, n, eps);
  }
  /// LayerNorm of one row: y = (x - mean) / sqrt(var + eps) * weight + bias.
  static void layer_norm(const float* x, const float* weight, const float* bias, float* y, std::size_t n,
                         float eps) noexcept {
    layer_norm_rows(x, weight, bias, y, 1, n, eps);
  }
  /// LayerNorm of `rows` contiguous rows of n floats.
  static void layer_norm_rows(const float* x, const float* weight, const float* bias, float* y, std::size_t rows,
                              std::size_t n, float eps) noexcept {
    detail::check_layer_norm_args(x, weight, bias, y, rows, n, eps);
    scalar::layer_norm_rows(x, weight, bias, y, rows, n, eps);
  }
};

}  // namespace ruvllm::kernels

// The dispatched norm kernels, for RUVLLM_KERNELS_EXPORTED in dispatch.hpp.
#define RUVLLM_NORM_EXPORTED(X)                                                                                      \
  X(void, norm_rms_f32, (const float* x, const float* weight, float* y, std::size_t rows, std::size_t n, float eps), \
    (x, weight, y, rows, n, eps))                                                                                    \
  X(void, norm_layer_f32,                                                                                            \
    (const float* x, const float* weight, const float* bias, float* y, std::size_t rows, std::size_t n, float eps),  \
    (x, weight, bias, y, rows, n, eps))

#endif  // RUVLLM_KERNELS_SCALAR_NORM_HPP
