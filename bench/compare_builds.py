#!/usr/bin/python3
"""Same-run comparison of two builds of Conveyor (e.g. a commit and its parent):
the refactoring check of docs/architecture.md ("no regression beyond noise").

    bench/compare_builds.py OLD_BUILD NEW_BUILD [--rounds 3] [--out FILE.md]

Each build is a build directory of the Open MPI flavour (its tools/conveyor runs
`conveyor bench ...`). In every round both builds run the same three benchmarks,
old then new then new then old (so neither always runs first):
  - allreduce, 2 ranks, float32 sum, 8 B to 64 MiB: `conveyor auto` and stock
    MPI_Allreduce (the stock rows are the noise gauge: both builds call the same
    MPI, so their ratio shows how much the machine moved);
  - Sinkhorn fused, 8000 x 8000 float64, 2 ranks x 1 thread (ms per iteration);
  - pdgemr2d 4000 x 4000 on 2 ranks, warm (cached plan) and cold (plan per call).
Reports per case the median over rounds of the new/old time ratio (< 1: the new
build is faster) next to the stock rows' ratio, and the ratio normalized by the
stock row of the same run (Conveyor's time / the baseline's time in that run,
new over old): a shared machine's slow phases move both rows of a run together,
so the normalized ratio is the one to read.
"""
import argparse
import csv
import os
import pathlib
import statistics
import subprocess
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_osc="sm,pt2pt",
           OMPI_MCA_btl="self,vader", OMPI_MCA_btl_vader_single_copy_mechanism="none", OMP_WAIT_POLICY="passive")
LAUNCH = ["mpiexec.openmpi", "-n", "2", "--oversubscribe", "--bind-to", "none"]


def run(build, args, csv_path):
    tool = str(pathlib.Path(build) / "tools" / "conveyor")
    subprocess.run(LAUNCH + [tool, "bench"] + args + ["--csv", csv_path], env=ENV, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(csv_path) as f:
        return list(csv.DictReader(f))


def measure(build, tmp):
    """{case: seconds} for one run of the three benchmarks on one build."""
    out = {}
    try:
        rows = run(build, ["allreduce", "--impls", "auto,stock", "--reps", "15"], f"{tmp}/allreduce.csv")
    except subprocess.CalledProcessError:  # builds before the stock row was named "stock"
        rows = run(build, ["allreduce", "--impls", "auto,mpi", "--reps", "15"], f"{tmp}/allreduce.csv")
    for r in rows:
        kind = "stock" if r["implementation"].startswith("MPI") else "auto"
        out[f"allreduce {r['size']} {kind}"] = float(r["median_us"]) * 1e-6
    rows = run(build, ["sinkhorn", "--sizes", "8000", "--dtypes", "float64", "--variants", "fused", "--threads", "1",
                       "--iters", "5", "--reps", "5"], f"{tmp}/sinkhorn.csv")
    for r in rows:
        if r["impl"] == "fused":
            out["sinkhorn 8000^2 fused"] = float(r["ms_median"]) * 1e-3
        elif r["impl"] == "read_bound":
            out["sinkhorn 8000^2 read_bound stock"] = float(r["ms_median"]) * 1e-3
    rows = run(build, ["scalapack", "--sizes", "4000", "--cache", "both", "--rounds", "2", "--iterations", "8"],
               f"{tmp}/scalapack.csv")
    for r in rows:
        if r["routine"] == "pdgemr2d":
            out[f"pdgemr2d 4000^2 {r['plans']}"] = float(r["conveyor_ms"]) * 1e-3
            out[f"pdgemr2d 4000^2 {r['plans']} reference stock"] = float(r["scalapack_ms"]) * 1e-3
    return out


def baseline_of(case):
    """The stock row measured beside `case` in the same run (None for stock rows)."""
    if case.endswith("stock"):
        return None
    if case.startswith("allreduce"):
        return case[: -len("auto")] + "stock"
    if case.startswith("sinkhorn"):
        return "sinkhorn 8000^2 read_bound stock"
    return case + " reference stock"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    ratios, normalized = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = [a.old, a.new, a.new, a.old]
            runs = {a.old: [], a.new: []}
            for build in order:
                runs[build].append(measure(build, tmp))
                print(f"round {r + 1}: {build} done", flush=True)
            for case in runs[a.old][0]:
                old = statistics.mean(x[case] for x in runs[a.old] if case in x)
                new = statistics.mean(x[case] for x in runs[a.new] if case in x)
                ratios.setdefault(case, []).append(new / old)
                base = baseline_of(case)
                if base:
                    rel_old = statistics.mean(x[case] / x[base] for x in runs[a.old])
                    rel_new = statistics.mean(x[case] / x[base] for x in runs[a.new])
                    normalized.setdefault(case, []).append(rel_new / rel_old)
    lines = [f"new = {a.new}, old = {a.old}; {a.rounds} rounds (old, new, new, old); "
             "ratio = median over rounds of new time / old time (< 1: new faster). "
             "\"stock\" rows run the same MPI or reference code in both builds: their spread is the noise.", "",
             "| case | new / old | normalized by the same run's baseline |", "|---|---|---|"]
    for case, v in ratios.items():
        norm = f"{statistics.median(normalized[case]):.3f}" if case in normalized else "(baseline)"
        lines.append(f"| {case} | {statistics.median(v):.3f} | {norm} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        pathlib.Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
