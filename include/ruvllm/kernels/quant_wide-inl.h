// The quant kernels in the widest integer registers of x86 AVX2 and AVX-512
// targets (K-quant rows and GEMM tiles; Q4_0 / Q8_0 rows and tiles in
// 256-bit registers), part of quant-inl.h's per-target body. No include
// guard and no includes: quant-inl.h includes this file inside
// ruvllm::kernels::HWY_NAMESPACE::quant_simd, once per x86 target into
// namespace kwide and, on the AVX2 target, a second time into namespace
// kwide_avx_vnni with the AVX-VNNI instructions added to every function's
// target (see there). The includer defines:
//   RUVLLM_QUANT_WIDE_NS      the namespace to define;
//   RUVLLM_QUANT_DOT4         1 where VPDPBUSD / VPDPWSSD exist at the
//                             register width (AVX-512 VNNI on AVX3_DL,
//                             AVX-VNNI in the AVX2 target's second copy);
//   RUVLLM_QUANT_WIDE_ENTRY   how the entry points at the end are declared
//                             (inline into the exported kernels, or called
//                             through a function compiled for AVX-VNNI).

// ------------------------------------------ K-quant GEMV rows, GEMM tiles
// Q2_K-Q6_K and IQ4_XS rows in the widest integer registers (512-bit on
// AVX-512 targets, 256-bit on AVX2), one super-block of a row per step, each
// row accumulating in float vectors that are reduced once, at the row's end.
// Reducing every super-block to one float instead (the reference's
// expression: horizontal adds, lane extracts and scalar float math per 144
// or 210 bytes) held a Q4_K GEMV to ~21 GB/s and Q6_K to ~16 on Zen 5 (one
// thread, 1 GiB of 2048 columns; a plain read ~41): in 512-bit registers
// these read 35-37 and 37-39 there, and decode a 1B model in llama.cpp's
// Q4_K_M mix at 56-57 tok/s against 32. In 256-bit registers (Highway's
// AVX2 target, same machine) they read 25-26 and 26-27 GB/s against 23 and
// 15, still bound by their multiply-adds and the scales' shuffles, and that
// 1B model decodes at 38.5-39 tok/s against 29-30. Here the integer sums
// stay in lanes: per lane and super-block they are exact (below 2^24, see
// dot), so a row's
// result is the exact dot with one float rounding per lane and super-block
// plus the final reduction (the bound the dot tests hold every backend to),
// and it depends on nothing but the row and the activations.
//
// Each multiply-add covers a register of consecutive elements, so the
// activations are read straight from the block in element order: the weight
// quants are brought into that order instead (Q4_K's nibbles by shifts of a
// 32-byte load, in 512-bit registers broadcast to both halves and shifted
// per half; Q6_K's high bits by shifts of qh). Sub-block scales ride in
// 16-bit lanes and are broadcast within each 128-bit lane by a byte shuffle,
// then applied by VPMADDWD to VPMADDUBSW's pair sums (quants < 64, so no
// pair saturates), or with VPDPBUSD by VPDPWSSD to its sums packed into
// words (see dot). A VPDPBUSD followed by a 32-bit multiply by the scales
// held a Q4_K GEMV to ~18 GB/s on Zen 5 where VPMADDWD gave ~23 (with
// 256-bit super-block reductions; Q6_K's 16-byte groups, as a 512-bit
// VPDPBUSD on zero-padded registers, read 1.2 GB/s).
namespace RUVLLM_QUANT_WIDE_NS {

// Full registers of the target: 512-bit on AVX-512 targets, 256-bit on AVX2.
using DB = hn::ScalableTag<std::uint8_t>;
using DW = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DW>;
using ivec = decltype(hn::Zero(DB()).raw);
using fvec = decltype(hn::Zero(DW()).raw);
/// Bytes (elements) per register, and registers per 256-element super-block.
inline constexpr int bytes = static_cast<int>(sizeof(ivec));
inline constexpr int parts = static_cast<int>(qk_k) / bytes;
/// Integer accumulators of a super-block's dot: 256-bit registers take two
/// so that each lane sums four VPMADDWD results, as the 512-bit one does,
/// and stays exact in float (see dot).
inline constexpr int accumulators = bytes == 64 ? 1 : 2;
/// Scale registers of an unpacked super-block: one per register of quants,
/// or with VPDPWSSD one per pair of them (see dot).
inline constexpr int scale_registers = RUVLLM_QUANT_DOT4 ? parts / 2 : parts;

RUVLLM_QUANT_ATTR HWY_INLINE ivec load(const void* p) {
  return hn::LoadU(DB(), static_cast<const std::uint8_t*>(p)).raw;
}
RUVLLM_QUANT_ATTR HWY_INLINE ivec set1_bytes(std::uint8_t b) { return hn::Set(DB(), b).raw; }
RUVLLM_QUANT_ATTR HWY_INLINE ivec zero() { return hn::Zero(DB()).raw; }
/// Bytes of v picked by index within each 128-bit lane (VPSHUFB).
RUVLLM_QUANT_ATTR HWY_INLINE ivec shuffle_bytes(ivec v, ivec index) {
  return hn::TableLookupBytes(hn::Vec<DB>{v}, hn::Vec<DB>{index}).raw;
}
/// acc + float(sums) x factor, lane-wise.
RUVLLM_QUANT_ATTR HWY_INLINE fvec fma_lanes(ivec sums, fvec factor, fvec acc) {
  return hn::MulAdd(hn::ConvertTo(DW(), hn::Vec<DI>{sums}), hn::Vec<DW>{factor}, hn::Vec<DW>{acc}).raw;
}
/// 16 bytes in every 128-bit lane.
RUVLLM_QUANT_ATTR HWY_INLINE ivec broadcast128(__m128i v) {
#if RUVLLM_QUANT_AVX512
  return _mm512_broadcast_i32x4(v);
#else
  return _mm256_broadcastsi128_si256(v);
#endif
}
/// a + the pairwise sums of (u8 u x s8 s pair sums) x s16 scale.
RUVLLM_QUANT_ATTR HWY_INLINE ivec add_scaled_dot(ivec a, ivec u, ivec s, ivec scale) {
#if RUVLLM_QUANT_AVX512
  return _mm512_add_epi32(a, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), scale));
#else
  return _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale));
#endif
}
#if RUVLLM_QUANT_DOT4
/// acc + the sums of u8 u x s8 s over each group of four bytes (VPDPBUSD).
RUVLLM_QUANT_ATTR HWY_INLINE ivec add_dot4(ivec acc, ivec u, ivec s) {
#if RUVLLM_QUANT_AVX512
  return _mm512_dpbusd_epi32(acc, u, s);
#else
  return _mm256_dpbusd_avx_epi32(acc, u, s);
#endif
}
/// acc + the pairwise sums of s16 words w x s16 scales (VPDPWSSD).
RUVLLM_QUANT_ATTR HWY_INLINE ivec add_word_dot(ivec acc, ivec w, ivec scales) {
#if RUVLLM_QUANT_AVX512
  return _mm512_dpwssd_epi32(acc, w, scales);
#else
  return _mm256_dpwssd_avx_epi32(acc, w, scales);
#endif
}
/// The 32-bit lanes of a and b as saturated 16-bit words, per 128-bit lane
/// a's four then b's four (VPACKSSDW).
RUVLLM_QUANT_ATTR HWY_INLINE ivec pack_words(ivec a, ivec b) {
#if RUVLLM_QUANT_AVX512
  return _mm512_packs_epi32(a, b);
#else
  return _mm256_packs_epi32(a, b);
#endif
}
#endif
RUVLLM_QUANT_ATTR HWY_INLINE __m256 fold_to_256(fvec v) {
#if RUVLLM_QUANT_AVX512
  return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
#else
  return v;
#endif
}

/// A Q4_K or Q5_K super-block's eight 6-bit scales (bytes 0-7) and mins
/// (bytes 8-15) from its 12 scale bytes at `scales`, unpacked four at a time
/// in the 32-bit lanes of one register (the packing keeps each byte's bits
/// within its byte), where there is no byte permute (AVX2, AVX3; see
/// q4_k_format::scales_and_mins for AVX3_DL). Unpacked in general
/// registers instead and stored, the words reached the vector through a load
/// spanning four stores, which cannot be forwarded: the 512-bit Q4_K GEMV
/// (Zen 5, one thread, 4096 x 4096 from L3) read 34.1 GB/s that way,
/// 37.4-39.1 this.
RUVLLM_QUANT_ATTR HWY_INLINE __m128i k_scales_mins(const std::uint8_t* scales) {
  // 16 bytes from the scales on (the last four are quants of the same
  // block): packed words p0, p1, p2 and one unused.
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales));
  // Words: scales 0-3 = p0 & 0x3F.., scales 4-7 = (p2 & 0x0F..) | top two
  // bits of p0's bytes at bits 4-5, mins 0-3 = p1 & 0x3F.., mins 4-7 = (p2 >>
  // 4 & 0x0F..) | top two bits of p1's bytes at bits 4-5.
  const __m128i low =
      _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(packed, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4)),
                    _mm_setr_epi32(0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F));
  const __m128i high = _mm_and_si128(_mm_srli_epi32(_mm_shuffle_epi32(packed, _MM_SHUFFLE(1, 1, 0, 0)), 2),
                                     _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  return _mm_or_si128(low, high);
}

