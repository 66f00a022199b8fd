#ifndef RUVLLM_BENCH_SUPPORT_SCALAR_BASELINE_HPP
#define RUVLLM_BENCH_SUPPORT_SCALAR_BASELINE_HPP

// The plain loops our kernels are measured against: what a user gets from
// writing the obvious code and compiling it with -O3. They live in their own
// static library (ruvllm_bench_baselines), compiled without -march flags and
// without link-time optimization, and are deliberately not inline: a
// benchmark unit built with -march=native can neither inline them nor
// re-vectorize them, so every executable measures the same baseline code.
// Add cosine, L2, GEMV, ... baselines here as their benchmarks appear.

#include <cstddef>

namespace ruvllm::bench::baseline {

/// Sum of a[i] * b[i], left to right in float.
[[nodiscard]] float dot(const float* a, const float* b, std::size_t n) noexcept;

}  // namespace ruvllm::bench::baseline

#endif  // RUVLLM_BENCH_SUPPORT_SCALAR_BASELINE_HPP
