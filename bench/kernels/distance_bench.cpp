// The distance family through Highway's runtime dispatch (distance_bench,
// built without -march flags like any consumer), each row against the plain
// loop of support/distance_baseline.cpp on the same data:
//  * one-to-one at D = 128, 768, 1536 (f32: cosine, l2sq, l1; the f32 dot
//    rows are kernels_bench's, from dot_bench.cpp) and at D = 768 for f16
//    and int8 (i8) with all four kernels: ns per call (the CPU column) and
//    speedup. Two vectors of these widths sit in L1/L2: compute-bound.
//  * one-to-many, one query against 10,000 rows of 768 (the *_many rows, one
//    dispatched call per batch): GBps over the rows read, bw_frac against
//    the STREAM-like probe, and speedup over calling the baseline per row.
//    30 MB of f32 rows stream from DRAM, so these rows measure bandwidth.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ruvllm/ruvllm.hpp"
#include "support/bench.hpp"
#include "support/distance_baseline.hpp"
#include "support/scalar_baseline.hpp"

namespace {

namespace rb = ruvllm::bench;
namespace base = ruvllm::bench::baseline;
using ops = ruvllm::kernels::ops<ruvllm::backend::highway>;
using ruvllm::aligned_buffer;
using ruvllm::f16;

constexpr std::size_t widths[] = {128, 768, 1536};
constexpr std::size_t many_rows = 10'000, many_width = 768;

// ------------------------------------------------------------------ inputs

template <class T>
aligned_buffer<T> allocate(std::size_t n) {
  auto allocated = aligned_buffer<T>::allocate(n);
  if (!allocated) rb::detail::fail("cannot allocate " + std::to_string(n) + " benchmark inputs");
  return std::move(*allocated);
}

aligned_buffer<f16> random_f16(std::size_t n, std::uint64_t seed) {
  const aligned_buffer<float> values = rb::random_floats(n, seed);
  aligned_buffer<f16> out = allocate<f16>(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = ruvllm::to_f16(values[i]);
  return out;
}

aligned_buffer<std::int8_t> random_i8(std::size_t n, std::uint64_t seed) {
  aligned_buffer<std::int8_t> out = allocate<std::int8_t>(n);
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<int> uniform(-128, 127);
  for (std::int8_t& v : out) v = static_cast<std::int8_t>(uniform(engine));
  return out;
}

template <class T>
aligned_buffer<T> random_of(std::size_t n, std::uint64_t seed) {
  if constexpr (std::is_same_v<T, float>)
    return rb::random_floats(n, seed);
  else if constexpr (std::is_same_v<T, f16>)
    return random_f16(n, seed);
  else
    return random_i8(n, seed);
}

/// The baseline's view of an element array: f16 as raw bits.
template <class T>
const auto* raw(const T* p) {
  if constexpr (std::is_same_v<T, f16>)
    return reinterpret_cast<const std::uint16_t*>(p);
  else
    return p;
}

template <class T>
struct pair_inputs {
  explicit pair_inputs(std::size_t n) : a(random_of<T>(n, 1)), b(random_of<T>(n, 2)) {}
  aligned_buffer<T> a, b;
};

template <class T, class R>
struct many_inputs {
  many_inputs() : query(random_of<T>(many_width, 3)), rows(random_of<T>(many_rows * many_width, 4)) {}
  aligned_buffer<T> query, rows;
  aligned_buffer<R> out = allocate<R>(many_rows);
};

// -------------------------------------------------------------- registration

/// Registers "baseline/<row>" running base() and then "<row>" running ours()
/// with its speedup over that baseline; both report GBps for `bytes` per call.
template <class Ours, class Base>
void register_pair(const std::string& row, std::shared_ptr<const void> keep, double bytes, Ours ours, Base base) {
  const std::string base_row = rb::baseline_of(row);
  benchmark::RegisterBenchmark(base_row.c_str(), [keep, base, base_row, bytes](benchmark::State& state) {
    rb::timed_loop(state, base);
    rb::record_baseline(state, base_row);
    rb::set_bandwidth_counters(state, bytes, 1);
  });
  benchmark::RegisterBenchmark(row.c_str(), [keep, ours, base, base_row, bytes](benchmark::State& state) {
    rb::timed_loop(state, ours);
    rb::set_speedup(state, base_row, base);
    rb::set_bandwidth_counters(state, bytes, 1);
  });
}

/// One-to-one rows of one kernel: ours(a, b, n) against base(a, b, n).
template <class T, class Ours, class Base>
void register_one(std::string_view kernel, std::string_view precision, std::size_t n, Ours ours, Base base) {
  const auto in = std::make_shared<const pair_inputs<T>>(n);
  const T* a = in->a.data();
  const T* b = in->b.data();
  register_pair(
      rb::row_name("kernels", kernel, precision, rb::shape({n}), 1), in, 2.0 * static_cast<double>(n * sizeof(T)),
      [a, b, n, ours] { benchmark::DoNotOptimize(ours(a, b, n)); },
      [a, b, n, base] { benchmark::DoNotOptimize(base(raw(a), raw(b), n)); });
}

/// One-to-many rows: ours_many(query, rows, ...) in one call against the
/// baseline called once per row.
template <class T, class R, class OursMany, class Base>
void register_many(std::string_view kernel, std::string_view precision, OursMany ours_many, Base base) {
  const auto in = std::make_shared<many_inputs<T, R>>();
  many_inputs<T, R>* p = in.get();
  register_pair(
      rb::row_name("kernels", kernel, precision, rb::shape({many_rows, many_width}), 1), in,
      static_cast<double>(many_rows * many_width * sizeof(T)),
      [p, ours_many] {
        ours_many(p->query.data(), p->rows.data(), many_width, many_rows, many_width, p->out.data());
        benchmark::DoNotOptimize(p->out.data());
        benchmark::ClobberMemory();
      },
      [p, base] {
        for (std::size_t r = 0; r < many_rows; ++r)
          p->out[r] = base(raw(p->query.data()), raw(p->rows.data() + r * many_width), many_width);
        benchmark::DoNotOptimize(p->out.data());
        benchmark::ClobberMemory();
      });
}

// Overload sets wrapped as callables (an overloaded name cannot be passed).
#define RUVLLM_BENCH_FN(F) [](const auto* a, const auto* b, std::size_t n) { return F(a, b, n); }
#define RUVLLM_BENCH_MANY(F)                                                                             \
  [](const auto* q, const auto* rows, std::size_t n, std::size_t count, std::size_t stride, auto* out) { \
    F(q, rows, n, count, stride, out);                                                                   \
  }

[[maybe_unused]] const bool registered = [] {
  for (const std::size_t d : widths) {
    register_one<float>("cosine", "f32", d, RUVLLM_BENCH_FN(ops::cosine), RUVLLM_BENCH_FN(base::cosine));
    register_one<float>("l2sq", "f32", d, RUVLLM_BENCH_FN(ops::l2sq), RUVLLM_BENCH_FN(base::l2sq));
    register_one<float>("l1", "f32", d, RUVLLM_BENCH_FN(ops::l1), RUVLLM_BENCH_FN(base::l1));
  }
  register_one<f16>("dot", "f16", 768, RUVLLM_BENCH_FN(ops::dot), RUVLLM_BENCH_FN(base::dot_f16));
  register_one<f16>("cosine", "f16", 768, RUVLLM_BENCH_FN(ops::cosine), RUVLLM_BENCH_FN(base::cosine_f16));
  register_one<f16>("l2sq", "f16", 768, RUVLLM_BENCH_FN(ops::l2sq), RUVLLM_BENCH_FN(base::l2sq_f16));
  register_one<f16>("l1", "f16", 768, RUVLLM_BENCH_FN(ops::l1), RUVLLM_BENCH_FN(base::l1_f16));
  register_one<std::int8_t>("dot", "i8", 768, RUVLLM_BENCH_FN(ops::dot), RUVLLM_BENCH_FN(base::dot_i8));
  register_one<std::int8_t>("cosine", "i8", 768, RUVLLM_BENCH_FN(ops::cosine), RUVLLM_BENCH_FN(base::cosine_i8));
  register_one<std::int8_t>("l2sq", "i8", 768, RUVLLM_BENCH_FN(ops::l2sq), RUVLLM_BENCH_FN(base::l2sq_i8));
  register_one<std::int8_t>("l1", "i8", 768, RUVLLM_BENCH_FN(ops::l1), RUVLLM_BENCH_FN(base::l1_i8));

  register_many<float, float>("dot_many", "f32", RUVLLM_BENCH_MANY(ops::dot_many), RUVLLM_BENCH_FN(base::dot));
  register_many<float, float>("cosine_many", "f32", RUVLLM_BENCH_MANY(ops::cosine_many), RUVLLM_BENCH_FN(base::cosine));
  register_many<float, float>("l2sq_many", "f32", RUVLLM_BENCH_MANY(ops::l2sq_many), RUVLLM_BENCH_FN(base::l2sq));
  register_many<f16, float>("cosine_many", "f16", RUVLLM_BENCH_MANY(ops::cosine_many),
                            RUVLLM_BENCH_FN(base::cosine_f16));
  register_many<std::int8_t, float>("cosine_many", "i8", RUVLLM_BENCH_MANY(ops::cosine_many),
                                    RUVLLM_BENCH_FN(base::cosine_i8));
  return true;
}();

#undef RUVLLM_BENCH_FN
#undef RUVLLM_BENCH_MANY

}  // namespace