/// Bit `from` of every byte of v moved to bit `to`, the other bits cleared
/// (`only_to` has bit `to` set in every byte). A 16-bit shift by |from - to|
/// serves: it moves bit `from` of each byte to bit `to` of the same byte
/// (both lie in 0-7), and what crosses from the neighbouring byte lands on
/// other bits, which the mask clears.
RUVLLM_QUANT_ATTR HWY_INLINE ivec move_bit(ivec v, int from, int to, ivec only_to) {
#if RUVLLM_QUANT_AVX512
  const __m512i moved = from <= to ? _mm512_slli_epi16(v, static_cast<unsigned>(to - from))
                                   : _mm512_srli_epi16(v, static_cast<unsigned>(from - to));
  return _mm512_and_si512(moved, only_to);
#else
  const __m256i moved = from <= to ? _mm256_slli_epi16(v, to - from) : _mm256_srli_epi16(v, from - to);
  return _mm256_and_si256(moved, only_to);
#endif
}

/// The bit planes of Q5_K's qh and Q3_K's hmask: element 32k + l of a
/// super-block owns bit k of byte l of 32 bytes. add() ORs each element's
/// bit into bit `to` of its quant, quants in element order.
struct bit_plane {
  struct constants {
    ivec only_to;
#if RUVLLM_QUANT_AVX512
    ivec half_shifts;  // bits 2g + 1 to 2g in the upper 256 bits
#endif
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants(int to) {
    constants c;
    c.only_to = set1_bytes(static_cast<std::uint8_t>(1u << to));
#if RUVLLM_QUANT_AVX512
    c.half_shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
#endif
    return c;
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE void add(const std::uint8_t* bits, int to, const constants& c, ivec* quants) {
#if RUVLLM_QUANT_AVX512
    // Register g holds elements 64g .. 64g + 63, bits 2g and 2g + 1: with
    // the upper half shifted right by one, both halves take bit 2g.
    const __m512i plane = _mm512_srlv_epi16(_mm512_broadcast_i64x4(load256(bits)), c.half_shifts);
    for (int g = 0; g < 4; ++g) quants[g] = _mm512_or_si512(quants[g], move_bit(plane, 2 * g, to, c.only_to));
#else
    const __m256i plane = load256(bits);
    for (int k = 0; k < parts; ++k) quants[k] = _mm256_or_si256(quants[k], move_bit(plane, k, to, c.only_to));
#endif
  }
};

/// One row's super-block, unpacked for its dot with any token's activations
/// (the GEMM tile unpacks once for all its tokens).
struct superblock {
  ivec quants[parts];            // elements bytes p .. bytes p + bytes - 1: unsigned quants in element order
  ivec scales[scale_registers];  // 16-bit sub-block scales, one per word dot() multiplies
  __m256i offset;                // 16-bit weights of the activation's 16 block sums
  // The float weights of the scaled and the offset sums in every lane (Q4_K:
  // d and -dmin; Q6_K: d and -32 d), times the activation's d in dot(): the
  // signs and the power of two sit on the row's side, broadcast once for a
  // group of tokens, so a token's factors take two multiplies (-dmin x d_a
  // rounds as dmin x -d_a did). GEMM tile as in dot()'s note: Q4_K 1.84 ns
  // against 1.95 with the factors built per token, Q6_K 1.86 against 2.07.
  fvec d_scaled;
  __m256 d_offset;
};

/// A super-block's dot before the row's float accumulation: the lanes of
/// `scaled` add up to its scaled integer dot, which d_scaled multiplies,
/// those of `offset` to the term d_offset multiplies (Q4_K: the mins term;
/// Q6_K: the -32 bias).
struct superblock_sums {
  ivec scaled[accumulators];
  __m256i offset;
  fvec d_scaled;
  __m256 d_offset;
};

/// The f16 values at p[0], p[1] as floats in lanes 0 and 1 (a block's d and
/// dmin, converted in one instruction).
RUVLLM_QUANT_ATTR HWY_INLINE __m128 two_halves(const ruvllm::f16* p) {
#if RUVLLM_QUANT_F16C
  std::int32_t bits;
  std::memcpy(&bits, p, sizeof bits);
  return _mm_cvtph_ps(_mm_cvtsi32_si128(bits));
#else
  return _mm_setr_ps(half_to_float(p[0]), half_to_float(p[1]), 0.0f, 0.0f);
#endif
}

/// Byte-shuffle indices that spread 16-bit words across a register: word
/// lane i takes word scale_of(i) of its 128-bit lane, where the shuffled
/// register holds the eight scales of interest in every 128-bit lane.
template <class ScaleOf>
RUVLLM_QUANT_ATTR HWY_INLINE ivec spread_words(ScaleOf scale_of) {
  alignas(64) std::int16_t idx[bytes / 2];
  for (int i = 0; i < bytes / 2; ++i) {
    const int word = scale_of(i);
    idx[i] = static_cast<std::int16_t>(((2 * word + 1) << 8) | (2 * word));
  }
  return load(idx);
}

#if RUVLLM_QUANT_AVX512
/// Word-permute indices (VPERMW): word lane i takes word scale_of(i) of the
/// whole source register.
template <class ScaleOf>
RUVLLM_QUANT_ATTR HWY_INLINE ivec permute_words(ScaleOf scale_of) {
  alignas(64) std::int16_t idx[bytes / 2];
  for (int i = 0; i < bytes / 2; ++i) idx[i] = static_cast<std::int16_t>(scale_of(i));
  return load(idx);
}
#endif

/// The scale-spreading indices for `registers` registers of quants whose
/// word i of register p belongs to sub-block sub_block(p, i): one index per
/// register, or with VPDPWSSD one per packed pair j, whose 128-bit lanes
/// hold words 0..3 of register 2j's lane and then words 0..3 of 2j + 1's
/// (see dot). Byte shuffles of a register holding the scales as words in
/// every 128-bit lane, or with Words, VPERMW indices into one holding them
/// in its first words.
template <bool Words = false, class SubBlock>
RUVLLM_QUANT_ATTR HWY_INLINE void scale_indices(int registers, SubBlock sub_block, ivec* out) {
  const auto spread = [](auto scale_of) RUVLLM_QUANT_LAMBDA {
#if RUVLLM_QUANT_AVX512
    if constexpr (Words) return permute_words(scale_of);
#endif
    return spread_words(scale_of);
  };
#if RUVLLM_QUANT_DOT4
  for (int j = 0; j < registers / 2; ++j) out[j] = spread([&](int i) { return sub_block(2 * j + (i % 8) / 4, i); });
#else
  for (int p = 0; p < registers; ++p) out[p] = spread([&](int i) { return sub_block(p, i); });
#endif
}

/// The super-block's sums with one token's activations. Each lane of an
/// accumulator adds up 16 products of a quant and an activation, each times
/// its sub-block's scale: Q4_K at most 16 * 15 * 128 * 63, below 2^21; Q6_K
/// |.| at most 16 * 63 * 128 * 128, below 2^24; so exact in float.
/// Without VNNI, each register of quants takes a VPMADDUBSW (pair sums), a
/// VPMADDWD by its scales and an add. With VNNI (AVX-512 VNNI, or AVX-VNNI
/// in 256-bit registers), a VPDPBUSD sums four products per 32-bit lane
/// (|.| below 2^15), two registers' sums pack into one of 16-bit words
/// (VPACKSSDW keeps each word's neighbour in its sub-block) and one VPDPWSSD
/// by their scales adds them: six multiplies per super-block and token
/// instead of eight in 512-bit registers, which the K-quant GEMM is bound by
/// (Zen 5, one thread, 112 rows of 4096 columns x 64 tokens: Q4_K 1.95 ns per
/// row, token and super-block against 2.19, Q6_K 2.07 against 2.27). In
/// 256-bit registers the pairs alternate between the two accumulators, so a
/// lane again sums 16 products.
RUVLLM_QUANT_ATTR HWY_INLINE superblock_sums dot(const superblock& u, const block_q8_k& a) {
  superblock_sums s;
  for (ivec& acc : s.scaled) acc = zero();
#if RUVLLM_QUANT_DOT4
  for (int j = 0; j < scale_registers; ++j) {
    const ivec lo = add_dot4(zero(), u.quants[2 * j], load(a.qs + bytes * 2 * j));
    const ivec hi = add_dot4(zero(), u.quants[2 * j + 1], load(a.qs + bytes * (2 * j + 1)));
    ivec& acc = s.scaled[j % accumulators];
    acc = add_word_dot(acc, pack_words(lo, hi), u.scales[j]);
  }
#else
  for (int p = 0; p < parts; ++p) {
    ivec& acc = s.scaled[p % accumulators];
    acc = add_scaled_dot(acc, u.quants[p], load(a.qs + bytes * p), u.scales[p]);
  }
#endif
  s.offset = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)), u.offset);
  s.d_scaled = hn::Mul(hn::Vec<DW>{u.d_scaled}, hn::Set(DW(), a.d)).raw;
  s.d_offset = _mm256_mul_ps(u.d_offset, _mm256_set1_ps(a.d));
  return s;
}

/// One (row, token) dot in float lanes, reduced once at the end.
struct row_sum {
  fvec scaled;
  __m256 offset;

  RUVLLM_QUANT_ATTR static HWY_INLINE row_sum zero() { return {hn::Zero(DW()).raw, _mm256_setzero_ps()}; }

