// f32 dot product with xsimd, whose architecture is fixed at compile time:
// this executable is built with -march=native, so it sees only the xsimd and
// core headers (Highway must not be compiled under -march; see
// support/main.cpp). The baseline is the same separately compiled scalar loop
// as in kernels_bench, measured again here because speedups pair rows of
// one process.

#include <cstddef>

#include "kernels/dot_cases.hpp"
#include "ruvllm/kernels/xsimd.hpp"

namespace {

[[maybe_unused]] const bool registered = [] {
  ruvllm::bench::dot_cases::register_f32("dot_xsimd", [](const float* a, const float* b, std::size_t n) {
    return ruvllm::kernels::ops<ruvllm::backend::xsimd>::dot(a, b, n);
  });
  return true;
}();

}  // namespace
