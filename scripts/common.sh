# SPDX-License-Identifier: BSD-3-Clause
# Shared by scripts/test, scripts/demo and scripts/bench: where builds go and how
# to configure and build one MPI flavour.
# shellcheck shell=bash
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_ROOT=${CONVEYOR_BUILD_ROOT:-$ROOT/build}
JOBS=${CONVEYOR_JOBS:-$(nproc)}

# Open MPI refuses to run as root without these; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# configure_and_build <build-dir> <mpi: openmpi|mpich> [cmake args...]
configure_and_build() {
  local dir=$1 mpi=$2
  shift 2
  # The Python package: Debian's python3, nanobind (and MPICH's mpi4py) from
  # scripts/setup's pip installs in the build tree.
  local pypath="$BUILD_ROOT/pydeps/common"
  [ "$mpi" = mpich ] && pypath="$BUILD_ROOT/pydeps/mpich:$pypath"
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCONVEYOR_MPI="$mpi" -DPython_EXECUTABLE=/usr/bin/python3 \
    -DCONVEYOR_PYTHON_PATH="$pypath" "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$JOBS"
}
