#ifndef RUVLLM_KERNELS_HIGHWAY_KV_QUANT_HPP
#define RUVLLM_KERNELS_HIGHWAY_KV_QUANT_HPP

// KV quantizer entry points of backend::highway: the bodies in
// kv_quant-inl.h through runtime dispatch (one dispatch per page-head).
// Contract: ruvllm/kernels/scalar/kv_quant.hpp.

#include <cstddef>

#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/scalar/kv_quant.hpp"

namespace ruvllm::kernels {

template <>
struct kv_quant_ops<backend::highway> {
  /// Quantizes `tokens` tokens of one page-head (see scalar::quantize_page_head).
  static void kv_quantize_page_head(kv_format_desc f, kv_role r, const float* src, std::size_t src_stride,
                                    std::size_t first_token, std::size_t tokens, std::size_t head_dim,
                                    std::byte* dst) noexcept {
    RUVLLM_ASSERT(kv_quant_detail::page_args_ok(f, r, first_token, head_dim));
    dispatch::kv_quantize_page_head(f, r, src, src_stride, first_token, tokens, head_dim, dst);
  }
  /// Dequantizes `tokens` tokens of one page-head (see scalar::dequantize_page_head).
  static void kv_dequantize_page_head(kv_format_desc f, kv_role r, const std::byte* src, std::size_t first_token,
                                      std::size_t tokens, std::size_t head_dim, float* dst,
                                      std::size_t dst_stride) noexcept {
    RUVLLM_ASSERT(kv_quant_detail::page_args_ok(f, r, 0, head_dim));
    dispatch::kv_dequantize_page_head(f, r, src, first_token, tokens, head_dim, dst, dst_stride);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_KV_QUANT_HPP
