#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.ot.barycenter against POT's ot.bregman.barycenter, per iteration,
through the Python call, one thread each (OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1,
set before NumPy loads), in the same run, with the one-read bound beside them.

H Gaussian histograms on `dim` points of [0, 1], M the squared distances, reg
0.05 (the plain kernel exp(-M/reg) does not underflow), weights uniform. Runs of
--lo and --hi iterations (stopThr=0: exactly numItermax); per iteration = (t(hi) -
t(lo)) / (hi - lo), so the kernel's formation and the conversions cancel. POT's
plain iteration is two matrix products with H columns (K u, K^T v: two reads of
K); Conveyor's reads each row of K once for both. The one-read bound: NumPy's
sum over a dim x dim float64 array (one pass over K), same run. Rounds alternate
the two libraries; the fastest run of each count is kept.

    python3 bench/barycenter_vs_pot.py --dims 1000,2000,4000 --hists 3
"""
import argparse
import os
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import ot  # noqa: E402

import conveyor  # noqa: E402
import conveyor.ot  # noqa: E402


def problem(dim, hists):
    x = np.linspace(0, 1, dim)
    A = np.stack([np.exp(-0.5 * ((x - c) / 0.08) ** 2) for c in np.linspace(0.2, 0.8, hists)], axis=1)
    return A / A.sum(axis=0), (x[:, None] - x[None, :]) ** 2


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="1000,2000,4000")
    p.add_argument("--hists", type=int, default=3)
    p.add_argument("--methods", default="sinkhorn,sinkhorn_log")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--lo", type=int, default=5)
    p.add_argument("--hi", type=int, default=25)
    args = p.parse_args()
    warnings.simplefilter("ignore")  # not converged: intended (stopThr=0)
    impls = {"POT " + ot.__version__: ot.bregman.barycenter,
             "conveyor.ot": lambda *a, **k: conveyor.ot.barycenter(*a, threads=1, **k)}
    print(f"# CPU target {conveyor.simd_target()}; one thread; H = {args.hists}; reg 0.05; float64")
    rows = []
    for method in args.methods.split(","):
        for dim in (int(s) for s in args.dims.split(",")):
            A, M = problem(dim, args.hists)

            def timed(fn, iterations):
                t0 = time.perf_counter()
                fn(A, M, 0.05, method=method, numItermax=iterations, stopThr=0.0)
                return time.perf_counter() - t0

            runs = {name: {"lo": [], "hi": []} for name in impls}
            bound = []
            for fn in impls.values():
                timed(fn, 2)  # warm
            for r in range(args.reps):
                for name in (list(impls) if r % 2 == 0 else list(reversed(impls))):
                    runs[name]["lo"].append(timed(impls[name], args.lo))
                    runs[name]["hi"].append(timed(impls[name], args.hi))
                t0 = time.perf_counter()
                M.sum()
                bound.append(time.perf_counter() - t0)
            per = {n: (min(v["hi"]) - min(v["lo"])) / (args.hi - args.lo) for n, v in runs.items()}
            pot = next(iter(impls))
            rows.append((method, dim, min(bound), per[pot], per["conveyor.ot"]))
            print(f"{method},{dim},{min(bound) * 1e3:.2f},{per[pot] * 1e3:.2f},{per['conveyor.ot'] * 1e3:.2f},"
                  f"{per[pot] / per['conveyor.ot']:.2f}", flush=True)
    pot = next(iter(impls))
    print(f"\n| method | dim | one-read bound ms | {pot} ms/iteration | conveyor.ot ms/iteration | speedup | "
          "conveyor / bound |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for method, dim, b, t_pot, t_conv in rows:
        print(f"| {method} | {dim} | {b * 1e3:.2f} | {t_pot * 1e3:.2f} | {t_conv * 1e3:.2f} | **{t_pot / t_conv:.2f}x** | "
              f"{t_conv / b:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
