// Softmax, SiLU, GELU and SwiGLU on every Highway target and on xsimd,
// against the scalar reference and against the formulas evaluated in double.
//
// Bounds (eps = 2^-23, one ulp at 1):
//  * SiLU / SwiGLU: exp is within 1 ulp (Highway, xsimd) or 0.5 ulp (libm);
//    the multiply, add and divide add 0.5 ulp each, and exp's error enters
//    the quotient damped by e / (1 + e) <= 1/2: each backend is within 4 ulp
//    of the exact value, so two backends differ by at most 8 ulp.
//  * GELU: z = x (k0 + k1 x^2) carries ~3 roundings, and exp(-|z|) turns an
//    absolute error of up to 2.5 eps |z| of its argument into that relative
//    error: (8 + 4 |z|) eps between backends (which share the rounded
//    constants), (5 + 3 |z|) eps against double.
//  * Outputs below |x| * 2 FLT_MIN come from exp's denormal range, which
//    xsimd flushes to zero: those compare in absolute terms.
//  * Softmax: each output is e_i / S. The ratio of two outputs does not
//    depend on S, so after dividing by their own sum the outputs must match
//    exp(a_i) / sum exp(a_j) (a = the float arguments the kernels compute)
//    within 8 eps; the sum itself is within n eps of 1, the worst-case
//    bound of a float sum of n positive terms.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ruvllm/kernels/ops.hpp"
#include "support/compare.hpp"
#include "support/per_target.hpp"
#include "support/rng.hpp"

namespace activation_test {

namespace {

using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;  // a using-declaration would clash with ::xsimd
template <class B>
using ops = ruvllm::kernels::ops<B>;

constexpr double eps = std::numeric_limits<float>::epsilon();
constexpr double flt_min = std::numeric_limits<float>::min();
constexpr float inf = std::numeric_limits<float>::infinity();
constexpr std::size_t lengths[] = {0, 1, 7, 33, 4096, 4099, 32000};

template <class Body>
void for_each_simd_backend(Body&& body) {
  ruvllm::test::for_each_highway_target([&](const std::string& target) { body(highway{}, "highway " + target); });
  body(xsimd_backend{}, std::string("xsimd ") + xsimd_backend::target_name());
}

// n floats one float past a 64-byte boundary; the slack after them holds a
// sentinel that must survive.
class misaligned {
 public:
  static constexpr float sentinel = 12345.0f;
  explicit misaligned(std::size_t n) : n_(n), storage_(n + 32, sentinel) {
    const auto addr = reinterpret_cast<std::uintptr_t>(storage_.data());
    data_ = storage_.data() + ((64 - addr % 64) % 64) / sizeof(float) + 1;
  }
  misaligned(const std::vector<float>& values) : misaligned(values.size()) {
    std::copy(values.begin(), values.end(), data_);
  }
  misaligned(const misaligned& other) : misaligned(std::vector<float>(other.begin(), other.end())) {}
  misaligned& operator=(const misaligned&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + n_; }
  float operator[](std::size_t i) const { return data_[i]; }
  std::size_t size() const { return n_; }
  bool tail_intact() const {
    return std::all_of(static_cast<const float*>(data_) + n_, storage_.data() + storage_.size(),
                       [](float v) { return v == sentinel; });
  }

 private:
  std::size_t n_;
  std::vector<float> storage_;
  float* data_;
};

// Elementwise inputs: a spread of ordinary values, large magnitudes, zeros
// of both signs, denormals and the band where exp(-|x|) becomes denormal.
std::vector<float> activation_inputs(ruvllm::test::rng& gen, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (gen.uniform_index(0, 7)) {
      case 0: v[i] = gen.uniform(-1e30f, 1e30f); break;
      case 1: v[i] = gen.uniform(-1.0f, 1.0f) * std::numeric_limits<float>::denorm_min() * 1000.0f; break;
      case 2: v[i] = gen.uniform(-110.0f, -80.0f); break;
      case 3: v[i] = gen.chance(0.5) ? 0.0f : -0.0f; break;
      case 4: v[i] = gen.uniform(-1.0f, 1.0f) * 3e38f; break;
      default: v[i] = gen.normal(0.0f, 6.0f); break;
    }
  }
  return v;
}

// |got - want| <= ulps * ulp-size-of(want) + abs, element by element.
template <class Bound>
void check_elementwise(const misaligned& got, const std::vector<double>& want, Bound bound, const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, worst_at = 0;
  double worst = -1.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (static_cast<double>(got[i]) == want[i]) continue;  // also equal infinities (gate * up overflowing)
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double b = bound(i);
    if (!(err <= b)) {
      ++bad;
      if (!(err / b <= worst)) {
        worst = err / b;
        worst_at = i;
      }
    }
  }
  INFO(what << ": " << bad << " of " << got.size() << " outside the bound; worst at " << worst_at << ": got "
            << (got.size() ? got[worst_at] : 0.0f) << ", want " << (want.size() ? want[worst_at] : 0.0) << ", " << worst
            << "x the bound");
  CHECK(bad == 0);
  CHECK(got.tail_intact());
}

