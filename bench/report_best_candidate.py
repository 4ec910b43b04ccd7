#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The ceiling of `auto`: per size, the best of Conveyor's algorithms forced one
by one, against stock MPI_Allreduce in the same rounds.

usage: report_best_candidate.py CSV... [--markdown OUT]

Each CSV is one `conveyor bench allreduce --impls <algorithms>,stock` run. `auto`
picks among these algorithms and the library's own call, so over a set of sizes
its geometric mean against stock cannot beat the geometric mean of
max(best algorithm, 1.0): that bound is printed per configuration, with the sizes
where no algorithm beats stock by 3% (there `auto` can only tie).
"""
import argparse
import csv
import math

from report_auto_vs_stock import emit, size_bytes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--markdown")
    args = parser.parse_args()

    lines = ["| configuration | sizes | best algorithm vs stock: lowest / highest | bound on auto's geometric mean "
             "| sizes where no algorithm beats stock by 3% |", "|---|---:|---:|---:|---|"]
    for path in args.csv:
        best = {}  # bytes -> (ratio, algorithm, size text)
        name = None
        with open(path) as f:
            for r in csv.DictReader(f):
                if (not r["implementation"].startswith("conveyor ") or r["implementation"] == "conveyor auto"
                        or r["x_vs_MPI"] == "-"):
                    continue
                name = r["config"]
                b, x = size_bytes(r["size"]), float(r["x_vs_MPI"])
                if b not in best or x > best[b][0]:
                    best[b] = (x, r["algorithm"], r["size"])
        if not name:
            continue
        ratios = [x for x, _, _ in best.values()]
        bound = math.exp(sum(math.log(max(x, 1.0)) for x in ratios) / len(ratios))
        ties = [best[b][2] for b in sorted(best) if best[b][0] < 1.03]
        lines.append(f"| {name} | {len(best)} | {min(ratios):.2f}x / {max(ratios):.2f}x | {bound:.2f}x | "
                     f"{len(ties)}: {', '.join(ties) if ties else 'none'} |")
    emit(lines, args.markdown,
         "The ceiling of `auto`: the best of Conveyor's algorithms (each forced) against stock "
         "`MPI_Allreduce`, same rounds, float32 sum. auto's geometric mean cannot exceed the bound.")


if __name__ == "__main__":
    main()
