#ifndef RUVLLM_KERNELS_HIGHWAY_ROPE_HPP
#define RUVLLM_KERNELS_HIGHWAY_ROPE_HPP

// RoPE entry points of backend::highway: the bodies in rope-inl.h through
// runtime dispatch. Contracts: rope_ops<backend::scalar>.

#include <cstddef>

#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/scalar/rope.hpp"

namespace ruvllm::kernels {

template <>
struct rope_ops<backend::highway> {
  /// Rotates a dense [tokens][heads][head_dim] batch in place, token t at
  /// position first_position + t; one dispatch for the whole batch.
  static void rope_apply(const rope_table& table, rope_layout layout, float* x, std::size_t tokens, std::size_t heads,
                         std::size_t first_position) noexcept {
    rope_apply(table, layout, x, tokens, heads, first_position,
               rope_strides{table.head_dim(), heads * table.head_dim()});
  }
  /// Rotates a strided batch in place (head h of token t at
  /// x + t * strides.token + h * strides.head).
  static void rope_apply(const rope_table& table, rope_layout layout, float* x, std::size_t tokens, std::size_t heads,
                         std::size_t first_position, rope_strides strides) noexcept {
    detail::check_rope_args(table, layout, x, tokens, heads, first_position, strides);
    if (tokens == 0 || heads == 0) return;
    dispatch::rope_apply_f32(table.row(first_position), table.head_dim(), layout, x, tokens, heads, strides.head,
                             strides.token);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_ROPE_HPP
