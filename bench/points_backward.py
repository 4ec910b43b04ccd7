#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""loss.backward() through a point-cloud Sinkhorn loss on PyTorch CPU tensors:
conveyor.ot.empirical_sinkhorn2 (implicit differentiation, no n x m matrix)
beside POT's ot.bregman.empirical_sinkhorn2 on the same tensors (the cost matrix
formed, its iterations recorded and differentiated by autograd), in the same
run, with the unit both are made of: one application of the plan (P V, one
column, Conveyor's engine) and one pass of torch's n x m cost matrix.

Per size: the median over --rounds of forward and of backward for each (rounds
alternate the two libraries), the gradients' largest difference, the
iterations each ran. Prints CSV rows and a Markdown table.

    python3 bench/points_backward.py --sizes 1024,1536,2048,3072,4096 --d 3
"""
import argparse
import statistics
import time

import numpy as np
import torch

import conveyor
import conveyor.ot


THREADS = [0]  # Conveyor's threads (set in main)


def timed(function):
    t0 = time.perf_counter()
    out = function()
    return time.perf_counter() - t0, out


def conveyor_round(X, Y, reg, tol):
    Xt = torch.tensor(X, requires_grad=True)
    t_fwd, loss = timed(lambda: conveyor.ot.empirical_sinkhorn2(Xt, torch.tensor(Y), reg, stopThr=tol,
                                                                numIterMax=100000, threads=THREADS[0]))
    t_bwd, _ = timed(loss.backward)
    return t_fwd, t_bwd, Xt.grad.numpy()


def pot_round(X, Y, reg, tol):
    import ot
    Xt = torch.tensor(X, requires_grad=True)
    t_fwd, loss = timed(lambda: ot.sinkhorn2(torch.tensor([]), torch.tensor([]), ot.dist(Xt, torch.tensor(Y)), reg,
                                             stopThr=tol, numItermax=100000))
    t_bwd, _ = timed(loss.backward)
    return t_fwd, t_bwd, Xt.grad.numpy()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1024,1536,2048,3072,4096")
    p.add_argument("--d", type=int, default=3)
    p.add_argument("--reg", type=float, default=0.05, help="entropic regularization (the clouds span ~1)")
    p.add_argument("--tol", type=float, default=1e-6, help="stopThr of both (row / column marginal error)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="threads of both (0: this machine's CPUs)")
    args = p.parse_args()
    import os
    import ot
    threads = args.threads or os.cpu_count()
    torch.set_num_threads(threads)  # (torch's own default here is 1; Conveyor's the node's CPUs)
    THREADS[0] = threads
    print(f"# CPU target {conveyor.simd_target()}; torch {torch.__version__} ({torch.get_num_threads()} threads, Conveyor {threads}); "
          f"POT {ot.__version__}; d = {args.d}; reg {args.reg}; stopThr {args.tol}; float64; one process")
    print("n,conveyor_fwd_ms,conveyor_bwd_ms,pot_fwd_ms,pot_bwd_ms,apply_ms,cost_matrix_ms,max_grad_diff")
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        rng = np.random.default_rng(n)
        X, Y = rng.random((n, args.d)), rng.random((n, args.d)) + 0.1
        f, g = conveyor.ot.empirical_sinkhorn(X, Y, args.reg, isLazy=True, stopThr=args.tol, numIterMax=100000)
        ones = np.ones((n, 1))
        conveyor.ot.empirical_plan_apply(X, Y, args.reg, f, g, ones)
        times = {k: [] for k in ("cf", "cb", "pf", "pb", "apply", "cost")}
        diff = 0.0
        for _ in range(args.rounds):
            cf, cb, cg = conveyor_round(X, Y, args.reg, args.tol)
            pf, pb, pg = pot_round(X, Y, args.reg, args.tol)
            diff = max(diff, float(np.abs(cg - pg).max()))
            times["apply"].append(timed(lambda: conveyor.ot.empirical_plan_apply(X, Y, args.reg, f, g, ones))[0])
            Xt, Yt = torch.tensor(X), torch.tensor(Y)
            times["cost"].append(timed(lambda: ot.dist(Xt, Yt))[0])
            for key, value in zip(("cf", "cb", "pf", "pb"), (cf, cb, pf, pb)):
                times[key].append(value)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        rows.append((n, med, diff))
        print(f"{n},{med['cf']:.1f},{med['cb']:.1f},{med['pf']:.1f},{med['pb']:.1f},{med['apply']:.2f},"
              f"{med['cost']:.2f},{diff:.1e}", flush=True)
    print("\n| n = m | Conveyor forward ms | Conveyor backward ms | POT forward ms | POT backward ms "
          "| backward: POT / Conveyor | Conveyor backward in plan applications | gradients differ by |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, m, diff in rows:
        print(f"| {n} | {m['cf']:.1f} | {m['cb']:.1f} | {m['pf']:.1f} | {m['pb']:.1f} | {m['pb'] / m['cb']:.2f}x "
              f"| {m['cb'] / m['apply']:.0f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
