#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns the rows of scripts/bench dsop (bench/results/dsop-*.csv) into the tables
of docs/results.md: per configuration and shape, every algorithm's median (p10-p90)
in ms, its speedup over the MPI_Allreduce baseline, and how far `auto` is from the
best algorithm of that row."""
import argparse
import csv
import glob
import os

ALGS = ["allgather", "allreduce", "ring", "generalized_rabenseifner"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder")
    p.add_argument("--markdown", required=True)
    args = p.parse_args()
    out = []
    worst_auto = 0.0
    worst_choice = [0.0]
    grab = []
    for path in sorted(glob.glob(os.path.join(args.folder, "dsop-*.csv"))):
        with open(path) as f:
            rows = list(csv.DictReader(f))
        if not rows:
            continue
        config = rows[0]["config"]
        out.append("\n#### %s (%s), ms per call: median (p10–p90); x = speedup over `allreduce`\n" % (config, rows[0]["dtype"]))
        out.append("| N × M | " + " | ".join("`%s`" % a for a in ALGS) + " | `auto` (ran) | auto / best | choice / best |")
        out.append("|---|" + "---|" * (len(ALGS) + 3))
        shapes = []
        for r in rows:
            if (r["N"], r["M"]) not in shapes:
                shapes.append((r["N"], r["M"]))
        for n, m in shapes:
            cell = {r["impl"]: r for r in rows if (r["N"], r["M"]) == (n, m)}
            base = float(cell["allreduce"]["ms_median"])
            best = min(float(cell[a]["ms_median"]) for a in ALGS if a in cell)
            cells = []
            for a in ALGS:
                r = cell[a]
                t = float(r["ms_median"])
                cells.append("%.1f (%.1f–%.1f) %.2fx" % (t, float(r["ms_p10"]), float(r["ms_p90"]), base / t))
            auto = float(cell["auto"]["ms_median"])
            chosen = float(cell[cell["auto"]["ran"]]["ms_median"])  # the chosen algorithm's own row
            worst_auto = max(worst_auto, auto / best)
            worst_choice[0] = max(worst_choice[0], chosen / best)
            if "cluster" in path and int(n) >= 2000 and int(n) == int(m):
                grab.append((n, base / float(cell["generalized_rabenseifner"]["ms_median"])))
            out.append("| %s × %s | %s | %.1f (%s) | %.2f | %.2f |" % (n, m, " | ".join(cells), auto, cell["auto"]["ran"],
                                                                auto / best, chosen / best))
    out.append("\n#### Targets\n")
    if grab:
        out.append("- generalized Rabenseifner vs `allreduce`, 4 emulated nodes at 1 Gbit, N = M >= 2000: " +
                   ", ".join("%s: %.2fx" % g for g in grab) + " (target >= 3x)")
    out.append("- `auto` vs the best algorithm, every row: worst %.2f as timed (its own calls), worst %.2f for the "
               "algorithm it chose (that algorithm's row); target <= 1.10" % (worst_auto, worst_choice[0]))
    with open(args.markdown, "w") as fh:
        fh.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
