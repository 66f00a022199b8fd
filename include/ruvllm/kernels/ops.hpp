#ifndef RUVLLM_KERNELS_OPS_HPP
#define RUVLLM_KERNELS_OPS_HPP

// kernels::ops<B> for every backend: scalar, highway and xsimd.

#include "ruvllm/kernels/highway.hpp"
#include "ruvllm/kernels/scalar.hpp"
#include "ruvllm/kernels/xsimd.hpp"

#endif  // RUVLLM_KERNELS_OPS_HPP