  RUVLLM_QUANT_ATTR HWY_INLINE void add(const superblock_sums& s) {
    add_scaled(s);
    offset = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s.offset), s.d_offset, offset);
  }
  /// add() for sums without an offset term (s.offset and s.d_offset unused):
  /// a zero term would still cost a convert and a multiply-add, which the
  /// compiler may not drop (0 * d_offset is not 0 for every float).
  RUVLLM_QUANT_ATTR HWY_INLINE void add_scaled(const superblock_sums& s) {
    for (const ivec& sums : s.scaled) scaled = fma_lanes(sums, s.d_scaled, scaled);
  }

  RUVLLM_QUANT_ATTR HWY_INLINE float total() const {
    const __m256 folded = _mm256_add_ps(fold_to_256(scaled), offset);
    return hn::GetLane(hn::SumOfLanes(DF(), hn::Vec<DF>{folded}));
  }
};

/// What token_group asks of a K-quant format: a step is one super-block,
/// met by one Q8_K block of each token.
template <class Format, class Block>
struct superblock_steps {
  using unpacked = superblock;
  using activation = block_q8_k;
  using sum = row_sum;
  static constexpr std::size_t step_bytes = sizeof(Block);
  static constexpr bool partial_steps = false;
  static constexpr std::size_t whole_steps(std::size_t n) { return n / qk_k; }
  static constexpr std::size_t activation_count(std::size_t n) { return n / qk_k; }

  RUVLLM_QUANT_ATTR static HWY_INLINE void accumulate(row_sum& s, const superblock& u, const block_q8_k* a,
                                                      std::size_t step) {
    s.add(dot(u, a[step]));
  }
};

#if RUVLLM_QUANT_AVX512 && RUVLLM_QUANT_DOT4
/// What q4_k_format::scales_and_mins needs to build a super-block's 16
/// scale and min words. Word k (scales 0-7, then mins 0-7; ggml's
/// get_scale_min_k4) takes bytes A and B of the 16 from the scales on as
/// its low and high byte. The first four of each are A's bits 0-5 (kept
/// 0x3F); the last four take four bits of A (shifted by 0 for a scale, 4
/// for a min; kept 0x0F) and B's top two bits, which a shift of the word by
/// 10 puts at bits 4-5. min_spread gives each of the activation's 16 block
/// sums its min (j for sums 2j and 2j + 1).
struct k_scale_word_tables {
  alignas(32) std::uint8_t pair_bytes[32];
  alignas(32) std::int16_t shift[16], keep[16], min_spread[16];
};
inline constexpr k_scale_word_tables make_k_scale_word_tables() {
  k_scale_word_tables t{};
  for (int k = 0; k < 16; ++k) {
    const int j = k % 8;
    const bool min = k >= 8;
    const int a = j < 4 ? j + (min ? 4 : 0) : j + 4;
    t.pair_bytes[2 * k] = static_cast<std::uint8_t>(a);
    t.pair_bytes[2 * k + 1] = static_cast<std::uint8_t>(j < 4 ? a : (min ? j : j - 4));
    t.shift[k] = static_cast<std::int16_t>(min && j >= 4 ? 4 : 0);
    t.keep[k] = static_cast<std::int16_t>(j < 4 ? 0x3F : 0x0F);
    t.min_spread[k] = static_cast<std::int16_t>(8 + k / 2);
  }
  return t;
}
alignas(32) inline constexpr k_scale_word_tables k_scale_words = make_k_scale_word_tables();
#endif

struct q4_k_format : superblock_steps<q4_k_format, block_q4_k> {
  struct constants {
    ivec nibble_mask;
#if RUVLLM_QUANT_AVX512
    ivec half_shifts;
#endif
    ivec scale_index[scale_registers];
#if RUVLLM_QUANT_AVX512 && RUVLLM_QUANT_DOT4
    // k_scale_words, in registers.
    __m256i word_bytes, word_shift, word_keep, min_index;
#endif
  };

  /// Whether the scales are unpacked by byte and word permutes (AVX3_DL:
  /// AVX-512 VBMI comes with its VNNI).
  static constexpr bool permutes = RUVLLM_QUANT_AVX512 && RUVLLM_QUANT_DOT4;

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    constants c;
    c.nibble_mask = set1_bytes(0x0F);
#if RUVLLM_QUANT_AVX512
    // Low 256 bits: the low nibbles (sub-block 2g); high: the high (2g + 1).
    c.half_shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
#endif
    // Register p of quants holds sub-blocks p bytes / 32 on (one per 256
    // bits), its word i (i < bytes / 2) sub-block p bytes / 32 + i / 16.
    scale_indices<permutes>(
        parts, [](int p, int i) { return p * bytes / 32 + i / 16; }, c.scale_index);
#if RUVLLM_QUANT_AVX512 && RUVLLM_QUANT_DOT4
    c.word_bytes = _mm256_load_si256(reinterpret_cast<const __m256i*>(k_scale_words.pair_bytes));
    c.word_shift = _mm256_load_si256(reinterpret_cast<const __m256i*>(k_scale_words.shift));
    c.word_keep = _mm256_load_si256(reinterpret_cast<const __m256i*>(k_scale_words.keep));
    c.min_index = _mm256_load_si256(reinterpret_cast<const __m256i*>(k_scale_words.min_spread));
#endif
    return c;
  }

  /// The nibbles of elements 64g .. 64g + 63 (register g in 512 bits,
  /// registers 2g and 2g + 1 in 256): sub-block 2g in the low nibbles of
  /// the 32 bytes at qs + 32 g, 2g + 1 in the high.
  RUVLLM_QUANT_ATTR static HWY_INLINE void nibbles(const std::uint8_t* qs, const constants& c, ivec* quants) {
    for (int g = 0; g < 4; ++g) {
#if RUVLLM_QUANT_AVX512
      const __m512i both = _mm512_broadcast_i64x4(load256(qs + 32 * g));
      quants[g] = _mm512_and_si512(_mm512_srlv_epi16(both, c.half_shifts), c.nibble_mask);
#else
      const __m256i q = load256(qs + 32 * g);
      quants[2 * g] = _mm256_and_si256(q, c.nibble_mask);
      quants[2 * g + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), c.nibble_mask);
#endif
    }
  }

  /// Everything but the quants, from d, dmin and scales, which Q4_K and
  /// Q5_K lay out alike.
  /// With byte and word permutes (AVX3_DL) the 16 scales and mins are built
  /// as words at once (a byte permute, two shifts and a bit select) and
  /// spread by a word permute per register: 7 operations where
  /// k_scales_mins, its widening and the byte shuffles take 12. The same
  /// values, so the same bits; a Q4_K row loop over 4096 columns (Zen 5
  /// guest, one thread, best of 15 runs, three interleaved rounds) took
  /// 3.41-3.46 / 3.41-3.43 / 3.55-3.58 ns per super-block with rows in L1 /
  /// L2 / L3 against 3.64-3.66 / 3.56-3.64 / 3.73-3.74; GEMV from L3 at one
  /// thread 1.03-1.07x (medians of four interleaved pairs, Q4_K and Q5_K),
  /// a 1B Q4_K_M decode 1.08x / 1.03x at one / two threads (three pairs,
  /// within this host's noise) with pp512 unchanged.
  template <class Block>
  RUVLLM_QUANT_ATTR static HWY_INLINE void scales_and_mins(const Block& w, const constants& c, superblock& u) {
    static_assert(offsetof(Block, scales) + 16 <= sizeof(Block));
#if RUVLLM_QUANT_AVX512 && RUVLLM_QUANT_DOT4
    const __m256i packed = _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
    const __m256i pairs = _mm256_permutexvar_epi8(c.word_bytes, packed);
    // keep ? pairs >> shift : pairs >> 10, bit by bit.
    const __m256i words = _mm256_ternarylogic_epi32(c.word_keep, _mm256_srlv_epi16(pairs, c.word_shift),
                                                    _mm256_srli_epi16(pairs, 10), 0xCA);
    for (int j = 0; j < scale_registers; ++j)
      u.scales[j] = _mm512_permutexvar_epi16(c.scale_index[j], _mm512_castsi256_si512(words));
    // Min j weighs the activation's block sums 2j and 2j + 1.
    u.offset = _mm256_permutexvar_epi16(c.min_index, words);
#else
    const __m128i scales_mins = k_scales_mins(w.scales);
    const ivec scales16 = broadcast128(_mm_cvtepu8_epi16(scales_mins));
    for (int j = 0; j < scale_registers; ++j) u.scales[j] = shuffle_bytes(scales16, c.scale_index[j]);
    // The mins as 16-bit weights of the activation's 16 block sums: min j
    // pairs with block sums 2j and 2j + 1 (bytes 8-15, each twice).
    u.offset = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
#endif
    static_assert(offsetof(Block, dmin) == offsetof(Block, d) + sizeof(ruvllm::f16));
    const __m128 d_dmin = two_halves(&w.d);
    u.d_scaled = hn::Set(DW(), _mm_cvtss_f32(d_dmin)).raw;
    u.d_offset = _mm256_set1_ps(-_mm_cvtss_f32(_mm_movehdup_ps(d_dmin)));
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE superblock unpack(const std::uint8_t* p, const constants& c) {
    const block_q4_k& w = *reinterpret_cast<const block_q4_k*>(p);
    superblock u;
    nibbles(w.qs, c, u.quants);
    scales_and_mins(w, c, u);
    return u;
  }
};

