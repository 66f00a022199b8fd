// RoPE: the table builder's validation and contents, and rope_apply on every
// Highway target, on xsimd and on the scalar reference, against rotations
// computed in double from the formulas (not from the table).
//
// Bound: with exact angles, each output a c - b s (or a s + b c) computed in
// float from the table's c and s (each within half an ulp, |c|, |s| <= 1)
// is within ~1.5 eps (|a| + |b|) of the exact rotation (eps = 2^-23): half
// an ulp from each rounded factor, each product and the sum. Tests allow
// 2 eps (|a| + |b|), plus 2 denorm_min for denormal inputs, against double,
// and twice that between backends.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ruvllm/kernels/ops.hpp"
#include "support/per_target.hpp"
#include "support/rng.hpp"

namespace rope_test {

namespace {

namespace k = ruvllm::kernels;
using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;  // a using-declaration would clash with ::xsimd
template <class B>
using ops = ruvllm::kernels::ops<B>;

constexpr double eps = std::numeric_limits<float>::epsilon();
constexpr double denorm = std::numeric_limits<float>::denorm_min();

template <class Body>
void for_each_backend(Body&& body) {
  body(scalar{}, std::string("scalar"));
  ruvllm::test::for_each_highway_target([&](const std::string& target) { body(highway{}, "highway " + target); });
  body(xsimd_backend{}, std::string("xsimd ") + xsimd_backend::target_name());
}

k::rope_table build(std::size_t head_dim, std::size_t positions, double base = 10000.0,
                    k::rope_scaling scaling = k::rope_scaling::none, double factor = 1.0) {
  auto table = k::rope_table::build({head_dim, positions, base, scaling, factor});
  INFO((table ? std::string("ok") : table.error().describe()));
  REQUIRE(table.has_value());
  return std::move(table).value();
}

// The angle of pair i at position p, from the formulas at the top of
// kernels/scalar/rope.hpp, written out again here.
double angle(std::size_t p, std::size_t i, std::size_t d, double base, k::rope_scaling scaling, double s) {
  const double dd = static_cast<double>(d);
  double position = static_cast<double>(p);
  double b = base;
  if (scaling == k::rope_scaling::linear) position /= s;
  if (scaling == k::rope_scaling::ntk) b = base * std::pow(s, dd / (dd - 2.0));
  return position / std::pow(b, 2.0 * static_cast<double>(i) / dd);
}

// A batch of `tokens` x `heads` vectors of d floats at the given strides, in
// a buffer that starts one float past a 64-byte boundary and is filled with
// random values everywhere (so untouched gaps can be checked).
struct batch {
  std::size_t d, tokens, heads, head_stride, token_stride;
  std::vector<float> storage;
  float* x;

  batch(ruvllm::test::rng& gen, std::size_t d_, std::size_t tokens_, std::size_t heads_, std::size_t head_stride_,
        std::size_t token_stride_, float scale = 1.0f)
      : d(d_), tokens(tokens_), heads(heads_), head_stride(head_stride_), token_stride(token_stride_) {
    const std::size_t span = tokens * token_stride + heads * head_stride + d;
    storage.resize(span + 32);
    for (auto& v : storage) v = gen.uniform(-1.0f, 1.0f) * scale;
    const auto addr = reinterpret_cast<std::uintptr_t>(storage.data());
    x = storage.data() + ((64 - addr % 64) % 64) / sizeof(float) + 1;
  }
  batch(const batch& other)
      : d(other.d),
        tokens(other.tokens),
        heads(other.heads),
        head_stride(other.head_stride),
        token_stride(other.token_stride),
        storage(other.storage),
        x(storage.data() + (other.x - other.storage.data())) {}
  batch& operator=(const batch&) = delete;

