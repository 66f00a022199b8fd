// Expands every kernel for every target (default header-only mode).
#include "ruvllm/ruvllm.hpp"

float dot_from_unit_a(const float* a, const float* b, std::size_t n) {
  return ruvllm::kernels::ops<ruvllm::backend::highway>::dot(a, b, n);
}
const char* target_from_unit_a() { return ruvllm::backend::highway::target_name(); }
