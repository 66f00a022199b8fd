// The distance family (ruvllm/kernels/{scalar,highway,xsimd}/distance.hpp):
// every kernel, element type and form on every backend, and on every compiled
// Highway target this CPU supports, against the scalar reference. Float
// results must agree within the summation error bound n * eps * sum|terms|
// (plus n * denorm_min for underflow), int8 and hamming results exactly; the
// one-to-many forms must return the bits of the one-to-one calls.

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ruvllm/core/half.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "support/compare.hpp"
#include "support/per_target.hpp"
#include "support/rng.hpp"

namespace distance_test {

namespace {

using ruvllm::bf16;
using ruvllm::f16;
using ruvllm::backend::highway;
using ruvllm::backend::scalar;
using xsimd_backend = ruvllm::backend::xsimd;  // a using-declaration would clash with ::xsimd
template <class B>
using ops = ruvllm::kernels::ops<B>;
using i8 = std::int8_t;

constexpr std::size_t lengths[] = {0, 1, 7, 16, 33, 1000, 4099};
constexpr double eps = std::numeric_limits<float>::epsilon();
constexpr double denorm_min = std::numeric_limits<float>::denorm_min();

// ------------------------------------------------------------------ inputs

double widen(float x) { return x; }
double widen(f16 x) { return ruvllm::to_float(x); }
double widen(bf16 x) { return ruvllm::to_float(x); }
double widen(i8 x) { return x; }

template <class T>
T narrow(float x) {
  if constexpr (std::is_same_v<T, f16>)
    return ruvllm::to_f16(x);
  else if constexpr (std::is_same_v<T, bf16>)
    return ruvllm::to_bf16(x);
  else
    return static_cast<T>(x);
}

// Value ranges of the test inputs, per element type.
// large: up to 1e17 (f16: 6e4), whose squares still sum to a finite float
// over 4099 elements; small: 1e-3.
enum class kind { unit, small, large, denormal };

template <class T>
T draw(ruvllm::test::rng& gen, kind k) {
  if constexpr (std::is_same_v<T, i8>) {
    switch (k) {
      case kind::small: return static_cast<i8>(static_cast<int>(gen.uniform_index(0, 4)) - 2);
      case kind::large: return gen.chance(0.5) ? i8{-128} : i8{127};
      case kind::denormal: return static_cast<i8>(static_cast<int>(gen.uniform_index(0, 2)) - 1);
      case kind::unit: break;
    }
    return static_cast<i8>(static_cast<int>(gen.uniform_index(0, 255)) - 128);
  } else {
    if (k == kind::denormal) {
      // Subnormals of the element type itself: float denormals; f16
      // subnormals (exact normal floats once widened); bf16 subnormals,
      // which widen to float denormals.
      const bool negative = gen.chance(0.5);
      if constexpr (std::is_same_v<T, f16>)
        return f16{static_cast<std::uint16_t>(gen.uniform_index(1, 0x3FF) | (negative ? 0x8000u : 0u))};
      else if constexpr (std::is_same_v<T, bf16>)
        return bf16{static_cast<std::uint16_t>(gen.uniform_index(1, 0x7F) | (negative ? 0x8000u : 0u))};
      else
        return gen.uniform(-1000.0f, 1000.0f) * std::numeric_limits<float>::denorm_min();
    }
    // f16 tops out at 65504, so its "large" values are as large as it gets.
    constexpr bool half = std::is_same_v<T, f16>;
    const float scale = k == kind::small ? 1e-3f : k == kind::large ? (half ? 6e4f : 1e17f) : 1.0f;
    return narrow<T>(gen.uniform(-1.0f, 1.0f) * scale);
  }
}

/// Elements placed one element past a 64-byte boundary, so no kernel can
/// rely on alignment, with a canary element after the end.
template <class T>
struct misaligned {
  std::vector<T> storage;
  T* data;
  std::size_t size;
  explicit misaligned(std::size_t n) : storage(n + 64 / sizeof(T) + 2), data(nullptr), size(n) {
    const auto addr = reinterpret_cast<std::uintptr_t>(storage.data());
    data = storage.data() + ((64 - addr % 64) % 64) / sizeof(T) + 1;
  }
  // A moved vector keeps its buffer, so data stays valid; a copy would not.
  misaligned(const misaligned&) = delete;
  misaligned(misaligned&&) noexcept = default;
  T* begin() { return data; }
  T* end() { return data + size; }
  T& operator[](std::size_t i) { return data[i]; }
};

template <class T>
misaligned<T> random_vector(ruvllm::test::rng& gen, std::size_t n, kind k) {
  misaligned<T> v(n);
  for (T& x : v) x = draw<T>(gen, k);
  return v;
}

// -------------------------------------------------------------- the metrics
// One struct per kernel: the entry points of backend B, and the error bound
// of one float result against the exact value.

struct exact_sums {
  double ab = 0, abs_ab = 0, aa = 0, bb = 0, sq_diff = 0, abs_diff = 0;
  std::size_t n = 0;
  template <class T>
  exact_sums(const T* a, const T* b, std::size_t count) : n(count) {
    for (std::size_t i = 0; i < n; ++i) {
      const long double x = widen(a[i]), y = widen(b[i]);
      ab += static_cast<double>(x * y);
      abs_ab += static_cast<double>(std::fabs(x * y));
      aa += static_cast<double>(x * x);
      bb += static_cast<double>(y * y);
      sq_diff += static_cast<double>((x - y) * (x - y));
      abs_diff += static_cast<double>(std::fabs(x - y));
    }
  }
  [[nodiscard]] double nd() const { return static_cast<double>(n); }
};

struct dot_metric {
  static constexpr const char* name = "dot";
  template <class B, class T>
  static auto one(const T* a, const T* b, std::size_t n) {
    return ops<B>::dot(a, b, n);
  }
  template <class B, class T, class R>
  static void many(const T* q, const T* rows, std::size_t n, std::size_t count, std::size_t stride, R* out) {
    ops<B>::dot_many(q, rows, n, count, stride, out);
  }
  static double exact(const exact_sums& s) { return s.ab; }
  static double bound(const exact_sums& s) { return s.nd() * eps * s.abs_ab + s.nd() * denorm_min; }
};

struct l2sq_metric {
  static constexpr const char* name = "l2sq";
  template <class B, class T>
  static auto one(const T* a, const T* b, std::size_t n) {
    return ops<B>::l2sq(a, b, n);
  }
  template <class B, class T, class R>
  static void many(const T* q, const T* rows, std::size_t n, std::size_t count, std::size_t stride, R* out) {
    ops<B>::l2sq_many(q, rows, n, count, stride, out);
  }
  static double exact(const exact_sums& s) { return s.sq_diff; }
  // The difference and the square each round once more than a dot term.
  static double bound(const exact_sums& s) { return (s.nd() + 3) * eps * s.sq_diff + 2 * s.nd() * denorm_min; }
};

struct l1_metric {
  static constexpr const char* name = "l1";
  template <class B, class T>
  static auto one(const T* a, const T* b, std::size_t n) {
    return ops<B>::l1(a, b, n);
  }
  template <class B, class T, class R>
  static void many(const T* q, const T* rows, std::size_t n, std::size_t count, std::size_t stride, R* out) {
    ops<B>::l1_many(q, rows, n, count, stride, out);
  }
  static double exact(const exact_sums& s) { return s.abs_diff; }
  static double bound(const exact_sums& s) { return (s.nd() + 1) * eps * s.abs_diff + s.nd() * denorm_min; }
};

struct cosine_metric {
  static constexpr const char* name = "cosine";
  template <class B, class T>
  static auto one(const T* a, const T* b, std::size_t n) {
    return ops<B>::cosine(a, b, n);
  }
  template <class B, class T, class R>
  static void many(const T* q, const T* rows, std::size_t n, std::size_t count, std::size_t stride, R* out) {
    ops<B>::cosine_many(q, rows, n, count, stride, out);
  }
  static double exact(const exact_sums& s) {
    if (s.aa == 0 || s.bb == 0) return 0;
    return std::clamp(s.ab / std::sqrt(s.aa * s.bb), -1.0, 1.0);
  }
  // First-order propagation of the three sums' errors through
  // ab / sqrt(aa * bb); sum|ab| <= sqrt(aa * bb) keeps the first term below
  // n * eps for normal inputs. Zero vectors must give exactly 0.
  static double bound(const exact_sums& s) {
    if (s.aa == 0 || s.bb == 0) return 0;
    const double n = s.nd();
    const double e_ab = n * eps * s.abs_ab + n * denorm_min;
    const double e_aa = n * eps * s.aa + n * denorm_min;
    const double e_bb = n * eps * s.bb + n * denorm_min;
    return e_ab / std::sqrt(s.aa * s.bb) + std::fabs(exact(s)) * (e_aa / (2 * s.aa) + e_bb / (2 * s.bb)) + 2 * eps;
  }
};

template <class T>
constexpr bool is_int8 = std::is_same_v<T, i8>;

/// Result of backend B against the scalar reference: identical for int8 and
/// for cosine of int8, within twice the bound (both sides err) for floats.
template <class Metric, class B, class T>
void check_against_scalar(const T* a, const T* b, std::size_t n, const exact_sums& sums) {
  const auto got = Metric::template one<B>(a, b, n);
  const auto want = Metric::template one<scalar>(a, b, n);
  INFO(Metric::name << " n = " << n << ": got " << got << ", scalar " << want);
  if constexpr (is_int8<T>) {
    CHECK(got == want);
  } else {
    const double bound = 2 * Metric::bound(sums);
    INFO("bound " << bound);
    CHECK(std::fabs(static_cast<double>(got) - static_cast<double>(want)) <= bound);
  }
}

template <class T, class Body>
void for_each_input(std::uint64_t stream, Body&& body) {
  ruvllm::test::rng gen(stream);
  const std::pair<kind, kind> pairs[] = {{kind::unit, kind::unit},     {kind::large, kind::large},
                                         {kind::large, kind::small},   {kind::small, kind::large},
                                         {kind::denormal, kind::unit}, {kind::denormal, kind::denormal}};
  for (const auto& [ka, kb] : pairs) {
    for (const std::size_t n : lengths) {
      auto a = random_vector<T>(gen, n, ka);
      auto b = random_vector<T>(gen, n, kb);
      const exact_sums sums(a.data, b.data, n);
      INFO("input kinds " << static_cast<int>(ka) << "/" << static_cast<int>(kb));
      body(a.data, b.data, n, sums);
    }
  }
}

template <class... Metrics>
struct metric_list {};
using all_metrics = metric_list<dot_metric, l2sq_metric, l1_metric, cosine_metric>;

template <class Fn, class... Metrics>
void for_each_metric(metric_list<Metrics...>, Fn&& fn) {
  (fn(Metrics{}), ...);
}

template <class R>
bool same_bits(R x, R y) {
  if constexpr (std::is_same_v<R, float>)
    return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
  else
    return x == y;
}

/// out[r] of the one-to-many form equals the one-to-one call on row r, bit
/// for bit, for rows row_stride > n apart; nothing past out[count) is written.
template <class Metric, class B, class T>
void check_many(const T* query, const T* rows, std::size_t n, std::size_t count, std::size_t stride) {
  using R = decltype(Metric::template one<B>(query, rows, n));
  std::vector<R> out(count + 1, R{42});
  Metric::template many<B>(query, rows, n, count, stride, out.data());
  for (std::size_t r = 0; r < count; ++r) {
    INFO(Metric::name << "_many row " << r << " of " << count << ", n = " << n << ", stride " << stride);
    CHECK(same_bits(out[r], Metric::template one<B>(query, rows + r * stride, n)));
  }
  CHECK(out[count] == R{42});
}

}  // namespace

// ------------------------------------------------------------ one-to-one

TEMPLATE_TEST_CASE("highway distances match the scalar reference on every target", "[kernels][distance]", float, f16,
                   bf16, i8) {
  for_each_input<TestType>(1, [](const TestType* a, const TestType* b, std::size_t n, const exact_sums& sums) {
    ruvllm::test::for_each_highway_target([&](const std::string&) {
      for_each_metric(all_metrics{},
                      [&](auto metric) { check_against_scalar<decltype(metric), highway>(a, b, n, sums); });
    });
  });
}

TEMPLATE_TEST_CASE("xsimd distances match the scalar reference", "[kernels][distance]", float, f16, bf16, i8) {
  INFO("xsimd architecture " << xsimd_backend::target_name());
  for_each_input<TestType>(2, [](const TestType* a, const TestType* b, std::size_t n, const exact_sums& sums) {
    for_each_metric(all_metrics{},
                    [&](auto metric) { check_against_scalar<decltype(metric), xsimd_backend>(a, b, n, sums); });
  });
}

TEMPLATE_TEST_CASE("scalar float distances are within the error bound of the exact value", "[kernels][distance]", float,
                   f16, bf16) {
  for_each_input<TestType>(3, [](const TestType* a, const TestType* b, std::size_t n, const exact_sums& sums) {
    for_each_metric(all_metrics{}, [&](auto metric) {
      using metric_t = decltype(metric);
      const double got = metric_t::template one<scalar>(a, b, n);
      INFO(metric_t::name << " n = " << n << ": scalar " << got << ", exact " << metric_t::exact(sums));
      CHECK(std::fabs(got - metric_t::exact(sums)) <= metric_t::bound(sums));
    });
  });
}

TEST_CASE("scalar int8 distances are exact", "[kernels][distance]") {
  for_each_input<i8>(4, [](const i8* a, const i8* b, std::size_t n, const exact_sums& sums) {
    INFO("n = " << n);
    CHECK(ops<scalar>::dot(a, b, n) == static_cast<std::int32_t>(sums.ab));
    CHECK(ops<scalar>::l2sq(a, b, n) == static_cast<std::int32_t>(sums.sq_diff));
    CHECK(ops<scalar>::l1(a, b, n) == static_cast<std::int32_t>(sums.abs_diff));
    CHECK(ops<scalar>::cosine(a, b, n) == static_cast<float>(cosine_metric::exact(sums)));
  });
}

// ----------------------------------------------------------- one-to-many

TEMPLATE_TEST_CASE("one-to-many forms equal repeated one-to-one calls", "[kernels][distance]", float, f16, bf16, i8) {
  ruvllm::test::rng gen(5);
  constexpr std::size_t count = 9;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{1000}}) {
    const std::size_t stride = n + 5;  // rows with gaps, misaligned relative to each other
    const auto query = random_vector<TestType>(gen, n, kind::unit);
    auto rows = random_vector<TestType>(gen, count * stride, kind::unit);
    // Make one row zero (cosine's zero-vector rule) and one equal to the query.
    std::fill(rows.data + 2 * stride, rows.data + 2 * stride + n, TestType{});
    std::copy(query.data, query.data + n, rows.data + 4 * stride);
    for_each_metric(all_metrics{}, [&](auto metric) {
      using metric_t = decltype(metric);
      check_many<metric_t, scalar>(query.data, rows.data, n, count, stride);
      check_many<metric_t, xsimd_backend>(query.data, rows.data, n, count, stride);
      ruvllm::test::for_each_highway_target(
          [&](const std::string&) { check_many<metric_t, highway>(query.data, rows.data, n, count, stride); });
    });
  }
}

