#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.ot.sinkhorn against POT's ot.sinkhorn, per iteration, through the
Python call, one thread each, in the same run.

Same input as bench/sinkhorn_pot.py (C_ij = frac(0.618 i + 0.414 j), reg = 1,
uniform marginals) and the same method: runs of --lo and --hi iterations
(stopThr=0: exactly numItermax), per iteration = (hi - lo) / (hi - lo iterations),
so what does not depend on the iteration count (POT's exp and K / a, Conveyor's
kernel exp(-C/reg), the plan at the end, argument conversion) cancels, and both
libraries' error check every 10th iteration stays in. Rounds alternate the order
of the two libraries; each count's fastest run of --reps is used; the
one-read bound is the time of one vectorized pass over a matrix of the same size
(NumPy's sum over an n x n array of the dtype), measured in the same run.
Single-threaded: OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1 (set before NumPy loads,
by scripts/bench) and threads=1 for Conveyor.
"""
import argparse
import sys
import time
import warnings

import numpy as np
import ot

import conveyor.ot
from sinkhorn_pot import problem, write_csv  # the same input as scripts/bench sinkhorn



def timed(fn, a, b, C, iters, method="sinkhorn"):
    t0 = time.perf_counter()
    fn(a, b, C, 1.0, method=method, numItermax=iters, stopThr=0)
    return time.perf_counter() - t0


def conveyor_sinkhorn(*args, **kwargs):
    return conveyor.ot.sinkhorn(*args, threads=1, **kwargs)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="8000,16000")
    p.add_argument("--dtypes", default="float64,float32")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--lo", type=int, default=10, help="iterations of the short run")
    p.add_argument("--hi", type=int, default=40, help="iterations of the long run (more: setup noise matters less)")
    p.add_argument("--method", default="sinkhorn", choices=("sinkhorn", "sinkhorn_log"),
                   help="POT's method for both libraries")
    p.add_argument("--csv", help="write the rows as CSV")
    args = p.parse_args()
    warnings.simplefilter("ignore")  # not converged: intended (stopThr=0)
    impls = {"POT " + ot.__version__: ot.sinkhorn, "conveyor.ot": conveyor_sinkhorn}
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        for dtype in args.dtypes.split(","):
            C, a, b = problem(n, dtype)
            runs = {name: {"lo": [], "hi": []} for name in impls}
            for fn in impls.values():
                timed(fn, a, b, C, 1, args.method)  # warm-up
            bound = []
            for r in range(args.reps):
                order = list(impls) if r % 2 == 0 else list(reversed(impls))
                for name in order:
                    runs[name]["lo"].append(timed(impls[name], a, b, C, args.lo, args.method))
                    runs[name]["hi"].append(timed(impls[name], a, b, C, args.hi, args.method))
                t0 = time.perf_counter()
                C.sum()
                bound.append(time.perf_counter() - t0)
            per_iter = {name: (min(v["hi"]) - min(v["lo"])) / (args.hi - args.lo) for name, v in runs.items()}
            pot_name = next(iter(impls))
            row = {"n": n, "dtype": dtype, "iterations": f"{args.lo}/{args.hi}", "one_read_ms": "%.2f" % (min(bound) * 1e3)}
            for name, t in per_iter.items():
                row[name + " ms"] = "%.2f" % (t * 1e3)
            row["speedup"] = "%.2f" % (per_iter[pot_name] / per_iter["conveyor.ot"])
            rows.append(row)
            print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
            del C
    print("\n| n | dtype | runs (iterations) | one-read bound ms | " +
          " | ".join(f"{name} ms/iteration" for name in impls) + " | speedup |")
    print("|---:|---|---|---:|" + "---:|" * len(impls) + "---:|")
    for row in rows:
        print(f"| {row['n']} | {row['dtype']} | {row['iterations']} | {row['one_read_ms']} | " +
              " | ".join(row[name + ' ms'] for name in impls) + f" | **{row['speedup']}x** |")
    if args.csv:
        write_csv(rows, args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
