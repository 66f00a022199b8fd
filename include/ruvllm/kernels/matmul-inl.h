// Highway GEMV kernels, compiled once per SIMD target (see distance-inl.h for
// the toggle-guard pattern).

#if defined(RUVLLM_KERNELS_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RUVLLM_KERNELS_MATMUL_INL_H_
#undef RUVLLM_KERNELS_MATMUL_INL_H_
#else
#define RUVLLM_KERNELS_MATMUL_INL_H_
#endif

#include <cstddef>

#include "hwy/cache_control.h"
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

// One row's dot: four vectors per step give four independent FMA chains,
// enough to cover FMA latency. The activations X are f32, or f16 / bf16
// beside weights of that type, widened per load: the same floats, so the
// same bits, as activations widened into f32 first. Columns past the last
// full vector are summed in scalar code, so no load reads beyond a row. gemv
// runs it on two rows side by side, sharing each activation load between
// them; each row keeps its own chains in the same order, so a row's result
// is the same bits whether it runs paired or alone (and at any split of the
// rows among threads).
template <class D, class W, class X>
struct row_dot {
  HWY_INLINE explicit row_dot(D d) : a(hn::Zero(d)), b(a), c(a), e(a) {}
  hn::Vec<D> a, b, c, e;
  HWY_INLINE void quad(D d, const W* HWY_RESTRICT w, hn::Vec<D> x0, hn::Vec<D> x1, hn::Vec<D> x2, hn::Vec<D> x3) {
    const std::size_t lanes = hn::Lanes(d);
    a = hn::MulAdd(load_as_f32(d, w), x0, a);
    b = hn::MulAdd(load_as_f32(d, w + lanes), x1, b);
    c = hn::MulAdd(load_as_f32(d, w + 2 * lanes), x2, c);
    e = hn::MulAdd(load_as_f32(d, w + 3 * lanes), x3, e);
  }
  /// One vector past the last whole quad, into the first chain.
  HWY_INLINE void one(D d, const W* HWY_RESTRICT w, hn::Vec<D> xv) { a = hn::MulAdd(load_as_f32(d, w), xv, a); }
  /// The chains' sum plus the scalar columns [from, cols).
  HWY_INLINE float sum(D d, const W* HWY_RESTRICT w, const X* HWY_RESTRICT x, std::size_t from,
                       std::size_t cols) const {
    const float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a, b), hn::Add(c, e))));
    return from < cols ? add_tail(s, w, x, from, cols) : s;
  }
  /// Out of line so that every row's tail is the same code: two rows' tails
  /// inlined side by side were compiled differently (contracted into FMAs
  /// or not) from one row's.
  static HWY_NOINLINE float add_tail(float s, const W* HWY_RESTRICT w, const X* HWY_RESTRICT x, std::size_t from,
                                     std::size_t cols) {
    for (std::size_t i = from; i < cols; ++i) s += scalar::detail::widen(w[i]) * scalar::detail::widen(x[i]);
    return s;
  }
};

