// f32 dot product through Highway's runtime dispatch (kernels_bench, built
// without -march flags like any consumer), against the plain scalar loop.

#include <cstddef>

#include "kernels/dot_cases.hpp"
#include "ruvllm/ruvllm.hpp"

namespace {

[[maybe_unused]] const bool registered = [] {
  ruvllm::bench::dot_cases::register_f32("dot", [](const float* a, const float* b, std::size_t n) {
    return ruvllm::kernels::ops<ruvllm::backend::highway>::dot(a, b, n);
  });
  return true;
}();

}  // namespace
