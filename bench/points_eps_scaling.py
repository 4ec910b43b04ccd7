#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Iterations of the point-cloud Sinkhorn solver with and without eps-scaling
(conveyor.sinkhorn_points, one process): points uniform in [0, 1]^d and
[0.3, 1.3]^d, uniform weights, L1 row-marginal tolerance tol; the annealed runs
report their annealing steps (one update of each side each) beside the
iterations at the target eps, and the cost difference to the plain run.

    PYTHONPATH=build/openmpi/python python3 bench/points_eps_scaling.py
"""
import argparse

import numpy as np
from mpi4py import MPI

import conveyor


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="60x2,400x2,400x3", help="NxD: N source points (N - 10 targets) in D dimensions")
    p.add_argument("--eps", default="1e-2,2e-3,5e-4")
    p.add_argument("--tols", default="1e-4,1e-7,1e-10")
    p.add_argument("--factors", default="0.5,0.8")
    args = p.parse_args()
    factors = [float(s) for s in args.factors.split(",")]
    print("| n x d | metric | eps | tol | plain: iterations | "
          + " | ".join(f"s = {s}: steps + iterations (saved) | cost diff" for s in factors) + " |")
    print("|---" * (5 + 2 * len(factors)) + "|")
    rng = np.random.default_rng(29)
    for shape in args.shapes.split(","):
        n, d = (int(x) for x in shape.split("x"))
        X, Y = rng.random((n, d)), rng.random((n - 10, d)) + 0.3
        for metric in ("sqeuclidean", "euclidean"):
            for eps in (float(e) for e in args.eps.split(",")):
                for tol in (float(t) for t in args.tols.split(",")):
                    kw = dict(comm=MPI.COMM_SELF, metric=metric, tol=tol, max_iter=1000000)
                    plain = conveyor.sinkhorn_points(X, Y, eps, **kw)
                    cells = []
                    for s in factors:
                        r = conveyor.sinkhorn_points(X, Y, eps, eps_scaling=s, **kw)
                        work = r.annealing_steps + r.iterations
                        cells.append(f"{r.annealing_steps} + {r.iterations} ({1 - work / plain.iterations:.0%}) | "
                                     f"{abs(r.cost - plain.cost):.1e}")
                    print(f"| {n} x {d} | {metric} | {eps:g} | {tol:g} | {plain.iterations} | " + " | ".join(cells)
                          + " |", flush=True)


if __name__ == "__main__":
    main()
