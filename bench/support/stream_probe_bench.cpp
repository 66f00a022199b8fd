// The STREAM-like probe as rows of its own, so that the results show the
// bandwidth every bw_frac is divided by, and how far one pass strays from
// the probe's best (bw_frac < 1 here is the co-tenant's noise). Each
// iteration is one full pass over the 512 MiB buffer.

#include <benchmark/benchmark.h>

#include "support/bench.hpp"

namespace {

namespace rb = ruvllm::bench;

[[maybe_unused]] const bool registered = [] {
  for (const unsigned threads : {1u, 2u}) {
    benchmark::RegisterBenchmark(rb::baseline_of(rb::join_name({"stream", "read"}, threads)).c_str(),
                                 [threads](benchmark::State& state) {
                                   rb::timed_loop(state, [threads] { (void)rb::stream_read_pass(threads); });
                                   rb::set_bandwidth_counters(state, rb::stream_read_bytes(), threads);
                                 });
  }
  for (const unsigned threads : {1u, 2u}) {
    benchmark::RegisterBenchmark(rb::baseline_of(rb::join_name({"stream", "triad"}, threads)).c_str(),
                                 [threads](benchmark::State& state) {
                                   rb::timed_loop(state, [threads] { (void)rb::stream_triad_pass(threads); });
                                   rb::set_bandwidth_counters(state, rb::stream_triad_bytes(), threads);
                                 });
  }
  return true;
}();

}  // namespace