std::vector<double> to_double(const misaligned& v) { return {v.begin(), v.end()}; }

double silu_exact(double x) { return x / (1.0 + std::exp(-x)); }
// ggml's formula, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in double
// (through the logistic identity, so the negative tail keeps its digits).
double gelu_exact(double x) {
  const double u = std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
  if (std::isinf(u)) return u > 0 ? x : 0.0;
  return x / (1.0 + std::exp(-2.0 * u));
}
double gelu_z(double x) { return 2.0 * std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x); }

}  // namespace

// ------------------------------------------------------------------- softmax

namespace {

// The arguments a_i = fl(fl(x_i - max) * scale) every backend computes,
// then exp(a_i) / sum in double: the reference for the shape.
std::vector<double> softmax_shape(const float* x, std::size_t n, float scale) {
  std::vector<double> p(n);
  if (n == 0) return p;
  const float max = *std::max_element(x, x + n);
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) sum += p[i] = std::exp(static_cast<double>((x[i] - max) * scale));
  for (auto& v : p) v /= sum;
  return p;
}

// Sum to 1 within n eps, the shape within 8 eps, and the largest input has
// the largest output.
void check_softmax_row(const float* x, const float* y, std::size_t n, float scale, const std::string& what) {
  INFO(what << ", n = " << n << ", scale = " << scale);
  if (n == 0) return;
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) sum += y[i];
  CHECK(std::fabs(sum - 1.0) <= (static_cast<double>(n) + 4.0) * eps);
  const auto p = softmax_shape(x, n, scale);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!(std::fabs(y[i] / sum - p[i]) <= 8.0 * eps * p[i] + 4.0 * flt_min)) ++bad;
  CHECK(bad == 0);
  const std::size_t arg_x = static_cast<std::size_t>(std::max_element(x, x + n) - x);
  CHECK(y[arg_x] == *std::max_element(y, y + n));
}

}  // namespace

TEST_CASE("softmax matches the reference shape and sums to 1 on every backend", "[kernels][softmax]") {
  ruvllm::test::rng gen(201);
  for (const std::size_t n : lengths) {
    for (const float scale : {1.0f, 0.125f, 2.5f}) {
      std::vector<float> values(n);
      for (auto& v : values) v = gen.normal(0.0f, 4.0f);
      const misaligned x(values);
      misaligned want(n);
      ops<scalar>::softmax(x.data(), want.data(), n, scale);
      check_softmax_row(x.data(), want.data(), n, scale, "scalar");
      CHECK(want.tail_intact());
      // Scalar and SIMD share the arguments and differ in exp (<= 1.5 ulp), the
      // final multiply and the sum: 2 (n + 4) eps relative bounds the gap.
      const double rel = 2.0 * (static_cast<double>(n) + 4.0) * eps;
      for_each_simd_backend([&](auto tag, const std::string& label) {
        using B = decltype(tag);
        misaligned got(n);
        ops<B>::softmax(x.data(), got.data(), n, scale);
        check_softmax_row(x.data(), got.data(), n, scale, label);
        check_elementwise(
            got, to_double(want), [&](std::size_t i) { return rel * std::fabs(want[i]) + 4.0 * flt_min; },
            label + " vs scalar");
        misaligned inplace(x);
        ops<B>::softmax(inplace.data(), n, scale);
        check_elementwise(
            inplace, to_double(got), [](std::size_t) { return 0.0; }, label + " in place");
      });
    }
  }
}

