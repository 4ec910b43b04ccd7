#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Markdown tables from `conveyor bench allreduce` / `overlap` CSV rows.

One table per run (CSV file): median time per implementation and size, and each
Conveyor row's speed-up over the stock MPI_Allreduce of the same run. Link-bound
columns for the emulated clusters: the bytes that must cross one node's link
(2(N-1)/N * n in each direction for an allreduce over N nodes) over the rate.
"""
import argparse
import csv
import glob
import os
import re
from collections import OrderedDict

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


def size_bytes(text):
    v, u = text.split()
    return float(v) * UNITS[u]


def link_bound_ms(config, nbytes):
    m = re.match(r"(\d+) nodes x (\d+) ranks, (\d+)gbit", config)
    if not m:
        return None
    nodes, rate = int(m.group(1)), float(m.group(3)) * 1e9 / 8
    return 2 * (nodes - 1) / nodes * nbytes / rate * 1e3


def table(path):
    rows = list(csv.DictReader(open(path)))
    if not rows:
        return ""
    by_size = OrderedDict()
    impls = list(OrderedDict.fromkeys(r["implementation"] for r in rows))
    for r in rows:
        by_size.setdefault(r["size"], {})[r["implementation"]] = r
    config = rows[0]["config"]
    mpi = next(i for i in impls if i.startswith("MPI_Allreduce"))
    bound = link_bound_ms(config, 1) is not None
    head = ["size"] + [f"{i} (µs)" for i in impls] + ["auto picked", "auto vs MPI"]
    if bound:
        head += ["link bound (µs)", "best Conveyor / bound"]
    out = [f"**{config}** — `{os.path.basename(path)}`", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for size, cells in by_size.items():
        line = [size] + [cells[i]["median_us"] if i in cells else "" for i in impls]
        auto = cells.get("conveyor auto")
        line += [auto["algorithm"] if auto else "", (auto["x_vs_MPI"] + "x") if auto else ""]
        if bound:
            b = link_bound_ms(config, size_bytes(size)) * 1e3
            best = min(float(c["median_us"]) for i, c in cells.items() if i.startswith("conveyor"))
            line += [f"{b:.0f}", f"{best / b:.2f}x"]
        wrong = sum(int(c["wrong"]) for c in cells.values())
        if wrong:
            line[0] += f" ({wrong} WRONG)"
        out.append("| " + " | ".join(line) + " |")
    return "\n".join(out)


def overlap_table(path):
    rows = list(csv.DictReader(open(path)))
    head = list(rows[0].keys())
    out = [f"**overlap, {rows[0]['config']}** — `{os.path.basename(path)}`", "",
           "| " + " | ".join(head[1:]) + " |", "|" + "---|" * (len(head) - 1)]
    for r in rows:
        out.append("| " + " | ".join(r[h] for h in head[1:]) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("directory")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    parts = [table(p) for p in sorted(glob.glob(os.path.join(a.directory, "allreduce-*.csv")))]
    parts += [overlap_table(p) for p in sorted(glob.glob(os.path.join(a.directory, "overlap-*.csv")))]
    text = "\n\n".join(p for p in parts if p) + "\n"
    if a.markdown:
        open(a.markdown, "w").write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
