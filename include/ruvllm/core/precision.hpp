#ifndef RUVLLM_CORE_PRECISION_HPP
#define RUVLLM_CORE_PRECISION_HPP

// Storage formats: the Precision policy family and the GGUF/ggml block
// layouts behind it. Block structs live here, outside any Highway namespace,
// because kernel signatures exported for every SIMD target must name one type.
// Layouts are byte-for-byte ggml's (static_asserts pin the sizes), so GGUF
// weights are used in place from a memory map.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "ruvllm/core/half.hpp"

namespace ruvllm {

/// GGUF tensor type ids (ggml_type), for the formats ruvllm stores.
enum class gguf_type : std::uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq4_nl = 20,
  iq4_xs = 23,
  bf16 = 30,
  none = 0xFFFFFFFFu,  // formats with no GGUF counterpart (KV-only)
};

/// Elements per block of the K-quant formats.
inline constexpr std::size_t qk_k = 256;

/// Q8_0: 32 int8 quants with one f16 scale; x = d * q.
struct block_q8_0 {
  f16 d;
  std::int8_t qs[32];
};

/// Q4_0: 32 4-bit quants with one f16 scale; x = d * (q - 8). Byte j holds
/// element j in its low nibble and element j + 16 in its high nibble.
struct block_q4_0 {
  f16 d;
  std::uint8_t qs[16];
};

/// Q4_1: 32 4-bit quants with a scale and a minimum; x = d * q + m. Byte j
/// holds element j in its low nibble and element j + 16 in its high nibble.
struct block_q4_1 {
  f16 d;
  f16 m;
  std::uint8_t qs[16];
};

/// Q5_0: Q4_0's nibbles with a fifth bit per quant in qh (bit j for element
/// j); x = d * (q - 16). qh is bytes, not a uint32_t, to keep ggml's 2-byte
/// alignment (the bits are read as a little-endian 32-bit word).
struct block_q5_0 {
  f16 d;
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};

/// Q5_1: Q5_0's quants without the offset, plus a minimum; x = d * q + m.
struct block_q5_1 {
  f16 d;
  f16 m;
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};

/// IQ4_NL: 32 4-bit indices into the fixed non-linear table iq4_nl_values,
/// with one f16 scale; x = d * iq4_nl_values[q]. Byte j holds element j in
/// its low nibble and element j + 16 in its high nibble, as in Q4_0.
struct block_iq4_nl {
  f16 d;
  std::uint8_t qs[16];
};

/// The 16 values an IQ4_NL index selects (ggml's kvalues_iq4nl), ascending:
/// denser near zero, where most weights lie.
inline constexpr std::int8_t iq4_nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                  1,    13,   25,  38,  53,  69,  89,  113};

/// IQ4_XS: a 256-element super-block of 8 sub-blocks of 32, each an
/// IQ4_NL block without its own f16 scale: sub-block j has a 6-bit scale
/// ls_j (stored + 32) whose low 4 bits sit in the low (j even) or high
/// (j odd) nibble of scales_l[j / 2] and whose top two bits are bits 2j,
/// 2j + 1 of scales_h; x = d * (ls_j - 32) * iq4_nl_values[q]. Sub-block
/// j's indices are the 16 bytes qs[16 j ..], element 32j + l in the low
/// nibble of byte l and 32j + 16 + l in its high nibble.
struct block_iq4_xs {
  f16 d;
  std::uint16_t scales_h;
  std::uint8_t scales_l[qk_k / 64];
  std::uint8_t qs[qk_k / 2];
};

/// Q2_K: a 256-element super-block of 16 sub-blocks of 16 with a 4-bit
/// scale (low nibble of scales[j]) and 4-bit min (high nibble) each;
/// x = d*sc*q - dmin*m with q in [0, 3]. Each 128-element half packs its
/// quants into 32 qs bytes: element 32k + l of the half sits at bits 2k,
/// 2k + 1 of byte l.
struct block_q2_k {
  std::uint8_t scales[qk_k / 16];
  std::uint8_t qs[qk_k / 4];
  f16 d;
  f16 dmin;
};

