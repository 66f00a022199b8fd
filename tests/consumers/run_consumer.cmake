# Configures, builds and runs one consumer project (see CMakeLists.txt).
# Inputs: MODE, SOURCE_DIR, BUILD_DIR, CONSUMERS, WORK_DIR, CXX, GENERATOR, FLAGS,
# BUILD_TYPE (default Release), STATIC_DISPATCH, ALL_KERNELS.

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}")
  endif()
  message(STATUS "${out}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()
set(args -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} "-DCMAKE_CXX_FLAGS=${FLAGS}")

if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} -S ${CONSUMERS}/find_package -B ${WORK_DIR}/build ${args}
      -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCOMMON_DIR=${CONSUMERS}/common)
elseif(MODE STREQUAL "add_subdirectory")
  run(${CMAKE_COMMAND} -S ${CONSUMERS}/add_subdirectory -B ${WORK_DIR}/build ${args}
      -DRUVLLM_SOURCE_DIR=${SOURCE_DIR} -DCOMMON_DIR=${CONSUMERS}/common)
elseif(MODE STREQUAL "single_header")
  run(${CMAKE_COMMAND} -S ${CONSUMERS}/single_header -B ${WORK_DIR}/build ${args}
      -DRUVLLM_SINGLE_INCLUDE_DIR=${SOURCE_DIR}/single_include -DCOMMON_DIR=${CONSUMERS}/common
      -DRUVLLM_STATIC_DISPATCH=${STATIC_DISPATCH} -DRUVLLM_ALL_KERNELS=${ALL_KERNELS})
else()
  message(FATAL_ERROR "unknown MODE ${MODE}")
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
if(STATIC_DISPATCH)
  execute_process(COMMAND ldd ${WORK_DIR}/build/consumer OUTPUT_VARIABLE libs)
  if(libs MATCHES "libhwy")
    message(FATAL_ERROR "static dispatch must not need libhwy:\n${libs}")
  endif()
endif()
run(${WORK_DIR}/build/consumer)
