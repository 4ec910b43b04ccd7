#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The all-to-all family with and without libconveyor_mpi (scripts/bench alltoall).

usage: report_alltoall.py --preload CSV... --bounds CSV [--markdown OUT]

--preload: bench/preload_compare.py's rows of bench/unmodified_alltoall.c (the
contiguous loops, and the slab transfer, one size per launch). --bounds: rows
"config,bytes,name,us" of the slab transfer's copy bounds, measured in the same
run (one memcpy of the bytes each rank receives, on every rank at once; plus one
of the bytes that cross ranks). Prints preload_compare's tables, and for the slab
configurations each size's fastest times beside its bounds.
"""
import argparse
import csv
from collections import defaultdict

from preload_compare import geometric_mean, human, machine_line, publish, summarize


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preload", nargs="+", required=True)
    p.add_argument("--bounds", required=True)
    p.add_argument("--markdown")
    args = p.parse_args()
    configs, table, wrong = summarize(args.preload)
    bounds = defaultdict(dict)  # (config, bytes) -> name -> us (fastest launch)
    with open(args.bounds) as f:
        for row in csv.DictReader(f):
            key = (row["config"], int(row["bytes"]))
            us = float(row["us"])
            bounds[key][row["name"]] = min(us, bounds[key].get(row["name"], us))
    lines = [machine_line(), ""]
    for config in configs:
        rows = table[config]
        has_bounds = any((config, r[0]) in bounds for r in rows)
        lines.append(f"#### {config}: µs per call, fastest of {rows[0][5]} launches each; "
                     "x = without ÷ with (> 1: faster with the preload)")
        lines.append("")
        head = "| bytes per rank | without | with libconveyor_mpi | x | x, median launches | A/A |"
        rule = "|---:|---:|---:|---:|---:|---:|"
        if has_bounds:
            head += " one-copy bound | with ÷ one copy | without ÷ one copy | two-copy bound |"
            rule += "---:|---:|---:|---:|"
        lines += [head, rule]
        for b, without, with_, r, r_mid, _, aa in rows:
            line = f"| {human(b)} | {without:.1f} | {with_:.1f} | {r:.2f} | {r_mid:.2f} | {aa:.2f} |"
            if has_bounds:
                bd = bounds.get((config, b), {})
                one = next((v for k, v in bd.items() if k.startswith("one memcpy")), float("nan"))
                two = next((v for k, v in bd.items() if k.startswith("+")), float("nan"))
                line += f" {one:.1f} | {with_ / one:.2f} | {without / one:.2f} | {two:.1f} |"
            lines.append(line)
        ratios = [r[3] for r in rows]
        geo = geometric_mean(ratios)
        lines.append("")
        lines.append(f"Geometric mean {geo:.2f}×; lowest {min(ratios):.2f}×; sizes under 0.97×: "
                     f"{sum(1 for x in ratios if x < 0.97)} of {len(ratios)}; wrong elements: {wrong[config]}.")
        lines.append("")
    publish(lines, args.markdown)


if __name__ == "__main__":
    main()
