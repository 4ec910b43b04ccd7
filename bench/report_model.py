#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Markdown tables from `scripts/bench model`'s CSV files (docs/results.md, "The
cost model against measurement"):

    bench/report_model.py RESULTS_DIR [--markdown FILE] [--measured GLOBS] [--no-extrapolated]

1. Per configuration and engine: how far the tuned model's predictions are from
   the measured medians (predicted / measured over every candidate and size), and
   what its picks cost (the model's pick's measured time / the measured fastest).
2. Every allreduce size on each configuration: the model's pick beside the
   measured fastest; every all-to-all size: pairwise, node-aware and the MPI
   library's MPI_Alltoall, measured (predicted).
3. The extrapolated tables (model-extrapolated-*.csv): pick and gain over the
   baseline for 64-4096 nodes x 1-64 ranks per node, and the papers' own jobs.
"""
import argparse
import csv
import glob
import os
import statistics


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def quantile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def measured_tables(files):
    out = ["| configuration | engine | cases | predicted / measured: median (p10–p90) | pick = fastest, or within 10% | pick / fastest: worst (case) |",
           "|---|---|---:|---|---:|---|"]
    picks = {}
    for path in files:
        data = rows(path)
        for engine in ("allreduce", "dsop", "redistribute", "alltoall"):
            mine = [r for r in data if r["engine"] == engine]
            if not mine:
                continue
            config = mine[0]["config"]
            ratios = [float(r["predicted/measured"]) for r in mine if r["predicted/measured"] not in ("", "-")]
            summary = [r for r in mine if r["algorithm"].startswith("model picks")]
            costs = [(float(r["pick/fastest"]), r["case"]) for r in summary]
            good = sum(1 for c, _ in costs if c <= 1.10)
            worst = max(costs)
            out.append(f"| {config} | {engine} | {len(summary)} | {statistics.median(ratios):.2f} "
                       f"({quantile(ratios, 0.1):.2f}–{quantile(ratios, 0.9):.2f}) | {good} of {len(summary)} | "
                       f"{worst[0]:.2f} ({worst[1]}) |")
            picks.setdefault(engine, []).extend((config, r) for r in summary)
    detail = ["", "| configuration | size | model picks | predicted ms | measured fastest | pick / fastest |",
              "|---|---|---|---:|---|---:|"]
    for config, r in picks.get("allreduce", []):
        detail.append(f"| {config} | {r['case']} | {r['algorithm'].replace('model picks ', '')} | {r['predicted_ms']} | "
                      f"{r['measured_ms'].replace('fastest ', '')} | {r['pick/fastest']} |")
    if not picks.get("allreduce"):
        detail = []
    return out + detail + alltoall_table(picks.get("alltoall", []), files)


def alltoall_table(summaries, files):
    """Every all-to-all size: each candidate's measured ms (the model's prediction
    in parentheses) beside the MPI library's MPI_Alltoall, and the model's pick."""
    if not summaries:
        return []
    out = ["", "| configuration | bytes per pair | pairwise ms (model) | by_nodes ms (model) | MPI_Alltoall ms | "
           "model picks | measured fastest | pick / fastest |", "|---|---:|---:|---:|---:|---|---|---:|"]
    data = [r for path in files for r in rows(path) if r["engine"] == "alltoall"]
    for config, s in summaries:
        def cell(name):
            r = next((x for x in data if x["config"] == config and x["case"] == s["case"] and x["algorithm"] == name), None)
            if r is None:
                return "—"
            return r["measured_ms"] + (f" ({r['predicted_ms']})" if r["predicted_ms"] != "-" else "")
        out.append(f"| {config} | {s['case']} | {cell('pairwise')} | {cell('by_nodes')} | {cell('MPI_Alltoall')} | "
                   f"{s['algorithm'].replace('model picks ', '')} | {s['measured_ms'].replace('fastest ', '')} | "
                   f"{s['pick/fastest']} |")
    return out


def extrapolated_tables(path):
    data = rows(path)
    params = data[0]["params"]
    out = []
    for engine, size, base in (("allreduce", "1.8 MiB", "ring"), ("allreduce", "64 MiB", "ring"),
                               ("dsop", "8000^2", "allreduce"), ("alltoall", "64 B", "pairwise"),
                               ("alltoall", "4 KiB", "pairwise")):
        mine = [r for r in data if r["engine"] == engine and r["size"] == size and "paper" not in r["params"]]
        if not mine:
            continue
        rpns = sorted({int(r["ranks_per_node"]) for r in mine})
        out += ["", f"**{params}: {engine} {size}** — the model's pick, its predicted ms, and × over {base}", "",
                "| nodes | " + " | ".join(f"{k} / node" for k in rpns) + " |", "|---:|" + "---|" * len(rpns)]
        for nodes in sorted({int(r["nodes"]) for r in mine}):
            cells = []
            for k in rpns:
                r = next(x for x in mine if int(x["nodes"]) == nodes and int(x["ranks_per_node"]) == k)
                cells.append(f"{r['pick'].replace('generalized_rabenseifner', 'g_rabenseifner')} "
                             f"{float(r['pick_ms']):.1f} ms ×{float(r['baseline/pick']):.2f}")
            out.append(f"| {nodes} | " + " | ".join(cells) + " |")
    paper = [r for r in data if "paper" in r["params"]]
    if paper:
        out += ["", f"**{params}: the paper's own jobs**", "",
                "| engine | size | nodes × ranks | pick | predicted ms | baseline | predicted ms | baseline / pick |",
                "|---|---|---|---|---:|---|---:|---:|"]
        for r in paper:
            out.append(f"| {r['engine']} | {r['size']} | {r['nodes']} × {r['ranks_per_node']} | {r['pick']} | "
                       f"{r['pick_ms']} | {r['baseline']} | {r['baseline_ms']} | {r['baseline/pick']} |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--markdown")
    ap.add_argument("--measured", default="model-shm-*.csv,model-cluster-*.csv",
                    help="comma-separated globs of the measured CSV files in RESULTS_DIR")
    ap.add_argument("--no-extrapolated", action="store_true", help="leave out the extrapolated tables")
    a = ap.parse_args()
    files = [f for g in a.measured.split(",") for f in sorted(glob.glob(os.path.join(a.results, g)))]
    lines = measured_tables(files) if files else []
    for path in [] if a.no_extrapolated else sorted(glob.glob(os.path.join(a.results, "model-extrapolated-*.csv"))):
        lines += extrapolated_tables(path)
    text = "\n".join(lines) + "\n"
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