TEST_CASE("softmax with a scale is the softmax of the scaled logits", "[kernels][softmax]") {
  // Against softmax(scale * x) evaluated in double from the exact products:
  // the kernels' arguments a_i = fl(fl(x_i - max) * scale) are within
  // eps |a_i| of the exact ones, which exp turns into relative errors, and
  // the normalization spreads the average of them (A = sum p_j |a_j|).
  ruvllm::test::rng gen(202);
  for (const std::size_t n : {std::size_t{7}, std::size_t{4099}}) {
    const misaligned x(gen.uniform_vector(n, -30.0f, 30.0f));
    for (const float scale : {0.7f, 1.0f / 11.3137085f, 3.0f}) {
      const double max = *std::max_element(x.begin(), x.end());
      std::vector<double> a(n), p(n);
      double sum = 0.0;
      for (std::size_t i = 0; i < n; ++i) sum += p[i] = std::exp(a[i] = scale * (x[i] - max));
      double average_a = 0.0;
      for (std::size_t i = 0; i < n; ++i) average_a += (p[i] /= sum) * std::fabs(a[i]);
      const auto bound = [&](std::size_t i) {
        return (8.0 + 2.0 * std::fabs(a[i]) + 2.0 * average_a) * eps * p[i] + 4.0 * flt_min;
      };
      const auto run = [&](auto tag, const std::string& label) {
        misaligned y(n);
        ops<decltype(tag)>::softmax(x.data(), y.data(), n, scale);
        check_elementwise(y, p, bound, label + ", scale " + std::to_string(scale));
      };
      run(scalar{}, "scalar");
      for_each_simd_backend(run);
    }
  }
}

TEST_CASE("softmax of large inputs neither overflows nor loses the argmax", "[kernels][softmax]") {
  ruvllm::test::rng gen(203);
  for (const std::size_t n : lengths) {
    if (n == 0) continue;
    for (const float range : {1e4f, 3e38f}) {
      // uniform(-range, range) would overflow its width 2 * range to inf.
      std::vector<float> values = gen.uniform_vector(n);
      for (auto& v : values) v *= range;
      // A unique winner well clear of the rest: its probability must be the largest.
      const std::size_t winner = gen.uniform_index(0, n - 1);
      values[winner] = range;
      const misaligned x(values);
      const auto run = [&](auto tag, const std::string& label) {
        misaligned y(n);
        ops<decltype(tag)>::softmax(x.data(), y.data(), n, 1.0f);
        INFO(label << ", n = " << n << ", range " << range);
        CHECK(std::all_of(y.begin(), y.end(), [](float v) { return std::isfinite(v) && v >= 0.0f && v <= 1.0f; }));
        CHECK(static_cast<std::size_t>(std::max_element(y.begin(), y.end()) - y.begin()) == winner);
        check_softmax_row(x.data(), y.data(), n, 1.0f, label);
      };
      run(scalar{}, "scalar");
      for_each_simd_backend(run);
    }
  }
}

TEST_CASE("softmax of masked logits is exact", "[kernels][softmax]") {
  ruvllm::test::rng gen(204);
  for (const std::size_t n : lengths) {
    if (n == 0) continue;
    // All -inf except one: exactly one-hot.
    std::vector<float> one_hot(n, -inf);
    const std::size_t hot = gen.uniform_index(0, n - 1);
    one_hot[hot] = gen.uniform(-100.0f, 100.0f);
    // A random mask over equal logits: exactly 1 / (unmasked count), as
    // exp(0) = 1 and the count is exact.
    std::vector<float> masked(n, 5.0f);
    std::size_t kept = n;
    for (std::size_t i = 0; i < n; ++i)
      if (i != hot && gen.chance(0.6)) {
        masked[i] = -inf;
        --kept;
      }
    const float share = 1.0f / static_cast<float>(kept);
    // Every logit masked: uniform by definition (the limit of equal logits).
    const std::vector<float> all_masked(n, -inf);
    const auto run = [&](auto tag, const std::string& label) {
      using B = decltype(tag);
      INFO(label << ", n = " << n);
      misaligned y(one_hot);
      ops<B>::softmax(y.data(), n);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(y[i] == (i == hot ? 1.0f : 0.0f));
      misaligned z(masked);
      ops<B>::softmax(z.data(), n);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(z[i] == (masked[i] == -inf ? 0.0f : share));
      misaligned u(all_masked);
      ops<B>::softmax(u.data(), n, 0.5f);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(u[i] == 1.0f / static_cast<float>(n));
      CHECK((y.tail_intact() && z.tail_intact() && u.tail_intact()));
    };
    run(scalar{}, "scalar");
    for_each_simd_backend(run);
  }
}

