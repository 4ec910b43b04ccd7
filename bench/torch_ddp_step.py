#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A DDP training step on CPU ranks (issue "PyTorch training on CPU clusters"):
the same model and data with its gradients averaged by Gloo (PyTorch's CPU
backend), by the conveyor backend (conveyor.torch as DDP's process group), by a
Gloo group with conveyor.torch's DDP hooks (allreduce_hook, and
bf16_allreduce_hook: half the bytes), and not at all (DDP's no_sync(): the
compute alone, the floor every variant stands on).

The model: --layers Linear(width, width) + ReLU layers and a Linear(width, 1)
head, float32, SGD; buckets of --bucket-mb (DDP's default 25 MiB); each rank its
own fixed batch of --batch rows. A step: zero_grad, forward, MSE loss, backward
(DDP's bucket allreduces run from inside it), optimizer step. Each cell: the
median over --rounds rounds of --steps timed steps (a barrier before each, the
time rank 0's), after --warmup steps (20: past the trials Conveyor's `auto`
makes on the first calls of a size); the variants alternate round by round.

Beside the steps, in the same run: the gradients' bytes; one allreduce of that
many float32 through each backend outside DDP (dist.all_reduce on a flat
tensor: the communication a step cannot avoid, in one piece); and one memcpy of
them (torch's copy_: the physical floor of moving the bytes once in memory).

usage: mpiexec -n 2 python3 torch_ddp_step.py [--width 1024] [--layers 8] [--batch 64]
                                              [--bucket-mb 25] [--steps 5] [--rounds 5] [--warmup 3]
"""
import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time

import torch
import torch.distributed as dist
from mpi4py import MPI

import conveyor
import conveyor.torch

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


def model_of(args):
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(args.width, 1))


def trainer(args, group, hook=None, sync=True):
    """A zero-argument step of a fresh DDP model (the same seed and data each time)."""
    model = model_of(args)
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group, bucket_cap_mb=args.bucket_mb)
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    data = torch.Generator().manual_seed(100 + RANK)
    x, y = torch.randn(args.batch, args.width, generator=data), torch.randn(args.batch, 1, generator=data)

    def step():
        opt.zero_grad(set_to_none=False)
        if sync:
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            loss.backward()
        else:
            with ddp.no_sync():
                loss = torch.nn.functional.mse_loss(ddp(x), y)
                loss.backward()
        opt.step()
    return step


def timed(call, reps, warmup=0):
    """The times of `reps` calls after `warmup` untimed ones, every rank in step
    (a barrier before each)."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(reps):
        COMM.Barrier()
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return times


def timed_call(call, reps=11, warmup=20):
    """The median of timed(); warmup as the steps': past the engine's trials."""
    return statistics.median(timed(call, reps, warmup))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=5)
    # (the engine's `auto` tries its candidates on the first calls of a size: 15
    # from 8 MiB, docs/algorithms.md; a bucket's allreduce is one call per step)
    p.add_argument("--warmup", type=int, default=20)
    args = p.parse_args()
    torch.set_num_threads(1)
    where = COMM.bcast(tempfile.mkdtemp(prefix="conveyor-bench-") if RANK == 0 else None)
    dist.init_process_group("conveyor", init_method="file://" + os.path.join(where, "store"), rank=RANK,
                            world_size=SIZE)
    gloo = dist.new_group(list(range(SIZE)), backend="gloo")
    variants = {
        "no averaging (no_sync)": trainer(args, gloo, sync=False),
        "Gloo": trainer(args, gloo),
        "conveyor backend": trainer(args, None),
        "Gloo + allreduce_hook": trainer(args, gloo, conveyor.torch.allreduce_hook),
        "Gloo + bf16_allreduce_hook": trainer(args, gloo, conveyor.torch.bf16_allreduce_hook),
    }
    for step in variants.values():
        for _ in range(args.warmup):
            step()
    times = {k: [] for k in variants}
    for r in range(args.rounds):
        for k in (list(variants) if r % 2 == 0 else list(reversed(list(variants)))):
            times[k] += timed(variants[k], args.steps)
    n = sum(q.numel() for q in model_of(args).parameters())
    flat, copy = torch.ones(n), torch.empty(n)
    one = {"Gloo": timed_call(lambda: dist.all_reduce(flat, group=gloo)),
           "conveyor backend": timed_call(lambda: dist.all_reduce(flat)),
           "memcpy": timed_call(lambda: copy.copy_(flat))}
    if RANK == 0:
        library = MPI.Get_library_version().replace(chr(0), "").splitlines()[0].strip()
        print(f"# {platform.machine()}, Conveyor's CPU target {conveyor.simd_target()}, torch {torch.__version__}, "
              f"{SIZE} ranks ({library}), one thread each; MLP {args.layers} x {args.width}, batch {args.batch}, "
              f"{n} float32 parameters ({4 * n / 2**20:.1f} MiB of gradients), buckets {args.bucket_mb} MiB; "
              f"median of {args.rounds} x {args.steps} steps after {args.warmup}, ms")
        print(f"# one allreduce of the {4 * n / 2**20:.1f} MiB outside DDP: Gloo {one['Gloo'] * 1e3:.3g} ms, "
              f"conveyor {one['conveyor backend'] * 1e3:.3g} ms; one memcpy of them {one['memcpy'] * 1e3:.3g} ms")
        floor = statistics.median(times["no averaging (no_sync)"])
        gloo_step = statistics.median(times["Gloo"])
        print("| variant | ms per step | over no_sync (ms) | Gloo ÷ it (step) | Gloo ÷ it (over no_sync) |")
        print("|---|---:|---:|---:|---:|")
        for k, v in times.items():
            t = statistics.median(v)
            extra = t - floor
            ratio = (gloo_step - floor) / extra if extra > 0 and k != "no averaging (no_sync)" else float("nan")
            print(f"| {k} | {t * 1e3:.3g} | {extra * 1e3:.3g} | {gloo_step / t:.2f} | {ratio:.2f} |", flush=True)
    dist.destroy_process_group()
    COMM.Barrier()
    if RANK == 0:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
