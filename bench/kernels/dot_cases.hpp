#ifndef RUVLLM_BENCH_KERNELS_DOT_CASES_HPP
#define RUVLLM_BENCH_KERNELS_DOT_CASES_HPP

// The f32 dot-product rows, shared by kernels_bench (Highway) and
// kernels_native_bench (xsimd): both executables measure the same widths
// against the same baseline, each in its own process as bench.hpp requires.
// Widths are common embedding sizes (128: small retrieval heads, 768:
// BERT-base/MiniLM-class, 1536: large API embeddings); all fit in L1/L2, so
// these rows measure compute, and bw_frac > 1 says by how much they beat DRAM.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "support/bench.hpp"
#include "support/scalar_baseline.hpp"

namespace ruvllm::bench::dot_cases {

inline constexpr std::size_t widths[] = {128, 768, 1536};

struct inputs {
  explicit inputs(std::size_t n) : a(random_floats(n, 1)), b(random_floats(n, 2)) {}
  aligned_buffer<float> a;
  aligned_buffer<float> b;
};

/// For each width registers "baseline/kernels/<kernel>/f32/<D>/threads:1"
/// (the scalar loop) and then "kernels/<kernel>/f32/<D>/threads:1", which
/// calls dot(a, b, n) and reports its speedup over that baseline.
template <class Dot>
void register_f32(std::string_view kernel, Dot dot) {
  for (const std::size_t d : widths) {
    // Shared by both rows' closures, which Google Benchmark keeps until exit.
    const auto in = std::make_shared<const inputs>(d);
    const float* a = in->a.data();
    const float* b = in->b.data();
    const double bytes = 2.0 * static_cast<double>(d * sizeof(float));
    const std::string ours = row_name("kernels", kernel, "f32", shape({d}), 1);
    const std::string base = baseline_of(ours);
    const auto baseline_body = [a, b, d] { benchmark::DoNotOptimize(baseline::dot(a, b, d)); };
    const auto ours_body = [a, b, d, dot] { benchmark::DoNotOptimize(dot(a, b, d)); };

    benchmark::RegisterBenchmark(base.c_str(), [in, base, baseline_body, bytes](benchmark::State& state) {
      timed_loop(state, baseline_body);
      record_baseline(state, base);
      set_bandwidth_counters(state, bytes, 1);
    });
    benchmark::RegisterBenchmark(ours.c_str(), [in, base, baseline_body, ours_body, bytes](benchmark::State& state) {
      timed_loop(state, ours_body);
      set_speedup(state, base, baseline_body);
      set_bandwidth_counters(state, bytes, 1);
    });
  }
}

}  // namespace ruvllm::bench::dot_cases

#endif  // RUVLLM_BENCH_KERNELS_DOT_CASES_HPP
