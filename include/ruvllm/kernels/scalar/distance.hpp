#ifndef RUVLLM_KERNELS_SCALAR_DISTANCE_HPP
#define RUVLLM_KERNELS_SCALAR_DISTANCE_HPP

// Scalar reference distance kernels: the results every SIMD backend is
// tested against, so they favour the obvious loop over speed.

#include <cstddef>

#include "ruvllm/core/backend.hpp"

namespace ruvllm::kernels {

/// Distance entry points of backend B (one specialization per backend).
template <Backend B>
struct distance_ops;

namespace scalar {

/// Sum of a[i] * b[i], accumulated left to right in float.
[[nodiscard]] inline float dot(const float* a, const float* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace scalar

template <>
struct distance_ops<backend::scalar> {
  [[nodiscard]] static float dot(const float* a, const float* b, std::size_t n) noexcept {
    return scalar::dot(a, b, n);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_SCALAR_DISTANCE_HPP
