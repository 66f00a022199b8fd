// A second unit expanding the same kernels: the program must still link.
#include "ruvllm/ruvllm.hpp"

float dot_from_unit_b(const float* a, const float* b, std::size_t n) {
  return ruvllm::kernels::ops<ruvllm::backend::highway>::dot(a, b, n);
}
const char* target_from_unit_b() { return ruvllm::backend::highway::target_name(); }
