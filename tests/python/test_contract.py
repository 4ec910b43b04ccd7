# SPDX-License-Identifier: BSD-3-Clause
"""The collective contract from Python, under mpiexec: each bad argument is given
to ONE rank only, each rank in turn. Every rank must raise, within seconds, the
same exception type with the same message (naming the bad rank when only that
rank could see the problem); then the same call with good arguments on the same
communicator must work. C++ and C: tests/mpi/test_contract.cpp."""
import faulthandler

import numpy as np
import pytest
from mpi4py import MPI

import conveyor

SECONDS_PER_CASE = 20


@pytest.fixture(scope="module")
def comm():
    """A duplicate of COMM_WORLD: Conveyor keeps state per communicator (its
    private duplicate, node layouts, each engine's measured choices), and the bad
    calls get one of their own."""
    dup = MPI.COMM_WORLD.Dup()
    yield dup
    dup.Free()


def _allreduce(comm, bad, mutate):
    args = dict(send=np.ones(32, np.float32), out=np.empty(32, np.float32), op="sum", algorithm="auto",
                deterministic=False)
    if bad:
        mutate(args)
    out = conveyor.allreduce(args["send"], op=args["op"], comm=comm, out=args["out"], algorithm=args["algorithm"],
                             deterministic=args["deterministic"], validate=True)
    if not bad:
        assert out[0] == comm.size


def _scale(comm, bad, mutate):
    rows, cols = 3, 5
    args = dict(A=np.arange(1.0, 1.0 + rows * cols).reshape(rows, cols), r=np.full(rows, 1.0 / (rows * comm.size)),
                c=np.full(cols, 1.0 / cols), variant="fused", tol=1e-6, max_iter=50, in_place=False)
    if bad:
        mutate(args)
    conveyor.sinkhorn_scale(args["A"], args["r"], args["c"], comm=comm, in_place=args["in_place"],
                            variant=args["variant"], tol=args["tol"], max_iter=args["max_iter"])


def _transport(comm, bad, mutate):
    rows, cols = 3, 4
    args = dict(C=np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) / 10, a=np.full(rows, 1.0 / (rows * comm.size)),
                b=np.full(cols, 1.0 / cols), eps=0.5, log_domain=False, plan=True)
    if bad:
        mutate(args)
    conveyor.sinkhorn_transport(args["C"], args["a"], args["b"], args["eps"], comm=comm, max_iter=50,
                                log_domain=args["log_domain"], plan=args["plan"])


def _outer(comm, bad, mutate):
    args = dict(a=np.ones(6), b=np.ones(4), algorithm="auto", out=None)
    if bad:
        mutate(args)
    conveyor.outer_sum(args["a"], args["b"], comm=comm, algorithm=args["algorithm"], out=args["out"])


def _cartesian(comm, bad, mutate):
    args = dict(shape=(4 * comm.size, 3), grid=(comm.size, 1), local=np.zeros((4, 3)))
    if bad:
        mutate(args)
    conveyor.Layout.cartesian(args["shape"], args["grid"], args["local"], comm=comm)


