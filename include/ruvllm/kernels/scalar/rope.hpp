#ifndef RUVLLM_KERNELS_SCALAR_ROPE_HPP
#define RUVLLM_KERNELS_SCALAR_ROPE_HPP

// Rotary position embedding (RoPE): the precomputed cos/sin table every
// backend reads, and the scalar reference rotation.
//
// Frequencies. For head dimension d (even), pair index i in [0, d/2) and
// position p, the rotation angle is
//   theta(p, i) = (p / s_lin) * base'^(-2i/d)
// with the scaling chosen when the table is built:
//   none:   s_lin = 1, base' = base
//   linear: s_lin = s, base' = base                  (position interpolation:
//           positions are compressed by s, so s * trained_context positions
//           map onto the trained angle range)
//   ntk:    s_lin = 1, base' = base * s^(d / (d - 2)) ("NTK-aware": the
//           lowest frequency i = d/2 - 1 is stretched by exactly s, like
//           linear scaling, while the highest (i = 0) is unchanged; needs d > 2)
// The table holds cos(theta) and sin(theta) computed in double and rounded
// once to float, so its error is half an ulp of float (plus ~1e-14) at every
// position; llama.cpp's running float product drifts with i and p instead.
//
// Layouts, for a vector v of d floats and c = cos(theta(p, i)), s = sin(theta(p, i)):
//   normal (llama / GPT-J): pairs (v[2i], v[2i+1])
//   neox   (GPT-NeoX):      pairs (v[i], v[i + d/2])
// and each pair (a, b) becomes (a c - b s, a s + b c).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>

#include "ruvllm/core/aligned_buffer.hpp"
#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"

namespace ruvllm::kernels {

/// RoPE entry points of backend B (one specialization per backend).
template <Backend B>
struct rope_ops;

/// Which elements of a head vector are rotated together (see the top of this file).
enum class rope_layout : std::uint8_t {
  normal,  ///< llama / GPT-J: adjacent pairs (v[2i], v[2i+1])
  neox,    ///< GPT-NeoX: pairs (v[i], v[i + d/2])
};

/// How positions beyond the trained context are fitted (see the top of this file).
enum class rope_scaling : std::uint8_t {
  none,    ///< theta = p * base^(-2i/d)
  linear,  ///< theta = (p / s) * base^(-2i/d)
  ntk,     ///< theta = p * (base * s^(d/(d-2)))^(-2i/d)
};

/// What a rope_table is built for.
struct rope_params {
  std::size_t head_dim = 0;       ///< rotated dimensions per head d: even, > 0
  std::size_t max_positions = 0;  ///< positions 0 .. max_positions - 1 are tabulated: > 0
  double base = 10000.0;          ///< theta base (GGUF rope.freq_base): finite, > 0
  rope_scaling scaling = rope_scaling::none;
  double scaling_factor = 1.0;  ///< s: finite, >= 1 (ignored by none; 1 means no scaling)
};

/// The cos/sin table of one RoPE configuration, built once and shared by
/// every layer and request (read-only, so any number of threads may apply it
/// concurrently). Move-only.
///
/// Layout: one row of head_dim floats per position p, cos(theta(p, i)) for
/// i < d/2 followed by sin(theta(p, i)); 64-byte aligned; rows are contiguous,
/// so consecutive positions are consecutive rows.
/// Allocation: build() allocates max_positions * head_dim floats; nothing
/// else allocates.
class rope_table {
 public:
  /// Largest head_dim * max_positions build() accepts.
  static constexpr std::size_t max_entries = aligned_buffer<float>::max_count;

  rope_table() noexcept = default;

