# SPDX-License-Identifier: BSD-3-Clause
# The layers of docs/architecture.md, enforced by the build: each component of
# src/ compiles against a view of the tree (a folder of links in the build tree)
# that holds only what it may include, so an #include "<folder>/<header>" of any
# other folder fails to compile with "No such file". scripts/check_layers reads
# the same rules from the source as a backstop (it also sees includes that climb
# with "../", which a view cannot stop), and tests/layers/ proves both refuse.

# The public headers every layer may include, the runtime and core too: the
# services every engine shares. The rest of include/conveyor/ is the engines'
# API, which the runtime and core never see. (scripts/check_layers reads this list.)
set(CONVEYOR_SERVICE_HEADERS
  types.hpp settings.hpp contract.hpp cost_model.hpp simd.hpp enums.h export.hpp version.hpp node_memory.hpp)

# conveyor_layer_includes(<target> MAY_INCLUDE <src folders> [SERVICES_ONLY]):
# <target>'s include path becomes its view: src/<folder> for each folder named,
# the public headers (only the service headers under SERVICES_ONLY) and the
# generated ones. Its own folder's files include each other by their folder's
# path, so a component names its own folder too.
function(conveyor_layer_includes target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "SERVICES_ONLY" "" "MAY_INCLUDE")
  set(view ${PROJECT_BINARY_DIR}/layers/${target})
  file(REMOVE_RECURSE ${view})
  file(MAKE_DIRECTORY ${view}/src)
  foreach(folder IN LISTS arg_MAY_INCLUDE)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${folder} ${view}/src/${folder} SYMBOLIC)
  endforeach()
  if(arg_SERVICES_ONLY)
    file(MAKE_DIRECTORY ${view}/public/conveyor)
    foreach(header IN LISTS CONVEYOR_SERVICE_HEADERS)
      foreach(root ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
        if(EXISTS ${root}/conveyor/${header})
          file(CREATE_LINK ${root}/conveyor/${header} ${view}/public/conveyor/${header} SYMBOLIC)
        endif()
      endforeach()
    endforeach()
    set(public ${view}/public)
  else()
    set(public ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
  endif()
  target_include_directories(${target} PRIVATE ${view}/src ${public})
  set_property(GLOBAL APPEND PROPERTY CONVEYOR_LAYER_TARGETS ${target})
  set_property(TARGET ${target} PROPERTY CONVEYOR_MAY_INCLUDE ${arg_MAY_INCLUDE})
endfunction()

# conveyor_component(<name> MAY_INCLUDE <folders> [SERVICES_ONLY] SOURCES <files>):
# the object library conveyor_<name>, compiled as libconveyor's own code (its
# options, warnings and dependencies' headers), whose objects libconveyor links.
function(conveyor_component name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "SERVICES_ONLY" "" "MAY_INCLUDE;SOURCES")
  set(target conveyor_${name})
  add_library(${target} OBJECT ${arg_SOURCES})
  if(arg_SERVICES_ONLY)
    conveyor_layer_includes(${target} MAY_INCLUDE ${arg_MAY_INCLUDE} SERVICES_ONLY)
  else()
    conveyor_layer_includes(${target} MAY_INCLUDE ${arg_MAY_INCLUDE})
  endif()
  target_compile_definitions(${target} PRIVATE CONVEYOR_BUILDING_LIBRARY)
  target_compile_options(${target} PRIVATE ${CONVEYOR_LIBRARY_OPTIONS})
  target_link_libraries(${target} PRIVATE MPI::MPI_CXX MPI::MPI_C hwy::hwy OpenMP::OpenMP_CXX)
  conveyor_set_warnings(${target})
  set_property(GLOBAL APPEND PROPERTY CONVEYOR_COMPONENTS ${target})
endfunction()
