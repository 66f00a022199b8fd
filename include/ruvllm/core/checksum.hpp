#ifndef RUVLLM_CORE_CHECKSUM_HPP
#define RUVLLM_CORE_CHECKSUM_HPP

// The one checksum of ruvllm's file formats: CRC-32C (Castagnoli), the
// polynomial with a hardware instruction on x86 (SSE4.2) and ARMv8, chosen so
// verifying a multi-gigabyte section runs near memory speed. Check value:
// crc32c("123456789") == 0xE3069283.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#endif

namespace ruvllm {

namespace detail {

inline constexpr std::uint32_t crc32c_poly = 0x82F63B78u;  // reflected 0x1EDC6F41

// Slicing-by-8 tables for CPUs without the instruction.
inline constexpr auto crc32c_tables = [] {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1u) ? crc32c_poly : 0u);
    t[0][i] = c;
  }
  for (std::size_t s = 1; s < 8; ++s)
    for (std::uint32_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
  return t;
}();

[[nodiscard]] inline std::uint32_t crc32c_portable(std::uint32_t crc, const unsigned char* p, std::size_t n) noexcept {
  const auto& t = crc32c_tables;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    word ^= crc;
    crc = t[7][word & 0xFF] ^ t[6][(word >> 8) & 0xFF] ^ t[5][(word >> 16) & 0xFF] ^ t[4][(word >> 24) & 0xFF] ^
          t[3][(word >> 32) & 0xFF] ^ t[2][(word >> 40) & 0xFF] ^ t[1][(word >> 48) & 0xFF] ^ t[0][word >> 56];
  }
  for (; n > 0; --n, ++p) crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xFFu];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_sse42(std::uint32_t crc, const unsigned char* p,
                                                                    std::size_t n) noexcept {
  std::uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

[[nodiscard]] inline bool cpu_has_sse42() noexcept {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace detail

/// CRC-32C of `bytes`, continuing from `previous` (the CRC of the bytes that
/// came before), so crc32c(b, crc32c(a)) == crc32c(a followed by b).
[[nodiscard]] inline std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t previous = 0) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::uint32_t crc = ~previous;
#if defined(__x86_64__)
  if (detail::cpu_has_sse42()) return ~detail::crc32c_sse42(crc, p, bytes.size());
#endif
  return ~detail::crc32c_portable(crc, p, bytes.size());
}

[[nodiscard]] inline std::uint32_t crc32c(std::string_view text, std::uint32_t previous = 0) noexcept {
  return crc32c(std::as_bytes(std::span<const char>(text.data(), text.size())), previous);
}

}  // namespace ruvllm

#endif  // RUVLLM_CORE_CHECKSUM_HPP
