// KV quantizers (f16, q8_0, KIVI-4, KIVI-2): reconstruction bounds, the
// documented code layout, page-head round trips, and every backend against
// the scalar reference (quantized bytes identical, dequantized values within
// an ulp).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ruvllm/core/aligned_buffer.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "support/per_target.hpp"
#include "support/rng.hpp"

namespace kv_quant_test {

namespace {

namespace k = ruvllm::kernels;
using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;

/// Ulp of float x (of its magnitude).
double ulp(double x) {
  const auto f = static_cast<float>(std::fabs(x));
  return static_cast<double>(std::nextafter(f, std::numeric_limits<float>::infinity()) - f);
}

/// Distributions a group may see.
std::vector<float> group_values(ruvllm::test::rng& gen, int kind, std::size_t n) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
      case 0: x[i] = gen.uniform(-1.0f, 1.0f); break;
      case 1: x[i] = 100.0f + gen.uniform(0.0f, 0.01f); break;  // far from 0: |min| >> range
      case 2: x[i] = -3.25f; break;                             // constant
      case 3: x[i] = gen.uniform(-1e-6f, 1e-6f); break;         // f16 subnormal scales
      case 4: x[i] = gen.normal() * (gen.chance(0.1) ? 20.0f : 1.0f); break;
      case 5: x[i] = -1000.0f + gen.uniform(-50.0f, 0.0f); break;
      default: x[i] = gen.uniform(-1e-30f, 1e-30f); break;  // below every f16
    }
  }
  return x;
}

inline constexpr int kinds = 7;

/// Quantizes n values with the KIVI group quantizer and checks the bound.
template <int Bits, std::size_t G>
void check_kivi_group(const std::vector<float>& x, std::size_t n) {
  ruvllm::block_kivi<Bits, G> b{};
  k::scalar::quantize_kivi<Bits, G>(x.data(), 1, n, b);
  std::vector<float> y(G);
  k::scalar::dequantize_kivi<Bits, G>(b, y.data(), 1, n);
  const double scale = ruvllm::to_float(b.scale), zero = ruvllm::to_float(b.zero);
  const double levels = (1 << Bits) - 1;
  double mn = x[0], mx = x[0];
  for (std::size_t i = 0; i < n; ++i) {
    mn = std::min<double>(mn, x[i]);
    mx = std::max<double>(mx, x[i]);
  }
  INFO("bits " << Bits << " G " << G << " n " << n << " min " << mn << " max " << mx << " scale " << scale << " zero "
               << zero);
  // zero <= min and [min, max] inside the representable range.
  CHECK(zero <= mn);
  CHECK(zero + levels * scale >= mx);
  // scale is not much larger than needed: f16 rounding of zero and scale only.
  // (zero moves by at most an f16 ulp of min; both have absolute steps of
  // 2^-24 in the f16 subnormal range).
  CHECK(scale <= ((mx - mn) + std::max(std::fabs(mn) * 0x1p-10, 0x1p-24)) / levels * (1.0 + 0x1p-9) + 0x1p-24);
  for (std::size_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(y[i]) - x[i]);
    INFO("element " << i << " x " << x[i] << " y " << y[i]);
    CHECK(err <= scale / 2 + 4 * ulp(std::max(std::fabs(x[i]), std::fabs(y[i]))));
  }
  // Unused elements of a partial group carry code 0.
  for (std::size_t i = n; i < G; ++i) CHECK(k::kv_quant_detail::kivi_code_at(b.qs, Bits, G * Bits / 8, i) == 0);
}

}  // namespace

TEST_CASE("KIVI groups reconstruct within scale / 2", "[kernels][kv_quant]") {
  ruvllm::test::rng gen(11);
  for (int kind = 0; kind < kinds; ++kind)
    for (int trial = 0; trial < 20; ++trial) {
      check_kivi_group<2, 32>(group_values(gen, kind, 32), 32);
      check_kivi_group<4, 32>(group_values(gen, kind, 32), 32);
      check_kivi_group<2, 16>(group_values(gen, kind, 16), 16);
      check_kivi_group<4, 8>(group_values(gen, kind, 8), 8);
      check_kivi_group<2, 64>(group_values(gen, kind, 64), 64);
      const std::size_t n = gen.uniform_index(1, 31);
      check_kivi_group<2, 32>(group_values(gen, kind, 32), n);
      check_kivi_group<4, 32>(group_values(gen, kind, 32), n);
    }
}

