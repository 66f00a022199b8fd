// Highway GEMV kernels, compiled once per SIMD target (see distance-inl.h for
// the toggle-guard pattern).

#if defined(RUVLLM_KERNELS_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_MATMUL_INL_H_
#undef RUVLLM_KERNELS_MATMUL_INL_H_
#else
#define RUVLLM_KERNELS_MATMUL_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ruvllm::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace matmul_detail {

template <class D>
HWY_INLINE hn::Vec<D> load_as_f32(D d, const float* p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> load_as_f32(D d, const ruvllm::f16* p) {
  const hn::Rebind<hwy::float16_t, D> dh;
  return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
}
template <class D>
HWY_INLINE hn::Vec<D> load_as_f32(D d, const ruvllm::bf16* p) {
  const hn::Rebind<hwy::bfloat16_t, D> dh;
  return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::bfloat16_t*>(p)));
}

// Four rows per pass share each load of x (x stays in L1, the weights stream
// from memory once); two vectors per row per step give eight independent FMA
// chains, enough to cover FMA latency. Columns past the last full vector are
// summed in scalar code, so no load reads beyond a row.
template <class W>
HWY_INLINE void gemv(const W* HWY_RESTRICT w, std::size_t row_stride, const float* HWY_RESTRICT x,
                     float* HWY_RESTRICT y, std::size_t rows, std::size_t cols) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t full = cols / lanes * lanes;
  const std::size_t pairs = cols / (2 * lanes) * (2 * lanes);
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const W* w0 = w + r * row_stride;
    const W* w1 = w0 + row_stride;
    const W* w2 = w1 + row_stride;
    const W* w3 = w2 + row_stride;
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    auto b0 = hn::Zero(d), b1 = hn::Zero(d), b2 = hn::Zero(d), b3 = hn::Zero(d);
    std::size_t c = 0;
    for (; c < pairs; c += 2 * lanes) {
      const auto xa = hn::LoadU(d, x + c);
      const auto xb = hn::LoadU(d, x + c + lanes);
      a0 = hn::MulAdd(load_as_f32(d, w0 + c), xa, a0);
      a1 = hn::MulAdd(load_as_f32(d, w1 + c), xa, a1);
      a2 = hn::MulAdd(load_as_f32(d, w2 + c), xa, a2);
      a3 = hn::MulAdd(load_as_f32(d, w3 + c), xa, a3);
      b0 = hn::MulAdd(load_as_f32(d, w0 + c + lanes), xb, b0);
      b1 = hn::MulAdd(load_as_f32(d, w1 + c + lanes), xb, b1);
      b2 = hn::MulAdd(load_as_f32(d, w2 + c + lanes), xb, b2);
      b3 = hn::MulAdd(load_as_f32(d, w3 + c + lanes), xb, b3);
    }
    for (; c < full; c += lanes) {
      const auto xa = hn::LoadU(d, x + c);
      a0 = hn::MulAdd(load_as_f32(d, w0 + c), xa, a0);
      a1 = hn::MulAdd(load_as_f32(d, w1 + c), xa, a1);
      a2 = hn::MulAdd(load_as_f32(d, w2 + c), xa, a2);
      a3 = hn::MulAdd(load_as_f32(d, w3 + c), xa, a3);
    }
    float s0 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, b0)));
    float s1 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a1, b1)));
    float s2 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a2, b2)));
    float s3 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a3, b3)));
    for (; c < cols; ++c) {
      s0 += scalar::detail::widen(w0[c]) * x[c];
      s1 += scalar::detail::widen(w1[c]) * x[c];
      s2 += scalar::detail::widen(w2[c]) * x[c];
      s3 += scalar::detail::widen(w3[c]) * x[c];
    }
    y[r] = s0;
    y[r + 1] = s1;
    y[r + 2] = s2;
    y[r + 3] = s3;
  }
  for (; r < rows; ++r) {
    const W* w0 = w + r * row_stride;
    auto a0 = hn::Zero(d), b0 = hn::Zero(d);
    std::size_t c = 0;
    for (; c < pairs; c += 2 * lanes) {
      a0 = hn::MulAdd(load_as_f32(d, w0 + c), hn::LoadU(d, x + c), a0);
      b0 = hn::MulAdd(load_as_f32(d, w0 + c + lanes), hn::LoadU(d, x + c + lanes), b0);
    }
    for (; c < full; c += lanes) a0 = hn::MulAdd(load_as_f32(d, w0 + c), hn::LoadU(d, x + c), a0);
    float s0 = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, b0)));
    for (; c < cols; ++c) s0 += scalar::detail::widen(w0[c]) * x[c];
    y[r] = s0;
  }
}

}  // namespace matmul_detail

inline void gemv_f32(const float* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                     std::size_t cols) {
  matmul_detail::gemv(w, row_stride, x, y, rows, cols);
}
inline void gemv_f16(const ruvllm::f16* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                     std::size_t cols) {
  matmul_detail::gemv(w, row_stride, x, y, rows, cols);
}
inline void gemv_bf16(const ruvllm::bf16* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                      std::size_t cols) {
  matmul_detail::gemv(w, row_stride, x, y, rows, cols);
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_MATMUL_INL_H_ toggle
