# SPDX-License-Identifier: BSD-3-Clause
# Shared by scripts/test, scripts/demo and scripts/bench: where builds go and how
# to configure and build one MPI flavour.
# shellcheck shell=bash
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The builds' folder: CMakePresets.json's build/<preset>, whose test presets
# (run_ctest in scripts/test) read those trees.
BUILD_ROOT=$ROOT/build
JOBS=${CONVEYOR_JOBS:-$(nproc)}

# Open MPI refuses to run as root without these; harmless otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# configure_and_build <preset: openmpi|mpich|asan> [cmake args...]: the configure
# and build presets of CMakePresets.json, into build/<preset>. (The Python
# package's dependencies -- nanobind, MPICH's mpi4py -- are scripts/setup's pip
# installs in build/pydeps, which the presets name.)
configure_and_build() {
  local preset=$1
  shift
  mkdir -p "$BUILD_ROOT"
  (cd "$ROOT" && cmake --preset "$preset" "$@") >"$BUILD_ROOT/$preset.configure.log" 2>&1 ||
    { cat "$BUILD_ROOT/$preset.configure.log"; return 1; }
  (cd "$ROOT" && cmake --build --preset "$preset" -j "$JOBS")
}
