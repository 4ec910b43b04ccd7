#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The plan of a point-cloud solve applied without forming it (P V, k values per
point), beside one pass of the solver on the same clouds (what it should cost:
the same n m pairs plus k FMAs each), one thread, in the same run.

Per call: the median over --rounds of apply_plan_points; per solver pass: (t(hi) -
t(lo)) / (2 (hi - lo)) from sinkhorn_points runs of lo and hi iterations (two
passes each). Rounds alternate the two. Prints CSV rows and a Markdown table.

    python3 bench/points_apply.py --n 4000 --dims 3,8,16,64 --k 3 (--dtypes: the first is used)
"""
import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

import conveyor
from point_bench_args import add_point_arguments  # (bench/, the script's directory)


def main():
    p = add_point_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]), n=4000, dims="3,8,16,64",
                            dtypes="float64", rounds=5, lo=2, hi=6)
    p.add_argument("--k", type=int, default=3)
    args = p.parse_args()
    args.dtype, args.reps = args.dtypes.split(",")[0], args.rounds
    comm = MPI.COMM_SELF
    rows = []
    print(f"# CPU target {conveyor.simd_target()}; one thread; n = m = {args.n}; k = {args.k}; {args.dtype}")
    print("d,apply_ms,pass_ms,apply_over_pass")
    for d in (int(x) for x in args.dims.split(",")):
        rng = np.random.default_rng(3)
        X = rng.random((args.n, d)).astype(args.dtype)
        Y = (rng.random((args.n, d)) + 0.2).astype(args.dtype)
        V = rng.random((args.n, args.k)).astype(args.dtype)
        r = conveyor.sinkhorn_points(X, Y, 0.1, comm=comm, tol=0.0, max_iter=5, threads=1)

        def solve(iterations):
            t0 = time.perf_counter()
            conveyor.sinkhorn_points(X, Y, 0.1, comm=comm, tol=0.0, max_iter=iterations, threads=1)
            return time.perf_counter() - t0

        def apply():
            t0 = time.perf_counter()
            conveyor.apply_plan_points(X, Y, r.log_u, r.log_v, 0.1, V, comm=comm, threads=1)
            return time.perf_counter() - t0

        apply()
        applies, passes = [], []
        for _ in range(args.reps):
            applies.append(apply())
            passes.append((solve(args.hi) - solve(args.lo)) / (2 * (args.hi - args.lo)))
        a, s = statistics.median(applies), statistics.median(passes)
        rows.append((d, a, s))
        print(f"{d},{a * 1e3:.2f},{s * 1e3:.2f},{a / s:.2f}", flush=True)
    print("\n| d | apply ms (P V, k = %d) | one solver pass ms | apply / pass |" % args.k)
    print("|---:|---:|---:|---:|")
    for d, a, s in rows:
        print(f"| {d} | {a * 1e3:.2f} | {s * 1e3:.2f} | {a / s:.2f} |")


if __name__ == "__main__":
    main()
