#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ruvllm/core/byte_reader.hpp"
#include "support/rng.hpp"

namespace byte_reader_test {

namespace {
std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}
}  // namespace

TEST_CASE("byte_reader reads little-endian values and strings", "[core][byte_reader]") {
  const auto data = bytes_of({0x01, 0x02, 0x03, 0x04, 'h', 'i', 0xFF, 0x7F});
  ruvllm::byte_reader r(data, "test.bin");
  CHECK(r.read<std::uint16_t>().value() == 0x0201);
  CHECK(r.read<std::uint8_t>().value() == 0x03);
  CHECK(r.read<std::uint8_t>().value() == 0x04);
  CHECK(r.read_string(2).value() == "hi");
  CHECK(r.read<std::int16_t>().value() == 0x7FFF);
  CHECK(r.remaining() == 0);
}

TEST_CASE("byte_reader reports truncation with file and offset", "[core][byte_reader]") {
  const auto data = bytes_of({1, 2, 3});
  ruvllm::byte_reader r(data, "model.gguf", 100);
  REQUIRE(r.skip(2));
  auto v = r.read<std::uint32_t>("tensor count");
  REQUIRE_FALSE(v);
  CHECK(v.error().code() == ruvllm::errc::corrupt_data);
  CHECK(v.error().file() == "model.gguf");
  CHECK(v.error().offset() == 102);
  CHECK(v.error().message() == "truncated: tensor count needs 4 bytes but 1 remain");
  CHECK(r.position() == 2);  // a failed read does not move the cursor
  CHECK_FALSE(r.read_bytes(std::uint64_t{1} << 63));
  CHECK_FALSE(r.seek(4));
  CHECK(r.seek(3));
}

TEST_CASE("byte_reader aligns in file offsets", "[core][byte_reader]") {
  std::vector<std::byte> data(64);
  ruvllm::byte_reader r(data, "x", 30);
  REQUIRE(r.align_to(32));
  CHECK(r.file_offset() == 32);
  REQUIRE(r.align_to(32));
  CHECK(r.file_offset() == 32);
  CHECK_FALSE(r.align_to(24));
  CHECK_FALSE(r.align_to(0));
  REQUIRE(r.skip(1));
  CHECK_FALSE(r.align_to(128));  // padding runs past the end
}

TEST_CASE("checked arithmetic catches overflow", "[core][byte_reader]") {
  CHECK(ruvllm::checked_mul(1u << 20, 1u << 20, "n").value() == (std::uint64_t{1} << 40));
  CHECK_FALSE(ruvllm::checked_mul(std::uint64_t{1} << 40, std::uint64_t{1} << 40, "n"));
  CHECK_FALSE(ruvllm::checked_add(~std::uint64_t{0}, 1, "n"));
  CHECK(ruvllm::checked_add(2, 3, "n").value() == 5);
}

TEST_CASE("byte_reader never reads out of bounds on random operations", "[core][byte_reader]") {
  ruvllm::test::rng gen(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::byte> data(gen.uniform_index(0, 40));
    for (auto& b : data) b = static_cast<std::byte>(gen.next_u32());
    ruvllm::byte_reader r(data, "fuzz");
    std::size_t model_pos = 0;  // a simple model of the cursor
    for (int op = 0; op < 30; ++op) {
      const std::size_t n = gen.uniform_index(0, 12);
      const bool fits = n <= data.size() - model_pos;
      switch (gen.uniform_index(0, 2)) {
        case 0: {
          auto got = r.read_bytes(n);
          REQUIRE(static_cast<bool>(got) == fits);
          if (got) {
            CHECK(std::memcmp(got->data(), data.data() + model_pos, n) == 0);
            model_pos += n;
          }
          break;
        }
        case 1: {
          auto got = r.read<std::uint32_t>();
          const bool fits4 = 4 <= data.size() - model_pos;
          REQUIRE(static_cast<bool>(got) == fits4);
          if (got) model_pos += 4;
          break;
        }
        default: {
          REQUIRE(static_cast<bool>(r.skip(n)) == fits);
          if (fits) model_pos += n;
        }
      }
      REQUIRE(r.position() == model_pos);
    }
  }
}

}  // namespace byte_reader_test
