#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# PyTorch's own distributed tests (DistributedTest._DistTestBase from the installed
# torch: Debian's python3-torch) on the "conveyor" backend, every rank a process of
# one mpiexec job: tests/external/torch_distributed_tests.py (which says how, and
# lists the one family not run and why). 3 ranks on Open MPI, 4 on MPICH (the
# suite's tests that need a world size of 4); both counts on both MPIs under --scale.
#
# Needs expecttest (PyTorch's test utilities import it; scripts/setup installs it
# with pip into the build tree).
#
# usage: torch_distributed_tests.sh <openmpi|mpich> <build-dir> <work-dir> [python]
# (python: the interpreter whose torch runs them; Debian's /usr/bin/python3 unless
# given: torch2_tests.sh gives PyPI's torch's venv)
# Prints the suite's verdict line per rank count, the tests not run or failed, and
# the skipped ones' reasons counted.
set -uo pipefail
mpi=$1 build=$(cd "$2" && pwd)
mkdir -p "$3"
work=$(cd "$3" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
python=${4:-/usr/bin/python3}
deps=$(cd "$build/.." && pwd)/pydeps
if [ "$mpi" = openmpi ]; then
  counts=(3)
  launch=(mpiexec.openmpi --oversubscribe -x PYTHONPATH -x PYTHONWARNINGS -x CONVEYOR_TORCH_TESTS_DUMP -n)
  path="$build/python:$deps/common:$deps/torch-tests"
else
  counts=(4)
  launch=(mpiexec.mpich -n)
  path="$build/python:$deps/mpich:$deps/common:$deps/torch-tests"
fi
[ -n "${CONVEYOR_TEST_SCALE:-}" ] && counts=(3 4)
status=0
for np in "${counts[@]}"; do
  log="$work/torch-distributed-$mpi-np$np.log"
  # (a test that hangs on some rank ends the job after 300 s, its stacks in the log)
  (cd "$work" && PYTHONPATH="$path" PYTHONWARNINGS=ignore CONVEYOR_TORCH_TESTS_DUMP=300 OMP_NUM_THREADS=1 \
     timeout 1200 "${launch[@]}" "$np" "$python" "$here/torch_distributed_tests.py") >"$log" 2>&1
  rc=$?
  line=$(grep -a "^PyTorch's distributed tests" "$log")
  [ -n "$line" ] || line="PyTorch's distributed tests, $np ranks: no verdict (exit $rc)"
  echo "  $line"
  grep -a -E "^  (not run|failed)" "$log" | sed 's/^/  /'
  grep -a "^  skipped" "$log" | sed 's/^  skipped [^:]*: //' | sort | uniq -c | sort -rn |
    sed 's/^ */    skipped by the suite: /'
  [ $rc -eq 0 ] || { grep -a -v "^INFO" "$log" | tail -n 60; status=1; }
done
exit $status
