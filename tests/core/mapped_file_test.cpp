#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "ruvllm/core/mapped_file.hpp"

namespace mapped_file_test {

namespace {
std::string temp_path(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/ruvllm_" + std::to_string(::getpid()) + "_" + name;
}
}  // namespace

TEST_CASE("mapped_file maps a whole file read-only", "[core][mapped_file]") {
  const std::string path = temp_path("mapped.bin");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fputs("ruvllm mapped bytes", f);
    std::fclose(f);
  }
  auto m = ruvllm::mapped_file::open(path);
  REQUIRE(m);
  CHECK(m->size() == 19);
  CHECK(std::string(reinterpret_cast<const char*>(m->bytes().data()), m->size()) == "ruvllm mapped bytes");
  ruvllm::mapped_file moved = std::move(*m);
  CHECK(moved.size() == 19);
  std::remove(path.c_str());
}

TEST_CASE("mapped_file maps an empty file to an empty span", "[core][mapped_file]") {
  const std::string path = temp_path("empty.bin");
  std::fclose(std::fopen(path.c_str(), "wb"));
  auto m = ruvllm::mapped_file::open(path);
  REQUIRE(m);
  CHECK(m->bytes().empty());
  std::remove(path.c_str());
}

TEST_CASE("mapped_file reports missing files and directories", "[core][mapped_file]") {
  auto missing = ruvllm::mapped_file::open("/nonexistent/ruvllm/file.gguf");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code() == ruvllm::errc::io_error);
  CHECK(missing.error().file() == "/nonexistent/ruvllm/file.gguf");
  auto dir = ruvllm::mapped_file::open("/tmp");
  REQUIRE_FALSE(dir);
  CHECK(dir.error().code() == ruvllm::errc::invalid_argument);
}

}  // namespace mapped_file_test
