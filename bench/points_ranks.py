#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Point-cloud Sinkhorn over MPI ranks: seconds per iteration at n = m points
(uniform in the unit cube, each rank drawing its n / P points of each cloud), one thread
per rank, and the peak resident memory of each rank. Run under mpiexec at 1 and
2 ranks (scripts/bench points-ranks) and compare the rows: the work is n m pairs
per pass whatever P, so the ideal speed-up is P.

Per iteration = (t(hi) - t(lo)) / (hi - lo) (every rank waits at a barrier before
each run; the slowest rank's time), so the setup and the final measuring pass
cancel; median of --rounds.

    mpiexec -n 2 python3 bench/points_ranks.py --n 100000 --dims 3 --dtypes float64,float32
"""
import argparse
import resource
import statistics
import time

import numpy as np
from mpi4py import MPI

import conveyor

from point_bench_args import add_point_arguments  # (bench/, the script's directory)

COMM = MPI.COMM_WORLD


def main():
    p = add_point_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    p.add_argument("--one-run", action="store_true",
                   help="time one solve of --lo iterations instead (for sizes where a pass takes minutes): it runs "
                        "2 lo + 1 passes (the last measures the final iterate), so per iteration = 2 t / (2 lo + 1)")
    args = p.parse_args()
    P, r = COMM.Get_size(), COMM.Get_rank()
    first, count = conveyor.balanced_rows(args.n, COMM)
    if r == 0:
        print(f"| ranks | n = m | d | dtype | s per iteration | pairs/s (both passes) | peak RSS per rank (MiB) |")
        print("|---:|---:|---:|---|---:|---:|---:|")
    for dtype in args.dtypes.split(","):
        for d in (int(x) for x in args.dims.split(",")):
            rng = np.random.default_rng([d, r, P])  # only this rank's rows exist (the RSS column)
            X = rng.random((count, d)).astype(dtype)
            Y = (rng.random((count, d)) + 0.1).astype(dtype)

            def run(iters):
                COMM.Barrier()
                t0 = time.perf_counter()
                conveyor.sinkhorn_points(X, Y, 0.05, comm=COMM, tol=0.0, max_iter=iters, threads=1)
                return COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX)

            if args.one_run:
                t = 2 * run(args.lo) / (2 * args.lo + 1)
            else:
                t = statistics.median((run(args.hi) - run(args.lo)) / (args.hi - args.lo) for _ in range(args.rounds))
            rss = COMM.gather(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
            if r == 0:
                print(f"| {P} | {args.n} | {d} | {dtype} | {t:.3f} | {2 * args.n * args.n / t:.3e} | "
                      f"{max(rss):.0f} |", flush=True)


if __name__ == "__main__":
    main()
