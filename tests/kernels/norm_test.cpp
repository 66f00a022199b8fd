// RMSNorm and LayerNorm on every Highway target and on xsimd, against the
// scalar reference and against the formulas evaluated in double.
//
// Bounds. A float sum of n terms in any order is within n * eps * sum|terms|
// of the exact sum (eps = 2^-23; first order). The normalization factor is
// 1 / sqrt(sum / n + eps_norm), so a relative error r of the sum moves it by
// r / 2; the final multiplies add a few half-ulps. Two backends that each
// stay within (n / 2 + 4) eps of the exact result differ by at most
// (n + 8) eps, which is the bound used against the scalar reference. Inputs
// whose sums are exact in any order (x = +-1) must then agree bit for bit,
// which catches index and tail mistakes the loose bound could let through.

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

namespace norm_test {

namespace {

using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;  // a using-declaration would clash with ::xsimd
template <class B>
using ops = ruvllm::kernels::ops<B>;

constexpr double eps = std::numeric_limits<float>::epsilon();
constexpr std::size_t lengths[] = {0, 1, 7, 33, 4096, 4099, 32000};
constexpr float norm_eps = 1e-5f;

// Calls body(backend tag, label) for every compiled Highway target this CPU
// runs, then for xsimd.
template <class Body>
void for_each_simd_backend(Body&& body) {
  ruvllm::test::for_each_highway_target([&](const std::string& target) { body(highway{}, "highway " + target); });
  body(xsimd_backend{}, std::string("xsimd ") + xsimd_backend::target_name());
}

// n floats one float past a 64-byte boundary, so no kernel can rely on
// alignment; the slack after them holds a sentinel that must survive.
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

std::vector<float> denormals(ruvllm::test::rng& gen, std::size_t n) {
  std::vector<float> v(n);
  for (auto& x : v) x = gen.uniform(-1.0f, 1.0f) * std::numeric_limits<float>::denorm_min() * 1000.0f;
  return v;
}

// Every element within rel * |want| (+ abs) of want.
void check_close(const misaligned& got, const misaligned& want, double rel, double abs, const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  double worst = 0.0;
  std::size_t worst_at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
    const double bound = rel * std::fabs(static_cast<double>(want[i])) + abs;
    if (!(err <= bound)) {
      ++bad;
      if (!(err <= worst)) {
        worst = err;
        worst_at = i;
      }
    }
  }
  INFO(what << ": " << bad << " of " << got.size() << " outside the bound; worst at " << worst_at << ": got "
            << (got.size() ? got[worst_at] : 0.0f) << ", want " << (want.size() ? want[worst_at] : 0.0f));
  CHECK(bad == 0);
  CHECK(got.tail_intact());
}

void check_identical(const misaligned& got, const misaligned& want, const std::string& what) {
  check_close(got, want, 0.0, 0.0, what);
}

// y = x / sqrt(mean(x^2) + eps) * w in double, row by row.
std::vector<double> rms_norm_exact(const misaligned& x, const misaligned& w, std::size_t rows, std::size_t n) {
  std::vector<double> y(rows * n);
  for (std::size_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(x[r * n + i]) * x[r * n + i];
    const double scale = 1.0 / std::sqrt(sum / static_cast<double>(n) + norm_eps);
    for (std::size_t i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * scale * w[i];
  }
  return y;
}

std::vector<double> layer_norm_exact(const misaligned& x, const misaligned& w, const misaligned& b, std::size_t rows,
                                     std::size_t n) {
  std::vector<double> y(rows * n);
  for (std::size_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += x[r * n + i];
    const double mean = sum / static_cast<double>(n);
    double sq = 0.0;
    for (std::size_t i = 0; i < n; ++i) sq += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    const double scale = 1.0 / std::sqrt(sq / static_cast<double>(n) + norm_eps);
    for (std::size_t i = 0; i < n; ++i) y[r * n + i] = (x[r * n + i] - mean) * scale * w[i] + b[i];
  }
  return y;
}

}  // namespace

TEST_CASE("rms_norm matches the scalar reference on every target and xsimd", "[kernels][norm]") {
  ruvllm::test::rng gen(101);
  for (const std::size_t n : lengths) {
    for (const std::size_t rows : {std::size_t{1}, std::size_t{3}}) {
      const misaligned x(gen.uniform_vector(rows * n, -2.0f, 2.0f));
      const misaligned w(gen.uniform_vector(n, 0.5f, 1.5f));
      misaligned want(rows * n);
      ops<scalar>::rms_norm_rows(x.data(), w.data(), want.data(), rows, n, norm_eps);
      const double rel = (static_cast<double>(n) + 8.0) * eps;
      for_each_simd_backend([&](auto tag, const std::string& label) {
        using B = decltype(tag);
        INFO(label << ", n = " << n << ", rows = " << rows);
        misaligned got(rows * n);
        if (rows == 1)
          ops<B>::rms_norm(x.data(), w.data(), got.data(), n, norm_eps);
        else
          ops<B>::rms_norm_rows(x.data(), w.data(), got.data(), rows, n, norm_eps);
        check_close(got, want, rel, 0.0, "vs scalar");
        // In place gives the same bits as out of place.
        misaligned inplace(x);
        ops<B>::rms_norm_rows(inplace.data(), w.data(), inplace.data(), rows, n, norm_eps);
        check_identical(inplace, got, "in place");
      });
    }
  }
}

TEST_CASE("rms_norm is exact where its sum is", "[kernels][norm]") {
  // x = +-1: every partial sum of squares is an integer below 2^24, exact in
  // any order, so all backends must produce the reference's bits.
  ruvllm::test::rng gen(102);
  for (const std::size_t n : lengths) {
    std::vector<float> signs(2 * n);
    for (auto& s : signs) s = gen.chance(0.5) ? 1.0f : -1.0f;
    const misaligned x(signs);
    const misaligned w(gen.uniform_vector(n, -3.0f, 3.0f));
    misaligned want(2 * n);
    ops<scalar>::rms_norm_rows(x.data(), w.data(), want.data(), 2, n, norm_eps);
    for (std::size_t i = 0; i < 2 * n; ++i) REQUIRE(want[i] == (x[i] * (1.0f / std::sqrt(1.0f + norm_eps))) * w[i % n]);
    for_each_simd_backend([&](auto tag, const std::string& label) {
      INFO(label << ", n = " << n);
      misaligned got(2 * n);
      ops<decltype(tag)>::rms_norm_rows(x.data(), w.data(), got.data(), 2, n, norm_eps);
      check_identical(got, want, "x = +-1");
    });
  }
}

TEST_CASE("rms_norm is close to the double-precision formula", "[kernels][norm]") {
  ruvllm::test::rng gen(103);
  for (const std::size_t n : lengths) {
    const misaligned x(gen.uniform_vector(n, -2.0f, 2.0f));
    const misaligned w(gen.uniform_vector(n, -1.5f, 1.5f));
    const auto exact = rms_norm_exact(x, w, 1, n);
    misaligned exact_f(n);
    for (std::size_t i = 0; i < n; ++i) exact_f.data()[i] = static_cast<float>(exact[i]);
    const double rel = (static_cast<double>(n) / 2.0 + 4.0) * eps;
    misaligned got(n);
    ops<scalar>::rms_norm(x.data(), w.data(), got.data(), n, norm_eps);
    check_close(got, exact_f, rel, 0.0, "scalar vs double");
    for_each_simd_backend([&](auto tag, const std::string& label) {
      INFO(label << ", n = " << n);
      ops<decltype(tag)>::rms_norm(x.data(), w.data(), got.data(), n, norm_eps);
      check_close(got, exact_f, rel, 0.0, "vs double");
    });
  }
}

TEST_CASE("rms_norm handles large magnitudes and denormals", "[kernels][norm]") {
  ruvllm::test::rng gen(104);
  for (const std::size_t n : lengths) {
    // |x| up to 1e15: squares up to 1e30, sums far below FLT_MAX.
    const misaligned big(gen.uniform_vector(n, -1e15f, 1e15f));
    // Denormal squares underflow to 0, so y = x / sqrt(eps) * w: a product of
    // denormals, where one rounding is worth up to one denorm_min.
    const misaligned tiny(denormals(gen, n));
    const misaligned w(gen.uniform_vector(n, 0.5f, 1.5f));
    const double denorm = std::numeric_limits<float>::denorm_min();
    for (const misaligned* x : {&big, &tiny}) {
      misaligned want(n);
      ops<scalar>::rms_norm(x->data(), w.data(), want.data(), n, norm_eps);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(std::isfinite(want[i]));
      for_each_simd_backend([&](auto tag, const std::string& label) {
        INFO(label << ", n = " << n << (x == &big ? ", large" : ", denormal"));
        misaligned got(n);
        ops<decltype(tag)>::rms_norm(x->data(), w.data(), got.data(), n, norm_eps);
        check_close(got, want, (static_cast<double>(n) + 8.0) * eps, 2.0 * denorm, "vs scalar");
      });
    }
  }
}

TEST_CASE("rms_norm normalizes each row on its own", "[kernels][norm]") {
  // Rows of very different scales: a kernel that leaked one row's sum into
  // the next would be off by orders of magnitude.
  ruvllm::test::rng gen(105);
  const std::size_t n = 37, rows = 4;
  std::vector<float> values;
  for (const float scale : {1e-3f, 1.0f, 1e3f, 1e6f})
    for (std::size_t i = 0; i < n; ++i) values.push_back(gen.uniform(-scale, scale));
  const misaligned x(values);
  const misaligned w(gen.uniform_vector(n, 0.5f, 1.5f));
  const auto exact = rms_norm_exact(x, w, rows, n);
  misaligned exact_f(rows * n);
  for (std::size_t i = 0; i < rows * n; ++i) exact_f.data()[i] = static_cast<float>(exact[i]);
  for_each_simd_backend([&](auto tag, const std::string& label) {
    INFO(label);
    misaligned got(rows * n);
    ops<decltype(tag)>::rms_norm_rows(x.data(), w.data(), got.data(), rows, n, norm_eps);
    check_close(got, exact_f, (n / 2.0 + 4.0) * eps, 0.0, "rows vs double");
  });
}

TEST_CASE("layer_norm matches the scalar reference on every target and xsimd", "[kernels][norm]") {
  ruvllm::test::rng gen(111);
  for (const std::size_t n : lengths) {
    for (const std::size_t rows : {std::size_t{1}, std::size_t{3}}) {
      // An offset mean, so the centering matters.
      const misaligned x(gen.uniform_vector(rows * n, 1.0f, 5.0f));
      const misaligned w(gen.uniform_vector(n, 0.5f, 1.5f));
      const misaligned b(gen.uniform_vector(n, -1.0f, 1.0f));
      misaligned want(rows * n);
      ops<scalar>::layer_norm_rows(x.data(), w.data(), b.data(), want.data(), rows, n, norm_eps);
      // y = t * w + b with t = (x - mean) * scale: t's error is bounded by
      // the mean's (n eps |mean| / |x - mean|, relative) and the scale's
      // ((n + 8) eps); in absolute terms, per element,
      // |dy| <= (n + 8) eps (|x| + |mean|) * scale * |w| + 2 eps (|t w| + |b|).
      const auto exact = layer_norm_exact(x, w, b, rows, n);
      for_each_simd_backend([&](auto tag, const std::string& label) {
        using B = decltype(tag);
        INFO(label << ", n = " << n << ", rows = " << rows);
        misaligned got(rows * n);
        if (rows == 1)
          ops<B>::layer_norm(x.data(), w.data(), b.data(), got.data(), n, norm_eps);
        else
          ops<B>::layer_norm_rows(x.data(), w.data(), b.data(), got.data(), rows, n, norm_eps);
        std::size_t bad = 0;
        for (std::size_t r = 0; r < rows; ++r) {
          double sum = 0.0, sq = 0.0;
          for (std::size_t i = 0; i < n; ++i) sum += x[r * n + i];
          const double mean = sum / static_cast<double>(n);
          for (std::size_t i = 0; i < n; ++i) sq += (x[r * n + i] - mean) * (x[r * n + i] - mean);
          const double scale = 1.0 / std::sqrt(sq / static_cast<double>(n) + norm_eps);
          for (std::size_t i = 0; i < n; ++i) {
            const std::size_t k = r * n + i;
            const double t = (x[k] - mean) * scale;
            const double bound =
                (static_cast<double>(n) + 8.0) * eps * (std::fabs(x[k]) + std::fabs(mean)) * scale * std::fabs(w[i]) +
                2.0 * eps * (std::fabs(t * w[i]) + std::fabs(b[i]));
            if (!(std::fabs(static_cast<double>(got[k]) - want[k]) <= 2.0 * bound)) ++bad;
            if (!(std::fabs(got[k] - exact[k]) <= bound)) ++bad;
          }
        }
        CHECK(bad == 0);
        CHECK(got.tail_intact());
        misaligned inplace(x);
        ops<B>::layer_norm_rows(inplace.data(), w.data(), b.data(), inplace.data(), rows, n, norm_eps);
        check_identical(inplace, got, "in place");
      });
    }
  }
}

TEST_CASE("layer_norm is exact where its sums are", "[kernels][norm]") {
  // x = 3 +- 1 in equal numbers (and one 3 when n is odd): the sum is an
  // integer, the mean exactly 3, the squared deviations sum to an integer, so
  // every backend computes the reference's scale; y = t * w + b then differs
  // only by the rounding a fused multiply-add saves (< 2 eps (|t w| + |b|)).
  ruvllm::test::rng gen(112);
  for (const std::size_t n : lengths) {
    std::vector<float> values(n, 3.0f);
    for (std::size_t i = 0; i + 1 < n; i += 2) {
      values[i] = 2.0f;
      values[i + 1] = 4.0f;
    }
    for (std::size_t i = n; i > 1; --i) std::swap(values[i - 1], values[gen.uniform_index(0, i - 1)]);
    const misaligned x(values);
    const misaligned w(gen.uniform_vector(n, -2.0f, 2.0f));
    const misaligned b(gen.uniform_vector(n, -1.0f, 1.0f));
    misaligned want(n);
    ops<scalar>::layer_norm(x.data(), w.data(), b.data(), want.data(), n, norm_eps);
    const float scale = 1.0f / std::sqrt(static_cast<float>(n - n % 2) / static_cast<float>(n) + norm_eps);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(want[i] == ((x[i] - 3.0f) * scale) * w[i] + b[i]);
    for_each_simd_backend([&](auto tag, const std::string& label) {
      INFO(label << ", n = " << n);
      misaligned got(n);
      ops<decltype(tag)>::layer_norm(x.data(), w.data(), b.data(), got.data(), n, norm_eps);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double t = static_cast<double>((x[i] - 3.0f) * scale);
        if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= 2.0 * eps * (std::fabs(t * w[i]) + std::fabs(b[i]))))
          ++bad;
      }
      CHECK(bad == 0);
      CHECK(got.tail_intact());
    });
  }
}

