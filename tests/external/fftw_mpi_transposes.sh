#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# FFTW-MPI's distributed transposes (fftw_mpi_plan_many_transpose from Debian's
# libfftw3-mpi-dev) with libconveyor_mpi preloaded and the all-to-all calls served
# (CONVEYOR_MPI_CALLS=all), each result checked against the serial transpose by
# tests/external/fftw_mpi_transposes.c, at 1-4 ranks, planned with FFTW_ESTIMATE
# (FFTW's choice of algorithm, alltoall for some cases) and FFTW_MEASURE (every
# candidate algorithm runs while planning). The summed CONVEYOR_MPI_REPORT must
# show MPI_Alltoall / MPI_Alltoallv calls served.
#
# Open MPI only: Debian builds libfftw3-mpi against Open MPI alone, and building
# FFTW against MPICH would cost the suite minutes for the same interposed calls
# (MPICH's own coll tests and mpi4py-fft's cover the MPICH side).
#
# usage: fftw_mpi_transposes.sh <build-dir> <work-dir>
# Prints one line per run, and "N passed, M failed" last.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$2"
build=$(cd "$1" && pwd) work=$(cd "$2" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
interposer="$build/src/libconveyor_mpi.so"
fail() { echo "FFTW-MPI transposes: $1"; echo "0 passed, 1 failed"; exit 1; }
[ -f "$interposer" ] || fail "$interposer not built"
[ -f /usr/include/fftw3-mpi.h ] || fail "libfftw3-mpi-dev not installed (scripts/setup installs it)"
mpicc.openmpi -O2 -Wall -Werror -o "$work/fftw_mpi_transposes" "$root/tests/external/fftw_mpi_transposes.c" \
  -lfftw3_mpi -lfftw3 -lm || fail "building the driver failed"

passed=0 failed=0 served=0
for np in 1 2 3 4; do
  for planner in estimate measure; do
    log="$work/np$np-$planner.log"
    timeout 300 mpiexec.openmpi --oversubscribe -n "$np" -x LD_PRELOAD="$interposer" -x CONVEYOR_MPI_CALLS=all \
      -x CONVEYOR_MPI_REPORT=1 "$work/fftw_mpi_transposes" "$planner" >"$log" 2>&1
    rc=$?
    result=$(grep -E "^fftw-mpi transposes:" "$log")
    echo "  np$np $planner: ${result#fftw-mpi transposes: }; $(grep -E '^plans:' "$log")"
    if [ $rc -eq 0 ] && grep -q " 0 failed" <<<"$result"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1)); tail -n 20 "$log"
    fi
    n=$(grep -E "MPI_Alltoallv? +served" "$log" | sed -E 's/.*served ([0-9]+).*/\1/' | awk '{s += $1} END {print s + 0}')
    served=$((served + n))
  done
done
echo "  MPI_Alltoall(v) calls served by Conveyor: $served"
if [ "$served" -eq 0 ]; then
  echo "  FAILED: no all-to-all call was served"; failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
