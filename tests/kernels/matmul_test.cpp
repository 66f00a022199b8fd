// GEMV for f32, f16 and bf16 weights on every backend and Highway target,
// against the scalar reference; the threaded driver against one call.

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "ruvllm/core/half.hpp"
#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/kernels/matmul.hpp"
#include "support/gemv_plans.hpp"
#include "support/per_target.hpp"
#include "support/rng.hpp"

namespace matmul_test {

namespace {

namespace k = ruvllm::kernels;
using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;
using ruvllm::test::for_each_gemv_plan;
using ruvllm::test::gemv_plan_restorer;

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

// The plan /proc/cpuinfo's first processor calls for (gemv_plan.hpp: rows_l1
// on AMD family 1Ah and later), read independently of CPUID; empty when the
// file or its fields are missing.
std::optional<k::gemv_plan> plan_from_cpuinfo() {
#if !defined(__x86_64__) && !defined(__i386__)
  // The rule reads x86 CPUID; elsewhere (and under an emulator, whose
  // /proc/cpuinfo is the host's) the plan is always pairs_l1_l2.
  return k::gemv_plan::pairs_l1_l2;
#else
  std::ifstream file("/proc/cpuinfo");
  std::string line, vendor;
  std::optional<unsigned> family;
  while (std::getline(file, line) && (vendor.empty() || !family)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || colon + 2 > line.size()) continue;
    const std::string value = line.substr(colon + 2);
    if (line.rfind("vendor_id", 0) == 0) vendor = value;
    if (line.rfind("cpu family", 0) == 0) family = static_cast<unsigned>(std::stoul(value));
  }
  if (vendor.empty() || !family) return std::nullopt;
  return vendor == "AuthenticAMD" && *family >= 0x1a ? k::gemv_plan::rows_l1 : k::gemv_plan::pairs_l1_l2;
#endif
}

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

template <class W>
void check_rows_alone(std::uint64_t stream) {
  ruvllm::test::rng gen(stream);
  for (const auto& shape : {std::array<std::size_t, 2>{2, 64}, {7, 67}, {9, 1000}, {6, 8200}}) {
    const problem<W> p(gen, shape[0], shape[1]);
    ruvllm::test::for_each_highway_target([&](const std::string&) {
      for_each_gemv_plan([&](k::gemv_plan) {
        std::vector<float> together(p.rows), alone(p.rows);
        k::ops<highway>::gemv(p.w(), p.stride, p.x(), together.data(), p.rows, p.cols);
        for (std::size_t r = 0; r < p.rows; ++r)
          k::ops<highway>::gemv(p.w() + r * p.stride, p.stride, p.x(), alone.data() + r, 1, p.cols);
        INFO("rows " << p.rows << " cols " << p.cols);
        REQUIRE(together == alone);
      });
    });
  }
}

// Every plan gives every row the same bits (they differ only in prefetches
// and in which rows share activation loads).
template <class W>
void check_plans_agree(std::uint64_t stream) {
  ruvllm::test::rng gen(stream);
  for (const auto& shape : {std::array<std::size_t, 2>{1, 64}, {7, 67}, {9, 1000}, {6, 8200}}) {
    const problem<W> p(gen, shape[0], shape[1]);
    ruvllm::test::for_each_highway_target([&](const std::string&) {
      std::vector<float> first;
      for_each_gemv_plan([&](k::gemv_plan) {
        std::vector<float> y(p.rows + 1, -7.0f);
        k::ops<highway>::gemv(p.w(), p.stride, p.x(), y.data(), p.rows, p.cols);
        p.check(y);
        if (first.empty()) first = y;
        INFO("rows " << p.rows << " cols " << p.cols);
        REQUIRE(y == first);
      });
    });
  }
}

// Activations held in the weights' half type W: every backend, Highway
// target and plan gives the bits of the same call with those activations
// widened to f32 (the values are the same floats), and so agrees with the
// scalar reference; the threaded driver gives the bits of one call.
template <class W>
void check_half_activations(std::uint64_t stream) {
  ruvllm::test::rng gen(stream);
  std::vector<std::array<std::size_t, 2>> cases{{6, 8200}, {5, 2048}};
  for (const auto& shape : shapes) cases.push_back({shape[0], shape[1]});
  for (const auto& shape : cases) {
    problem<W> p(gen, shape[0], shape[1]);
    // p.x() becomes exactly the floats of the half activations.
    for (auto& v : p.x_storage) v = widen(narrow<W>(v));
    std::vector<W> half_storage(p.cols + 1);
    for (std::size_t c = 0; c <= p.cols; ++c) half_storage[c] = narrow<W>(p.x_storage[c]);
    const W* half_x = half_storage.data() + 1;  // misaligned as p.x()
    INFO("rows " << p.rows << " cols " << p.cols);
    std::vector<float> widened(p.rows + 1, -7.0f), held(p.rows + 1, -7.0f);
    k::ops<scalar>::gemv(p.w(), p.stride, p.x(), widened.data(), p.rows, p.cols);
    k::ops<scalar>::gemv(p.w(), p.stride, half_x, held.data(), p.rows, p.cols);
    REQUIRE(held == widened);
    ruvllm::test::for_each_highway_target([&](const std::string&) {
      for_each_gemv_plan([&](k::gemv_plan) {
        k::ops<highway>::gemv(p.w(), p.stride, p.x(), widened.data(), p.rows, p.cols);
        k::ops<highway>::gemv(p.w(), p.stride, half_x, held.data(), p.rows, p.cols);
        p.check(held);
        REQUIRE(held == widened);  // also: nothing written past the last row
      });
    });
    k::ops<xsimd_backend>::gemv(p.w(), p.stride, p.x(), widened.data(), p.rows, p.cols);
    k::ops<xsimd_backend>::gemv(p.w(), p.stride, half_x, held.data(), p.rows, p.cols);
    p.check(held);
    REQUIRE(held == widened);
    ruvllm::thread_pool pool(2);
    std::vector<float> split(p.rows + 1, -7.0f);
    k::ops<highway>::gemv(p.w(), p.stride, half_x, held.data(), p.rows, p.cols);
    k::gemv<highway>(pool, p.w(), p.stride, half_x, split.data(), p.rows, p.cols);
    REQUIRE(split == held);
  }
}

}  // namespace

