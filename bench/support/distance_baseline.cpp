// Built with no SIMD flags and never inlined elsewhere (see
// distance_baseline.hpp). Free of ruvllm and benchmark headers, like
// scalar_baseline.cpp, so no inline function is merged with a copy built for
// another architecture.

#include "support/distance_baseline.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace ruvllm::bench::baseline {

namespace {

// A textbook binary16 -> binary32 conversion (internal linkage on purpose).
float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  const std::uint32_t mantissa = h & 0x3FFu;
  std::uint32_t bits = 0;
  if (exponent == 0x1Fu) {
    bits = sign | 0x7F80'0000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else {
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -value : value;
  }
  float out = 0.0f;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

float cosine_of(float ab, float aa, float bb) noexcept {
  if (aa == 0.0f || bb == 0.0f) return 0.0f;
  return ab / std::sqrt(aa * bb);
}

}  // namespace

float l2sq(const float* a, const float* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float d = a[i] - b[i];
    sum += d * d;
  }
  return sum;
}

float l1(const float* a, const float* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += std::fabs(a[i] - b[i]);
  return sum;
}

float cosine(const float* a, const float* b, std::size_t n) noexcept {
  float ab = 0.0f, aa = 0.0f, bb = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return cosine_of(ab, aa, bb);
}

float dot_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += half_to_float(a[i]) * half_to_float(b[i]);
  return sum;
}

float l2sq_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float d = half_to_float(a[i]) - half_to_float(b[i]);
    sum += d * d;
  }
  return sum;
}

float l1_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += std::fabs(half_to_float(a[i]) - half_to_float(b[i]));
  return sum;
}

float cosine_f16(const std::uint16_t* a, const std::uint16_t* b, std::size_t n) noexcept {
  float ab = 0.0f, aa = 0.0f, bb = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = half_to_float(a[i]), y = half_to_float(b[i]);
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return cosine_of(ab, aa, bb);
}

std::int32_t dot_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  std::int32_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

std::int32_t l2sq_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  std::int32_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t d = a[i] - b[i];
    sum += d * d;
  }
  return sum;
}

std::int32_t l1_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  std::int32_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += std::abs(a[i] - b[i]);
  return sum;
}

float cosine_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) noexcept {
  std::int32_t ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return cosine_of(static_cast<float>(ab), static_cast<float>(aa), static_cast<float>(bb));
}

}  // namespace ruvllm::bench::baseline
