#ifndef RUVLLM_KERNELS_XSIMD_KV_QUANT_HPP
#define RUVLLM_KERNELS_XSIMD_KV_QUANT_HPP

#include <cstddef>

#include "ruvllm/kernels/scalar/kv_quant.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"

namespace ruvllm::kernels {

template <>
struct kv_quant_ops<backend::xsimd> : kv_quant_ops<backend::scalar> {};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_KV_QUANT_HPP
