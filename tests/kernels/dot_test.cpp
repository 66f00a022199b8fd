// The f32 dot product on every backend, and on every compiled Highway target
// this CPU supports, against the scalar reference.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "ruvllm/kernels/ops.hpp"
#include "support/compare.hpp"
#include "support/per_target.hpp"
#include "support/rng.hpp"

namespace {

using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;  // a using-declaration would clash with ::xsimd
template <class B>
using ops = ruvllm::kernels::ops<B>;

constexpr std::size_t lengths[] = {0, 1, 7, 16, 1000, 4099};

// Both results approximate the exact value within n*eps*sum|ab|, so they
// differ from each other by at most twice that.
void check_against_scalar(float got, const float* a, const float* b, std::size_t n) {
  const float want = ops<scalar>::dot(a, b, n);
  const double bound = 2.0 * ruvllm::test::dot_error_bound(a, b, n);
  INFO("n = " << n << ", got " << got << ", scalar " << want << ", bound " << bound);
  CHECK(std::fabs(static_cast<double>(got) - static_cast<double>(want)) <= bound);
}

// Inputs placed at a deliberately misaligned address (offset one float past
// a 64-byte boundary) so no kernel can rely on alignment.
struct misaligned_pair {
  std::vector<float> storage_a, storage_b;
  float* a;
  float* b;
  misaligned_pair(const std::vector<float>& va, const std::vector<float>& vb)
      : storage_a(va.size() + 32), storage_b(vb.size() + 32) {
    const auto misalign = [](std::vector<float>& s) {
      auto addr = reinterpret_cast<std::uintptr_t>(s.data());
      std::size_t skip = ((64 - addr % 64) % 64) / sizeof(float) + 1;
      return s.data() + skip;
    };
    a = misalign(storage_a);
    b = misalign(storage_b);
    std::copy(va.begin(), va.end(), a);
    std::copy(vb.begin(), vb.end(), b);
  }
};

}  // namespace

TEST_CASE("highway dot matches the scalar reference on every target", "[kernels][dot]") {
  ruvllm::test::rng gen(1);
  for (const std::size_t n : lengths) {
    const misaligned_pair in(gen.uniform_vector(n), gen.uniform_vector(n));
    ruvllm::test::for_each_highway_target([&](const std::string& target) {
      INFO("target " << target);
      check_against_scalar(ops<highway>::dot(in.a, in.b, n), in.a, in.b, n);
    });
  }
}

TEST_CASE("highway dispatch reports the target it runs", "[kernels][dot]") {
  ruvllm::test::for_each_highway_target(
      [&](const std::string& target) { CHECK(std::string(highway::target_name()) == target); });
  // After the per-target loop the normal choice is restored.
  CHECK(std::string(highway::target_name()) == hwy::TargetName(ruvllm::test::highway_targets().front()));
}

TEST_CASE("dot handles large magnitudes and denormals", "[kernels][dot]") {
  ruvllm::test::rng gen(2);
  for (const std::size_t n : lengths) {
    std::vector<float> big = gen.uniform_vector(n, -1e18f, 1e18f);
    std::vector<float> small = gen.uniform_vector(n, -1e-3f, 1e-3f);
    std::vector<float> denormal(n);
    for (auto& x : denormal) x = gen.uniform(-1.0f, 1.0f) * std::numeric_limits<float>::denorm_min() * 1000.0f;
    ruvllm::test::for_each_highway_target([&](const std::string&) {
      check_against_scalar(ops<highway>::dot(big.data(), small.data(), n), big.data(), small.data(), n);
      check_against_scalar(ops<highway>::dot(denormal.data(), small.data(), n), denormal.data(), small.data(), n);
    });
  }
}

TEST_CASE("dot of all-equal inputs is exact where float can represent it", "[kernels][dot]") {
  std::vector<float> ones(4099, 1.0f), twos(4099, 2.0f);
  ruvllm::test::for_each_highway_target(
      [&](const std::string&) { CHECK(ops<highway>::dot(ones.data(), twos.data(), 4099) == 8198.0f); });
  CHECK(ops<xsimd_backend>::dot(ones.data(), twos.data(), 4099) == 8198.0f);
  CHECK(ops<scalar>::dot(ones.data(), twos.data(), 4099) == 8198.0f);
}

TEST_CASE("xsimd dot matches the scalar reference", "[kernels][dot]") {
  ruvllm::test::rng gen(3);
  for (const std::size_t n : lengths) {
    const misaligned_pair in(gen.uniform_vector(n), gen.uniform_vector(n));
    check_against_scalar(ops<xsimd_backend>::dot(in.a, in.b, n), in.a, in.b, n);
  }
  INFO("xsimd architecture " << xsimd_backend::target_name());
  CHECK(std::string(xsimd_backend::target_name()).size() > 0);
}

TEST_CASE("scalar dot is close to the exact sum", "[kernels][dot]") {
  ruvllm::test::rng gen(4);
  for (const std::size_t n : lengths) {
    const auto a = gen.uniform_vector(n), b = gen.uniform_vector(n);
    const double exact = ruvllm::test::dot_exact(a.data(), b.data(), n);
    CHECK(std::fabs(ops<scalar>::dot(a.data(), b.data(), n) - exact) <=
          ruvllm::test::dot_error_bound(a.data(), b.data(), n));
  }
}