TEST_CASE("gemv plans: the default follows the CPU and use_gemv_plan overrides it", "[kernels][gemv]") {
  // Every test case puts the plan back, so the detected one is still in use.
  CHECK(k::gemv_plan_in_use() == k::detected_gemv_plan());
  if (const auto expected = plan_from_cpuinfo()) CHECK(k::detected_gemv_plan() == *expected);
  {
    const gemv_plan_restorer restore;
    k::use_gemv_plan(k::gemv_plan::rows_l1);
    CHECK(k::gemv_plan_in_use() == k::gemv_plan::rows_l1);
    k::use_gemv_plan(k::gemv_plan::pairs_l1_l2);
    CHECK(k::gemv_plan_in_use() == k::gemv_plan::pairs_l1_l2);
  }
  CHECK(k::gemv_plan_in_use() == k::detected_gemv_plan());
  CHECK(k::gemv_plan_name(k::gemv_plan::rows_l1) == "rows_l1");
  CHECK(k::gemv_plan_name(k::gemv_plan::pairs_l1_l2) == "pairs_l1_l2");
}

TEST_CASE("gemv gives the same bits under every plan", "[kernels][gemv]") {
  check_plans_agree<float>(83);
  check_plans_agree<ruvllm::f16>(84);
  check_plans_agree<ruvllm::bf16>(85);
}

