#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's own distributed tests (torch.testing._internal.distributed.
distributed_test.DistributedTest._DistTestBase, from the installed torch) on
the "conveyor" backend, every rank a process of this mpiexec job.

PyTorch runs them by spawning WORLD_SIZE processes per test (its
test_distributed_spawn.py, not installed); the conveyor backend serves ranks
of an MPI job, so here every rank of the job runs each test in turn: it
initialises the default group on "conveyor" (a file store of its own per
test), passes PyTorch's file barrier, runs the test method, and the verdicts
of all ranks are gathered: a test passes if it passes on every rank.

The backend is declared to PyTorch's test suite the way it declares its own
(DistTestCases: "ddp", "subgroup" and "plugin" features; no GPU), before the
suite is imported, since its decorators read them at import. A test the suite
itself skips (GPU, NCCL, another backend, a world size) is counted as skipped
with its reason. Tests that do not apply to a CPU backend served by MPI are
listed in NOT_RUN with why; every other test runs.

usage: mpiexec -n N python3 torch_distributed_tests.py [-k substring[,substring...]] [--list] [--all]
"""
import argparse
import collections
import faulthandler
import os
import re
import sys
import tempfile
import time
import traceback
import unittest

from mpi4py import MPI

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()

# Tests of this suite that do not apply, and why (matched as prefixes of test names;
# --all runs them). Every other test runs, or is skipped by the suite itself (CUDA,
# NCCL, GPUs, a world size: its reason printed).
NOT_RUN = {
    # (gated by name: the copy read as Gloo reaches them, where torch's own
    # distributed_c10d.monitored_barrier then refuses any process group but Gloo's)
    "test_monitored_barrier": "torch's monitored_barrier serves Gloo's process groups only",
}

# Not run on torch 2 (2.15), why: its holder of a Python backend's Work
# (PyWorkHolder) forwards wait() and the future, not sourceRank() nor isCompleted()
# (recv from any source raises on the receiver after the bytes arrived, and the
# others wait; is_completed() stays False); and it names every backend it does not
# know "custom" in DDP's logging data.
NOT_RUN_TORCH2 = {
    "test_send_recv_any_source": "torch 2 does not give recv the sender a Python backend's Work knows",
    "test_isend": "torch 2's Work of a Python backend answers is_completed() False after wait()",
    "test_irecv": "torch 2's Work of a Python backend answers is_completed() False after wait()",
    "test_ddp_logging_data_cpu": "torch 2's DDP logs a backend it does not know as 'custom'",
}

# The suite's copies that run the tests it gates by a backend's name (suite_as).
AS_BACKENDS = ("gloo", "mpi")


def gated_by_name(reason):
    """Whether a skip reason is a backend's name rather than a missing feature
    (CUDA, GPUs, NCCL's own collectives, a world size)."""
    reason = reason.lower()
    # (torch 1.13 says "requires backend to be one of", torch 2 "requires backend <name> to be one of")
    return (re.search(r"requires backend (\S+ )?to be one of", reason) is not None
            or reason.startswith("only mpi supports")
            or "gloo batch send recv" in reason or "get_future is only supported" in reason
            or "only nccl & gloo backend support distributeddataparallel" in reason)


SKIP_EXIT_CODES = None  # (the suite's sys.exit codes that mean "skipped": set after import)


def setup_suite(tmp):
    os.environ.update(BACKEND="conveyor", WORLD_SIZE=str(SIZE), TEMP_DIR=tmp, MASTER_ADDR="localhost",
                      MASTER_PORT="29500", INIT_METHOD="file://" + os.path.join(tmp, "init"))
    if RANK == 0:
        for sub in ("barrier", "test_dir", "init_dir"):
            os.makedirs(os.path.join(tmp, sub), exist_ok=True)
    COMM.Barrier()
    import conveyor.torch  # noqa: F401  (registers the backend)
    from torch.testing._internal import common_distributed
    for feature in ("ddp", "subgroup", "plugin"):
        common_distributed.DistTestCases.backend_feature[feature].add("conveyor")
    global SKIP_EXIT_CODES
    SKIP_EXIT_CODES = {v.exit_code: v.message for v in common_distributed.TEST_SKIPS.values()}
    from torch.testing._internal.distributed import distributed_test
    return distributed_test


def suite_as(backend):
    """Another copy of the suite, its decorators and branches read as if BACKEND
    were `backend` (its process groups are still "conveyor"'s): for the tests
    the suite gates by a backend's name rather than by a feature."""
    import importlib.util
    from torch.testing._internal.distributed import distributed_test
    spec = importlib.util.spec_from_file_location(f"distributed_test_as_{backend}", distributed_test.__file__)
    copy = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = copy  # (its classes pickle by module name: all_gather_object's tests)
    os.environ["BACKEND"] = backend
    try:
        spec.loader.exec_module(copy)
    finally:
        os.environ["BACKEND"] = "conveyor"
    return copy


def case_class(distributed_test):
    from torch.testing._internal.common_utils import TestCase  # (PyTorch's: assertEqual on tensors)

    class Case(distributed_test.DistributedTest._DistTestBase, TestCase):
        rank = RANK
        suite = distributed_test

        @property
        def world_size(self):  # (the suite's: a string)
            return os.environ["WORLD_SIZE"]

        @property
        def init_method(self):
            return "file://" + self.file_name
    return Case


def run_one(Case, name, tmp, k):
    """This rank's verdict on one test: ("passed" | "skipped" | "failed", detail)."""
    import torch.distributed as dist
    Barrier = Case.suite.Barrier
    case = Case(name)
    case.file_name = os.path.join(tmp, f"store{k}")
    method = getattr(case, name)
    if getattr(method, "__unittest_skip__", False):
        return "skipped", method.__unittest_skip_why__
    Barrier.barrier_id = 0
    COMM.Barrier()
    if RANK == 0:
        for f in os.listdir(os.path.join(tmp, "barrier")):
            os.unlink(os.path.join(tmp, "barrier", f))
    COMM.Barrier()
    verdict = ("passed", "")
    dist.init_process_group("conveyor", init_method=case.init_method, world_size=SIZE, rank=RANK)
    try:
        case.setUp()
        method()
    except unittest.SkipTest as e:
        verdict = ("skipped", str(e))
    except SystemExit as e:
        verdict = ("skipped", SKIP_EXIT_CODES[e.code]) if e.code in SKIP_EXIT_CODES else ("failed", f"exit {e.code}")
    except Exception:
        verdict = ("failed", traceback.format_exc(limit=6))
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            pass
    return verdict


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-k", default="", help="run the tests whose names contain this")
    p.add_argument("--list", action="store_true")
    p.add_argument("--all", action="store_true", help="run the NOT_RUN tests too")
    args = p.parse_args()
    tmp = COMM.bcast(tempfile.mkdtemp(prefix="conveyor-torch-tests-") if RANK == 0 else None)
    distributed_test = setup_suite(tmp)
    import torch
    not_run = dict(NOT_RUN, **(NOT_RUN_TORCH2 if int(torch.__version__.split(".")[0]) >= 2 else {}))
    Case = case_class(distributed_test)
    # (as gloo first: Gloo is the CPU backend the suite tests most; then as mpi, for all-to-all)
    copies = {name: case_class(suite_as(name)) for name in AS_BACKENDS}
    names = sorted(n for n in dir(Case) if n.startswith("test_") and any(k in n for k in args.k.split(",")))
    counts, lines = collections.Counter(), []
    t0 = time.time()
    # (CONVEYOR_TORCH_TESTS_DUMP=s: a test that runs past s seconds, on some rank
    # waiting for others that left it, ends the job with every rank's stack)
    limit = int(os.environ.get("CONVEYOR_TORCH_TESTS_DUMP", "0"))
    for k, name in enumerate(names):
        if limit:
            faulthandler.dump_traceback_later(limit, exit=True)
        reason = None if args.all else next((why for prefix, why in not_run.items() if name.startswith(prefix)), None)
        if reason is not None:
            verdict = ("not run", reason)
        elif args.list:
            verdict = ("listed", "")
        else:
            verdict = run_one(Case, name, tmp, k)
            for backend, copy in copies.items():  # (a test gated by a backend's name: run as that backend's)
                if verdict[0] == "skipped" and gated_by_name(verdict[1]):
                    verdict = run_one(copy, name, tmp, k)
                    verdict = (verdict[0] + f" as {backend}" if verdict[0] != "skipped" else verdict[0],
                               verdict[1])
        everyone = COMM.gather(verdict, root=0)
        if RANK == 0:
            kinds = {v[0] for v in everyone}
            kind = next((k for k in kinds if k.startswith("failed")), None) or \
                ("skipped" if "skipped" in kinds else everyone[0][0])
            counts[kind] += 1
            detail = next((v[1] for v in everyone if v[0] == kind), "")
            if not kind.startswith("passed") or args.list:
                lines.append(f"  {kind} {name}: {detail.strip().splitlines()[-1] if detail.strip() else ''}")
                if kind.startswith("failed"):
                    lines.append("\n".join("      " + s for s in detail.splitlines()))
            print(f"{kind:8s} {name} ({time.time() - t0:.0f} s)", flush=True)
    faulthandler.cancel_dump_traceback_later()
    if RANK == 0:
        print(f"PyTorch's distributed tests (torch {torch.__version__}) on conveyor, {SIZE} ranks: " +
              ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
        print("\n".join(lines))
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    failed = COMM.bcast(sum(v for k, v in counts.items() if k.startswith("failed")) if RANK == 0 else None)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
