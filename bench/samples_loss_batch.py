# SPDX-License-Identifier: BSD-3-Clause
"""Many small problems in one call: the debiased Sinkhorn divergence of B pairs
of clouds (B, n, d), value and gradient in the points, with
conveyor.ot.SamplesLoss on the batch (one engine call per softmin for all B
problems), the same loss called once per problem (the loop a user writes
without batches), and GeomLoss's SamplesLoss on the same batch ("tensorized":
its dense batched backend, every N x M cost matrix in memory). Same blur,
scaling, p = 2; float32; one process, one thread (OMP_NUM_THREADS=1 and
torch.set_num_threads(1): run it under `taskset -c 0`).

Each cell: median of --reps calls of forward + backward (loss.sum().backward()),
after one warm-up call; and the engine's pair rate: the passes' point pairs
(4 softmins per eps of the schedule plus the last 4, B n m each) per second.
Values are checked against GeomLoss's (max relative difference printed).

usage: samples_loss_batch.py [--batch B] [--sizes 64,256,1024] [--dim 3] [--reps 5] [--markdown FILE]
"""
import argparse
import platform
import statistics
import time

import numpy as np
import torch

import conveyor.ot

try:
    import geomloss
except ImportError:
    geomloss = None


def timed(fn, reps):
    fn()  # warm-up (GeomLoss's first call also builds its kernels)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def value_and_backward(loss, x, y):
    def run():
        xs, ys = x.clone().requires_grad_(), y.clone().requires_grad_()
        value = loss(xs, ys)
        value.sum().backward()
        return value.detach()
    return run


def per_problem(loss, x, y):
    def run():
        xs, ys = x.clone().requires_grad_(), y.clone().requires_grad_()
        values = torch.stack([loss(xs[k], ys[k]) for k in range(len(xs))])
        values.sum().backward()
        return values.detach()
    return run


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--sizes", default="64,256,1024")
    ap.add_argument("--dim", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--blur", type=float, default=0.05)
    ap.add_argument("--scaling", type=float, default=0.5)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    torch.set_num_threads(1)
    B, d = args.batch, args.dim
    import conveyor
    lines = [f"CPU: {cpu_name()}; SIMD target: {conveyor.simd_target()}; one thread; float32; B = {B}, d = {d}, "
             f"blur {args.blur}, scaling {args.scaling}, p = 2, debiased; median of {args.reps} forward + backward "
             f"calls, ms",
             "",
             "| n = m | Conveyor, batch | Conveyor, a call per problem | GeomLoss tensorized, batch | "
             "batch ÷ loop | GeomLoss ÷ Conveyor | Conveyor pairs/s | values, max rel. diff. |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in [int(s) for s in args.sizes.split(",")]:
        g = torch.Generator().manual_seed(n)
        x = torch.rand((B, n, d), generator=g, dtype=torch.float32)
        y = torch.rand((B, n, d), generator=g, dtype=torch.float32) * 0.8 + 0.1
        ours = conveyor.ot.SamplesLoss("sinkhorn", p=2, blur=args.blur, scaling=args.scaling)
        t_batch = timed(value_and_backward(ours, x, y), args.reps)
        t_loop = timed(per_problem(ours, x, y), max(1, args.reps // 2))
        values = value_and_backward(ours, x, y)()
        # the passes: eps list of GeomLoss's schedule (diameter of the batch), 4 softmins each, plus the first and last
        diameter = float(torch.linalg.norm(torch.maximum(x.amax((0, 1)), y.amax((0, 1))) -
                                           torch.minimum(x.amin((0, 1)), y.amin((0, 1)))))
        steps = len(np.arange(2 * np.log(diameter), 2 * np.log(args.blur), 2 * np.log(args.scaling))) + 2
        pairs = (steps + 2) * 4 * B * n * n
        if geomloss is not None:
            theirs = geomloss.SamplesLoss("sinkhorn", p=2, blur=args.blur, scaling=args.scaling, backend="tensorized")
            t_geomloss = timed(value_and_backward(theirs, x, y), args.reps)
            ref = value_and_backward(theirs, x, y)()
            diff = float(((values - ref).abs() / ref.abs().clamp_min(1e-30)).max())
            geo, ratio, diff_s = f"{t_geomloss * 1e3:.1f}", f"{t_geomloss / t_batch:.2f}×", f"{diff:.1e}"
        else:
            geo, ratio, diff_s = "not installed", "—", "—"
        lines.append(f"| {n} | {t_batch * 1e3:.1f} | {t_loop * 1e3:.1f} | {geo} | {t_loop / t_batch:.2f}× | {ratio} | "
                     f"{pairs / t_batch:.2e} | {diff_s} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
