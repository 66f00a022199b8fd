#ifndef RUVLLM_KERNELS_HIGHWAY_HPP
#define RUVLLM_KERNELS_HIGHWAY_HPP

// backend::highway: the kernels of ruvllm/kernels/*-inl.h through runtime
// dispatch (see dispatch.hpp for the build modes).

#include <cstddef>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/kernels/dispatch.hpp"

namespace ruvllm::kernels {

template <>
struct ops<backend::highway> {
  [[nodiscard]] static float dot(const float* a, const float* b, std::size_t n) noexcept {
    return dispatch::dot_f32(a, b, n);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_HPP
