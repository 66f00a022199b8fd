#ifndef RUVLLM_KERNELS_HIGHWAY_ACTIVATION_HPP
#define RUVLLM_KERNELS_HIGHWAY_ACTIVATION_HPP

// Activation entry points of backend::highway: the bodies in
// activation-inl.h through runtime dispatch. Contracts:
// activation_ops<backend::scalar>.

#include <cstddef>

#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/scalar/activation.hpp"

namespace ruvllm::kernels {

template <>
struct activation_ops<backend::highway> {
  /// Stable softmax of one row of n floats into y (y may equal x), of scale * x.
  static void softmax(const float* x, float* y, std::size_t n, float scale = 1.0f) noexcept {
    softmax_rows(x, y, 1, n, scale);
  }
  /// Softmax of one row in place.
  static void softmax(float* x, std::size_t n, float scale = 1.0f) noexcept { softmax_rows(x, x, 1, n, scale); }
  /// Softmax of each of `rows` contiguous rows of n floats, one dispatch for all.
  static void softmax_rows(const float* x, float* y, std::size_t rows, std::size_t n, float scale = 1.0f) noexcept {
    detail::check_softmax_args(x, y, rows, n, scale);
    dispatch::activation_softmax_f32(x, y, rows, n, scale);
  }
  /// y[i] = silu(x[i]) for n floats.
  static void silu(const float* x, float* y, std::size_t n) noexcept {
    detail::check_unary_args(x, y, n);
    dispatch::activation_silu_f32(x, y, n);
  }
  /// y[i] = gelu(x[i]) (tanh approximation) for n floats.
  static void gelu(const float* x, float* y, std::size_t n) noexcept {
    detail::check_unary_args(x, y, n);
    dispatch::activation_gelu_f32(x, y, n);
  }
  /// out[i] = silu(gate[i]) * up[i] for n floats.
  static void swiglu(const float* gate, const float* up, float* out, std::size_t n) noexcept {
    detail::check_swiglu_args(gate, up, out, n);
    dispatch::activation_swiglu_f32(gate, up, out, n);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_ACTIVATION_HPP