TEMPLATE_TEST_CASE("one-to-many forms accept zero rows", "[kernels][distance]", float, f16, bf16, i8) {
  const TestType query[3] = {};
  for_each_metric(all_metrics{}, [&](auto metric) {
    using metric_t = decltype(metric);
    using R = decltype(metric_t::template one<scalar>(query, query, 3));
    R* none = nullptr;
    metric_t::template many<scalar>(query, static_cast<const TestType*>(nullptr), 3, 0, 3, none);
    metric_t::template many<xsimd_backend>(query, static_cast<const TestType*>(nullptr), 3, 0, 3, none);
    metric_t::template many<highway>(query, static_cast<const TestType*>(nullptr), 3, 0, 3, none);
  });
  SUCCEED("no row was read or written");
}

// ----------------------------------------------------------------- gather

/// The gather forms (dot and l2sq) against the one-to-one calls, bit for bit,
/// on rows scattered through a buffer in an order unrelated to their
/// addresses, a row repeated, and nothing past out[count) written.
template <class B, class T>
void check_gather(const T* query, const std::vector<const T*>& rows, std::size_t n) {
  using R = decltype(ops<B>::dot(query, query, n));
  const std::size_t count = rows.size();
  std::vector<R> dots(count + 1, R{42}), l2(count + 1, R{42});
  ops<B>::dot_gather(query, rows.data(), n, count, dots.data());
  ops<B>::l2sq_gather(query, rows.data(), n, count, l2.data());
  for (std::size_t r = 0; r < count; ++r) {
    INFO("gather row " << r << " of " << count << ", n = " << n);
    CHECK(same_bits(dots[r], ops<B>::dot(query, rows[r], n)));
    CHECK(same_bits(l2[r], ops<B>::l2sq(query, rows[r], n)));
  }
  CHECK(dots[count] == R{42});
  CHECK(l2[count] == R{42});
}

