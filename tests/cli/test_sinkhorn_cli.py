#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""`conveyor sinkhorn` end to end: .npy files good and bad, under mpiexec.

Usage: test_sinkhorn_cli.py <conveyor tool> <mpiexec> [mpiexec flags...]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

TOOL, MPIEXEC, FLAGS = sys.argv[1], sys.argv[2], sys.argv[3:]
failures = []


def run(ranks, *args):
    cmd = [MPIEXEC, "-n", str(ranks), *FLAGS, TOOL, "sinkhorn", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def expect(name, ranks, args, ok, needle):
    rc, out = run(ranks, *args)
    if (rc == 0) != ok or needle not in out:
        failures.append("%s: rc=%d, wanted %s and '%s' in:\n%s" % (name, rc, "success" if ok else "failure", needle, out))
    else:
        print("ok   %s" % name)


with tempfile.TemporaryDirectory() as d:
    rng = np.random.default_rng(1)
    path = lambda n: os.path.join(d, n)
    A = rng.uniform(0.1, 1.0, size=(50, 40))
    np.save(path("a64.npy"), A)
    np.save(path("a32.npy"), A.astype(np.float32))
    np.save(path("fortran.npy"), np.asfortranarray(A))
    np.save(path("cube.npy"), np.ones((2, 3, 4)))
    np.save(path("ints.npy"), np.ones((5, 5), dtype=np.int64))
    bad = A.copy()
    bad[37, 5] = -1.0
    np.save(path("negative.npy"), bad)
    with open(path("a64.npy"), "rb") as f:
        data = f.read()
    with open(path("truncated.npy"), "wb") as f:
        f.write(data[:-8])
    with open(path("magic.npy"), "wb") as f:
        f.write(b"NOTNUMPY" + data[8:])
    x = rng.uniform(size=30)
    np.save(path("cost.npy"), (x[:, None] - x[None, :]) ** 2)
    np.save(path("cost1.npy"), 1.0 + (x[:, None] - x[None, :]) ** 2)  # exp(-cost/0.001) underflows

    for ranks in (1, 2):
        expect("float64 scaling, %d rank(s)" % ranks, ranks, ["--input", path("a64.npy"), "--tol", "1e-10"], True,
               "converged")
        expect("float32 scaling, %d rank(s)" % ranks, ranks,
               ["--input", path("a32.npy"), "--dtype", "float32", "--tol", "1e-5", "--variant", "blocked"], True, "converged")
        expect("log-domain OT, %d rank(s)" % ranks, ranks,
               ["--input", path("cost.npy"), "--ot", "--log", "--eps", "0.01", "--max-iter", "20000"], True, "cost")
    expect("dtype mismatch", 2, ["--input", path("a32.npy")], False, "holds float32, but --dtype is float64")
    expect("Fortran order", 1, ["--input", path("fortran.npy")], False, "Fortran-ordered")
    expect("3-D array", 1, ["--input", path("cube.npy")], False, "need a 2-D array")
    expect("integer dtype", 1, ["--input", path("ints.npy")], False, "not supported")
    expect("truncated file", 2, ["--input", path("truncated.npy")], False, "data bytes")
    expect("bad magic", 1, ["--input", path("magic.npy")], False, "not a .npy file")
    expect("missing file", 1, ["--input", path("nothere.npy")], False, "cannot open")
    expect("negative entry", 2, ["--input", path("negative.npy")], False, "A[37][5]")
    expect("plain OT underflow", 2, ["--input", path("cost1.npy"), "--ot", "--eps", "0.001"], False, "numerical_failure")
    expect("log-domain OT, same problem", 2, ["--input", path("cost1.npy"), "--ot", "--log", "--eps", "0.001",
                                             "--max-iter", "100000", "--tol", "1e-6"], True, "converged")

for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