// Under gemv_plan::pairs_l1_l2 rows go in pairs (a remaining odd row
// alone), each pair's weights two streams followed by row_pair_prefetcher.
// x is loaded once per pair: at 8192 f32 columns (32 KiB, all of Zen 4's L1)
// it comes from L2, and one row at a time reloaded it for every row at twice
// the weights' bytes. Over 1 GiB of f16 weights at one thread (Zen 4 guest)
// pairs read 24.6-29.2 GB/s from 768 to 8192 columns, where one row at a time
// under prefetch_ahead read 22-28 up to 4096 columns and 16.7-21 at 8192.
// Under gemv_plan::rows_l1 every row goes alone, one sequential stream for
// the hardware prefetchers (gemv_plan.hpp has Zen 5's figures).
//
// f16 activations beside f16 weights (X = W) read faster from memory than
// f32 ones, though the loop adds a conversion per activation vector. Over 1
// GiB of f16 rows in 2 MiB pages (Zen 5 guest, rows_l1, gemv_bench's
// gemv_half_x rows, five runs, ratio to f32 activations in the same run)
// at one thread: 768 columns 0.97-1.22 (median 1.19), 2048 1.05-1.17
// (1.12), 8192 0.94-1.30 (0.99); at two: 1.01-1.15 (1.07), 1.03-1.13 (1.09),
// 0.94-1.09 (1.00). A plain AVX-512 read of the same bytes still ran
// 1.12-1.15x the f16-activation loop at 2048 and 8192 columns (timing-only
// copy of the loop, ten alternating pairs).
template <gemv_plan Plan, class W, class X>
HWY_INLINE void gemv(const W* HWY_RESTRICT w, std::size_t row_stride, const X* HWY_RESTRICT x, float* HWY_RESTRICT y,
                     std::size_t rows, std::size_t cols) {
  const hn::ScalableTag<float> d;
  using dot = row_dot<decltype(d), W, X>;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t full = cols / lanes * lanes;
  const std::size_t quads = cols / (4 * lanes) * (4 * lanes);
  const std::size_t step_bytes = 4 * lanes * sizeof(W), row_bytes = cols * sizeof(W);
  std::size_t r = 0;
  if constexpr (Plan == gemv_plan::pairs_l1_l2) {
    row_pair_prefetcher even(w, 0, row_bytes, row_stride * sizeof(W)), odd(w, 1, row_bytes, row_stride * sizeof(W));
    for (; r + 2 <= rows; r += 2) {
      const W* w0 = w + r * row_stride;
      const W* w1 = w0 + row_stride;
      dot s0(d), s1(d);
      std::size_t c = 0;
      for (; c < quads; c += 4 * lanes) {
        even.step(step_bytes);
        odd.step(step_bytes);
        const auto x0 = load_as_f32(d, x + c), x1 = load_as_f32(d, x + c + lanes);
        const auto x2 = load_as_f32(d, x + c + 2 * lanes), x3 = load_as_f32(d, x + c + 3 * lanes);
        s0.quad(d, w0 + c, x0, x1, x2, x3);
        s1.quad(d, w1 + c, x0, x1, x2, x3);
      }
      even.skip(row_bytes - quads * sizeof(W));
      odd.skip(row_bytes - quads * sizeof(W));
      for (; c < full; c += lanes) {
        const auto xv = load_as_f32(d, x + c);
        s0.one(d, w0 + c, xv);
        s1.one(d, w1 + c, xv);
      }
      y[r] = s0.sum(d, w0, x, c, cols);
      y[r + 1] = s1.sum(d, w1, x, c, cols);
    }
  }
  for (; r < rows; ++r) {
    const W* w0 = w + r * row_stride;
    dot s0(d);
    std::size_t c = 0;
    for (; c < quads; c += 4 * lanes) {
      prefetch_ahead<Plan>(w0 + c, step_bytes);
      s0.quad(d, w0 + c, load_as_f32(d, x + c), load_as_f32(d, x + c + lanes), load_as_f32(d, x + c + 2 * lanes),
              load_as_f32(d, x + c + 3 * lanes));
    }
    for (; c < full; c += lanes) s0.one(d, w0 + c, load_as_f32(d, x + c));
    y[r] = s0.sum(d, w0, x, c, cols);
  }
}

/// gemv under the plan in use.
template <class W, class X>
HWY_INLINE void gemv_planned(const W* HWY_RESTRICT w, std::size_t row_stride, const X* HWY_RESTRICT x,
                             float* HWY_RESTRICT y, std::size_t rows, std::size_t cols) {
  with_gemv_plan([&](auto plan) { gemv<decltype(plan)::value>(w, row_stride, x, y, rows, cols); });
}

// Y[t][r] = dot(W row r, X row t) for a tile of rows x tokens. The micro
// tile is 4 rows x 2 tokens: each weight vector loaded is used twice and each
// activation vector four times, with 8 accumulators + 6 operands in 16
// registers. Leftover tokens go through the GEMV path, leftover rows through
// single-row dots.
template <class W>
HWY_INLINE void gemm(const W* HWY_RESTRICT w, std::size_t w_stride, const float* HWY_RESTRICT x, std::size_t x_stride,
                     float* HWY_RESTRICT y, std::size_t y_stride, std::size_t rows, std::size_t tokens,
                     std::size_t cols) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t full = cols / lanes * lanes;
  const std::size_t row_quads = rows / 4 * 4;
  std::size_t t = 0;
  for (; t + 2 <= tokens; t += 2) {
    const float* x0 = x + t * x_stride;
    const float* x1 = x0 + x_stride;
    float* y0 = y + t * y_stride;
    float* y1 = y0 + y_stride;
    for (std::size_t r = 0; r < row_quads; r += 4) {
      const W* w0 = w + r * w_stride;
      const W* w1 = w0 + w_stride;
      const W* w2 = w1 + w_stride;
      const W* w3 = w2 + w_stride;
      auto c00 = hn::Zero(d), c10 = hn::Zero(d), c20 = hn::Zero(d), c30 = hn::Zero(d);
      auto c01 = hn::Zero(d), c11 = hn::Zero(d), c21 = hn::Zero(d), c31 = hn::Zero(d);
      std::size_t c = 0;
      for (; c < full; c += lanes) {
        const auto a = hn::LoadU(d, x0 + c);
        const auto b = hn::LoadU(d, x1 + c);
        const auto v0 = load_as_f32(d, w0 + c);
        c00 = hn::MulAdd(v0, a, c00);
        c01 = hn::MulAdd(v0, b, c01);
        const auto v1 = load_as_f32(d, w1 + c);
        c10 = hn::MulAdd(v1, a, c10);
        c11 = hn::MulAdd(v1, b, c11);
        const auto v2 = load_as_f32(d, w2 + c);
        c20 = hn::MulAdd(v2, a, c20);
        c21 = hn::MulAdd(v2, b, c21);
        const auto v3 = load_as_f32(d, w3 + c);
        c30 = hn::MulAdd(v3, a, c30);
        c31 = hn::MulAdd(v3, b, c31);
      }
      float s[8] = {hn::GetLane(hn::SumOfLanes(d, c00)), hn::GetLane(hn::SumOfLanes(d, c10)),
                    hn::GetLane(hn::SumOfLanes(d, c20)), hn::GetLane(hn::SumOfLanes(d, c30)),
                    hn::GetLane(hn::SumOfLanes(d, c01)), hn::GetLane(hn::SumOfLanes(d, c11)),
                    hn::GetLane(hn::SumOfLanes(d, c21)), hn::GetLane(hn::SumOfLanes(d, c31))};
      for (; c < cols; ++c) {
        for (std::size_t i = 0; i < 4; ++i) {
          const float wv = scalar::detail::widen(w[(r + i) * w_stride + c]);
          s[i] += wv * x0[c];
          s[4 + i] += wv * x1[c];
        }
      }
      for (std::size_t i = 0; i < 4; ++i) {
        y0[r + i] = s[i];
        y1[r + i] = s[4 + i];
      }
    }
    if (row_quads < rows) {
      gemv_planned(w + row_quads * w_stride, w_stride, x0, y0 + row_quads, rows - row_quads, cols);
      gemv_planned(w + row_quads * w_stride, w_stride, x1, y1 + row_quads, rows - row_quads, cols);
    }
  }
  if (t < tokens) gemv_planned(w, w_stride, x + t * x_stride, y + t * y_stride, rows, cols);
}

