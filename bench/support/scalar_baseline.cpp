// Built with no SIMD flags and never inlined elsewhere (see
// scalar_baseline.hpp). Keep this unit free of ruvllm and benchmark headers:
// their inline functions would be merged at link time with copies built for
// another architecture.

#include "support/scalar_baseline.hpp"

#include <cmath>

namespace ruvllm::bench::baseline {

float dot(const float* a, const float* b, std::size_t n) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void rms_norm(const float* x, const float* w, float* y, std::size_t n, float eps) noexcept {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (std::size_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

void softmax(const float* x, float* y, std::size_t n) noexcept {
  float max = x[0];
  for (std::size_t i = 1; i < n; ++i)
    if (x[i] > max) max = x[i];
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += y[i] = std::exp(x[i] - max);
  const float inv = 1.0f / sum;
  for (std::size_t i = 0; i < n; ++i) y[i] *= inv;
}

void rope(const float* row, std::size_t d, bool neox, float* x, std::size_t heads) noexcept {
  const std::size_t half = d / 2;
  for (std::size_t h = 0; h < heads; ++h) {
    float* v = x + h * d;
    for (std::size_t i = 0; i < half; ++i) {
      const std::size_t ia = neox ? i : 2 * i;
      const std::size_t ib = neox ? i + half : 2 * i + 1;
      const float a = v[ia], b = v[ib];
      v[ia] = a * row[i] - b * row[half + i];
      v[ib] = a * row[half + i] + b * row[i];
    }
  }
}

void lora_forward(const float* a, const float* b, const float* x, float* y, std::size_t in, std::size_t out,
                  std::size_t rank, float scale) noexcept {
  float ax[8] = {};
  for (std::size_t r = 0; r < rank && r < 8; ++r) {
    float s = 0.0f;
    for (std::size_t d = 0; d < in; ++d) s += a[r * in + d] * x[d];
    ax[r] = s;
  }
  for (std::size_t o = 0; o < out; ++o) {
    float s = 0.0f;
    for (std::size_t r = 0; r < rank && r < 8; ++r) s += b[o * rank + r] * ax[r];
    y[o] += scale * s;
  }
}

}  // namespace ruvllm::bench::baseline
