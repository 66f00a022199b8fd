// RMSNorm, RoPE and softmax through Highway's runtime dispatch
// (kernels_bench, built without -march flags like any consumer), each
// against the plain scalar loop of support/scalar_baseline.cpp on the same
// data. Shapes are one decode step of a 7B-class llama model:
//  * rms_norm 4096: one hidden-state row;
//  * rope 32x128: the query heads of one token, in both layouts;
//  * softmax 32000: a row of logits over the vocabulary.
// Everything fits in L1/L2, so these rows measure compute.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "ruvllm/ruvllm.hpp"
#include "support/bench.hpp"
#include "support/scalar_baseline.hpp"

namespace {

namespace rb = ruvllm::bench;
namespace k = ruvllm::kernels;
using ops = k::ops<ruvllm::backend::highway>;

// Registers "baseline/<row>" running base() and then "<row>" running ours()
// with its speedup over that baseline; `keep` owns the data both use.
template <class Ours, class Base>
void register_pair(std::string_view kernel, const std::string& shape, std::shared_ptr<const void> keep, Ours ours,
                   Base base) {
  const std::string row = rb::row_name("kernels", kernel, "f32", shape, 1);
  const std::string base_row = rb::baseline_of(row);
  benchmark::RegisterBenchmark(base_row.c_str(), [keep, base, base_row](benchmark::State& state) {
    rb::timed_loop(state, base);
    rb::record_baseline(state, base_row);
  });
  benchmark::RegisterBenchmark(row.c_str(), [keep, ours, base, base_row](benchmark::State& state) {
    rb::timed_loop(state, ours);
    rb::set_speedup(state, base_row, base);
  });
}

struct rms_inputs {
  static constexpr std::size_t n = 4096;
  ruvllm::aligned_buffer<float> x = rb::random_floats(n, 31), w = rb::random_floats(n, 32),
                                y = rb::random_floats(n, 33);
};

struct softmax_inputs {
  static constexpr std::size_t n = 32000;
  softmax_inputs() {
    for (float& v : x) v *= 12.0f;  // logits spread over ~[-12, 12]
  }
  ruvllm::aligned_buffer<float> x = rb::random_floats(n, 34), y = rb::random_floats(n, 35);
};

struct rope_inputs {
  static constexpr std::size_t heads = 32, head_dim = 128, position = 1000;
  rope_inputs() {
    auto built = k::rope_table::build({head_dim, 4096, 10000.0, k::rope_scaling::none, 1.0});
    if (!built) rb::detail::fail("cannot build the rope table: " + built.error().describe());
    table = std::move(*built);
  }
  k::rope_table table;
  // Rotated in place every iteration; rotations keep the values bounded.
  ruvllm::aligned_buffer<float> x = rb::random_floats(heads * head_dim, 36);
};

[[maybe_unused]] const bool registered = [] {
  const auto rms = std::make_shared<rms_inputs>();
  register_pair(
      "rms_norm", rb::shape({rms_inputs::n}), rms,
      [p = rms.get()] {
        ops::rms_norm(p->x.data(), p->w.data(), p->y.data(), rms_inputs::n, 1e-5f);
        benchmark::DoNotOptimize(p->y.data());
        benchmark::ClobberMemory();
      },
      [p = rms.get()] {
        rb::baseline::rms_norm(p->x.data(), p->w.data(), p->y.data(), rms_inputs::n, 1e-5f);
        benchmark::DoNotOptimize(p->y.data());
        benchmark::ClobberMemory();
      });

  const auto rope = std::make_shared<rope_inputs>();
  for (const bool neox : {false, true}) {
    register_pair(
        neox ? "rope_neox" : "rope_normal", rb::shape({rope_inputs::heads, rope_inputs::head_dim}), rope,
        [p = rope.get(), neox] {
          ops::rope_apply(p->table, neox ? k::rope_layout::neox : k::rope_layout::normal, p->x.data(), 1,
                          rope_inputs::heads, rope_inputs::position);
          benchmark::DoNotOptimize(p->x.data());
          benchmark::ClobberMemory();
        },
        [p = rope.get(), neox] {
          rb::baseline::rope(p->table.row(rope_inputs::position), rope_inputs::head_dim, neox, p->x.data(),
                             rope_inputs::heads);
          benchmark::DoNotOptimize(p->x.data());
          benchmark::ClobberMemory();
        });
  }

  const auto softmax = std::make_shared<softmax_inputs>();
  register_pair(
      "softmax", rb::shape({softmax_inputs::n}), softmax,
      [p = softmax.get()] {
        ops::softmax(p->x.data(), p->y.data(), softmax_inputs::n);
        benchmark::DoNotOptimize(p->y.data());
        benchmark::ClobberMemory();
      },
      [p = softmax.get()] {
        rb::baseline::softmax(p->x.data(), p->y.data(), softmax_inputs::n);
        benchmark::DoNotOptimize(p->y.data());
        benchmark::ClobberMemory();
      });
  return true;
}();

}  // namespace
