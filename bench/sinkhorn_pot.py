#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""POT's Sinkhorn timed per iteration on the input of `conveyor bench sinkhorn`.

The cost matrix is C_ij = frac(i * 0.6180339887498949 + j * 0.41421356237309515)
with reg = 1, so POT's kernel exp(-C / reg) is the matrix A that Conveyor scales
(bench/sinkhorn_bench.hpp), and the marginals are uniform on both sides.

ot.sinkhorn(a, b, C, reg, method="sinkhorn", stopThr=0) runs exactly numItermax
iterations. Its setup (exp of C, K / a, the final plan) does not depend on the
iteration count, so the time per iteration is the difference between runs of
ITER_HI and ITER_LO iterations, divided by ITER_HI - ITER_LO: setup cancels, and
POT's own error check every 10th iteration stays in, as in real use. Setup time
varies a lot between calls (fresh allocations of several matrices), so each count
is run `reps` times and the fastest run of each count is used; p10/p90 are the
spread of (hi - lo) over the pairs of runs.
Run single-threaded (scripts/bench sets OPENBLAS/OMP thread counts to 1).
"""
import argparse
import csv
import sys
import time
import warnings

import numpy as np
import ot

ITER_LO, ITER_HI = 10, 40


def cost_matrix(n, dtype):
    i = np.arange(n, dtype=np.float64)[:, None] * 0.6180339887498949
    j = np.arange(n, dtype=np.float64)[None, :] * 0.41421356237309515
    x = i + j
    return (x - np.floor(x)).astype(dtype)


def problem(n, dtype):
    """The cost matrix and uniform marginals of an n x n problem."""
    a = np.full(n, 1.0 / n, dtype=dtype)
    return cost_matrix(n, dtype), a, a.copy()


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def run(a, b, C, iters):
    t0 = time.perf_counter()
    ot.sinkhorn(a, b, C, 1.0, method="sinkhorn", numItermax=iters, stopThr=0)
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4000,8000,16000")
    p.add_argument("--dtypes", default="float64,float32")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--csv", help="write the rows as CSV")
    args = p.parse_args()
    warnings.simplefilter("ignore")  # "Sinkhorn did not converge": intended (stopThr=0)
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        for dtype in args.dtypes.split(","):
            C, a, b = problem(n, dtype)
            run(a, b, C, 1)  # warm-up (page faults, BLAS init)
            lo, hi = [], []
            for _ in range(args.reps):
                lo.append(run(a, b, C, ITER_LO))
                hi.append(run(a, b, C, ITER_HI))
            per_iter = (min(hi) - min(lo)) / (ITER_HI - ITER_LO)
            samples = sorted((h - l) / (ITER_HI - ITER_LO) for h, l in zip(hi, lo))
            row = {"config": "POT %s, 1 thread" % ot.__version__, "dtype": dtype, "n": n, "impl": "pot",
                   "ms_median": "%.3f" % (per_iter * 1e3),
                   "ms_p10": "%.3f" % (samples[0] * 1e3), "ms_p90": "%.3f" % (samples[-1] * 1e3)}
            rows.append(row)
            print("POT %s  %-8s n=%-6d %10s ms per iteration" % (ot.__version__, dtype, n, row["ms_median"]), flush=True)
            del C
    if args.csv:
        write_csv(rows, args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
