#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Point-cloud Sinkhorn per iteration: Conveyor's online solver against KeOps
(CPU backend, NumPy interface), ott-jax (PointCloud with batch_size, JAX on CPU)
and POT's empirical_sinkhorn(isLazy=True), one core each, in the same run.

Every implementation runs the same log-domain iteration (both potentials updated
by a log-sum-exp over the other cloud, C_ij = ||x_i - y_j||^2, eps = 0.1 on
points uniform in the unit cube) for a fixed number of iterations (no early
stop). Per iteration = (t(hi) - t(lo)) / (hi - lo) from runs of lo and hi
iterations, so one-time costs (compilation, jit, conversions) cancel; each
implementation is warmed up once first. Rounds alternate the implementations;
the median over rounds is reported, with pairs/s = 2 n m / per-iteration.

The compute roof is Conveyor's own kernel on data that stays in L1 (n = m = 512,
d the row's, the cloud 12 KB at d = 3 in float64): the same inner loop
(distance, exp, accumulate) without memory traffic, measured in the same run;
each row's Conveyor pairs/s is shown as a fraction of it.

One core: the process is pinned by scripts/bench (taskset -c 0), Conveyor runs
threads=1, KeOps and NumPy see OMP_NUM_THREADS=1, XLA runs single-threaded
(XLA_FLAGS set before JAX loads). Anchors that are not installed are skipped and
named in the output.
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import conveyor  # noqa: E402

EPS = 0.1


def clouds(n, d, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, d)).astype(dtype), rng.random((n, d)).astype(dtype)


# --- the implementations: each returns a function run(iterations) -> seconds ----
def conveyor_runner(X, Y):
    def run(iters):
        t0 = time.perf_counter()
        conveyor.sinkhorn_points(X, Y, EPS, comm=MPI.COMM_SELF, tol=0.0, max_iter=iters, threads=1)
        return time.perf_counter() - t0
    return run


def keops_runner(X, Y):
    from pykeops.numpy import LazyTensor
    n, m = X.shape[0], Y.shape[0]
    x_i, y_j = LazyTensor(X[:, None, :]), LazyTensor(Y[None, :, :])
    x_j, y_i = LazyTensor(X[None, :, :]), LazyTensor(Y[:, None, :])
    C_xy, C_yx = ((x_i - y_j) ** 2).sum(-1), ((y_i - x_j) ** 2).sum(-1)
    log_a = np.full(n, -np.log(n), dtype=X.dtype)
    log_b = np.full(m, -np.log(m), dtype=X.dtype)

    def run(iters):
        g = np.zeros(m, dtype=X.dtype)
        t0 = time.perf_counter()
        for _ in range(iters):
            lse_f = (LazyTensor(g[None, :, None]) - C_xy / EPS).logsumexp(dim=1).ravel()
            f = log_a - lse_f
            lse_g = (LazyTensor(f[None, :, None]) - C_yx / EPS).logsumexp(dim=1).ravel()
            g = log_b - lse_g
        return time.perf_counter() - t0
    return run


def ott_runner(X, Y, batch):
    import jax
    if X.dtype == np.float64:
        jax.config.update("jax_enable_x64", True)
    from ott.geometry import pointcloud
    from ott.problems.linear import linear_problem
    from ott.solvers.linear import sinkhorn
    geom = pointcloud.PointCloud(jax.numpy.asarray(X), jax.numpy.asarray(Y), epsilon=EPS, batch_size=batch)
    problem = linear_problem.LinearProblem(geom)
    solvers = {}

    def run(iters):
        if iters not in solvers:
            solver = sinkhorn.Sinkhorn(threshold=-1.0, inner_iterations=1, min_iterations=iters, max_iterations=iters)
            solvers[iters] = jax.jit(solver)
            jax.block_until_ready(solvers[iters](problem).f)  # compile outside the timing
        t0 = time.perf_counter()
        jax.block_until_ready(solvers[iters](problem).f)
        return time.perf_counter() - t0
    return run