/// Q5_K: Q4_K's nibbles, scales and mins, plus the fifth bit of every quant
/// from qh (bit 2g of qh[l] for element 64g + l, bit 2g + 1 for 64g + 32 +
/// l) moved to bit 4 of its byte. Quants stay below 32, so dot()'s sums
/// stay exact: a lane sums at most 16 * 31 * 128 * 63 < 2^22, and a
/// VPDPBUSD group 4 * 31 * 128 < 2^15, which VPACKSSDW keeps.
struct q5_k_format : superblock_steps<q5_k_format, block_q5_k> {
  struct constants {
    q4_k_format::constants q4;
    bit_plane::constants fifth;
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    return {q4_k_format::load_constants(), bit_plane::load_constants(4)};
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE superblock unpack(const std::uint8_t* p, const constants& c) {
    const block_q5_k& w = *reinterpret_cast<const block_q5_k*>(p);
    superblock u;
    q4_k_format::nibbles(w.qs, c.q4, u.quants);
    bit_plane::add(w.qh, 4, c.fifth, u.quants);
    q4_k_format::scales_and_mins(w, c.q4, u);
    return u;
  }
};

/// What the formats with 16-element sub-blocks (Q2_K, Q3_K, Q6_K) share:
/// register k of a 128-element half's quants holds its sub-blocks k bytes /
/// 16 on (one per 128-bit lane), its word i sub-block k bytes / 16 + i / 8,
/// so each half's eight scales, as words in every 128-bit lane, reach their
/// registers by one byte shuffle each.
struct sub_blocks_of_16 {
  static constexpr int parts_per_half = parts / 2;
  static constexpr int scales_per_half = scale_registers / 2;
  struct scale_spread {
    ivec index[scales_per_half];
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE scale_spread load_scale_spread() {
    scale_spread s;
    scale_indices(
        parts_per_half, [](int k, int i) { return k * bytes / 16 + i / 8; }, s.index);
    return s;
  }

  /// The 16 sub-block scales (byte j for sub-block j, signed or not) into
  /// u.scales.
  template <bool Signed>
  RUVLLM_QUANT_ATTR static HWY_INLINE void spread_scales(__m128i sc, const scale_spread& s, superblock& u) {
    const auto widen = [](__m128i v)
                           RUVLLM_QUANT_LAMBDA { return Signed ? _mm_cvtepi8_epi16(v) : _mm_cvtepu8_epi16(v); };
    for (int half = 0; half < 2; ++half) {
      const ivec scales16 = broadcast128(widen(half == 0 ? sc : _mm_srli_si128(sc, 8)));
      for (int k = 0; k < scales_per_half; ++k)
        u.scales[scales_per_half * half + k] = shuffle_bytes(scales16, s.index[k]);
    }
  }

  /// Everything but the quants of a format whose quants q stand for q -
  /// bias under signed sub-block scales (Q3_K, Q6_K): the scales, which also
  /// weigh the activation's block sums (each 16-element sub-block owns one),
  /// and d and -bias d as the float factors.
  RUVLLM_QUANT_ATTR static HWY_INLINE void signed_scales(__m128i sc, ruvllm::f16 d_half, float bias,
                                                         const scale_spread& s, superblock& u) {
    spread_scales<true>(sc, s, u);
    u.offset = _mm256_cvtepi8_epi16(sc);
    const float d = half_to_float(d_half);
    u.d_scaled = hn::Set(DW(), d).raw;
    u.d_offset = _mm256_set1_ps(-bias * d);
  }
};

struct q6_k_format : superblock_steps<q6_k_format, block_q6_k>, sub_blocks_of_16 {
  struct constants {
    ivec low4, high2;
#if RUVLLM_QUANT_AVX512
    ivec up_shifts, down_shifts;
#endif
    scale_spread spread;
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    constants c;
    c.low4 = set1_bytes(0x0F);
    c.high2 = set1_bytes(0x30);
#if RUVLLM_QUANT_AVX512
    // qh bits (0-1, 2-3) to bits 4-5 for elements l and l + 32 of a half;
    // bits (4-5, 6-7) for elements l + 64 and l + 96.
    c.up_shifts = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    c.down_shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
#endif
    c.spread = load_scale_spread();
    return c;
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE superblock unpack(const std::uint8_t* p, const constants& c) {
    const block_q6_k& w = *reinterpret_cast<const block_q6_k*>(p);
    superblock u;
    for (int half = 0; half < 2; ++half) {
      ivec* q = u.quants + parts_per_half * half;
#if RUVLLM_QUANT_AVX512
      const __m512i ql = _mm512_loadu_si512(w.ql + 64 * half);
      const __m512i qh = _mm512_broadcast_i64x4(load256(w.qh + 32 * half));
      // Elements 128 half + [0, 64) and [64, 128), quants 0..63.
      q[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(ql, c.low4), _mm512_sllv_epi16(qh, c.up_shifts), c.high2, 0xF8);
      q[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(ql, 4), c.low4),
                                       _mm512_srlv_epi16(qh, c.down_shifts), c.high2, 0xF8);
#else
      const __m256i ql_a = load256(w.ql + 64 * half), ql_b = load256(w.ql + 64 * half + 32);
      const __m256i qh = load256(w.qh + 32 * half);
      const auto merge = [&](__m256i low, __m256i high) RUVLLM_QUANT_LAMBDA {
        return _mm256_or_si256(_mm256_and_si256(low, c.low4), _mm256_and_si256(high, c.high2));
      };
      // Elements 128 half + 32 k + [0, 32), quants 0..63.
      q[0] = merge(ql_a, _mm256_slli_epi16(qh, 4));
      q[1] = merge(ql_b, _mm256_slli_epi16(qh, 2));
      q[2] = merge(_mm256_srli_epi16(ql_a, 4), qh);
      q[3] = merge(_mm256_srli_epi16(ql_b, 4), _mm256_srli_epi16(qh, 2));
#endif
    }
    signed_scales(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)), w.d, 32.0f, c.spread, u);
    return u;
  }
};

/// The 2-bit quants of Q2_K and Q3_K in element order: each half's 32 qs
/// bytes hold element 32k + l at bits 2k, 2k + 1 of byte l, so register k
/// of a half (256-bit) is those bytes shifted right by 2k; in 512-bit
/// registers both 256-bit halves take the same bytes, shifted by (0, 2)
/// and (4, 6).
struct two_bit_quants {
  struct constants {
    ivec three;
#if RUVLLM_QUANT_AVX512
    ivec low_shifts, high_shifts;
#endif
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    constants c;
    c.three = set1_bytes(3);
#if RUVLLM_QUANT_AVX512
    c.low_shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    c.high_shifts = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
#endif
    return c;
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE void unpack(const std::uint8_t* qs, const constants& c, ivec* quants) {
    for (int half = 0; half < 2; ++half) {
#if RUVLLM_QUANT_AVX512
      const __m512i both = _mm512_broadcast_i64x4(load256(qs + 32 * half));
      quants[2 * half] = _mm512_and_si512(_mm512_srlv_epi16(both, c.low_shifts), c.three);
      quants[2 * half + 1] = _mm512_and_si512(_mm512_srlv_epi16(both, c.high_shifts), c.three);
#else
      const __m256i packed = load256(qs + 32 * half);
      for (int k = 0; k < 4; ++k) quants[4 * half + k] = _mm256_and_si256(_mm256_srli_epi16(packed, 2 * k), c.three);
#endif
    }
  }
};

/// Q2_K: 2-bit quants with a 4-bit scale (low nibble) and min (high) per
/// sub-block of 16; the mins weigh the activation's block sums, as Q4_K's
/// do (d_offset = -dmin).
struct q2_k_format : superblock_steps<q2_k_format, block_q2_k>, sub_blocks_of_16 {
  struct constants {
    two_bit_quants::constants quants;
    scale_spread spread;
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    return {two_bit_quants::load_constants(), load_scale_spread()};
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE superblock unpack(const std::uint8_t* p, const constants& c) {
    const block_q2_k& w = *reinterpret_cast<const block_q2_k*>(p);
    superblock u;
    two_bit_quants::unpack(w.qs, c.quants, u.quants);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    spread_scales<false>(_mm_and_si128(packed, low4), c.spread, u);
    // Each 16-element sub-block's min weighs one of the activation's block sums.
    u.offset = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
    static_assert(offsetof(block_q2_k, dmin) == offsetof(block_q2_k, d) + sizeof(ruvllm::f16));
    const __m128 d_dmin = two_halves(&w.d);
    u.d_scaled = hn::Set(DW(), _mm_cvtss_f32(d_dmin)).raw;
    u.d_offset = _mm256_set1_ps(-_mm_cvtss_f32(_mm_movehdup_ps(d_dmin)));
    return u;
  }
};

/// Q3_K: Q2_K's 2-bit quants plus a third bit from hmask (element 32k + l:
/// bit k of hmask[l]) moved to bit 2, so q in [0, 7] stands for q - 4; the
/// 6-bit signed scales multiply both the quants and, times -4 d
/// (d_offset), the activation's block sums. Sums stay exact: a lane adds
/// at most 16 * 7 * 128 * 32 < 2^19, a VPDPBUSD group 4 * 7 * 128 < 2^15.
struct q3_k_format : superblock_steps<q3_k_format, block_q3_k>, sub_blocks_of_16 {
  struct constants {
    two_bit_quants::constants quants;
    bit_plane::constants third;
    scale_spread spread;
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    return {two_bit_quants::load_constants(), bit_plane::load_constants(2), load_scale_spread()};
  }

