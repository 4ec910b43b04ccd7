#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A venv with the current PyTorch from PyPI (Debian 12 ships 1.13), over the
# system's site-packages (Debian's NumPy, mpi4py, pytest). PyPI's Linux wheel of
# torch requires NVIDIA's CUDA wheels, which pip installs beside it (about 3 GB to
# fetch, 5 GB installed; no GPU is used). Made once per work dir.
# Used by tests/external/torch2_tests.sh.
#
# usage: torch2_venv.sh <work-dir> [version]
# Prints the venv's python, or why not (exit 1).
set -uo pipefail
mkdir -p "$1"
work=$(cd "$1" && pwd)
version=${2:-2.15.0}
venv="$work/venv-torch-$version"
python="$venv/bin/python"
if ! "$python" -c "import torch; assert torch.__version__.startswith('$version')" 2>/dev/null; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv" || { echo "python3 -m venv failed"; exit 1; }
  "$python" -m pip install --disable-pip-version-check --quiet "torch==$version" >"$work/pip.log" 2>&1 ||
    { tail -n 20 "$work/pip.log"; echo "pip install torch==$version failed"; exit 1; }
fi
echo "$python"
