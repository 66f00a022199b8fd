# Settings for ruvllm's own tests, benchmarks and examples only; nothing here
# reaches consumers of ruvllm::ruvllm.

add_library(ruvllm_warnings INTERFACE)
target_compile_options(ruvllm_warnings INTERFACE -Wall -Wextra -Wpedantic $<$<BOOL:${RUVLLM_WERROR}>:-Werror>)

# Highway compiles every kernel once per SIMD target in each unit that
# expands it. The project's programs therefore link one unit that defines
# the kernels (RUVLLM_KERNELS_IMPLEMENTATION) and see declarations elsewhere
# (RUVLLM_KERNELS_SEPARATE): the kernels compile once per build, not once per
# test file.
add_library(ruvllm_kernels STATIC ${PROJECT_SOURCE_DIR}/cmake/kernels_unit.cpp)
target_link_libraries(ruvllm_kernels PUBLIC ruvllm::ruvllm ruvllm_warnings)
target_compile_definitions(ruvllm_kernels PUBLIC RUVLLM_KERNELS_SEPARATE)
if(RUVLLM_HWY_DISABLED_TARGETS)
  # Sanitizer builds compile the baseline and the best target of each x86
  # level (SCALAR, AVX2, AVX3_DL) instead of all six.
  set(_ruvllm_disabled "${RUVLLM_HWY_DISABLED_TARGETS}")
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
    # The SVE targets are never compiled (see kernels/dispatch.hpp).
    string(APPEND _ruvllm_disabled "|HWY_SVE|HWY_SVE2|HWY_SVE_256|HWY_SVE2_128")
  endif()
  target_compile_definitions(ruvllm_kernels PUBLIC "HWY_DISABLED_TARGETS=(${_ruvllm_disabled})")
endif()
