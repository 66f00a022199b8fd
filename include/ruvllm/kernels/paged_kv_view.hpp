#ifndef RUVLLM_KERNELS_PAGED_KV_VIEW_HPP
#define RUVLLM_KERNELS_PAGED_KV_VIEW_HPP

// The paged KV cache as the attention kernels see it: a non-owning view of
// page tables over two page pools (keys and values), plus the byte layout of
// a page in every KV storage format. The kv layer owns the pages and builds
// these views; kernels only read through them (after FlashInfer's paged_kv_t:
// page table + last-page length + layout tag).
//
// ---------------------------------------------------------------- addressing
// A batch of `batch` sequences. Sequence s owns the pages
//   page_ids[page_indptr[s] .. page_indptr[s + 1])
// in order (a CSR page table: page_indptr has batch + 1 entries, starting at
// any value). Page ids index two pools: the keys of page p start at
// k_pages + p * k_page_bytes and its values at v_pages + p * v_page_bytes, so
// one id names both halves of a block whatever their precisions. Ids need not
// be contiguous, sorted or distinct across sequences (a shared prefix may
// appear in many page tables). A sequence with n >= 1 pages holds
//   (n - 1) * TokensPerBlock + last_page_len[s]   tokens, 1 <= last_page_len[s] <= TokensPerBlock;
// a sequence with no pages holds 0 tokens and has last_page_len[s] == 0.
//
// ------------------------------------------------------------------- layout
// kv_layout::head_token_dim: a page is n_kv_heads "page-heads", head-major,
// each holding that head's TokensPerBlock tokens token-major with the channel
// (dim) innermost:
//   page = [kv_head][token][dim]   (head h at byte h * head_bytes of the page)
// Why: decode attention runs one KV head (and every query head of its GQA
// group) at a time, so the bytes it needs from a page are one contiguous run
// of head_bytes -- whole cache lines, one software prefetch stream per
// page-head -- instead of n_kv_heads short runs at a stride (the token-major
// layout [token][kv_head][dim] that appending one token would favour); and
// running a page's KV heads one after another reads the page in address
// order, the sequential stream hardware prefetchers follow. Appending a
// token writes n_kv_heads short rows instead, which happens once per token
// while attention reads every row at every step.
//
// ------------------------------------------------------ page-head byte layouts
// T = TokensPerBlock, D = head_dim; offsets in bytes from the page-head start.
// Every format stores whole tokens of whole channels; the page-head sizes are
// kv_page_head_bytes().
//  * f32 (precision::f32): T x D float, element (t, c) at 4 * (t * D + c).
//    Exact; for callers whose attention must match float math (conformance
//    with llama.cpp's F32 KV cache). D % 16 == 0.
//  * f16 (precision::f16): T x D ruvllm::f16, element (t, c) at 2 * (t * D + c).
//    Exact for every value an f16 holds. D % 16 == 0.
//  * q8_0 (precision::q8_0): T x (D / 32) block_q8_0 (34 bytes: f16 d, int8
//    qs[32]); block (t, b) at 34 * (t * (D / 32) + b) holds channels
//    32b .. 32b + 31 of token t; x = d * qs[i] (GGUF Q8_0 blocks). D % 32 == 0.
//  * KIVI keys (precision::kivi<Bits, G> as KPrecision): quantized per
//    channel, a group spans G consecutive tokens of one channel (outliers in
//    keys are per channel, KIVI's observation). (T / G) x D block_kivi<Bits, G>;
//    block (j, c) at S * (j * D + c), S = sizeof(block_kivi<Bits, G>), holds
//    tokens jG .. jG + G - 1 of channel c. G divides T.
//  * KIVI values (precision::kivi<Bits, G> as VPrecision): quantized per token,
//    a group spans G consecutive channels of one token. T x (D / G)
//    block_kivi<Bits, G>; block (t, j) at S * (t * (D / G) + j) holds channels
//    jG .. jG + G - 1 of token t. G divides D.
//  * Inside a block_kivi<Bits, G> (both roles): x = zero + scale * code with
//    f16 scale and zero and codes in [0, 2^Bits - 1]. The codes are planar:
//    with P = G * Bits / 8 (the bytes of qs), element i of the group is in
//    byte i % P at bits [Bits * (i / P), Bits * (i / P) + Bits). So the low
//    Bits of the P bytes are elements 0 .. P - 1, the next Bits elements
//    P .. 2P - 1, and so on (for 4 bits this is Q4_0's nibble order). A SIMD
//    kernel turns P consecutive bytes into P consecutive elements with one
//    widening load, a shift and a mask -- no shuffles. P % 4 == 0 (G * Bits
//    a multiple of 32): 2-bit groups of 16, 32, 48, 64 ...; 4-bit of 8, 16, ...
//
// Bytes per token and KV head, K + V, at D = 128 and G = 32: f32 1024, f16 512,
// q8_0 272, KIVI-4 160, KIVI-2 96 (f16 / KIVI-2 = 5.3x).
//
// Thread-safety: a view is a value (pointers and sizes). Any number of
// kernels may read through views of the same pages concurrently; whoever
// writes a page (the kv layer) must not do so while a kernel reads it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "ruvllm/core/error.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/core/precision.hpp"

