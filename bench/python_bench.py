# SPDX-License-Identifier: BSD-3-Clause
"""`python3 bench/python_bench.py` under mpiexec: Conveyor from Python next to
what a Python user would otherwise call, in the same run — mpi4py's
COMM.Allreduce (the MPI library's allreduce) and NumPy's in-place add
(np.add(a, b, out=b), one rank). After a warm-up past Conveyor's measuring
phase, --reps samples of K back-to-back calls each, alternating the two in
rounds; the slowest rank for collectives; ratios are of medians in this run. Prints a
markdown table on rank 0 (scripts/bench python writes it to bench/results/python.md).
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

import conveyor

COMM = MPI.COMM_WORLD


def warmup_calls(nbytes):
    """Calls before timing: past Conveyor's measuring phase of a size (auto tries up
    to 3 candidates: at most 93, 45, 27 and 15 calls below 32 KiB, 512 KiB, 8 MiB and
    above), as bench/unmodified_allreduce.c does; the baseline gets the same."""
    return 96 if nbytes < 32 << 10 else 48 if nbytes < 512 << 10 else 30 if nbytes < 8 << 20 else 16


def median_seconds(fns, nbytes, reps, collective):
    """Median seconds per call of each of `fns`, sampled alternately in rounds
    (the order flips every round); a sample is K back-to-back calls (K agreed by
    the ranks, ~2 ms per sample, at most 200) after a barrier, the slowest rank's
    time for collectives."""
    comm = COMM if collective else MPI.COMM_SELF
    for fn in fns:
        for _ in range(warmup_calls(nbytes)):
            fn()
    one = 0.0
    for fn in fns:
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        one = max(one, comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    k = comm.bcast(max(1, min(200, int(2e-3 / max(one, 1e-7)))), root=0)
    samples = [[] for _ in fns]
    for r in range(reps):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(k):
                fns[i]()
            samples[i].append(comm.allreduce((time.perf_counter() - t0) / k, op=MPI.MAX))
    return [float(np.median(s)) for s in samples]


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
        ref, ours = median_seconds([lambda: COMM.Allreduce(x, out, op=MPI.SUM),
                                    lambda: conveyor.allreduce(x, "sum", COMM, out=out)], nbytes, args.reps, True)
        rows.append((f"allreduce sum float32, {COMM.Get_size()} ranks", nbytes, "mpi4py COMM.Allreduce", ref, ours))
    if COMM.Get_rank() == 0:  # local reductions: one rank's work
        for nbytes in sizes:
            n = nbytes // 4
            a, b = np.ones(n, np.float32), np.ones(n, np.float32)
            ref, ours = median_seconds([lambda: np.add(a, b, out=b), lambda: conveyor.reduce_local(a, b, "sum")],
                                       nbytes, args.reps, False)
            rows.append(("reduce_local sum float32, 1 rank", nbytes, "NumPy np.add(a, b, out=b)", ref, ours))
        print(f"Conveyor from Python vs the usual Python call (median of {args.reps}; x = baseline / Conveyor)\n")
        print("| case | bytes | baseline | baseline ms | Conveyor ms | x |")
        print("|---|---|---|---|---|---|")
        for case, nbytes, base, ref, ours in rows:
            print(f"| {case} | {nbytes} | {base} | {ref * 1e3:.3f} | {ours * 1e3:.3f} | {ref / ours:.2f} |")


if __name__ == "__main__":
    main()
