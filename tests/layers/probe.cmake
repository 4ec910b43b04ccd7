# SPDX-License-Identifier: BSD-3-Clause
# cmake -DBUILD_DIR=<build> -DPROBES=<probe>:<pass|refuse>:<header>;... -P probe.cmake
# Builds each probe target of tests/layers/CMakeLists.txt: a "pass" probe must
# compile, a "refuse" probe must fail because its header is not found (any other
# failure is a broken probe, not a refusal). Prints one line per probe.
set(wrong 0)
set(counts_pass 0)
set(counts_refuse 0)
foreach(entry IN LISTS PROBES)
  string(REPLACE ":" ";" parts "${entry}")
  list(GET parts 0 probe)
  list(GET parts 1 expect)
  list(GET parts 2 header)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${probe}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(FIND "${out}" "${header}: No such file" not_found)
  if(expect STREQUAL "pass" AND rc EQUAL 0)
    math(EXPR counts_pass "${counts_pass} + 1")
  elseif(expect STREQUAL "refuse" AND NOT rc EQUAL 0 AND NOT not_found EQUAL -1)
    math(EXPR counts_refuse "${counts_refuse} + 1")
  else()
    math(EXPR wrong "${wrong} + 1")
    message("WRONG: ${probe} should ${expect} \"${header}\" (exit ${rc}):\n${out}")
  endif()
endforeach()
message("${counts_pass} includes within the layers compiled, ${counts_refuse} across them refused, ${wrong} wrong")
if(wrong GREATER 0)
  message(FATAL_ERROR "the build does not enforce the layers")
endif()