  /// The 16 scales (sc - 32, signed bytes) from the 12 packed bytes: low
  /// nibbles of bytes 0-7 for scales 0-7, their high nibbles for 8-15, the
  /// top two bits of scale j at bits 2 (j / 4) of byte 8 + j % 4. Read as
  /// 8 + 4 bytes: a 16-byte load would reach past the block's end.
  RUVLLM_QUANT_ATTR static HWY_INLINE __m128i scales(const std::uint8_t* packed) {
    const __m128i head = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed));
    std::int32_t tail_bits;
    std::memcpy(&tail_bits, packed + 8, sizeof tail_bits);
    const __m128i nibble = _mm_set1_epi8(0x0F), two = _mm_set1_epi8(0x03);
    const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(head, nibble), _mm_and_si128(_mm_srli_epi16(head, 4), nibble));
    // Lane m (scales 4m .. 4m + 3) takes the four tail bytes shifted by 2m.
    const __m128i tail = _mm_srlv_epi32(_mm_set1_epi32(tail_bits), _mm_setr_epi32(0, 2, 4, 6));
    const __m128i high = _mm_slli_epi16(_mm_and_si128(tail, two), 4);
    return _mm_sub_epi8(_mm_or_si128(low, high), _mm_set1_epi8(32));
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE superblock unpack(const std::uint8_t* p, const constants& c) {
    const block_q3_k& w = *reinterpret_cast<const block_q3_k*>(p);
    superblock u;
    two_bit_quants::unpack(w.qs, c.quants, u.quants);
    bit_plane::add(w.hmask, 2, c.third, u.quants);
    signed_scales(scales(w.scales), w.d, 4.0f, c.spread, u);
    return u;
  }
};

#if RUVLLM_QUANT_DOT4
/// acc + sums x scales, 32-bit lanes (VPMULLD).
RUVLLM_QUANT_ATTR HWY_INLINE ivec add_scaled_groups(ivec acc, ivec sums, ivec scales) {
#if RUVLLM_QUANT_AVX512
  return _mm512_add_epi32(acc, _mm512_mullo_epi32(sums, scales));
#else
  return _mm256_add_epi32(acc, _mm256_mullo_epi32(sums, scales));
#endif
}
#else
/// |a| per byte, read as unsigned (so |-128| is 128).
RUVLLM_QUANT_ATTR HWY_INLINE ivec abs_bytes(ivec a) {
#if RUVLLM_QUANT_AVX512
  return _mm512_abs_epi8(a);
#else
  return _mm256_abs_epi8(a);
#endif
}
/// v negated where a is negative (and, without AVX-512, zeroed where a is
/// zero, which |a| = 0 voids anyway): |a| x that = a x v.
RUVLLM_QUANT_ATTR HWY_INLINE ivec with_sign_of(ivec v, ivec a) {
#if RUVLLM_QUANT_AVX512
  return _mm512_mask_sub_epi8(v, _mm512_movepi8_mask(a), _mm512_setzero_si512(), v);
#else
  return _mm256_sign_epi8(v, a);
#endif
}
#endif

/// IQ4_XS: eight 32-element sub-blocks of IQ4_NL table values under 6-bit
/// signed scales (ls - 32), unpacked into element order (sub-block j's
/// nibbles are the 16 bytes at qs + 16 j, low then high). The values
/// (-127..113) do not fit the other formats' dot: VPMADDUBSW pairs of the
/// values + 128 would saturate, and so would VPDPBUSD groups of them packed
/// into words (4 * 241 * 128 > 2^15). So:
///  * with VNNI, the values + 128 (1..241) meet the activations in VPDPBUSD,
///    each 32-bit group is multiplied by its sub-block's scale (VPMULLD),
///    and the -128 sum(a) term rides on the activation's block sums
///    (weights ls - 32, d_offset = -128 d), as Q3_K's bias does;
///  * without, the activation magnitudes |a| (at most 128, unsigned) meet
///    the values carrying a's sign (at most 127 in magnitude) in
///    VPMADDUBSW -- the sign goes to the weights' side so that an
///    activation of -128 stays exact -- and VPMADDWD applies the scales as
///    for Q4_K.
/// A lane's sums stay exact in float: with VNNI it adds 16 products of at
/// most 241 * 128 * 32, without 16 of at most 127 * 128 * 32 (< 2^24).
struct iq4_xs_format : superblock_steps<iq4_xs_format, block_iq4_xs> {
  /// One row's super-block, unpacked for any token's activations.
  struct unpacked {
    ivec values[parts];  // element order; with VNNI value + 128, else the signed value
    ivec scales[parts];  // per lane of values' dot: 32-bit with VNNI, 16-bit words without
    __m256i offset;      // with VNNI: ls - 32 per activation block sum (two per sub-block)
    fvec d_scaled;
    __m256 d_offset;  // with VNNI: -128 d (the values' bias); without, no offset term
  };
  struct constants {
    ivec nibble_mask, table;
#if RUVLLM_QUANT_AVX512
    __m512i first_pair, second_pair;
#endif
    ivec scale_index[parts];
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    constants c;
    c.nibble_mask = set1_bytes(0x0F);
    alignas(16) std::uint8_t table[16];
    for (std::size_t i = 0; i < 16; ++i)
      table[i] = static_cast<std::uint8_t>(iq4_nl_values[i] + (RUVLLM_QUANT_DOT4 ? 128 : 0));
    c.table = broadcast128(_mm_load_si128(reinterpret_cast<const __m128i*>(table)));
#if RUVLLM_QUANT_AVX512
    // Sub-blocks 4h .. 4h + 3's low (lo) and high (hi) nibbles, one per
    // 128-bit lane, interleaved into element order: register 2h takes lo's
    // and hi's lanes 0 and 1 as lo 0, hi 0, lo 1, hi 1; register 2h + 1
    // lanes 2 and 3 alike (quadword indices, 8 and up selecting hi).
    c.first_pair = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
    c.second_pair = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
#endif
    // Register p holds sub-blocks p bytes / 32 on (one per 256 bits).
#if RUVLLM_QUANT_DOT4
    for (int p = 0; p < parts; ++p) {
      alignas(64) std::int32_t idx[bytes / 4];
      for (int i = 0; i < bytes / 4; ++i) idx[i] = p * bytes / 32 + i / 8;
      c.scale_index[p] = load(idx);
    }
#else
    for (int p = 0; p < parts; ++p) c.scale_index[p] = spread_words([p](int i) { return p * bytes / 32 + i / 16; });
#endif
    return c;
  }

  /// The eight signed scales ls - 32 as 16-bit words: low four bits from
  /// the nibbles of scales_l, top two from bits 2j of scales_h (word j
  /// shifts scales_h left by 14 - 2j, then right by 14).
  RUVLLM_QUANT_ATTR static HWY_INLINE __m128i scales(const block_iq4_xs& w) {
    std::int32_t low_bits;
    std::memcpy(&low_bits, w.scales_l, sizeof low_bits);
    const __m128i packed = _mm_cvtsi32_si128(low_bits), nibble = _mm_set1_epi8(0x0F);
    const __m128i low = _mm_cvtepu8_epi16(
        _mm_unpacklo_epi8(_mm_and_si128(packed, nibble), _mm_and_si128(_mm_srli_epi16(packed, 4), nibble)));
    const __m128i to_top = _mm_setr_epi16(1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1);
    const __m128i high =
        _mm_srli_epi16(_mm_mullo_epi16(_mm_set1_epi16(static_cast<std::int16_t>(w.scales_h)), to_top), 14);
    return _mm_sub_epi16(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi16(32));
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack(const std::uint8_t* p, const constants& c) {
    const block_iq4_xs& w = *reinterpret_cast<const block_iq4_xs*>(p);
    unpacked u;
    for (int k = 0; k < parts / 2; ++k) {
      // Sub-blocks bytes / 16 * k on: their low and high nibbles' values.
      const ivec packed = load(w.qs + bytes * k);
#if RUVLLM_QUANT_AVX512
      const ivec lo = shuffle_bytes(c.table, _mm512_and_si512(packed, c.nibble_mask));
      const ivec hi = shuffle_bytes(c.table, _mm512_and_si512(_mm512_srli_epi16(packed, 4), c.nibble_mask));
#else
      const ivec lo = shuffle_bytes(c.table, _mm256_and_si256(packed, c.nibble_mask));
      const ivec hi = shuffle_bytes(c.table, _mm256_and_si256(_mm256_srli_epi16(packed, 4), c.nibble_mask));
#endif
      // The interleave costs: without it (wrong results) the 512-bit GEMV
      // read ~15% faster on Zen 5, without the table lookups ~8%; laying
      // the activations out in the nibbles' order once per product would
      // remove the former (not done: a new activation form).
#if RUVLLM_QUANT_AVX512
      u.values[2 * k] = _mm512_permutex2var_epi64(lo, c.first_pair, hi);
      u.values[2 * k + 1] = _mm512_permutex2var_epi64(lo, c.second_pair, hi);
#else
      u.values[2 * k] = _mm256_permute2x128_si256(lo, hi, 0x20);
      u.values[2 * k + 1] = _mm256_permute2x128_si256(lo, hi, 0x31);
#endif
    }
    const __m128i sc16 = scales(w);
#if RUVLLM_QUANT_DOT4
    const __m256i sc32 = _mm256_cvtepi16_epi32(sc16);
    for (int k = 0; k < parts; ++k) {
#if RUVLLM_QUANT_AVX512
      u.scales[k] = _mm512_permutexvar_epi32(c.scale_index[k], _mm512_castsi256_si512(sc32));
#else
      u.scales[k] = _mm256_permutevar8x32_epi32(sc32, c.scale_index[k]);
#endif
    }
    u.offset = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi16(sc16, sc16)),
                                       _mm_unpackhi_epi16(sc16, sc16), 1);
#else
    const ivec words = broadcast128(sc16);
    for (int k = 0; k < parts; ++k) u.scales[k] = shuffle_bytes(words, c.scale_index[k]);
#endif
    const float d = half_to_float(w.d);
    u.d_scaled = hn::Set(DW(), d).raw;
#if RUVLLM_QUANT_DOT4
    u.d_offset = _mm256_set1_ps(-128.0f * d);
#else
    // Never read (accumulate takes add_scaled); set so that copies of the
    // struct copy defined values.
    u.offset = _mm256_setzero_si256();
    u.d_offset = _mm256_setzero_ps();
#endif
    return u;
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE superblock_sums dot(const unpacked& u, const block_q8_k& a) {
    superblock_sums s;
    for (ivec& acc : s.scaled) acc = zero();
    for (int p = 0; p < parts; ++p) {
      const ivec act = load(a.qs + bytes * p);
      ivec& acc = s.scaled[p % accumulators];
#if RUVLLM_QUANT_DOT4
      acc = add_scaled_groups(acc, add_dot4(zero(), u.values[p], act), u.scales[p]);
#else
      acc = add_scaled_dot(acc, abs_bytes(act), with_sign_of(u.values[p], act), u.scales[p]);
#endif
    }
    s.d_scaled = hn::Mul(hn::Vec<DW>{u.d_scaled}, hn::Set(DW(), a.d)).raw;
#if RUVLLM_QUANT_DOT4
    s.offset = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums)), u.offset);
    s.d_offset = _mm256_mul_ps(u.d_offset, _mm256_set1_ps(a.d));
