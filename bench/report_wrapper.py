#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The wrapper's own cost, from `scripts/bench wrapper`: a Markdown table.

Inputs:
  --cpu FILE       rows of tools/wrapper-cost (mpi, launch, path, through_conveyor_ns,
                   direct_ns, extra_ns, ...): CPU per call with PMPI_Allreduce stubbed;
  --latency FILES  `conveyor bench allreduce` CSVs (one per launch) with the rows
                   stock, stock+STEPS, mpi, stock-dup and stock-again at 8 B - 4 KiB.

Output: per MPI and path, the median over launches of the extra CPU per call; per
MPI, each latency row minus stock (median over sizes, then the median and range
over launches).
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict


def cpu_table(path):
    by = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            by[(r["mpi"], r["path"])].append((float(r["extra_ns"]), float(r["through_conveyor_ns"]),
                                               float(r["direct_ns"])))
    names = {"cpp": "C++ `conveyor::allreduce` (pinned to `mpi`)", "c": "C `conveyor_allreduce` (pinned to `mpi`)",
             "preload": "`MPI_Allreduce` under `libconveyor_mpi` (`CONVEYOR_ALLREDUCE_ALGORITHM=mpi`)"}
    out = ["| MPI | path | launches | through Conveyor, ns | direct, ns | added, ns (median; range) |",
           "|---|---|---:|---:|---:|---:|"]
    for (mpi, p), v in sorted(by.items(), key=lambda kv: (kv[0][0], list(names).index(kv[0][1]))):
        extra = [x[0] for x in v]
        out.append(f"| {mpi} | {names[p]} | {len(v)} | {statistics.median(x[1] for x in v):.1f} | "
                   f"{statistics.median(x[2] for x in v):.1f} | **{statistics.median(extra):.1f}** "
                   f"({min(extra):.1f}–{max(extra):.1f}) |")
    return out


def latency_table(paths):
    # per (mpi, row): list over launches of the median over sizes of (row - stock) in ns
    deltas = defaultdict(list)
    labels = {}
    for path in paths:
        with open(path) as f:
            rows = list(csv.DictReader(f))
        if not rows:
            continue
        config = rows[0]["config"]
        by_size = defaultdict(dict)
        for r in rows:
            by_size[r["size"]][r["implementation"]] = float(r["median_us"]) * 1e3
            labels[r["implementation"]] = r["algorithm"]
        stock = next(k for k in next(iter(by_size.values())) if k.startswith("MPI_Allreduce") and
                     not k.endswith(("again", "dup")) and "+" not in k)
        for impl in next(iter(by_size.values())):
            if impl == stock:
                continue
            d = [v[impl] - v[stock] for v in by_size.values() if impl in v]
            deltas[(config, impl)].append(statistics.median(d))
    out = ["| launch | row | what it runs | minus stock, ns: median over launches (range) |",
           "|---|---|---|---:|"]
    for (config, impl), v in deltas.items():
        out.append(f"| {config} | {impl} | {labels[impl]} | {statistics.median(v):+.0f} "
                   f"({min(v):+.0f} to {max(v):+.0f}) |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", required=True)
    ap.add_argument("--latency", nargs="+", required=True)
    ap.add_argument("--markdown")
    a = ap.parse_args()
    lines = ["## CPU per call, PMPI_Allreduce stubbed out (`tools/wrapper-cost`)", ""] + cpu_table(a.cpu)
    lines += ["", "## Time per call in a 2-rank exchange, 8 B – 4 KiB (`conveyor bench allreduce`)", "",
              "Per launch: the median over the 10 sizes of (row − stock) in the same rounds.", ""]
    lines += latency_table(a.latency)
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
