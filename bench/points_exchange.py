#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Point-cloud Sinkhorn per iteration with each exchange: the other side's points
round a ring (P steps, transfer overlapped with the work), gathered once per pass
(one allgather), and the automatic choice (the ring's first pass measured against
the cost model's allgather), in the same run, on every rank of the job.

Run under mpiexec (the ranks of the job, one thread each). Small clouds are the
case the gather is for: the work per block is short beside a message latency.
Per iteration = (t(hi) - t(lo)) / (hi - lo) on the slowest rank (so the first
pass, which automatic times, cancels); rounds alternate the exchanges; medians.
Prints one CSV row per (n, exchange) and a Markdown table on rank 0.

    mpiexec -n 4 python3 bench/points_exchange.py --sizes 500,1000,2000,4000
"""
import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

import conveyor

# Every exchange of the table (src/sinkhorn/points/exchange_table.cpp), then auto.
EXCHANGES = tuple(name for name, _ in conveyor._conveyor.points_exchanges()) + ("auto",)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="250,500,1000,2000,4000,8000", help="n = m, points a side over all ranks")
    p.add_argument("--dim", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--lo", type=int, default=5)
    p.add_argument("--hi", type=int, default=25)
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        rng = np.random.default_rng(7)
        X, Y = rng.random((n, args.dim)), rng.random((n, args.dim)) + 0.2
        first, count = conveyor.balanced_rows(n, comm)
        mine_x, mine_y = X[first:first + count], Y[first:first + count]

        def run(exchange, iterations):
            comm.Barrier()
            t0 = time.perf_counter()
            conveyor.sinkhorn_points(mine_x, mine_y, 0.05, comm=comm, tol=0.0, max_iter=iterations, threads=1,
                                     exchange=exchange)
            return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)

        times = {e: [] for e in EXCHANGES}
        for e in EXCHANGES:
            run(e, 2)  # warm
        for r in range(args.rounds):
            for e in (EXCHANGES if r % 2 == 0 else tuple(reversed(EXCHANGES))):
                times[e].append((run(e, args.hi) - run(e, args.lo)) / (args.hi - args.lo))
        ring = statistics.median(times[EXCHANGES[0]])
        for e in EXCHANGES:
            t = statistics.median(times[e])
            rows.append((n, size, e, t, ring / t))
            if rank == 0:
                print(f"{n},{size},{e},{t:.4e},{ring / t:.2f}", flush=True)
    if rank == 0:
        first = EXCHANGES[0]  # the table's first row: the one auto times first
        others = EXCHANGES[1:]
        print("\n| n = m | ranks | " + " | ".join(f"{e} ms/iteration" for e in EXCHANGES) + " | "
              + " | ".join(f"{first} / {e}" for e in others) + " |")
        print("|---:|---:|" + "---:|" * (len(EXCHANGES) + len(others)))
        by = {}
        for n, P, e, t, _ in rows:
            by.setdefault((n, P), {})[e] = t
        for (n, P), t in by.items():
            print(f"| {n} | {P} | " + " | ".join(f"{t[e] * 1e3:.3f}" for e in EXCHANGES) + " | "
                  + " | ".join(f"{t[first] / t[e]:.2f}" for e in others) + " |")

if __name__ == "__main__":
    main()
