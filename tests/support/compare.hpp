#ifndef RUVLLM_TESTS_SUPPORT_COMPARE_HPP
#define RUVLLM_TESTS_SUPPORT_COMPARE_HPP

// Numeric comparisons for kernel tests: ULP distance, relative error, and
// the summation error bound kernels are held to.

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace ruvllm::test {

/// Distance in units in the last place between two finite floats (0 for
/// equal values, including +0 and -0). Infinite for NaN.
inline std::uint64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<std::uint64_t>::max();
  // Map the sign-magnitude bit patterns onto a monotonic integer line.
  const auto ordered = [](float x) -> std::int64_t {
    const auto bits = static_cast<std::int64_t>(std::bit_cast<std::int32_t>(x));
    return bits < 0 ? std::int64_t{std::numeric_limits<std::int32_t>::min()} - bits : bits;
  };
  const std::int64_t d = ordered(a) - ordered(b);
  return static_cast<std::uint64_t>(d < 0 ? -d : d);
}

/// |a - b| / max(|b|, floor): relative error of a against reference b.
inline double relative_error(double a, double b, double floor = 1e-30) {
  return std::fabs(a - b) / std::fmax(std::fabs(b), floor);
}

/// Forward error bound of a float dot product of length n summed in any
/// order: n * eps * sum |a_i b_i| (the classic gamma_n bound, to first order).
inline double dot_error_bound(const float* a, const float* b, std::size_t n) {
  double magnitude = 0.0;
  for (std::size_t i = 0; i < n; ++i) magnitude += std::fabs(static_cast<double>(a[i]) * static_cast<double>(b[i]));
  return static_cast<double>(n) * static_cast<double>(std::numeric_limits<float>::epsilon()) * magnitude;
}

/// The exact dot product, for references (double has enough headroom for
/// the lengths and magnitudes tests use).
inline double dot_exact(const float* a, const float* b, std::size_t n) {
  long double sum = 0.0L;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<long double>(a[i]) * static_cast<long double>(b[i]);
  return static_cast<double>(sum);
}

}  // namespace ruvllm::test

#endif  // RUVLLM_TESTS_SUPPORT_COMPARE_HPP