// y[i] += sum_r coeffs[r] * rows[r][i], accumulated from y in row order (the
// scalar reference's order, so results match it exactly when no FMA
// contraction differs). Each vector of y is loaded and stored once for all
// rows.
HWY_INLINE void add_scaled_rows(const float* HWY_RESTRICT rows, std::size_t row_stride,
                                const float* HWY_RESTRICT coeffs, std::size_t count, float* HWY_RESTRICT y,
                                std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    auto acc = hn::LoadU(d, y + i);
    for (std::size_t r = 0; r < count; ++r)
      acc = hn::MulAdd(hn::Set(d, coeffs[r]), hn::LoadU(d, rows + r * row_stride + i), acc);
    hn::StoreU(acc, d, y + i);
  }
  for (; i < n; ++i) {
    float acc = y[i];
    for (std::size_t r = 0; r < count; ++r) acc += coeffs[r] * rows[r * row_stride + i];
    y[i] = acc;
  }
}

}  // namespace matmul_detail

inline void add_scaled_rows_f32(const float* rows, std::size_t row_stride, const float* coeffs, std::size_t count,
                                float* y, std::size_t n) {
  matmul_detail::add_scaled_rows(rows, row_stride, coeffs, count, y, n);
}

inline void gemm_f32(const float* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y,
                     std::size_t y_stride, std::size_t rows, std::size_t tokens, std::size_t cols) {
  matmul_detail::gemm(w, w_stride, x, x_stride, y, y_stride, rows, tokens, cols);
}
inline void gemm_f16(const ruvllm::f16* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y,
                     std::size_t y_stride, std::size_t rows, std::size_t tokens, std::size_t cols) {
  matmul_detail::gemm(w, w_stride, x, x_stride, y, y_stride, rows, tokens, cols);
}
inline void gemm_bf16(const ruvllm::bf16* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y,
                      std::size_t y_stride, std::size_t rows, std::size_t tokens, std::size_t cols) {
  matmul_detail::gemm(w, w_stride, x, x_stride, y, y_stride, rows, tokens, cols);
}

inline void gemv_f32(const float* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                     std::size_t cols) {
  matmul_detail::gemv_planned(w, row_stride, x, y, rows, cols);
}
inline void gemv_f16(const ruvllm::f16* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                     std::size_t cols) {
  matmul_detail::gemv_planned(w, row_stride, x, y, rows, cols);
}
inline void gemv_bf16(const ruvllm::bf16* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
                      std::size_t cols) {
  matmul_detail::gemv_planned(w, row_stride, x, y, rows, cols);
}
inline void gemv_f16_f16x(const ruvllm::f16* w, std::size_t row_stride, const ruvllm::f16* x, float* y,
                          std::size_t rows, std::size_t cols) {
  matmul_detail::gemv_planned(w, row_stride, x, y, rows, cols);
}
inline void gemv_bf16_bf16x(const ruvllm::bf16* w, std::size_t row_stride, const ruvllm::bf16* x, float* y,
                            std::size_t rows, std::size_t cols) {
  matmul_detail::gemv_planned(w, row_stride, x, y, rows, cols);
}

}  // namespace ruvllm::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // RUVLLM_KERNELS_MATMUL_INL_H_ toggle
