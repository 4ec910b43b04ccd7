# SPDX-License-Identifier: BSD-3-Clause
# Cross build for aarch64 with Debian's cross toolchain (crossbuild-essential-arm64)
# against arm64 Highway, MPICH and GoogleTest unpacked into a sysroot
# (tests/emulated/aarch64.sh makes it). Programs, try_run probes and CTest run
# under qemu-aarch64.
#   cmake -DCMAKE_TOOLCHAIN_FILE=this -DCONVEYOR_ARM64_SYSROOT=<dir> ...
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# try_compile projects see the sysroot through the environment.
if(CONVEYOR_ARM64_SYSROOT)
  set(ENV{CONVEYOR_ARM64_SYSROOT} "${CONVEYOR_ARM64_SYSROOT}")
else()
  set(CONVEYOR_ARM64_SYSROOT "$ENV{CONVEYOR_ARM64_SYSROOT}")
endif()
if(NOT CONVEYOR_ARM64_SYSROOT)
  message(FATAL_ERROR "set CONVEYOR_ARM64_SYSROOT to the unpacked arm64 packages")
endif()
set(_libdir "${CONVEYOR_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu")
set(CMAKE_FIND_ROOT_PATH "${CONVEYOR_ARM64_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The unpacked libraries' own dependencies (libucx, libhwloc, ...) at link time.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_libdir}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_libdir}")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=${_libdir})

# The host's pkg-config files describe amd64 libraries (FindMPI would take Open
# MPI's link flags from them): none are visible.
set(ENV{PKG_CONFIG_LIBDIR} "${CONVEYOR_ARM64_SYSROOT}/no-pkg-config")
set(ENV{PKG_CONFIG_PATH} "")

# MPICH without its compiler wrapper (the host's wrappers are for amd64).
set(MPI_SKIP_COMPILER_WRAPPER ON)
foreach(lang C CXX)
  set(MPI_${lang}_HEADER_DIR "${CONVEYOR_ARM64_SYSROOT}/usr/include/aarch64-linux-gnu/mpich")
  set(MPI_${lang}_LIB_NAMES mpich)
endforeach()
set(MPI_mpich_LIBRARY "${_libdir}/libmpich.so")
set(MPIEXEC_EXECUTABLE /usr/bin/mpiexec.mpich)
