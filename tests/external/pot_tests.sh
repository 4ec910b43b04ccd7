#!/usr/bin/env bash
# POT's own tests of its Bregman / Sinkhorn solvers (test/test_bregman.py), of its
# unified entry points ot.solve / ot.solve_sample (test/test_solvers.py, POT >= 0.9;
# its Gromov-Wasserstein tests, which never reach Conveyor, left out) and of its
# unbalanced solvers (test/test_unbalanced.py), with conveyor.ot in place of
# POT's solvers for the methods Conveyor implements (tests/external/pot_with_conveyor.py: the substitution, the fixtures
# the source distribution lacks, and a verdict per test).
#
# The tests come from POT's source distribution on PyPI at test time, the
# version of the POT the given Python imports (found through PyPI's simple
# index, its sha256 checked); nothing of POT's is kept in the repository.
#
# usage: pot_tests.sh <python with conveyor and POT> <work-dir>
set -uo pipefail
python=$1
mkdir -p "$2"
work=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

version=$("$python" -c 'import ot; print(ot.__version__)') || { echo "POT tests: no POT for $python"; exit 1; }
src="$work/pot-$version"
if [ ! -f "$src/test/test_bregman.py" ]; then
  why=$("$here/pypi_sdist.sh" pot "$version" "$work") || { echo "POT tests: $why"; exit 1; }
fi

# One thread for NumPy's BLAS; POT's setup.cfg adds coverage options: cleared.
# POT's PyTorch backend is switched off (POT_BACKEND_DISABLE_PYTORCH, read by POT
# 0.9 at import): conveyor.ot's gradients through torch tensors cover sinkhorn2 and
# solve, not yet the point-cloud divergence whose gradient POT's torch tests also
# take (issue "Optimal transport inside training loops"); tests/python compares
# the torch gradients with POT's own. JAX, which the venv installs itself, stays on.
# One test file of POT's with conveyor.ot substituted; prints its verdict line.
run_pot_tests() {  # <label> <log> <test file...> (one pytest process: POT and JAX imported once)
  local label=$1 log=$2
  shift 2
  (cd "$work" && OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 POT_BACKEND_DISABLE_PYTORCH=1 POT_BACKEND_DISABLE_TENSORFLOW=1 \
     POT_BACKEND_DISABLE_CUPY=1 PYTHONPATH="$here" timeout 900 \
     "$python" -m pytest -q -p no:cacheprovider --color=no -o addopts="" -p pot_with_conveyor -k "not gromov" "$@") \
     >"$log" 2>&1
  local rc=$?
  echo "  $label: $(grep -E '^POT with conveyor.ot:' "$log" | cut -d: -f2-)"
  grep -E "^  (deviation|FAILED)" "$log" | sed 's/^/  /'
  [ $rc -eq 0 ] || { tail -n 40 "$log"; return 1; }
}

status=0
files=("$src/test/test_bregman.py")
label="POT $version test_bregman.py"
if [ -f "$src/test/test_solvers.py" ]; then
  files+=("$src/test/test_solvers.py")
  label+=" + test_solvers.py"
fi
run_pot_tests "$label" "$work/pot-$version.log" "${files[@]}" || status=1
# The unbalanced tests: from this version's sdist, or (0.9.5's and later ship
# none) from 0.9.4's, the newest that does, run against the installed POT.
unbalanced=$src/test/test_unbalanced.py
label="POT $version test_unbalanced.py"
if [ ! -f "$unbalanced" ]; then
  why=$("$here/pypi_sdist.sh" pot 0.9.4 "$work") || { echo "POT tests: $why"; exit 1; }
  unbalanced=$work/pot-0.9.4/test/test_unbalanced.py
  label="POT 0.9.4's test_unbalanced.py on POT $version"
fi
run_pot_tests "$label" "$work/pot-$version-unbalanced.log" "$unbalanced" || status=1
exit $status
