"""`python3 bench/python_bench.py` under mpiexec: Conveyor from Python next to
what a Python user would otherwise call, in the same run — mpi4py's
COMM.Allreduce (the MPI library's allreduce) and NumPy's in-place add
(np.add(a, b, out=b), one rank). Medians over --reps calls after a warm-up, the
slowest rank for collectives; ratios are of medians in this run. Prints a
markdown table on rank 0 (scripts/bench python writes it to bench/results/python.md).
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

import conveyor

COMM = MPI.COMM_WORLD


def median_seconds(fn, reps, collective):
    samples = []
    for i in range(reps + 1):
        if collective:
            COMM.Barrier()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        if collective:
            dt = COMM.allreduce(dt, op=MPI.MAX)
        if i:
            samples.append(dt)
    return float(np.median(samples))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--sizes", default="1KiB,64KiB,1MiB,16MiB,64MiB")
    args = p.parse_args()
    units = {"KiB": 1 << 10, "MiB": 1 << 20}
    sizes = [int(s[:-3]) * units[s[-3:]] for s in args.sizes.split(",")]
    rows = []
    for nbytes in sizes:
        n = nbytes // 4
        x = np.ones(n, np.float32)
        out = np.empty_like(x)
        ref = median_seconds(lambda: COMM.Allreduce(x, out, op=MPI.SUM), args.reps, True)
        ours = median_seconds(lambda: conveyor.allreduce(x, "sum", COMM, out=out), args.reps, True)
        rows.append((f"allreduce sum float32, {COMM.Get_size()} ranks", nbytes, "mpi4py COMM.Allreduce", ref, ours))
    if COMM.Get_rank() == 0:  # local reductions: one rank's work
        for nbytes in sizes:
            n = nbytes // 4
            a, b = np.ones(n, np.float32), np.ones(n, np.float32)
            ref = median_seconds(lambda: np.add(a, b, out=b), args.reps, False)
            ours = median_seconds(lambda: conveyor.reduce_local(a, b, "sum"), args.reps, False)
            rows.append(("reduce_local sum float32, 1 rank", nbytes, "NumPy np.add(a, b, out=b)", ref, ours))
        print(f"Conveyor from Python vs the usual Python call (median of {args.reps}; x = baseline / Conveyor)\n")
        print("| case | bytes | baseline | baseline ms | Conveyor ms | x |")
        print("|---|---|---|---|---|---|")
        for case, nbytes, base, ref, ours in rows:
            print(f"| {case} | {nbytes} | {base} | {ref * 1e3:.3f} | {ours * 1e3:.3f} | {ref / ours:.2f} |")


if __name__ == "__main__":
    main()
