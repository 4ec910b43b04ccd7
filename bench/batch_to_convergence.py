# SPDX-License-Identifier: BSD-3-Clause
"""B small entropic OT problems between point clouds, each solved to convergence
(minibatch OT): conveyor.ot.solve_sample_batch against ott-jax (Sinkhorn on
PointCloud geometries under jax.vmap, jit-compiled) and POT 0.9.6's
ot.batch.solve_sample_batch (NumPy), the same eps, tolerance and stopping rule
(the L2 norm of each problem's row-marginal error), value and, with --grad, the
value and its gradient in X (conveyor: torch, envelope; ott: jax.value_and_grad,
implicit differentiation, its default; POT: torch, envelope, its default).

One process per implementation and size, one thread unless --threads (OMP and
XLA's intra-op), after one warm-up call (ott: its compilation); median of
--rounds calls. The table gives each baseline's median divided by Conveyor's, and
the iterations: Conveyor's per problem (max), ott's (max over the batch, in
steps of its inner_iterations = 10), POT's (the batch's, in steps of 10).

usage: batch_to_convergence.py [--batch 256] [--sizes 64,256,1024] [--dtypes float32,float64]
       [--eps 0.05] [--tol 1e-5] [--rounds 5] [--grad]
"""
import argparse
import json
import os
import platform
import subprocess
import sys

CHILD = r"""
import json, sys, time
import numpy as np
impl, B, n, d, dtype, eps, tol, rounds, grad = sys.argv[1:10]
B, n, d, rounds, eps, tol, grad = int(B), int(n), int(d), int(rounds), float(eps), float(tol), grad == "1"
rng = np.random.default_rng(0)
X = rng.random((B, n, d)).astype(dtype)
Y = (rng.random((B, n, d)) + 0.2).astype(dtype)

def torch_value_and_grad(solve, iterations):  # (conveyor's and POT's: the values' sum backward in X)
    import torch
    Yt = torch.from_numpy(Y)
    def run():
        Xt = torch.from_numpy(X).requires_grad_(True)
        res = solve(Xt, Yt, eps, tol=tol, max_iter=100000)
        res.value.sum().backward()
        return res.value.detach().numpy(), iterations(res.log["n_iter"])
    return run

if impl == "conveyor":
    import conveyor.ot
    if grad:
        run = torch_value_and_grad(conveyor.ot.solve_sample_batch, lambda it: int(it.max()))
    else:
        def run():
            res = conveyor.ot.solve_sample_batch(X, Y, eps, tol=tol, max_iter=100000)
            return res.value, int(res.log["n_iter"].max())
elif impl == "ott":
    import jax
    jax.config.update("jax_enable_x64", dtype == "float64")
    import jax.numpy as jnp
    from ott.geometry import pointcloud
    from ott.problems.linear import linear_problem
    from ott.solvers.linear import sinkhorn
    solver = sinkhorn.Sinkhorn(threshold=tol, norm_error=2, max_iterations=100000)
    def one(x, y):
        out = solver(linear_problem.LinearProblem(pointcloud.PointCloud(x, y, epsilon=eps)))
        return out.reg_ot_cost, out.n_iters
    if grad:
        f = jax.jit(jax.vmap(jax.value_and_grad(one, has_aux=True)))
        def run():
            (value, iters), g = f(jnp.asarray(X), jnp.asarray(Y))
            g.block_until_ready()
            return np.asarray(value), int(np.asarray(iters).max())
    else:
        f = jax.jit(jax.vmap(one))
        def run():
            value, iters = f(jnp.asarray(X), jnp.asarray(Y))
            value.block_until_ready()
            return np.asarray(value), int(np.asarray(iters).max())
else:  # POT's ot.batch
    import ot.batch
    if grad:
        run = torch_value_and_grad(ot.batch.solve_sample_batch, lambda it: int(it) + 1)
    else:
        def run():
            res = ot.batch.solve_sample_batch(X, Y, eps, tol=tol, max_iter=100000, grad="detach")
            return np.asarray(res.value), int(res.log["n_iter"]) + 1
run()
times = []
for _ in range(rounds):
    t0 = time.perf_counter()
    value, iters = run()
    times.append(time.perf_counter() - t0)
print(json.dumps(dict(seconds=sorted(times)[len(times) // 2], iters=iters, mean_value=float(np.mean(value)))))
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--sizes", default="64,256,1024")
    p.add_argument("--dim", type=int, default=3)
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--eps", type=float, default=0.05)
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--impls", default="conveyor,ott,pot")
    p.add_argument("--grad", action="store_true")
    args = p.parse_args()
    threads = str(args.threads)
    env = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads,
               XLA_FLAGS=f"--xla_cpu_multi_thread_eigen={'false' if args.threads == 1 else 'true'} "
                         f"intra_op_parallelism_threads={threads}")
    env.setdefault("JAX_PLATFORMS", "cpu")
    impls = args.impls.split(",")
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    import conveyor
    what = "value and X-gradient" if args.grad else "value"
    print(f"# {args.batch} problems to convergence, {what}: d = {args.dim}, eps = {args.eps}, tol = {args.tol} "
          f"(L2 row-marginal error), {threads} thread(s); {cpu}, Conveyor's SIMD target "
          f"{conveyor.simd_target() if hasattr(conveyor, 'simd_target') else '?'}")
    print()
    print("| n = m | dtype | " + " | ".join(f"{i} (ms)" for i in impls) + " | " +
          " | ".join(f"{i} / conveyor" for i in impls[1:]) + " | iterations (" + ", ".join(impls) + ") |")
    print("|" + "---|" * (2 + len(impls) + len(impls) - 1 + 1))
    for n in [int(s) for s in args.sizes.split(",")]:
        for dtype in args.dtypes.split(","):
            got = {}
            for impl in impls:
                res = subprocess.run([sys.executable, "-c", CHILD, impl, str(args.batch), str(n), str(args.dim), dtype,
                                      str(args.eps), str(args.tol), str(args.rounds), "1" if args.grad else "0"],
                                     env=env, capture_output=True, text=True)
                got[impl] = json.loads(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 else None
                if got[impl] is None:  # (a negative code: killed by that signal, e.g. 9 by the kernel out of memory)
                    why = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit code {res.returncode}"
                    print(f"<!-- {impl} failed: {why} -->")
            base = got["conveyor"]["seconds"] if got.get("conveyor") else None
            cells = [f"{got[i]['seconds'] * 1e3:.1f}" if got[i] else "-" for i in impls]
            ratios = [f"{got[i]['seconds'] / base:.2f}" if got[i] and base else "-" for i in impls[1:]]
            iters = ", ".join(str(got[i]["iters"]) if got[i] else "-" for i in impls)
            print(f"| {n} | {dtype} | " + " | ".join(cells) + " | " + " | ".join(ratios) + f" | {iters} |",
                  flush=True)


if __name__ == "__main__":
    main()
