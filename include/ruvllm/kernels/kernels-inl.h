// The umbrella of all Highway kernel bodies, and the only file ever named in
// HWY_TARGET_INCLUDE: Highway 1.0.3's foreach_target.h expands once per
// translation unit, so every per-target body must be reached from here.
// Each included file carries its own per-target toggle guard.

#include "ruvllm/kernels/target-inl.h"
#include "ruvllm/kernels/distance-inl.h"
#include "ruvllm/kernels/matmul-inl.h"
#include "ruvllm/kernels/norm-inl.h"
#include "ruvllm/kernels/activation-inl.h"
#include "ruvllm/kernels/rope-inl.h"
#include "ruvllm/kernels/quant-inl.h"
#include "ruvllm/kernels/kv_quant-inl.h"
#include "ruvllm/kernels/attention-inl.h"