TEMPLATE_TEST_CASE("gather forms equal one-to-one calls on scattered rows", "[kernels][distance]", float, f16, bf16,
                   i8) {
  ruvllm::test::rng gen(6);
  constexpr std::size_t count = 11;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{128}, std::size_t{771}}) {
    const std::size_t stride = n + 3;
    const auto query = random_vector<TestType>(gen, n, kind::unit);
    auto buffer = random_vector<TestType>(gen, count * stride, kind::unit);
    std::vector<const TestType*> rows;
    for (std::size_t r = 0; r < count; ++r) rows.push_back(buffer.data + ((r * 7) % count) * stride);
    rows[5] = rows[2];
    check_gather<scalar>(query.data, rows, n);
    check_gather<xsimd_backend>(query.data, rows, n);
    ruvllm::test::for_each_highway_target([&](const std::string&) { check_gather<highway>(query.data, rows, n); });
    // Zero rows: neither rows nor out is touched.
    ops<highway>::dot_gather(query.data, static_cast<const TestType* const*>(nullptr), n, 0,
                             static_cast<decltype(ops<scalar>::dot(query.data, query.data, n))*>(nullptr));
  }
}

// ---------------------------------------------------------------- cosine

TEMPLATE_TEST_CASE("cosine is 0 for zero vectors and stays within [-1, 1]", "[kernels][distance]", float, f16, bf16,
                   i8) {
  ruvllm::test::rng gen(6);
  const auto check = [](const TestType* a, const TestType* b, std::size_t n, float want_low, float want_high) {
    const auto in_range = [&](float c) {
      INFO("n = " << n << ", cosine " << c << ", expected in [" << want_low << ", " << want_high << "]");
      CHECK(c >= want_low);
      CHECK(c <= want_high);
    };
    in_range(ops<scalar>::cosine(a, b, n));
    in_range(ops<xsimd_backend>::cosine(a, b, n));
    ruvllm::test::for_each_highway_target([&](const std::string&) { in_range(ops<highway>::cosine(a, b, n)); });
  };
  for (const std::size_t n : lengths) {
    const misaligned<TestType> zero(n);  // value-initialized: +0
    auto a = random_vector<TestType>(gen, n, kind::unit);
    for (TestType& x : a)  // no zero vector by accident
      if (widen(x) == 0) x = narrow<TestType>(1.0f);
    misaligned<TestType> minus_a(n);
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (is_int8<TestType>)
        minus_a[i] = static_cast<i8>(a[i] == -128 ? 127 : -a[i]);
      else
        minus_a[i] = narrow<TestType>(static_cast<float>(-widen(a[i])));
    }
    check(zero.data, zero.data, n, 0.0f, 0.0f);
    check(zero.data, a.data, n, 0.0f, 0.0f);
    check(a.data, zero.data, n, 0.0f, 0.0f);
    if (n == 0) continue;
    // Rounding may leave [-1, 1] by an ulp before the clamp: these must not.
    const float slack = is_int8<TestType> ? 1e-4f : static_cast<float>(4 * (n + 2) * eps);
    check(a.data, a.data, n, 1.0f - slack, 1.0f);
    check(a.data, minus_a.data, n, -1.0f, -1.0f + slack);
  }
}

