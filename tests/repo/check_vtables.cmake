# Fails when any binary in BINARIES (a ;-list) defines a vtable for a ruvllm
# type. std::thread's internal state types that merely mention ruvllm in a
# template argument demangle as "vtable for std::..." and do not match.
foreach(binary IN LISTS BINARIES)
  execute_process(COMMAND ${NM} -C ${binary} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${binary}")
  endif()
  string(REGEX MATCHALL "[^\n]*vtable for ruvllm::[^\n]*" hits "${symbols}")
  if(hits)
    string(REPLACE ";" "\n" hits "${hits}")
    message(FATAL_ERROR "${binary} contains ruvllm vtables:\n${hits}")
  endif()
  message(STATUS "${binary}: no ruvllm vtables")
endforeach()
