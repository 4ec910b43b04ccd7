#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns the rows of scripts/bench scalapack (bench/results/scalapack-*.csv) into
the tables of docs/results.md and a plot: per rank count, for every matrix order,
reference ScaLAPACK's median over Conveyor's (x > 1: Conveyor faster), cold (a
plan built, used once and freed per call) and warm (the cached plan), and the
smallest ratio of each column."""
import argparse
import csv
import glob
import os


def load(folder):
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "scalapack-*.csv"))):
        with open(path) as f:
            rows += list(csv.DictReader(f))
    return rows


def columns(rows):
    seen = []
    for r in rows:
        key = (r["routine"], r["grids"])
        if key not in seen:
            seen.append(key)
    return seen


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder")
    p.add_argument("--markdown", required=True)
    p.add_argument("--plot")
    args = p.parse_args()
    rows = load(args.folder)
    out = []
    for config in sorted({r["config"] for r in rows}):
        mine = [r for r in rows if r["config"] == config]
        cols = columns(mine)
        sizes = sorted({int(r["n"]) for r in mine})
        for mode in ("cold", "warm"):
            cell = {(r["routine"], r["grids"], int(r["n"])): r for r in mine if r["plans"] == mode}
            if not cell:
                continue
            out.append("\n#### %s, %s: ScaLAPACK ms / Conveyor ms = x\n" % (config, mode))
            out.append("| n | " + " | ".join("%s %s" % c for c in cols) + " |")
            out.append("|---|" + "---|" * len(cols))
            worst = {c: None for c in cols}
            for n in sizes:
                line = []
                for c in cols:
                    r = cell.get((c[0], c[1], n))
                    if r is None:
                        line.append("")
                        continue
                    x = float(r["speedup"])
                    worst[c] = x if worst[c] is None else min(worst[c], x)
                    line.append("%s / %s **%.2f**" % (r["scalapack_ms"], r["conveyor_ms"], x) if x >= 1.5 else
                                "%s / %s %.2f" % (r["scalapack_ms"], r["conveyor_ms"], x))
                out.append("| %d | %s |" % (n, " | ".join(line)))
            out.append("| smallest x | " + " | ".join("%.2f" % worst[c] if worst[c] else "" for c in cols) + " |")
    with open(args.markdown, "w") as f:
        f.write("\n".join(out) + "\n")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        configs = sorted({r["config"] for r in rows})
        fig, axes = plt.subplots(1, len(configs), figsize=(6 * len(configs), 4.2), squeeze=False)
        for ax, config in zip(axes[0], configs):
            mine = [r for r in rows if r["config"] == config]
            for c in columns(mine):
                for mode, style in (("cold", "-o"), ("warm", ":.")):
                    pts = sorted((int(r["n"]), float(r["speedup"])) for r in mine
                                 if (r["routine"], r["grids"]) == c and r["plans"] == mode)
                    if pts:
                        ax.plot([x for x, _ in pts], [y for _, y in pts], style, ms=3, label="%s %s %s" % (c[0], c[1], mode))
            ax.axhline(1.0, color="black", lw=0.8)
            ax.axhline(1.5, color="gray", lw=0.8, ls="--")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("matrix order n")
            ax.set_ylabel("ScaLAPACK time / Conveyor time")
            ax.set_title(config)
            ax.legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    main()
