#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
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
# POT's backends: NumPy, JAX (the venv installs it) and PyTorch (Debian's
# python3-torch, scripts/setup), whose tests differentiate conveyor.ot's losses
# (test_sinkhorn2_gradients, test_empirical_sinkhorn_divergence_gradient, the grad=
# cases of test_solvers.py). Not PyTorch for 0.9.4's test_unbalanced.py on a newer
# POT: its test_mm_wrong_divergence[torch] fails on POT's own changed message,
# with no call into Conveyor. TensorFlow and CuPy are not installed (switched off).
# One test file of POT's with conveyor.ot substituted; prints its verdict line.
# Left out as Gromov-Wasserstein is: solve_sample's low-rank and factored methods
# (unregularized, never Conveyor's), and the unbalanced solvers that are not
# Sinkhorn's (majorization-minimization, L-BFGS-B: 50 of test_unbalanced.py's 58
# tests, which never reach Conveyor); both were most of their files' time
# (docs/testing.md, "The figures behind the suite's choices").
run_pot_tests() {  # <label> <log> <torch: on|off> <test file...> (one pytest process: POT and JAX imported once)
  local label=$1 log=$2 torch=(env)
  [ "$3" = off ] && torch+=(POT_BACKEND_DISABLE_PYTORCH=1)
  shift 3
  (cd "$work" && OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "${torch[@]}" POT_BACKEND_DISABLE_TENSORFLOW=1 \
     POT_BACKEND_DISABLE_CUPY=1 PYTHONPATH="$here" timeout 900 \
     "$python" -m pytest -q -p no:cacheprovider --color=no -o addopts="" -p pot_with_conveyor \
     -k "not gromov and not lowrank and not factored and not test_mm_ and not lbfgsb" "$@") \
     >"$log" 2>&1
  local rc=$?
  echo "  $label: $(grep -E '^POT with conveyor.ot:' "$log" | cut -d: -f2-)"
  grep -E "^  (deviation|FAILED)" "$log" | sed 's/^/  /'
  [ $rc -eq 0 ] || { tail -n 40 "$log"; return 1; }
}

# The two runs side by side (one process each, one BLAS thread: on two cores the
# step takes the longer run's time instead of the sum); each verdict printed in
# order after both.
files=("$src/test/test_bregman.py")
label="POT $version test_bregman.py"
if [ -f "$src/test/test_solvers.py" ]; then
  files+=("$src/test/test_solvers.py")
  label+=" + test_solvers.py"
fi
run_pot_tests "$label" "$work/pot-$version.log" on "${files[@]}" >"$work/verdict-main.txt" &
main=$!
# The unbalanced tests: from this version's sdist, or (0.9.5's and later ship
# none) from 0.9.4's, the newest that does, run against the installed POT.
unbalanced=$src/test/test_unbalanced.py
label="POT $version test_unbalanced.py"
torch=on
status=0
if [ ! -f "$unbalanced" ]; then
  torch=off
  why=$("$here/pypi_sdist.sh" pot 0.9.4 "$work") || { echo "POT tests: $why"; status=1; }
  unbalanced=$work/pot-0.9.4/test/test_unbalanced.py
  label="POT 0.9.4's test_unbalanced.py on POT $version"
fi
if [ "$status" -eq 0 ]; then
  run_pot_tests "$label" "$work/pot-$version-unbalanced.log" "$torch" "$unbalanced" >"$work/verdict-unbalanced.txt" || status=1
else
  : >"$work/verdict-unbalanced.txt"
fi
wait "$main" || status=1
cat "$work/verdict-main.txt" "$work/verdict-unbalanced.txt"
exit $status
