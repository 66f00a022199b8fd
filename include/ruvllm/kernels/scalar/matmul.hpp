#ifndef RUVLLM_KERNELS_SCALAR_MATMUL_HPP
#define RUVLLM_KERNELS_SCALAR_MATMUL_HPP

// Scalar reference GEMV: y[r] = sum_c W[r][c] * x[c] for weights stored in
// f32, f16 or bf16 and activations in f32 or in the weights' own half type.
// Rows are `row_stride` elements apart.

#include <cstddef>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/half.hpp"

namespace ruvllm::kernels {

/// Matrix-vector entry points of backend B (one specialization per backend).
template <Backend B>
struct matmul_ops;

namespace scalar {

namespace detail {
inline float widen(float v) noexcept { return v; }
inline float widen(ruvllm::f16 v) noexcept { return to_float(v); }
inline float widen(ruvllm::bf16 v) noexcept { return to_float(v); }

template <class W, class X>
void gemv(const W* w, std::size_t row_stride, const X* x, float* y, std::size_t rows, std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r) {
    const W* row = w + r * row_stride;
    float sum = 0.0f;
    for (std::size_t c = 0; c < cols; ++c) sum += widen(row[c]) * widen(x[c]);
    y[r] = sum;
  }
}
template <class W>
void gemm(const W* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y, std::size_t y_stride,
          std::size_t rows, std::size_t tokens, std::size_t cols) noexcept {
  for (std::size_t t = 0; t < tokens; ++t) gemv(w, w_stride, x + t * x_stride, y + t * y_stride, rows, cols);
}
}  // namespace detail

inline void gemv(const float* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                 std::size_t cols) noexcept {
  detail::gemv(w, row_stride, x, y, rows, cols);
}
inline void gemv(const ruvllm::f16* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                 std::size_t cols) noexcept {
  detail::gemv(w, row_stride, x, y, rows, cols);
}
inline void gemv(const ruvllm::bf16* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                 std::size_t cols) noexcept {
  detail::gemv(w, row_stride, x, y, rows, cols);
}
/// Activations held in the weights' half type: the same products as
/// widening x to f32 first, with half the activation bytes per row.
inline void gemv(const ruvllm::f16* w, std::size_t row_stride, const ruvllm::f16* x, float* y, std::size_t rows,
                 std::size_t cols) noexcept {
  detail::gemv(w, row_stride, x, y, rows, cols);
}
inline void gemv(const ruvllm::bf16* w, std::size_t row_stride, const ruvllm::bf16* x, float* y, std::size_t rows,
                 std::size_t cols) noexcept {
  detail::gemv(w, row_stride, x, y, rows, cols);
}

/// y[i] = y[i] + coeffs[0] * rows[i] + coeffs[1] * rows[row_stride + i] + ...
/// for i < n and `count` rows, accumulated in that order (a low-rank update:
/// y += B c with B stored as `count` rows of n).
inline void add_scaled_rows(const float* rows, std::size_t row_stride, const float* coeffs, std::size_t count, float* y,
                            std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    float acc = y[i];
    for (std::size_t r = 0; r < count; ++r) acc += coeffs[r] * rows[r * row_stride + i];
    y[i] = acc;
  }
}

/// Y[t][r] = dot(W row r, X row t): one GEMV per token.
template <class W>
void gemm(const W* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y, std::size_t y_stride,
          std::size_t rows, std::size_t tokens, std::size_t cols) noexcept {
  detail::gemm(w, w_stride, x, x_stride, y, y_stride, rows, tokens, cols);
}

}  // namespace scalar

template <>
struct matmul_ops<backend::scalar> {
  /// y[r] = dot(row r of w, x) for r < rows; rows are row_stride elements
  /// apart. x is f32, or f16 / bf16 beside weights of the same type.
  template <class W, class X>
  static void gemv(const W* w, std::size_t row_stride, const X* x, float* y, std::size_t rows,
                   std::size_t cols) noexcept {
    scalar::gemv(w, row_stride, x, y, rows, cols);
  }
  /// Y[t * y_stride + r] = dot(row r of w, row t of x) for r < rows, t < tokens.
  template <class W>
  static void gemm(const W* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y,
                   std::size_t y_stride, std::size_t rows, std::size_t tokens, std::size_t cols) noexcept {
    scalar::gemm(w, w_stride, x, x_stride, y, y_stride, rows, tokens, cols);
  }
  /// y += sum_r coeffs[r] * row r, rows row_stride apart (scalar::add_scaled_rows).
  static void add_scaled_rows(const float* rows, std::size_t row_stride, const float* coeffs, std::size_t count,
                              float* y, std::size_t n) noexcept {
    scalar::add_scaled_rows(rows, row_stride, coeffs, count, y, n);
  }
};

}  // namespace ruvllm::kernels

// The dispatched matmul kernels, for RUVLLM_KERNELS_EXPORTED in dispatch.hpp.
#define RUVLLM_MATMUL_EXPORTED(X)                                                                                     \
  X(void, gemv_f32,                                                                                                   \
    (const float* w, std::size_t stride, const float* x, float* y, std::size_t rows, std::size_t cols),               \
    (w, stride, x, y, rows, cols))                                                                                    \
  X(void, gemv_f16,                                                                                                   \
    (const ruvllm::f16* w, std::size_t stride, const float* x, float* y, std::size_t rows, std::size_t cols),         \
    (w, stride, x, y, rows, cols))                                                                                    \
  X(void, gemv_bf16,                                                                                                  \
    (const ruvllm::bf16* w, std::size_t stride, const float* x, float* y, std::size_t rows, std::size_t cols),        \
    (w, stride, x, y, rows, cols))                                                                                    \
  X(void, gemv_f16_f16x,                                                                                              \
    (const ruvllm::f16* w, std::size_t stride, const ruvllm::f16* x, float* y, std::size_t rows, std::size_t cols),   \
    (w, stride, x, y, rows, cols))                                                                                    \
  X(void, gemv_bf16_bf16x,                                                                                            \
    (const ruvllm::bf16* w, std::size_t stride, const ruvllm::bf16* x, float* y, std::size_t rows, std::size_t cols), \
    (w, stride, x, y, rows, cols))                                                                                    \
  RUVLLM_DETAIL_GEMM_EXPORT(X, gemm_f32, float)                                                                       \
  RUVLLM_DETAIL_GEMM_EXPORT(X, gemm_f16, ruvllm::f16)                                                                 \
  RUVLLM_DETAIL_GEMM_EXPORT(X, gemm_bf16, ruvllm::bf16)                                                               \
  X(void, add_scaled_rows_f32,                                                                                        \
    (const float* rows, std::size_t stride, const float* coeffs, std::size_t count, float* y, std::size_t n),         \
    (rows, stride, coeffs, count, y, n))
#define RUVLLM_DETAIL_GEMM_EXPORT(X, NAME, W)                                                                \
  X(void, NAME,                                                                                              \
    (const W* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y, std::size_t y_stride, \
     std::size_t rows, std::size_t tokens, std::size_t cols),                                                \
    (w, w_stride, x, x_stride, y, y_stride, rows, tokens, cols))

#endif  // RUVLLM_KERNELS_SCALAR_MATMUL_HPP
