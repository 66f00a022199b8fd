// The main of every benchmark executable, compiled with the flags of the
// executables it is linked into (one object for the default ones, one for the
// -march=native ones), so the context names the SIMD targets of the very code
// that was measured. -march=native executables (RUVLLM_BENCH_NATIVE) must not
// see Highway: under -march it switches to static dispatch of one target, and
// its inline per-target code would differ from the other executables'.

#include "ruvllm/kernels/xsimd.hpp"
#ifndef RUVLLM_BENCH_NATIVE
// Only the declaration: the default executables link ruvllm_kernels, which
// defines it.
#include "ruvllm/core/backend.hpp"
#endif

#include <benchmark/benchmark.h>

#include "support/bench.hpp"

int main(int argc, char** argv) {
#ifdef RUVLLM_BENCH_NATIVE
  benchmark::AddCustomContext("highway_target", "none (-march=native executable, Highway not compiled)");
#else
  benchmark::AddCustomContext("highway_target", ruvllm::backend::highway::target_name());
#endif
  benchmark::AddCustomContext("xsimd_arch", ruvllm::backend::xsimd::target_name());
  return ruvllm::bench::run_benchmarks(argc, argv);
}
