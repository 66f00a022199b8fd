#ifndef RUVLLM_KERNELS_HIGHWAY_QUANT_HPP
#define RUVLLM_KERNELS_HIGHWAY_QUANT_HPP

// Quant entry points of backend::highway: the bodies in quant-inl.h through
// runtime dispatch, one dispatched call per row or per batch of rows. The
// single-row dots are the batch form with one row. K-quant quantization
// (offline, not a hot path) and Q8_K dequantization (tests only) run the
// scalar reference. Semantics and preconditions: kernels/scalar/quant.hpp.

#include <cstddef>

#include "ruvllm/core/precision.hpp"
#include "ruvllm/kernels/dispatch.hpp"
#include "ruvllm/kernels/scalar/quant.hpp"

namespace ruvllm::kernels {

template <>
struct quant_ops<backend::highway> : detail::quant_checked<quant_ops<backend::highway>> {
  /// f32 -> Q8_0 (weights or activations), ggml's bytes; n % 32 == 0.
  static void quantize_q8_0(const float* x, block_q8_0* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    dispatch::quant_quantize_q8_0(x, y, n);
  }
  /// f32 -> Q4_0, ggml's bytes; n % 32 == 0.
  static void quantize_q4_0(const float* x, block_q4_0* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    dispatch::quant_quantize_q4_0(x, y, n);
  }
  /// f32 -> IQ4_NL, llama.cpp's search (scalar: weights are quantized offline); n % 32 == 0.
  static void quantize_iq4_nl(const float* x, block_iq4_nl* y, std::size_t n) noexcept {
    scalar::quantize_iq4_nl(x, y, n);
  }
  /// f32 -> Q5_0, ggml's bytes (scalar: weights are quantized offline); n % 32 == 0.
  static void quantize_q5_0(const float* x, block_q5_0* y, std::size_t n) noexcept { scalar::quantize_q5_0(x, y, n); }
  /// f32 -> Q4_1, ggml's bytes (scalar: weights are quantized offline); n % 32 == 0.
  static void quantize_q4_1(const float* x, block_q4_1* y, std::size_t n) noexcept { scalar::quantize_q4_1(x, y, n); }
  /// f32 -> Q5_1, ggml's bytes (scalar: weights are quantized offline); n % 32 == 0.
  static void quantize_q5_1(const float* x, block_q5_1* y, std::size_t n) noexcept { scalar::quantize_q5_1(x, y, n); }
  /// f32 -> Q4_K with ggml's reference search (scalar); n % 256 == 0.
  static void quantize_q4_k(const float* x, block_q4_k* y, std::size_t n) noexcept { scalar::quantize_q4_k(x, y, n); }
  /// f32 -> Q2_K with ggml's reference search (scalar); n % 256 == 0.
  static void quantize_q2_k(const float* x, block_q2_k* y, std::size_t n) noexcept { scalar::quantize_q2_k(x, y, n); }
  /// f32 -> Q3_K with ggml's reference search (scalar); n % 256 == 0.
  static void quantize_q3_k(const float* x, block_q3_k* y, std::size_t n) noexcept { scalar::quantize_q3_k(x, y, n); }
  /// f32 -> IQ4_XS with llama.cpp's search (scalar); n % 256 == 0.
  static void quantize_iq4_xs(const float* x, block_iq4_xs* y, std::size_t n) noexcept {
    scalar::quantize_iq4_xs(x, y, n);
  }
  /// f32 -> Q5_K with ggml's reference search (scalar); n % 256 == 0.
  static void quantize_q5_k(const float* x, block_q5_k* y, std::size_t n) noexcept { scalar::quantize_q5_k(x, y, n); }
  /// f32 -> Q6_K with ggml's reference search (scalar); n % 256 == 0.
  static void quantize_q6_k(const float* x, block_q6_k* y, std::size_t n) noexcept { scalar::quantize_q6_k(x, y, n); }
  /// f32 -> Q8_K activations with bsums, ggml's bytes; n % 256 == 0.
  static void quantize_q8_k(const float* x, block_q8_k* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    dispatch::quant_quantize_q8_k(x, y, n);
  }

