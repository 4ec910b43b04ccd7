#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The unmodified all-to-all loop with libconveyor_mpi preloaded, each sample
timed twice in the same launch: once through MPI_ (served by Conveyor) and once
through PMPI_ (the MPI library's own call), in alternating order
(bench/unmodified_alltoall.c --beside-library 1).

    alltoall_beside.py --config NAME --library LIB [--rounds R] --csv OUT --markdown OUT
                       [--stderr FILE] -- LAUNCHER... PROGRAM ARGS...

--stderr: each launch's standard error is appended there (e.g. the decisions
CONVEYOR_ALLTOALL_MEASURE=trace prints).

Why: launches on a shared VM differ from each other by more than the gaps
measured (a stock launch beside another stock launch: 0.72-1.35x per size on a
2-vCPU VM), whatever each launch's buffers, pages and placement drew; two loops
of one launch share all of that. Each round also runs one launch without the
library, where MPI_ and PMPI_ are the same call: the method's own noise (A/A).
Per size: the medians of each side's samples over all launches, and the median
of the samples' ratios (library / served: > 1, the preload is faster).
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from preload_compare import human, machine_line  # noqa: E402


def run(cmd, env, stderr_file=None, label=""):
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if stderr_file:
        with open(stderr_file, "a") as f:
            f.write(f"--- {label}\n{done.stderr}")
    if done.returncode != 0:
        sys.exit(f"alltoall_beside: {' '.join(cmd)} failed (exit {done.returncode})\n{done.stderr[-2000:]}")
    served, library = [], []
    for line in done.stdout.splitlines():
        f = line.split(",")
        if len(f) == 3 and f[0].isdigit():
            served.append((int(f[0]), float(f[1]), int(f[2])))
        elif len(f) == 3 and f[0] == "library":
            library.append((int(f[1]), float(f[2])))
    if not served or len(served) != len(library):
        sys.exit(f"alltoall_beside: {' '.join(cmd)} printed no paired samples")
    return [(b, us, lib_us, wrong) for (b, us, wrong), (lb, lib_us) in zip(served, library) if b == lb]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--library", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--markdown", required=True)
    ap.add_argument("--stderr")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    rows = []
    for rnd in range(a.rounds):
        for variant in (("with", "without") if rnd % 2 == 0 else ("without", "with")):
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            if variant == "with":
                env["LD_PRELOAD"] = a.library
            for b, us, lib_us, wrong in run(cmd, env, a.stderr, f"{a.config}: round {rnd} {variant}"):
                rows.append([a.config, variant, rnd, b, us, lib_us, wrong])
            print(f"  {a.config}: round {rnd} {variant}", file=sys.stderr)
    with open(a.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "variant", "round", "bytes", "us_mpi", "us_pmpi", "wrong"])
        w.writerows(rows)

    by = defaultdict(lambda: defaultdict(list))
    for _, variant, _, b, us, lib_us, wrong in rows:
        by[b][variant].append((us, lib_us, wrong))
    out = [machine_line(), "",
           f"#### {a.config}: µs per call, median of every sample of {a.rounds} launches; each sample one loop through "
           "MPI_ (served) and one through PMPI_ (the library's own) in the same launch; x = library ÷ served "
           "(> 1: faster with the preload), the median of the samples' ratios", "",
           "| bytes per rank | library (PMPI_) | served (MPI_) | x | x, lowest launch | A/A (no preload) |",
           "|---:|---:|---:|---:|---:|---:|"]
    ratios_all, under, wrong_total = [], 0, 0
    for b in sorted(by):
        w = by[b]["with"]
        ratio = statistics.median(lib / us for us, lib, _ in w)
        per_launch = defaultdict(list)
        for (_, _, rnd, bb, us, lib, _) in [r for r in rows if r[1] == "with" and r[3] == b]:
            per_launch[rnd].append(lib / us)
        lowest = min(statistics.median(v) for v in per_launch.values())
        aa = statistics.median(lib / us for us, lib, _ in by[b]["without"]) if by[b]["without"] else float("nan")
        wrong_total += sum(x[2] for x in w)
        ratios_all.append(ratio)
        under += ratio < 0.97
        out.append(f"| {human(b)} | {statistics.median(x[1] for x in w):.1f} | {statistics.median(x[0] for x in w):.1f} | "
                   f"{ratio:.2f} | {lowest:.2f} | {aa:.2f} |")
    geo = statistics.geometric_mean(ratios_all)
    out += ["", f"Geometric mean {geo:.2f}×; lowest {min(ratios_all):.2f}×; sizes under 0.97×: {under} of "
                f"{len(ratios_all)}; wrong elements: {wrong_total}.", ""]
    mode = "a" if os.path.exists(a.markdown) else "w"
    with open(a.markdown, mode) as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
