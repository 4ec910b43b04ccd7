# SPDX-License-Identifier: BSD-3-Clause
"""An unmodified mpi4py-fft program: PFFT forward + backward of an N^3 array, the
way its users write it, for bench/preload_compare.py (with and without
libconveyor_mpi preloaded; scripts/bench pfft).

    mpi4py_fft_pfft.py --n N --dtype c128|f64 --grid slab|pencil --part total|transfer [--samples S]

total:    one forward + backward transform (FFTs and transfers: what the user
          times);
transfer: the same transform's global redistributions alone (each Transfer's
          forward then backward on the arrays the transform uses: one
          MPI_Alltoallw with subarray datatypes each), to give the transfer's
          share of the total with and without the library.
A sample is a barrier and K repetitions (K from rank 0, so a sample lasts
~0.2 s or one repetition), timed as the slowest rank's. Before timing, the
round trip u -> forward -> backward is checked against u (wrong = 1 if not).
Rank 0 prints "N,microseconds,wrong" per sample.
"""
import argparse
import time

import numpy as np
from mpi4py import MPI
from mpi4py_fft import PFFT


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--dtype", choices=["c128", "f64"], default="c128")
    ap.add_argument("--grid", choices=["slab", "pencil"], default="slab")
    ap.add_argument("--part", choices=["total", "transfer"], default="total")
    ap.add_argument("--samples", type=int, default=5)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    dtype = np.complex128 if a.dtype == "c128" else np.float64
    fft = PFFT(comm, (a.n, a.n, a.n), axes=(0, 1, 2), dtype=dtype, slab=a.grid == "slab")
    u = np.random.default_rng(comm.Get_rank()).random(fft.forward.input_array.shape).astype(dtype)
    back = fft.backward(fft.forward(u).copy()).copy()
    wrong = int(comm.allreduce(int(not np.allclose(back, u, atol=1e-9)), MPI.MAX))

    if a.part == "total":
        def work():
            fft.forward(u)
            fft.backward()
    else:
        pairs = [(t, fft.xfftn[i].forward.output_array, fft.xfftn[i + 1].forward.input_array)
                 for i, t in enumerate(fft.transfer)]

        def work():
            for t, x, y in pairs:
                t.forward(x, y)
            for t, x, y in reversed(pairs):
                t.backward(y, x)

    def timed(k):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(k):
            work()
        return comm.allreduce(time.perf_counter() - t0, MPI.MAX)

    one = timed(1)  # also the warm-up
    k = comm.bcast(max(1, int(0.2 / max(one, 1e-9))) if comm.Get_rank() == 0 else None, 0)
    for _ in range(a.samples):
        t = timed(k)
        if comm.Get_rank() == 0:
            print(f"{a.n},{t / k * 1e6:.1f},{wrong}", flush=True)
    fft.destroy()


if __name__ == "__main__":
    main()