/// Q3_K: a 256-element super-block of 16 sub-blocks of 16 with a 6-bit
/// signed scale (stored + 32) each; x = d*(sc - 32)*(q - 4) with q in
/// [0, 7]. The low two bits of q sit in qs as in Q2_K, the third bit of
/// element 32k + l is bit k of hmask[l]. Scale j keeps its low 4 bits in
/// the low (j < 8) or high (j >= 8) nibble of scales[j % 8] and its top two
/// bits at bits 2 (j / 4), 2 (j / 4) + 1 of scales[8 + j % 4].
struct block_q3_k {
  std::uint8_t hmask[qk_k / 8];
  std::uint8_t qs[qk_k / 4];
  std::uint8_t scales[12];
  f16 d;
};

/// Q4_K: a 256-element super-block of 8 sub-blocks of 32; each sub-block has a
/// 6-bit scale and 6-bit min packed into `scales`; x = d*sc*q - dmin*m.
struct block_q4_k {
  f16 d;
  f16 dmin;
  std::uint8_t scales[12];
  std::uint8_t qs[qk_k / 2];
};

/// Q5_K: Q4_K's super-block with a fifth bit per quant in qh: element
/// 64g + l (l < 32) takes bit 2g of qh[l], element 64g + 32 + l bit 2g + 1;
/// x = d*sc*q - dmin*m with q in [0, 31].
struct block_q5_k {
  f16 d;
  f16 dmin;
  std::uint8_t scales[12];
  std::uint8_t qh[qk_k / 8];
  std::uint8_t qs[qk_k / 2];
};

/// Q6_K: 256 6-bit quants (low 4 bits in ql, high 2 bits in qh) with 16
/// int8 sub-block scales and one f16 super-block scale.
struct block_q6_k {
  std::uint8_t ql[qk_k / 2];
  std::uint8_t qh[qk_k / 4];
  std::int8_t scales[qk_k / 16];
  f16 d;
};

/// Q8_K: the activation format K-quant dots pair with; bsums hold the sums of
/// each group of 16 quants so the min term costs one multiply per group.
struct block_q8_k {
  float d;
  std::int8_t qs[qk_k];
  std::int16_t bsums[qk_k / 16];
};

/// KIVI KV-cache block: Group values of Bits bits with an f16 scale and zero
/// point (asymmetric, x = zero + scale * q). Keys group along tokens for one
/// channel, values along channels for one token; the block is the same.
template <int Bits, std::size_t Group>
struct block_kivi {
  static_assert(Bits == 2 || Bits == 4, "KIVI quantizes to 2 or 4 bits");
  static_assert(Group > 0 && (Group * Bits) % 8 == 0, "a KIVI group must fill whole bytes");
  f16 scale;
  f16 zero;
  std::uint8_t qs[Group * Bits / 8];
};

static_assert(sizeof(block_q8_0) == 34);
static_assert(sizeof(block_q4_0) == 18);
static_assert(sizeof(block_q4_1) == 20);
static_assert(sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24);
static_assert(sizeof(block_iq4_nl) == 18);
static_assert(sizeof(block_iq4_xs) == 136);
static_assert(sizeof(block_q2_k) == 84);
static_assert(sizeof(block_q3_k) == 110);
static_assert(sizeof(block_q4_k) == 144);
static_assert(sizeof(block_q5_k) == 176);
static_assert(sizeof(block_q6_k) == 210);
static_assert(sizeof(block_q8_k) == 292);
static_assert(sizeof(block_kivi<2, 32>) == 12);
static_assert(sizeof(block_kivi<4, 32>) == 20);

