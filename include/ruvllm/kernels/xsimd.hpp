#ifndef RUVLLM_KERNELS_XSIMD_HPP
#define RUVLLM_KERNELS_XSIMD_HPP

// backend::xsimd: every kernel family written with xsimd for the
// architecture this unit is compiled for, gathered into
// kernels::ops<backend::xsimd>. Does not include Highway, so a unit built
// with -march=native can use it alone.

#include "ruvllm/kernels/xsimd/distance.hpp"
#include "ruvllm/kernels/xsimd/matmul.hpp"
#include "ruvllm/kernels/xsimd/norm.hpp"
#include "ruvllm/kernels/xsimd/activation.hpp"
#include "ruvllm/kernels/xsimd/rope.hpp"
#include "ruvllm/kernels/xsimd/quant.hpp"
#include "ruvllm/kernels/xsimd/attention.hpp"
#include "ruvllm/kernels/xsimd/kv_quant.hpp"

namespace ruvllm::kernels {

template <>
struct ops<backend::xsimd> : distance_ops<backend::xsimd>,
                             matmul_ops<backend::xsimd>,
                             norm_ops<backend::xsimd>,
                             activation_ops<backend::xsimd>,
                             rope_ops<backend::xsimd>,
                             quant_ops<backend::xsimd>,
                             attention_ops<backend::xsimd>,
                             kv_quant_ops<backend::xsimd> {};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_HPP
