#!/usr/bin/env bash
# POT's own tests of its Bregman / Sinkhorn solvers (test/test_bregman.py), with
# conveyor.ot in place of POT's sinkhorn / sinkhorn2 for the methods Conveyor
# implements (tests/external/pot_with_conveyor.py: the substitution, the fixtures
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
log="$work/pot-$version.log"
(cd "$work" && OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH="$here" timeout 900 \
   "$python" -m pytest -q -p no:cacheprovider --color=no -o addopts="" -p pot_with_conveyor \
   "$src/test/test_bregman.py") >"$log" 2>&1
rc=$?
echo "  POT $version test_bregman.py: $(grep -E '^POT with conveyor.ot:' "$log" | cut -d: -f2-)"
grep -E "^  (deviation|FAILED)" "$log" | sed 's/^/  /'
[ $rc -eq 0 ] || { tail -n 40 "$log"; exit 1; }
