#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Value and gradient of the debiased Sinkhorn divergence between two point
clouds, the call a training loop makes (issue "Optimal transport inside
training loops"), Conveyor beside what its users would otherwise call, in the
same run, one core:

- GeomLoss's loss (the same blur, scaling, p = 2, so the same eps schedule and
  number of updates): conveyor.ot.SamplesLoss against geomloss.SamplesLoss with
  backend="tensorized" (its N x M matrices in memory, where they fit) and
  backend="online" (KeOps, where installed). Gradients: the envelope theorem's,
  from the last update, in both. Conveyor's default ("auto": formed cost arrays
  where conveyor.ot._samples_loss_formed.use_formed says, else the point-cloud
  engine) is shown with its other backend beside:
  "conveyor-online" or "conveyor-tensorized".
- A fixed eps and tolerance: conveyor.ot.empirical_sinkhorn_divergence (implicit
  differentiation; its default forms the N x M cost matrix where
  conveyor.ot._points_dense.auto_forms says, and the other path is shown beside:
  "conveyor-lazy", the point-cloud solver, or "conveyor-dense") against POT's on torch tensors (the cost
  matrix formed, the iterations recorded and differentiated by autograd, where
  they fit) and ott-jax's sinkhorn_divergence under jax.value_and_grad (its
  implicit differentiation; dense geometry where it fits, else batch_size 1024).
  ott-jax's divergence is its own: the entropic cost (<P, C> plus eps times the
  plan's KL), where POT's and Conveyor's is <P, C>; its values differ by that.

Clouds uniform in the unit cube scaled by sqrt(3 / d) (the same mean squared
distance, 0.5, at every d). Each cell: the median over --rounds of one call
(forward, then x's gradient), after a warm-up call (GeomLoss builds its KeOps
kernels there, JAX compiles); the rounds alternate the implementations.
Conveyor's forward and backward are also shown apart. Values are checked against
each other (largest relative difference printed). One thread everywhere:
threads=1, torch.set_num_threads(1), OMP_NUM_THREADS=1, XLA single-threaded;
run it under `taskset -c 0` (scripts/bench divergence).

