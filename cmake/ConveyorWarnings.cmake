# SPDX-License-Identifier: BSD-3-Clause
# Warnings are on for everything we compile; the library itself builds clean.
function(conveyor_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANG_AND_ID:CXX,GNU,Clang>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>
    $<$<COMPILE_LANG_AND_ID:C,GNU,Clang>:-Wall -Wextra -Wpedantic>)
  if(CONVEYOR_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
