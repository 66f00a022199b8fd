#ifndef RUVLLM_KERNELS_XSIMD_MATMUL_HPP
#define RUVLLM_KERNELS_XSIMD_MATMUL_HPP

// Matrix-vector kernels of backend::xsimd (see xsimd/arch.hpp on flags).
// xsimd 8.1 has no f16/bf16 conversion, so those rows are widened with the
// scalar helpers into a small stack tile, one vector at a time.

#include <cstddef>
#include <type_traits>

#include "ruvllm/kernels/scalar/matmul.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {

/// One vector of floats from p, widened in a stack tile when T is a half type.
template <class T>
::xsimd::batch<float> load_as_f32(const T* p) noexcept {
  using batch = ::xsimd::batch<float>;
  if constexpr (std::is_same_v<T, float>) {
    return batch::load_unaligned(p);
  } else {
    alignas(64) float tile[batch::size];
    for (std::size_t i = 0; i < batch::size; ++i) tile[i] = scalar::detail::widen(p[i]);
    return batch::load_aligned(tile);
  }
}

template <class W, class X>
void gemv(const W* w, std::size_t row_stride, const X* x, float* y, std::size_t rows, std::size_t cols) noexcept {
  using batch = ::xsimd::batch<float>;
  constexpr std::size_t lanes = batch::size;
  const std::size_t full = cols / lanes * lanes;
  for (std::size_t r = 0; r < rows; ++r) {
    const W* row = w + r * row_stride;
    batch acc0(0.0f), acc1(0.0f);
    std::size_t c = 0;
    for (; c < full; c += lanes) {
      const batch wv = load_as_f32(row + c);
      if ((c / lanes) & 1)
        acc1 = ::xsimd::fma(wv, load_as_f32(x + c), acc1);
      else
        acc0 = ::xsimd::fma(wv, load_as_f32(x + c), acc0);
    }
    float sum = ::xsimd::hadd(acc0 + acc1);
    for (; c < cols; ++c) sum += scalar::detail::widen(row[c]) * scalar::detail::widen(x[c]);
    y[r] = sum;
  }
}

inline void add_scaled_rows(const float* rows, std::size_t row_stride, const float* coeffs, std::size_t count, float* y,
                            std::size_t n) noexcept {
  using batch = ::xsimd::batch<float>;
  constexpr std::size_t lanes = batch::size;
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    batch acc = batch::load_unaligned(y + i);
    for (std::size_t r = 0; r < count; ++r)
      acc = ::xsimd::fma(batch(coeffs[r]), batch::load_unaligned(rows + r * row_stride + i), acc);
    acc.store_unaligned(y + i);
  }
  for (; i < n; ++i) {
    float acc = y[i];
    for (std::size_t r = 0; r < count; ++r) acc += coeffs[r] * rows[r * row_stride + i];
    y[i] = acc;
  }
}

}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct matmul_ops<backend::xsimd> {
  /// y[r] = dot(row r of w, x) for r < rows; rows are row_stride elements
  /// apart. x is f32, or f16 / bf16 beside weights of the same type.
  template <class W, class X>
  static void gemv(const W* w, std::size_t row_stride, const X* x, float* y, std::size_t rows,
                   std::size_t cols) noexcept {
    xsimd_impl::gemv(w, row_stride, x, y, rows, cols);
  }
  /// Y[t * y_stride + r] = dot(row r of w, row t of x): one GEMV per token.
  /// y += sum_r coeffs[r] * row r, rows row_stride apart (scalar::add_scaled_rows).
  static void add_scaled_rows(const float* rows, std::size_t row_stride, const float* coeffs, std::size_t count,
                              float* y, std::size_t n) noexcept {
    xsimd_impl::add_scaled_rows(rows, row_stride, coeffs, count, y, n);
  }
  template <class W>
  static void gemm(const W* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y,
                   std::size_t y_stride, std::size_t rows, std::size_t tokens, std::size_t cols) noexcept {
    for (std::size_t t = 0; t < tokens; ++t)
      xsimd_impl::gemv(w, w_stride, x + t * x_stride, y + t * y_stride, rows, cols);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_MATMUL_HPP
