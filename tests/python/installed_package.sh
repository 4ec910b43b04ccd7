#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python package as its users get it: `python3 -m pip wheel .` (the build
# `pip install .` runs) installed into a fresh virtual environment, then the
# Python tests against that installed copy under mpiexec (Open MPI: 1 and 3 ranks;
# MPICH: 1).
#
#   openmpi: the venv sees Debian's NumPy, pytest, POT and mpi4py (Open MPI's)
#            through --system-site-packages; MPICC=mpicc.openmpi.
#   mpich:   the same venv, plus mpi4py built against MPICH (scripts/setup's
#            wheel) installed into it; MPICC=mpicc.mpich.
# JAX 0.4.30 (CPU) is installed for tests/python/test_mpi_style.py's DLPack test.
# POT 0.9.5 (PyPI's wheel) is installed into the venv over Debian's 0.8.2: the
# version whose interface conveyor.ot follows (warmstart, sinkhorn2's warn=False),
# which tests/python/test_ot*.py compare against and whose own test_bregman.py
# and (0.9.4's) test_unbalanced.py then run with conveyor.ot substituted
# (tests/external/pot_tests.sh; Open MPI's package only). GeomLoss 0.3.1 (pure
# Python) beside it: tests/python/test_ot_samples_loss.py's reference, and the
# package whose own tests of geomloss.ot run with Conveyor's solvers
# (tests/external/geomloss_tests.sh; Open MPI's package only).
# Also checked: the wheel holds the extension and libconveyor; importing
# conveyor with an mpi4py on the other MPI raises the ImportError that names both
# libraries (not a crash).
#
# usage: installed_package.sh <openmpi|mpich> <build-dir of that MPI> <work-dir>
# The pip build directory is <build-dir's parent>/pip-<mpi> (incremental on
# reruns): beside the MPI's own build, so a compiler cache keyed on paths
# relative to the checkout (scripts/test) finds that build's objects.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=$1
mkdir -p "$3"
build=$(cd "$2" && pwd) work=$(cd "$3" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
build_root=$(dirname "$build")
venv="$work/venv-$mpi"
python="$venv/bin/python"
pip=("$python" -m pip --disable-pip-version-check)
wheels="$build_root/pydeps/wheels"

fail() { echo "installed package ($mpi): $*"; exit 1; }

rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv" || fail "python3 -m venv failed"
log="$work/pip-$mpi.log"
# pip wheel . (the build `pip install .` runs), then that wheel installed: one
# build of the package instead of two (the second rebuilt nanobind).
# The build is isolated, as a user's (pyproject.toml's requirements installed into
# a fresh environment), but CMake is pointed at the same nanobind 2.9.2 the MPI
# build uses (scripts/setup's, in the build tree; pyproject.toml pins that
# version): the isolated copy's path is new each time, so the compiler cache
# missed every binding and nanobind source (docs/testing.md,
# "The figures behind the suite's choices").
rm -rf "$work/wheel-$mpi"
MPICC=mpicc.$mpi "${pip[@]}" wheel --no-deps --config-settings=build-dir="$build_root/pip-$mpi" \
  --config-settings=cmake.define.CONVEYOR_PYTHON_PATH="$build_root/pydeps/common" \
  -w "$work/wheel-$mpi" "$root" >"$log" 2>&1 || { tail -n 30 "$log"; fail "pip wheel . failed (see $log)"; }
wheel=$(ls "$work"/wheel-"$mpi"/conveyor-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || fail "pip wheel . made no wheel (see $log)"
contents=$("$python" -m zipfile -l "$wheel") || fail "the wheel does not open"
grep -q "conveyor/_conveyor" <<<"$contents" && grep -q "conveyor/libconveyor.so" <<<"$contents" ||
  fail "the wheel lacks the extension or libconveyor"
echo "  pip wheel . -> $(basename "$wheel")"
"${pip[@]}" install "$wheel" >>"$log" 2>&1 || { tail -n 30 "$log"; fail "pip install of the wheel failed (see $log)"; }
echo "  pip install $(basename "$wheel") -> $(grep -oE 'Successfully installed .*' "$log")"

# The other MPI's mpi4py first: the import must stop with both library names.
if [ "$mpi" = openmpi ]; then
  other_path="$build_root/pydeps/mpich"          # mpi4py built against MPICH
else
  other_path="/usr/lib/python3/dist-packages"    # Debian's mpi4py (Open MPI)
fi
mismatch=$(cd "$work" && PYTHONPATH="$other_path" "$python" -c "import conveyor" 2>&1)
if [ $? -eq 0 ] || ! grep -q "built against one MPI library and mpi4py uses another" <<<"$mismatch" ||
   ! grep -q "Open MPI" <<<"$mismatch" || ! grep -q "MPICH" <<<"$mismatch"; then
  echo "$mismatch" | tail -n 5
  fail "importing with the other MPI's mpi4py did not raise the expected ImportError"
fi
echo "  with the other MPI's mpi4py: $(grep -m1 -oE '^ImportError: .*' <<<"$mismatch")"

if [ "$mpi" = mpich ]; then
  "${pip[@]}" install --quiet --no-index --find-links "$wheels" "mpi4py==4.1.1" || fail "installing mpi4py (MPICH) failed"
fi
"${pip[@]}" install --quiet "POT==0.9.5" || fail "pip install POT==0.9.5 failed"
# JAX on CPU (~85 MB): a real array library behind the DLPack path, with bfloat16.
# NumPy stays Debian's (pip would otherwise bring NumPy 2 over the system SciPy and POT).
echo "numpy==$("$python" -c 'import numpy; print(numpy.__version__)')" >"$work/constraints.txt"
"${pip[@]}" install --quiet -c "$work/constraints.txt" "jax[cpu]==0.4.30" || fail "pip install jax[cpu]==0.4.30 failed"
# GeomLoss 0.3.1 (pure Python, over Debian's PyTorch): tests/python/test_ot_samples_loss.py
# compares conveyor.ot.SamplesLoss with its SamplesLoss. In a directory of its own,
# on the path of those runs alone: where GeomLoss is importable, POT's own tests
# run its ot.solve_sample(method="geomloss") cases, which fail on POT 0.9.5 with
# GeomLoss 0.3.1 (NameError: generic_logsumexp) without a call into Conveyor.
geomloss_dir="$work/geomloss-$mpi"
rm -rf "$geomloss_dir"
"${pip[@]}" install --quiet --no-deps --target "$geomloss_dir" "geomloss==0.3.1" || fail "pip install geomloss==0.3.1 failed"
# POT 0.9.6's ot.batch (the batch solvers conveyor.ot.solve_batch / solve_sample_batch
# follow), in a directory of its own: tests/python/test_ot_batch.py's comparisons
# run once with it on the path (below); every other run keeps POT 0.9.5, whose
# test files pot_tests.sh runs (0.9.6's source distribution ships no batch tests).
pot_batch_dir="$work/pot-batch-$mpi"
rm -rf "$pot_batch_dir"
"${pip[@]}" install --quiet --no-deps --target "$pot_batch_dir" "POT==0.9.6.post1" || fail "pip install POT==0.9.6.post1 failed"
# pytest-check: GeomLoss's own tests use it (tests/external/geomloss_tests.sh).
if [ "$mpi" = openmpi ]; then
  "${pip[@]}" install --quiet "pytest-check==2.4.1" || fail "pip install pytest-check==2.4.1 failed"
fi

# The installed copy, imported from outside the source tree.
installed=$(cd "$work" && "$python" -c "import conveyor, mpi4py; print(conveyor.__file__, mpi4py.__version__)") ||
  fail "import conveyor failed"
case $installed in "$venv"/*) ;; *) fail "imported $installed, not the venv's copy" ;; esac
echo "  imports $installed"

case $mpi in
  openmpi)
    launch=(mpiexec.openmpi --oversubscribe --bind-to none -x OMPI_MCA_mpi_yield_when_idle=1 -x OMPI_MCA_btl=self,vader
            -x OMPI_MCA_btl_vader_single_copy_mechanism=none -x OMPI_MCA_osc=sm,pt2pt -x OMP_WAIT_POLICY=passive
            -x CONVEYOR_TESTING=1 -x PYTHONPATH) ;;
  mpich)
    launch=(mpiexec.mpich -genv LD_PRELOAD "$build/tests/libconveyor_mpich_yield.so" -genv OMP_WAIT_POLICY passive
            -genv CONVEYOR_TESTING 1) ;;
esac
status=0
# The types: the package's annotated bodies type-checked and its signatures equal
# to the runtime's (mypy.stubtest), and a user's typed calls checked against them
# (mypy --strict). One process, beside POT's tests; its verdict printed at the
# end. Open MPI's package only: the annotations and the module they describe are
# the same over either MPI.
stubs=""
if [ "$mpi" = openmpi ]; then
  (cd "$work" && "$python" -m mypy.stubtest conveyor --allowlist "$root/tests/python/stubtest_allowlist.txt" \
     --mypy-config-file "$root/tests/python/stubtest_mypy.ini" >"$work/stubtest-$mpi.log" 2>&1 &&
    "$python" -m mypy --strict --no-incremental --cache-dir=/dev/null "$root/tests/python/test_typed_usage.py" \
      >"$work/mypy-$mpi.log" 2>&1) &
  stubs=$!
fi
# POT's own test files call conveyor.ot in one process: the same Python over
# either MPI's extension, so they run with the Open MPI package only (minutes);
# tests/python (below, every MPI) compares conveyor.ot with POT under mpiexec.
# GeomLoss's own tests of geomloss.ot with Conveyor's solvers, beside them (one
# process), on the same package: Open MPI's only as well.
if [ "$mpi" = openmpi ]; then
  "$root/tests/external/geomloss_tests.sh" "$python" "$work/geomloss-tests" "$geomloss_dir" >"$work/geomloss-tests.txt" 2>&1 &
  geomloss_tests=$!
  (cd "$work" && CONVEYOR_REQUIRE_POT_BATCH=1 OMP_NUM_THREADS=1 PYTHONPATH="$pot_batch_dir" timeout 600 \
     "$python" -m pytest -q -p no:cacheprovider --color=no -k pot_batch "$root/tests/python/test_ot_batch.py") \
    >"$work/pot-batch.log" 2>&1 &
  pot_batch=$!
  "$root/tests/external/pot_tests.sh" "$python" "$work/pot" || status=1
  wait "$geomloss_tests" || status=1
  cat "$work/geomloss-tests.txt"
  if wait "$pot_batch"; then
    echo "  POT 0.9.6 ot.batch beside conveyor.ot's: $(grep -E '[0-9]+ passed' "$work/pot-batch.log")"
  else
    tail -n 30 "$work/pot-batch.log"
    status=1
  fi
fi
# At 1 and 3 ranks on Open MPI; on MPICH at 1 (its CTest runs them at 2 and 4:
# the Python layer's rank logic is the same over either MPI, and oversubscribed
# MPICH polls, so 3 ranks on 2 cores cost it twice Open MPI's time).
ranks=(1 3)
[ "$mpi" = mpich ] && ranks=(1)
for np in "${ranks[@]}"; do
  out="$work/pytest-$mpi.np$np.log"
  (cd "$work" && PYTHONPATH="$geomloss_dir" timeout 600 "${launch[@]}" -n "$np" "$python" -m pytest -q -p no:cacheprovider --color=no "$root/tests/python") \
    >"$out" 2>&1
  rc=$?
  echo "  np$np: $(grep -E '[0-9]+ (passed|failed)' "$out" | sort -u | tr '\n' ';') rc $rc"
  [ $rc -eq 0 ] || { tail -n 30 "$out"; status=1; }
done
if [ -z "$stubs" ]; then
  :
elif wait "$stubs"; then
  echo "  types: mypy.stubtest and mypy --strict clean"
else
  cat "$work/stubtest-$mpi.log" "$work/mypy-$mpi.log" | tail -n 20
  status=1
fi
exit $status
