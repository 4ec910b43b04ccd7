#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns `conveyor bench reduce` CSV rows (one file per MPI build) into the
markdown tables of docs/results.md and a GB/s-vs-size plot.

Ratios are only ever taken between rows of the same run (same file), never
across runs: the machines are shared and noisy.
"""
import argparse
import csv
import os
from collections import OrderedDict

# The plain-loop row, whatever its label says it was compiled for ("plain loop -O3",
# or "-O3 -march=native" in CSVs from before the per-target build).
PLAIN = "plain loop"


def load(path):
    rows = list(csv.DictReader(open(path)))
    table = OrderedDict()  # (case, size) -> {implementation: row}
    for r in rows:
        impl = PLAIN if r["implementation"].startswith(PLAIN) else r["implementation"]
        table.setdefault((r["case"], r["size"]), {})[impl] = r
    return table


def mpi_impl(impls):
    """The MPI_Reduce_local row's name, or None for an op MPI lacks (logaddexp)."""
    return next((i for i in impls if i.startswith("MPI_Reduce_local")), None)


def markdown(path, table):
    name = os.path.basename(path)
    mpi = next(m for m in map(mpi_impl, table.values()) if m)
    library = mpi.replace("MPI_Reduce_local (", "").rstrip(")")
    out = [f"Source: `{name}` — {library} build; GB/s counts 3x the "
           "buffer (2x for memcpy); ratios are median time of the baseline / median time of "
           "Conveyor, from the same run.", "",
           "| case | size | Conveyor GB/s | MPI_Reduce_local GB/s | plain loop GB/s | memcpy GB/s "
           "| Conveyor vs MPI | Conveyor vs loop |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (case, size), impls in table.items():
        c = impls["conveyor"]
        t = float(c["median_us"])
        m = impls.get(mpi)  # none for logaddexp
        out.append("| {} | {} | {} | {} | {} | {} | {} | {:.2f}x |".format(
            case, size, c["GB/s"], m["GB/s"] if m else "—",
            impls[PLAIN]["GB/s"], impls["memcpy"]["GB/s"],
            "{:.2f}x".format(float(m["median_us"]) / t) if m else "—",
            float(impls[PLAIN]["median_us"]) / t))
    return "\n".join(out)


def plot(paths_tables, target):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(OrderedDict.fromkeys(k[0] for k in paths_tables[0][1]))
    fig, axes = plt.subplots(1, len(cases), figsize=(4.2 * len(cases), 3.6), sharey=True)
    styles = {"conveyor": "-o", PLAIN: "--", "memcpy": ":"}
    for ax, case in zip(axes, cases):
        for pi, (path, table) in enumerate(paths_tables):
            keys = [k for k in table if k[0] == case]
            sizes = [k[1] for k in keys]
            mpi = mpi_impl(table[keys[0]])
            library = next(m for m in map(mpi_impl, table.values()) if m)
            label_mpi = library.replace("MPI_Reduce_local ", "").strip("()")
            for impl, style in list(styles.items()) + ([(mpi, "-s")] if mpi else []):
                if pi > 0 and impl in (PLAIN, "memcpy"):
                    continue  # one copy of the references is enough
                ys = [float(table[k][impl]["GB/s"]) for k in keys]
                label = {"conveyor": f"Conveyor ({label_mpi} build)"}.get(
                    impl, f"MPI_Reduce_local {label_mpi}" if impl == mpi else impl)
                ax.plot(range(len(sizes)), ys, style, label=label, markersize=3)
            ax.set_xticks(range(len(sizes)))
            ax.set_xticklabels(sizes, rotation=60, fontsize=7)
        ax.set_title(case)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("GB/s (3x buffer)")
    axes[-1].legend(fontsize=6)
    fig.tight_layout()
    os.makedirs(os.path.dirname(target), exist_ok=True)
    fig.savefig(target, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--markdown")
    ap.add_argument("--plot")
    a = ap.parse_args()
    tables = [(p, load(p)) for p in a.csv]
    md = "\n\n".join(markdown(p, t) for p, t in tables)
    if a.markdown:
        open(a.markdown, "w").write(md + "\n")
    else:
        print(md)
    if a.plot:
        plot(tables, a.plot)


if __name__ == "__main__":
    main()
