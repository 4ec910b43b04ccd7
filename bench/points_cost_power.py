#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What the plan weighted by its cost costs (plan_apply_options::cost_power, the
p = 1 gradients' sums), and what the dot-product path's recomputation of
distances near 0 costs the Euclidean solve: seconds per pass at n = m points
uniform in the unit cube, one thread, median over rounds, each round a fresh
process per build (the builds alternate, the order reversed every other round).

Per build and dimension: a Sinkhorn iteration with metric="euclidean" (two
passes; per iteration = (t(hi) - t(lo)) / (hi - lo), so the setup cancels) and
apply_plan_points with k = d + 1 values ([1, Y], the gradients' columns) plain,
times the cost (cost_power=1) and over it (cost_power=-1). Compare a commit with
its parent by passing both builds' python/ directories:

    taskset -c 0 python3 bench/points_cost_power.py --builds parent=OLD/python,new=build/openmpi/python
"""
import argparse
import os
import statistics

from point_bench_args import add_point_arguments, alternating_children  # (bench/, the script's directory)

CHILD = r"""
import json, sys, time
import numpy as np
from mpi4py import MPI
import conveyor

n, dims, dtype, lo, hi = int(sys.argv[1]), [int(x) for x in sys.argv[2].split(",")], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
powers = "cost_power" in conveyor.apply_plan_points.__doc__
out = {}
for d in dims:
    rng = np.random.default_rng(d)
    X, Y = rng.random((n, d)).astype(dtype), rng.random((n, d)).astype(dtype)
    eps = 0.1 * d ** 0.5
    def solve(iters):
        t0 = time.perf_counter()
        r = conveyor.sinkhorn_points(X, Y, eps, comm=MPI.COMM_SELF, tol=0.0, max_iter=iters, threads=1,
                                     metric="euclidean")
        return time.perf_counter() - t0, r
    solve(lo)
    t_lo, _ = solve(lo)
    t_hi, r = solve(hi)
    row = {"solve": (t_hi - t_lo) / (hi - lo)}
    V = np.ascontiguousarray(np.concatenate([np.ones((n, 1), dtype), Y], axis=1))
    for power in ((0, 1, -1) if powers else (0,)):
        extra = {"cost_power": power} if powers else {}
        best = []
        for _ in range(3):
            t0 = time.perf_counter()
            conveyor.apply_plan_points(X, Y, r.log_u, r.log_v, eps, V, comm=MPI.COMM_SELF, metric="euclidean",
                                       threads=1, **extra)
            best.append(time.perf_counter() - t0)
        row[f"apply{power:+d}"] = min(best)
    out[d] = row
print(json.dumps(out))
"""


def main():
    p = add_point_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]), n=4096, dims="3,64",
                            lo=1, hi=3)
    p.add_argument("--builds", required=True, help="name=python-dir,... (each build's python/ directory)")
    args = p.parse_args()
    builds = dict(item.split("=", 1) for item in args.builds.split(","))
    print(f"n = m = {args.n}, one thread, metric euclidean; seconds (median of {args.rounds} rounds)\n")
    print("| dtype | d | build | solve iteration (s) | apply plain (s) | apply o C (s) | apply o C^-1 (s) |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for dtype in args.dtypes.split(","):
        path = os.environ.get("PYTHONPATH", "")
        runs = alternating_children(CHILD, args, dtype,
                                    {name: {"PYTHONPATH": os.pathsep.join([where, path])} for name, where in builds.items()})
        times = {name: {} for name in builds}
        for name, outputs in runs.items():
            for output in outputs:
                for d, row in output.items():
                    for key, t in row.items():
                        times[name].setdefault((int(d), key), []).append(t)
        for d in sorted({d for d, _ in next(iter(times.values()))}):
            for name in builds:
                cells = [times[name].get((d, key)) for key in ("solve", "apply+0", "apply+1", "apply-1")]
                text = [f"{statistics.median(c):.4f}" if c else "—" for c in cells]
                print(f"| {dtype} | {d} | {name} | " + " | ".join(text) + " |", flush=True)


if __name__ == "__main__":
    main()
