#ifndef RUVLLM_KERNELS_SCALAR_HPP
#define RUVLLM_KERNELS_SCALAR_HPP

// backend::scalar: every kernel family's plain C++ reference, gathered into
// kernels::ops<backend::scalar>.

#include "ruvllm/kernels/scalar/distance.hpp"
#include "ruvllm/kernels/scalar/matmul.hpp"
#include "ruvllm/kernels/scalar/norm.hpp"
#include "ruvllm/kernels/scalar/activation.hpp"
#include "ruvllm/kernels/scalar/rope.hpp"
#include "ruvllm/kernels/scalar/quant.hpp"
#include "ruvllm/kernels/scalar/attention.hpp"
#include "ruvllm/kernels/scalar/kv_quant.hpp"

namespace ruvllm::kernels {

template <>
struct ops<backend::scalar> : distance_ops<backend::scalar>,
                              matmul_ops<backend::scalar>,
                              norm_ops<backend::scalar>,
                              activation_ops<backend::scalar>,
                              rope_ops<backend::scalar>,
                              quant_ops<backend::scalar>,
                              attention_ops<backend::scalar>,
                              kv_quant_ops<backend::scalar> {};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_SCALAR_HPP
