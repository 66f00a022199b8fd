# ruvllm's dependencies, all from Debian packages. Used by the source tree
# and by the installed ruvllmConfig.cmake (through find_dependency), so a
# consumer resolves exactly what the library was built against.

if(RUVLLM_DEPENDENCIES_FROM_CONFIG)
  include(CMakeFindDependencyMacro)
  macro(_ruvllm_find)
    find_dependency(${ARGV})
  endmacro()
else()
  macro(_ruvllm_find)
    find_package(${ARGV} REQUIRED)
  endmacro()
endif()

set(THREADS_PREFER_PTHREAD_FLAG ON)
_ruvllm_find(Threads)
_ruvllm_find(hwy)
# xsimd 8.1's exported target links a library "xtl" that Debian does not
# install; an empty imported target satisfies the reference.
if(NOT TARGET xtl)
  add_library(xtl INTERFACE IMPORTED)
endif()
_ruvllm_find(xsimd)
_ruvllm_find(Boost 1.74)
if(RUVLLM_WITH_SODIUM)
  _ruvllm_find(PkgConfig)
  if(NOT TARGET PkgConfig::ruvllm_sodium)
    pkg_check_modules(ruvllm_sodium REQUIRED IMPORTED_TARGET libsodium)
  endif()
endif()