#else
    s.offset = _mm256_setzero_si256();  // never read, see unpack()
    s.d_offset = _mm256_setzero_ps();
#endif
    return s;
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE void accumulate(row_sum& s, const unpacked& u, const block_q8_k* a,
                                                      std::size_t step) {
#if RUVLLM_QUANT_DOT4
    s.add(dot(u, a[step]));
#else
    s.add_scaled(dot(u, a[step]));
#endif
  }
};

#if !RUVLLM_QUANT_VNNI
// Q4_0 and Q8_0 rows over q8_0_quads in 256-bit registers (AVX2 targets and
// AVX-512 ones without VNNI), a step being a pair of 32-element blocks: the
// quad's lo / hi runs hold values 0-15 / 16-31 of its blocks, so 32 bytes
// of each cover the pair, and a register of the pair's weights carries one
// block per 128-bit lane. Per lane the integer sums are exact and below
// 2^24; each step adds float(sums) * (d_w * d_a) lane-wise into one of two
// float accumulators (even and odd steps), reduced once at the row's end,
// so a row's result depends on nothing but the row and the activations.
// Against rows_of_32 (four rows side by side per activation block, no
// software prefetch), on Zen 5 at the AVX2 target, one thread: GEMV over 1
// GiB of 2048 columns Q4_0 28 GB/s against 6.3, Q8_0 36.5-37.5 against
// 12.5; the GEMM 0.39 / 0.45 ns per row, token and block against 2.3 / 2.2;
// 1B decode Q4_0 46-47 tok/s against 11.6-11.9, Q8_0 34-36 against 12.
// Q4_0 is bound by its ~15 vector operations per pair (28.6 GB/s from L3
// too). One float accumulator per (row, token): two, picked by the step's
// parity, went through the stack and held Q4_0 to 22 GB/s.

/// The sums of one (row, token) over pairs of blocks.
struct pair_sum {
  __m256 acc;

  RUVLLM_QUANT_ATTR static HWY_INLINE pair_sum zero() { return {_mm256_setzero_ps()}; }

  RUVLLM_QUANT_ATTR HWY_INLINE void add(__m256i sums, __m256 scales) {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scales, acc);
  }

  RUVLLM_QUANT_ATTR HWY_INLINE float total() const { return hn::GetLane(hn::SumOfLanes(DF(), hn::Vec<DF>{acc})); }
};

/// 16 bytes at p in the lower 128-bit lane, zeros in the upper.
RUVLLM_QUANT_ATTR HWY_INLINE __m256i lower_lane(const std::uint8_t* p) {
  return _mm256_inserti128_si256(_mm256_setzero_si256(), _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), 0);
}
/// 16 bytes at lo in the lower 128-bit lane, 16 at hi in the upper.
RUVLLM_QUANT_ATTR HWY_INLINE __m256i two_lanes(const std::uint8_t* lo, const std::uint8_t* hi) {
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo))),
                                 _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi)), 1);
}

/// What token_group asks of a pair format, and the parts Q4_0 and Q8_0
/// share: a step is two blocks of BlockBytes, met by half of each token's
/// quad; an odd block count leaves a last step of one block.
template <std::size_t BlockBytes>
struct block_pair_steps {
  using activation = q8_0_quad;
  using sum = pair_sum;
  static constexpr std::size_t step_bytes = 2 * BlockBytes;
  static constexpr bool partial_steps = true;
  static constexpr std::size_t whole_steps(std::size_t n) { return n / 64; }
  static constexpr bool has_partial_step(std::size_t n) { return (n / 32) % 2 != 0; }
  static constexpr std::size_t activation_count(std::size_t n) { return q8_0_quads(n); }

  /// Shuffle indices putting the f16 scale at bytes `at`, at + 1 of each
  /// 128-bit lane (lower lane: lo_at, upper: hi_at) into the upper half of
  /// every 32-bit lane of that 128-bit lane.
  RUVLLM_QUANT_ATTR static HWY_INLINE __m256i scale_index(int lo_at, int hi_at) {
    alignas(32) std::int8_t idx[32];
    for (int i = 0; i < 32; ++i) {
      const int at = i < 16 ? lo_at : hi_at;
      idx[i] = static_cast<std::int8_t>(i % 4 == 2 ? at : i % 4 == 3 ? at + 1 : -1);
    }
    return load256(idx);
  }

  /// The two blocks' scales as floats (lanes 0-3 and 4-7) from the f16
  /// values the index gathers: an arithmetic shift right by 3 of an f16 in
  /// a lane's upper half, with bits 28-30 cleared, is the float h * 2^-112
  /// exactly (zeros and subnormals too: see vnni::f16_scales), and the
  /// product with 2^112 is h. One shuffle and three operations per pair,
  /// where F16C's conversion needs the halves side by side first.
  RUVLLM_QUANT_ATTR static HWY_INLINE __m256 scales(__m256i bytes, __m256i index) {
    const __m256i halves = _mm256_shuffle_epi8(bytes, index);
    const __m256i bits = _mm256_and_si256(_mm256_srai_epi32(halves, 3), _mm256_set1_epi32(0x8FFF'FFFF));
    return _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(0x1p112f));
  }

  /// The activation scales of the pair in half `half` of quad q (lanes as the weights').
  RUVLLM_QUANT_ATTR static HWY_INLINE __m256 activation_scales(const q8_0_quad& q, std::size_t half) {
    return _mm256_load_ps(q.d + 8 * half);
  }
};

struct q4_0_pair_format : block_pair_steps<sizeof(block_q4_0)> {
  struct constants {
    __m256i nibble_mask, scale_index;
  };
  /// Both blocks' nibbles: values 0-15 (lo) and 16-31 (hi), block 2s in the
  /// lower 128-bit lane; the blocks' d.
  struct unpacked {
    __m256i lo, hi;
    __m256 d;
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    // A pair's first 32 bytes hold d of its first block at bytes 0-1 and of
    // its second at 18-19 (bytes 2-3 of the upper lane).
    return {_mm256_set1_epi8(0x0F), scale_index(0, 2)};
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked quants(__m256i packed, __m256i scale_bytes, const constants& c) {
    return {_mm256_and_si256(packed, c.nibble_mask), _mm256_and_si256(_mm256_srli_epi16(packed, 4), c.nibble_mask),
            scales(scale_bytes, c.scale_index)};
  }
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack(const std::uint8_t* p, const constants& c) {
    static_assert(offsetof(block_q4_0, qs) == 2);
    return quants(two_lanes(p + 2, p + 20), load256(p), c);
  }
  /// A last, lone block: the upper lanes (quants and d) read as zero.
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack_partial(const std::uint8_t* p, const constants& c) {
    return quants(lower_lane(p + 2), lower_lane(p), c);
  }

  /// sum(q a) - 8 sum(a) per block, the quad's neg8_sum carrying the second
  /// term. Pair sums of VPMADDUBSW are at most 2 * 15 * 127 (the activations
  /// are at least -127), so the lo and hi pairs add in 16 bits; VPDPBUSD
  /// adds both into neg8_sum directly.
  RUVLLM_QUANT_ATTR static HWY_INLINE void accumulate(pair_sum& s, const unpacked& u, const q8_0_quad* a,
                                                      std::size_t step) {
    const q8_0_quad& q = a[step / 2];
    const std::size_t half = step % 2;
    const __m256i neg8_sum = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.neg8_sum + 8 * half));
#if RUVLLM_QUANT_DOT4
    const __m256i sums = add_dot4(add_dot4(neg8_sum, u.lo, load256(q.lo + 32 * half)), u.hi, load256(q.hi + 32 * half));
#else
    const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(u.lo, load256(q.lo + 32 * half)),
                                           _mm256_maddubs_epi16(u.hi, load256(q.hi + 32 * half)));
    const __m256i sums = _mm256_add_epi32(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)), neg8_sum);