TEST_CASE("layer_norm handles large magnitudes and denormals", "[kernels][norm]") {
  ruvllm::test::rng gen(113);
  for (const std::size_t n : lengths) {
    const misaligned big(gen.uniform_vector(n, -1e15f, 1e15f));
    const misaligned tiny(denormals(gen, n));
    const misaligned w(gen.uniform_vector(n, 0.5f, 1.5f));
    const misaligned b(gen.uniform_vector(n, -1.0f, 1.0f));
    for (const misaligned* x : {&big, &tiny}) {
      misaligned want(n);
      ops<scalar>::layer_norm(x->data(), w.data(), b.data(), want.data(), n, norm_eps);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(std::isfinite(want[i]));
      for_each_simd_backend([&](auto tag, const std::string& label) {
        INFO(label << ", n = " << n << (x == &big ? ", large" : ", denormal"));
        misaligned got(n);
        ops<decltype(tag)>::layer_norm(x->data(), w.data(), b.data(), got.data(), n, norm_eps);
        // Outputs are O(1): the centred values are ~unit after scaling (large)
        // or ~1e-40 (denormal, where b dominates).
        check_close(got, want, 0.0, (static_cast<double>(n) + 8.0) * eps * 4.0, "vs scalar");
      });
    }
  }
}

TEST_CASE("norms of zero length write nothing", "[kernels][norm]") {
  misaligned x(4), w(4), b(4), y(4);
  std::fill(y.data(), y.data() + 4, 7.0f);
  for_each_simd_backend([&](auto tag, const std::string& label) {
    INFO(label);
    ops<decltype(tag)>::rms_norm_rows(x.data(), w.data(), y.data(), 3, 0, norm_eps);
    ops<decltype(tag)>::layer_norm_rows(x.data(), w.data(), b.data(), y.data(), 3, 0, norm_eps);
    ops<decltype(tag)>::rms_norm_rows(x.data(), w.data(), y.data(), 0, 4, norm_eps);
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 7.0f; }));
    CHECK(y.tail_intact());
  });
}

}  // namespace norm_test
