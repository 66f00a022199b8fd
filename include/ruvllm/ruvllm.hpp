#ifndef RUVLLM_RUVLLM_HPP
#define RUVLLM_RUVLLM_HPP

// Everything in ruvllm, layer by layer.

#include "ruvllm/core/aligned_buffer.hpp"
#include "ruvllm/core/backend.hpp"
#include "ruvllm/core/byte_reader.hpp"
#include "ruvllm/core/cache_tier.hpp"
#include "ruvllm/core/checksum.hpp"
#include "ruvllm/core/config.hpp"
#include "ruvllm/core/error.hpp"
#include "ruvllm/core/eviction.hpp"
#include "ruvllm/core/half.hpp"
#include "ruvllm/core/mapped_file.hpp"
#include "ruvllm/core/precision.hpp"
#include "ruvllm/core/thread_pool.hpp"
#include "ruvllm/kernels/matmul.hpp"
#include "ruvllm/kernels/ops.hpp"
#include "ruvllm/kv/block_allocator.hpp"
#include "ruvllm/kv/paged_kv_cache.hpp"
#include "ruvllm/memory/arena.hpp"
#include "ruvllm/memory/page_memory.hpp"
#include "ruvllm/memory/unified_pool.hpp"
#include "ruvllm/sona/adam.hpp"
#include "ruvllm/sona/adapter_registry.hpp"
#include "ruvllm/sona/ewc.hpp"
#include "ruvllm/sona/lora.hpp"
#include "ruvllm/sona/router.hpp"
#include "ruvllm/sona/trajectory.hpp"
#include "ruvllm/store/file_io.hpp"
#include "ruvllm/store/hnsw_format.hpp"
#include "ruvllm/store/hnsw_index.hpp"
#include "ruvllm/store/hnsw_store.hpp"
#include "ruvllm/store/records.hpp"
#include "ruvllm/store/vector_space.hpp"
#include "ruvllm/store/wal.hpp"

#endif  // RUVLLM_RUVLLM_HPP