def _block_cyclic(comm, bad, mutate):
    M, N, mb, nb = 7, 5, 2, 2
    want = (sum(1 for i in range(M) if (i // mb) % comm.size == comm.rank), N)  # a (ranks x 1) grid
    args = dict(M=M, N=N, mb=mb, nb=nb, local=np.zeros(want, order="F"))
    if bad:
        mutate(args)
    conveyor.Layout.block_cyclic(args["M"], args["N"], args["mb"], args["nb"], comm.size, 1, args["local"], comm=comm)


def _plan(comm, bad, mutate):
    args = dict(perm=(1, 0), alpha=1.0, transport="auto", relabel="none")
    if bad:
        mutate(args)
    src = conveyor.Layout.cartesian((4 * comm.size, 3), (comm.size, 1), np.ones((4, 3)), comm=comm)
    dst = conveyor.Layout.cartesian((3, 4 * comm.size), (1, comm.size), np.zeros((3, 4)), comm=comm)
    conveyor.Plan(src, dst, perm=args["perm"], alpha=args["alpha"], transport=args["transport"],
                  relabel=args["relabel"]).execute()


def _set(key, value):
    def mutate(args):
        args[key] = value() if callable(value) else value
    return mutate


# (name, call, mutate, local): local = only the bad rank can see the problem.
CASES = [
    ("allreduce: send of strings", _allreduce, _set("send", lambda: np.array(["x"] * 32)), True),
    ("allreduce: out of another dtype", _allreduce, _set("out", lambda: np.empty(32, np.float64)), True),
    ("allreduce: out too small", _allreduce, _set("out", lambda: np.empty(31, np.float32)), True),
    ("allreduce: out not contiguous", _allreduce, _set("out", lambda: np.empty(64, np.float32)[::2]), True),
    ("allreduce: out read-only", _allreduce, _set("out", lambda: np.frombuffer(bytes(128), np.float32)), True),
    ("allreduce: out is a list", _allreduce, _set("out", lambda: [0.0] * 32), True),
    ("allreduce: unknown op name", _allreduce, _set("op", "average"), True),
    ("allreduce: op is not a name", _allreduce, _set("op", 5), True),
    ("allreduce: band on floats", _allreduce, _set("op", "band"), True),
    ("allreduce: unknown algorithm", _allreduce, _set("algorithm", "butterfly"), True),
    ("allreduce: deterministic is a string", _allreduce, _set("deterministic", "yes"), True),
    ("allreduce: different dtype", _allreduce,
     lambda a: a.update(send=np.ones(32, np.float64), out=np.empty(32, np.float64)), False),
    ("allreduce: different size", _allreduce,
     lambda a: a.update(send=np.ones(30, np.float32), out=np.empty(30, np.float32)), False),
    ("allreduce: different op", _allreduce, _set("op", "max"), False),
    ("allreduce: different algorithm", _allreduce, _set("algorithm", "ring"), False),
    ("sinkhorn_scale: 1-D A", _scale, _set("A", lambda: np.ones(15)), True),
    ("sinkhorn_scale: integer A", _scale, _set("A", lambda: np.ones((3, 5), np.int64)), True),
    ("sinkhorn_scale: r of the wrong length", _scale, _set("r", lambda: np.ones(4)), True),
    ("sinkhorn_scale: c of the wrong length", _scale, _set("c", lambda: np.ones(6)), True),
    ("sinkhorn_scale: unknown variant", _scale, _set("variant", "fastest"), True),
    ("sinkhorn_scale: tol is a string", _scale, _set("tol", "small"), True),
    ("sinkhorn_scale: max_iter 0", _scale, _set("max_iter", 0), True),
    ("sinkhorn_scale: in place on a non-contiguous A", _scale,
     lambda a: a.update(A=np.ones((3, 10))[:, ::2], in_place=True), True),
    ("sinkhorn_scale: NaN in A", _scale, lambda a: a["A"].__setitem__((1, 1), np.nan), True),
    ("sinkhorn_scale: float32 on one rank", _scale, lambda a: a.update(A=a["A"].astype(np.float32)), False),
    ("sinkhorn_scale: different column count", _scale, lambda a: a.update(A=a["A"][:, :4].copy(), c=np.full(4, 0.25)),
     False),
    ("sinkhorn_scale: different tol", _scale, _set("tol", 1e-7), False),
    ("sinkhorn_transport: eps is a string", _transport, _set("eps", "tiny"), True),
    ("sinkhorn_transport: negative eps", _transport, _set("eps", -1.0), True),
    ("sinkhorn_transport: b of the wrong length", _transport, _set("b", lambda: np.ones(3)), True),
    ("sinkhorn_transport: plan is not a bool", _transport, _set("plan", "yes"), True),
    ("sinkhorn_transport: infinite cost", _transport, lambda a: a["C"].__setitem__((0, 0), np.inf), True),
    ("sinkhorn_transport: different log_domain", _transport, _set("log_domain", True), False),
    ("sinkhorn_transport: different eps", _transport, _set("eps", 0.25), False),
    ("outer_sum: integer a", _outer, _set("a", lambda: np.ones(6, np.int32)), True),
    ("outer_sum: out of another dtype", _outer, _set("out", lambda: np.empty((6, 4), np.float32)), True),
    ("outer_sum: out too small", _outer, _set("out", lambda: np.empty((5, 4))), True),
    ("outer_sum: unknown algorithm", _outer, _set("algorithm", "telepathy"), True),
    ("outer_sum: different N", _outer, _set("a", lambda: np.ones(5)), False),
    ("Layout.cartesian: wrong local shape", _cartesian, _set("local", lambda: np.zeros((99, 3))), True),
    ("Layout.cartesian: no local array", _cartesian, _set("local", None), True),
    ("Layout.cartesian: grid of strings", _cartesian, _set("grid", ("a", "b")), True),
    ("Layout.cartesian: local is a list", _cartesian, _set("local", [[0.0] * 3] * 4), True),
    ("Layout.cartesian: different shape", _cartesian, lambda a: a.update(shape=a["shape"] + (1,)), True),
    ("Layout.cartesian: float32 local on one rank", _cartesian, _set("local", lambda: np.zeros((4, 3), np.float32)),
     False),
    ("Layout.block_cyclic: wrong local shape", _block_cyclic, _set("local", lambda: np.zeros((1, 1), order="F")), True),
    ("Layout.block_cyclic: block size 0", _block_cyclic, _set("mb", 0), True),
    ("Layout.block_cyclic: row-major local array", _block_cyclic, lambda a: a.update(local=np.ascontiguousarray(a["local"]))
     if a["local"].shape[0] > 1 and a["local"].shape[1] > 1 else a.update(local=np.zeros((1, 1))), True),
    ("Plan: unknown transport", _plan, _set("transport", "carrier pigeon"), True),
    ("Plan: unknown relabeling", _plan, _set("relabel", "random"), True),
    ("Plan: perm not a permutation", _plan, _set("perm", (0, 0)), True),
    ("Plan: alpha is a string", _plan, _set("alpha", "two"), True),
    ("Plan: different alpha", _plan, _set("alpha", 2.0), False),
    ("Plan: different transport", _plan, _set("transport", "packed"), False),
]


@pytest.mark.parametrize("name,call,mutate,local", CASES, ids=[c[0] for c in CASES])
def test_bad_argument_on_one_rank(comm, name, call, mutate, local, bad_rank):
    if comm.size == 1 and not local:
        pytest.skip("one rank cannot disagree with itself")
    faulthandler.dump_traceback_later(SECONDS_PER_CASE, exit=True)  # a hang kills the job: a failure
    try:
        error = None
        try:
            call(comm, comm.rank == bad_rank, mutate)
        except (ValueError, TypeError, NotImplementedError, RuntimeError) as e:
            error = f"{type(e).__name__}: {e}"
        everyone = comm.allgather(error)
        assert error is not None, f"rank {comm.rank} did not raise"
        assert everyone == [error] * comm.size, everyone
        assert "conveyor: conveyor" not in error
        if local and comm.size > 1:
            assert f"rank {bad_rank}:" in error, error
        call(comm, False, mutate)  # the communicator still works
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_sweep_size():
    assert len(CASES) >= 50  # with the C++ and C sweep: well over 100 cases