TEST_CASE("softmax rows are independent", "[kernels][softmax]") {
  ruvllm::test::rng gen(205);
  const std::size_t n = 1001, rows = 5;
  std::vector<float> values = gen.uniform_vector(rows * n, -20.0f, 20.0f);
  for (std::size_t i = 0; i < n; ++i) values[2 * n + i] = -inf;  // one fully masked row
  for (std::size_t i = 0; i < n; ++i) values[3 * n + i] *= 1000.0f;
  const misaligned x(values);
  for_each_simd_backend([&](auto tag, const std::string& label) {
    using B = decltype(tag);
    misaligned all(rows * n);
    ops<B>::softmax_rows(x.data(), all.data(), rows, n, 0.5f);
    for (std::size_t r = 0; r < rows; ++r) {
      misaligned one(n);
      ops<B>::softmax(x.data() + r * n, one.data(), n, 0.5f);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(all[r * n + i] == one[i]);
      if (r != 2) check_softmax_row(x.data() + r * n, one.data(), n, 0.5f, label + " row " + std::to_string(r));
    }
    CHECK(all.tail_intact());
  });
}

TEST_CASE("softmax of denormal logits is uniform within the bound", "[kernels][softmax]") {
  ruvllm::test::rng gen(206);
  for (const std::size_t n : lengths) {
    std::vector<float> values(n);
    for (auto& v : values) v = gen.uniform(-1.0f, 1.0f) * std::numeric_limits<float>::denorm_min() * 100.0f;
    const misaligned x(values);
    for_each_simd_backend([&](auto tag, const std::string& label) {
      misaligned y(n);
      ops<decltype(tag)>::softmax(x.data(), y.data(), n);
      check_softmax_row(x.data(), y.data(), n, 1.0f, label);
      // exp of a denormal argument is 1, so every output is 1/n exactly.
      for (std::size_t i = 0; i < n; ++i) REQUIRE(y[i] == 1.0f / static_cast<float>(n));
    });
  }
}

// --------------------------------------------------------- silu, gelu, swiglu

TEST_CASE("silu, gelu and swiglu match the scalar reference on every backend", "[kernels][activation]") {
  ruvllm::test::rng gen(211);
  for (const std::size_t n : lengths) {
    const misaligned x(activation_inputs(gen, n));
    const misaligned up(gen.uniform_vector(n, -4.0f, 4.0f));
    misaligned silu_want(n), gelu_want(n), swiglu_want(n);
    ops<scalar>::silu(x.data(), silu_want.data(), n);
    ops<scalar>::gelu(x.data(), gelu_want.data(), n);
    ops<scalar>::swiglu(x.data(), up.data(), swiglu_want.data(), n);
    const auto silu_bound = [&](std::size_t i) {
      return 8.0 * eps * std::fabs(silu_want[i]) + 2.0 * flt_min * std::fabs(x[i]);
    };
    const auto gelu_bound = [&](std::size_t i) {
      const double z = std::fabs(gelu_z(x[i]));
      return (8.0 + 4.0 * std::min(z, 200.0)) * eps * std::fabs(gelu_want[i]) + 2.0 * flt_min * std::fabs(x[i]);
    };
    const auto swiglu_bound = [&](std::size_t i) {
      return 10.0 * eps * std::fabs(swiglu_want[i]) + 2.0 * flt_min * std::fabs(x[i] * up[i]);
    };
    for_each_simd_backend([&](auto tag, const std::string& label) {
      using B = decltype(tag);
      INFO(label << ", n = " << n);
      misaligned y(n);
      ops<B>::silu(x.data(), y.data(), n);
      check_elementwise(y, to_double(silu_want), silu_bound, "silu");
      ops<B>::gelu(x.data(), y.data(), n);
      check_elementwise(y, to_double(gelu_want), gelu_bound, "gelu");
      ops<B>::swiglu(x.data(), up.data(), y.data(), n);
      check_elementwise(y, to_double(swiglu_want), swiglu_bound, "swiglu");
      // In place, into either input of swiglu.
      misaligned inplace(x);
      ops<B>::silu(inplace.data(), inplace.data(), n);
      ops<B>::silu(x.data(), y.data(), n);
      check_elementwise(
          inplace, to_double(y), [](std::size_t) { return 0.0; }, "silu in place");
      misaligned gate_out(x), up_out(up);
      ops<B>::swiglu(gate_out.data(), up.data(), gate_out.data(), n);
      ops<B>::swiglu(x.data(), up_out.data(), up_out.data(), n);
      ops<B>::swiglu(x.data(), up.data(), y.data(), n);
      check_elementwise(
          gate_out, to_double(y), [](std::size_t) { return 0.0; }, "swiglu into gate");
      check_elementwise(
          up_out, to_double(y), [](std::size_t) { return 0.0; }, "swiglu into up");
    });
  }
}

