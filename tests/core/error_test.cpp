#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "ruvllm/core/error.hpp"

namespace error_test {

namespace {

ruvllm::result<int> parse_positive(int x) {
  if (x <= 0) return ruvllm::make_error(ruvllm::errc::invalid_argument, "value ", x, " must be at least ", 1);
  return x;
}

ruvllm::result<int> doubled(int x) {
  RUVLLM_TRY_ASSIGN(int v, parse_positive(x));
  return 2 * v;
}

ruvllm::result<void> check_twice(int x) {
  RUVLLM_TRY(parse_positive(x));
  RUVLLM_TRY(parse_positive(x - 10));
  return {};
}

}  // namespace

TEST_CASE("result holds a value or an error", "[core][error]") {
  auto ok = parse_positive(5);
  REQUIRE(ok.has_value());
  CHECK(static_cast<bool>(ok));
  CHECK(*ok == 5);
  CHECK(ok.value_or(9) == 5);

  auto bad = parse_positive(-3);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code() == ruvllm::errc::invalid_argument);
  CHECK(bad.error().message() == "value -3 must be at least 1");
  CHECK(bad.value_or(9) == 9);
}

TEST_CASE("RUVLLM_TRY and RUVLLM_TRY_ASSIGN propagate errors", "[core][error]") {
  CHECK(doubled(4).value() == 8);
  CHECK(doubled(0).error().message() == "value 0 must be at least 1");
  CHECK(check_twice(20).has_value());
  auto r = check_twice(5);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message() == "value -5 must be at least 1");
}

TEST_CASE("errors carry a file and offset", "[core][error]") {
  auto e =
      ruvllm::make_error(ruvllm::errc::corrupt_data, "tensor count ", std::uint64_t{1} << 40, " exceeds ", 1u << 20)
          .at("model.gguf", 24);
  CHECK(e.file() == "model.gguf");
  REQUIRE(e.has_offset());
  CHECK(e.offset() == 24);
  CHECK(e.describe() == "corrupt data: model.gguf at offset 24: tensor count 1099511627776 exceeds 1048576");
  auto no_offset = ruvllm::make_error(ruvllm::errc::io_error, "cannot open").at("x.bin");
  CHECK_FALSE(no_offset.has_offset());
  CHECK(no_offset.describe() == "i/o error: x.bin: cannot open");
}

TEST_CASE("messages format numbers exactly", "[core][error]") {
  auto e = ruvllm::make_error(ruvllm::errc::out_of_range, 0.1f, ' ', -2.5, ' ', true, ' ', std::string("s"), ' ',
                              ruvllm::errc::not_found);
  CHECK(e.message() == "0.1 -2.5 true s 3");
}

TEST_CASE("every error code has a name", "[core][error]") {
  for (int c = 1; c <= static_cast<int>(ruvllm::errc::cancelled); ++c)
    CHECK(ruvllm::to_string(static_cast<ruvllm::errc>(c)) != "unknown error");
}

TEST_CASE("result works with move-only values and void", "[core][error]") {
  ruvllm::result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  REQUIRE(r);
  std::unique_ptr<int> p = std::move(r).value();
  CHECK(*p == 7);
  ruvllm::result<void> v;
  CHECK(v.has_value());
  ruvllm::result<void> failed = ruvllm::make_error(ruvllm::errc::cancelled, "stop");
  CHECK(failed.error().code() == ruvllm::errc::cancelled);
}

}  // namespace error_test