TEST_CASE("cosine of vectors whose squares underflow is 0", "[kernels][distance]") {
  // Every square of a float denormal rounds to 0: such vectors count as zero.
  std::vector<float> tiny(100, 1000 * std::numeric_limits<float>::denorm_min());
  std::vector<float> unit(100, 1.0f);
  CHECK(ops<scalar>::cosine(tiny.data(), unit.data(), 100) == 0.0f);
  CHECK(ops<xsimd_backend>::cosine(tiny.data(), unit.data(), 100) == 0.0f);
  ruvllm::test::for_each_highway_target(
      [&](const std::string&) { CHECK(ops<highway>::cosine(tiny.data(), unit.data(), 100) == 0.0f); });
}

// ------------------------------------------------------------------ int8

TEST_CASE("int8 results are exact up to the documented maximum lengths", "[kernels][distance]") {
  using ruvllm::kernels::int8_dot_max_length;
  using ruvllm::kernels::int8_l1_max_length;
  using ruvllm::kernels::int8_l2sq_max_length;
  // The worst cases: every product or difference at its largest magnitude.
  const std::vector<i8> low(int8_l1_max_length, i8{-128}), high(int8_l1_max_length, i8{127});
  const auto check_all = [&](auto backend) {
    using B = decltype(backend);
    CHECK(ops<B>::dot(low.data(), low.data(), int8_dot_max_length) == 2147467264);    // 131071 * 128^2
    CHECK(ops<B>::dot(low.data(), high.data(), int8_dot_max_length) == -2130690176);  // 131071 * -128 * 127
    CHECK(ops<B>::cosine(low.data(), low.data(), int8_dot_max_length) == 1.0f);
    CHECK(ops<B>::cosine(low.data(), high.data(), int8_dot_max_length) == -1.0f);
    CHECK(ops<B>::l2sq(low.data(), high.data(), int8_l2sq_max_length) == 2147450625);  // 33025 * 255^2
    CHECK(ops<B>::l1(low.data(), high.data(), int8_l1_max_length) == 2147483520);      // 8421504 * 255
    CHECK(ops<B>::l1(high.data(), low.data(), int8_l1_max_length) == 2147483520);
    // The one-to-many and gather forms (AVX3_DL computes the query's share
    // of the VNNI bias once per call), with each operand order.
    const i8* rows[2] = {low.data(), high.data()};
    std::int32_t out[2] = {};
    ops<B>::dot_gather(high.data(), rows, int8_dot_max_length, 2, out);
    CHECK(out[0] == -2130690176);
    CHECK(out[1] == 2114044159);  // 131071 * 127^2
    ops<B>::dot_gather(low.data(), rows, int8_dot_max_length, 2, out);
    CHECK(out[0] == 2147467264);
    CHECK(out[1] == -2130690176);
    ops<B>::dot_many(low.data(), high.data(), int8_dot_max_length, 1, int8_dot_max_length, out);
    CHECK(out[0] == -2130690176);
  };
  check_all(scalar{});
  check_all(xsimd_backend{});
  ruvllm::test::for_each_highway_target([&](const std::string&) { check_all(highway{}); });
}

