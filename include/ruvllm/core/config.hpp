#ifndef RUVLLM_CORE_CONFIG_HPP
#define RUVLLM_CORE_CONFIG_HPP

// Version and build-mode macros shared by every header.

#define RUVLLM_VERSION_MAJOR 0
#define RUVLLM_VERSION_MINOR 1
#define RUVLLM_VERSION_PATCH 0

// Preconditions on hot paths are checked in debug builds only: the boundary
// (file open, config) validates once and returns ruvllm::error, and inner
// loops then trust their inputs.
#ifndef RUVLLM_ASSERT
#ifdef NDEBUG
#define RUVLLM_ASSERT(cond) static_cast<void>(0)
#else
#include <cstdio>
#include <cstdlib>
#define RUVLLM_ASSERT(cond)      \
  ((cond) ? static_cast<void>(0) \
          : (std::fprintf(stderr, "%s:%d: ruvllm assertion failed: %s\n", __FILE__, __LINE__, #cond), std::abort()))
#endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#define RUVLLM_LIKELY(x) __builtin_expect(!!(x), 1)
#define RUVLLM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define RUVLLM_LIKELY(x) (x)
#define RUVLLM_UNLIKELY(x) (x)
#endif

#endif  // RUVLLM_CORE_CONFIG_HPP
