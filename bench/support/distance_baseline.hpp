#ifndef RUVLLM_BENCH_SUPPORT_DISTANCE_BASELINE_HPP
#define RUVLLM_BENCH_SUPPORT_DISTANCE_BASELINE_HPP

// The plain distance loops the distance kernels are measured against (see
// scalar_baseline.hpp for why they live in ruvllm_bench_baselines: no -march,
// no LTO, never inlined into a benchmark unit). Each is the obvious loop a
// user would write, compiled with -O3: float sums are not vectorized (gcc
// keeps their order without -ffast-math), integer sums are (SSE2). f16 inputs
// are raw IEEE binary16 bits widened by a plain scalar conversion, as code
// without F16C or ruvllm would do it (ruvllm's own inline to_float is kept
// out of this unit on purpose).

#include <cstddef>
#include <cstdint>

namespace ruvllm::bench::baseline {

/// Sum of (a[i] - b[i])^2 in float.
[[nodiscard]] float l2sq(const float* a, const float* b, std::size_t n) noexcept;
/// Sum of |a[i] - b[i]| in float.
[[nodiscard]] float l1(const float* a, const float* b, std::size_t n) noexcept;
/// dot / sqrt(|a|^2 * |b|^2) from three float sums in one loop; 0 for a zero vector.
[[nodiscard]] float cosine(const float* a, const float* b, std::size_t n) noexcept;

/// The same loops over f16 bit patterns, each element widened to float.
[[nodiscard]] float dot_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) noexcept;
[[nodiscard]] float l2sq_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) noexcept;
[[nodiscard]] float l1_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) noexcept;
[[nodiscard]] float cosine_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) noexcept;

/// The same loops over int8 with int32 sums (cosine: float division).
[[nodiscard]] std::int32_t dot_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept;
[[nodiscard]] std::int32_t l2sq_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept;
[[nodiscard]] std::int32_t l1_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept;
[[nodiscard]] float cosine_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept;

}  // namespace ruvllm::bench::baseline

#endif  // RUVLLM_BENCH_SUPPORT_DISTANCE_BASELINE_HPP