TEST_CASE("KIVI codes are planar and rounded to nearest", "[kernels][kv_quant]") {
  // x_i = i % 4 over 32 elements: zero 0, scale 1, codes exactly i % 4.
  std::vector<float> x(32);
  for (std::size_t i = 0; i < 32; ++i) x[i] = static_cast<float>(i % 4);
  ruvllm::block_kivi<2, 32> b{};
  k::scalar::quantize_kivi<2, 32>(x.data(), 1, 32, b);
  CHECK(ruvllm::to_float(b.scale) == 1.0f);
  CHECK(ruvllm::to_float(b.zero) == 0.0f);
  // Element i is in byte i % 8 at bits 2 * (i / 8).
  for (std::size_t byte = 0; byte < 8; ++byte) {
    unsigned want = 0;
    for (std::size_t plane = 0; plane < 4; ++plane) want |= ((8 * plane + byte) % 4) << (2 * plane);
    CHECK(unsigned{b.qs[byte]} == want);
  }
  // 4 bits: element i in byte i % 16, low nibble for i < 16 (Q4_0's order).
  std::vector<float> y(32);
  for (std::size_t i = 0; i < 32; ++i) y[i] = static_cast<float>(i % 16);
  ruvllm::block_kivi<4, 32> b4{};
  k::scalar::quantize_kivi<4, 32>(y.data(), 1, 32, b4);
  for (std::size_t byte = 0; byte < 16; ++byte) CHECK(unsigned{b4.qs[byte]} == (byte | (byte << 4)));
  // Ties go to even: with zero 0 and scale 1, 0.5 -> 0, 1.5 -> 2, 2.5 -> 2.
  std::vector<float> t = {0.0f, 0.5f, 1.5f, 2.5f, 3.0f, 3.0f, 3.0f, 3.0f};
  t.resize(16, 3.0f);
  ruvllm::block_kivi<2, 16> bt{};
  k::scalar::quantize_kivi<2, 16>(t.data(), 1, 16, bt);
  REQUIRE(ruvllm::to_float(bt.scale) == 1.0f);
  CHECK(k::kv_quant_detail::kivi_code_at(bt.qs, 2, 4, 1) == 0);
  CHECK(k::kv_quant_detail::kivi_code_at(bt.qs, 2, 4, 2) == 2);
  CHECK(k::kv_quant_detail::kivi_code_at(bt.qs, 2, 4, 3) == 2);
}

TEST_CASE("q8_0 KV blocks reconstruct within d / 2", "[kernels][kv_quant]") {
  ruvllm::test::rng gen(12);
  for (int kind = 0; kind < kinds; ++kind)
    for (int trial = 0; trial < 20; ++trial) {
      const auto x = group_values(gen, kind, 32);
      ruvllm::block_q8_0 b{};
      k::scalar::quantize_q8_0_kv(x.data(), b);
      std::vector<float> y(32);
      k::scalar::dequantize_q8_0_kv(b, y.data());
      const double d = ruvllm::to_float(b.d);
      double amax = 0.0;
      for (float v : x) amax = std::max(amax, std::fabs(static_cast<double>(v)));
      INFO("kind " << kind << " amax " << amax << " d " << d);
      CHECK(127.0 * d >= amax);
      CHECK(d <= amax / 127.0 * (1.0 + 0x1p-10) + 0x1p-24);
      for (std::size_t i = 0; i < 32; ++i) {
        CHECK(std::abs(int{b.qs[i]}) <= 127);
        CHECK(std::fabs(static_cast<double>(y[i]) - x[i]) <= d / 2 + 2 * ulp(x[i]));
      }
    }
}

