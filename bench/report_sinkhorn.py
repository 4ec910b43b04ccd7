#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns the rows of scripts/bench sinkhorn into the tables of docs/results.md.

Inputs (in the results folder): sinkhorn-1x1.csv, sinkhorn-1x2.csv, sinkhorn-2x1.csv
(`conveyor bench sinkhorn` at 1 rank x 1 thread, 1 rank x 2 threads, 2 ranks x 1
thread, each with its own one-read bound) and sinkhorn-pot.csv (bench/sinkhorn_pot.py).
"""
import argparse
import csv
import os

CONFIGS = [("1x1", "1 rank x 1 thread"), ("1x2", "1 rank x 2 threads"), ("2x1", "2 ranks x 1 thread")]
VARIANTS = ["fused", "blocked", "c2r", "typical"]


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder")
    p.add_argument("--markdown", required=True)
    args = p.parse_args()
    ms = {}     # (config, dtype, n, impl) -> ms per iteration
    share = {}  # (config, dtype, n, impl) -> row-pass share
    for key, _ in CONFIGS:
        for r in load(os.path.join(args.folder, "sinkhorn-%s.csv" % key)):
            k = (key, r["dtype"], int(r["n"]), r["impl"])
            ms[k] = float(r["ms_median"])
            if r.get("row_share"):
                share[k] = float(r["row_share"])
    pot = {(r["dtype"], int(r["n"])): float(r["ms_median"]) for r in load(os.path.join(args.folder, "sinkhorn-pot.csv"))}
    pot_label = load(os.path.join(args.folder, "sinkhorn-pot.csv"))[0]["config"]
    sizes = sorted({k[2] for k in ms})
    out = []
    for dtype in ["float64", "float32"]:
        out.append("\n#### %s: ms per iteration (median), x = ratio to that configuration's one-read bound\n" % dtype)
        out.append("| n | variant | " + " | ".join(label for _, label in CONFIGS) +
                   " | 2-rank efficiency | %s | speedup vs POT |" % pot_label)
        out.append("|---|---|" + "---|" * len(CONFIGS) + "---|---|---|")
        for n in sizes:
            if (dtype, n) not in pot:
                continue
            for impl in ["read_bound"] + VARIANTS:
                cells = []
                for key, _ in CONFIGS:
                    t, b = ms.get((key, dtype, n, impl)), ms.get((key, dtype, n, "read_bound"))
                    cells.append("%.1f" % t if impl == "read_bound" else "%.1f (%.2fx)" % (t, t / b))
                t1, t2 = ms[("1x1", dtype, n, impl)], ms[("2x1", dtype, n, impl)]
                eff = "%.0f%%" % (100 * t1 / (2 * t2))
                vs_pot = "" if impl == "read_bound" else "%.2fx" % (pot[(dtype, n)] / t1)
                name = "one-read bound" if impl == "read_bound" else impl
                out.append("| %d | %s | %s | %s | %s | %s |" % (n, name, " | ".join(cells), eff,
                                                                  "%.1f" % pot[(dtype, n)] if impl == "fused" else "", vs_pot))
    # Targets of issue 4.
    out.append("\n#### Targets\n")
    f = ("1x1", "float64", 8000, "fused")
    if f in ms:
        out.append("- fused f64 8000^2, 1 thread: %.2fx the one-read bound (target <= 1.3x)" %
                   (ms[f] / ms[("1x1", "float64", 8000, "read_bound")]))
        out.append("- fused f64 8000^2 vs POT, 1 thread: %.2fx faster (target >= 1.6x)" % (pot[("float64", 8000)] / ms[f]))
        out.append("- 2-rank parallel efficiency, fused f64 8000^2: %.0f%% (target >= 85%%)" %
                   (100 * ms[f] / (2 * ms[("2x1", "float64", 8000, "fused")])))
    for dtype in ["float64", "float32"]:
        for n in sizes:
            k = lambda impl: ms.get(("1x1", dtype, n, impl))
            if None in (k("typical"), k("c2r"), k("blocked")):
                continue
            # Column pass = iteration minus the row pass. Blocked accumulates the column
            # sums inside its row pass, so its row pass is taken to be c2r's (the same
            # row rescaling) to charge the sums to the column pass.
            row_pass = k("c2r") * share[("1x1", dtype, n, "c2r")]
            col = lambda impl: k(impl) * (1 - share[("1x1", dtype, n, impl)]) if impl != "blocked" else k(impl) - row_pass
            out.append("- %s %d^2, 1 thread: typical / c2r / blocked = %.1f / %.1f / %.1f ms per iteration "
                       "(ordering %s); column pass typical / blocked = %.1fx" %
                       (dtype, n, k("typical"), k("c2r"), k("blocked"),
                        "holds" if k("typical") > k("c2r") > k("blocked") else "DOES NOT hold",
                        col("typical") / col("blocked")))
    # Overlap on / off (scripts/bench sinkhorn-overlap).
    overlap_rows = []
    for where in ["shm", "cluster"]:
        files = [os.path.join(args.folder, "sinkhorn-overlap-%s-%s.csv" % (where, m)) for m in ("off", "on")]
        if not all(os.path.exists(f) for f in files):
            continue
        off = {r["impl"].replace(" (no overlap)", ""): r for r in load(files[0])}
        on = {r["impl"]: r for r in load(files[1])}
        for impl in ["fused", "blocked", "c2r"]:
            if impl in off and impl in on:
                a, b = float(off[impl]["ms_median"]), float(on[impl]["ms_median"])
                overlap_rows.append("| %s | %s | %.1f | %.1f | %.2fx |" % (on[impl]["config"], impl, a, b, a / b))
    if overlap_rows:
        out.append("\n#### Column scaling overlapped with the allreduce (on_chunk), f64 8000^2, ms per iteration\n")
        out.append("| configuration | variant | overlap off | overlap on | off / on |")
        out.append("|---|---|---|---|---|")
        out.extend(overlap_rows)
    with open(args.markdown, "w") as fh:
        fh.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