  /// Q8_0 -> f32, bit-identical to the reference; n % 32 == 0.
  static void dequantize_q8_0(const block_q8_0* x, float* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    dispatch::quant_dequantize_q8_0(x, y, n);
  }
  /// Q4_0 -> f32, bit-identical to the reference; n % 32 == 0.
  static void dequantize_q4_0(const block_q4_0* x, float* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    dispatch::quant_dequantize_q4_0(x, y, n);
  }
  /// IQ4_NL -> f32 (scalar: one embedding row per token); n % 32 == 0.
  static void dequantize_iq4_nl(const block_iq4_nl* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_iq4_nl(x, y, n);
  }
  /// Q5_0 -> f32 (scalar: one embedding row per token); n % 32 == 0.
  static void dequantize_q5_0(const block_q5_0* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q5_0(x, y, n);
  }
  /// Q4_1 -> f32 (scalar: one embedding row per token); n % 32 == 0.
  static void dequantize_q4_1(const block_q4_1* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q4_1(x, y, n);
  }
  /// Q5_1 -> f32 (scalar: one embedding row per token); n % 32 == 0.
  static void dequantize_q5_1(const block_q5_1* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q5_1(x, y, n);
  }
  /// Q4_K -> f32, bit-identical to ggml's formula; n % 256 == 0.
  static void dequantize_q4_k(const block_q4_k* x, float* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    dispatch::quant_dequantize_q4_k(x, y, n);
  }
  /// Q2_K -> f32, ggml's formula (scalar: one embedding row per token);
  /// n % 256 == 0.
  static void dequantize_q2_k(const block_q2_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q2_k(x, y, n);
  }
  /// Q3_K -> f32, ggml's formula (scalar: one embedding row per token);
  /// n % 256 == 0.
  static void dequantize_q3_k(const block_q3_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q3_k(x, y, n);
  }
  /// IQ4_XS -> f32, ggml's formula (scalar: one embedding row per token);
  /// n % 256 == 0.
  static void dequantize_iq4_xs(const block_iq4_xs* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_iq4_xs(x, y, n);
  }
  /// Q5_K -> f32, ggml's formula (scalar: one embedding row per token);
  /// n % 256 == 0.
  static void dequantize_q5_k(const block_q5_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q5_k(x, y, n);
  }
  /// Q6_K -> f32, bit-identical to ggml's formula; n % 256 == 0.
  static void dequantize_q6_k(const block_q6_k* x, float* y, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0);
    dispatch::quant_dequantize_q6_k(x, y, n);
  }
  /// Q8_K -> f32 (scalar); n % 256 == 0.
  static void dequantize_q8_k(const block_q8_k* x, float* y, std::size_t n) noexcept {
    scalar::dequantize_q8_k(x, y, n);
  }

  /// f32 -> f16 row, bit-identical to ruvllm::to_f16; any n.
  static void convert_f32_to_f16(const float* x, f16* y, std::size_t n) noexcept {
    dispatch::quant_convert_f32_to_f16(x, y, n);
  }
  /// f16 -> f32 row (exact); any n.
  static void convert_f16_to_f32(const f16* x, float* y, std::size_t n) noexcept {
    dispatch::quant_convert_f16_to_f32(x, y, n);
  }
  /// f32 -> bf16 row, bit-identical to ruvllm::to_bf16; any n.
  static void convert_f32_to_bf16(const float* x, bf16* y, std::size_t n) noexcept {
    dispatch::quant_convert_f32_to_bf16(x, y, n);
  }
  /// bf16 -> f32 row (exact); any n.
  static void convert_bf16_to_f32(const bf16* x, float* y, std::size_t n) noexcept {
    dispatch::quant_convert_bf16_to_f32(x, y, n);
  }

