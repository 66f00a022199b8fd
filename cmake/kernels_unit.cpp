// The one unit of ruvllm's own programs that compiles the Highway kernels
// (see ruvllm/kernels/dispatch.hpp for the build modes).
#define RUVLLM_KERNELS_IMPLEMENTATION
#include "ruvllm/ruvllm.hpp"
