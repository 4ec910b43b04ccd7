#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# GeomLoss's own tests of its OT solvers (geomloss.ot.solve / solve_batch /
# solve_sample: test_ot_solve_matrix.py, test_ot_solve_sample.py), read-only from
# ../shared/peers/geomloss/tests, with Conveyor's solvers in place of GeomLoss's
# Sinkhorn loop (tests/external/geomloss_with_conveyor.py: the substitution and a
# verdict per test).
#
# They are hypothesis property tests (symmetry, cost linearity, closed forms,
# SciPy's assignments as ground truth); the examples come from a fixed seed
# (0; seeds 0-2 under scripts/test --scale, CONVEYOR_TEST_SCALE set), so a run is
# repeatable. Needs hypothesis (Debian's python3-hypothesis) and pytest-check
# (installed into the venv by tests/python/installed_package.sh).
#
# usage: geomloss_tests.sh <python with conveyor> <work-dir> <directory holding GeomLoss>
set -uo pipefail
python=$1
mkdir -p "$2"
work=$(cd "$2" && pwd) geomloss=$(cd "$3" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
peers=$(cd "$here/../../.." && pwd)/shared/peers/geomloss/tests
if [ ! -f "$peers/test_ot_solve_matrix.py" ]; then
  echo "  GeomLoss's tests: $peers absent (../shared not beside the project): not run, not counted"
  exit 0
fi
seeds=(0)
[ -n "${CONVEYOR_TEST_SCALE:-}" ] && seeds=(0 1 2)
status=0
for seed in "${seeds[@]}"; do
  log="$work/geomloss-seed$seed.log"
  # (no bytecode written: the tests are read-only; hypothesis's example
  # database in the work directory)
  (cd "$work" && OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$here:$geomloss" timeout 900 \
     "$python" -m pytest -q -p no:cacheprovider --color=no -p geomloss_with_conveyor --hypothesis-seed="$seed" \
     "$peers") >"$log" 2>&1
  rc=$?
  version=$(PYTHONPATH="$geomloss" "$python" -c 'import importlib.metadata as m; print(m.version("geomloss"))' 2>/dev/null)
  echo "  GeomLoss ${version:-?}'s tests of geomloss.ot, seed $seed:" \
       "$(grep -E '^GeomLoss with Conveyor:' "$log" | cut -d: -f2-)"
  grep -E "^  (geomloss-only|deviation|FAILED) " "$log" | sed 's/^/  /'
  [ $rc -eq 0 ] || { tail -n 40 "$log"; status=1; }
done
exit $status