#endif
    s.add(sums, _mm256_mul_ps(u.d, activation_scales(q, half)));
  }
};

/// Q5_0: Q4_0's pair step with the fifth bit of every quant from qh (bit j
/// of a block's little-endian word for value j), which the pair's first 32
/// bytes already hold: the first block's qh at bytes 2-5 of the lower
/// 128-bit lane, the second's at bytes 8-11 of the upper (22 + 2 - 16).
struct q5_0_pair_format : block_pair_steps<sizeof(block_q5_0)> {
  struct constants {
    __m256i nibble_mask, scale_index, spread_lo, spread_hi, lane_bit, fifth_bit;
  };
  using unpacked = q4_0_pair_format::unpacked;

  /// Indices that put qh byte (first + i / 8) of each block at byte i of its
  /// 128-bit lane (lower lane: the block's qh at byte lo_at, upper: hi_at).
  RUVLLM_QUANT_ATTR static HWY_INLINE __m256i spread(int lo_at, int hi_at) {
    alignas(32) std::int8_t idx[32];
    for (int i = 0; i < 32; ++i) idx[i] = static_cast<std::int8_t>((i < 16 ? lo_at : hi_at) + (i % 16) / 8);
    return load256(idx);
  }

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    // d of the pair's second block at 22-23 (bytes 6-7 of the upper lane);
    // values 0-15 take qh bits 0-15 (bytes 2-3 / 8-9), values 16-31 bits
    // 16-31 (bytes 4-5 / 10-11).
    return {_mm256_set1_epi8(0x0F),
            scale_index(0, 6),
            spread(2, 8),
            spread(4, 10),
            _mm256_set1_epi64x(static_cast<long long>(0x8040'2010'0804'0201ull)),
            _mm256_set1_epi8(0x10)};
  }

  /// 0x10 in every byte whose bit (byte index % 8) is set in the spread qh.
  RUVLLM_QUANT_ATTR static HWY_INLINE __m256i fifth_bits(__m256i head, __m256i index, const constants& c) {
    const __m256i spread_bits = _mm256_and_si256(_mm256_shuffle_epi8(head, index), c.lane_bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(spread_bits, c.lane_bit), c.fifth_bit);
  }
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked quants(__m256i packed, __m256i head, const constants& c) {
    const __m256i lo = _mm256_and_si256(packed, c.nibble_mask);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), c.nibble_mask);
    return {_mm256_or_si256(lo, fifth_bits(head, c.spread_lo, c)),
            _mm256_or_si256(hi, fifth_bits(head, c.spread_hi, c)), scales(head, c.scale_index)};
  }
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack(const std::uint8_t* p, const constants& c) {
    static_assert(offsetof(block_q5_0, qh) == 2 && offsetof(block_q5_0, qs) == 6 && sizeof(block_q5_0) == 22);
    return quants(two_lanes(p + 6, p + 28), load256(p), c);
  }
  /// A last, lone block: the upper lanes (quants, qh and d) read as zero.
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack_partial(const std::uint8_t* p, const constants& c) {
    return quants(lower_lane(p + 6), lower_lane(p), c);
  }

  /// sum(q a) - 16 sum(a) per block (twice the quad's neg8_sum). VPMADDUBSW
  /// pair sums are at most 2 * 31 * 127, so the lo and hi pairs still add in
  /// 16 bits.
  RUVLLM_QUANT_ATTR static HWY_INLINE void accumulate(pair_sum& s, const unpacked& u, const q8_0_quad* a,
                                                      std::size_t step) {
    const q8_0_quad& q = a[step / 2];
    const std::size_t half = step % 2;
    const __m256i neg16_sum =
        _mm256_slli_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(q.neg8_sum + 8 * half)), 1);
#if RUVLLM_QUANT_DOT4
    const __m256i sums =
        add_dot4(add_dot4(neg16_sum, u.lo, load256(q.lo + 32 * half)), u.hi, load256(q.hi + 32 * half));
#else
    const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(u.lo, load256(q.lo + 32 * half)),
                                           _mm256_maddubs_epi16(u.hi, load256(q.hi + 32 * half)));
    const __m256i sums = _mm256_add_epi32(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)), neg16_sum);
#endif
    s.add(sums, _mm256_mul_ps(u.d, activation_scales(q, half)));
  }
};

/// A pair step of unsigned quants lo / hi (values 0-15 / 16-31 of both
/// blocks, at most 31) with scales d and minima m: sum(q a) d_w d_a plus the
/// quad's -8 sum(a) times m_w d_a / -8 (exact scalings), for Q4_1 and Q5_1.
/// VPMADDUBSW pair sums are at most 2 * 31 * 127, so lo and hi add in 16
/// bits.
RUVLLM_QUANT_ATTR HWY_INLINE void accumulate_with_minimum(pair_sum& s, __m256i lo, __m256i hi, __m256 d, __m256 m,
                                                          const q8_0_quad* a, std::size_t step) {
  const q8_0_quad& q = a[step / 2];
  const std::size_t half = step % 2;
#if RUVLLM_QUANT_DOT4
  const __m256i sums =
      add_dot4(add_dot4(_mm256_setzero_si256(), lo, load256(q.lo + 32 * half)), hi, load256(q.hi + 32 * half));
#else
  const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo, load256(q.lo + 32 * half)),
                                         _mm256_maddubs_epi16(hi, load256(q.hi + 32 * half)));
  const __m256i sums = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
#endif
  const __m256 d_a = _mm256_load_ps(q.d + 8 * half);
  s.add(sums, _mm256_mul_ps(d, d_a));
  const __m256i neg8_sum = _mm256_load_si256(reinterpret_cast<const __m256i*>(q.neg8_sum + 8 * half));
  s.add(neg8_sum, _mm256_mul_ps(m, _mm256_mul_ps(d_a, _mm256_set1_ps(-0.125f))));
}

/// A pair step of a format with a minimum per block (Q4_1, Q5_1): Plain's
/// quants and scales (Q4_0's, Q5_0's, whose indices load_constants moves to
/// this layout) without Plain's offset, plus each block's minimum m (bytes
/// 2-3 of the block) times the activation sum, see accumulate_with_minimum.
/// A block's quants start at byte QsAt.
template <class Plain, class Block, std::size_t QsAt>
struct minimum_pair_format : block_pair_steps<sizeof(Block)> {
  using steps = block_pair_steps<sizeof(Block)>;
  struct constants {
    typename Plain::constants plain;
    __m256i m_index;
  };
  struct unpacked {
    typename Plain::unpacked q;
    __m256 m;
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack(const std::uint8_t* p, const constants& c) {
    static_assert(offsetof(Block, m) == 2 && offsetof(Block, qs) == QsAt);
    const __m256i head = load256(p);
    return {Plain::quants(two_lanes(p + QsAt, p + sizeof(Block) + QsAt), head, c.plain),
            steps::scales(head, c.m_index)};
  }
  /// A last, lone block: the upper lanes read as zero.
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack_partial(const std::uint8_t* p, const constants& c) {
    const __m256i head = lower_lane(p);
    return {Plain::quants(lower_lane(p + QsAt), head, c.plain), steps::scales(head, c.m_index)};
  }
  RUVLLM_QUANT_ATTR static HWY_INLINE void accumulate(pair_sum& s, const unpacked& u, const q8_0_quad* a,
                                                      std::size_t step) {
    accumulate_with_minimum(s, u.q.lo, u.q.hi, u.q.d, u.m, a, step);
  }
};

/// Q4_1: within a pair's first 32 bytes, d at 0 and 20 (upper lane 4), m at
/// 2 and 22 (6); the quants at 4 and 24.
struct q4_1_pair_format : minimum_pair_format<q4_0_pair_format, block_q4_1, 4> {
  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    return {{_mm256_set1_epi8(0x0F), scale_index(0, 4)}, scale_index(2, 6)};
  }
};

/// Q5_1: d at 0 and 24 (upper lane 8), m at 2 and 26 (10), qh at 4-7 and
/// 28-31 (12-15); the quants at 8 and 32.
struct q5_1_pair_format : minimum_pair_format<q5_0_pair_format, block_q5_1, 8> {
  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    constants c;
    c.plain = q5_0_pair_format::load_constants();
    c.plain.scale_index = scale_index(0, 8);
    c.plain.spread_lo = q5_0_pair_format::spread(4, 12);
    c.plain.spread_hi = q5_0_pair_format::spread(6, 14);
    c.m_index = scale_index(2, 10);
    return c;
  }
};

struct q8_0_pair_format : block_pair_steps<sizeof(block_q8_0)> {
  struct constants {
    __m256i scale_index;
  };
  /// Both blocks' weights: values 0-15 (lo) and 16-31 (hi), block 2s in
  /// the lower 128-bit lane, signed and as magnitudes; the blocks' d.
  struct unpacked {
    __m256i lo, hi, lo_abs, hi_abs;
    __m256 d;
  };

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() { return {scale_index(0, 0)}; }

  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked weights(__m256i lo, __m256i hi, __m256i scale_bytes,
                                                       const constants& c) {
    return {lo, hi, _mm256_abs_epi8(lo), _mm256_abs_epi8(hi), scales(scale_bytes, c.scale_index)};
  }
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack(const std::uint8_t* p, const constants& c) {
    static_assert(offsetof(block_q8_0, qs) == 2 && sizeof(block_q8_0) == 34);
    return weights(two_lanes(p + 2, p + 36), two_lanes(p + 18, p + 52), two_lanes(p, p + 34), c);
  }
  /// A last, lone block: the upper lanes (weights and d) read as zero.
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack_partial(const std::uint8_t* p, const constants& c) {
    return weights(lower_lane(p + 2), lower_lane(p + 18), lower_lane(p), c);
  }