namespace ruvllm::kernels {

/// A KV storage format as a run-time value: what the type-erased kernels
/// switch on once per page (never per element).
enum class kv_format : std::uint8_t {
  f16 = 1,    // precision::f16
  q8_0 = 2,   // precision::q8_0
  kivi4 = 3,  // precision::kivi<4, G>
  kivi2 = 4,  // precision::kivi<2, G>
  f32 = 5,    // precision::f32
};

/// Which half of a block a page pool holds; KIVI groups keys per channel and
/// values per token.
enum class kv_role : std::uint8_t { key, value };

/// Order of the axes of a page, outermost first (see the file comment).
enum class kv_layout : std::uint8_t { head_token_dim };

/// Widest head supported (stack tiles in the kernels are sized for it).
inline constexpr std::size_t kv_max_head_dim = 256;
/// Every head_dim must be a multiple of this (full SIMD vectors, up to 16 float lanes).
inline constexpr std::size_t kv_head_dim_multiple = 16;
/// Largest TokensPerBlock (the decode kernels keep one page of scores per head on the stack).
inline constexpr std::size_t kv_max_tokens_per_page = 256;

/// One stored format: the format and its group (elements per scale: 1 for
/// f16, 32 for q8_0, G for KIVI).
struct kv_format_desc {
  kv_format format = kv_format::f16;
  std::uint32_t group = 1;

