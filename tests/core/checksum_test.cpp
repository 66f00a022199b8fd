#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ruvllm/core/checksum.hpp"
#include "support/rng.hpp"

namespace checksum_test {

namespace {
// Bit-at-a-time CRC-32C: the definition, independent of the table and the
// instruction paths under test.
std::uint32_t crc32c_bitwise(const std::vector<std::byte>& data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::byte b : data) {
    crc ^= static_cast<std::uint32_t>(b);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
}  // namespace

TEST_CASE("crc32c matches the standard check values", "[core][checksum]") {
  CHECK(ruvllm::crc32c(std::string_view("123456789")) == 0xE3069283u);
  CHECK(ruvllm::crc32c(std::string_view("")) == 0u);
  // RFC 3720 (iSCSI) test vector: 32 bytes of zeros.
  std::vector<std::byte> zeros(32);
  CHECK(ruvllm::crc32c(zeros) == 0x8A9136AAu);
}

TEST_CASE("crc32c hardware, table and bitwise paths agree", "[core][checksum]") {
  ruvllm::test::rng gen(21);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<std::byte> data(gen.uniform_index(0, 300));
    for (auto& b : data) b = static_cast<std::byte>(gen.next_u32());
    const std::uint32_t want = crc32c_bitwise(data);
    CHECK(ruvllm::crc32c(data) == want);
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    CHECK(~ruvllm::detail::crc32c_portable(~0u, p, data.size()) == want);
    // Chaining: the CRC of a split buffer continues from the first part.
    const std::size_t cut = gen.uniform_index(0, data.size());
    const std::span<const std::byte> all(data);
    CHECK(ruvllm::crc32c(all.subspan(cut), ruvllm::crc32c(all.first(cut))) == want);
  }
}

}  // namespace checksum_test