TEST_CASE("add_scaled_rows matches a double-precision reference on every backend", "[kernels][gemv]") {
  ruvllm::test::rng gen(64);
  for (const std::size_t count : {0, 1, 2, 3, 8}) {
    for (const std::size_t n : {0, 1, 15, 16, 17, 100, 4096}) {
      const std::size_t stride = n + 3;
      const auto rows = gen.uniform_vector(count * stride + 1), coeffs = gen.uniform_vector(count + 1, -2.0f, 2.0f);
      const auto y0 = gen.uniform_vector(n + 1);
      // The result is a sum of count + 1 terms: within (count + 1) eps of their magnitudes.
      const auto check = [&](const std::vector<float>& y) {
        for (std::size_t i = 0; i < n; ++i) {
          double want = y0[i], magnitude = std::fabs(y0[i]);
          for (std::size_t r = 0; r < count; ++r) {
            want += double(coeffs[r]) * rows[r * stride + i];
            magnitude += std::fabs(double(coeffs[r]) * rows[r * stride + i]);
          }
          INFO("count " << count << " n " << n << " i " << i);
          REQUIRE(std::fabs(y[i] - want) <= double(count + 1) * 1.2e-7 * magnitude);
        }
        REQUIRE(y[n] == y0[n]);  // nothing written past n
      };
      auto y = y0;
      k::ops<scalar>::add_scaled_rows(rows.data(), stride, coeffs.data(), count, y.data(), n);
      check(y);
      ruvllm::test::for_each_highway_target([&](const std::string&) {
        auto yh = y0;
        k::ops<highway>::add_scaled_rows(rows.data(), stride, coeffs.data(), count, yh.data(), n);
        check(yh);
      });
      auto yx = y0;
      k::ops<xsimd_backend>::add_scaled_rows(rows.data(), stride, coeffs.data(), count, yx.data(), n);
      check(yx);
    }
  }
}

TEST_CASE("gemv f32 matches the scalar reference", "[kernels][gemv]") { check_all_backends<float>(61); }
TEST_CASE("gemv f16 matches the scalar reference", "[kernels][gemv]") { check_all_backends<ruvllm::f16>(62); }
TEST_CASE("gemv bf16 matches the scalar reference", "[kernels][gemv]") { check_all_backends<ruvllm::bf16>(63); }

TEST_CASE("gemv with f16 activations gives the bits of f32 ones", "[kernels][gemv]") {
  check_half_activations<ruvllm::f16>(87);
}
TEST_CASE("gemv with bf16 activations gives the bits of f32 ones", "[kernels][gemv]") {
  check_half_activations<ruvllm::bf16>(88);
}

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

