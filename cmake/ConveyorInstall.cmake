# SPDX-License-Identifier: BSD-3-Clause
# Installs the library, headers, the CMake package (find_package(conveyor)) and a
# pkg-config file (conveyor.pc).
include(CMakePackageConfigHelpers)

install(TARGETS conveyor EXPORT conveyorTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/conveyor
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/include/conveyor/version.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/conveyor)

set(_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/conveyor)
install(EXPORT conveyorTargets NAMESPACE conveyor:: DESTINATION ${_cmakedir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/conveyorConfig.cmake.in
  ${PROJECT_BINARY_DIR}/conveyorConfig.cmake INSTALL_DESTINATION ${_cmakedir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/conveyorConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/conveyorConfig.cmake
              ${PROJECT_BINARY_DIR}/conveyorConfigVersion.cmake
  DESTINATION ${_cmakedir})

# pkg-config: MPI flags come from the MPI flavour we built against.
set(CONVEYOR_PC_MPI_REQUIRES "")
if(CONVEYOR_MPI_FLAVOUR STREQUAL "openmpi")
  set(CONVEYOR_PC_MPI_REQUIRES "ompi-cxx")
elseif(CONVEYOR_MPI_FLAVOUR STREQUAL "mpich")
  set(CONVEYOR_PC_MPI_REQUIRES "mpich")
endif()
file(RELATIVE_PATH CONVEYOR_PC_RELATIVE_PREFIX
  /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
configure_file(${PROJECT_SOURCE_DIR}/cmake/conveyor.pc.in ${PROJECT_BINARY_DIR}/conveyor.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/conveyor.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
