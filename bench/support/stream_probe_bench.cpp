// The STREAM-like probe as rows of its own, so that the results show the
// bandwidth every bw_frac is divided by, and how far a pass strays from the
// probe's best (bw_frac well below 1 here is a co-tenant's doing). Each
// iteration is one full pass over the 512 MiB buffer.

#include <benchmark/benchmark.h>

#include <functional>
#include <string>
#include <string_view>

#include "support/bench.hpp"

namespace {

namespace rb = ruvllm::bench;

void register_rows(std::string_view what, std::function<double(unsigned)> pass, double (*bytes)()) {
  for (const unsigned threads : {1u, 2u}) {
    const std::string name = rb::baseline_of(rb::join_name({"stream", what}, threads));
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
      // The first call allocates and fills the buffer: keep that out of the
      // first timed iteration, from which Google Benchmark sizes every
      // repetition's iteration count.
      (void)rb::stream_probe(threads);
      rb::timed_loop(
          state, [=] { benchmark::DoNotOptimize(pass(threads)); }, threads);
      rb::set_bandwidth_counters(state, bytes(), threads);
    });
  }
}

[[maybe_unused]] const bool registered = [] {
  // One row per prefetch plan the probe tries ("read": the GEMV kernels'
  // two streams), so the results show which one the probe's figure is.
  for (const rb::detail::read_prefetch& plan : rb::detail::read_prefetch_plans)
    register_rows(
        plan.name, [plan](unsigned threads) { return rb::stream_read_pass(threads, plan); }, rb::stream_read_bytes);
  register_rows("triad", rb::stream_triad_pass, rb::stream_triad_bytes);
  return true;
}();

}  // namespace
