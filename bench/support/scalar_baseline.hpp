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

/// RMSNorm of one row: y = (x * (1 / sqrt(mean(x^2) + eps))) * w (the scalar
/// reference's loop: kernels/scalar/norm.hpp).
void rms_norm(const float* x, const float* w, float* y, std::size_t n, float eps) noexcept;

/// Softmax of one row: y = exp(x - max) / sum (kernels/scalar/activation.hpp).
void softmax(const float* x, float* y, std::size_t n) noexcept;

/// RoPE of `heads` contiguous vectors of d floats at one position, in place;
/// `row` holds d/2 cosines then d/2 sines (kernels/scalar/rope.hpp). neox
/// pairs (i, i + d/2), otherwise (2i, 2i + 1).
void rope(const float* row, std::size_t d, bool neox, float* x, std::size_t heads) noexcept;

/// A low-rank adapter's forward pass as the reference design writes it:
/// ax = A x (a: rank rows of in), then y[o] += scale * sum_r b[o * rank + r] * ax[r]
/// (b: out rows of rank).
void lora_forward(const float* a, const float* b, const float* x, float* y, std::size_t in, std::size_t out,
                  std::size_t rank, float scale) noexcept;

}  // namespace ruvllm::bench::baseline

#endif  // RUVLLM_BENCH_SUPPORT_SCALAR_BASELINE_HPP
