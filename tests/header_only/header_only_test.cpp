// Header-only mode: three units of this program (two helpers and this one)
// expand the kernels; all must agree and dispatch to the same target.

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ruvllm/ruvllm.hpp"
#include "support/rng.hpp"

float dot_from_unit_a(const float* a, const float* b, std::size_t n);
float dot_from_unit_b(const float* a, const float* b, std::size_t n);
const char* target_from_unit_a();
const char* target_from_unit_b();

TEST_CASE("kernels expanded in several units agree", "[header_only]") {
  ruvllm::test::rng gen(7);
  for (std::size_t n : {0u, 1u, 33u, 1000u}) {
    const auto a = gen.uniform_vector(n), b = gen.uniform_vector(n);
    const float here = ruvllm::kernels::ops<ruvllm::backend::highway>::dot(a.data(), b.data(), n);
    CHECK(dot_from_unit_a(a.data(), b.data(), n) == here);
    CHECK(dot_from_unit_b(a.data(), b.data(), n) == here);
  }
  const std::string target = ruvllm::backend::highway::target_name();
  CHECK(target == target_from_unit_a());
  CHECK(target == target_from_unit_b());
}
