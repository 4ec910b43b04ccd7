#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Same-run comparison of two builds of Conveyor (e.g. a commit and its parent):
the refactoring check of docs/architecture.md ("no regression beyond noise").

    bench/compare_builds.py OLD_BUILD NEW_BUILD [--rounds 3] [--benchmarks LIST] [--out FILE.md]

Each build is a build directory of the Open MPI flavour (its tools/conveyor runs
`conveyor bench ...`; its python/ holds the extension). In every round both
builds run the same benchmarks, old then new then new then old (so neither
always runs first). --benchmarks picks from:
  allreduce    2 ranks, float32 sum, 8 B to 64 MiB: `conveyor auto` beside stock
               MPI_Allreduce;
  sinkhorn     fused, 8000 x 8000 float64, 2 ranks x 1 thread, and the
               in-place variants (typical, c2r, blocked), 4000 x 4000 float64 on
               2 ranks x 1 thread and 1 rank x 2 threads, each beside the
               one-read-of-A bound;
  scalapack    pdgemr2d 4000 x 4000 on 2 ranks, warm (cached plan) and cold,
               beside reference ScaLAPACK;
  reduce       the local kernels, every op x dtype at every 2^k and 3*2^k from
               4 KiB to 4 MiB, beside MPI_Reduce_local (rank 0 alone);
  dsop         every algorithm and auto, 2000 x 2000 float64 on 2 ranks, beside
               the same run's MPI_Allreduce of the same 32 MB (stock row of
               `bench allreduce`);
  redistribute the tensor paper's 5-D case, every transport on 4 ranks, beside
               the memcpy bound of the same run;
  ot_log       bench/ot_vs_pot.py --method sinkhorn_log, 2000 x 2000 float64 and
               float32, one thread: conveyor.ot's log-domain iteration beside
               POT's (the same script runs on both builds);
  python       bench/python_overhead.py on 2 ranks (8 B, 4 KiB, 64 KiB):
               conveyor.Allreduce and conveyor.allreduce(out=) from Python,
               beside mpi4py's Allreduce (the same script runs on both builds);
  alltoall     an unmodified program's MPI_Alltoall and MPI_Alltoallv (64 B,
               4 KiB, 256 KiB, 4 MiB per peer) under the build's libconveyor_mpi,
               2 ranks, each beside the library's own call in the same launch
               (--beside-library), and mpi4py-fft's slab transfer (N = 256,
               complex128) beside one memcpy of the bytes it receives;
  points       bench/points_apply.py, n = 4000, d = 3 and 64, one thread: a pass
               of the point-cloud solver (unnormalized) and the plan applied
               without forming it, beside that pass;
  losses       bench/divergence_value_and_grad.py, fixed eps, n = 1000, d = 3,
               float64, one thread: conveyor.ot.empirical_sinkhorn_divergence's
               value and gradient beside POT's on torch tensors (POT >= 0.9:
               run compare_builds.py with scripts/bench's points venv's python);
  torch        bench/torch_collectives.py on 2 ranks (Debian's torch):
               all_reduce, float32, 8 B, 4 KiB, 64 KiB, 1 MiB on the "conveyor"
               backend, beside mpi4py on the same tensors.
Reports per case the median over rounds of the new/old time ratio (< 1: the new
build is faster), the ratio normalized by the baseline measured in the same run
(Conveyor's time / the baseline's time in that run, new over old: a shared
machine's slow phases move both rows of a run together), and the A/A spread:
the median over rounds of the larger of old/old and new/new between the two
runs of one build in that round (how much the same code moved). The reduce
rows are summarized per size (the geometric mean over the op x dtype cases)
and by the worst case.
"""
import argparse
import csv
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_osc="sm,pt2pt",
           OMPI_MCA_btl="self,vader", OMPI_MCA_btl_vader_single_copy_mechanism="none", OMP_WAIT_POLICY="passive")
HERE = pathlib.Path(__file__).resolve().parent
BENCHMARKS = ("allreduce", "sinkhorn", "scalapack", "reduce", "dsop", "redistribute", "ot_log", "python", "alltoall",
              "points", "losses", "torch")


def launch(ranks):
    return ["mpiexec.openmpi", "-n", str(ranks), "--oversubscribe", "--bind-to", "none"]


def run(build, args, csv_path, ranks=2):
    tool = str(pathlib.Path(build) / "tools" / "conveyor")
    subprocess.run(launch(ranks) + [tool, "bench"] + args + ["--csv", csv_path], env=ENV, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(csv_path) as f:
        return list(csv.DictReader(f))


# Each measure_* returns {case: (seconds, baseline case or None)} for one run on one build.
def measure_allreduce(build, tmp):
    try:
        rows = run(build, ["allreduce", "--impls", "auto,stock", "--reps", "15"], f"{tmp}/allreduce.csv")
    except subprocess.CalledProcessError:  # builds before the stock row was named "stock"
        rows = run(build, ["allreduce", "--impls", "auto,mpi", "--reps", "15"], f"{tmp}/allreduce.csv")
    out = {}
    for r in rows:
        kind = "stock" if r["implementation"].startswith("MPI") else "auto"
        base = None if kind == "stock" else f"allreduce {r['size']} stock"
        out[f"allreduce {r['size']} {kind}"] = (float(r["median_us"]) * 1e-6, base)
    return out


def measure_sinkhorn(build, tmp):
    rows = run(build, ["sinkhorn", "--sizes", "8000", "--dtypes", "float64", "--variants", "fused", "--threads", "1",
                       "--iters", "5", "--reps", "5"], f"{tmp}/sinkhorn.csv")
    out = {}
    for r in rows:
        if r["impl"] == "fused":
            out["sinkhorn 8000^2 fused"] = (float(r["ms_median"]) * 1e-3, "sinkhorn 8000^2 read_bound stock")
        elif r["impl"] == "read_bound":
            out["sinkhorn 8000^2 read_bound stock"] = (float(r["ms_median"]) * 1e-3, None)
    # The paper's in-place variants (each a walk over A), on 2 ranks x 1 thread and
    # on 1 rank x 2 threads (their OpenMP loops).
    for ranks, threads in ((2, "1"), (1, "2")):
        rows = run(build, ["sinkhorn", "--sizes", "4000", "--dtypes", "float64", "--variants", "typical,c2r,blocked",
                           "--threads", threads, "--iters", "5", "--reps", "5"], f"{tmp}/sinkhorn_in_place.csv",
                   ranks=ranks)
        tag = f"sinkhorn 4000^2 {ranks}x{threads}"
        for r in rows:
            impl = "read_bound stock" if r["impl"] == "read_bound" else r["impl"]
            base = None if r["impl"] == "read_bound" else f"{tag} read_bound stock"
            out[f"{tag} {impl}"] = (float(r["ms_median"]) * 1e-3, base)
    return out


def measure_scalapack(build, tmp):
    rows = run(build, ["scalapack", "--sizes", "4000", "--cache", "both", "--rounds", "2", "--iterations", "8"],
               f"{tmp}/scalapack.csv")
    out = {}
    for r in rows:
        if r["routine"] == "pdgemr2d":
            case = f"pdgemr2d 4000^2 {r['plans']}"
            out[case] = (float(r["conveyor_ms"]) * 1e-3, case + " reference stock")
            out[case + " reference stock"] = (float(r["scalapack_ms"]) * 1e-3, None)
    return out


def measure_reduce(build, tmp):
    rows = run(build, ["reduce", "--min-size", "4KiB", "--max-size", "4MiB", "--reps", "9"], f"{tmp}/reduce.csv",
               ranks=1)
    out = {}
    for r in rows:
        key = f"reduce {r['case']} {r['size']}"
        if r["implementation"] == "conveyor":
            out[key] = (float(r["median_us"]) * 1e-6, key + " MPI_Reduce_local stock")
        elif r["implementation"].startswith("MPI"):
            out[key + " MPI_Reduce_local stock"] = (float(r["median_us"]) * 1e-6, None)
    # logaddexp has no MPI operation, so no MPI_Reduce_local row: compared unnormalized.
    return {k: (t, base if base in out else None) for k, (t, base) in out.items()}


def measure_dsop(build, tmp):
    rows = run(build, ["dsop", "--shapes", "2000", "--iterations", "9"], f"{tmp}/dsop.csv")
    stock = run(build, ["allreduce", "--impls", "stock", "--min-size", "32MiB", "--max-size", "32MiB", "--reps", "9"],
                f"{tmp}/dsop-stock.csv")
    out = {"dsop 2000^2 MPI_Allreduce 32 MB stock": (float(stock[0]["median_us"]) * 1e-6, None)}
    for r in rows:
        out[f"dsop 2000^2 {r['impl']}"] = (float(r["ms_median"]) * 1e-3, "dsop 2000^2 MPI_Allreduce 32 MB stock")
    return out


def measure_redistribute(build, tmp):
    rows = run(build, ["redistribute", "--iterations", "13", "--rounds", "3"], f"{tmp}/redistribute.csv", ranks=4)
    out = {}
    bound = "redistribute 5-D memcpy bound stock"
    for r in rows:
        if r["transport"].startswith("memcpy bound"):
            out[bound] = (float(r["ms_median"]) * 1e-3, None)
        else:
            out[f"redistribute 5-D {r['transport'].split(' ')[0]}"] = (float(r["ms_median"]) * 1e-3, bound)
    return out


def measure_python(build, tmp):
    path = f"{tmp}/python.csv"
    subprocess.run(launch(2) + [sys.executable, str(HERE / "python_overhead.py"), "--sizes", "8,4096,65536",
                                "--rounds", "9", "--calls", "500", "--csv", path],
                   env=dict(ENV, PYTHONPATH=str(pathlib.Path(build) / "python")), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            stock = f"python {r['bytes']} B mpi4py Allreduce stock"
            if r["impl"] == "mpi4py":
                out[stock] = (float(r["us"]) * 1e-6, None)
            elif r["impl"] in ("conveyor.Allreduce", "conveyor.allreduce"):
                out[f"python {r['bytes']} B {r['impl']}"] = (float(r["us"]) * 1e-6, stock)
    return out


def measure_ot_log(build, tmp):
    path = f"{tmp}/ot_log.csv"
    subprocess.run([sys.executable, str(HERE / "ot_vs_pot.py"), "--method", "sinkhorn_log", "--sizes", "2000",
                    "--lo", "4", "--hi", "16", "--reps", "3", "--csv", path],
                   env=dict(ENV, PYTHONPATH=str(pathlib.Path(build) / "python"), OMP_NUM_THREADS="1",
                            OPENBLAS_NUM_THREADS="1"),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            pot = next(k for k in r if k.startswith("POT "))
            stock = f"ot_log {r['n']}^2 {r['dtype']} {pot[:-3]} stock"
            out[stock] = (float(r[pot]) * 1e-3, None)
            out[f"ot_log {r['n']}^2 {r['dtype']} conveyor.ot"] = (float(r["conveyor.ot ms"]) * 1e-3, stock)
    return out


def preloaded(build, args, extra_env=None):
    """Rank 0's lines of bench/unmodified_alltoall.c run on 2 ranks with the build's libconveyor_mpi."""
    env = dict(ENV, LD_PRELOAD=str(pathlib.Path(build) / "src" / "libconveyor_mpi.so"), CONVEYOR_MPI_CALLS="all",
               **(extra_env or {}))
    cmd = ["mpiexec.openmpi", "-x", "LD_PRELOAD", "-x", "CONVEYOR_MPI_CALLS", "-n", "2",
           str(pathlib.Path(build) / "tools" / "unmodified-alltoall")] + args
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return [line.split(",") for line in out.splitlines() if line and not line.startswith("#")]


def measure_alltoall(build, tmp):
    out = {}
    for call in ("alltoall", "alltoallv"):
        for size in (64, 4096, 262144, 4194304):
            lines = preloaded(build, ["--call", call, "--min", str(size), "--max", str(size), "--samples", "9",
                                      "--beside-library", "1"])
            mine = [float(x[1]) for x in lines if x[0] == str(size)]
            library = [float(x[2]) for x in lines if x[0] == "library"]
            stock = f"{call} {size} B library stock"
            out[stock] = (statistics.median(library) * 1e-6, None)
            out[f"{call} {size} B conveyor"] = (statistics.median(mine) * 1e-6, stock)
    lines = preloaded(build, ["--call", "slab", "--n", "256", "--type", "c128", "--samples", "9"])
    bound = "slab 256^3 c128 one memcpy stock"
    out[bound] = (float(next(x[2] for x in lines if x[0] == "bound")) * 1e-6, None)
    out["slab 256^3 c128 conveyor"] = (statistics.median(float(x[1]) for x in lines if x[0] != "bound") * 1e-6,
                                       bound)
    return out


def python_script(build, args, ranks=1):
    # (the caller's PYTHONPATH after the build's: the baselines' packages, e.g. GeomLoss's)
    path = ":".join(p for p in (str(pathlib.Path(build) / "python"), str(HERE), os.environ.get("PYTHONPATH")) if p)
    env = dict(ENV, PYTHONPATH=path, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = ([] if ranks == 1 else launch(ranks)) + [sys.executable] + args
    return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout.splitlines()


def measure_points(build, tmp):
    out = {}
    for line in python_script(build, [str(HERE / "points_apply.py"), "--n", "4000", "--dims", "3,64", "--rounds",
                                      "5"]):
        cells = line.split(",")
        if len(cells) == 4 and cells[0].isdigit():
            solver = f"points 4000 d={cells[0]} solver pass"
            out[solver] = (float(cells[2]) * 1e-3, None)
            out[f"points 4000 d={cells[0]} apply_plan_points"] = (float(cells[1]) * 1e-3, solver)
    return out


def measure_losses(build, tmp):
    out = {}
    stock = "divergence 1000 d=3 float64 pot-torch stock"
    # (each build's own copy of the script: it reads the package's private modules,
    # which moved with conveyor.ot's split into a subpackage; both time the same calls)
    own = pathlib.Path(build).resolve().parent.parent / "bench" / "divergence_value_and_grad.py"
    script = own if own.exists() else HERE / "divergence_value_and_grad.py"
    tables = ["--tables", "fixed"] if "--tables" in script.read_text() else []  # (older copies: both tables)
    for line in python_script(build, [str(script)] + tables + ["--sizes", "1000", "--dims", "3", "--dtypes",
                                                               "float64", "--only", "pot-torch", "--rounds", "3"]):
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 8 and cells[1] == "fixed eps, tol" and cells[5] in ("conveyor", "pot-torch"):
            if cells[5] == "pot-torch":
                out[stock] = (float(cells[8]), None)
            else:
                out["divergence 1000 d=3 float64 conveyor"] = (float(cells[8]), stock)
    return out


def measure_torch(build, tmp):
    out = {}
    for line in python_script(build, [str(HERE / "torch_collectives.py"), "--ops", "all_reduce", "--dtypes",
                                      "float32", "--max-bytes", str(1 << 20), "--reps", "21"], ranks=2):
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 6 and cells[1] == "all_reduce" and cells[3] in ("8", "4096", "65536", "1048576"):
            stock = f"torch all_reduce {cells[3]} B mpi4py stock"
            out[stock] = (float(cells[6]) * 1e-6, None)
            out[f"torch all_reduce {cells[3]} B conveyor backend"] = (float(cells[4]) * 1e-6, stock)
    return out


def measure(build, tmp, benchmarks):
    out = {}
    for name in benchmarks:
        out.update(globals()["measure_" + name](build, tmp))
    return out


def geomean(xs):
    return math.exp(statistics.mean(math.log(x) for x in xs))


def compare_round(old_runs, new_runs):
    """{case: (new/old, normalized, A/A spread)} for one round's two runs of each build."""
    result = {}
    for case, (_, base) in old_runs[0].items():
        if not all(case in x for x in old_runs + new_runs):
            continue
        old = statistics.mean(x[case][0] for x in old_runs)
        new = statistics.mean(x[case][0] for x in new_runs)
        spread = max(max(x[case][0] for x in runs) / min(x[case][0] for x in runs) for runs in (old_runs, new_runs))
        norm = None
        if base:
            rel_old = statistics.mean(x[case][0] / x[base][0] for x in old_runs)
            rel_new = statistics.mean(x[case][0] / x[base][0] for x in new_runs)
            norm = rel_new / rel_old
        result[case] = (new / old, norm, spread)
    return result


def summarize_reduce(per_case):
    """The reduce rows: per size, geometric means over the op x dtype cases; then the worst case."""
    by_size, rows = {}, {}
    for case, v in per_case.items():
        if case.startswith("reduce ") and not case.endswith("stock"):
            by_size.setdefault(case.split(" ", 2)[2], []).append((case, v))  # ("reduce sum/int8 4 KiB")
    for size, items in by_size.items():
        rows[f"reduce {size} (geomean of {len(items)} op x dtype)"] = tuple(
            geomean([v[k] for _, v in items if v[k] is not None]) for k in range(3))
    worst = max((v for v in per_case.items() if v[0].startswith("reduce ") and not v[0].endswith("stock")),
                key=lambda kv: kv[1][1] if kv[1][1] is not None else kv[1][0], default=None)
    if worst:
        rows[f"reduce worst normalized: {worst[0][len('reduce '):]}"] = worst[1]
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--benchmarks", default="allreduce,sinkhorn,scalapack",
                    help=f"comma-separated, from {','.join(BENCHMARKS)}")
    ap.add_argument("--out")
    a = ap.parse_args()
    benchmarks = a.benchmarks.split(",")
    unknown = [b for b in benchmarks if b not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmarks {unknown}; choose from {','.join(BENCHMARKS)}")
    per_round = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            runs = {a.old: [], a.new: []}
            for build in [a.old, a.new, a.new, a.old]:
                runs[build].append(measure(build, tmp, benchmarks))
                print(f"round {r + 1}: {build} done", flush=True)
            per_round.append(compare_round(runs[a.old], runs[a.new]))
    cases = [c for c in per_round[0] if all(c in pr for pr in per_round)]
    medians = {c: tuple(statistics.median(pr[c][k] for pr in per_round) if per_round[0][c][k] is not None else None
                        for k in range(3)) for c in cases}
    reduce_rows = summarize_reduce(medians)
    shown = {c: v for c, v in medians.items() if not c.startswith("reduce ")}
    shown.update(reduce_rows)
    lines = [f"new = {a.new}, old = {a.old}; {a.rounds} rounds (old, new, new, old); "
             "new / old = median over rounds of new time / old time (< 1: new faster); "
             "normalized: the same over each run's baseline (\"stock\" rows: the same MPI or reference code in "
             "both builds); A/A: the larger of old/old and new/new within a round (the same code's spread).", "",
             "| case | new / old | normalized by the same run's baseline | A/A spread |", "|---|---|---|---|"]
    for case, (ratio, norm, spread) in shown.items():
        norm_text = f"{norm:.3f}" if norm is not None else "(baseline)"
        lines.append(f"| {case} | {ratio:.3f} | {norm_text} | {spread:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        pathlib.Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
