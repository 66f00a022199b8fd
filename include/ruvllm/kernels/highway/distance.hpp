#ifndef RUVLLM_KERNELS_HIGHWAY_DISTANCE_HPP
#define RUVLLM_KERNELS_HIGHWAY_DISTANCE_HPP

// Distance entry points of backend::highway: the bodies in distance-inl.h
// through runtime dispatch.

#include <cstddef>

#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/scalar/distance.hpp"

namespace ruvllm::kernels {

template <>
struct distance_ops<backend::highway> {
  [[nodiscard]] static float dot(const float* a, const float* b, std::size_t n) noexcept {
    return dispatch::dot_f32(a, b, n);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_DISTANCE_HPP
