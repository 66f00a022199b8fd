#include <catch2/catch.hpp>

#include <cstdint>

#include "ruvllm/core/aligned_buffer.hpp"

namespace aligned_buffer_test {

TEST_CASE("aligned_buffer allocates zeroed, aligned storage", "[core][aligned_buffer]") {
  auto r = ruvllm::aligned_buffer<float>::allocate(1000);
  REQUIRE(r);
  auto& buf = *r;
  CHECK(buf.size() == 1000);
  CHECK(reinterpret_cast<std::uintptr_t>(buf.data()) % 64 == 0);
  for (float x : buf) CHECK(x == 0.0f);
  buf[999] = 3.0f;
  auto moved = std::move(buf);
  CHECK(moved[999] == 3.0f);
  CHECK(buf.empty());  // NOLINT(bugprone-use-after-move): moved-from state is specified
}

TEST_CASE("aligned_buffer honours larger alignments and zero size", "[core][aligned_buffer]") {
  auto r = ruvllm::aligned_buffer<std::uint8_t, 4096>::allocate(10);
  REQUIRE(r);
  CHECK(reinterpret_cast<std::uintptr_t>(r->data()) % 4096 == 0);
  auto empty = ruvllm::aligned_buffer<double>::allocate(0);
  REQUIRE(empty);
  CHECK(empty->empty());
}

TEST_CASE("aligned_buffer refuses impossible sizes with an error", "[core][aligned_buffer]") {
  auto r = ruvllm::aligned_buffer<double>::allocate(ruvllm::aligned_buffer<double>::max_count + 1);
  REQUIRE_FALSE(r);
  CHECK(r.error().code() == ruvllm::errc::out_of_memory);
  CHECK(r.error().message().find("exceeds the limit") != std::string::npos);
}

}  // namespace aligned_buffer_test