Under mpiexec with R ranks (scripts/bench divergence-ranks: 2 ranks, Open MPI's
`--bind-to none`, so that rank 0's baselines may use both cores): Conveyor's
calls run on every rank, each holding its share of both clouds (comm =
COMM_WORLD, one thread per rank), and the baselines on rank 0 alone with R
threads (torch's, KeOps's OpenMP, XLA's) while the other ranks sleep; the same
cores either way. Values and gathered gradients are compared as above.

usage: divergence_value_and_grad.py [--sizes 1000,10000] [--dims 3,64] [--dtypes float64,float32]
                                    [--rounds 3] [--blur 0.05] [--scaling 0.5] [--reg 0.05] [--tol 1e-6]
                                    [--tol32 1e-4] [--only NAMES] [--tables samples,fixed]
                                    [--warmup-size N]
"""
import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import ctypes  # noqa: E402
import ctypes.util  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from mpi4py import MPI  # noqa: E402

import conveyor  # noqa: E402
import conveyor.ot  # noqa: E402

COMM = MPI.COMM_WORLD
RANK, RANKS = COMM.Get_rank(), COMM.Get_size()
# The baselines' threads: as many as Conveyor's ranks, on the same cores (JAX reads this at its import).
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" if RANKS == 1
                      else f"--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={RANKS}")
_GOMP = ctypes.util.find_library("gomp")

# Iterations at most, for every implementation of the fixed-eps table.
MAX_ITER = 5000
# Dense baselines run where their N x M arrays (a few of them) fit in this many bytes.
DENSE_LIMIT = 8 * 2 ** 30


def clouds(n, d, dtype, seed=0):
    rng = np.random.default_rng(seed)
    scale = np.sqrt(3.0 / d)
    return (rng.random((n, d)) * scale).astype(dtype), (rng.random((n, d)) * scale).astype(dtype)


def timed(function):
    t0 = time.perf_counter()
    out = function()
    return time.perf_counter() - t0, out


def imported(name):
    try:
        return __import__(name)
    except ImportError:
        return None


# --- each implementation: run(X, Y) -> (forward s, backward s, value, x's gradient) ---
def torch_call(loss_of, shared=False):
    """run(X, Y) for a loss of torch tensors; shared: Conveyor's, on every rank
    with its share of the points (the gradient gathered)."""
    def run(X, Y):
        if shared:
            X, Y = share(X), share(Y)
        x, y = torch.tensor(X, requires_grad=True), torch.tensor(Y)
        t_fwd, value = timed(lambda: loss_of(x, y))
        t_bwd, _ = timed(value.backward)
        grad = x.grad.numpy().copy()
        return t_fwd, t_bwd, float(value), np.concatenate(COMM.allgather(grad)) if shared else grad
    return run


def share(A):
    """This rank's rows of A (every rank holds all of A: the same seed)."""
    lo, hi = (len(A) * RANK) // RANKS, (len(A) * (RANK + 1)) // RANKS
    return np.ascontiguousarray(A[lo:hi])


def baseline_threads(k):
    """k threads for what the baselines call: torch, OpenMP (KeOps), BLAS through torch."""
    torch.set_num_threads(k)
    if _GOMP:
        ctypes.CDLL(_GOMP).omp_set_num_threads(k)


def sleeping_barrier():
    """The ranks that wait while rank 0 runs a baseline, without spinning on a core it uses."""
    request = COMM.Ibarrier()
    while not request.Test():
        time.sleep(1e-3)


def samples_loss(args, backend=None, ours="auto"):
    geomloss = imported("geomloss")
    if backend is None:  # (OMP_NUM_THREADS=1)
        loss = conveyor.ot.SamplesLoss("sinkhorn", p=2, blur=args.blur, scaling=args.scaling, backend=ours,
                                       comm=COMM if RANKS > 1 else None)
        return torch_call(loss, shared=True)
    loss = geomloss.SamplesLoss("sinkhorn", p=2, blur=args.blur, scaling=args.scaling, backend=backend)
    return torch_call(loss)


def conveyor_divergence(args, dense="auto"):
    return torch_call(lambda x, y: conveyor.ot.empirical_sinkhorn_divergence(
        x, y, args.reg, stopThr=args.tol, numIterMax=MAX_ITER, threads=1, dense=dense,
        comm=COMM if RANKS > 1 else None), shared=True)


def conveyor_forms_arrays(n, d, dtype):
    """Whether SamplesLoss's default (backend="auto") forms its cost arrays here
    (its rule, collective: each rank's share of both clouds, as the calls pass them)."""
    from conveyor.ot._samples_loss_formed import use_formed
    mine = np.empty((1, len(share(np.empty(n))), d), dtype)
    return use_formed("auto", 2, True, mine, mine, COMM)


def conveyor_forms_matrix(n, d, dtype):
    """Whether conveyor.ot's default (dense="auto") forms the cost matrix here (its
    rule, on this machine's available memory shared by the ranks)."""
    from conveyor.ot import _points_dense as dense
    memory = dense.available_memory()
    return dense.auto_forms(n * -(-n // RANKS), d, np.dtype(dtype).itemsize, memory and memory // RANKS)


def pot_divergence(args):
    import ot
    return torch_call(lambda x, y: ot.bregman.empirical_sinkhorn_divergence(
        x, y, args.reg, stopThr=args.tol, numIterMax=MAX_ITER))


def ott_divergence(args, n, dtype):
    import jax
    jax.config.update("jax_enable_x64", dtype == np.float64)
    import jax.numpy as jnp
    from ott.geometry import pointcloud
    from ott.tools import sinkhorn_divergence

    batch = None if n * n * np.dtype(dtype).itemsize * 4 <= DENSE_LIMIT else 1024

    def loss(x, y):
        out = sinkhorn_divergence.sinkhorn_divergence(
            pointcloud.PointCloud, x, y, epsilon=args.reg, batch_size=batch,
            sinkhorn_kwargs={"threshold": args.tol, "max_iterations": MAX_ITER})
        return out.divergence

    value_and_grad = jax.jit(jax.value_and_grad(loss))

    def run(X, Y):
        x, y = jnp.asarray(X), jnp.asarray(Y)
        t, (value, grad) = timed(lambda: jax.block_until_ready(value_and_grad(x, y)))
        return t, 0.0, float(value), np.asarray(grad)
    return run


def fits_dense(n, dtype, copies=4):
    return n * n * np.dtype(dtype).itemsize * copies <= DENSE_LIMIT


def implementations(args, n, d, dtype):
    """(table, name) -> run, for the installed baselines that fit."""
    out = {("GeomLoss's loss", "conveyor"): samples_loss(args)}
    if conveyor_forms_arrays(n, d, dtype):
        out[("GeomLoss's loss", "conveyor-online")] = samples_loss(args, ours="online")
    elif fits_dense(n, dtype):
        out[("GeomLoss's loss", "conveyor-tensorized")] = samples_loss(args, ours="tensorized")
    if imported("geomloss") is not None:
        if fits_dense(n, dtype):
            out[("GeomLoss's loss", "geomloss-tensorized")] = samples_loss(args, "tensorized")
        if imported("pykeops") is not None:
            out[("GeomLoss's loss", "geomloss-online")] = samples_loss(args, "online")
    out[("fixed eps, tol", "conveyor")] = conveyor_divergence(args)
    if conveyor_forms_matrix(n, d, dtype):
        out[("fixed eps, tol", "conveyor-lazy")] = conveyor_divergence(args, dense=False)
    elif fits_dense(n, dtype):
        out[("fixed eps, tol", "conveyor-dense")] = conveyor_divergence(args, dense=True)
    pot = imported("ot")  # (0.8's divergence is not differentiable on tensors)
    if pot is not None and tuple(int(v) for v in pot.__version__.split(".")[:2]) >= (0, 9) and \
            fits_dense(n, dtype, copies=6):
        out[("fixed eps, tol", "pot-torch")] = pot_divergence(args)
    if imported("ott") is not None:
        out[("fixed eps, tol", "ott-jax")] = ott_divergence(args, n, dtype)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,10000")
    p.add_argument("--dims", default="3,64")
    p.add_argument("--dtypes", default="float64,float32")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--blur", type=float, default=0.05)
    p.add_argument("--scaling", type=float, default=0.5)
    p.add_argument("--reg", type=float, default=0.05)
    p.add_argument("--tol", type=float, default=1e-6, help="float64's tolerance")
    p.add_argument("--tol32", type=float, default=1e-4, help="float32's (1e-6 is below its rounding)")
    p.add_argument("--only", default="", help="comma-separated implementation names to run (default: all)")
    p.add_argument("--tables", default="samples,fixed",
                   help="which tables: samples (GeomLoss's loss), fixed (fixed eps, tol)")
    p.add_argument("--warmup-size", type=int, default=0,
                   help="the warm-up call's n (default: the cell's; a smaller one still builds KeOps's "
                        "kernels and compiles JAX's, where a warm-up at n would take as long as the round)")
    args = p.parse_args()
    torch.set_num_threads(1)
    only = [s for s in args.only.split(",") if s]
    say = print if RANK == 0 else (lambda *a, **k: None)
    who = "one thread" if RANKS == 1 else f"Conveyor on {RANKS} ranks of one thread, the baselines on {RANKS} threads"
    say(f"# {platform.machine()}, Conveyor's CPU target {conveyor.simd_target()}; {who}; "
        f"GeomLoss's loss: blur {args.blur}, scaling {args.scaling}, p = 2; fixed: eps {args.reg}, "
        f"tol {args.tol} (float32: {args.tol32}), at most {MAX_ITER} iterations; median of {args.rounds} "
        "rounds (s per value + gradient)", flush=True)
    say("| table | n = m | d | dtype | implementation | forward | backward | total | ÷ Conveyor | value rel. diff. "
        "| gradient rel. diff. |")
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        for d in (int(s) for s in args.dims.split(",")):
            for dtype in (np.dtype(s).type for s in args.dtypes.split(",")):
                X, Y = clouds(n, d, dtype)
                cell = argparse.Namespace(**dict(vars(args), tol=args.tol if dtype == np.float64 else args.tol32))
                tables = {"samples": "GeomLoss's loss", "fixed": "fixed eps, tol"}
                wanted = {tables[t] for t in args.tables.split(",")}
                runs = {k: v for k, v in implementations(cell, n, d, dtype).items()
                        if k[0] in wanted and (not only or k[1] in only or k[1] == "conveyor")}
                warm = clouds(args.warmup_size, d, dtype) if args.warmup_size else (X, Y)
                times = {k: [] for k in runs}
                results = {}
                for r in range(-1, args.rounds):  # round -1: the warm-up (kernels built, JAX compiled)
                    for k in (list(runs) if r % 2 == 0 else list(reversed(list(runs)))):
                        out = one_call(runs[k], k[1], *((X, Y) if r >= 0 else warm))
                        if r >= 0 and out is not None:
                            times[k].append(out[:2])
                        results[k] = out
                if RANK != 0:
                    continue
                for k in runs:
                    fwd = statistics.median(t[0] for t in times[k])
                    bwd = statistics.median(t[1] for t in times[k])
                    total = statistics.median(t[0] + t[1] for t in times[k])
                    mine = (k[0], "conveyor")
                    base = statistics.median(t[0] + t[1] for t in times[mine])
                    value, grad = results[k][2], results[k][3]
                    ref_value, ref_grad = results[mine][2], results[mine][3]
                    dv = abs(value - ref_value) / max(abs(ref_value), 1e-30)
                    dg = float(np.abs(grad - ref_grad).max() / max(np.abs(ref_grad).max(), 1e-30))
                    split = (f"{fwd:.3g} | {bwd:.3g}" if k[1] != "ott-jax" else "(one call) | (one call)")
                    say(f"| {k[0]} | {n} | {d} | {np.dtype(dtype).name} | {k[1]} | {split} | {total:.3g} | "
                        f"{total / base:.2f} | {dv:.1e} | {dg:.1e} |", flush=True)


def one_call(run, name, X, Y):
    """One timed call: Conveyor's on every rank (its results on each), a baseline on
    rank 0 with RANKS threads (None on the others)."""
    if name.startswith("conveyor"):
        COMM.Barrier()
        return run(X, Y)
    if RANKS == 1:
        return run(X, Y)
    out = None
    if RANK == 0:
        baseline_threads(RANKS)
        try:
            out = run(X, Y)
        finally:
            baseline_threads(1)
    sleeping_barrier()
    return out


if __name__ == "__main__":
    main()