namespace precision {

namespace detail {
struct precision_category {};
template <class Block, std::size_t BlockSize, gguf_type Type>
struct format {
  using precision_category = detail::precision_category;
  using block_type = Block;
  static constexpr std::size_t block_size = BlockSize;
  static constexpr std::size_t bytes_per_block = sizeof(Block);
  static constexpr gguf_type gguf = Type;
};
}  // namespace detail

struct f32 : detail::format<float, 1, gguf_type::f32> {
  static constexpr std::string_view name = "f32";
};
struct f16 : detail::format<ruvllm::f16, 1, gguf_type::f16> {
  static constexpr std::string_view name = "f16";
};
struct bf16 : detail::format<ruvllm::bf16, 1, gguf_type::bf16> {
  static constexpr std::string_view name = "bf16";
};
struct q8_0 : detail::format<block_q8_0, 32, gguf_type::q8_0> {
  static constexpr std::string_view name = "q8_0";
};
struct q4_0 : detail::format<block_q4_0, 32, gguf_type::q4_0> {
  static constexpr std::string_view name = "q4_0";
};
struct q4_1 : detail::format<block_q4_1, 32, gguf_type::q4_1> {
  static constexpr std::string_view name = "q4_1";
};
struct q5_0 : detail::format<block_q5_0, 32, gguf_type::q5_0> {
  static constexpr std::string_view name = "q5_0";
};
struct q5_1 : detail::format<block_q5_1, 32, gguf_type::q5_1> {
  static constexpr std::string_view name = "q5_1";
};
struct iq4_nl : detail::format<block_iq4_nl, 32, gguf_type::iq4_nl> {
  static constexpr std::string_view name = "iq4_nl";
};
struct iq4_xs : detail::format<block_iq4_xs, qk_k, gguf_type::iq4_xs> {
  static constexpr std::string_view name = "iq4_xs";
};
struct q2_k : detail::format<block_q2_k, qk_k, gguf_type::q2_k> {
  static constexpr std::string_view name = "q2_k";
};
struct q3_k : detail::format<block_q3_k, qk_k, gguf_type::q3_k> {
  static constexpr std::string_view name = "q3_k";
};
struct q4_k : detail::format<block_q4_k, qk_k, gguf_type::q4_k> {
  static constexpr std::string_view name = "q4_k";
};
struct q5_k : detail::format<block_q5_k, qk_k, gguf_type::q5_k> {
  static constexpr std::string_view name = "q5_k";
};
struct q6_k : detail::format<block_q6_k, qk_k, gguf_type::q6_k> {
  static constexpr std::string_view name = "q6_k";
};
struct q8_k : detail::format<block_q8_k, qk_k, gguf_type::q8_k> {
  static constexpr std::string_view name = "q8_k";
};
/// KIVI KV format (Bits = 2 or 4) with Group elements per scale/zero pair.
template <int Bits, std::size_t Group = 32>
struct kivi : detail::format<block_kivi<Bits, Group>, Group, gguf_type::none> {
  static constexpr int bits = Bits;
  static constexpr std::string_view name = Bits == 2 ? "kivi2" : "kivi4";
};

}  // namespace precision

/// A storage format: an empty tag naming a trivially copyable block type that
/// holds block_size elements in bytes_per_block bytes.
template <class P>
concept Precision = std::is_empty_v<P> && requires {
  typename P::precision_category;
  typename P::block_type;
  { P::block_size } -> std::convertible_to<std::size_t>;
  { P::bytes_per_block } -> std::convertible_to<std::size_t>;
  { P::name } -> std::convertible_to<std::string_view>;
} && std::same_as<typename P::precision_category, precision::detail::precision_category> &&
    std::is_trivially_copyable_v<typename P::block_type> &&(P::block_size > 0) &&
    (sizeof(typename P::block_type) == P::bytes_per_block);

/// Bytes a row of n elements occupies in format P; n must be a multiple of
/// P::block_size (checked by callers at the boundary).
template <Precision P>
[[nodiscard]] constexpr std::size_t row_bytes(std::size_t n) noexcept {
  return n / P::block_size * P::bytes_per_block;
}

}  // namespace ruvllm

#endif  // RUVLLM_CORE_PRECISION_HPP