  /// Computes the table in double and rounds each entry once to float
  /// (within half an ulp plus ~1e-14). Errors
  /// (errc::invalid_argument, naming the value and the limit): head_dim 0 or
  /// odd, max_positions 0, base not finite or <= 0, scaling_factor not finite
  /// or < 1, ntk scaling with head_dim 2, a scaled base that overflows;
  /// errc::out_of_memory when the table exceeds max_entries or cannot be
  /// allocated.
  [[nodiscard]] static result<rope_table> build(const rope_params& params) {
    RUVLLM_TRY(validate(params));
    const std::size_t d = params.head_dim;
    const std::size_t half = d / 2;
    const double base = effective_base(params);
    RUVLLM_TRY_ASSIGN(auto values, aligned_buffer<float>::allocate(d * params.max_positions));
    // Per pair i: inverse frequency, the (cos, sin) of one position step,
    // and the running (cos, sin). Rotating the previous position's pair by
    // the step costs four multiplies where cos and sin of a large angle cost
    // ~100 ns; recomputing them directly every reseed_interval positions
    // keeps the drift below ~1e-14, far under float's half ulp (3e-8).
    constexpr std::size_t reseed_interval = 64;
    RUVLLM_TRY_ASSIGN(auto scratch, aligned_buffer<double>::allocate(5 * half));
    double* inv_freq = scratch.data();
    double* step_cos = inv_freq + half;
    double* step_sin = step_cos + half;
    double* cur_cos = step_sin + half;
    double* cur_sin = cur_cos + half;
    const double position_scale = params.scaling == rope_scaling::linear ? 1.0 / params.scaling_factor : 1.0;
    for (std::size_t i = 0; i < half; ++i) {
      inv_freq[i] = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      step_cos[i] = std::cos(position_scale * inv_freq[i]);
      step_sin[i] = std::sin(position_scale * inv_freq[i]);
    }
    for (std::size_t p = 0; p < params.max_positions; ++p) {
      float* row = values.data() + p * d;
      if (p % reseed_interval == 0) {
        const double position = static_cast<double>(p) * position_scale;
        for (std::size_t i = 0; i < half; ++i) {
          cur_cos[i] = std::cos(position * inv_freq[i]);
          cur_sin[i] = std::sin(position * inv_freq[i]);
        }
      } else {
        for (std::size_t i = 0; i < half; ++i) {
          const double c = cur_cos[i] * step_cos[i] - cur_sin[i] * step_sin[i];
          cur_sin[i] = cur_sin[i] * step_cos[i] + cur_cos[i] * step_sin[i];
          cur_cos[i] = c;
        }
      }
      for (std::size_t i = 0; i < half; ++i) {
        row[i] = static_cast<float>(cur_cos[i]);
        row[half + i] = static_cast<float>(cur_sin[i]);
      }
    }
    rope_table table;
    table.params_ = params;
    table.values_ = std::move(values);
    return table;
  }

  /// The base build() uses after scaling: base * s^(d/(d-2)) for ntk, else base.
  [[nodiscard]] static double effective_base(const rope_params& params) noexcept {
    if (params.scaling != rope_scaling::ntk || params.head_dim <= 2) return params.base;
    const double d = static_cast<double>(params.head_dim);
    return params.base * std::pow(params.scaling_factor, d / (d - 2.0));
  }

  /// Checks params as build() does, without building.
  [[nodiscard]] static result<void> validate(const rope_params& params) {
    if (params.head_dim == 0 || params.head_dim % 2 != 0)
      return make_error(errc::invalid_argument, "rope_table: head_dim ", params.head_dim,
                        " must be even and greater than 0");
    if (params.max_positions == 0)
      return make_error(errc::invalid_argument, "rope_table: max_positions 0 must be greater than 0");
    if (!std::isfinite(params.base) || !(params.base > 0.0))
      return make_error(errc::invalid_argument, "rope_table: base ", params.base, " must be finite and greater than 0");
    if (!std::isfinite(params.scaling_factor) || !(params.scaling_factor >= 1.0))
      return make_error(errc::invalid_argument, "rope_table: scaling_factor ", params.scaling_factor,
                        " must be finite and at least 1");
    if (params.scaling != rope_scaling::none && params.scaling != rope_scaling::linear &&
        params.scaling != rope_scaling::ntk)
      return make_error(errc::invalid_argument, "rope_table: scaling ", params.scaling,
                        " is not none (0), linear (1) or ntk (2)");
    if (params.scaling == rope_scaling::ntk && params.head_dim <= 2)
      return make_error(errc::invalid_argument, "rope_table: ntk scaling needs head_dim greater than 2 (got ",
                        params.head_dim, "): its exponent d/(d-2) is undefined at 2");
    if (const double base = effective_base(params); !std::isfinite(base))
      return make_error(errc::invalid_argument, "rope_table: the ntk-scaled base ", params.base, " * ",
                        params.scaling_factor, "^(", params.head_dim, "/", params.head_dim - 2, ") overflows double");
    if (params.max_positions > max_entries / params.head_dim)
      return make_error(errc::out_of_memory, "rope_table: ", params.max_positions, " positions of ", params.head_dim,
                        " floats exceed the limit of ", max_entries, " entries");
    return {};
  }

