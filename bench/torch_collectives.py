#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""torch.distributed's collectives on CPU tensors, the conveyor backend
(conveyor.torch) beside Gloo (PyTorch's CPU backend, a group of the same ranks
in the same processes) and mpi4py on the same tensors (comm.Allreduce etc. on
their NumPy views: the MPI library's own collective, the floor a Python layer
over MPI could reach), every 2^k and 3 * 2^k bytes from 8 B to --max-bytes.
"python pg": a process group written in Python that moves nothing and returns
a completed Work, as the conveyor backend does: torch.distributed's own cost
per call, which any backend written in Python pays above its collective.

Each cell: the median of --reps calls after --warmup calls of that size (at
most 2 s of them; the engine's `auto` settles its choice there), every rank in step (a barrier
before each timed call, the time rank 0's); the implementations alternate
within each size. Gloo refuses bfloat16 in torch 1.13: its cells say so.

usage: mpiexec -n 2 python3 torch_collectives.py [--ops all_reduce,reduce_scatter,all_gather,all_to_all]
                                                  [--dtypes float32,bfloat16] [--max-bytes 67108864]
                                                  [--reps 21] [--warmup 100]
"""
import argparse
import os
import platform
import statistics
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI

import conveyor
import conveyor.torch  # noqa: F401  (registers the backend)
from conveyor.torch import _done

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


def sizes(limit):
    out, k = [], 8
    while k <= limit:
        out.append(k)
        if 3 * k // 2 <= limit and k >= 8:
            out.append(3 * k // 2)
        k *= 2
    return sorted(set(s for s in out if s >= 8))


class _Floor(getattr(torch._C._distributed_c10d, "Backend", dist.ProcessGroup)):
    """The "python pg" column: each collective returns at once, moving nothing
    (on torch 2 a Python Backend, as conveyor.torch's is there, wrapped by torch
    in its own ProcessGroup; on 1.13 a Python ProcessGroup)."""

    def getBackendName(self):  # noqa: N802 (torch's name)
        return "floor"

    def allreduce(self, tensors, opts=None):
        return _done(tensors)

    def _reduce_scatter_base(self, output, input, opts=None):  # noqa: A002 (torch's name)
        return _done([output])

    def _allgather_base(self, output, input, opts=None):  # noqa: A002
        return _done([output])

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):  # noqa: A002
        return _done([output])

    # (torch 2.15's names for the same calls)
    reduce_scatter_single = _reduce_scatter_base
    all_gather_single = _allgather_base
    all_to_all_single = alltoall_base


_FLOORS = []


def calls(op, group, n, dtype, floor):
    """(name -> zero-argument call) for one op and size: conveyor, gloo, mpi4py, python pg."""
    P = SIZE
    t = torch.ones(n, dtype=dtype)
    big = torch.ones(n * P, dtype=dtype)
    out = torch.empty(n, dtype=dtype)
    out_big = torch.empty(n * P, dtype=dtype)
    np_view = (lambda x: x.numpy()) if dtype != torch.bfloat16 else None
    table = {}
    if op == "all_reduce":
        table["conveyor"] = lambda: dist.all_reduce(t)
        table["python pg"] = lambda: dist.all_reduce(t, group=floor)
        table["gloo"] = lambda: dist.all_reduce(t, group=group)
        if np_view:
            a = np_view(t)
            table["mpi4py"] = lambda: COMM.Allreduce(MPI.IN_PLACE, a)
    elif op == "reduce_scatter":
        table["conveyor"] = lambda: dist._reduce_scatter_base(out, big)
        table["python pg"] = lambda: dist._reduce_scatter_base(out, big, group=floor)
        table["gloo"] = None  # (Gloo 1.13 has no reduce_scatter)
        if np_view:
            a, b = np_view(big), np_view(out)
            table["mpi4py"] = lambda: COMM.Reduce_scatter_block(a, b)
    elif op == "all_gather":
        table["conveyor"] = lambda: dist._all_gather_base(out_big, t)
        table["python pg"] = lambda: dist._all_gather_base(out_big, t, group=floor)
        parts = list(out_big.chunk(P))  # (Gloo 1.13 has no _all_gather_base: the list form its users call)
        table["gloo"] = lambda: dist.all_gather(parts, t, group=group)
        if np_view:
            a, b = np_view(t), np_view(out_big)
            table["mpi4py"] = lambda: COMM.Allgather(a, b)
    elif op == "all_to_all":
        table["conveyor"] = lambda: dist.all_to_all_single(out_big, big)
        table["python pg"] = lambda: dist.all_to_all_single(out_big, big, group=floor)
        table["gloo"] = lambda: dist.all_to_all_single(out_big, big, group=group)
        if np_view:
            a, b = np_view(big), np_view(out_big)
            table["mpi4py"] = lambda: COMM.Alltoall(a, b)
    if dtype == torch.bfloat16 and int(torch.__version__.split(".")[0]) < 2:
        table["gloo"] = None  # (torch 1.13's Gloo: "Invalid scalar type"; torch 2's takes it)
    return table


def timed(call, reps, warmup):
    # (warm-up: `warmup` calls, or 2 s of them at the largest sizes, in step on every rank)
    t0, k = time.perf_counter(), 0
    while k < warmup and COMM.allreduce(time.perf_counter() - t0 < 2.0, op=MPI.LAND):
        call()
        k += 1
    times = []
    for _ in range(reps):
        COMM.Barrier()
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", default="all_reduce,reduce_scatter,all_gather,all_to_all")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--reps", type=int, default=21)
    p.add_argument("--warmup", type=int, default=100)
    args = p.parse_args()
    torch.set_num_threads(1)
    where = COMM.bcast(tempfile.mkdtemp(prefix="conveyor-bench-") if RANK == 0 else None)
    dist.init_process_group("conveyor", init_method="file://" + os.path.join(where, "store"), rank=RANK,
                            world_size=SIZE)
    gloo = dist.new_group(list(range(SIZE)), backend="gloo")
    if "FLOOR" not in dist.Backend._plugins:
        dist.Backend.register_backend("floor", lambda store, rank, size, timeout: _FLOORS.append(_Floor(rank, size))
                                      or _FLOORS[-1])  # (kept alive: torch 2 may hold only its C++ half)
    floor = dist.new_group(list(range(SIZE)), backend="floor")
    say = print if RANK == 0 else (lambda *a, **k: None)
    library = MPI.Get_library_version().replace(chr(0), "").splitlines()[0].strip()  # (Open MPI's ends in a NUL)
    say(f"# {platform.machine()}, Conveyor's CPU target {conveyor.simd_target()}, torch {torch.__version__}, "
        f"{SIZE} ranks ({library}); median of {args.reps} calls after "
        f"{args.warmup} of the same size; µs per call; bytes: each rank's tensor (all_reduce), its part "
        "(reduce_scatter's output, all_gather's input), what it sends each rank (all_to_all)")
    say("| op | dtype | bytes | conveyor | gloo | mpi4py | python pg | gloo ÷ conveyor | mpi4py ÷ conveyor |")
    say("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for op in args.ops.split(","):
        for dtype in (getattr(torch, s) for s in args.dtypes.split(",")):
            itemsize = torch.empty(0, dtype=dtype).element_size()
            ratios = {"gloo": [], "mpi4py": []}
            for nbytes in sizes(args.max_bytes):
                n = max(1, nbytes // itemsize)
                table = calls(op, gloo, n, dtype, floor)
                got = {k: (timed(f, args.reps, args.warmup) if f is not None else None) for k, f in table.items()}
                base = got["conveyor"]

                def cell(k):
                    v = got.get(k)
                    return "—" if v is None else f"{v * 1e6:.1f}"

                def ratio(k):
                    v = got.get(k)
                    if v is None:
                        return "—"
                    ratios[k].append(v / base)
                    return f"{v / base:.2f}"
                say(f"| {op} | {str(dtype).replace('torch.', '')} | {n * itemsize} | {cell('conveyor')} | "
                    f"{cell('gloo')} | {cell('mpi4py')} | {cell('python pg')} | {ratio('gloo')} | {ratio('mpi4py')} |",
                    flush=True)
            for k, v in ratios.items():
                if v:
                    say(f"# {op} {str(dtype).replace('torch.', '')}: {k} ÷ conveyor geometric mean "
                        f"{float(np.exp(np.mean(np.log(v)))):.2f}, range {min(v):.2f}-{max(v):.2f}")
    dist.destroy_process_group()
    COMM.Barrier()
    if RANK == 0:
        import shutil
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
