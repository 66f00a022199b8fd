// GEMV for f32, f16 and bf16 weights on every backend and Highway target,
// against the scalar reference; the threaded driver against one call.

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "ruvllm/core/half.hpp"
#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/kernels/matmul.hpp"
#include "support/per_target.hpp"
#include "support/rng.hpp"

namespace {

namespace k = ruvllm::kernels;
using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;

float widen(float v) { return v; }
float widen(ruvllm::f16 v) { return ruvllm::to_float(v); }
float widen(ruvllm::bf16 v) { return ruvllm::to_float(v); }
template <class W>
W narrow(float v);
template <>
float narrow<float>(float v) {
  return v;
}
template <>
ruvllm::f16 narrow<ruvllm::f16>(float v) {
  return ruvllm::to_f16(v);
}
template <>
ruvllm::bf16 narrow<ruvllm::bf16>(float v) {
  return ruvllm::to_bf16(v);
}

template <class W>
struct problem {
  std::size_t rows, cols, stride;
  std::vector<W> storage;  // one extra element so the matrix starts misaligned
  std::vector<float> x_storage;
  const W* w() const { return storage.data() + 1; }
  const float* x() const { return x_storage.data() + 1; }

  problem(ruvllm::test::rng& gen, std::size_t r, std::size_t c, float scale = 1.0f)
      : rows(r), cols(c), stride(c + (c % 3)), storage(r * (c + (c % 3)) + 1), x_storage(c + 1) {
    for (auto& v : storage) v = narrow<W>(gen.uniform(-scale, scale));
    for (auto& v : x_storage) v = gen.uniform(-1.0f, 1.0f);
  }

  // |computed - scalar| <= 2 n eps sum|w x| per row.
  void check(const std::vector<float>& y) const {
    std::vector<float> want(rows);
    k::ops<scalar>::gemv(w(), stride, x(), want.data(), rows, cols);
    for (std::size_t r = 0; r < rows; ++r) {
      double magnitude = 0.0;
      for (std::size_t c = 0; c < cols; ++c) magnitude += std::fabs(double(widen(w()[r * stride + c])) * x()[c]);
      const double bound = 2.0 * double(cols) * 1.1920929e-7 * magnitude;
      INFO("rows " << rows << " cols " << cols << " row " << r);
      REQUIRE(std::fabs(double(y[r]) - double(want[r])) <= bound);
    }
  }
};

constexpr std::size_t shapes[][2] = {{0, 16}, {1, 0}, {1, 1}, {3, 7}, {4, 16}, {5, 33}, {17, 1000}, {130, 4099}};

template <class W>
void check_all_backends(std::uint64_t stream) {
  ruvllm::test::rng gen(stream);
  for (const auto& shape : shapes) {
    const problem<W> p(gen, shape[0], shape[1]);
    std::vector<float> y(p.rows + 1, -7.0f);
    ruvllm::test::for_each_highway_target([&](const std::string&) {
      k::ops<highway>::gemv(p.w(), p.stride, p.x(), y.data(), p.rows, p.cols);
      p.check(y);
      REQUIRE(y[p.rows] == -7.0f);  // nothing written past the last row
    });
    k::ops<xsimd_backend>::gemv(p.w(), p.stride, p.x(), y.data(), p.rows, p.cols);
    p.check(y);
  }
}

}  // namespace

TEST_CASE("gemv f32 matches the scalar reference", "[kernels][gemv]") { check_all_backends<float>(61); }
TEST_CASE("gemv f16 matches the scalar reference", "[kernels][gemv]") { check_all_backends<ruvllm::f16>(62); }
TEST_CASE("gemv bf16 matches the scalar reference", "[kernels][gemv]") { check_all_backends<ruvllm::bf16>(63); }

TEST_CASE("gemv handles large magnitudes and denormal weights", "[kernels][gemv]") {
  ruvllm::test::rng gen(64);
  const problem<float> big(gen, 9, 301, 1e30f);
  const problem<float> tiny(gen, 9, 301, 1e-40f);
  std::vector<float> y(9);
  ruvllm::test::for_each_highway_target([&](const std::string&) {
    k::ops<highway>::gemv(big.w(), big.stride, big.x(), y.data(), big.rows, big.cols);
    big.check(y);
    k::ops<highway>::gemv(tiny.w(), tiny.stride, tiny.x(), y.data(), tiny.rows, tiny.cols);
    tiny.check(y);
  });
}