// ------------------------------------------------------- f16/bf16 widening

TEMPLATE_TEST_CASE("f16 and bf16 widen exactly like ruvllm::to_float for every bit pattern", "[kernels][distance]", f16,
                   bf16) {
  // Row r holds pattern r repeated; its dot with a query of ones is
  // copies * to_float(pattern) exactly (partial sums k * x need at most 15
  // significant bits), or inf, or NaN. copies = 16 runs whole vectors on
  // every target, copies = 1 the zero-padded tail.
  constexpr std::size_t patterns = 1u << 16;
  for (const std::size_t copies : {std::size_t{16}, std::size_t{1}}) {
    std::vector<TestType> rows(patterns * copies);
    for (std::size_t p = 0; p < patterns; ++p)
      std::fill_n(rows.begin() + static_cast<std::ptrdiff_t>(p * copies), copies,
                  TestType{static_cast<std::uint16_t>(p)});
    const std::vector<TestType> ones(copies, narrow<TestType>(1.0f));
    std::vector<float> out(patterns);
    const auto check_all = [&](const char* backend) {
      std::size_t mismatches = 0, first = patterns;
      for (std::size_t p = 0; p < patterns; ++p) {
        const float want = static_cast<float>(copies) * ruvllm::to_float(TestType{static_cast<std::uint16_t>(p)});
        const bool ok = std::isnan(want) ? std::isnan(out[p]) : out[p] == want;
        if (!ok && mismatches++ == 0) first = p;
      }
      INFO(backend << ", " << copies << " copies: " << mismatches << " mismatches, first pattern " << first);
      CHECK(mismatches == 0);
    };
    ops<scalar>::dot_many(ones.data(), rows.data(), copies, patterns, copies, out.data());
    check_all("scalar");
    ops<xsimd_backend>::dot_many(ones.data(), rows.data(), copies, patterns, copies, out.data());
    check_all("xsimd");
    ruvllm::test::for_each_highway_target([&](const std::string&) {
      ops<highway>::dot_many(ones.data(), rows.data(), copies, patterns, copies, out.data());
      check_all("highway");
    });
  }
}