  [[nodiscard]] const rope_params& params() const noexcept { return params_; }
  [[nodiscard]] std::size_t head_dim() const noexcept { return params_.head_dim; }
  [[nodiscard]] std::size_t max_positions() const noexcept { return params_.max_positions; }
  /// True for a default-constructed (or moved-from) table, which rope_apply must not be given.
  [[nodiscard]] bool empty() const noexcept { return values_.empty(); }

  /// Row of `position`: head_dim / 2 cosines, then head_dim / 2 sines.
  [[nodiscard]] const float* row(std::size_t position) const noexcept {
    RUVLLM_ASSERT(position < max_positions());
    return values_.data() + position * params_.head_dim;
  }
  [[nodiscard]] std::span<const float> cos(std::size_t position) const noexcept {
    return {row(position), params_.head_dim / 2};
  }
  [[nodiscard]] std::span<const float> sin(std::size_t position) const noexcept {
    return {row(position) + params_.head_dim / 2, params_.head_dim / 2};
  }

 private:
  rope_params params_{};
  aligned_buffer<float> values_;
};

/// Where the vectors one rope_apply call rotates live, in floats: head h of
/// token t starts at x + t * token + h * head.
struct rope_strides {
  std::size_t head = 0;
  std::size_t token = 0;
};

namespace detail {

/// Pairs the SIMD backends expand at a time for the normal layout (bounds
/// their stack buffers at 2 x 2 KiB, and covers head_dim <= 512 in one go).
inline constexpr std::size_t rope_expand_chunk = 256;

/// Expands pairs [first, first + count) of a table row (half = head_dim / 2)
/// into per-lane factors of the normal layout: cos_dup[2k] = cos_dup[2k + 1] =
/// c, sin_alt[2k] = -s, sin_alt[2k + 1] = s, with c, s of pair first + k, so
/// that v' = v * cos_dup + swap_adjacent(v) * sin_alt.
inline void rope_expand_pairs(const float* row, std::size_t half, std::size_t first, std::size_t count, float* cos_dup,
                              float* sin_alt) noexcept {
  for (std::size_t k = 0; k < count; ++k) {
    const float c = row[first + k];
    const float s = row[half + first + k];
    cos_dup[2 * k] = c;
    cos_dup[2 * k + 1] = c;
    sin_alt[2 * k] = -s;
    sin_alt[2 * k + 1] = s;
  }
}

inline void check_rope_args([[maybe_unused]] const rope_table& table, [[maybe_unused]] rope_layout layout,
                            [[maybe_unused]] const float* x, [[maybe_unused]] std::size_t tokens,
                            [[maybe_unused]] std::size_t heads, [[maybe_unused]] std::size_t first_position,
                            [[maybe_unused]] rope_strides strides) noexcept {
  RUVLLM_ASSERT(layout == rope_layout::normal || layout == rope_layout::neox);
  if (tokens == 0 || heads == 0) return;
  RUVLLM_ASSERT(!table.empty() && x != nullptr);
  RUVLLM_ASSERT(first_position < table.max_positions() && tokens <= table.max_positions() - first_position);
  RUVLLM_ASSERT(heads == 1 || strides.head >= table.head_dim());
  RUVLLM_ASSERT(tokens == 1 || strides.token >= (heads - 1) * strides.head + table.head_dim());
}

}  // namespace detail

namespace scalar {

/// Rotates `heads` head vectors of each of `tokens` tokens, token t at
/// position first_position + t; `rows` is the table row of first_position.
inline void rope_apply(const float* rows, std::size_t head_dim, rope_layout layout, float* x, std::size_t tokens,
                       std::size_t heads, std::size_t head_stride, std::size_t token_stride) noexcept {
  const std::size_t half = head_dim / 2;
  for (std::size_t t = 0; t < tokens; ++t) {
    const float* cos = rows + t * head_dim;
    const float* sin = cos + half;
    for (std::size_t h = 0; h < heads; ++h) {
      float* v = x + t * token_stride + h * head_stride;
      for (std::size_t i = 0; i < half; ++i) {
        // Pair (a, b) at (2i, 2i + 1) or (i, i + half).
        const std::size_t ia = layout == rope_layout::normal ? 2 * i : i;
        const std::size_t ib = layout == rope_layout::normal ? 2 * i + 1 : i + half;
        const float a = v[ia];
        const float b = v[ib];
        v[ia] = a * cos[i] - b * sin[i];
        v[ib] = a * sin[i] + b * cos[i];
      }
    }
  }
}

}  // namespace scalar

/// The scalar reference. Every backend's rope_ops has these entry points with
/// the same contract:
///  * rotates in place `heads` vectors of table.head_dim() floats for each of
///    `tokens` tokens; token t is at position first_position + t (one token
///    of a decode step: tokens = 1; a prefill chunk: tokens = its length);
///  * first_position + tokens <= table.max_positions();
///  * the vectors must not overlap (head stride >= head_dim, token stride >=
///    (heads - 1) * head stride + head_dim);
///  * no allocation; preconditions are checked by RUVLLM_ASSERT in debug builds.
/// One call rotates the whole batch: each call of a runtime-dispatched backend
/// costs one indirect jump.
template <>
struct rope_ops<backend::scalar> {
  /// Dense batch: head h of token t at x + (t * heads + h) * head_dim (a Q or K
  /// projection output laid out [tokens][heads][head_dim]).
  static void rope_apply(const rope_table& table, rope_layout layout, float* x, std::size_t tokens, std::size_t heads,
                         std::size_t first_position) noexcept {
    rope_apply(table, layout, x, tokens, heads, first_position,
               rope_strides{table.head_dim(), heads * table.head_dim()});
  }
  /// Strided batch: head h of token t at x + t * strides.token + h * strides.head
  /// (e.g. Q inside a fused QKV buffer, or partial rotation of the first
  /// head_dim floats of wider heads).
  static void rope_apply(const rope_table& table, rope_layout layout, float* x, std::size_t tokens, std::size_t heads,
                         std::size_t first_position, rope_strides strides) noexcept {
    detail::check_rope_args(table, layout, x, tokens, heads, first_position, strides);
    if (tokens == 0 || heads == 0) return;
    scalar::rope_apply(table.row(first_position), table.head_dim(), layout, x, tokens, heads, strides.head,
                       strides.token);
  }
};

}  // namespace ruvllm::kernels

// The dispatched RoPE kernel, for RUVLLM_KERNELS_EXPORTED in dispatch.hpp.
#define RUVLLM_ROPE_EXPORTED(X)                                                                                  \
  X(void, rope_apply_f32,                                                                                        \
    (const float* rows, std::size_t head_dim, ruvllm::kernels::rope_layout layout, float* x, std::size_t tokens, \
     std::size_t heads, std::size_t head_stride, std::size_t token_stride),                                      \
    (rows, head_dim, layout, x, tokens, heads, head_stride, token_stride))

#endif  // RUVLLM_KERNELS_SCALAR_ROPE_HPP
