#!/usr/bin/python3
"""Issue #14's table: Conveyor's `auto` against stock MPI_Allreduce, same run.

usage: report_auto_vs_stock.py CSV... [--markdown OUT] [--plot PNG]

Each CSV is one `conveyor bench allreduce --impls auto,stock` run (rounds
alternate the two; x_vs_MPI = stock median / auto median). Prints, per size, the
ratio of every configuration side by side (one column each), and per
configuration the geometric mean, the lowest ratio and the sizes under 0.97x.
"""
import argparse
import csv
import math


def size_bytes(text):
    value, unit = text.split()
    return int(float(value) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--markdown")
    parser.add_argument("--plot")
    args = parser.parse_args()

    configs = []  # (name, {bytes: (ratio, chosen algorithm, size text)}, wrong)
    for path in args.csv:
        rows = {}
        name = None
        wrong = 0
        with open(path) as f:
            for r in csv.DictReader(f):
                wrong += int(r["wrong"])
                if r["implementation"] != "conveyor auto":
                    continue
                name = r["config"]
                rows[size_bytes(r["size"])] = (float(r["x_vs_MPI"]), r["algorithm"], r["size"])
        if name:
            configs.append((name, rows, wrong))

    sizes = sorted({b for _, rows, _ in configs for b in rows})
    lines = ["| size | " + " | ".join(name for name, _, _ in configs) + " |",
             "|---:|" + "---:|" * len(configs)]
    for b in sizes:
        cells = []
        text = None
        for _, rows, _ in configs:
            if b in rows:
                x, alg, text = rows[b]
                cell = f"{x:.2f} ({alg})"
                cells.append(f"**{cell}**" if x < 0.97 else cell)
            else:
                cells.append("")
        lines.append(f"| {text} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| configuration | sizes | geometric mean | lowest | sizes under 0.97x | wrong elements |")
    lines.append("|---|---:|---:|---:|---|---:|")
    for name, rows, wrong in configs:
        ratios = [x for x, _, _ in rows.values()]
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        low_b = min(rows, key=lambda b: rows[b][0])
        under = [rows[b][2] for b in sorted(rows) if rows[b][0] < 0.97]
        lines.append(f"| {name} | {len(rows)} | {geo:.2f}x | {rows[low_b][0]:.2f}x at {rows[low_b][2]} | "
                     f"{', '.join(under) if under else 'none'} | {wrong} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("Conveyor `auto` vs stock `MPI_Allreduce`, float32 sum; "
                    "x = stock median / auto median, same run (bold: under 0.97x); "
                    "in parentheses the algorithm `auto` ran.\n\n" + text + "\n")
    if args.plot:
        from ratio_plot import plot_ratios
        plot_ratios([(name, sorted(rows), [rows[b][0] for b in sorted(rows)]) for name, rows, _ in configs],
                    args.plot, "stock time / Conveyor auto time",
                    "Conveyor auto vs stock MPI_Allreduce (same run)", target=0.97)


if __name__ == "__main__":
    main()