// --------------------------------------------------------------- hamming

TEST_CASE("hamming distances are exact on every backend and target", "[kernels][distance]") {
  ruvllm::test::rng gen(7);
  for (const std::size_t words : lengths) {
    misaligned<std::uint64_t> a(words), b(words);
    for (std::size_t i = 0; i < words; ++i) {
      a[i] = gen.next_u64();
      // Mostly few differing bits, sometimes all: both extremes of the counts.
      b[i] = gen.chance(0.1) ? ~a[i] : a[i] ^ (gen.next_u64() & gen.next_u64() & gen.next_u64());
    }
    std::uint64_t want = 0;
    for (std::size_t i = 0; i < words; ++i)
      for (int bit = 0; bit < 64; ++bit) want += ((a[i] >> bit) ^ (b[i] >> bit)) & 1u;
    INFO("words = " << words);
    CHECK(ops<scalar>::hamming(a.data, b.data, words) == want);
    CHECK(ops<xsimd_backend>::hamming(a.data, b.data, words) == want);
    ruvllm::test::for_each_highway_target(
        [&](const std::string&) { CHECK(ops<highway>::hamming(a.data, b.data, words) == want); });
  }
  const std::vector<std::uint64_t> ones(4099, ~std::uint64_t{0}), zeros(4099, 0);
  CHECK(ops<xsimd_backend>::hamming(ones.data(), zeros.data(), 4099) == 64 * 4099);
  ruvllm::test::for_each_highway_target(
      [&](const std::string&) { CHECK(ops<highway>::hamming(ones.data(), zeros.data(), 4099) == 64 * 4099); });
}

