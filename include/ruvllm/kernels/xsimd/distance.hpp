#ifndef RUVLLM_KERNELS_XSIMD_DISTANCE_HPP
#define RUVLLM_KERNELS_XSIMD_DISTANCE_HPP

// Distance kernels of backend::xsimd (see xsimd/arch.hpp on compile flags).

#include <cstddef>

#include "ruvllm/kernels/scalar/distance.hpp"
#include "ruvllm/kernels/xsimd/arch.hpp"

namespace ruvllm::kernels {

namespace xsimd_impl {
inline namespace RUVLLM_XSIMD_ARCH_NS {

/// Sum of a[i] * b[i]; any alignment. Same accumulator structure as the
/// Highway kernel, with a scalar loop for the last partial vector.
[[nodiscard]] inline float dot(const float* a, const float* b, std::size_t n) noexcept {
  using batch = ::xsimd::batch<float>;
  constexpr std::size_t lanes = batch::size;
  batch acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    acc0 = ::xsimd::fma(batch::load_unaligned(a + i), batch::load_unaligned(b + i), acc0);
    acc1 = ::xsimd::fma(batch::load_unaligned(a + i + lanes), batch::load_unaligned(b + i + lanes), acc1);
    acc2 = ::xsimd::fma(batch::load_unaligned(a + i + 2 * lanes), batch::load_unaligned(b + i + 2 * lanes), acc2);
    acc3 = ::xsimd::fma(batch::load_unaligned(a + i + 3 * lanes), batch::load_unaligned(b + i + 3 * lanes), acc3);
  }
  for (; i + lanes <= n; i += lanes)
    acc0 = ::xsimd::fma(batch::load_unaligned(a + i), batch::load_unaligned(b + i), acc0);
  float sum = ::xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace RUVLLM_XSIMD_ARCH_NS
}  // namespace xsimd_impl

template <>
struct distance_ops<backend::xsimd> {
  [[nodiscard]] static float dot(const float* a, const float* b, std::size_t n) noexcept {
    return xsimd_impl::dot(a, b, n);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_XSIMD_DISTANCE_HPP
