#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Value and gradient of a fixed-support barycenter (issue "Optimal transport
inside training loops"): conveyor.ot.barycenter on torch tensors (the engine,
then implicit differentiation of its fixed point) beside POT's
ot.bregman.barycenter on the same tensors (method="sinkhorn", its iterations
recorded and differentiated by autograd), in the same run, one core.

Three Gaussian histograms on dim points of [0, 1], M = (x_i - x_j)^2, uniform
weights (where POT's start gives the barycenter, so both compute one q), the
same reg and stopThr (POT's error: sum_j std_k of the plans' column sums).
The loss is <g, q> for a fixed random g; the gradients are A's and M's.

Per dim (every 2^k and 3 * 2^k of --dims' range): forward iterations, adjoint
steps (each applies every plan twice, as a forward iteration does: the
backward's cost in solver passes), the median time of Conveyor's forward alone,
of forward + backward for each, their ratio, and the limit: one memcpy of the
dim x dim matrix (float64) times the passes (forward iterations + adjoint
steps), each pass reading K (or R) once. The gradients are compared (largest
difference relative to the largest entry; M's symmetric parts, as M is
symmetric and POT < 0.9 uses K where its transpose belongs). One thread:
torch.set_num_threads(1), threads=1, OMP_NUM_THREADS=1; run it under
`taskset -c 0` (scripts/bench barycenter-grad).

usage: barycenter_gradients.py [--dims 64,2048] [--reg 0.002] [--tol 1e-8] [--rounds 5]
"""
import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import ot  # noqa: E402
import torch  # noqa: E402

import conveyor  # noqa: E402
import conveyor.ot  # noqa: E402
from mpi4py import MPI  # noqa: E402
from conveyor.ot._barycenter_gradients import barycenter_vjp  # noqa: E402


def problem(dim):
    x = np.linspace(0, 1, dim)
    A = np.stack([np.exp(-0.5 * ((x - m) / 0.08) ** 2) for m in (0.25, 0.5, 0.8)], axis=1) + 1e-6
    return A / A.sum(axis=0), (x[:, None] - x[None, :]) ** 2


def sizes(low, high):
    out, k = [], 1
    while k <= high:
        out += [s for s in (k, 3 * k // 2) if low <= s <= high and s == int(s)]
        k *= 2
    return sorted(set(out))


def value_and_grad(solver, A, M, reg, tol, g, backward=True):
    At, Mt = torch.tensor(A, requires_grad=backward), torch.tensor(M, requires_grad=backward)
    start = time.perf_counter()
    q = solver(At, Mt, reg, stopThr=tol, numItermax=100000)
    if backward:
        (q * g).sum().backward()
    seconds = time.perf_counter() - start
    return seconds, (q.detach().numpy(), At.grad.numpy() if backward else None, Mt.grad.numpy() if backward else None)


def timed_copy(into, source):
    start = time.perf_counter()
    np.copyto(into, source)
    return time.perf_counter() - start


def centred(gA):
    means = gA.mean(axis=0)
    return gA - (means - means.mean())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", default="64,2048")
    parser.add_argument("--reg", type=float, default=0.002)
    parser.add_argument("--tol", type=float, default=1e-8)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    low, high = (int(s) for s in args.dims.split(","))
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print(f"# {cpu}, SIMD target {conveyor.simd_target()}, one thread; "
          f"torch {torch.__version__}, POT {ot.__version__}; reg {args.reg}, stopThr {args.tol}, H = 3, float64")
    print("| dim | forward iterations | adjoint steps | Conveyor forward ms | Conveyor value+grad ms | "
          "limit ms | POT value+grad ms | POT / Conveyor | max grad difference |")
    print("|---|---|---|---|---|---|---|---|---|")

    def conveyor_solver(At, Mt, reg, **kw):
        return conveyor.ot.barycenter(At, Mt, reg, threads=1, **kw)

    def pot_solver(At, Mt, reg, **kw):
        return ot.bregman.barycenter(At, Mt, reg, method="sinkhorn", **kw)

    for dim in sizes(low, high):
        A, M = problem(dim)
        g = torch.tensor(np.random.default_rng(dim).standard_normal(dim))
        res = conveyor.sinkhorn_barycenter(M, A, args.reg, comm=MPI.COMM_SELF, tol=args.tol, max_iter=100000,
                                           check_every=10, first_check=2, threads=1)
        steps = barycenter_vjp(A, M, np.full(3, 1 / 3), args.reg, res.log_v, res.barycenter, g.numpy())[3]
        copy = np.empty_like(M)
        one_read = statistics.median(timed_copy(copy, M) for _ in range(50))
        times = {"fwd": [], "conveyor": [], "pot": []}
        value_and_grad(conveyor_solver, A, M, args.reg, args.tol, g)  # warm-up
        for _ in range(args.rounds):
            times["fwd"].append(value_and_grad(conveyor_solver, A, M, args.reg, args.tol, g, backward=False)[0])
            t, mine = value_and_grad(conveyor_solver, A, M, args.reg, args.tol, g)
            times["conveyor"].append(t)
            t, pots = value_and_grad(pot_solver, A, M, args.reg, args.tol, g)
            times["pot"].append(t)
        ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        sym_mine, sym_pot = mine[2] + mine[2].T, pots[2] + pots[2].T
        diff = max(np.abs(centred(mine[1]) - centred(pots[1])).max() / np.abs(centred(pots[1])).max(),
                   np.abs(sym_mine - sym_pot).max() / np.abs(sym_pot).max())
        limit = 1e3 * one_read * (res.iterations + steps)
        print(f"| {dim} | {res.iterations} | {steps} | {ms['fwd']:.2f} | {ms['conveyor']:.2f} | {limit:.2f} | "
              f"{ms['pot']:.2f} | {ms['pot'] / ms['conveyor']:.1f} | {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
