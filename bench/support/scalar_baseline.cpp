// Built with no SIMD flags and never inlined elsewhere (see
// scalar_baseline.hpp). Keep this unit free of ruvllm and benchmark headers:
// their inline functions would be merged at link time with copies built for
// another architecture.

#include "support/scalar_baseline.hpp"

namespace ruvllm::bench::baseline {

float dot(const float* a, const float* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace ruvllm::bench::baseline
