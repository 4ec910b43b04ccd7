#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Issue #14's table: Conveyor's `auto` against stock MPI_Allreduce, same run.

usage: report_auto_vs_stock.py CSV... [--markdown OUT] [--plot PNG]

Each CSV is one `conveyor bench allreduce --impls auto,stock` run (rounds
alternate the two; x_vs_MPI = stock median / auto median). Prints, per size, the
ratio of every configuration side by side (one column each), and per
configuration the geometric mean, the lowest ratio, the sizes under 0.97x, the
cold phase (auto's measuring calls made before the samples: settle_ms over all
sizes and the largest one, not in the ratios) and, where the run has a
"stock-again" row, the A/A control: the range of stock-again / stock, the noise
floor of the same rounds. Where the run has a "conveyor mpi" row (auto pinned to
the library's own allreduce), the wrapper's cost: its median time minus stock's
at each size up to 4 KiB (median and largest over those sizes), beside the same
difference for the A/A control.
"""
import statistics
import argparse
import csv
import math


def size_bytes(text):
    value, unit = text.split()
    return int(float(value) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit])


def emit(lines, markdown, heading):
    """Prints the table; writes it under `heading` to the file `markdown` if given."""
    text = "\n".join(lines)
    print(text)
    if markdown:
        with open(markdown, "w") as f:
            f.write(heading + "\n\n" + text + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--markdown")
    parser.add_argument("--plot")
    args = parser.parse_args()

    configs = []  # (name, {bytes: (ratio, chosen algorithm, size text, settle ms)}, wrong, {bytes: A/A ratio})
    wrapper = {}  # name -> ([mpi row - stock, ns], [stock again - stock, ns]) at sizes up to 4 KiB
    for path in args.csv:
        rows = {}
        control = {}
        name = None
        wrong = 0
        medians = {}  # (implementation kind, bytes) -> median us
        with open(path) as f:
            for r in csv.DictReader(f):
                wrong += int(r["wrong"])
                b = size_bytes(r["size"])
                kind = ("again" if r["implementation"].endswith(" again") else
                        "mpi" if r["implementation"] == "conveyor mpi" else
                        "stock" if r["algorithm"] == "-" and "on a dup" not in r["implementation"] else None)
                if kind:
                    medians[(kind, b)] = float(r["median_us"])
                if r["implementation"].endswith(" again"):
                    control[size_bytes(r["size"])] = float(r["x_vs_MPI"])
                if r["implementation"] != "conveyor auto":
                    continue
                name = r["config"]
                settle = float(r["settle_ms"]) if r.get("settle_ms") else None
                rows[size_bytes(r["size"])] = (float(r["x_vs_MPI"]), r["algorithm"], r["size"], settle)
        if name:
            configs.append((name, rows, wrong, control))
            small = [b for (k, b) in medians if k == "mpi" and b <= 4096 and ("stock", b) in medians]
            if small:
                wrapper[name] = ([1e3 * (medians[("mpi", b)] - medians[("stock", b)]) for b in small],
                                 [1e3 * (medians[("again", b)] - medians[("stock", b)]) for b in small
                                  if ("again", b) in medians])

    sizes = sorted({b for _, rows, _, _ in configs for b in rows})
    lines = ["| size | " + " | ".join(name for name, _, _, _ in configs) + " |",
             "|---:|" + "---:|" * len(configs)]
    for b in sizes:
        cells = []
        text = None
        for _, rows, _, _ in configs:
            if b in rows:
                x, alg, text, _ = rows[b]
                cell = f"{x:.2f} ({alg})"
                cells.append(f"**{cell}**" if x < 0.97 else cell)
            else:
                cells.append("")
        lines.append(f"| {text} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| configuration | sizes | geometric mean | lowest | sizes under 0.97x | wrong elements "
                 "| measuring phase: all sizes / largest | A/A control: range, sizes under 0.97x |")
    lines.append("|---|---:|---:|---:|---|---:|---:|---:|")
    for name, rows, wrong, control in configs:
        ratios = [x for x, _, _, _ in rows.values()]
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        low_b = min(rows, key=lambda b: rows[b][0])
        under = [rows[b][2] for b in sorted(rows) if rows[b][0] < 0.97]
        settles = {b: rows[b][3] for b in rows if rows[b][3] is not None}
        if settles:
            big = max(settles, key=settles.get)
            cold = f"{sum(settles.values()):.1f} ms / {settles[big]:.1f} ms at {rows[big][2]}"
        else:
            cold = "not recorded"
        if control:
            aa = (f"{min(control.values()):.2f}-{max(control.values()):.2f}x, "
                  f"{sum(1 for x in control.values() if x < 0.97)} of {len(control)}")
        else:
            aa = "not run"
        lines.append(f"| {name} | {len(rows)} | {geo:.2f}x | {rows[low_b][0]:.2f}x at {rows[low_b][2]} | "
                     f"{', '.join(under) if under else 'none'} | {wrong} | {cold} | {aa} |")
    if wrapper:
        lines.append("")
        lines.append("The wrapper's cost: `auto` pinned to `mpi` (Conveyor's repeated-shape path, then the library's "
                     "own allreduce on Conveyor's duplicate communicator) minus stock, ns per call, at every size "
                     "from 8 B to 4 KiB; beside it the same difference for stock run again (noise).")
        lines.append("")
        lines.append("| configuration | sizes | pinned `mpi` − stock: median / largest | stock again − stock: median / largest |")
        lines.append("|---|---:|---:|---:|")
        for name, (over, noise) in wrapper.items():
            aa = f"{statistics.median(noise):+.0f} / {max(noise, key=abs):+.0f} ns" if noise else "not run"
            lines.append(f"| {name} | {len(over)} | {statistics.median(over):+.0f} / {max(over):+.0f} ns | {aa} |")
    emit(lines, args.markdown,
         "Conveyor `auto` vs stock `MPI_Allreduce`, float32 sum; "
         "x = stock median / auto median, same run (bold: under 0.97x); "
         "in parentheses the algorithm `auto` ran. The measuring phase (auto's first calls of "
         "each size class, alternating its candidates) runs before the samples and is not in "
         "the ratios; its time is in the summary. The A/A control is stock `MPI_Allreduce` run "
         "as a second row of the same rounds: its ratio to stock is what noise alone gives.")
    if args.plot:
        from ratio_plot import plot_ratios
        plot_ratios([(name, sorted(rows), [rows[b][0] for b in sorted(rows)]) for name, rows, _, _ in configs],
                    args.plot, "stock time / Conveyor auto time",
                    "Conveyor auto vs stock MPI_Allreduce (same run)", target=0.97)


if __name__ == "__main__":
    main()
