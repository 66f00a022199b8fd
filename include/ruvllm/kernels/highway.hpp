#ifndef RUVLLM_KERNELS_HIGHWAY_HPP
#define RUVLLM_KERNELS_HIGHWAY_HPP

// backend::highway: every kernel family through runtime dispatch (see
// dispatch.hpp for the build modes), gathered into kernels::ops<backend::highway>.

#include "ruvllm/kernels/highway/distance.hpp"
#include "ruvllm/kernels/highway/matmul.hpp"
#include "ruvllm/kernels/highway/norm.hpp"
#include "ruvllm/kernels/highway/activation.hpp"
#include "ruvllm/kernels/highway/rope.hpp"
#include "ruvllm/kernels/highway/quant.hpp"
#include "ruvllm/kernels/highway/attention.hpp"
#include "ruvllm/kernels/highway/kv_quant.hpp"

namespace ruvllm::kernels {

template <>
struct ops<backend::highway> : distance_ops<backend::highway>,
                               matmul_ops<backend::highway>,
                               norm_ops<backend::highway>,
                               activation_ops<backend::highway>,
                               rope_ops<backend::highway>,
                               quant_ops<backend::highway>,
                               attention_ops<backend::highway>,
                               kv_quant_ops<backend::highway> {};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_HPP
