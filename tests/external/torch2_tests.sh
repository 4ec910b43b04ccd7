#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The "conveyor" torch.distributed backend on the current PyTorch from PyPI (a
# venv of its own: torch2_venv.sh), beside the suite's runs on Debian's 1.13:
# the backend's tests (tests/python/test_torch_backend.py; Open MPI 1 and 3
# ranks, MPICH 2), then PyTorch's own distributed tests of that version
# (torch_distributed_tests.sh: 3 ranks, MPICH 4).
#
# usage: torch2_tests.sh <openmpi|mpich> <build-dir> <work-dir>
set -uo pipefail
mpi=$1 build=$(cd "$2" && pwd)
mkdir -p "$3"
work=$(cd "$3" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
deps=$(cd "$build/.." && pwd)/pydeps
python=$("$here/torch2_venv.sh" "$work") || { echo "$python"; exit 1; }
echo "  $("$python" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null) in $(dirname "$(dirname "$python")")"
if [ "$mpi" = openmpi ]; then
  counts=(1 3)
  launch=(mpiexec.openmpi --oversubscribe -x PYTHONPATH -n)
  path="$build/python:$deps/common"
else
  counts=(2)
  launch=(mpiexec.mpich -n)
  path="$build/python:$deps/mpich:$deps/common"
fi
status=0
for np in "${counts[@]}"; do
  log="$work/torch2-backend-$mpi-np$np.log"
  (cd "$root" && PYTHONPATH="$path" OMP_NUM_THREADS=1 timeout 600 "${launch[@]}" "$np" \
     "$python" -m pytest -q -p no:cacheprovider --color=no tests/python/test_torch_backend.py) >"$log" 2>&1
  rc=$?
  echo "  the backend's tests, $np ranks: $(grep -a -E '^[0-9]+ (passed|failed)' "$log" | tail -n 1)"
  [ $rc -eq 0 ] || { tail -n 60 "$log"; status=1; }
done
"$here/torch_distributed_tests.sh" "$mpi" "$build" "$work" "$python" || status=1
exit $status
