#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A venv with mpi4py-fft built from its PyPI source distribution (pypi_sdist.sh),
# over Debian's NumPy, Cython and FFTW: `pip install --no-build-isolation` in a venv
# with the system's site-packages. Its FFTW extension does not link MPI, so one
# venv serves both MPIs (each run finds its MPI's mpi4py). Made once per work dir.
# Used by tests/external/mpi4py_fft_tests.sh and scripts/bench pfft.
#
# usage: mpi4py_fft_venv.sh <work-dir> [version]
# Prints the venv's python, or why not (exit 1).
set -uo pipefail
mkdir -p "$1"
work=$(cd "$1" && pwd)
version=${2:-2.0.6}
src="$work/mpi4py-fft-$version"
if [ ! -f "$src/tests/test_pencil.py" ]; then
  why=$("$(dirname "$0")/pypi_sdist.sh" mpi4py-fft "$version" "$work") || { echo "$why"; exit 1; }
fi
venv="$work/venv"
python="$venv/bin/python"
if ! "$python" -c "import mpi4py_fft" 2>/dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv" || { echo "python3 -m venv failed"; exit 1; }
  "$python" -m pip install --disable-pip-version-check --quiet --no-build-isolation --no-deps "$src" \
    >"$work/pip.log" 2>&1 || { tail -n 20 "$work/pip.log"; echo "pip install mpi4py-fft $version failed"; exit 1; }
fi
echo "$python"
