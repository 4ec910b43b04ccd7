#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""An unmodified MPI program with and without libconveyor_mpi preloaded.

run:    preload_compare.py run --config NAME --library LIB [--base-preload SO] [--rounds R]
                               [--first-round K] --csv OUT -- LAUNCHER... PROGRAM ARGS...
        Launches the command 3*R times: without LIB, with LIB in LD_PRELOAD, and
        without it again (the A/A control: what launch-to-launch noise alone
        gives), the order reversed every other round so drift on a shared
        machine hits all alike; PROGRAM prints "bytes,us_per_call,wrong" per
        sample (bench/unmodified_allreduce.c). Appends one CSV row per sample.
report: preload_compare.py report CSV... [--markdown OUT] [--plot PNG]
        Per configuration, size and variant: the median µs per call of each
        launch, then the fastest launch (the ratio without / with of these is
        the headline: > 1, the preload is faster) and the median launch. Why the
        fastest launch: on the shared 2-core VMs whole launches land in a slow
        mode (all sizes from ~4 KiB 2-5x slower, with or without the library;
        seen in about one launch in three), so a median over launches measures
        how many launches of each variant drew that mode.
"""
import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
from collections import defaultdict

FIELDS = ["config", "variant", "round", "bytes", "us_per_call", "wrong"]
VARIANTS = ("without", "with", "without again")


def human(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:g} {unit}"
    return f"{n} B"


def run(args):
    new_file = not os.path.exists(args.csv)
    with open(args.csv, "a", newline="") as out:
        writer = csv.writer(out)
        if new_file:
            writer.writerow(FIELDS)
        for rnd in range(args.first_round, args.first_round + args.rounds):
            order = VARIANTS if rnd % 2 == 0 else VARIANTS[::-1]
            for variant in order:
                preload = [p for p in (args.base_preload, args.library if variant == "with" else "") if p]
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                if preload:
                    env["LD_PRELOAD"] = ":".join(preload)
                done = subprocess.run(args.command, env=env, stdout=subprocess.PIPE, text=True,
                                      timeout=args.timeout)
                rows = [line.split(",") for line in done.stdout.splitlines()
                        if line.count(",") == 2 and line[0].isdigit()]
                if done.returncode != 0 or not rows:
                    sys.exit(f"preload_compare: {variant} run {rnd} failed (exit {done.returncode})")
                for size, us, wrong in rows:
                    writer.writerow([args.config, variant, rnd, size, us, wrong])
                out.flush()
                print(f"  {args.config}: round {rnd} {variant}: {len(rows)} samples", flush=True)


def summarize(paths):
    samples = defaultdict(list)  # (config, bytes, variant, round) -> [us]
    wrong = defaultdict(int)
    configs = []
    for path in paths:
        with open(path) as f:
            for row in csv.DictReader(f):
                key = (row["config"], int(row["bytes"]), row["variant"], row["round"])
                samples[key].append(float(row["us_per_call"]))
                wrong[row["config"]] += int(row["wrong"])
                if row["config"] not in configs:
                    configs.append(row["config"])
    table = {}
    for config in configs:
        sizes = sorted({b for (c, b, _, _) in samples if c == config})
        rows = []
        for b in sizes:
            per_launch = {v: [statistics.median(us) for (c, bb, vv, _), us in samples.items()
                              if c == config and bb == b and vv == v] for v in VARIANTS}
            best = {v: min(x) if x else math.nan for v, x in per_launch.items()}
            mid = {v: statistics.median(x) for v, x in per_launch.items() if x}
            rows.append((b, best["without"], best["with"], best["without"] / best["with"],
                         mid["without"] / mid["with"], len(per_launch["with"]),
                         best["without"] / best["without again"]))
        table[config] = rows
    return configs, table, wrong


def geometric_mean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def machine_line():
    """The CPU the report's runs were made on (read where the report is made,
    right after them by scripts/bench): model, family / model numbers, the widest
    SIMD target the kernel lists, and the cores."""
    fields, flags = {}, set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key in ("flags", "Features"):
                    flags = set(value.split())
                elif key not in fields:
                    fields[key] = value
    except OSError:
        return "Machine: unknown (no /proc/cpuinfo)."
    simd = next((name for name, flag in (("AVX-512", "avx512f"), ("AVX2", "avx2"), ("SSE2", "sse2"),
                                          ("SVE", "sve"), ("NEON", "asimd")) if flag in flags), "none listed")
    model = fields.get("model name", fields.get("CPU part", "unknown"))
    return (f"Machine: {model} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}), "
            f"widest SIMD {simd}, {os.cpu_count()} cores.")


def publish(lines, markdown=None):
    """Prints the report's lines, and writes them to `markdown` if given."""
    text = "\n".join(lines)
    print(text)
    if markdown:
        with open(markdown, "w") as f:
            f.write(text + "\n")


def report(args):
    configs, table, wrong = summarize(args.csv)
    lines = []
    for config in configs:
        rows = table[config]
        ratios = [r[3] for r in rows]
        geo = geometric_mean(ratios)
        low = min(rows, key=lambda r: r[3])
        launches = rows[0][5]
        lines.append(f"#### {config}: µs per call, fastest of {launches} launches each (median of a launch's "
                     f"samples); x = without ÷ with (> 1: faster with the preload)")
        lines.append("")
        lines.append("| size | without | with libconveyor_mpi | x | x, median launches | A/A: without ÷ without again |")
        lines.append("|---:|---:|---:|---:|---:|---:|")
        for b, without, with_, r, r_mid, _, aa in rows:
            mark = f"**{r:.2f}**" if r >= 1.2 else f"{r:.2f}"
            lines.append(f"| {human(b)} | {without:.2f} | {with_:.2f} | {mark} | {r_mid:.2f} | {aa:.2f} |")
        lines.append("")
        controls = [r[6] for r in rows if not math.isnan(r[6])]
        control = (f"A/A control {min(controls):.2f}-{max(controls):.2f}×, "
                   f"{sum(1 for a in controls if a < 0.97)} sizes under 0.97×" if controls else "no A/A control")
        lines.append(f"Geometric mean {geo:.2f}× over {len(rows)} sizes; lowest {low[3]:.2f}× at "
                     f"{human(low[0])}; sizes under 0.97×: {sum(1 for r in ratios if r < 0.97)}; {control}; "
                     f"wrong elements: {wrong[config]}.")
        lines.append("")
    publish(lines, args.markdown)
    if args.plot:
        from ratio_plot import plot_ratios
        plot_ratios([(c, [r[0] for r in table[c]], [r[3] for r in table[c]]) for c in configs], args.plot,
                    "time without ÷ time with libconveyor_mpi (fastest launches)",
                    "Unmodified MPI_Allreduce loop, LD_PRELOAD=libconveyor_mpi.so")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--config", required=True)
    r.add_argument("--library", required=True)
    r.add_argument("--base-preload", default="")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--first-round", type=int, default=0,
                   help="number of the first round (a caller interleaving configurations runs one round at a time)")
    r.add_argument("--timeout", type=int, default=900)
    r.add_argument("--csv", required=True)
    r.add_argument("command", nargs=argparse.REMAINDER)
    p = sub.add_parser("report")
    p.add_argument("csv", nargs="+")
    p.add_argument("--markdown")
    p.add_argument("--plot")
    args = parser.parse_args()
    if args.what == "run":
        if args.command and args.command[0] == "--":
            args.command = args.command[1:]
        run(args)
    else:
        report(args)


if __name__ == "__main__":
    main()