TEST_CASE("threaded gemv equals one call of the row kernel", "[kernels][gemv]") {
  ruvllm::test::rng gen(65);
  for (std::size_t threads : {1u, 2u, 3u}) {
    ruvllm::thread_pool pool(threads);
    for (const auto& shape : {std::array<std::size_t, 2>{1, 5}, {37, 4096}, {1000, 33}, {2051, 513}}) {
      const problem<ruvllm::f16> p(gen, shape[0], shape[1]);
      std::vector<float> one(p.rows), split(p.rows);
      k::ops<highway>::gemv(p.w(), p.stride, p.x(), one.data(), p.rows, p.cols);
      k::gemv<highway>(pool, p.w(), p.stride, p.x(), split.data(), p.rows, p.cols);
      // Rows are summed in the same order whichever block they land in.
      REQUIRE(split == one);
    }
  }
}

TEST_CASE("gemv blocks cover about 128 KiB of weights", "[kernels][gemv]") {
  STATIC_REQUIRE(k::gemv_block_rows(4096 * 4) == 8);
  STATIC_REQUIRE(k::gemv_block_rows(16) == 8192);
  STATIC_REQUIRE(k::gemv_block_rows(0) % 4 == 0);
  STATIC_REQUIRE(k::gemv_block_rows(1 << 30) == 4);
}

namespace {

// Y = X Wᵀ against one scalar GEMV per token, with padded strides.
template <class W>
void check_gemm(std::uint64_t stream) {
  ruvllm::test::rng gen(stream);
  for (std::size_t rows : {1u, 3u, 4u, 5u, 17u, 70u}) {
    for (std::size_t tokens : {1u, 2u, 3u, 7u, 65u}) {
      const std::size_t cols = gen.uniform_index(1, 300);
      const problem<W> p(gen, rows, cols);
      const std::size_t x_stride = cols + 3, y_stride = rows + 2;
      std::vector<float> x(tokens * x_stride);
      for (auto& v : x) v = gen.uniform(-1.0f, 1.0f);
      std::vector<float> want(tokens * y_stride, -1.0f), got(tokens * y_stride, -1.0f);
      k::ops<scalar>::gemm(p.w(), p.stride, x.data(), x_stride, want.data(), y_stride, rows, tokens, cols);
      const auto check = [&](const std::vector<float>& y) {
        for (std::size_t t = 0; t < tokens; ++t) {
          for (std::size_t r = 0; r < rows; ++r) {
            double magnitude = 0.0;
            for (std::size_t c = 0; c < cols; ++c)
              magnitude += std::fabs(double(widen(p.w()[r * p.stride + c])) * x[t * x_stride + c]);
            INFO("rows " << rows << " tokens " << tokens << " cols " << cols << " at " << t << "," << r);
            REQUIRE(std::fabs(double(y[t * y_stride + r]) - want[t * y_stride + r]) <=
                    2.0 * double(cols) * 1.1920929e-7 * magnitude);
          }
          for (std::size_t r = rows; r < y_stride; ++r) REQUIRE(y[t * y_stride + r] == -1.0f);  // padding untouched
        }
      };
      ruvllm::test::for_each_highway_target([&](const std::string&) {
        k::ops<highway>::gemm(p.w(), p.stride, x.data(), x_stride, got.data(), y_stride, rows, tokens, cols);
        check(got);
      });
      k::ops<xsimd_backend>::gemm(p.w(), p.stride, x.data(), x_stride, got.data(), y_stride, rows, tokens, cols);
      check(got);
    }
  }
}

}  // namespace

TEST_CASE("gemm f32 matches the scalar reference", "[kernels][gemm]") { check_gemm<float>(66); }
TEST_CASE("gemm f16 matches the scalar reference", "[kernels][gemm]") { check_gemm<ruvllm::f16>(67); }
TEST_CASE("gemm bf16 matches the scalar reference", "[kernels][gemm]") { check_gemm<ruvllm::bf16>(68); }

TEST_CASE("threaded gemm equals one call of the tile kernel", "[kernels][gemm]") {
  ruvllm::test::rng gen(69);
  ruvllm::thread_pool pool(2);
  const problem<float> p(gen, 150, 257);
  const std::size_t tokens = 131;
  std::vector<float> x(tokens * p.cols);
  for (auto& v : x) v = gen.uniform(-1.0f, 1.0f);
  std::vector<float> one(tokens * p.rows), split(tokens * p.rows);
  k::ops<highway>::gemm(p.w(), p.stride, x.data(), p.cols, one.data(), p.rows, p.rows, tokens, p.cols);
  k::gemm<highway>(pool, p.w(), p.stride, x.data(), p.cols, split.data(), p.rows, p.rows, tokens, p.cols);
  // 64-row and 64-token tiles keep every row in the same 4-row group and
  // every token in the same pair, so the sums are bit-identical.
  REQUIRE(split == one);
}
