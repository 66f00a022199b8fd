#ifndef RUVLLM_KERNELS_MATMUL_HPP
#define RUVLLM_KERNELS_MATMUL_HPP

// Multi-threaded GEMV and GEMM over a thread_pool: y = W x (decode) and
// Y = X Wᵀ (prefill) for a row-major weight matrix in f32, f16 or bf16 and f32
// activations, and y = W x for GGUF-quantized weights (quantized_gemv).
//
// The rows are split into blocks of about 128 KiB of weights, claimed
// dynamically by the pool's threads: large enough that the claim and the
// dispatch (~1.3 ns) vanish next to streaming the block from memory, small
// enough that a thread the OS deschedules holds little of the work. Each
// block is one call into the backend's row kernel, which reads the block once
// while x stays in L1. Does not allocate.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/precision.hpp"
#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/kernels/ops.hpp"

namespace ruvllm::kernels {

/// Rows per work item for rows of `row_bytes` bytes: ~128 KiB, a multiple of 4.
[[nodiscard]] constexpr std::size_t gemv_block_rows(std::size_t row_bytes) noexcept {
  constexpr std::size_t target_bytes = std::size_t{128} << 10;
  const std::size_t rows = row_bytes == 0 ? target_bytes : target_bytes / row_bytes;
  return std::max<std::size_t>(4, rows / 4 * 4);
}

/// y[r] = sum_c w[r * row_stride + c] * x[c] for r < rows, on every thread of
/// `pool`. W is float, ruvllm::f16 or ruvllm::bf16. x must not alias y.
template <Backend B, class W>
void gemv(thread_pool& pool, const W* w, std::size_t row_stride, const float* x, float* y, std::size_t rows,
          std::size_t cols) noexcept {
  pool.run(rows, gemv_block_rows(cols * sizeof(W)), [&](std::size_t begin, std::size_t end, std::size_t) {
    ops<B>::gemv(w + begin * row_stride, row_stride, x, y + begin, end - begin, cols);
  });
}

/// Y[t * y_stride + r] = sum_c w[r * w_stride + c] * x[t * x_stride + c] for
/// r < rows and t < tokens, on every thread of `pool`. Work items are tiles
/// of 64 rows x 64 tokens: 64 f32 rows of 4096 plus 64 tokens is 2 MiB, the
/// working set of one item stays in L2/L3 while each weight byte serves 64
/// tokens. Y must not alias X or W.
template <Backend B, class W>
void gemm(thread_pool& pool, const W* w, std::size_t w_stride, const float* x, std::size_t x_stride, float* y,
          std::size_t y_stride, std::size_t rows, std::size_t tokens, std::size_t cols) noexcept {
  constexpr std::size_t tile = 64;
  const std::size_t row_tiles = (rows + tile - 1) / tile;
  const std::size_t token_tiles = (tokens + tile - 1) / tile;
  // Row tiles vary fastest so consecutive items share a token tile in cache.
  pool.run(row_tiles * token_tiles, 1, [&](std::size_t begin, std::size_t end, std::size_t) {
    for (std::size_t item = begin; item < end; ++item) {
      const std::size_t r0 = item % row_tiles * tile;
      const std::size_t t0 = item / row_tiles * tile;
      ops<B>::gemm(w + r0 * w_stride, w_stride, x + t0 * x_stride, x_stride, y + t0 * y_stride + r0, y_stride,
                   std::min(tile, rows - r0), std::min(tile, tokens - t0), cols);
    }
  });
}

namespace detail {

// For each GGUF weight block: the activation block it pairs with and the
// backend calls that quantize activations and dot rows, as llama.cpp's CPU
// path pairs them (Q8_0 activations for 32-element formats, Q8_K for K-quants).
template <class WeightBlock>
struct quantized_gemv_traits;

template <>
struct quantized_gemv_traits<block_q8_0> {
  using activation_block = block_q8_0;
  static constexpr std::size_t block_size = 32;
  template <Backend B>
  static void quantize(const float* x, activation_block* a, std::size_t n) noexcept {
    ops<B>::quantize_q8_0(x, a, n);
  }
  template <Backend B>
  static void rows(const block_q8_0* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q8_0_q8_0_rows(w, stride, rows, a, n, out);
  }
};

template <>
struct quantized_gemv_traits<block_q4_0> {
  using activation_block = block_q8_0;
  static constexpr std::size_t block_size = 32;
  template <Backend B>
  static void quantize(const float* x, activation_block* a, std::size_t n) noexcept {
    ops<B>::quantize_q8_0(x, a, n);
  }
  template <Backend B>
  static void rows(const block_q4_0* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q4_0_q8_0_rows(w, stride, rows, a, n, out);
  }
};

template <>
struct quantized_gemv_traits<block_q4_k> {
  using activation_block = block_q8_k;
  static constexpr std::size_t block_size = qk_k;
  template <Backend B>
  static void quantize(const float* x, activation_block* a, std::size_t n) noexcept {
    ops<B>::quantize_q8_k(x, a, n);
  }
  template <Backend B>
  static void rows(const block_q4_k* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q4_k_q8_k_rows(w, stride, rows, a, n, out);
  }
};

template <>
struct quantized_gemv_traits<block_q6_k> {
  using activation_block = block_q8_k;
  static constexpr std::size_t block_size = qk_k;
  template <Backend B>
  static void quantize(const float* x, activation_block* a, std::size_t n) noexcept {
    ops<B>::quantize_q8_k(x, a, n);
  }
  template <Backend B>
  static void rows(const block_q6_k* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q6_k_q8_k_rows(w, stride, rows, a, n, out);
  }
};

}  // namespace detail

/// The activation block a quantized weight block is multiplied with.
template <class WeightBlock>
using activation_block_t = typename detail::quantized_gemv_traits<WeightBlock>::activation_block;

/// Activation blocks quantized_gemv needs in its workspace for `cols` columns.
template <class WeightBlock>
[[nodiscard]] constexpr std::size_t activation_blocks(std::size_t cols) noexcept {
  return cols / detail::quantized_gemv_traits<WeightBlock>::block_size;
}

/// y = W x for GGUF-quantized weights (block_q8_0, block_q4_0, block_q4_k or
/// block_q6_k rows, `row_stride` bytes apart, cols a multiple of the block
/// size): x is quantized once into `activations` (activation_blocks(cols)
/// blocks, caller-provided so the call never allocates) by the calling
/// thread, then row blocks of ~128 KiB of weights run on every pool thread,
/// each one dispatched call of the backend's row-dot kernel.
template <Backend B, class WeightBlock>
void quantized_gemv(thread_pool& pool, const WeightBlock* w, std::size_t row_stride, const float* x, float* y,
                    std::size_t rows, std::size_t cols, activation_block_t<WeightBlock>* activations) noexcept {
  using traits = detail::quantized_gemv_traits<WeightBlock>;
  RUVLLM_ASSERT(cols % traits::block_size == 0);
  traits::template quantize<B>(x, activations, cols);
  const auto* base = reinterpret_cast<const std::byte*>(w);
  pool.run(rows, gemv_block_rows(row_stride), [&](std::size_t begin, std::size_t end, std::size_t) {
    traits::template rows<B>(reinterpret_cast<const WeightBlock*>(base + begin * row_stride), row_stride, end - begin,
                             activations, cols, y + begin);
  });
}

/// Y[t * y_stride + r] = sum_c W[r][c] * X[t * x_stride + c] for r < rows and
/// t < tokens, for GGUF-quantized weights (as quantized_gemv): the prefill
/// form. Every token's activations are quantized once into `activations`
/// (tokens * activation_blocks(cols) blocks, caller-provided), then work
/// items of ~128 KiB of weight rows x 32 tokens run on every pool thread, so
/// each weight row is read from memory once per 32 tokens and from L2 for
/// the rest. Each (row, token) result is the row kernel's, bit-identical to
/// quantized_gemv of that token. Y must not alias X.
template <Backend B, class WeightBlock>
void quantized_gemm(thread_pool& pool, const WeightBlock* w, std::size_t row_stride, const float* x,
                    std::size_t x_stride, float* y, std::size_t y_stride, std::size_t rows, std::size_t tokens,
                    std::size_t cols, activation_block_t<WeightBlock>* activations) noexcept {
  using traits = detail::quantized_gemv_traits<WeightBlock>;
  RUVLLM_ASSERT(cols % traits::block_size == 0);
  const std::size_t blocks = cols / traits::block_size;
  pool.run(tokens, 1, [&](std::size_t begin, std::size_t end, std::size_t) {
    for (std::size_t t = begin; t < end; ++t)
      traits::template quantize<B>(x + t * x_stride, activations + t * blocks, cols);
  });
  constexpr std::size_t token_tile = 32;
  const std::size_t row_tile = gemv_block_rows(row_stride);
  const std::size_t row_tiles = (rows + row_tile - 1) / row_tile;
  const std::size_t token_tiles = (tokens + token_tile - 1) / token_tile;
  const auto* base = reinterpret_cast<const std::byte*>(w);
  pool.run(row_tiles * token_tiles, 1, [&](std::size_t begin, std::size_t end, std::size_t) {
    for (std::size_t item = begin; item < end; ++item) {
      const std::size_t r0 = item % row_tiles * row_tile, n_rows = std::min(row_tile, rows - r0);
      const std::size_t t0 = item / row_tiles * token_tile, n_tokens = std::min(token_tile, tokens - t0);
      const auto* tile = reinterpret_cast<const WeightBlock*>(base + r0 * row_stride);
      for (std::size_t t = t0; t < t0 + n_tokens; ++t)
        traits::template rows<B>(tile, row_stride, n_rows, activations + t * blocks, cols, y + t * y_stride + r0);
    }
  });
}

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_MATMUL_HPP
