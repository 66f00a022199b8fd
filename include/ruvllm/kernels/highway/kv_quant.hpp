#ifndef RUVLLM_KERNELS_HIGHWAY_KV_QUANT_HPP
#define RUVLLM_KERNELS_HIGHWAY_KV_QUANT_HPP

#include <cstddef>

#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/scalar/kv_quant.hpp"

namespace ruvllm::kernels {

template <>
struct kv_quant_ops<backend::highway> : kv_quant_ops<backend::scalar> {};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_KV_QUANT_HPP