  friend constexpr bool operator==(kv_format_desc, kv_format_desc) noexcept = default;
};

/// Bits per code of a format (16 for f16).
[[nodiscard]] constexpr unsigned kv_bits(kv_format f) noexcept {
  switch (f) {
    case kv_format::f16: return 16;
    case kv_format::q8_0: return 8;
    case kv_format::kivi4: return 4;
    case kv_format::kivi2: return 2;
    case kv_format::f32: return 32;
  }
  return 0;
}

/// Bytes of one block of a KIVI format with `group` elements: f16 scale, f16 zero, codes.
[[nodiscard]] constexpr std::size_t kv_kivi_block_bytes(unsigned bits, std::size_t group) noexcept {
  return 4 + group * bits / 8;
}

/// Bytes of one page-head (one KV head of one page) holding `tokens` tokens
/// of head_dim channels in format f and role r; the layouts are in the file
/// comment. Preconditions (checked by kv_format_check): as there.
[[nodiscard]] constexpr std::size_t kv_page_head_bytes(kv_format_desc f, kv_role r, std::size_t tokens,
                                                       std::size_t head_dim) noexcept {
  switch (f.format) {
    case kv_format::f16: return tokens * head_dim * sizeof(f16);
    case kv_format::f32: return tokens * head_dim * sizeof(float);
    case kv_format::q8_0: return tokens * (head_dim / 32) * sizeof(block_q8_0);
    case kv_format::kivi4:
    case kv_format::kivi2: {
      const std::size_t block = kv_kivi_block_bytes(kv_bits(f.format), f.group);
      return r == kv_role::key ? (tokens / f.group) * head_dim * block : tokens * (head_dim / f.group) * block;
    }
  }
  return 0;
}

/// Checks that format f in role r can store pages of tokens_per_page tokens
/// of head_dim channels; the error names the value and the limit.
[[nodiscard]] inline result<void> kv_format_check(kv_format_desc f, kv_role r, std::size_t tokens_per_page,
                                                  std::size_t head_dim) {
  if (head_dim == 0 || head_dim > kv_max_head_dim || head_dim % kv_head_dim_multiple != 0)
    return make_error(errc::invalid_argument, "head_dim ", head_dim, " must be a multiple of ", kv_head_dim_multiple,
                      " in [", kv_head_dim_multiple, ", ", kv_max_head_dim, "]");
  if (tokens_per_page == 0 || tokens_per_page > kv_max_tokens_per_page)
    return make_error(errc::invalid_argument, "tokens per page ", tokens_per_page, " must be in [1, ",
                      kv_max_tokens_per_page, "]");
  switch (f.format) {
    case kv_format::f16:
      if (f.group != 1) return make_error(errc::invalid_argument, "f16 KV group ", f.group, " must be 1");
      return {};
    case kv_format::f32:
      if (f.group != 1) return make_error(errc::invalid_argument, "f32 KV group ", f.group, " must be 1");
      return {};
    case kv_format::q8_0:
      if (f.group != 32) return make_error(errc::invalid_argument, "q8_0 KV group ", f.group, " must be 32");
      if (head_dim % 32 != 0)
        return make_error(errc::invalid_argument, "q8_0 KV needs head_dim ", head_dim, " to be a multiple of 32");
      return {};
    case kv_format::kivi4:
    case kv_format::kivi2: {
      const unsigned bits = kv_bits(f.format);
      if (f.group == 0 || (f.group * bits) % 32 != 0)
        return make_error(errc::invalid_argument, "KIVI-", bits, " group ", f.group, " must be a positive multiple of ",
                          32 / bits, " (whole 32-bit code planes)");
      if (r == kv_role::key && tokens_per_page % f.group != 0)
        return make_error(errc::invalid_argument, "KIVI key group ", f.group, " must divide the tokens per page ",
                          tokens_per_page);
      if (r == kv_role::value && head_dim % f.group != 0)
        return make_error(errc::invalid_argument, "KIVI value group ", f.group, " must divide head_dim ", head_dim);
      return {};
    }
  }
  return make_error(errc::invalid_argument, "unknown KV format ", static_cast<unsigned>(f.format));
}

namespace detail {
template <class P>
struct kv_precision_map {
  static constexpr bool supported = false;
};
template <>
struct kv_precision_map<precision::f32> {
  static constexpr bool supported = true;
  static constexpr kv_format_desc desc{kv_format::f32, 1};
};
template <>
struct kv_precision_map<precision::f16> {
  static constexpr bool supported = true;
  static constexpr kv_format_desc desc{kv_format::f16, 1};
};
template <>
struct kv_precision_map<precision::q8_0> {
  static constexpr bool supported = true;
  static constexpr kv_format_desc desc{kv_format::q8_0, 32};
};
template <int Bits, std::size_t Group>
struct kv_precision_map<precision::kivi<Bits, Group>> {
  static constexpr bool supported = true;
  static constexpr kv_format_desc desc{Bits == 4 ? kv_format::kivi4 : kv_format::kivi2,
                                       static_cast<std::uint32_t>(Group)};
};
}  // namespace detail

/// Precisions a KV page may be stored in: precision::f32, precision::f16,
/// precision::q8_0, precision::kivi<4, G> and precision::kivi<2, G>.
template <class P>
concept KvPrecision = Precision<P> && detail::kv_precision_map<P>::supported;

/// The run-time descriptor of KV precision P.
template <KvPrecision P>
inline constexpr kv_format_desc kv_format_of = detail::kv_precision_map<P>::desc;

namespace detail {
// The descriptor of P, or f16's for an unsupported P so that only
// paged_kv_view's static_assert reports it.
template <class P>
[[nodiscard]] constexpr kv_format_desc kv_format_or_f16() noexcept {
  if constexpr (KvPrecision<P>) {
    return kv_precision_map<P>::desc;
  } else {
    return kv_format_desc{};
  }
}
}  // namespace detail

/// The type-erased paged view the dispatched kernels take (the template
/// paged_kv_view converts to it with desc()). Same fields and contract as
/// paged_kv_view, with the formats and page sizes as values.
struct paged_kv_desc {
  const std::byte* k_pages = nullptr;
  const std::byte* v_pages = nullptr;
  const std::uint32_t* page_indptr = nullptr;  // batch + 1 entries
  const std::uint32_t* page_ids = nullptr;
  const std::uint32_t* last_page_len = nullptr;  // batch entries
  std::uint32_t batch = 0;
  std::uint32_t n_kv_heads = 0;
  std::uint32_t head_dim = 0;
  std::uint32_t tokens_per_page = 0;
  kv_format_desc k_format{};
  kv_format_desc v_format{};
  std::size_t k_head_bytes = 0;  // one page-head of keys
  std::size_t v_head_bytes = 0;
  std::size_t k_page_bytes = 0;  // n_kv_heads * k_head_bytes
  std::size_t v_page_bytes = 0;