namespace {

struct format_case {
  k::kv_format_desc f;
  const char* name;
};

const format_case formats[] = {
    {{k::kv_format::f32, 1}, "f32"},       {{k::kv_format::f16, 1}, "f16"},
    {{k::kv_format::q8_0, 32}, "q8_0"},    {{k::kv_format::kivi4, 32}, "kivi4"},
    {{k::kv_format::kivi2, 32}, "kivi2"},  {{k::kv_format::kivi2, 16}, "kivi2/16"},
    {{k::kv_format::kivi4, 8}, "kivi4/8"}, {{k::kv_format::kivi2, 64}, "kivi2/64"},
};

/// Per-element reconstruction bound of format f for x, given the block the
/// element landed in (read back from the dequantized neighbours is not
/// possible, so use the loose form: half a step of the group's range).
double element_bound(k::kv_format_desc f, double group_min, double group_max, double amax) {
  switch (f.format) {
    case k::kv_format::f32: return 0.0;                       // exact
    case k::kv_format::f16: return amax * 0x1p-11 + 0x1p-25;  // relative, or half the subnormal step
    case k::kv_format::q8_0: return amax / 127.0 * (1.0 + 0x1p-10) / 2 + 1e-7;
    default: {
      const double levels = (1u << k::kv_bits(f.format)) - 1;
      return ((group_max - group_min) + std::max(std::fabs(group_min) * 0x1p-10, 0x1p-24)) / levels * (1.0 + 0x1p-9) /
                 2 +
             0x1p-24 + 4 * ulp(std::max(std::fabs(group_min), std::fabs(group_max)));
    }
  }
}

}  // namespace

TEST_CASE("page-heads round trip in every format and role", "[kernels][kv_quant]") {
  ruvllm::test::rng gen(13);
  for (const format_case& fc : formats)
    for (const k::kv_role role : {k::kv_role::key, k::kv_role::value})
      for (const std::size_t D : {64, 128}) {
        const std::size_t T = 64;
        if (!k::kv_format_check(fc.f, role, T, D).has_value()) continue;
        const std::size_t head_bytes = k::kv_page_head_bytes(fc.f, role, T, D);
        // Write tokens [first, first + n) into a page pre-filled with 0xAB.
        const bool kivi_key = role == k::kv_role::key && fc.f.format != k::kv_format::f32 &&
                              fc.f.format != k::kv_format::f16 && fc.f.format != k::kv_format::q8_0;
        const std::size_t first = !kivi_key ? 3 : (2 * fc.f.group <= T ? fc.f.group : 0), n = T - first - 5;
        const std::size_t stride = D + 7;
        std::vector<float> src(n * stride);
        for (float& x : src) x = gen.normal(0.3f, 2.0f);
        std::vector<std::byte> page(head_bytes, std::byte{0xAB});
        k::scalar::quantize_page_head(fc.f, role, src.data(), stride, first, n, D, page.data());
        std::vector<float> back(n * D);
        k::scalar::dequantize_page_head(fc.f, role, page.data(), first, n, D, back.data(), D);
        INFO("format " << fc.name << (role == k::kv_role::key ? " keys" : " values") << " D " << D);
        // Groups: keys by channel over the written tokens' groups, values by token over channels.
        const std::size_t G = fc.f.format == k::kv_format::f16 ? 1 : fc.f.group;
        for (std::size_t t = 0; t < n; ++t)
          for (std::size_t c = 0; c < D; ++c) {
            double mn = 1e300, mx = -1e300, amax = 0.0;
            const auto see = [&](std::size_t tt, std::size_t cc) {
              const double v = src[tt * stride + cc];
              mn = std::min(mn, v);
              mx = std::max(mx, v);
              amax = std::max(amax, std::fabs(v));
            };
            if (role == k::kv_role::key && G > 1 && fc.f.format != k::kv_format::q8_0) {
              const std::size_t g0 = (first + t) / G * G;
              for (std::size_t tt = std::max(g0, first); tt < std::min(g0 + G, first + n); ++tt) see(tt - first, c);
            } else {
              for (std::size_t cc = c / G * G; cc < c / G * G + G; ++cc) see(t, cc);
            }
            const double err = std::fabs(back[t * D + c] - src[t * stride + c]);
            if (!(err <= element_bound(fc.f, mn, mx, amax))) {
              FAIL_CHECK("token " << t << " channel " << c << " error " << err << " bound "
                                  << element_bound(fc.f, mn, mx, amax));
            }
          }
        // Bytes outside the written tokens are untouched.
        std::vector<std::byte> fresh(head_bytes, std::byte{0xAB});
        k::scalar::quantize_page_head(fc.f, role, src.data(), stride, first, n, D, fresh.data());
        std::size_t touched_lo = head_bytes, touched_hi = 0;
        for (std::size_t i = 0; i < head_bytes; ++i)
          if (fresh[i] != std::byte{0xAB}) {
            touched_lo = std::min(touched_lo, i);
            touched_hi = i + 1;
          }
        const std::size_t per_token = k::kv_page_head_bytes(fc.f, role, kivi_key ? G : 1, D) / (kivi_key ? G : 1);
        CHECK(touched_lo >= first * per_token);
        CHECK(touched_hi <= (kivi_key ? (first + n + G - 1) / G * G * per_token : (first + n) * per_token));
      }
}

