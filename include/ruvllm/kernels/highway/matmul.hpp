#ifndef RUVLLM_KERNELS_HIGHWAY_MATMUL_HPP
#define RUVLLM_KERNELS_HIGHWAY_MATMUL_HPP

// Matrix-vector entry points of backend::highway (bodies in matmul-inl.h).

#include <cstddef>

#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/scalar/matmul.hpp"

namespace ruvllm::kernels {

template <>
struct matmul_ops<backend::highway> {
  /// y[r] = dot(row r of w, x) for r < rows; rows are row_stride elements
  /// apart. One dispatch per call: pass a whole block of rows.
  static void gemv(const float* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                   std::size_t cols) noexcept {
    dispatch::gemv_f32(w, row_stride, x, y, rows, cols);
  }
  static void gemv(const ruvllm::f16* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                   std::size_t cols) noexcept {
    dispatch::gemv_f16(w, row_stride, x, y, rows, cols);
  }
  static void gemv(const ruvllm::bf16* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                   std::size_t cols) noexcept {
    dispatch::gemv_bf16(w, row_stride, x, y, rows, cols);
  }
  /// Activations in the weights' half type (as ggml rounds them for such
  /// weights): the same bits as x widened to f32 first. Each row then reads
  /// half the activation bytes from L1, and the rows stream their weights
  /// from memory faster (matmul-inl.h).
  static void gemv(const ruvllm::f16* w, std::size_t row_stride, const ruvllm::f16* x, float* y, std::size_t rows,
                   std::size_t cols) noexcept {
    dispatch::gemv_f16_f16x(w, row_stride, x, y, rows, cols);
  }
  static void gemv(const ruvllm::bf16* w, std::size_t row_stride, const ruvllm::bf16* x, float* y, std::size_t rows,
                   std::size_t cols) noexcept {
    dispatch::gemv_bf16_bf16x(w, row_stride, x, y, rows, cols);
  }

  /// y[i] += sum_r coeffs[r] * rows[r * row_stride + i] for i < n, r < count
  /// (a low-rank update y += B c with B stored as rows). One dispatch.
  static void add_scaled_rows(const float* rows, std::size_t row_stride, const float* coeffs, std::size_t count,
                              float* y, std::size_t n) noexcept {
    dispatch::add_scaled_rows_f32(rows, row_stride, coeffs, count, y, n);
  }

  /// Y[t * y_stride + r] = dot(row r of w, row t of x) for r < rows and
  /// t < tokens. One dispatch per call: pass a whole tile.
  static void gemm(const float* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y,
                   std::size_t y_stride, std::size_t rows, std::size_t tokens, std::size_t cols) noexcept {
    dispatch::gemm_f32(w, w_stride, x, x_stride, y, y_stride, rows, tokens, cols);
  }
  static void gemm(const ruvllm::f16* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y,
                   std::size_t y_stride, std::size_t rows, std::size_t tokens, std::size_t cols) noexcept {
    dispatch::gemm_f16(w, w_stride, x, x_stride, y, y_stride, rows, tokens, cols);
  }
  static void gemm(const ruvllm::bf16* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y,
                   std::size_t y_stride, std::size_t rows, std::size_t tokens, std::size_t cols) noexcept {
    dispatch::gemm_bf16(w, w_stride, x, x_stride, y, y_stride, rows, tokens, cols);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_MATMUL_HPP
