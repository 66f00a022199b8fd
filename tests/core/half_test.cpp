// Tests for ruvllm/core/half.hpp.
//
// The conversions promise bit-identity with F16C and AVX512-BF16, so where the
// CPU has those instructions the bulk checks run against them. Everywhere,
// they are also checked against independent references that round through
// double arithmetic (nearest neighbour by distance, ties to even) instead of
// the header's integer add-and-shift; cheaper long-hand integer references,
// validated against those, stand in for missing hardware in the exhaustive
// [slow] test.

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "ruvllm/core/half.hpp"
#include "support/rng.hpp"

#if defined(__x86_64__)
#define RUVLLM_HALF_TEST_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define RUVLLM_HALF_TEST_X86 0
#endif

namespace half_test {

using ruvllm::bf16;
using ruvllm::f16;

namespace {

// GGUF block structs embed f16 directly; this is ggml's block_q8_0.
struct test_block_q8_0 {
  f16 d;
  std::int8_t qs[32];
};
static_assert(sizeof(test_block_q8_0) == 34);
static_assert(std::is_trivial_v<f16> && std::is_trivial_v<bf16>);

// The API is usable in constant expressions, NaNs included.
static_assert(ruvllm::to_f16(1.0f).bits == 0x3C00);
static_assert(ruvllm::to_float(f16{0xC000}) == -2.0f);
static_assert(ruvllm::to_bf16(1.0f).bits == 0x3F80);
static_assert(ruvllm::to_float(bf16{0x3F80}) == 1.0f);
static_assert(ruvllm::to_f16(std::bit_cast<float>(0x7F80'0001u)).bits == 0x7E00);
static_assert(std::bit_cast<std::uint32_t>(ruvllm::to_float(f16{0x7C01})) == 0x7FC0'2000u);
static_assert(ruvllm::to_bf16(std::bit_cast<float>(0xFF80'0001u)).bits == 0xFFC0);
static_assert(f16{0x3C00} == f16{0x3C00} && f16{0x0000} != f16{0x8000});

std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
float float_of(std::uint32_t u) { return std::bit_cast<float>(u); }

std::string hex(std::uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*X", digits, static_cast<unsigned>(v));
  return buf;
}
std::string hex16(std::uint16_t v) { return hex(v, 4); }
std::string hex32(std::uint32_t v) { return hex(v, 8); }

// ---------------------------------------------------------------------------
// Independent references. NaN and denormal-input rules are the documented
// hardware ones; everything else is "nearest representable value by distance,
// ties to the even encoding", computed in double (exact for these operands).

// Encodes a non-negative double that is exactly an f16 value, or 2^16 for inf.
std::uint16_t encode_f16_value(double v) {
  if (v >= 65536.0) return 0x7C00;
  if (v == 0.0) return 0;
  int e = 0;
  std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1): v in [2^(e-1), 2^e)
  const int exponent = e - 1;
  if (exponent < -14) return static_cast<std::uint16_t>(std::ldexp(v, 24));
  const auto mantissa = static_cast<std::uint32_t>(std::ldexp(v, 10 - exponent)) - 1024u;
  return static_cast<std::uint16_t>(static_cast<std::uint32_t>(exponent + 15) << 10 | mantissa);
}

std::uint16_t ref_to_f16(float x) {
  const std::uint32_t u = bits_of(x);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  if (std::isnan(x)) return static_cast<std::uint16_t>(sign | 0x7E00u | ((u >> 13) & 0x3FFu));
  if (std::isinf(x)) return static_cast<std::uint16_t>(sign | 0x7C00u);
  const double a = std::fabs(static_cast<double>(x));
  int e = 0;
  std::frexp(a, &e);
  const int exponent = a == 0.0 ? -14 : std::max(e - 1, -14);
  const double ulp = std::ldexp(1.0, exponent - 10);
  const double q = std::floor(a / ulp);
  const double lo = q * ulp;
  const double hi = lo + ulp;
  const double below = a - lo;
  const double above = hi - a;
  const bool take_hi = above < below || (above == below && std::fmod(q, 2.0) != 0.0);
  return static_cast<std::uint16_t>(sign | encode_f16_value(take_hi ? hi : lo));
}

std::uint16_t ref_to_bf16(float x) {
  const std::uint32_t u = bits_of(x);
  if (std::isnan(x)) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  if (std::fpclassify(x) == FP_SUBNORMAL || x == 0.0f) {
    return static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  }
  if (std::isinf(x)) return static_cast<std::uint16_t>(u >> 16);
  // The two bf16 magnitudes around |x|: truncation, and one bf16 ulp above.
  const std::uint32_t lo_bits = (u & 0x7FFF'FFFFu) & 0xFFFF'0000u;
  const std::uint32_t hi_bits = lo_bits + 0x1'0000u;
  const double a = std::fabs(static_cast<double>(x));
  const double lo = static_cast<double>(float_of(lo_bits));
  const double hi = hi_bits == 0x7F80'0000u ? std::ldexp(1.0, 128) : static_cast<double>(float_of(hi_bits));
  const double below = a - lo;
  const double above = hi - a;
  const bool take_hi = above < below || (above == below && ((lo_bits >> 16) & 1u) != 0);
  return static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | ((take_hi ? hi_bits : lo_bits) >> 16));
}

// Long-hand integer references, cheap enough for all 2^32 floats when the
// hardware is missing: an explicit remainder-versus-half comparison, where
// the header adds a rounding bias. The sample test checks them against the
// double-arithmetic references above.
std::uint16_t longhand_to_f16(std::uint32_t u) {
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t biased = (u >> 23) & 0xFFu;
  const std::uint32_t fraction = u & 0x7FFFFFu;
  if (biased == 0xFFu) {
    return static_cast<std::uint16_t>(sign | 0x7C00u | (fraction != 0 ? 0x200u | fraction >> 13 : 0u));
  }
  // value = significand * 2^(exponent - 23)
  const int exponent = biased == 0 ? -126 : static_cast<int>(biased) - 127;
  const std::uint32_t significand = biased == 0 ? fraction : fraction | 0x800000u;
  // Keep 11 bits for normal f16 results, fewer below 2^-14.
  const int target = exponent < -14 ? -14 : exponent;
  const int drop = 13 + (target - exponent);
  std::uint32_t q = 0;
  if (drop <= 31) {
    q = significand >> drop;
    const std::uint32_t rest = significand & ((1u << drop) - 1u);
    const std::uint32_t half = 1u << (drop - 1);
    if (rest > half || (rest == half && (q & 1u) != 0)) ++q;
  }
  // q counts units of 2^(target - 10), implicit bit included; it may have
  // carried to 2^11, which lands on the next exponent.
  const std::uint32_t magnitude = (static_cast<std::uint32_t>(target + 14) << 10) + q;
  return static_cast<std::uint16_t>(sign | (magnitude >= 0x7C00u ? 0x7C00u : magnitude));
}

std::uint16_t longhand_to_bf16(std::uint32_t u) {
  const std::uint32_t biased = (u >> 23) & 0xFFu;
  const std::uint32_t fraction = u & 0x7FFFFFu;
  auto upper = static_cast<std::uint16_t>(u >> 16);
  if (biased == 0xFFu) return fraction != 0 ? static_cast<std::uint16_t>(upper | 0x40u) : upper;
  if (biased == 0) return static_cast<std::uint16_t>(upper & 0x8000u);
  const std::uint32_t rest = u & 0xFFFFu;
  if (rest > 0x8000u || (rest == 0x8000u && (upper & 1u) != 0)) ++upper;  // may carry into inf
  return upper;
}

// ---------------------------------------------------------------------------
// Hardware conversions, compiled for their ISA and called only after a
// runtime CPU check.

#if RUVLLM_HALF_TEST_X86
bool cpu_has_f16c() {
#if defined(__clang__)
  // clang 14 rejects "f16c" in __builtin_cpu_supports: ask CPUID directly.
  // F16C instructions are VEX-encoded, so the OS must also save YMM state.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const bool f16c = (ecx & bit_F16C) != 0;
  const bool avx = (ecx & bit_AVX) != 0;
  const bool osxsave = (ecx & bit_OSXSAVE) != 0;
  if (!(f16c && avx && osxsave)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  return (xcr0_lo & 0x6u) == 0x6u;  // XMM and YMM state enabled
#else
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
#endif
}

// BW and VL too: g++ 12 may store a __m256bh with an EVEX vmovdqu16 ymm,
// which needs them; every AVX512-BF16 CPU has both.
bool cpu_has_avx512bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

__attribute__((target("f16c"))) float hw_f16_to_float(std::uint16_t h) { return _cvtsh_ss(h); }

#if defined(__clang__)
#pragma clang diagnostic push
// clang 14's _cvtss_sh is a macro built on a compound literal.
#pragma clang diagnostic ignored "-Wc99-extensions"
#endif
__attribute__((target("f16c"))) std::uint16_t hw_float_to_f16(float x) {
  return static_cast<std::uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

// n must be a multiple of 8.
__attribute__((target("avx,f16c"))) void hw_float_to_f16_n(const float* in, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
}

// n must be a multiple of 16.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void hw_float_to_bf16_n(const float* in,
                                                                                        std::uint16_t* out,
                                                                                        std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));
    std::memcpy(out + i, &b, sizeof b);
  }
}
#else
bool cpu_has_f16c() { return false; }
bool cpu_has_avx512bf16() { return false; }
float hw_f16_to_float(std::uint16_t) { return 0.0f; }
void hw_float_to_f16_n(const float*, std::uint16_t*, std::size_t) {}
void hw_float_to_bf16_n(const float*, std::uint16_t*, std::size_t) {}
#endif

// ---------------------------------------------------------------------------
// Mismatch bookkeeping for the bulk tests: a count and the first mismatch,
// which is all a failure report needs.

struct mismatches {
  explicit mismatches(int result_digits = 4) : digits(result_digits) {}

  int digits;  // hex digits of the results: 4 for f16/bf16, 8 for float
  std::uint64_t count = 0;
  std::uint32_t input = 0;
  std::uint32_t got = 0;
  std::uint32_t want = 0;

  void add(std::uint32_t in, std::uint32_t g, std::uint32_t w) {
    if (count++ == 0) {
      input = in;
      got = g;
      want = w;
    }
  }
  // Keeps the first mismatch of the earlier range.
  void merge(const mismatches& later) {
    if (count == 0) {
      *this = later;
    } else {
      count += later.count;
    }
  }
  std::string describe(const char* what) const {
    if (count == 0) return std::string(what) + ": no mismatches";
    return std::string(what) + ": " + std::to_string(count) + " mismatches; first input " + hex(input, 8) + " gave " +
           hex(got, digits) + ", expected " + hex(want, digits);
  }
};

// INFO is scoped, so each report stays with its own check.
void check_none(const mismatches& m, const char* what) {
  INFO(m.describe(what));
  CHECK(m.count == 0);
}

// Seeded random float bit patterns plus every boundary pattern: each sign and
// exponent with the mantissas that sit at, just below and just above the
// rounding points of f16 (normal and every subnormal position) and bf16.
std::vector<std::uint32_t> sample_patterns() {
  std::vector<std::uint32_t> out;
  for (std::uint32_t sign = 0; sign < 2; ++sign) {
    for (std::uint32_t exponent = 0; exponent < 256; ++exponent) {
      const std::uint32_t head = sign << 31 | exponent << 23;
      for (std::uint32_t m : {0x0u, 0x1u, 0x1000u, 0xFFFu, 0x1FFFu, 0x2000u, 0x7FFFFFu}) {
        out.push_back(head | m);
      }
      for (std::uint32_t k = 0; k < 23; ++k) {
        const std::uint32_t half = 1u << k;
        for (std::uint32_t m : {half, half - 1, half + 1, 3 * half, 3 * half - 1, 3 * half + 1}) {
          out.push_back(head | (m & 0x7FFFFFu));
        }
      }
    }
  }
  ruvllm::test::rng gen(41);
  for (std::size_t i = 0; i < (std::size_t{1} << 24); ++i) out.push_back(gen.next_u32());
  // Pad so the 8- and 16-wide hardware paths need no tail.
  while (out.size() % 16 != 0) out.push_back(0x3F80'0000u);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------

TEST_CASE("f16 and bf16 are 2-byte trivially copyable aggregates", "[core][half]") {
  STATIC_REQUIRE(sizeof(f16) == 2);
  STATIC_REQUIRE(alignof(f16) == 2);
  STATIC_REQUIRE(sizeof(bf16) == 2);
  STATIC_REQUIRE(alignof(bf16) == 2);
  STATIC_REQUIRE(std::is_trivially_copyable_v<f16>);
  STATIC_REQUIRE(std::is_standard_layout_v<bf16>);
  STATIC_REQUIRE(sizeof(test_block_q8_0) == 34);
  const test_block_q8_0 block{f16{0x3C00}, {1, 2, 3}};
  unsigned char raw[sizeof block];
  std::memcpy(raw, &block, sizeof block);
  if constexpr (std::endian::native == std::endian::little) {  // GGUF's byte order
    CHECK(raw[0] == 0x00);
    CHECK(raw[1] == 0x3C);
  }
  CHECK(raw[2] == 1);  // qs right after the 2-byte scale, no padding
}

TEST_CASE("to_f16 hand-checked values", "[core][half]") {
  const auto h = [](float x) { return hex16(ruvllm::to_f16(x).bits); };
  const auto hb = [](std::uint32_t u) { return hex16(ruvllm::to_f16(float_of(u)).bits); };

  CHECK(h(1.0f) == "0x3C00");
  CHECK(h(-2.0f) == "0xC000");
  CHECK(h(0.5f) == "0x3800");
  CHECK(h(0.1f) == "0x2E66");
  CHECK(h(0.0f) == "0x0000");
  CHECK(h(-0.0f) == "0x8000");
  CHECK(h(std::numeric_limits<float>::infinity()) == "0x7C00");
  CHECK(h(-std::numeric_limits<float>::infinity()) == "0xFC00");

  // Top of the range: 65504 is the largest finite f16; 65520 is the midpoint
  // to 2^16 and ties to the even neighbour, which is inf.
  CHECK(h(65504.0f) == "0x7BFF");
  CHECK(hb(0x477F'EFFFu) == "0x7BFF");  // just below 65520
  CHECK(h(65520.0f) == "0x7C00");
  CHECK(h(-65520.0f) == "0xFC00");
  CHECK(h(1.0e6f) == "0x7C00");
  CHECK(h(std::numeric_limits<float>::max()) == "0x7C00");

  // Subnormals (units of 2^-24).
  CHECK(h(std::ldexp(1.0f, -24)) == "0x0001");  // smallest subnormal
  CHECK(h(std::ldexp(1.0f, -25)) == "0x0000");  // tie between 0 and 1 unit: even is 0
  CHECK(h(-std::ldexp(1.0f, -25)) == "0x8000");
  CHECK(hb(0x3300'0001u) == "0x0001");                    // just above 2^-25
  CHECK(h(3.0f * std::ldexp(1.0f, -26)) == "0x0001");     // 0.75 units: up
  CHECK(h(3.0f * std::ldexp(1.0f, -25)) == "0x0002");     // 1.5 units: tie, to even 2
  CHECK(h(5.0f * std::ldexp(1.0f, -25)) == "0x0002");     // 2.5 units: tie, to even 2
  CHECK(h(1023.0f * std::ldexp(1.0f, -24)) == "0x03FF");  // largest subnormal
  CHECK(h(1023.5f * std::ldexp(1.0f, -24)) == "0x0400");  // tie into the smallest normal
  CHECK(h(std::ldexp(1.0f, -14)) == "0x0400");
  CHECK(hb(0x0000'0001u) == "0x0000");  // float denormals are far below 2^-25
  CHECK(hb(0x8000'0001u) == "0x8000");
  CHECK(hb(0x007F'FFFFu) == "0x0000");

  // Ties to even in the normal range (f16 ulp at 1.0 is 2^-10).
  CHECK(h(1.0f + std::ldexp(1.0f, -11)) == "0x3C00");                          // tie, lsb 0 stays
  CHECK(h(1.0f + 3.0f * std::ldexp(1.0f, -11)) == "0x3C02");                   // tie, lsb 1 rounds up
  CHECK(h(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -23)) == "0x3C01");  // above the tie
  CHECK(h(2049.0f) == "0x6800");                                               // ulp 2 at 2048: tie to 2048
  CHECK(h(2051.0f) == "0x6802");                                               // tie to 2052
  CHECK(h(-2051.0f) == "0xE802");
  CHECK(h(2047.0f) == "0x67FF");  // 2047 is exact (ulp 1 below 2048)

  // NaNs: sign kept, top 10 payload bits kept, quiet bit forced.
  CHECK(hb(0x7FC0'0000u) == "0x7E00");  // default quiet NaN
  CHECK(hb(0xFFC0'0000u) == "0xFE00");
  CHECK(hb(0x7F80'0001u) == "0x7E00");  // sNaN, payload only in dropped bits
  CHECK(hb(0x7FA0'0000u) == "0x7F00");  // sNaN, payload kept, made quiet
  CHECK(hb(0x7F80'2000u) == "0x7E01");  // lowest kept payload bit
  CHECK(hb(0xFFFF'FFFFu) == "0xFFFF");
}

TEST_CASE("to_float(f16) hand-checked values", "[core][half]") {
  const auto f = [](std::uint16_t b) { return hex32(bits_of(ruvllm::to_float(f16{b}))); };
  CHECK(ruvllm::to_float(f16{0x3C00}) == 1.0f);
  CHECK(ruvllm::to_float(f16{0xC000}) == -2.0f);
  CHECK(ruvllm::to_float(f16{0x7BFF}) == 65504.0f);
  CHECK(ruvllm::to_float(f16{0x0001}) == std::ldexp(1.0f, -24));
  CHECK(ruvllm::to_float(f16{0x03FF}) == 1023.0f * std::ldexp(1.0f, -24));
  CHECK(ruvllm::to_float(f16{0x0400}) == std::ldexp(1.0f, -14));
  CHECK(f(0x0000) == "0x00000000");
  CHECK(f(0x8000) == "0x80000000");
  CHECK(f(0x8001) == "0xB3800000");
  CHECK(f(0x7C00) == "0x7F800000");
  CHECK(f(0xFC00) == "0xFF800000");
  CHECK(f(0x7E00) == "0x7FC00000");  // quiet NaN keeps its (empty) payload
  CHECK(f(0x7C01) == "0x7FC02000");  // sNaN: payload shifted up, made quiet
  CHECK(f(0xFDFF) == "0xFFFFE000");
}

TEST_CASE("bf16 hand-checked values", "[core][half]") {
  const auto b = [](float x) { return hex16(ruvllm::to_bf16(x).bits); };
  const auto bb = [](std::uint32_t u) { return hex16(ruvllm::to_bf16(float_of(u)).bits); };

  CHECK(b(1.0f) == "0x3F80");
  CHECK(b(-2.0f) == "0xC000");
  CHECK(b(0.0f) == "0x0000");
  CHECK(b(-0.0f) == "0x8000");
  CHECK(b(1.00390625f) == "0x3F80");                          // 1 + 2^-8: tie, lsb 0 stays
  CHECK(b(1.01171875f) == "0x3F82");                          // 1 + 3*2^-8: tie, lsb 1 rounds up
  CHECK(b(1.00390625f + std::ldexp(1.0f, -23)) == "0x3F81");  // above the tie
  CHECK(b(std::numeric_limits<float>::infinity()) == "0x7F80");
  CHECK(b(-std::numeric_limits<float>::infinity()) == "0xFF80");
  CHECK(bb(0x7F7F'7FFFu) == "0x7F7F");  // below the midpoint to 2^128
  CHECK(bb(0x7F7F'8000u) == "0x7F80");  // midpoint, odd lsb: rounds to inf
  CHECK(b(std::numeric_limits<float>::max()) == "0x7F80");
  CHECK(b(-std::numeric_limits<float>::max()) == "0xFF80");
  CHECK(bb(0x0080'0000u) == "0x0080");  // smallest normal
  CHECK(bb(0x00FF'FFFFu) == "0x0100");
  // Denormal inputs are zero to VCVTNEPS2BF16.
  CHECK(bb(0x0000'0001u) == "0x0000");
  CHECK(bb(0x0040'0000u) == "0x0000");
  CHECK(bb(0x807F'FFFFu) == "0x8000");
  // NaNs: sign and top 7 payload bits kept (truncated), quiet bit forced.
  CHECK(bb(0x7FC0'0000u) == "0x7FC0");
  CHECK(bb(0x7F80'0001u) == "0x7FC0");
  CHECK(bb(0xFF81'0000u) == "0xFFC1");
  CHECK(bb(0x7FBF'FFFFu) == "0x7FFF");

  CHECK(ruvllm::to_float(bf16{0x3F80}) == 1.0f);
  CHECK(ruvllm::to_float(bf16{0xC049}) == -3.140625f);
  CHECK(hex32(bits_of(ruvllm::to_float(bf16{0x0001}))) == "0x00010000");
  CHECK(hex32(bits_of(ruvllm::to_float(bf16{0x7F81}))) == "0x7F810000");  // sNaN stays an sNaN
}

TEST_CASE("to_float(f16) is exact, and f16 -> float -> f16 changes only sNaNs", "[core][half]") {
  // Rule: the widened value is exactly sign * significand * 2^(exponent - 25)
  // (ldexp, independent of the header's bit assembly); a NaN widens to a
  // quiet float NaN carrying the same sign and payload. Narrowing back gives
  // the same bits, except that a NaN with the quiet bit (0x0200) clear comes
  // back with it set.
  mismatches widen(8), round_trip, vs_reference;
  for (std::uint32_t i = 0; i < 0x1'0000u; ++i) {
    const auto bits = static_cast<std::uint16_t>(i);
    const std::uint32_t sign = (i & 0x8000u) << 16;
    const std::uint32_t exponent = (i >> 10) & 0x1Fu;
    const std::uint32_t mantissa = i & 0x3FFu;
    const bool nan = exponent == 0x1Fu && mantissa != 0;
    std::uint32_t widened = 0;
    if (exponent == 0x1Fu) {
      widened = sign | 0x7F80'0000u | (nan ? 0x0040'0000u | mantissa << 13 : 0u);
    } else {
      const double magnitude = exponent == 0
                                   ? std::ldexp(static_cast<double>(mantissa), -24)
                                   : std::ldexp(static_cast<double>(mantissa + 1024u), static_cast<int>(exponent) - 25);
      widened = sign | bits_of(static_cast<float>(magnitude));
    }
    const float x = ruvllm::to_float(f16{bits});
    if (bits_of(x) != widened) widen.add(i, bits_of(x), widened);

    const auto want = static_cast<std::uint16_t>(nan ? bits | 0x0200u : bits);
    const std::uint16_t got = ruvllm::to_f16(x).bits;
    if (got != want) round_trip.add(i, got, want);
    const std::uint16_t ref = ref_to_f16(x);
    if (ref != want) vs_reference.add(i, ref, want);
  }
  check_none(widen, "to_float(f16) vs ldexp");
  check_none(round_trip, "f16 -> float -> f16");
  check_none(vs_reference, "reference narrowing of the widened value");
}

TEST_CASE("to_float(f16) matches F16C on all 65536 patterns", "[core][half]") {
  if (!cpu_has_f16c()) {
    WARN("F16C not available on this CPU: hardware comparison of to_float(f16) skipped");
    return;
  }
  mismatches diff(8);
  for (std::uint32_t i = 0; i < 0x1'0000u; ++i) {
    const auto bits = static_cast<std::uint16_t>(i);
    const std::uint32_t got = bits_of(ruvllm::to_float(f16{bits}));
    const std::uint32_t want = bits_of(hw_f16_to_float(bits));
    if (got != want) diff.add(i, got, want);
  }
  check_none(diff, "to_float(f16) vs _cvtsh_ss");
}

TEST_CASE("every bf16 survives bf16 -> float -> bf16 except subnormals and sNaNs", "[core][half]") {
  // Rule: the widening is exact, so bits are unchanged, except that NaNs get
  // the quiet bit (0x0040) and subnormals become signed zero (denormal
  // inputs are zero to VCVTNEPS2BF16).
  mismatches widen(8), diff;
  for (std::uint32_t i = 0; i < 0x1'0000u; ++i) {
    const auto bits = static_cast<std::uint16_t>(i);
    const float x = ruvllm::to_float(bf16{bits});
    if (bits_of(x) != std::uint32_t{bits} << 16) widen.add(i, bits_of(x), std::uint32_t{bits} << 16);
    const bool nan = (bits & 0x7F80u) == 0x7F80u && (bits & 0x007Fu) != 0;
    const bool subnormal = (bits & 0x7F80u) == 0 && (bits & 0x007Fu) != 0;
    const auto want = static_cast<std::uint16_t>(nan ? bits | 0x0040u : subnormal ? bits & 0x8000u : bits);
    const std::uint16_t got = ruvllm::to_bf16(x).bits;
    if (got != want) diff.add(i, got, want);
  }
  check_none(widen, "to_float(bf16) vs shift");
  check_none(diff, "bf16 -> float -> bf16");
}

TEST_CASE("to_f16 and to_bf16 on random and boundary floats", "[core][half]") {
  INFO("seed " << ruvllm::test::base_seed() << " (RUVLLM_TEST_SEED), stream 41");
  const std::vector<std::uint32_t> patterns = sample_patterns();
  std::vector<float> in(patterns.size());
  std::memcpy(in.data(), patterns.data(), patterns.size() * sizeof(float));

  mismatches f16_ref, bf16_ref;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint16_t h = ruvllm::to_f16(in[i]).bits;
    const std::uint16_t hr = ref_to_f16(in[i]);
    if (h != hr) f16_ref.add(patterns[i], h, hr);
    const std::uint16_t b = ruvllm::to_bf16(in[i]).bits;
    const std::uint16_t br = ref_to_bf16(in[i]);
    if (b != br) bf16_ref.add(patterns[i], b, br);
  }
  check_none(f16_ref, "to_f16 vs double-rounding reference");
  check_none(bf16_ref, "to_bf16 vs double-rounding reference");

  // The long-hand references stand in for hardware in the exhaustive test.
  mismatches f16_longhand, bf16_longhand;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint16_t h = longhand_to_f16(patterns[i]);
    const std::uint16_t hr = ref_to_f16(in[i]);
    if (h != hr) f16_longhand.add(patterns[i], h, hr);
    const std::uint16_t b = longhand_to_bf16(patterns[i]);
    const std::uint16_t br = ref_to_bf16(in[i]);
    if (b != br) bf16_longhand.add(patterns[i], b, br);
  }
  check_none(f16_longhand, "long-hand f16 reference vs double-rounding reference");
  check_none(bf16_longhand, "long-hand bf16 reference vs double-rounding reference");

  std::vector<std::uint16_t> hw(in.size());
  if (cpu_has_f16c()) {
    hw_float_to_f16_n(in.data(), hw.data(), in.size());
    mismatches diff;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::uint16_t got = ruvllm::to_f16(in[i]).bits;
      if (got != hw[i]) diff.add(patterns[i], got, hw[i]);
    }
    check_none(diff, "to_f16 vs VCVTPS2PH (8-wide)");
#if RUVLLM_HALF_TEST_X86
    // The scalar intrinsic named by the contract, on the same inputs.
    mismatches scalar;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::uint16_t got = ruvllm::to_f16(in[i]).bits;
      const std::uint16_t want = hw_float_to_f16(in[i]);
      if (got != want) scalar.add(patterns[i], got, want);
    }
    check_none(scalar, "to_f16 vs _cvtss_sh");
#endif
  } else {
    WARN("F16C not available on this CPU: hardware comparison of to_f16 skipped");
  }

  if (cpu_has_avx512bf16()) {
    hw_float_to_bf16_n(in.data(), hw.data(), in.size());
    mismatches diff;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::uint16_t got = ruvllm::to_bf16(in[i]).bits;
      if (got != hw[i]) diff.add(patterns[i], got, hw[i]);
    }
    check_none(diff, "to_bf16 vs VCVTNEPS2BF16 (16-wide)");
  } else {
    WARN(
        "AVX512-BF16 not available on this CPU: hardware comparison of to_bf16 skipped "
        "(checked against the reference only)");
  }
}

TEST_CASE("to_f16 and to_bf16 on all 2^32 floats", "[core][half][slow]") {
  const bool f16_hw = cpu_has_f16c();
  const bool bf16_hw = cpu_has_avx512bf16();
  if (!f16_hw) {
    WARN(
        "F16C not available on this CPU: to_f16 checked against the long-hand reference on "
        "all floats, hardware comparison skipped");
  }
  if (!bf16_hw) {
    WARN(
        "AVX512-BF16 not available on this CPU: to_bf16 checked against the long-hand "
        "reference on all floats, hardware comparison skipped");
  }

  struct result {
    mismatches narrow_h, narrow_b;
  };
  const auto check_range = [f16_hw, bf16_hw](std::uint64_t begin, std::uint64_t end, result& r) {
    constexpr std::size_t block = 4096;
    std::array<float, block> in;
    std::array<std::uint16_t, block> want_h, want_b;
    for (std::uint64_t base = begin; base < end; base += block) {
      for (std::size_t i = 0; i < block; ++i) in[i] = float_of(static_cast<std::uint32_t>(base + i));
      if (f16_hw) {
        hw_float_to_f16_n(in.data(), want_h.data(), block);
      } else {
        for (std::size_t i = 0; i < block; ++i) want_h[i] = longhand_to_f16(static_cast<std::uint32_t>(base + i));
      }
      if (bf16_hw) {
        hw_float_to_bf16_n(in.data(), want_b.data(), block);
      } else {
        for (std::size_t i = 0; i < block; ++i) want_b[i] = longhand_to_bf16(static_cast<std::uint32_t>(base + i));
      }
      for (std::size_t i = 0; i < block; ++i) {
        const std::uint16_t h = ruvllm::to_f16(in[i]).bits;
        const std::uint16_t b = ruvllm::to_bf16(in[i]).bits;
        if (h != want_h[i]) r.narrow_h.add(static_cast<std::uint32_t>(base + i), h, want_h[i]);
        if (b != want_b[i]) r.narrow_b.add(static_cast<std::uint32_t>(base + i), b, want_b[i]);
      }
    }
  };

  constexpr std::uint64_t total = std::uint64_t{1} << 32;
  std::array<result, 2> parts;
  std::thread upper(check_range, total / 2, total, std::ref(parts[1]));
  check_range(0, total / 2, parts[0]);
  upper.join();

  mismatches f16_all = parts[0].narrow_h;
  f16_all.merge(parts[1].narrow_h);
  mismatches bf16_all = parts[0].narrow_b;
  bf16_all.merge(parts[1].narrow_b);
  INFO(f16_all.describe(f16_hw ? "to_f16 vs VCVTPS2PH" : "to_f16 vs long-hand reference"));
  INFO(bf16_all.describe(bf16_hw ? "to_bf16 vs VCVTNEPS2BF16" : "to_bf16 vs long-hand reference"));
  REQUIRE(f16_all.count == 0);
  REQUIRE(bf16_all.count == 0);
}

}  // namespace half_test
