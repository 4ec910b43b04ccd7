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
