#ifndef RUVLLM_KERNELS_HIGHWAY_ATTENTION_HPP
#define RUVLLM_KERNELS_HIGHWAY_ATTENTION_HPP

// Attention entry points of backend::highway: the bodies in attention-inl.h
// through runtime dispatch (one dispatch per call, which covers a whole range
// of work items). Contract: ruvllm/kernels/scalar/attention.hpp.

#include <cstddef>
#include <span>

#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/paged_kv_view.hpp"
#include "ruvllm/kernels/scalar/attention.hpp"

namespace ruvllm::kernels {

template <>
struct attention_ops<backend::highway> {
  /// Flash-attention prefill of work items [begin, end); workspace holds at
  /// least attention_prefill_workspace_bytes(a.head_dim) bytes.
  static void attention_prefill(const attention_prefill_args& a, std::span<std::byte> workspace, std::size_t begin,
                                std::size_t end) noexcept {
    RUVLLM_ASSERT(end <= attention_prefill_work_items(a) && begin <= end);
    RUVLLM_ASSERT(begin == end || workspace.size() >= attention_prefill_workspace_bytes(a.head_dim));
    dispatch::attention_prefill(a, workspace.data(), begin, end);
  }
  /// Paged decode of work items [begin, end) of `plan`.
  static void attention_decode(const attention_decode_plan& plan, const paged_kv_desc& kv, const float* q,
                               std::size_t begin, std::size_t end) noexcept {
    RUVLLM_ASSERT(end <= plan.work_items() && begin <= end);
    dispatch::attention_decode(plan, kv, q, begin, end);
  }
  /// attention_decode for a typed view.
  template <class K, class V, std::size_t T>
  static void attention_decode(const attention_decode_plan& plan, const paged_kv_view<K, V, T>& kv, const float* q,
                               std::size_t begin, std::size_t end) noexcept {
    attention_decode(plan, kv.desc(), q, begin, end);
  }
  /// Merges the partial states of sequences [begin, end) into out (and lse when non-null).
  static void attention_decode_merge(const attention_decode_plan& plan, float* out, float* lse, std::size_t begin,
                                     std::size_t end) noexcept {
    RUVLLM_ASSERT(end <= plan.batch && begin <= end);
    attention_detail::decode_merge(plan, out, lse, begin, end);
  }
  /// Combines two attention outputs over disjoint keys by their log-sum-exps.
  static void attention_merge_states(const float* a, const float* lse_a, const float* b, const float* lse_b, float* out,
                                     float* lse_out, std::size_t rows, std::size_t head_dim) noexcept {
    attention_detail::merge_states(a, lse_a, b, lse_b, out, lse_out, rows, head_dim);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_ATTENTION_HPP