  /// Pages of sequence s.
  [[nodiscard]] std::uint32_t pages(std::size_t s) const noexcept { return page_indptr[s + 1] - page_indptr[s]; }
  /// Tokens held by sequence s.
  [[nodiscard]] std::size_t seq_len(std::size_t s) const noexcept {
    const std::uint32_t n = pages(s);
    return n == 0 ? 0 : std::size_t{n - 1} * tokens_per_page + last_page_len[s];
  }
  /// Tokens held by page `i` (0-based within sequence s).
  [[nodiscard]] std::size_t page_tokens(std::size_t s, std::uint32_t i) const noexcept {
    return i + 1 == pages(s) ? std::size_t{last_page_len[s]} : std::size_t{tokens_per_page};
  }
  /// The keys of KV head h in page i of sequence s.
  [[nodiscard]] const std::byte* k_head(std::size_t s, std::uint32_t i, std::size_t h) const noexcept {
    return k_pages + std::size_t{page_ids[page_indptr[s] + i]} * k_page_bytes + h * k_head_bytes;
  }
  /// The values of KV head h in page i of sequence s.
  [[nodiscard]] const std::byte* v_head(std::size_t s, std::uint32_t i, std::size_t h) const noexcept {
    return v_pages + std::size_t{page_ids[page_indptr[s] + i]} * v_page_bytes + h * v_head_bytes;
  }
};

/// Non-owning view of a batch of sequences' paged KV cache, as produced by
/// the kv layer and read by the attention kernels.
///
/// Template parameters: KPrecision and VPrecision, each one of precision::f16,
/// precision::q8_0, precision::kivi<4, G>, precision::kivi<2, G>, chosen
/// independently (keys tolerate quantization worse than values, so a cold
/// tier may keep q8_0 keys with KIVI-2 values); TokensPerBlock, the tokens of
/// one page (1 .. kv_max_tokens_per_page; a multiple of a KIVI key group).
/// Addressing and byte layouts: the top of ruvllm/kernels/paged_kv_view.hpp.
///
/// Fields are public so the kv layer can fill them directly in its hot path;
/// make() checks every precondition once (a boundary: O(batch + pages)).
/// Pool bases must be 2-byte aligned (64 recommended). Trivially copyable; no
/// call allocates except make() on failure (the error message); thread-safety
/// as for any value.
template <class KPrecision, class VPrecision, std::size_t TokensPerBlock>
struct paged_kv_view {
  static_assert(KvPrecision<KPrecision> && KvPrecision<VPrecision>,
                "paged_kv_view<KPrecision, VPrecision, TokensPerBlock>: KV pages are stored as precision::f16, "
                "precision::q8_0, precision::kivi<4, G> or precision::kivi<2, G>");
  static_assert(TokensPerBlock >= 1 && TokensPerBlock <= kv_max_tokens_per_page,
                "paged_kv_view: TokensPerBlock must be in [1, kv_max_tokens_per_page]");
  static_assert(detail::kv_format_or_f16<KPrecision>().format == kv_format::f16 ||
                    detail::kv_format_or_f16<KPrecision>().format == kv_format::q8_0 ||
                    TokensPerBlock % detail::kv_format_or_f16<KPrecision>().group == 0,
                "paged_kv_view: a KIVI key group spans tokens and must divide TokensPerBlock");