TEST_CASE("KV quantizers of every backend match the scalar reference", "[kernels][kv_quant]") {
  // Cases (inputs and the scalar reference's bytes and values) are built
  // once; every backend must reproduce the bytes exactly and the values to
  // an ulp (a dequantization may or may not fuse its multiply and add).
  struct case_data {
    const format_case* fc;
    k::kv_role role;
    std::size_t D, first, n, stride;
    std::vector<float> src;
    std::vector<std::byte> bytes;
    std::vector<float> values;
  };
  ruvllm::test::rng gen(14);
  std::vector<case_data> cases;
  const std::size_t T = 64;
  for (const format_case& fc : formats)
    for (const k::kv_role role : {k::kv_role::key, k::kv_role::value})
      for (const std::size_t D : {16, 80, 128}) {
        if (!k::kv_format_check(fc.f, role, T, D).has_value()) continue;
        const bool kivi_key = role == k::kv_role::key && fc.f.group > 1 && fc.f.format != k::kv_format::q8_0;
        for (int kind = 0; kind < kinds; ++kind)
          for (const std::size_t n : {1, 7, 40}) {
            case_data c{&fc, role, D, 0, n, D + 3, {}, {}, {}};  // misaligned rows
            c.first = kivi_key ? (2 * fc.f.group <= T - n ? fc.f.group : 0) : 5;
            c.src.resize(n * c.stride);
            for (std::size_t t = 0; t < n; ++t) {
              const auto row = group_values(gen, kind, D);
              std::copy(row.begin(), row.end(), c.src.begin() + static_cast<std::ptrdiff_t>(t * c.stride));
            }
            c.bytes.assign(k::kv_page_head_bytes(fc.f, role, T, D), std::byte{0x5A});
            k::scalar::quantize_page_head(fc.f, role, c.src.data(), c.stride, c.first, n, D, c.bytes.data());
            c.values.resize(n * D);
            k::scalar::dequantize_page_head(fc.f, role, c.bytes.data(), c.first, n, D, c.values.data(), D);
            cases.push_back(std::move(c));
          }
      }
  const auto run = [&](auto backend, const std::string& name) {
    using ops = k::ops<decltype(backend)>;
    INFO("backend " << name);
    for (const case_data& c : cases) {
      INFO("format " << c.fc->name << (c.role == k::kv_role::key ? " keys" : " values") << " D " << c.D << " tokens "
                     << c.first << " + " << c.n);
      std::vector<std::byte> got(c.bytes.size(), std::byte{0x5A});
      ops::kv_quantize_page_head(c.fc->f, c.role, c.src.data(), c.stride, c.first, c.n, c.D, got.data());
      CHECK(std::memcmp(c.bytes.data(), got.data(), got.size()) == 0);
      std::vector<float> values(c.n * c.D);
      ops::kv_dequantize_page_head(c.fc->f, c.role, c.bytes.data(), c.first, c.n, c.D, values.data(), c.D);
      for (std::size_t i = 0; i < values.size(); ++i)
        if (!(std::fabs(values[i] - c.values[i]) <= ulp(c.values[i])))
          FAIL_CHECK("element " << i << ": " << values[i] << " vs " << c.values[i]);
    }
  };
  run(scalar{}, "scalar");
  run(xsimd_backend{}, "xsimd");
  ruvllm::test::for_each_highway_target([&](const std::string& target) { run(highway{}, "highway " + target); });
}

}  // namespace kv_quant_test