  float* vec(std::size_t t, std::size_t h) { return x + t * token_stride + h * head_stride; }
  const float* vec(std::size_t t, std::size_t h) const { return x + t * token_stride + h * head_stride; }
  // Which floats of storage belong to a vector rope_apply may rotate.
  std::vector<bool> rotated_mask() const {
    std::vector<bool> mask(storage.size(), false);
    const std::size_t offset = static_cast<std::size_t>(x - storage.data());
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t j = 0; j < d; ++j) mask[offset + t * token_stride + h * head_stride + j] = true;
    return mask;
  }
};

// Checks `after` against the double-precision rotation of `before`, token t
// at position first + t; `slack` multiplies the bound. Every float outside
// the rotated vectors must be unchanged.
void check_rotation(const batch& before, const batch& after, std::size_t first, k::rope_layout layout, double base,
                    k::rope_scaling scaling, double factor, double slack, const std::string& what) {
  const std::size_t d = before.d, half = d / 2;
  std::size_t bad = 0;
  double worst = 0.0;
  for (std::size_t t = 0; t < before.tokens; ++t)
    for (std::size_t h = 0; h < before.heads; ++h) {
      const float* v0 = before.vec(t, h);
      const float* v1 = after.vec(t, h);
      for (std::size_t i = 0; i < half; ++i) {
        const std::size_t ia = layout == k::rope_layout::normal ? 2 * i : i;
        const std::size_t ib = layout == k::rope_layout::normal ? 2 * i + 1 : i + half;
        const double theta = angle(first + t, i, d, base, scaling, factor);
        const double a = v0[ia], b = v0[ib];
        const double want_a = a * std::cos(theta) - b * std::sin(theta);
        const double want_b = a * std::sin(theta) + b * std::cos(theta);
        const double bound = slack * (2.0 * eps * (std::fabs(a) + std::fabs(b)) + 2.0 * denorm);
        const double err = std::max(std::fabs(v1[ia] - want_a), std::fabs(v1[ib] - want_b));
        if (!(err <= bound)) {
          ++bad;
          worst = std::max(worst, err / bound);
        }
      }
    }
  std::size_t touched = 0;
  const std::vector<bool> rotated = before.rotated_mask();
  for (std::size_t o = 0; o < before.storage.size(); ++o)
    if (!rotated[o] && before.storage[o] != after.storage[o]) ++touched;
  INFO(what << ": " << bad << " pairs outside the bound (worst " << worst << "x), " << touched
            << " floats outside the vectors changed");
  CHECK(bad == 0);
  CHECK(touched == 0);
}

constexpr k::rope_layout layouts[] = {k::rope_layout::normal, k::rope_layout::neox};
const char* name(k::rope_layout layout) { return layout == k::rope_layout::normal ? "normal" : "neox"; }

}  // namespace