TEST_CASE("hamming_many equals repeated hamming calls", "[kernels][distance]") {
  ruvllm::test::rng gen(8);
  constexpr std::size_t count = 9;
  for (const std::size_t words : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{200}}) {
    const std::size_t stride = words + 3;
    misaligned<std::uint64_t> query(words), rows(count * stride);
    for (auto& w : query) w = gen.next_u64();
    for (auto& w : rows) w = gen.next_u64();
    const auto check = [&](auto backend) {
      using B = decltype(backend);
      std::vector<std::uint64_t> out(count + 1, 42);
      ops<B>::hamming_many(query.data, rows.data, words, count, stride, out.data());
      for (std::size_t r = 0; r < count; ++r)
        CHECK(out[r] == ops<scalar>::hamming(query.data, rows.data + r * stride, words));
      CHECK(out[count] == 42);
    };
    check(scalar{});
    check(xsimd_backend{});
    ruvllm::test::for_each_highway_target([&](const std::string&) { check(highway{}); });
  }
}

// ------------------------------------------------ dot (from dot_test.cpp)

TEST_CASE("highway dispatch reports the target it runs", "[kernels][distance]") {
  ruvllm::test::for_each_highway_target(
      [&](const std::string& target) { CHECK(std::string(highway::target_name()) == target); });
  // After the per-target loop the normal choice is restored.
  CHECK(std::string(highway::target_name()) == hwy::TargetName(ruvllm::test::highway_targets().front()));
  INFO("xsimd architecture " << xsimd_backend::target_name());
  CHECK(std::string(xsimd_backend::target_name()).size() > 0);
}

TEST_CASE("dot of all-equal inputs is exact where float can represent it", "[kernels][distance]") {
  std::vector<float> ones(4099, 1.0f), twos(4099, 2.0f);
  ruvllm::test::for_each_highway_target(
      [&](const std::string&) { CHECK(ops<highway>::dot(ones.data(), twos.data(), 4099) == 8198.0f); });
  CHECK(ops<xsimd_backend>::dot(ones.data(), twos.data(), 4099) == 8198.0f);
  CHECK(ops<scalar>::dot(ones.data(), twos.data(), 4099) == 8198.0f);
  CHECK(ops<highway>::l2sq(ones.data(), twos.data(), 4099) == 4099.0f);
  CHECK(ops<highway>::l1(ones.data(), twos.data(), 4099) == 4099.0f);
  CHECK(ops<xsimd_backend>::l2sq(ones.data(), twos.data(), 4099) == 4099.0f);
  CHECK(ops<xsimd_backend>::l1(ones.data(), twos.data(), 4099) == 4099.0f);
}

TEST_CASE("scalar dot is close to the exact sum", "[kernels][distance]") {
  ruvllm::test::rng gen(9);
  for (const std::size_t n : lengths) {
    const auto a = gen.uniform_vector(n), b = gen.uniform_vector(n);
    const double exact = ruvllm::test::dot_exact(a.data(), b.data(), n);
    CHECK(std::fabs(ops<scalar>::dot(a.data(), b.data(), n) - exact) <=
          ruvllm::test::dot_error_bound(a.data(), b.data(), n));
  }
}

}  // namespace distance_test
