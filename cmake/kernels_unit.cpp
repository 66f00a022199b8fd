// The one unit of ruvllm's own programs that compiles the Highway kernels
// (see ruvllm/kernels/dispatch.hpp for the build modes). It includes the
// kernels only: the layers above them are header-only templates with nothing
// to compile here.
#define RUVLLM_KERNELS_IMPLEMENTATION
#include "ruvllm/kernels/ops.hpp"