  using k_precision = KPrecision;
  using v_precision = VPrecision;
  static constexpr std::size_t tokens_per_block = TokensPerBlock;
  static constexpr kv_layout layout = kv_layout::head_token_dim;
  static constexpr kv_format_desc k_format = detail::kv_format_or_f16<KPrecision>();
  static constexpr kv_format_desc v_format = detail::kv_format_or_f16<VPrecision>();

  const std::byte* k_pages = nullptr;
  const std::byte* v_pages = nullptr;
  const std::uint32_t* page_indptr = nullptr;
  const std::uint32_t* page_ids = nullptr;
  const std::uint32_t* last_page_len = nullptr;
  std::uint32_t batch = 0;
  std::uint32_t n_kv_heads = 0;
  std::uint32_t head_dim = 0;

  /// Bytes of one page-head of keys (values) for head_dim channels.
  [[nodiscard]] static constexpr std::size_t k_head_bytes(std::size_t head_dim) noexcept {
    return kv_page_head_bytes(k_format, kv_role::key, TokensPerBlock, head_dim);
  }
  [[nodiscard]] static constexpr std::size_t v_head_bytes(std::size_t head_dim) noexcept {
    return kv_page_head_bytes(v_format, kv_role::value, TokensPerBlock, head_dim);
  }
  /// Bytes of one page in the key (value) pool.
  [[nodiscard]] static constexpr std::size_t k_page_bytes(std::size_t n_kv_heads, std::size_t head_dim) noexcept {
    return n_kv_heads * k_head_bytes(head_dim);
  }
  [[nodiscard]] static constexpr std::size_t v_page_bytes(std::size_t n_kv_heads, std::size_t head_dim) noexcept {
    return n_kv_heads * v_head_bytes(head_dim);
  }