TEST_CASE("rope_table rejects invalid parameters with the value and the limit", "[kernels][rope]") {
  using k::rope_scaling;
  struct bad_case {
    k::rope_params params;
    ruvllm::errc code;
    const char* mentions;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const bad_case cases[] = {
      {{0, 16, 10000.0, rope_scaling::none, 1.0}, ruvllm::errc::invalid_argument, "head_dim 0"},
      {{7, 16, 10000.0, rope_scaling::none, 1.0}, ruvllm::errc::invalid_argument, "head_dim 7 must be even"},
      {{8, 0, 10000.0, rope_scaling::none, 1.0}, ruvllm::errc::invalid_argument, "max_positions 0"},
      {{8, 16, 0.0, rope_scaling::none, 1.0}, ruvllm::errc::invalid_argument, "base 0 must be finite"},
      {{8, 16, -5.0, rope_scaling::none, 1.0}, ruvllm::errc::invalid_argument, "base -5"},
      {{8, 16, nan, rope_scaling::none, 1.0}, ruvllm::errc::invalid_argument, "base nan"},
      {{8, 16, inf, rope_scaling::none, 1.0}, ruvllm::errc::invalid_argument, "base inf"},
      {{8, 16, 10000.0, rope_scaling::linear, 0.5}, ruvllm::errc::invalid_argument, "scaling_factor 0.5 must be"},
      {{8, 16, 10000.0, rope_scaling::ntk, nan}, ruvllm::errc::invalid_argument, "scaling_factor nan"},
      {{8, 16, 10000.0, rope_scaling::none, inf}, ruvllm::errc::invalid_argument, "scaling_factor inf"},
      {{2, 16, 10000.0, rope_scaling::ntk, 2.0}, ruvllm::errc::invalid_argument, "got 2"},
      {{8, 16, 10000.0, static_cast<rope_scaling>(9), 1.0}, ruvllm::errc::invalid_argument, "scaling 9"},
      {{4, 16, 1e300, rope_scaling::ntk, 1e300}, ruvllm::errc::invalid_argument, "overflows"},
      {{64, k::rope_table::max_entries / 32, 10000.0, rope_scaling::none, 1.0},
       ruvllm::errc::out_of_memory,
       "exceed the limit"},
  };
  for (const bad_case& c : cases) {
    const auto table = k::rope_table::build(c.params);
    REQUIRE_FALSE(table.has_value());
    INFO(table.error().describe());
    CHECK(table.error().code() == c.code);
    CHECK(table.error().message().find(c.mentions) != std::string::npos);
    CHECK_FALSE(k::rope_table::validate(c.params).has_value());
  }
  CHECK(k::rope_table::validate({128, 4096, 500000.0, rope_scaling::ntk, 4.0}).has_value());
  CHECK(k::rope_table().empty());
}

TEST_CASE("rope_table holds cos and sin of the documented angles", "[kernels][rope]") {
  for (const auto scaling : {k::rope_scaling::none, k::rope_scaling::linear, k::rope_scaling::ntk}) {
    for (const std::size_t d : {std::size_t{4}, std::size_t{64}, std::size_t{128}}) {
      const double base = 10000.0, factor = scaling == k::rope_scaling::none ? 1.0 : 4.0;
      const auto table = build(d, 3000, base, scaling, factor);
      CHECK(table.head_dim() == d);
      CHECK(table.max_positions() == 3000);
      CHECK(reinterpret_cast<std::uintptr_t>(table.row(0)) % 64 == 0);
      std::size_t bad = 0;
      // Every position: rows between two direct evaluations are rotated
      // forward, so check all of them.
      for (std::size_t p = 0; p < 3000; ++p) {
        CHECK(table.row(p) == table.row(0) + p * d);
        for (std::size_t i = 0; i < d / 2; ++i) {
          const double theta = angle(p, i, d, base, scaling, factor);
          // Both round cos/sin from double; 2^-24 bounds half an ulp of any |v| <= 1.
          if (!(std::fabs(table.cos(p)[i] - std::cos(theta)) <= 0x1p-24 + 1e-12)) ++bad;
          if (!(std::fabs(table.sin(p)[i] - std::sin(theta)) <= 0x1p-24 + 1e-12)) ++bad;
        }
      }
      INFO("scaling " << static_cast<int>(scaling) << ", d = " << d);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("rope scalings follow their formulas", "[kernels][rope]") {
  const std::size_t d = 128;
  const double base = 10000.0, s = 4.0;
  // NTK: base' = base * s^(d/(d-2)), so the lowest frequency is stretched by
  // exactly s and the highest (i = 0) not at all.
  const k::rope_params ntk{d, 8, base, k::rope_scaling::ntk, s};
  CHECK(k::rope_table::effective_base(ntk) == Approx(base * std::pow(s, 128.0 / 126.0)).epsilon(1e-15));
  const double lowest_plain = std::pow(base, -(d - 2.0) / d);
  const double lowest_ntk = std::pow(k::rope_table::effective_base(ntk), -(d - 2.0) / d);
  CHECK(lowest_ntk * s == Approx(lowest_plain).epsilon(1e-12));
  // Linear with s = 2: position 2q is the unscaled position q (both within
  // half an ulp of the same value, so at most one ulp, 2^-23, apart).
  const auto plain = build(d, 300, base);
  const auto linear = build(d, 600, base, k::rope_scaling::linear, 2.0);
  for (std::size_t q = 0; q < 300; ++q)
    for (std::size_t i = 0; i < d; ++i) REQUIRE(std::fabs(linear.row(2 * q)[i] - plain.row(q)[i]) <= 0x1p-23);
  // NTK leaves pair 0 (frequency 1) as it was.
  const auto ntk_table = build(d, 300, base, k::rope_scaling::ntk, s);
  for (std::size_t p = 0; p < 300; ++p) {
    REQUIRE(std::fabs(ntk_table.cos(p)[0] - plain.cos(p)[0]) <= 0x1p-23);
    REQUIRE(std::fabs(ntk_table.sin(p)[0] - plain.sin(p)[0]) <= 0x1p-23);
  }
}

TEST_CASE("rope_apply matches the double-precision rotation on every backend", "[kernels][rope]") {
  ruvllm::test::rng gen(301);
  struct scaling_case {
    k::rope_scaling scaling;
    double factor;
  };
  const scaling_case scalings[] = {
      {k::rope_scaling::none, 1.0}, {k::rope_scaling::linear, 4.0}, {k::rope_scaling::ntk, 8.0}};
  // Head sizes: tiny, odd pair counts, common, and > 512 (several 256-pair
  // chunks of the normal layout's expansion).
  for (const std::size_t d : {std::size_t{6}, std::size_t{34}, std::size_t{64}, std::size_t{128}, std::size_t{1046}}) {
    for (const scaling_case sc : scalings) {
      const double base = 10000.0;
      const auto table = build(d, 2048, base, sc.scaling, sc.factor);
      for (const k::rope_layout layout : layouts) {
        // One token of 32 heads (decode), 7 tokens of 3 heads (prefill), and
        // a single vector at the last position.
        struct shape {
          std::size_t tokens, heads, first;
        };
        for (const shape sh : {shape{1, 32, 1234}, shape{7, 3, 5}, shape{1, 1, 2047}}) {
          const batch before(gen, d, sh.tokens, sh.heads, d, sh.heads * d);
          for_each_backend([&](auto tag, const std::string& label) {
            batch after(before);
            ops<decltype(tag)>::rope_apply(table, layout, after.x, sh.tokens, sh.heads, sh.first);
            check_rotation(before, after, sh.first, layout, base, sc.scaling, sc.factor, 1.0,
                           label + ", " + name(layout) + ", d = " + std::to_string(d) + ", scaling " +
                               std::to_string(static_cast<int>(sc.scaling)) + ", " + std::to_string(sh.tokens) +
                               " tokens x " + std::to_string(sh.heads) + " heads at " + std::to_string(sh.first));
          });
        }
      }
    }
  }
}

TEST_CASE("rope_apply at position 0 is the identity", "[kernels][rope]") {
  ruvllm::test::rng gen(302);
  for (const std::size_t d : {std::size_t{2}, std::size_t{10}, std::size_t{128}}) {
    const auto table = build(d, 4, 500000.0);
    for (const k::rope_layout layout : layouts) {
      const batch before(gen, d, 1, 9, d, 9 * d);
      for_each_backend([&](auto tag, const std::string& label) {
        batch after(before);
        ops<decltype(tag)>::rope_apply(table, layout, after.x, 1, 9, 0);
        INFO(label << ", " << name(layout) << ", d = " << d);
        CHECK(after.storage == before.storage);
      });
    }
  }
}

TEST_CASE("rope_apply over a batch of tokens equals one call per token", "[kernels][rope]") {
  // Consecutive positions, one dispatch: the same bits as token-by-token calls.
  ruvllm::test::rng gen(303);
  const std::size_t d = 128, heads = 4, tokens = 9, first = 100;
  const auto table = build(d, 256, 10000.0, k::rope_scaling::linear, 2.0);
  const batch before(gen, d, tokens, heads, d, heads * d);
  for (const k::rope_layout layout : layouts) {
    for_each_backend([&](auto tag, const std::string& label) {
      using B = decltype(tag);
      batch all(before), each(before);
      ops<B>::rope_apply(table, layout, all.x, tokens, heads, first);
      for (std::size_t t = 0; t < tokens; ++t) ops<B>::rope_apply(table, layout, each.vec(t, 0), 1, heads, first + t);
      INFO(label << ", " << name(layout));
      CHECK(all.storage == each.storage);
    });
  }
}

TEST_CASE("rope_apply with strides rotates only the addressed vectors", "[kernels][rope]") {
  // Q inside a fused QKV row (token stride > heads * head stride) and partial
  // rotation (head stride > head_dim, e.g. rotary_dim 32 of 80-float heads).
  ruvllm::test::rng gen(304);
  const std::size_t d = 32, heads = 5, head_stride = 80, token_stride = 3 * heads * head_stride + 7, tokens = 4;
  const auto table = build(d, 64, 10000.0, k::rope_scaling::ntk, 2.0);
  const batch before(gen, d, tokens, heads, head_stride, token_stride);
  for (const k::rope_layout layout : layouts) {
    for_each_backend([&](auto tag, const std::string& label) {
      batch after(before);
      ops<decltype(tag)>::rope_apply(table, layout, after.x, tokens, heads, 3,
                                     k::rope_strides{head_stride, token_stride});
      check_rotation(before, after, 3, layout, 10000.0, k::rope_scaling::ntk, 2.0, 1.0,
                     label + ", " + name(layout) + ", strided");
    });
  }
}

TEST_CASE("rope_apply handles large magnitudes, denormals and empty batches", "[kernels][rope]") {
  ruvllm::test::rng gen(305);
  const std::size_t d = 70;  // 35 pairs: a partial vector on every target
  const auto table = build(d, 512);
  for (const float scale : {1e30f, std::numeric_limits<float>::denorm_min() * 1000.0f}) {
    const batch before(gen, d, 3, 5, d, 5 * d, scale);
    for (const k::rope_layout layout : layouts) {
      for_each_backend([&](auto tag, const std::string& label) {
        batch after(before);
        ops<decltype(tag)>::rope_apply(table, layout, after.x, 3, 5, 300);
        check_rotation(before, after, 300, layout, 10000.0, k::rope_scaling::none, 1.0, 1.0,
                       label + ", " + name(layout) + ", scale " + std::to_string(scale));
      });
    }
  }
  const batch before(gen, d, 2, 2, d, 2 * d);
  for_each_backend([&](auto tag, const std::string& label) {
    using B = decltype(tag);
    batch after(before);
    ops<B>::rope_apply(table, k::rope_layout::normal, after.x, 0, 2, 511);
    ops<B>::rope_apply(table, k::rope_layout::neox, after.x, 2, 0, 3);
    INFO(label);
    CHECK(after.storage == before.storage);
  });
}

TEST_CASE("rope backends agree with the scalar reference", "[kernels][rope]") {
  ruvllm::test::rng gen(306);
  for (const std::size_t d : {std::size_t{2}, std::size_t{8}, std::size_t{18}, std::size_t{96}, std::size_t{256}}) {
    const auto table = build(d, 1024, 1e6, k::rope_scaling::linear, 3.0);
    for (const k::rope_layout layout : layouts) {
      const batch before(gen, d, 4, 7, d, 7 * d);
      batch want(before);
      ops<scalar>::rope_apply(table, layout, want.x, 4, 7, 1000);
      for_each_backend([&](auto tag, const std::string& label) {
        batch got(before);
        ops<decltype(tag)>::rope_apply(table, layout, got.x, 4, 7, 1000);
        std::size_t bad = 0;
        const std::size_t half = d / 2;
        for (std::size_t t = 0; t < 4; ++t)
          for (std::size_t h = 0; h < 7; ++h)
            for (std::size_t i = 0; i < half; ++i) {
              const std::size_t ia = layout == k::rope_layout::normal ? 2 * i : i;
              const std::size_t ib = layout == k::rope_layout::normal ? 2 * i + 1 : i + half;
              const double mag = std::fabs(before.vec(t, h)[ia]) + std::fabs(before.vec(t, h)[ib]);
              for (const std::size_t j : {ia, ib})
                if (!(std::fabs(got.vec(t, h)[j] - want.vec(t, h)[j]) <= 4.0 * eps * mag)) ++bad;
            }
        INFO(label << ", " << name(layout) << ", d = " << d);
        CHECK(bad == 0);
      });
    }
  }
}

}  // namespace rope_test
