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
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_MATMUL_HPP