TEST_CASE("silu and gelu are close to their double-precision formulas", "[kernels][activation]") {
  ruvllm::test::rng gen(212);
  for (const std::size_t n : {std::size_t{7}, std::size_t{4099}}) {
    const misaligned x(activation_inputs(gen, n));
    std::vector<double> silu_exact_v(n), gelu_exact_v(n);
    for (std::size_t i = 0; i < n; ++i) {
      silu_exact_v[i] = silu_exact(x[i]);
      gelu_exact_v[i] = gelu_exact(x[i]);
    }
    // Half of the between-backend bounds, plus the rounding of the result.
    const auto silu_bound = [&](std::size_t i) {
      return 5.0 * eps * std::fabs(silu_exact_v[i]) + 2.0 * flt_min * std::fabs(x[i]);
    };
    const auto gelu_bound = [&](std::size_t i) {
      const double z = std::fabs(gelu_z(x[i]));
      return (5.0 + 3.0 * std::min(z, 200.0)) * eps * std::fabs(gelu_exact_v[i]) + 2.0 * flt_min * std::fabs(x[i]);
    };
    const auto run = [&](auto tag, const std::string& label) {
      using B = decltype(tag);
      INFO(label << ", n = " << n);
      misaligned y(n);
      ops<B>::silu(x.data(), y.data(), n);
      check_elementwise(y, silu_exact_v, silu_bound, "silu vs double");
      ops<B>::gelu(x.data(), y.data(), n);
      check_elementwise(y, gelu_exact_v, gelu_bound, "gelu vs double");
    };
    run(scalar{}, "scalar");
    for_each_simd_backend(run);
  }
}

TEST_CASE("silu and gelu limits", "[kernels][activation]") {
  // Exact at the anchors: 0 -> 0, large positive -> x, large negative -> 0
  // (x * e^-|x| underflows), and x^3 overflowing in gelu must not give NaN.
  const std::vector<float> anchors = {0.0f, -0.0f, 1e30f, -1e30f, 3e38f, -3e38f, 200.0f, -200.0f};
  const misaligned x(anchors);
  const auto run = [&](auto tag, const std::string& label) {
    using B = decltype(tag);
    INFO(label);
    misaligned s(anchors.size()), g(anchors.size());
    ops<B>::silu(x.data(), s.data(), anchors.size());
    ops<B>::gelu(x.data(), g.data(), anchors.size());
    for (std::size_t i = 0; i < anchors.size(); ++i) {
      INFO("x = " << x[i]);
      const float want = x[i] > 0.0f ? x[i] : 0.0f;
      CHECK(s[i] == want);
      CHECK(g[i] == want);
    }
    // gelu(x) < 0 on the negative side; silu(-1) = -1 / (1 + e).
    misaligned one(std::vector<float>{-1.0f, 1.0f});
    ops<B>::silu(one.data(), one.data(), 2);
    CHECK(ruvllm::test::ulp_distance(one[0], static_cast<float>(-1.0 / (1.0 + std::exp(1.0)))) <= 4);
    CHECK(ruvllm::test::ulp_distance(one[1], static_cast<float>(1.0 / (1.0 + std::exp(-1.0)))) <= 4);
  };
  run(scalar{}, "scalar");
  for_each_simd_backend(run);
}

}  // namespace activation_test