  /// One Q8_0 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_q8_0_q8_0(const block_q8_0* w, const block_q8_0* a, std::size_t n) noexcept {
    float out;
    dot_q8_0_q8_0_rows(w, row_bytes<precision::q8_0>(n), 1, a, n, &out);
    return out;
  }
  /// One Q4_0 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_q4_0_q8_0(const block_q4_0* w, const block_q8_0* a, std::size_t n) noexcept {
    float out;
    dot_q4_0_q8_0_rows(w, row_bytes<precision::q4_0>(n), 1, a, n, &out);
    return out;
  }
  /// One IQ4_NL weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_iq4_nl_q8_0(const block_iq4_nl* w, const block_q8_0* a, std::size_t n) noexcept {
    float out;
    dot_iq4_nl_q8_0_rows(w, row_bytes<precision::iq4_nl>(n), 1, a, n, &out);
    return out;
  }
  /// One Q5_0 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_q5_0_q8_0(const block_q5_0* w, const block_q8_0* a, std::size_t n) noexcept {
    float out;
    dot_q5_0_q8_0_rows(w, row_bytes<precision::q5_0>(n), 1, a, n, &out);
    return out;
  }
  /// One Q4_1 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_q4_1_q8_0(const block_q4_1* w, const block_q8_0* a, std::size_t n) noexcept {
    float out;
    dot_q4_1_q8_0_rows(w, row_bytes<precision::q4_1>(n), 1, a, n, &out);
    return out;
  }
  /// One Q5_1 weight row . Q8_0 activations; n % 32 == 0.
  [[nodiscard]] static float dot_q5_1_q8_0(const block_q5_1* w, const block_q8_0* a, std::size_t n) noexcept {
    float out;
    dot_q5_1_q8_0_rows(w, row_bytes<precision::q5_1>(n), 1, a, n, &out);
    return out;
  }
  /// One Q4_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q4_k_q8_k(const block_q4_k* w, const block_q8_k* a, std::size_t n) noexcept {
    float out;
    dot_q4_k_q8_k_rows(w, row_bytes<precision::q4_k>(n), 1, a, n, &out);
    return out;
  }
  /// One Q2_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q2_k_q8_k(const block_q2_k* w, const block_q8_k* a, std::size_t n) noexcept {
    float out;
    dot_q2_k_q8_k_rows(w, row_bytes<precision::q2_k>(n), 1, a, n, &out);
    return out;
  }
  /// One Q3_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q3_k_q8_k(const block_q3_k* w, const block_q8_k* a, std::size_t n) noexcept {
    float out;
    dot_q3_k_q8_k_rows(w, row_bytes<precision::q3_k>(n), 1, a, n, &out);
    return out;
  }
  /// One IQ4_XS weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_iq4_xs_q8_k(const block_iq4_xs* w, const block_q8_k* a, std::size_t n) noexcept {
    float out;
    dot_iq4_xs_q8_k_rows(w, row_bytes<precision::iq4_xs>(n), 1, a, n, &out);
    return out;
  }
  /// One Q5_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q5_k_q8_k(const block_q5_k* w, const block_q8_k* a, std::size_t n) noexcept {
    float out;
    dot_q5_k_q8_k_rows(w, row_bytes<precision::q5_k>(n), 1, a, n, &out);
    return out;
  }
  /// One Q6_K weight row . Q8_K activations; n % 256 == 0.
  [[nodiscard]] static float dot_q6_k_q8_k(const block_q6_k* w, const block_q8_k* a, std::size_t n) noexcept {
    float out;
    dot_q6_k_q8_k_rows(w, row_bytes<precision::q6_k>(n), 1, a, n, &out);
    return out;
  }

  /// out[r] = dot(row r, a) for r < rows; row r starts r * row_stride bytes
  /// after w (row_stride >= row_bytes, a multiple of 2). One dispatch.
  static void dot_q8_0_q8_0_rows(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q8_0) == 0);
    dispatch::quant_dot_q8_0_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  /// Q4_0 rows . Q8_0 activations, as dot_q8_0_q8_0_rows.
  static void dot_q4_0_q8_0_rows(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q4_0) == 0);
    dispatch::quant_dot_q4_0_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  /// IQ4_NL rows . Q8_0 activations, as dot_q8_0_q8_0_rows.
  static void dot_iq4_nl_q8_0_rows(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                   std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_iq4_nl) == 0);
    dispatch::quant_dot_iq4_nl_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  /// Q5_0 rows . Q8_0 activations, as dot_q8_0_q8_0_rows.
  static void dot_q5_0_q8_0_rows(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q5_0) == 0);
    dispatch::quant_dot_q5_0_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  /// Q4_1 rows . Q8_0 activations, as dot_q8_0_q8_0_rows.
  static void dot_q4_1_q8_0_rows(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q4_1) == 0);
    dispatch::quant_dot_q4_1_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  /// Q5_1 rows . Q8_0 activations, as dot_q8_0_q8_0_rows.
  static void dot_q5_1_q8_0_rows(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const block_q8_0* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q5_1) == 0);
    dispatch::quant_dot_q5_1_q8_0_rows(w, row_stride, rows, a, n, out);
  }
  /// Q4_K rows . Q8_K activations, as dot_q8_0_q8_0_rows; n % 256 == 0.
  static void dot_q4_k_q8_k_rows(const block_q4_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q4_k) == 0);
    dispatch::quant_dot_q4_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  /// Q2_K rows . Q8_K activations, as dot_q8_0_q8_0_rows; n % 256 == 0.
  static void dot_q2_k_q8_k_rows(const block_q2_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q2_k) == 0);
    dispatch::quant_dot_q2_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  /// Q3_K rows . Q8_K activations, as dot_q8_0_q8_0_rows; n % 256 == 0.
  static void dot_q3_k_q8_k_rows(const block_q3_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q3_k) == 0);
    dispatch::quant_dot_q3_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  /// IQ4_XS rows . Q8_K activations, as dot_q8_0_q8_0_rows; n % 256 == 0.
  static void dot_iq4_xs_q8_k_rows(const block_iq4_xs* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                   std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_iq4_xs) == 0);
    dispatch::quant_dot_iq4_xs_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  /// Q5_K rows . Q8_K activations, as dot_q8_0_q8_0_rows; n % 256 == 0.
  static void dot_q5_k_q8_k_rows(const block_q5_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q5_k) == 0);
    dispatch::quant_dot_q5_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }
  /// Q6_K rows . Q8_K activations, as dot_q8_0_q8_0_rows; n % 256 == 0.
  static void dot_q6_k_q8_k_rows(const block_q6_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q6_k) == 0);
    dispatch::quant_dot_q6_k_q8_k_rows(w, row_stride, rows, a, n, out);
  }

  /// Q8_0 blocks -> q8_0_quads(n) quads (a layout change; scalar).
  static void pack_q8_0_quads(const block_q8_0* a, std::size_t n, q8_0_quad* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    scalar::pack_q8_0_quads(a, n, out);
  }
  /// f32 -> Q8_0 quads: quantize_q8_0's blocks in the q8_0_quad layout; n % 32 == 0.
  static void quantize_q8_0_quads(const float* x, q8_0_quad* out, std::size_t n) noexcept {
    RUVLLM_ASSERT(n % 32 == 0);
    dispatch::quant_quantize_q8_0_quads(x, out, n);
  }
  /// Q8_0 rows . quad activations, as dot_q8_0_q8_0_rows. One dispatch.
  static void dot_q8_0_quad_rows(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q8_0) == 0);
    dispatch::quant_dot_q8_0_quad_rows(w, row_stride, rows, a, n, out);
  }
  /// Q4_0 rows . quad activations, as dot_q4_0_q8_0_rows. One dispatch.
  static void dot_q4_0_quad_rows(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q4_0) == 0);
    dispatch::quant_dot_q4_0_quad_rows(w, row_stride, rows, a, n, out);
  }
  /// IQ4_NL rows . quad activations, as dot_iq4_nl_q8_0_rows. One dispatch.
  static void dot_iq4_nl_quad_rows(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                   std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_iq4_nl) == 0);
    dispatch::quant_dot_iq4_nl_quad_rows(w, row_stride, rows, a, n, out);
  }
  /// Q5_0 rows . quad activations, as dot_q5_0_q8_0_rows. One dispatch.
  static void dot_q5_0_quad_rows(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q5_0) == 0);
    dispatch::quant_dot_q5_0_quad_rows(w, row_stride, rows, a, n, out);
  }
  /// Q4_1 rows . quad activations, as dot_q4_1_q8_0_rows. One dispatch.
  static void dot_q4_1_quad_rows(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q4_1) == 0);
    dispatch::quant_dot_q4_1_quad_rows(w, row_stride, rows, a, n, out);
  }
  /// Q5_1 rows . quad activations, as dot_q5_1_q8_0_rows. One dispatch.
  static void dot_q5_1_quad_rows(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                 std::size_t n, float* out) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q5_1) == 0);
    dispatch::quant_dot_q5_1_quad_rows(w, row_stride, rows, a, n, out);
  }
  /// y[t * y_stride + r] = dot(row r, token t's quads at a + t * q8_0_quads(n)),
  /// each equal to dot_q8_0_quad_rows' result for that token. One dispatch.
  static void gemm_q8_0_quads(const block_q8_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q8_0) == 0);
    dispatch::quant_gemm_q8_0_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// Q4_0 form of gemm_q8_0_quads.
  static void gemm_q4_0_quads(const block_q4_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q4_0) == 0);
    dispatch::quant_gemm_q4_0_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// IQ4_NL form of gemm_q8_0_quads.
  static void gemm_iq4_nl_quads(const block_iq4_nl* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                                std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_iq4_nl) == 0);
    dispatch::quant_gemm_iq4_nl_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// Q5_0 form of gemm_q8_0_quads.
  static void gemm_q5_0_quads(const block_q5_0* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q5_0) == 0);
    dispatch::quant_gemm_q5_0_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// Q4_1 form of gemm_q8_0_quads.
  static void gemm_q4_1_quads(const block_q4_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q4_1) == 0);
    dispatch::quant_gemm_q4_1_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// Q5_1 form of gemm_q8_0_quads.
  static void gemm_q5_1_quads(const block_q5_1* w, std::size_t row_stride, std::size_t rows, const q8_0_quad* a,
                              std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % 32 == 0 && row_stride % alignof(block_q5_1) == 0);
    dispatch::quant_gemm_q5_1_quads(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// y[t * y_stride + r] = dot(row r, token t's Q8_K blocks at a + t * (n /
  /// 256)), each equal to dot_q4_k_q8_k_rows' result for that token. One
  /// dispatch.
  static void gemm_q4_k_q8_k(const block_q4_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q4_k) == 0);
    dispatch::quant_gemm_q4_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// Q2_K form of gemm_q4_k_q8_k.
  static void gemm_q2_k_q8_k(const block_q2_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q2_k) == 0);
    dispatch::quant_gemm_q2_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// Q3_K form of gemm_q4_k_q8_k.
  static void gemm_q3_k_q8_k(const block_q3_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q3_k) == 0);
    dispatch::quant_gemm_q3_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// IQ4_XS form of gemm_q4_k_q8_k.
  static void gemm_iq4_xs_q8_k(const block_iq4_xs* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                               std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_iq4_xs) == 0);
    dispatch::quant_gemm_iq4_xs_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// Q5_K form of gemm_q4_k_q8_k.
  static void gemm_q5_k_q8_k(const block_q5_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q5_k) == 0);
    dispatch::quant_gemm_q5_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
  /// Q6_K form of gemm_q4_k_q8_k.
  static void gemm_q6_k_q8_k(const block_q6_k* w, std::size_t row_stride, std::size_t rows, const block_q8_k* a,
                             std::size_t tokens, std::size_t n, float* y, std::size_t y_stride) noexcept {
    RUVLLM_ASSERT(n % qk_k == 0 && row_stride % alignof(block_q6_k) == 0);
    dispatch::quant_gemm_q6_k_q8_k(w, row_stride, rows, a, tokens, n, y, y_stride);
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_HIGHWAY_QUANT_HPP
