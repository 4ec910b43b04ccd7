# SPDX-License-Identifier: BSD-3-Clause
"""`python3 bench/python_overhead.py` under mpiexec: what the Python layer adds to
one collective call, measured against the same C++ call in the same run.

Per size and implementation, rounds of --calls back-to-back calls (the ranks
start each round together; a round's time is the slowest rank's); the
implementations alternate inside every round, and the table shows the median
round over --rounds, per call:
  C++                 conveyor::allreduce called in a C++ loop on the same buffers
                      (the extension's _time_cpp_allreduce: no Python per call)
  C++ x1 per Python call  the same function asked for one call at a time from a
                      Python loop: a minimal nanobind binding of the call (its
                      arrays imported as nb::ndarray), and the ranks leaving and
                      re-entering C++ between calls
  conveyor.Allreduce  the mpi4py-style call (recvbuf given)
  conveyor.allreduce  the NumPy-style call with out= (converts and checks more)
  mpi4py              comm.Allreduce (the MPI library's allreduce through mpi4py)
  torch tensors       conveyor.Allreduce on torch CPU tensors of the same size
                      (read by the extension itself; where torch is installed)
overhead = conveyor.Allreduce - C++ (the issue's target: <= 2 us);
vs binding = conveyor.Allreduce - C++ x1 (negative: cheaper than the minimal binding).
Prints a markdown table on rank 0.
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

import conveyor
from conveyor import _conveyor
from conveyor._mpi import comm_address

COMM = MPI.COMM_WORLD
try:
    import torch
except ImportError:
    torch = None


def round_seconds(fn, calls):
    COMM.Barrier()
    t0 = time.perf_counter()
    fn(calls)
    return COMM.allreduce((time.perf_counter() - t0) / calls, op=MPI.MAX)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--calls", type=int, default=2000)
    every = sorted({8 << k for k in range(14)} | {12 << k for k in range(13)})
    p.add_argument("--sizes", default=",".join(str(x) for x in every if x <= 65536),
                   help="bytes (float64 elements x 8); default every 2^k and 3*2^k from 8 B to 64 KiB")
    p.add_argument("--csv", help="also write the medians as CSV rows (bytes, impl, us)")
    args = p.parse_args()
    address = comm_address(COMM)
    rows = []
    for nbytes in (int(s) for s in args.sizes.split(",")):
        x = np.ones(nbytes // 8)
        y = np.empty_like(x)

        def cpp(k):
            _conveyor._time_cpp_allreduce(x, y, "sum", address, k)

        def cpp_one_at_a_time(k):
            for _ in range(k):
                _conveyor._time_cpp_allreduce(x, y, "sum", address, 1)

        def mpi_style(k):
            for _ in range(k):
                conveyor.Allreduce(x, y, MPI.SUM, COMM)

        def numpy_style(k):
            for _ in range(k):
                conveyor.allreduce(x, "sum", COMM, out=y)

        def mpi4py(k):
            for _ in range(k):
                COMM.Allreduce(x, y, MPI.SUM)

        impls = {"C++": cpp, "C++ x1": cpp_one_at_a_time, "conveyor.Allreduce": mpi_style, "conveyor.allreduce": numpy_style, "mpi4py": mpi4py}
        if torch is not None:
            tx, ty = torch.ones(nbytes // 8, dtype=torch.float64), torch.empty(nbytes // 8, dtype=torch.float64)

            def tensors(k):
                for _ in range(k):
                    conveyor.Allreduce(tx, ty, MPI.SUM, COMM)
            impls["torch tensors"] = tensors
        for fn in impls.values():  # warm-up: auto settles its choice for this size
            fn(args.calls)
        samples = {name: [] for name in impls}
        for r in range(args.rounds):
            order = list(impls) if r % 2 == 0 else list(reversed(impls))
            for name in order:
                samples[name].append(round_seconds(impls[name], args.calls))
        med = {name: float(np.median(v)) * 1e6 for name, v in samples.items()}
        rows.append((nbytes, med))
    if COMM.Get_rank() == 0:
        print(f"Per-call time from Python, {COMM.Get_size()} rank(s), float64 sum; median of {args.rounds} rounds "
              f"of {args.calls} calls, us per call\n")
        print("| bytes | C++ | C++ x1 per Python call | conveyor.Allreduce | overhead | vs binding "
              "| conveyor.allreduce(out=) | mpi4py Allreduce | conveyor.Allreduce, torch tensors |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for nbytes, m in rows:
            tensors = f"{m['torch tensors']:.2f}" if "torch tensors" in m else "—"
            print(f"| {nbytes} | {m['C++']:.2f} | {m['C++ x1']:.2f} | {m['conveyor.Allreduce']:.2f} | "
                  f"**{m['conveyor.Allreduce'] - m['C++']:.2f}** | {m['conveyor.Allreduce'] - m['C++ x1']:.2f} | "
                  f"{m['conveyor.allreduce']:.2f} | {m['mpi4py']:.2f} | {tensors} |")
        if args.csv:
            with open(args.csv, "w") as f:
                f.write("bytes,impl,us\n")
                for nbytes, m in rows:
                    f.writelines(f"{nbytes},{name},{us:.4f}\n" for name, us in m.items())


if __name__ == "__main__":
    main()
