#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# mpi4py-fft's own tests, unmodified, with libconveyor_mpi preloaded: its pencil
# and slab transfers are one MPI_Alltoallw with subarray datatypes each, the case
# the all-to-all family was built for.
#
# The package comes from its PyPI source distribution at test time, built into a
# venv by tests/external/mpi4py_fft_venv.sh (2.0.6: Debian's python3-mpi4py-fft
# 2.0.4 fails 2.0.6's test_mpifft.py without Conveyor, and 2.0.4's source carries
# no tests). test_pencil.py,
# test_darray.py at 1 and 2 ranks, test_mpifft.py at 2, each launched as users
# launch (each MPI's defaults). A test that fails with the library is run again
# without it and counts only if it passes there. The summed CONVEYOR_MPI_REPORT
# lines must show MPI_Alltoallw calls served.
#
# usage: mpi4py_fft_tests.sh <openmpi|mpich> <build-dir> <work-dir>
# Prints one line per test, and "N passed, M failed" last.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=$1
mkdir -p "$3"
build=$(cd "$2" && pwd) work=$(cd "$3" && pwd)
build_root=$(dirname "$build")
interposer="$build/src/libconveyor_mpi.so"
version=2.0.6
fail() { echo "mpi4py-fft tests: $1"; echo "0 passed, 1 failed"; exit 1; }
[ -f "$interposer" ] || fail "$interposer not built"

src="$work/mpi4py-fft-$version"
python=$("$(dirname "$0")/mpi4py_fft_venv.sh" "$work" "$version") || fail "$python"

case $mpi in
  openmpi)
    with=(mpiexec.openmpi -x LD_PRELOAD="$interposer" -x CONVEYOR_MPI_REPORT=1 -x CONVEYOR_MPI_CALLS=all)
    without=(mpiexec.openmpi) ;;
  mpich)
    pypath="$build_root/pydeps/mpich"
    yield="$build/tests/libconveyor_mpich_yield.so"
    with=(mpiexec.mpich -genv PYTHONPATH "$pypath" -genv LD_PRELOAD "$yield:$interposer" -genv CONVEYOR_MPI_REPORT 1
          -genv CONVEYOR_MPI_CALLS all)
    without=(mpiexec.mpich -genv PYTHONPATH "$pypath" -genv LD_PRELOAD "$yield") ;;
esac

passed=0 failed=0 served=0
for run in test_pencil:1 test_pencil:2 test_darray:1 test_darray:2 test_mpifft:2; do
  t=${run%:*} np=${run#*:}
  log="$work/$mpi.$t.np$np.log"
  start=$(date +%s)
  (cd "$src/tests" && timeout 900 "${with[@]}" -n "$np" "$python" "$t.py") >"$log" 2>&1
  rc=$?
  n=$(sed -nE 's/^ +MPI_Alltoallw +served ([0-9]+).*/\1/p' "$log" | awk '{ s += $1 } END { print s + 0 }')
  served=$((served + n))
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1)); echo "  $t np$np: ok ($(( $(date +%s) - start )) s, $n MPI_Alltoallw served)"
  else
    (cd "$src/tests" && timeout 900 "${without[@]}" -n "$np" "$python" "$t.py") >"$log.without" 2>&1
    if [ $? -eq 0 ]; then
      failed=$((failed + 1)); echo "  $t np$np: FAILED (rc $rc, see $log)"
    else
      passed=$((passed + 1)); echo "  $t np$np: fails without the library too (see $log.without)"
    fi
  fi
done
if [ "$served" -eq 0 ]; then echo "  no MPI_Alltoallw was served: the library was not in use"; failed=$((failed + 1)); fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
