#ifndef RUVLLM_KERNELS_MATMUL_HPP
#define RUVLLM_KERNELS_MATMUL_HPP

// Multi-threaded GEMV and GEMM over a thread_pool: y = W x (decode) and
// Y = X Wᵀ (prefill) for a row-major weight matrix in f32, f16 or bf16 and f32
// activations (GEMV also takes f16 / bf16 activations beside weights of that
// type), and y = W x for GGUF-quantized weights (quantized_gemv).
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
/// `pool`. W is float, ruvllm::f16 or ruvllm::bf16; X is float, or W when W
/// is a half type (activations already rounded to it, as llama.cpp rounds
/// them for such weights: faster from memory, the same bits as widening them
/// first). x must not alias y.
template <Backend B, class W, class X>
void gemv(thread_pool& pool, const W* w, std::size_t row_stride, const X* x, float* y, std::size_t rows,
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

// For each GGUF weight block: the activation form it pairs with and the
// backend calls that quantize activations and dot rows, as llama.cpp's CPU
// path pairs them (Q8_0 activations for 32-element formats, laid out as
// q8_0_quads; Q8_K for K-quants). `gemm` computes a tile of rows x tokens
// whose results equal `rows` per token.
template <class WeightBlock>
struct quantized_gemv_traits;

struct q8_0_quad_traits {
  using activation_block = q8_0_quad;
  static constexpr std::size_t block_size = 32;
  static constexpr std::size_t activation_count(std::size_t cols) noexcept { return q8_0_quads(cols); }
  template <Backend B>
  static void quantize(const float* x, activation_block* a, std::size_t n) noexcept {
    ops<B>::quantize_q8_0_quads(x, a, n);
  }
};

template <>
struct quantized_gemv_traits<block_q8_0> : q8_0_quad_traits {
  template <Backend B>
  static void rows(const block_q8_0* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q8_0_quad_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q8_0* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q8_0_quads(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

template <>
struct quantized_gemv_traits<block_q4_0> : q8_0_quad_traits {
  template <Backend B>
  static void rows(const block_q4_0* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q4_0_quad_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q4_0* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q4_0_quads(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

template <>
struct quantized_gemv_traits<block_iq4_nl> : q8_0_quad_traits {
  template <Backend B>
  static void rows(const block_iq4_nl* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t n, float* out) noexcept {
    ops<B>::dot_iq4_nl_quad_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_iq4_nl* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_iq4_nl_quads(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

template <>
struct quantized_gemv_traits<block_q5_0> : q8_0_quad_traits {
  template <Backend B>
  static void rows(const block_q5_0* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q5_0_quad_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q5_0* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q5_0_quads(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

template <>
struct quantized_gemv_traits<block_q4_1> : q8_0_quad_traits {
  template <Backend B>
  static void rows(const block_q4_1* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q4_1_quad_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q4_1* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q4_1_quads(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

template <>
struct quantized_gemv_traits<block_q5_1> : q8_0_quad_traits {
  template <Backend B>
  static void rows(const block_q5_1* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q5_1_quad_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q5_1* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q5_1_quads(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

// K-quants: Q8_K activations.
struct q8_k_traits {
  using activation_block = block_q8_k;
  static constexpr std::size_t block_size = qk_k;
  static constexpr std::size_t activation_count(std::size_t cols) noexcept { return cols / qk_k; }
  template <Backend B>
  static void quantize(const float* x, activation_block* a, std::size_t n) noexcept {
    ops<B>::quantize_q8_k(x, a, n);
  }
};

template <>
struct quantized_gemv_traits<block_q2_k> : q8_k_traits {
  template <Backend B>
  static void rows(const block_q2_k* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q2_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q2_k* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q2_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

template <>
struct quantized_gemv_traits<block_q3_k> : q8_k_traits {
  template <Backend B>
  static void rows(const block_q3_k* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q3_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q3_k* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q3_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};
template <>
struct quantized_gemv_traits<block_iq4_xs> : q8_k_traits {
  template <Backend B>
  static void rows(const block_iq4_xs* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t n, float* out) noexcept {
    ops<B>::dot_iq4_xs_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_iq4_xs* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_iq4_xs_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

template <>
struct quantized_gemv_traits<block_q4_k> : q8_k_traits {
  template <Backend B>
  static void rows(const block_q4_k* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q4_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q4_k* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q4_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

template <>
struct quantized_gemv_traits<block_q5_k> : q8_k_traits {
  template <Backend B>
  static void rows(const block_q5_k* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q5_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q5_k* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q5_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

template <>
struct quantized_gemv_traits<block_q6_k> : q8_k_traits {
  template <Backend B>
  static void rows(const block_q6_k* w, std::size_t stride, std::size_t rows, const activation_block* a, std::size_t n,
                   float* out) noexcept {
    ops<B>::dot_q6_k_q8_k_rows(w, stride, rows, a, n, out);
  }
  template <Backend B>
  static void gemm(const block_q6_k* w, std::size_t stride, std::size_t rows, const activation_block* a,
                   std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    ops<B>::gemm_q6_k_q8_k(w, stride, rows, a, tokens, n, y, y_stride);
  }
};

}  // namespace detail

/// The activation form a quantized weight block is multiplied with:
/// q8_0_quad for Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL weights, block_q8_k for
/// Q2_K / Q3_K / Q4_K / Q5_K / Q6_K / IQ4_XS.
template <class WeightBlock>
using activation_block_t = typename detail::quantized_gemv_traits<WeightBlock>::activation_block;

/// Activation blocks (or quads) quantized_gemv needs in its workspace for
/// `cols` columns; quantized_gemm needs this many per token.
template <class WeightBlock>
[[nodiscard]] constexpr std::size_t activation_blocks(std::size_t cols) noexcept {
  return detail::quantized_gemv_traits<WeightBlock>::activation_count(cols);
}

/// y = W x for GGUF-quantized weights (block_q8_0, block_q4_0, block_q4_1,
/// block_q5_0, block_q5_1, block_iq4_nl, block_iq4_xs, block_q2_k, block_q3_k, block_q4_k,
/// block_q5_k or block_q6_k rows,
/// `row_stride` bytes apart, cols a multiple of the block size): x is
/// quantized once into `activations` (activation_blocks(cols) of them,
/// caller-provided so the call never allocates) by the calling thread, then
/// row blocks of ~128 KiB of weights run on every pool thread, each one
/// dispatched call of the backend's row-dot kernel.
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

/// Tokens per work item of quantized_gemm: the activations of one item stay
/// within ~256 KiB (L2) while its weight rows stream past them.
template <class WeightBlock>
[[nodiscard]] constexpr std::size_t quantized_gemm_token_tile(std::size_t cols) noexcept {
  const std::size_t per_token = activation_blocks<WeightBlock>(cols) * sizeof(activation_block_t<WeightBlock>) + 1;
  return std::clamp<std::size_t>((std::size_t{256} << 10) / per_token, 4, 64);
}

/// Y[t * y_stride + r] = sum_c W[r][c] * X[t * x_stride + c] for r < rows and
/// t < tokens, for GGUF-quantized weights (as quantized_gemv): the prefill
/// form. Every token's activations are quantized once into `activations`
/// (tokens * activation_blocks(cols), caller-provided), then work items of
/// ~128 KiB of weight rows x a tile of tokens (quantized_gemm_token_tile) run
/// on every pool thread, each one call of the backend's GEMM tile kernel,
/// which unpacks each weight block once for all the tile's tokens. Each
/// (row, token) result is bit-identical to quantized_gemv of that token. Y
/// must not alias X.
template <Backend B, class WeightBlock>
void quantized_gemm(thread_pool& pool, const WeightBlock* w, std::size_t row_stride, const float* x,
                    std::size_t x_stride, float* y, std::size_t y_stride, std::size_t rows, std::size_t tokens,
                    std::size_t cols, activation_block_t<WeightBlock>* activations) noexcept {
  using traits = detail::quantized_gemv_traits<WeightBlock>;
  RUVLLM_ASSERT(cols % traits::block_size == 0);
  const std::size_t per_token = activation_blocks<WeightBlock>(cols);
  pool.run(tokens, 1, [&](std::size_t begin, std::size_t end, std::size_t) {
    for (std::size_t t = begin; t < end; ++t)
      traits::template quantize<B>(x + t * x_stride, activations + t * per_token, cols);
  });
  const std::size_t token_tile = quantized_gemm_token_tile<WeightBlock>(cols);
  const std::size_t row_tile = gemv_block_rows(row_stride);
  const std::size_t row_tiles = (rows + row_tile - 1) / row_tile;
  const std::size_t token_tiles = (tokens + token_tile - 1) / token_tile;
  const auto* base = reinterpret_cast<const std::byte*>(w);
  pool.run(row_tiles * token_tiles, 1, [&](std::size_t begin, std::size_t end, std::size_t) {
    for (std::size_t item = begin; item < end; ++item) {
      const std::size_t r0 = item % row_tiles * row_tile, n_rows = std::min(row_tile, rows - r0);
      const std::size_t t0 = item / row_tiles * token_tile, n_tokens = std::min(token_tile, tokens - t0);
      traits::template gemm<B>(reinterpret_cast<const WeightBlock*>(base + r0 * row_stride), row_stride, n_rows,
                               activations + t0 * per_token, n_tokens, cols, y + t0 * y_stride + r0, y_stride);
    }
  });
}

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_MATMUL_HPP
