#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Where the point-cloud kernel's dot-product path overtakes the difference path:
seconds per Sinkhorn iteration (both passes) at n = m points uniform in the unit
cube, per dimension, with CONVEYOR_POINTS_DOT_MIN_DIM forcing one path (1: dot
products for every d; a huge value: differences for every d), one thread, the
two paths in alternating rounds (each round a fresh process per path, since the
setting is read once per process); median of the rounds. Per iteration =
(t(hi) - t(lo)) / (hi - lo), so the setup cancels.

    PYTHONPATH=build/openmpi/python taskset -c 0 python3 bench/points_dot_crossover.py
"""
import argparse
import statistics

from point_bench_args import add_point_arguments, alternating_children  # (bench/, the script's directory)

CHILD = r"""
import json, sys, time
import numpy as np
from mpi4py import MPI
import conveyor

n, dims, dtype, lo, hi = int(sys.argv[1]), [int(x) for x in sys.argv[2].split(",")], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
out = {}
for d in dims:
    rng = np.random.default_rng(d)
    X, Y = rng.random((n, d)).astype(dtype), rng.random((n, d)).astype(dtype)
    def run(iters):
        t0 = time.perf_counter()
        conveyor.sinkhorn_points(X, Y, 0.1 * d, comm=MPI.COMM_SELF, tol=0.0, max_iter=iters, threads=1)
        return time.perf_counter() - t0
    run(lo)
    out[d] = (run(hi) - run(lo)) / (hi - lo)
print(json.dumps(out))
"""


def main():
    p = add_point_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]), n=4000,
                            dims="4,8,12,16,20,24,32,48,64,96", hi=4)
    args = p.parse_args()
    paths = {"differences": "999999", "dot products": "1"}
    print(f"n = m = {args.n}, one thread; seconds per iteration (median of {args.rounds} rounds), "
          "dots / differences < 1: the dot-product path is faster\n")
    print("| dtype | d | differences (s) | dot products (s) | dots / differences |")
    print("|---|---:|---:|---:|---:|")
    for dtype in args.dtypes.split(","):
        runs = alternating_children(CHILD, args, dtype,
                                    {name: {"CONVEYOR_POINTS_DOT_MIN_DIM": v} for name, v in paths.items()})
        times = {name: {} for name in paths}
        for name, outputs in runs.items():
            for output in outputs:
                for d, t in output.items():
                    times[name].setdefault(int(d), []).append(t)
        for d in sorted(times["differences"]):
            diff, dots = (statistics.median(times[name][d]) for name in paths)
            print(f"| {dtype} | {d} | {diff:.4f} | {dots:.4f} | {dots / diff:.2f} |", flush=True)


if __name__ == "__main__":
    main()
