#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns `scripts/bench simd-targets` CSVs into markdown: AVX2 beside AVX-512 (AVX3)
on one machine. Ratios are taken within one run (reduce: one process, targets in
the same rounds) or within one round (the others: AVX3 and AVX2 processes back to
back), never across rounds.

usage: report_simd_targets.py <results-dir>
"""
import csv
import glob
import os
import re
import statistics
import sys
from collections import defaultdict

out = sys.argv[1]


def rows(path):
    return list(csv.DictReader(open(path)))


def band(size):
    """Size bands of the reduce table, by where the buffers live."""
    n, unit = size.split()
    b = float(n) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20}[unit]
    if b <= 32 << 10:
        return "1–32 KiB (L1/L2)"
    if b <= 1 << 20:
        return "48 KiB–1 MiB (L2)"
    if b < 16 << 20:
        return "1.5–12 MiB (L3)"
    return "16–128 MiB (memory)"


def reduce_table():
    path = os.path.join(out, "simd-reduce-mpich.csv")
    if not os.path.exists(path):
        return
    table = defaultdict(dict)
    for r in rows(path):
        table[(r["case"], r["size"])][r["implementation"]] = float(r["median_us"])
    bands = defaultdict(lambda: defaultdict(list))
    for (case, size), t in table.items():
        mpi = next(v for k, v in t.items() if k.startswith("MPI_Reduce_local"))
        plain = next(v for k, v in t.items() if k.startswith("plain loop"))
        b = bands[(case, band(size))]
        b["avx2_vs_avx3"].append(t["conveyor AVX3"] / t["conveyor AVX2"])
        b["avx2_vs_mpi"].append(mpi / t["conveyor AVX2"])
        b["avx3_vs_mpi"].append(mpi / t["conveyor AVX3"])
        b["avx2_vs_loop"].append(plain / t["conveyor AVX2"])
    print("### Reduce kernels: AVX2 beside AVX-512 (`conveyor bench reduce --all-targets`, "
          "CONVEYOR_SIMD_TARGET=AVX2, MPICH build)\n")
    print("Speed ratios (baseline time / this time) over every 2^k and 3·2^k size in the band; "
          "the plain loop is compiled for AVX2 (what an AVX2 machine's `-O3 -march=native` gives).\n")
    print("| case | sizes | AVX2 time ÷ AVX-512 time | AVX2 vs MPICH `MPI_Reduce_local` | "
          "AVX-512 vs MPICH | AVX2 vs the AVX2 plain loop |")
    print("|---|---|---|---|---|---|")

    def rng(v):
        return f"{min(v):.2f}–{max(v):.2f}×" if len(v) > 1 else f"{v[0]:.2f}×"

    for (case, b), v in bands.items():
        inv = [1 / x for x in v["avx2_vs_avx3"]]
        print(f"| {case} | {b} | {rng(inv)} | {rng(v['avx2_vs_mpi'])} | {rng(v['avx3_vs_mpi'])} | "
              f"{rng(v['avx2_vs_loop'])} |")
    print()


def paired(prefix, key, value):
    """{key: {target: [value per round]}} from simd-<prefix>-<target>-<round>.csv."""
    got = defaultdict(lambda: defaultdict(dict))
    for path in glob.glob(os.path.join(out, f"simd-{prefix}-*-*.csv")):
        m = re.fullmatch(rf"simd-{prefix}-([A-Z0-9_]+)-([0-9]+)\.csv", os.path.basename(path))
        if not m:
            continue  # e.g. the redistribute bench's -relabel companion file
        target, rnd = m.groups()
        for r in rows(path):
            k = key(r)
            if k is not None:
                got[k][target][rnd] = value(r)
    return got


def sinkhorn_table():
    got = paired("sinkhorn", lambda r: (r["dtype"], int(r["n"]), r["impl"]), lambda r: float(r["ms_median"]))
    if not got:
        return
    print("### Sinkhorn iteration (fused, 1 thread): AVX2 beside AVX-512\n")
    print("Median ms per iteration in each round; the one-read bound is the vectorized sum of A "
          "compiled for the same target. Ratios within a round.\n")
    print("| dtype | n | AVX-512 ms | AVX2 ms | AVX2 time ÷ AVX-512 time | AVX-512 ÷ its read bound | "
          "AVX2 ÷ its read bound |")
    print("|---|---|---|---|---|---|---|")
    for (dtype, n, impl) in sorted(k for k in got if k[2] == "fused"):
        f, rb = got[(dtype, n, "fused")], got[(dtype, n, "read_bound")]
        for rnd in sorted(f["AVX3"]):
            a3, a2 = f["AVX3"][rnd], f["AVX2"][rnd]
            print(f"| {dtype} | {n} (round {rnd}) | {a3:.1f} | {a2:.1f} | {a2 / a3:.2f} | "
                  f"{a3 / rb['AVX3'][rnd]:.2f} | {a2 / rb['AVX2'][rnd]:.2f} |")
    print()


def redistribute_table():
    got = paired("redistribute", lambda r: (r["case"], r["transport"]), lambda r: float(r["ms_median"]))
    if not got:
        return
    print("### Tensor case and redistribution transports, 4 ranks (oversubscribed on 2 cores, "
          "Open MPI, yield when idle): AVX2 beside AVX-512\n")
    print("| case | transport | AVX-512 ms | AVX2 ms | AVX2 time ÷ AVX-512 time |")
    print("|---|---|---|---|---|")
    for (case, transport), v in sorted(got.items()):
        for rnd in sorted(v["AVX3"]):
            a3, a2 = v["AVX3"][rnd], v["AVX2"][rnd]
            print(f"| {case} (round {rnd}) | {transport} | {a3:.1f} | {a2:.1f} | {a2 / a3:.2f} |")
    print()


def allreduce_table():
    got = paired("allreduce", lambda r: (r["size"], r["implementation"]), lambda r: float(r["median_us"]))
    if not got:
        return
    print("### Allreduce auto vs stock, 2 ranks (Open MPI's default launch): AVX2 beside AVX-512\n")
    print("Speed ratios within one process (stock time / auto time). Times of different processes are "
          "not compared: this shared machine moves between modes from one launch to the next.\n")
    sizes = sorted({k[0] for k in got}, key=lambda s: float(s.split()[0]) * {"KiB": 1, "MiB": 1024}[s.split()[1]])
    print("| size | round | AVX-512: auto vs stock | AVX2: auto vs stock |")
    print("|---|---|---|---|")
    for size in sizes:
        auto = got[(size, "conveyor auto")]
        stock = next(v for k, v in got.items() if k[0] == size and k[1].startswith("MPI_Allreduce"))
        for rnd in sorted(auto["AVX3"]):
            print(f"| {size} | {rnd} | {stock['AVX3'][rnd] / auto['AVX3'][rnd]:.2f}× | "
                  f"{stock['AVX2'][rnd] / auto['AVX2'][rnd]:.2f}× |")
    print()


reduce_table()
sinkhorn_table()
redistribute_table()
allreduce_table()