def pot_runner(X, Y, batch):
    import ot

    def run(iters):
        t0 = time.perf_counter()
        ot.bregman.empirical_sinkhorn(X, Y, EPS, numIterMax=iters, stopThr=0.0, isLazy=True, batchSize=batch,
                                      warn=False)
        return time.perf_counter() - t0
    return run


ANCHORS = {"conveyor": conveyor_runner, "keops": keops_runner,
           "ott-jax": lambda X, Y: ott_runner(X, Y, 1024), "pot-lazy": lambda X, Y: pot_runner(X, Y, 1000)}


def available(name):
    module = {"keops": "pykeops", "ott-jax": "ott", "pot-lazy": "ot"}.get(name)
    if module is None:
        return True
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def per_iteration(run, lo, hi):
    return (run(hi) - run(lo)) / (hi - lo)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,30000")
    p.add_argument("--dims", default="3,64")
    p.add_argument("--dtypes", default="float64,float32")
    p.add_argument("--anchors", default="conveyor,keops,ott-jax,pot-lazy")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--lo", type=int, default=1)
    p.add_argument("--hi", type=int, default=3)
    p.add_argument("--slow-limit", type=float, default=60.0,
                   help="skip an anchor's larger sizes once one iteration took longer than this (s)")
    p.add_argument("--csv", help="write the rows as CSV")
    args = p.parse_args()
    names = [a for a in args.anchors.split(",") if available(a)]
    missing = [a for a in args.anchors.split(",") if a not in names]
    print(f"# CPU target {conveyor.simd_target()}; one core; eps {EPS}; per iteration = (t({args.hi}) - t({args.lo}))"
          f" / {args.hi - args.lo}, median of {args.rounds} rounds"
          + (f"; not installed: {', '.join(missing)}" if missing else ""))
    rows = []
    print("n,d,dtype,impl,seconds_per_iteration,pairs_per_s,fraction_of_roof")
    too_slow = set()
    for dtype in args.dtypes.split(","):
        for d in (int(x) for x in args.dims.split(",")):
            Xr, Yr = clouds(512, d, dtype, seed=1)
            roof_run = conveyor_runner(Xr, Yr)
            roof_run(2)
            roof = statistics.median(2 * 512 * 512 / per_iteration(roof_run, 20, 120) for _ in range(3))
            print(f"512,{d},{dtype},roof(L1),{2 * 512 * 512 / roof:.3e},{roof:.3e},1.00")
            rows.append((512, d, dtype, "roof(L1)", 2 * 512 * 512 / roof, roof, 1.0))
            for n in (int(x) for x in args.sizes.split(",")):
                X, Y = clouds(n, d, dtype)
                runners = {}
                for name in names:
                    if (name, dtype, d) in too_slow:
                        continue
                    runners[name] = ANCHORS[name](X, Y)
                    runners[name](args.lo)  # warm: compile, jit, caches
                times = {name: [] for name in runners}
                for r in range(args.rounds):
                    order = list(runners) if r % 2 == 0 else list(reversed(list(runners)))
                    for name in order:
                        times[name].append(per_iteration(runners[name], args.lo, args.hi))
                for name, ts in times.items():
                    t = statistics.median(ts)
                    pairs = 2 * n * n / t
                    frac = pairs / roof if name == "conveyor" else float("nan")
                    print(f"{n},{d},{dtype},{name},{t:.4e},{pairs:.3e},{frac:.2f}")
                    rows.append((n, d, dtype, name, t, pairs, frac))
                    if t > args.slow_limit:
                        too_slow.add((name, dtype, d))
                sys.stdout.flush()
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("n,d,dtype,impl,seconds_per_iteration,pairs_per_s,fraction_of_roof\n")
            for row in rows:
                f.write(",".join(str(x) for x in row) + "\n")


if __name__ == "__main__":
    main()