// Rows run in pairs with a lone last row; a row's bits must not depend on
// which, or threads splitting rows differently would change results.
TEST_CASE("gemv gives each row the same bits paired or alone", "[kernels][gemv]") {
  check_rows_alone<float>(69);
  check_rows_alone<ruvllm::f16>(70);
  check_rows_alone<ruvllm::bf16>(71);
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

namespace {

namespace ks = ruvllm::kernels::scalar;
void quantize_row(const float* x, ruvllm::block_q8_0* y, std::size_t n) { ks::quantize_q8_0(x, y, n); }
void quantize_row(const float* x, ruvllm::block_q4_0* y, std::size_t n) { ks::quantize_q4_0(x, y, n); }
void quantize_row(const float* x, ruvllm::block_iq4_nl* y, std::size_t n) { ks::quantize_iq4_nl(x, y, n); }
void quantize_row(const float* x, ruvllm::block_q4_k* y, std::size_t n) { ks::quantize_q4_k(x, y, n); }
void quantize_row(const float* x, ruvllm::block_q6_k* y, std::size_t n) { ks::quantize_q6_k(x, y, n); }
void dequantize_row(const ruvllm::block_q8_0* x, float* y, std::size_t n) { ks::dequantize_q8_0(x, y, n); }
void dequantize_row(const ruvllm::block_q4_0* x, float* y, std::size_t n) { ks::dequantize_q4_0(x, y, n); }
void dequantize_row(const ruvllm::block_iq4_nl* x, float* y, std::size_t n) { ks::dequantize_iq4_nl(x, y, n); }
void dequantize_row(const ruvllm::block_q4_k* x, float* y, std::size_t n) { ks::dequantize_q4_k(x, y, n); }
void dequantize_row(const ruvllm::block_q6_k* x, float* y, std::size_t n) { ks::dequantize_q6_k(x, y, n); }
void dequantize_row(const ruvllm::block_q8_k* x, float* y, std::size_t n) { ks::dequantize_q8_k(x, y, n); }
void dequantize_row(const ruvllm::kernels::q8_0_quad* x, float* y, std::size_t n) {
  for (std::size_t b = 0; b < n / 32; ++b) {
    std::int8_t qs[32];
    float d;
    ruvllm::kernels::scalar::quant_detail::quad_block(x, b, qs, d);
    for (std::size_t i = 0; i < 32; ++i) y[32 * b + i] = d * qs[i];
  }
}

// quantized_gemv against (a) the backend's row kernel called once over all
// rows (bit-identical: the split only changes which thread runs a row) and
// (b) float arithmetic on the dequantized weights and activations.
template <class Block>
void check_quantized_gemv(std::uint64_t stream, std::size_t rows, std::size_t cols) {
  ruvllm::test::rng gen(stream);
  const std::size_t blocks = cols / ruvllm::kernels::detail::quantized_gemv_traits<Block>::block_size;
  std::vector<Block> w(rows * blocks);
  std::vector<float> row(cols), x(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = gen.uniform(-1.0f, 1.0f);
    quantize_row(row.data(), w.data() + r * blocks, cols);
  }
  for (auto& v : x) v = gen.uniform(-1.0f, 1.0f);
  std::vector<k::activation_block_t<Block>> act(k::activation_blocks<Block>(cols));
  const std::size_t stride = blocks * sizeof(Block);
  std::vector<float> first_plan;
  for_each_gemv_plan([&](k::gemv_plan) {
    ruvllm::thread_pool pool(1);
    std::vector<float> y(rows);
    k::quantized_gemv<highway>(pool, w.data(), stride, x.data(), y.data(), rows, cols, act.data());
    if (first_plan.empty()) first_plan = y;
    REQUIRE(y == first_plan);  // every plan gives the same bits
  });
  for (std::size_t threads : {1u, 2u}) {
    ruvllm::thread_pool pool(threads);
    std::vector<float> y(rows), once(rows);
    k::quantized_gemv<highway>(pool, w.data(), stride, x.data(), y.data(), rows, cols, act.data());
    ruvllm::kernels::detail::quantized_gemv_traits<Block>::template rows<highway>(w.data(), stride, rows, act.data(),
                                                                                  cols, once.data());
    REQUIRE(y == once);
    std::vector<float> wf(cols), xf(cols);
    dequantize_row(act.data(), xf.data(), cols);
    for (std::size_t r = 0; r < rows; ++r) {
      dequantize_row(w.data() + r * blocks, wf.data(), cols);
      double want = 0.0, magnitude = 0.0;
      for (std::size_t c = 0; c < cols; ++c) {
        want += double(wf[c]) * xf[c];
        magnitude += std::fabs(double(wf[c]) * xf[c]);
      }
      INFO("row " << r << " of " << rows << " x " << cols);
      REQUIRE(std::fabs(y[r] - want) <= 1e-5 * magnitude + 1e-6);
    }
  }
}

// quantized_gemm against quantized_gemv of each token: bit-identical, for
// token counts around the 32-token tile.
template <class Block>
void check_quantized_gemm(std::uint64_t stream, std::size_t rows, std::size_t cols) {
  ruvllm::test::rng gen(stream);
  const std::size_t blocks = cols / ruvllm::kernels::detail::quantized_gemv_traits<Block>::block_size;
  std::vector<Block> w(rows * blocks);
  std::vector<float> row(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = gen.uniform(-1.0f, 1.0f);
    quantize_row(row.data(), w.data() + r * blocks, cols);
  }
  const std::size_t stride = blocks * sizeof(Block);
  for (const std::size_t tokens : {1u, 5u, 32u, 33u, 70u}) {
    const std::size_t x_stride = cols + 3, y_stride = rows + 1;
    std::vector<float> x(tokens * x_stride);
    for (auto& v : x) v = gen.uniform(-2.0f, 2.0f);
    std::vector<k::activation_block_t<Block>> act(tokens * k::activation_blocks<Block>(cols));
    for (std::size_t threads : {1u, 2u}) {
      ruvllm::thread_pool pool(threads);
      std::vector<float> y(tokens * y_stride, -7.0f), one(rows);
      k::quantized_gemm<highway>(pool, w.data(), stride, x.data(), x_stride, y.data(), y_stride, rows, tokens, cols,
                                 act.data());
      for (std::size_t t = 0; t < tokens; ++t) {
        k::quantized_gemv<highway>(pool, w.data(), stride, x.data() + t * x_stride, one.data(), rows, cols, act.data());
        INFO("token " << t << " of " << tokens << ", threads " << threads);
        REQUIRE(std::equal(one.begin(), one.end(), y.begin() + static_cast<std::ptrdiff_t>(t * y_stride)));
        REQUIRE(y[t * y_stride + rows] == -7.0f);  // the stride's padding is untouched
      }
    }
  }
}

// The row shapes of the quad pair scales (rows_l1 takes a pair's scales
// from one packed vector): rows of whole pairs, of an odd number of quads
// plus a partial one, and rows longer than the packing covers (32768
// columns), which load the scales per quad.
template <class Block>
void check_pair_scale_rows(std::uint64_t stream) {
  check_quantized_gemv<Block>(stream, 21, 2048);
  check_quantized_gemv<Block>(stream + 1, 5, 1184);
  check_quantized_gemv<Block>(stream + 2, 3, 33024);
}

}  // namespace

TEST_CASE("quantized gemm equals quantized gemv per token", "[kernels][gemm]") {
  check_quantized_gemm<ruvllm::block_q8_0>(75, 300, 256);
  check_quantized_gemm<ruvllm::block_q4_0>(76, 67, 128);
  check_quantized_gemm<ruvllm::block_q4_k>(77, 41, 512);
  check_quantized_gemm<ruvllm::block_q6_k>(78, 9, 256);
}

TEST_CASE("quantized gemv: q8_0 weights", "[kernels][gemv]") {
  check_quantized_gemv<ruvllm::block_q8_0>(71, 67, 4096);
  // Rows ending in a partial quad (3 of 4 blocks), an odd row count (the
  // last row has no pair), and a single row.
  check_quantized_gemv<ruvllm::block_q8_0>(79, 31, 96);
  check_quantized_gemv<ruvllm::block_q8_0>(81, 1, 160);
  check_pair_scale_rows<ruvllm::block_q8_0>(89);
}
TEST_CASE("quantized gemv: q4_0 weights", "[kernels][gemv]") {
  check_quantized_gemv<ruvllm::block_q4_0>(72, 130, 256);
  check_quantized_gemv<ruvllm::block_q4_0>(80, 33, 160);  // 1 block past the last whole quad, odd rows
  check_quantized_gemv<ruvllm::block_q4_0>(82, 2, 224);
  check_pair_scale_rows<ruvllm::block_q4_0>(83);
}
TEST_CASE("quantized gemv: iq4_nl weights", "[kernels][gemv]") { check_pair_scale_rows<ruvllm::block_iq4_nl>(86); }
TEST_CASE("quantized gemv: q4_k weights", "[kernels][gemv]") { check_quantized_gemv<ruvllm::block_q4_k>(73, 33, 1024); }
TEST_CASE("quantized gemv: q6_k weights", "[kernels][gemv]") { check_quantized_gemv<ruvllm::block_q6_k>(74, 9, 512); }

}  // namespace matmul_test