  /// A checked view: head_dim and groups as in kv_format_check; n_kv_heads
  /// >= 1; page_indptr non-decreasing; every page id < page_count (the pages
  /// in each pool); last_page_len as in the file comment; pointers non-null
  /// when they are read and pool bases 2-byte aligned.
  [[nodiscard]] static result<paged_kv_view> make(const std::byte* k_pages, const std::byte* v_pages,
                                                  std::size_t page_count, std::span<const std::uint32_t> page_indptr,
                                                  std::span<const std::uint32_t> page_ids,
                                                  std::span<const std::uint32_t> last_page_len, std::size_t n_kv_heads,
                                                  std::size_t head_dim) {
    RUVLLM_TRY(kv_format_check(k_format, kv_role::key, TokensPerBlock, head_dim));
    RUVLLM_TRY(kv_format_check(v_format, kv_role::value, TokensPerBlock, head_dim));
    if (n_kv_heads == 0 || n_kv_heads > 0xFFFF)
      return make_error(errc::invalid_argument, "n_kv_heads ", n_kv_heads, " must be in [1, 65535]");
    if (page_indptr.empty()) return make_error(errc::invalid_argument, "page_indptr needs batch + 1 entries, got 0");
    const std::size_t batch = page_indptr.size() - 1;
    if (last_page_len.size() != batch)
      return make_error(errc::invalid_argument, "last_page_len has ", last_page_len.size(), " entries, expected batch ",
                        batch);
    if (page_indptr.back() > page_ids.size())
      return make_error(errc::out_of_range, "page_indptr ends at ", page_indptr.back(), " past the ", page_ids.size(),
                        " page ids");
    for (std::size_t s = 0; s < batch; ++s) {
      if (page_indptr[s + 1] < page_indptr[s])
        return make_error(errc::invalid_argument, "page_indptr decreases at sequence ", s);
      const std::uint32_t len = last_page_len[s];
      const bool empty = page_indptr[s + 1] == page_indptr[s];
      if (empty ? len != 0 : (len == 0 || len > TokensPerBlock))
        return make_error(errc::invalid_argument, "last_page_len ", len, " of sequence ", s,
                          empty ? " must be 0 (no pages)" : " must be in [1, tokens per page]");
      for (std::uint32_t i = page_indptr[s]; i < page_indptr[s + 1]; ++i)
        if (page_ids[i] >= page_count)
          return make_error(errc::out_of_range, "page id ", page_ids[i], " of sequence ", s, " >= page count ",
                            page_count);
    }
    const bool any_pages = page_indptr.back() > page_indptr.front();
    const auto misaligned = [](const std::byte* p) { return (reinterpret_cast<std::uintptr_t>(p) & 1u) != 0; };
    if (any_pages && (k_pages == nullptr || v_pages == nullptr || misaligned(k_pages) || misaligned(v_pages)))
      return make_error(errc::invalid_argument, "page pools must be non-null and 2-byte aligned");
    paged_kv_view view;
    view.k_pages = k_pages;
    view.v_pages = v_pages;
    view.page_indptr = page_indptr.data();
    view.page_ids = page_ids.data();
    view.last_page_len = last_page_len.data();
    view.batch = static_cast<std::uint32_t>(batch);
    view.n_kv_heads = static_cast<std::uint32_t>(n_kv_heads);
    view.head_dim = static_cast<std::uint32_t>(head_dim);
    return view;
  }

  /// The type-erased form the kernels take.
  [[nodiscard]] paged_kv_desc desc() const noexcept {
    paged_kv_desc d;
    d.k_pages = k_pages;
    d.v_pages = v_pages;
    d.page_indptr = page_indptr;
    d.page_ids = page_ids;
    d.last_page_len = last_page_len;
    d.batch = batch;
    d.n_kv_heads = n_kv_heads;
    d.head_dim = head_dim;
    d.tokens_per_page = static_cast<std::uint32_t>(TokensPerBlock);
    d.k_format = k_format;
    d.v_format = v_format;
    d.k_head_bytes = k_head_bytes(head_dim);
    d.v_head_bytes = v_head_bytes(head_dim);
    d.k_page_bytes = k_page_bytes(n_kv_heads, head_dim);
    d.v_page_bytes = v_page_bytes(n_kv_heads, head_dim);
    return d;
  }

  /// Tokens held by sequence s.
  [[nodiscard]] std::size_t seq_len(std::size_t s) const noexcept {
    const std::uint32_t n = page_indptr[s + 1] - page_indptr[s];
    return n == 0 ? 0 : std::size_t{n - 1} * TokensPerBlock + last_page_len[s];
  }
};

}  // namespace ruvllm::kernels

#endif  // RUVLLM_KERNELS_PAGED_KV_VIEW_HPP
