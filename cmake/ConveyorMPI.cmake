# SPDX-License-Identifier: BSD-3-Clause
# Selects the MPI library. Debian installs Open MPI and MPICH side by side; each has
# its own compiler wrappers (mpicxx.openmpi / mpicxx.mpich) and launcher
# (mpiexec.openmpi / mpiexec.mpich). FindMPI interrogates the wrapper we name, so the
# include paths and libraries of exactly one MPI end up on every target.
if(CONVEYOR_MPI)
  if(NOT CONVEYOR_MPI MATCHES "^(openmpi|mpich)$")
    message(FATAL_ERROR "CONVEYOR_MPI must be 'openmpi', 'mpich' or empty, not '${CONVEYOR_MPI}'")
  endif()
  foreach(lang C CXX)
    string(TOLOWER "${lang}" _l)
    if(_l STREQUAL "c")
      set(_wrapper mpicc.${CONVEYOR_MPI})
    else()
      set(_wrapper mpicxx.${CONVEYOR_MPI})
    endif()
    find_program(_conveyor_${_l}_wrapper NAMES ${_wrapper} REQUIRED NO_CACHE)
    set(MPI_${lang}_COMPILER "${_conveyor_${_l}_wrapper}" CACHE FILEPATH "MPI ${lang} wrapper" FORCE)
  endforeach()
  find_program(_conveyor_mpiexec NAMES mpiexec.${CONVEYOR_MPI} REQUIRED NO_CACHE)
  set(MPIEXEC_EXECUTABLE "${_conveyor_mpiexec}" CACHE FILEPATH "MPI launcher" FORCE)
elseif(DEFINED ENV{MPICC} AND NOT MPI_C_COMPILER)
  # As mpi4py's build finds its MPI (pip install of the Python package): the
  # wrapper named by MPICC, else `mpicc` on the path (FindMPI's default). The
  # C++ wrapper is MPICXX, else MPICC's name with mpicc -> mpicxx, so both come
  # from the same MPI (FindMPI alone would take the default `mpicxx`).
  set(MPI_C_COMPILER "$ENV{MPICC}" CACHE FILEPATH "MPI C wrapper (from MPICC)")
  if(DEFINED ENV{MPICXX})
    set(MPI_CXX_COMPILER "$ENV{MPICXX}" CACHE FILEPATH "MPI C++ wrapper (from MPICXX)")
  else()
    string(REGEX REPLACE "mpicc([^/]*)$" "mpicxx\\1" _conveyor_cxx_wrapper "$ENV{MPICC}")
    set(MPI_CXX_COMPILER "${_conveyor_cxx_wrapper}" CACHE FILEPATH "MPI C++ wrapper (from MPICC)")
  endif()
endif()

find_package(MPI 3.0 REQUIRED COMPONENTS C CXX)

# Which MPI did we get? Tests need launcher flags that differ between the two.
include(CheckSymbolExists)
set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
check_symbol_exists(OPEN_MPI "mpi.h" CONVEYOR_HAVE_OPEN_MPI)
check_symbol_exists(MPICH_VERSION "mpi.h" CONVEYOR_HAVE_MPICH)
unset(CMAKE_REQUIRED_INCLUDES)
if(CONVEYOR_HAVE_OPEN_MPI)
  set(CONVEYOR_MPI_FLAVOUR openmpi)
elseif(CONVEYOR_HAVE_MPICH)
  set(CONVEYOR_MPI_FLAVOUR mpich)
else()
  set(CONVEYOR_MPI_FLAVOUR other)
endif()
message(STATUS "Conveyor: MPI flavour ${CONVEYOR_MPI_FLAVOUR}, launcher ${MPIEXEC_EXECUTABLE}")

# The MPI library's own identification (MPI_Get_library_version, first line),
# e.g. "Open MPI v4.1.4, package: ..." or "MPICH Version: 4.0.2": the Python
# package compares it with mpi4py's at import. Empty when the probe cannot run.
if(NOT DEFINED CONVEYOR_MPI_LIBRARY_VERSION)
  set(_probe "${CMAKE_BINARY_DIR}/CMakeFiles/conveyor_mpi_version.c")
  file(WRITE "${_probe}" [=[
#include <mpi.h>
#include <stdio.h>
int main(void) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int n = 0;
  MPI_Get_library_version(v, &n);  /* allowed before MPI_Init (MPI 3.1, 8.1.1) */
  fputs(v, stdout);
  return 0;
}
]=])
  try_run(_run_rc _compile_ok "${CMAKE_BINARY_DIR}/CMakeFiles/conveyor_mpi_version" SOURCES "${_probe}"
          LINK_LIBRARIES MPI::MPI_C RUN_OUTPUT_VARIABLE _version)
  set(_first "")
  if(_compile_ok AND _run_rc EQUAL 0)
    string(REGEX MATCH "^[^\n]*" _first "${_version}")
    string(STRIP "${_first}" _first)
  endif()
  set(CONVEYOR_MPI_LIBRARY_VERSION "${_first}" CACHE STRING "MPI_Get_library_version's first line (probed)")
endif()
message(STATUS "Conveyor: MPI library \"${CONVEYOR_MPI_LIBRARY_VERSION}\"")
