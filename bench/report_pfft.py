#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""mpi4py-fft's PFFT end to end with and without libconveyor_mpi (scripts/bench pfft).

usage: report_pfft.py CSV... [--markdown OUT]

Rows: bench/preload_compare.py's, of bench/mpi4py_fft_pfft.py, whose "bytes"
column is N and whose configurations end in "| total" (forward + backward) or
"| transfer" (the same transform's redistributions alone). Per configuration
and N: the fastest launch's median µs of each, the ratios without ÷ with, and
the transfer's share of the total without and with the library.
"""
import argparse
from collections import defaultdict

from preload_compare import geometric_mean, publish, summarize


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+")
    p.add_argument("--markdown")
    args = p.parse_args()
    configs, table, wrong = summarize(args.csv)
    groups = defaultdict(dict)  # base config -> part -> rows
    order = []
    for config in configs:
        base, part = (s.strip() for s in config.rsplit("|", 1))
        groups[base][part] = {r[0]: r for r in table[config]}
        if base not in order:
            order.append(base)
    lines = []
    for base in order:
        total, transfer = groups[base].get("total", {}), groups[base].get("transfer", {})
        launches = next(iter(total.values()))[5] if total else 0
        lines.append(f"#### {base}: ms per forward + backward, fastest of {launches} launches each; "
                     "x = without ÷ with (> 1: faster with the preload)")
        lines.append("")
        lines.append("| N³ | total without | total with | x | transfers without | transfers with | x | "
                     "transfer share without | with |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        xs = []
        for n in sorted(set(total) | set(transfer)):
            t, s = total.get(n), transfer.get(n)
            tw, tc = (t[1] / 1e3, t[2] / 1e3) if t else (float("nan"),) * 2
            sw, sc = (s[1] / 1e3, s[2] / 1e3) if s else (float("nan"),) * 2
            if t:
                xs.append(tw / tc)
            lines.append(f"| {n}³ | {tw:.2f} | {tc:.2f} | {tw / tc:.2f} | {sw:.2f} | {sc:.2f} | {sw / sc:.2f} | "
                         f"{sw / tw:.0%} | {sc / tc:.0%} |")
        lines.append("")
        bad = sum(wrong[c] for c in configs if c.startswith(base))
        if xs:
            lines.append(f"End to end: geometric mean {geometric_mean(xs):.2f}×, lowest {min(xs):.2f}×; "
                         f"round trips not matching the input: {bad}.")
        lines.append("")
    publish(lines, args.markdown)


if __name__ == "__main__":
    main()
