#ifndef RUVLLM_KERNELS_HIGHWAY_NORM_HPP
#define RUVLLM_KERNELS_HIGHWAY_NORM_HPP

// Normalization entry points of backend::highway: the bodies in norm-inl.h
// through runtime dispatch. Contracts: norm_ops<backend::scalar>.

#include <cstddef>

#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/scalar/norm.hpp"

namespace ruvllm::kernels {

template <>
struct norm_ops<backend::highway> {
  /// RMSNorm of one row: y = x / sqrt(mean(x^2) + eps) * weight.
  static void rms_norm(const float* x, const float* weight, float* y, std::size_t n, float eps) noexcept {
    rms_norm_rows(x, weight, y, 1, n, eps);
  }
  /// RMSNorm of `rows` contiguous rows of n floats, one dispatch for all.
  static void rms_norm_rows(const float* x, const float* weight, float* y, std::size_t rows, std::size_t n,
                            float eps) noexcept {
    detail::check_rms_norm_args(x, weight, y, rows, n, eps);
    dispatch::norm_rms_f32(x, weight, y, rows, n, eps);
  }
  /// LayerNorm of one row: y = (x - mean) / sqrt(var + eps) * weight + bias.
  static void layer_norm(const float* x, const float* weight, const float* bias, float* y, std::size_t n,
                         float eps) noexcept {
    layer_norm_rows(x, weight, bias, y, 1, n, eps);
  }
  /// LayerNorm of `rows` contiguous rows of n floats, one dispatch for all.
  static void layer_norm_rows(const float* x, const float* weight, const float* bias, float* y, std::size_t rows,
                              std::size_t n, float eps) noexcept {
    detail::check_layer_norm_args(x, weight, bias, y, rows, n, eps);
    dispatch::norm_layer_f32(x, weight, bias, y, rows, n, eps);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_NORM_HPP
