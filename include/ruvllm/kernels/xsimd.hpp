#ifndef RUVLLM_KERNELS_XSIMD_HPP
#define RUVLLM_KERNELS_XSIMD_HPP

// backend::xsimd: every kernel family written with xsimd for the
// architecture this unit is compiled for, gathered into
// kernels::ops<backend::xsimd>. Does not include Highway, so a unit built
// with -march=native can use it alone.

#include "ruvllm/kernels/xsimd/distance.hpp"

namespace ruvllm::kernels {

template <>
struct ops<backend::xsimd> : distance_ops<backend::xsimd> {};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_HPP