  /// |w| . (a * sign(w)) = w . a, a * sign(w) fitting in int8 because the
  /// activations are at least -127; pair sums are at most 2 * 128 * 127, so
  /// the lo and hi halves widen separately.
  RUVLLM_QUANT_ATTR static HWY_INLINE void accumulate(pair_sum& s, const unpacked& u, const q8_0_quad* a,
                                                      std::size_t step) {
    const q8_0_quad& q = a[step / 2];
    const std::size_t half = step % 2;
    const __m256i signed_lo = _mm256_sign_epi8(load256(q.lo + 32 * half), u.lo);
    const __m256i signed_hi = _mm256_sign_epi8(load256(q.hi + 32 * half), u.hi);
#if RUVLLM_QUANT_DOT4
    const __m256i sums = add_dot4(add_dot4(_mm256_setzero_si256(), u.lo_abs, signed_lo), u.hi_abs, signed_hi);
#else
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i sums = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u.lo_abs, signed_lo), ones),
                                          _mm256_madd_epi16(_mm256_maddubs_epi16(u.hi_abs, signed_hi), ones));
#endif
    s.add(sums, _mm256_mul_ps(u.d, activation_scales(q, half)));
  }
};

/// IQ4_NL: Q4_0's pair step with each nibble an index into iq4_nl_values,
/// looked up by one byte shuffle per register; the signed values then take
/// Q8_0's step (|w| . a sign(w): VPMADDUBSW pairs of the biased values + 128
/// would saturate).
struct iq4_nl_pair_format : block_pair_steps<sizeof(block_iq4_nl)> {
  struct constants {
    q4_0_pair_format::constants q4;
    __m256i values;
  };
  using unpacked = q8_0_pair_format::unpacked;

  RUVLLM_QUANT_ATTR static HWY_INLINE constants load_constants() {
    static_assert(sizeof(block_iq4_nl) == sizeof(block_q4_0) && offsetof(block_iq4_nl, qs) == offsetof(block_q4_0, qs));
    return {q4_0_pair_format::load_constants(),
            _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(iq4_nl_values)))};
  }
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked values(const q4_0_pair_format::unpacked& u, const constants& c) {
    const __m256i lo = _mm256_shuffle_epi8(c.values, u.lo), hi = _mm256_shuffle_epi8(c.values, u.hi);
    return {lo, hi, _mm256_abs_epi8(lo), _mm256_abs_epi8(hi), u.d};
  }
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack(const std::uint8_t* p, const constants& c) {
    return values(q4_0_pair_format::unpack(p, c.q4), c);
  }
  /// A last, lone block: the upper lanes' values are those of nibble 0, but
  /// their activations and d are zero.
  RUVLLM_QUANT_ATTR static HWY_INLINE unpacked unpack_partial(const std::uint8_t* p, const constants& c) {
    return values(q4_0_pair_format::unpack_partial(p, c.q4), c);
  }
  RUVLLM_QUANT_ATTR static HWY_INLINE void accumulate(pair_sum& s, const unpacked& u, const q8_0_quad* a,
                                                      std::size_t step) {
    q8_0_pair_format::accumulate(s, u, a, step);
  }
};
#endif  // !RUVLLM_QUANT_VNNI

/// y[j * y_stride + r] = dot(row r, token j's activations) for the Tokens
/// tokens of a group, one row at a time (the rows one sequential stream
/// under the plan's prefetch), each step of a row (a K-quant super-block, a
/// pair of Q4_0 / Q8_0 blocks) unpacked once for the group and the group's
/// sums kept in registers. Each (row, token) is computed the same way
/// whatever the group size, so the GEMM (groups of four) gives the GEMV's
/// (groups of one) bits.
template <class Format, std::size_t Tokens, gemv_plan Plan>
RUVLLM_QUANT_ATTR HWY_INLINE void token_group(const void* HWY_RESTRICT w, std::size_t row_stride, std::size_t rows,
                                              const typename Format::activation* HWY_RESTRICT a, std::size_t n,
                                              float* HWY_RESTRICT y, std::size_t y_stride,
                                              const typename Format::constants& c) {
  constexpr std::size_t step = Format::step_bytes;
  const std::size_t steps = Format::whole_steps(n), per_token = Format::activation_count(n);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint8_t* row = static_cast<const std::uint8_t*>(w) + r * row_stride;
    typename Format::sum sum[Tokens];
    for (std::size_t j = 0; j < Tokens; ++j) sum[j] = Format::sum::zero();
    const auto take = [&](const typename Format::unpacked& u, std::size_t s) RUVLLM_QUANT_LAMBDA {
      for (std::size_t j = 0; j < Tokens; ++j) Format::accumulate(sum[j], u, a + j * per_token, s);
    };
    line_prefetcher ahead(row);  // rows_l1's stream; pairs_l1_l2 keeps prefetch_ahead
    for (std::size_t s = 0; s < steps; ++s) {
      if constexpr (Plan == gemv_plan::rows_l1)
        ahead.until(row + (s + 1) * step);
      else
        prefetch_ahead<Plan>(row + s * step, step);
      take(Format::unpack(row + s * step, c), s);
    }
    if constexpr (Format::partial_steps)
      if (Format::has_partial_step(n)) take(Format::unpack_partial(row + steps * step, c), steps);
    for (std::size_t j = 0; j < Tokens; ++j) y[j * y_stride + r] = sum[j].total();
  }
}

/// out[r] = dot(row r, a): the GEMV.
template <class Format>
RUVLLM_QUANT_ATTR HWY_INLINE void rows(const void* HWY_RESTRICT w, std::size_t row_stride, std::size_t rows,
                                       const typename Format::activation* HWY_RESTRICT a, std::size_t n,
                                       float* HWY_RESTRICT out) {
  const typename Format::constants c = Format::load_constants();
  with_gemv_plan([&](auto plan) RUVLLM_QUANT_LAMBDA {
    token_group<Format, 1, decltype(plan)::value>(w, row_stride, rows, a, n, out, 0, c);
  });
}

/// y[t][r] for a tile of rows x tokens (the prefill form), in groups of four
/// tokens: each super-block of a row is unpacked once per group (rows() per
/// token unpacks the quants and spreads the scales for every token), and the
/// group's activations (4 x 292 bytes per super-block) stay in L1 while the
/// tile's rows stream past them from L2. On Zen 5 (one thread, 112 rows of
/// 2048 columns x 64 tokens) this takes 2.2 ns per row, token and
/// super-block against 3.5 for rows() per token, and is bound by the
/// multiplies of dot() (since 1.84, see there); with the rows unpacked once
/// for all 64 tokens instead, whose activations then came from L2 for every
/// row, it took 2.4. In 256-bit registers (AVX2 target,
/// same machine), where the unpacked super-block no longer fits in the
/// registers beside the sums, groups of four still win: Q4_K 4.8 ns against
/// 5.9 in groups of two and 5.5 per token, Q6_K 5.0 against 6.0 and 7.7.
template <class Format>
RUVLLM_QUANT_ATTR HWY_INLINE void gemm(const void* HWY_RESTRICT w, std::size_t row_stride, std::size_t rows,
                                       const typename Format::activation* HWY_RESTRICT a, std::size_t tokens,
                                       std::size_t n, float* HWY_RESTRICT y, std::size_t y_stride) {
  constexpr std::size_t group = 4;
  const typename Format::constants c = Format::load_constants();
  const std::size_t per_token = Format::activation_count(n);
  with_gemv_plan([&](auto plan) RUVLLM_QUANT_LAMBDA {
    constexpr gemv_plan Plan = decltype(plan)::value;
    std::size_t t = 0;
    for (; t + group <= tokens; t += group)
      token_group<Format, group, Plan>(w, row_stride, rows, a + t * per_token, n, y + t * y_stride, y_stride, c);
    for (; t < tokens; ++t)
      token_group<Format, 1, Plan>(w, row_stride, rows, a + t * per_token, n, y + t * y_stride, y_stride, c);
  });
}

/// The forms quant-inl.h's kernels call (see RUVLLM_QUANT_WIDE_ENTRY).
template <class Format>
RUVLLM_QUANT_ATTR RUVLLM_QUANT_WIDE_ENTRY void rows_entry(const void* HWY_RESTRICT w, std::size_t row_stride,
                                                          std::size_t rows,
                                                          const typename Format::activation* HWY_RESTRICT a,
                                                          std::size_t n, float* HWY_RESTRICT out) {
  RUVLLM_QUANT_WIDE_NS::rows<Format>(w, row_stride, rows, a, n, out);  // the parameter hides rows()
}
template <class Format>
RUVLLM_QUANT_ATTR RUVLLM_QUANT_WIDE_ENTRY void gemm_entry(const void* HWY_RESTRICT w, std::size_t row_stride,
                                                          std::size_t rows,
                                                          const typename Format::activation* HWY_RESTRICT a,
                                                          std::size_t tokens, std::size_t n, float* HWY_RESTRICT y,
                                                          std::size_t y_stride) {
  gemm<Format>(w, row_stride, rows, a, tokens, n, y, y_stride);
}

}  // namespace RUVLLM_QUANT_WIDE_NS
