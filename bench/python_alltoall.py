# SPDX-License-Identifier: BSD-3-Clause
"""`python3 bench/python_alltoall.py` under mpiexec: conveyor.Alltoallw against
mpi4py's comm.Alltoallw (the MPI library's own), same arguments, same run, on
mpi4py-fft's slab transfer (a local (N/P, N, N) complex128 array sent as P
subarrays (N/P, N/P, N), received as the N/P-row slabs of (N, N/P, N)), N = 2^k
and 3*2^k; and conveyor.Alltoall against comm.Alltoall on contiguous float64 parts.

Per size, rounds of K back-to-back calls of each implementation, alternating
inside every round (the ranks start each round together; a round's time is the
slowest rank's); the table shows the median round per call over --rounds, and
beside the slab the one-copy bound: np.copyto of the bytes each rank receives,
on every rank at once. Results are checked against mpi4py's. Prints a markdown
table on rank 0.
"""
import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

import conveyor

COMM = MPI.COMM_WORLD
P, RANK = COMM.Get_size(), COMM.Get_rank()


def per_call(fn, k):
    COMM.Barrier()
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    return COMM.allreduce((time.perf_counter() - t0) / k, op=MPI.MAX)


def measure(impls, rounds):
    one = max(per_call(f, 1) for f in impls.values())
    k = COMM.bcast(max(1, int(0.05 / max(one, 1e-9))), 0)
    times = {name: [] for name in impls}
    for r in range(rounds):
        names = list(impls) if r % 2 == 0 else list(impls)[::-1]
        for name in names:
            times[name].append(per_call(impls[name], k))
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


def slab(n, rounds):
    m = n // P
    st, rt = [], []
    for q in range(P):
        st.append(MPI.C_DOUBLE_COMPLEX.Create_subarray([m, n, n], [m, m, n], [0, q * m, 0]).Commit())
        rt.append(MPI.C_DOUBLE_COMPLEX.Create_subarray([n, m, n], [m, m, n], [q * m, 0, 0]).Commit())
    a = (np.arange(m * n * n) + RANK * 1e7).astype(np.complex128).reshape(m, n, n)
    b1, b2, copy = (np.zeros((n, m, n), np.complex128) for _ in range(3))
    ones, zeros = [1] * P, [0] * P
    impls = {
        "mpi4py": lambda: COMM.Alltoallw([a, ones, zeros, st], [b1, ones, zeros, rt]),
        "conveyor": lambda: conveyor.Alltoallw([a, ones, zeros, st], [b2, ones, zeros, rt], COMM),
        "one copy": lambda: np.copyto(copy, a.reshape(copy.shape)),
    }
    t = measure(impls, rounds)
    ok = np.array_equal(b1, b2)
    for x in st + rt:
        x.Free()
    return t, ok, b1.nbytes


def contiguous(per_peer, rounds):
    n = per_peer // 8
    a = np.arange(n * P, dtype=np.float64) + RANK
    b1, b2 = np.zeros_like(a), np.zeros_like(a)
    impls = {"mpi4py": lambda: COMM.Alltoall(a, b1), "conveyor": lambda: conveyor.Alltoall(a, b2, COMM)}
    t = measure(impls, rounds)
    return t, np.array_equal(b1, b2), per_peer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--max-n", type=int, default=256)
    args = ap.parse_args()
    lines = [f"#### conveyor.Alltoallw vs mpi4py's comm.Alltoallw, slab transfer complex128, {P} ranks: "
             "median µs per call; x = mpi4py ÷ conveyor", "",
             "| N³ | bytes per rank | mpi4py | conveyor | x | one copy (np.copyto) | conveyor ÷ one copy | same result |",
             "|---:|---:|---:|---:|---:|---:|---:|:---:|"]
    ns = sorted({v for k in range(3, 10) for v in (2 ** k, 3 * 2 ** (k - 1)) if v % P == 0 and 8 <= v <= args.max_n})
    for n in ns:
        t, ok, nbytes = slab(n, args.rounds)
        lines.append(f"| {n}³ | {nbytes} | {t['mpi4py']:.1f} | {t['conveyor']:.1f} | {t['mpi4py'] / t['conveyor']:.2f} | "
                     f"{t['one copy']:.1f} | {t['conveyor'] / t['one copy']:.2f} | {'yes' if ok else 'NO'} |")
    lines += ["", f"#### conveyor.Alltoall vs mpi4py's comm.Alltoall, contiguous float64, {P} ranks: median µs per call", "",
              "| bytes per peer | mpi4py | conveyor | x | same result |", "|---:|---:|---:|---:|:---:|"]
    for b in [8 * 2 ** k for k in range(0, 18, 2)]:
        t, ok, _ = contiguous(b, args.rounds)
        lines.append(f"| {b} | {t['mpi4py']:.1f} | {t['conveyor']:.1f} | {t['mpi4py'] / t['conveyor']:.2f} | "
                     f"{'yes' if ok else 'NO'} |")
    if RANK == 0:
        print("\n".join(lines))


if __name__ == "__main__":
    main()
