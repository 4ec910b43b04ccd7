# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.ot.empirical_sinkhorn / empirical_sinkhorn2 (the point-cloud solver)
against POT's lazy solver (the POT installed beside it): the same potentials,
iteration counts, errors and losses; then the problem spread over ranks with
uneven shares, and bad input on one rank."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import conveyor
import conveyor.ot

ot = pytest.importorskip("ot")


def clouds(n=60, m=45, d=3, seed=0, dtype=np.float64):
    rng = np.random.RandomState(seed)
    X, Y = rng.rand(n, d), rng.rand(m, d) + 0.25
    a, b = rng.rand(n) + 0.1, rng.rand(m) + 0.1
    return X.astype(dtype), Y.astype(dtype), (a / a.sum()).astype(dtype), (b / b.sum()).astype(dtype)


def uneven(comm, total, empty_rank):
    """This rank's slice of `total` points: rank `empty_rank` gets none (with
    several ranks), the others shares growing with their rank."""
    weights = [0 if (q == empty_rank and comm.size > 1) else q + 1 for q in range(comm.size)]
    bounds = np.concatenate([[0], np.cumsum(weights)]) * total // sum(weights)
    return slice(int(bounds[comm.rank]), int(bounds[comm.rank + 1]))


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
@pytest.mark.parametrize("reg, numIterMax", [(0.1, 10000), (0.02, 10000), (0.02, 25)])
def test_potentials_and_log_equal_pots_lazy_solver(metric, reg, numIterMax):
    X, Y, a, b = clouds()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f, g, log = conveyor.ot.empirical_sinkhorn(X, Y, reg, a, b, metric=metric, numIterMax=numIterMax,
                                                   isLazy=True, log=True)
        pf, pg, plog = ot.bregman.empirical_sinkhorn(X, Y, reg, a, b, metric=metric, numIterMax=numIterMax,
                                                     isLazy=True, log=True)
    np.testing.assert_allclose(f, pf, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(g, pg, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(log["err"], [float(e) for e in plog["err"]], rtol=1e-6, atol=1e-15)
    if "niter" in plog:  # (POT >= 0.9)
        assert log["niter"] == plog["niter"]
    loss = conveyor.ot.empirical_sinkhorn2(X, Y, reg, a, b, metric=metric, numIterMax=numIterMax, isLazy=True,
                                           warn=False)
    pot_loss = ot.bregman.empirical_sinkhorn2(X, Y, reg, a, b, metric=metric, numIterMax=numIterMax, isLazy=True,
                                              warn=False)
    assert float(loss) == pytest.approx(float(pot_loss), rel=1e-10)


def test_the_plan_has_the_marginals_and_pots_dense_plan():
    X, Y, a, b = clouds(seed=1)
    P, log = conveyor.ot.empirical_sinkhorn(X, Y, 0.05, a, b, stopThr=1e-12, log=True)
    np.testing.assert_allclose(P.sum(axis=1), a, atol=1e-12)
    np.testing.assert_allclose(P.sum(axis=0), b, atol=1e-10)
    P_pot = ot.sinkhorn(a, b, ot.dist(X, Y), 0.05, method="sinkhorn_log", stopThr=1e-12, numItermax=10000)
    np.testing.assert_allclose(P, P_pot, atol=1e-9 * P.max())
    np.testing.assert_allclose(log["u"], np.exp(np.log(log["u"])))


def test_float32_stays_float32_and_uniform_weights_by_default():
    X, Y, _, _ = clouds(seed=2, dtype=np.float32)
    f, g = conveyor.ot.empirical_sinkhorn(X, Y, 0.1, isLazy=True, stopThr=1e-6)
    assert f.dtype == np.float32 and g.dtype == np.float32
    pf, pg = ot.bregman.empirical_sinkhorn(X.astype(np.float64), Y.astype(np.float64), 0.1, isLazy=True)
    np.testing.assert_allclose(f, pf, atol=1e-4)
    loss = conveyor.ot.empirical_sinkhorn2(X, Y, 0.1, stopThr=1e-6)
    assert loss.dtype == np.float32


def test_warmstart_from_a_solution_stops_at_the_first_test():
    X, Y, a, b = clouds(seed=3)
    f, g, log = conveyor.ot.empirical_sinkhorn(X, Y, 0.1, a, b, isLazy=True, log=True)
    f2, g2, log2 = conveyor.ot.empirical_sinkhorn(X, Y, 0.1, a, b, isLazy=True, log=True, warmstart=(f, g))
    assert log2["niter"] == 9  # the first test, after iteration 10
    np.testing.assert_allclose(f2, f, atol=1e-9)


def test_not_converging_warns_and_other_metrics_are_refused():
    X, Y, a, b = clouds(seed=4)
    with pytest.warns(UserWarning, match="did not converge"):
        conveyor.ot.empirical_sinkhorn(X, Y, 0.01, a, b, numIterMax=5, isLazy=True)
    with pytest.raises(NotImplementedError, match="cityblock"):
        conveyor.ot.empirical_sinkhorn(X, Y, 0.1, metric="cityblock")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_shares_over_ranks_give_the_single_process_potentials(comm, dtype):
    X, Y, a, b = clouds(53, 41, 2, seed=5, dtype=dtype)
    sx, sy = uneven(comm, 53, 0), uneven(comm, 41, comm.size - 1)
    stop = 1e-9 if dtype == np.float64 else 1e-5  # (float32 cannot reach 1e-9)
    f, g, log = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], isLazy=True, log=True, comm=comm,
                                               stopThr=stop)
    f1, g1, log1 = conveyor.ot.empirical_sinkhorn(X, Y, 0.05, a, b, isLazy=True, log=True, stopThr=stop)
    assert log["niter"] == log1["niter"]
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(f, f1[sx], atol=tol)
    np.testing.assert_allclose(g, g1[sy], atol=tol)
    # The plan: this rank's rows against every target point; the loss: the total.
    P = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], comm=comm, stopThr=stop)
    assert P.shape == (sx.stop - sx.start, 41)
    np.testing.assert_allclose(P, conveyor.ot.empirical_sinkhorn(X, Y, 0.05, a, b, stopThr=stop)[sx], atol=tol * 1e-2)
    W = conveyor.ot.empirical_sinkhorn2(X[sx], Y[sy], 0.05, a[sx], b[sy], comm=comm, stopThr=stop)
    assert float(W) == pytest.approx(float(conveyor.ot.empirical_sinkhorn2(X, Y, 0.05, a, b, stopThr=stop)), rel=tol)
    # Uniform weights (None) are uniform over every rank's points.
    fu, _ = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, isLazy=True, comm=comm, stopThr=stop)
    np.testing.assert_allclose(fu, conveyor.ot.empirical_sinkhorn(X, Y, 0.05, isLazy=True, stopThr=stop)[0][sx], atol=tol)


def test_every_exchange_gives_the_same_bits_over_ranks(comm):
    X, Y, a, b = clouds(47, 38, 3, seed=6)
    sx, sy = uneven(comm, 47, 0), uneven(comm, 38, comm.size - 1)
    table = [name for name, _ in conveyor._conveyor.points_exchanges()]  # every exchange of the table
    assert len(table) == len(set(table)) >= 2 and "auto" not in table
    runs = {e: conveyor.sinkhorn_points(X[sx], Y[sy], 0.05, a[sx], b[sy], comm=comm, tol=0.0, max_iter=15,
                                        exchange=e) for e in table + ["auto"]}
    first = runs[table[0]]
    for e, run in runs.items():
        assert np.array_equal(run.log_u, first.log_u) and np.array_equal(run.log_v, first.log_v), e
        assert run.cost == first.cost, e
        # Each side reports how it ran: the exchange asked for, or auto's choice (the same on every rank).
        for got in (run.exchange_x, run.exchange_y):
            assert got == e if e != "auto" else got in table
            assert comm.allgather(got) == [got] * comm.size
    f, _ = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], isLazy=True, comm=comm, exchange="gather")
    f_ring, _ = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], isLazy=True, comm=comm, exchange="ring")
    assert np.array_equal(f, f_ring)
    with pytest.raises(ValueError, match="exchange"):
        conveyor.sinkhorn_points(X[sx], Y[sy], 0.05, comm=comm, exchange="broadcast")


def test_eps_scaling_saves_iterations_and_reaches_the_same_plan_over_ranks(comm):
    X, Y, a, b = clouds(50, 40, 2, seed=8)
    sx, sy = uneven(comm, 50, 0), uneven(comm, 40, comm.size - 1)
    reg = 3e-3
    kw = dict(isLazy=True, log=True, comm=comm, stopThr=1e-10, numIterMax=100000)
    f0, g0, log0 = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], reg, a[sx], b[sy], **kw)
    f1, g1, log1 = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], reg, a[sx], b[sy], eps_scaling=0.5, **kw)
    r = conveyor.sinkhorn_points(X[sx], Y[sy], reg, a[sx], b[sy], comm=comm, eps_scaling=0.5, max_iter=100000,
                                 norm="l1", check_every=10, tol=1e-10)
    assert r.status == "converged" and 9 <= r.annealing_steps == comm.bcast(r.annealing_steps) <= 12
    assert log1["niter"] + r.annealing_steps < log0["niter"], (log0["niter"], log1["niter"])
    # The same plan: the potentials up to a constant that moves between f and g.
    P0 = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], reg, a[sx], b[sy], comm=comm, stopThr=1e-10, numIterMax=100000)
    P1 = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], reg, a[sx], b[sy], comm=comm, stopThr=1e-10, numIterMax=100000,
                                        eps_scaling=0.5)
    np.testing.assert_allclose(P1, P0, atol=1e-8 * comm.allreduce(P0.max(initial=0), op=MPI.MAX))
    with pytest.raises(ValueError, match="eps_scaling must be 0"):
        conveyor.sinkhorn_points(X[sx], Y[sy], reg, comm=comm, eps_scaling=1.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_the_plan_applied_mapped_and_in_rows_equals_the_formed_plan_over_ranks(comm, dtype, metric):
    X, Y, a, b = clouds(47, 35, 3, seed=9, dtype=dtype)
    sx, sy = uneven(comm, 47, 0), uneven(comm, 35, comm.size - 1)
    stop = 1e-9 if dtype == np.float64 else 1e-5  # (float32 cannot reach 1e-9)
    f, g = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], metric=metric, isLazy=True, comm=comm,
                                          stopThr=stop)
    f_all, g_all = np.concatenate(comm.allgather(f)), np.concatenate(comm.allgather(g))
    C = ((X[:, None, :].astype(np.float64) - Y[None, :, :]) ** 2).sum(axis=2)
    P = np.exp(f_all[:, None] + g_all[None, :] - (np.sqrt(C) if metric == "euclidean" else C) / 0.05)
    tol = 1e-12 if dtype == np.float64 else 1e-4
    V = np.random.RandomState(3).rand(35, 2).astype(dtype)
    PV = conveyor.ot.empirical_plan_apply(X[sx], Y[sy], 0.05, f, g, V[sy], metric=metric, comm=comm)
    np.testing.assert_allclose(PV, (P @ V)[sx], atol=tol * np.abs(P @ V).max())
    W = np.random.RandomState(4).rand(47).astype(dtype)  # a vector: one value per point
    PtW = conveyor.ot.empirical_plan_apply(X[sx], Y[sy], 0.05, f, g, W[sx], metric=metric, transpose=True, comm=comm)
    np.testing.assert_allclose(PtW[:, 0], (P.T @ W)[sy], atol=tol * np.abs(P.T @ W).max())
    mapped = conveyor.ot.empirical_barycentric_mapping(X[sx], Y[sy], 0.05, f, g, metric=metric, comm=comm)
    np.testing.assert_allclose(mapped, ((P @ Y) / P.sum(axis=1, keepdims=True))[sx], atol=tol * 10)
    rows = conveyor.ot.empirical_plan_rows(X[sx], Y[sy], 0.05, f, g, rows=slice(1, 3), metric=metric, comm=comm)
    np.testing.assert_allclose(rows, P[sx][1:3], atol=tol * P.max())
    assert PV.dtype == dtype and mapped.dtype == dtype


def test_applying_the_plan_with_a_bad_argument_on_one_rank_raises_on_every_rank(comm, bad_rank):
    X, Y, a, b = clouds(4 * comm.size, 3 * comm.size, seed=10)
    sx, sy = slice(4 * comm.rank, 4 * comm.rank + 4), slice(3 * comm.rank, 3 * comm.rank + 3)
    f, g = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.1, a[sx], b[sy], isLazy=True, comm=comm)
    V = np.ones((3, 2))
    nan_V = V.copy()
    nan_V[1, 0] = np.nan
    cases = [(dict(V=nan_V), "values must be finite"), (dict(V=np.ones((2, 2))), "V must be 2-D with a row per Y"),
             (dict(f=np.full(4, np.inf)), "potentials must be finite or -inf"), (dict(reg=-1.0), "eps must be")]
    if comm.size > 1:
        cases.append((dict(V=np.ones((3, 3))), "different value counts"))
    for override, message in cases:
        args = dict(V=V, f=f, reg=0.1)
        if comm.rank == bad_rank:
            args.update(override)
        with pytest.raises(ValueError, match=message):
            conveyor.ot.empirical_plan_apply(X[sx], Y[sy], args["reg"], args["f"], g, args["V"], comm=comm)
    out = conveyor.ot.empirical_plan_apply(X[sx], Y[sy], 0.1, f, g, V, comm=comm)
    assert out.shape == (4, 2)


@pytest.mark.parametrize("dense", [False, True], ids=["lazy", "dense"])
def test_a_bad_argument_on_one_rank_raises_on_every_rank(comm, bad_rank, dense):
    X, Y, a, b = clouds(4 * comm.size, 3 * comm.size, seed=6)
    sx, sy = slice(4 * comm.rank, 4 * comm.rank + 4), slice(3 * comm.rank, 3 * comm.rank + 3)
    nan_X = X[sx].copy()
    nan_X[0, 1] = np.nan
    cases = [  # (what the bad rank passes, the error every rank must raise)
        (dict(X=nan_X), "points must be finite"),
        (dict(X=X[sx, :2], Y=Y[sy, :2]), "different dims" if comm.size > 1 else None),
        (dict(Y=Y[sy, :2]), "Y has shape"),
        (dict(a=-a[sx]), "marginals must be finite and >= 0"),
        (dict(reg=0.0), "eps must be finite and > 0"),
        (dict(metric="cityblock"), f"rank {bad_rank}"),
    ]
    for override, message in cases:
        if message is None:
            continue  # one rank cannot disagree with itself
        args = dict(X=X[sx], Y=Y[sy], a=a[sx], reg=0.1, metric="sqeuclidean")
        if comm.rank == bad_rank:
            args.update(override)
        with pytest.raises((ValueError, NotImplementedError), match=message):
            conveyor.ot.empirical_sinkhorn(args["X"], args["Y"], args["reg"], args["a"], b[sy], metric=args["metric"],
                                           isLazy=True, comm=comm, dense=dense)
    # The communicator is still usable after the bad calls.
    f, g = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.1, a[sx], b[sy], isLazy=True, comm=comm, dense=dense)
    assert f.shape == (4,) and g.shape == (3,)


def test_divergence_equals_pots_and_vanishes_between_equal_clouds(comm):
    X, Y, a, b = clouds(40, 35, 2, seed=7)
    mine, log = conveyor.ot.empirical_sinkhorn_divergence(X, Y, 0.1, a, b, log=True)
    pot = ot.bregman.empirical_sinkhorn_divergence(X, Y, 0.1, a, b)
    assert float(mine) == pytest.approx(float(pot), rel=1e-8)
    assert float(mine) == pytest.approx(float(log["sinkhorn_loss_ab"] - (log["sinkhorn_loss_a"]
                                                                         + log["sinkhorn_loss_b"]) / 2), rel=1e-12)
    assert float(conveyor.ot.empirical_sinkhorn_divergence(X, X, 0.1, a, a)) == pytest.approx(0.0, abs=1e-10)
    # Over ranks: the total.
    sx, sy = uneven(comm, 40, 0), uneven(comm, 35, comm.size - 1)
    spread = conveyor.ot.empirical_sinkhorn_divergence(X[sx], Y[sy], 0.1, a[sx], b[sy], comm=comm)
    assert float(spread) == pytest.approx(float(mine), rel=1e-9)


# ---------------------------------------------------------------------------
# The cost matrix formed (isLazy=False, below conveyor.ot._points_dense.DENSE_BYTES):
# the dense engine runs the point-cloud solver's iteration on it.

def plan_of(f, g, X, Y, reg, metric):
    C = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    return np.exp(f[:, None] + g[None, :] - (np.sqrt(C) if metric == "euclidean" else C) / reg)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_the_formed_matrix_gives_the_lazy_solvers_results_over_ranks(comm, dtype, metric, edge_rank):
    """dense=True against the point-cloud solver (dense=False), every rank a share
    of both clouds and one rank none: the same plan, loss and (to one test) the
    same iteration count; the plan rows of empirical_sinkhorn are this rank's."""
    X, Y, a, b = clouds(dtype=dtype)
    sx, sy = uneven(comm, len(X), edge_rank), uneven(comm, len(Y), comm.size - 1 - edge_rank)
    stop = 1e-12 if dtype == np.float64 else 1e-6
    kw = dict(metric=metric, isLazy=True, log=True, comm=comm, stopThr=stop)
    f, g, log = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], dense=True, **kw)
    lf, lg, lazy_log = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], dense=False, **kw)
    assert f.dtype == g.dtype == dtype
    assert abs(log["niter"] - lazy_log["niter"]) <= 10  # (the tests run at 1, 11, ... against 10, 20, ...)
    tol = dict(rtol=1e-7, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-3, atol=1e-6)
    gather = lambda v: np.concatenate(comm.allgather(v))  # noqa: E731
    np.testing.assert_allclose(plan_of(gather(f), gather(g), X, Y, 0.05, metric),
                               plan_of(gather(lf), gather(lg), X, Y, 0.05, metric), **tol)
    loss = conveyor.ot.empirical_sinkhorn2(X[sx], Y[sy], 0.05, a[sx], b[sy], metric=metric, comm=comm, stopThr=stop)
    lazy = conveyor.ot.empirical_sinkhorn2(X[sx], Y[sy], 0.05, a[sx], b[sy], metric=metric, comm=comm, stopThr=stop,
                                           dense=False)
    assert loss == pytest.approx(lazy, rel=tol["rtol"])
    P = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], metric=metric, comm=comm, stopThr=stop)
    np.testing.assert_allclose(P, plan_of(gather(lf), gather(lg), X, Y, 0.05, metric)[sx], **tol)


def test_auto_forms_the_matrix_only_below_the_limit_and_when_not_lazy(comm, monkeypatch):
    """dense="auto" (the default) is bitwise dense=True while the matrix fits and
    the call is not lazy; bitwise dense=False with isLazy=True, with an option only
    the point-cloud solver has, or past the rule's limits on any rank."""
    from conveyor.ot import _points_dense as _ot_points_dense

    X, Y, a, b = clouds()
    sx, sy = uneven(comm, len(X), -1), uneven(comm, len(Y), -1)

    def potentials(**kw):
        f, g = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], comm=comm, stopThr=1e-9,
                                              **dict(dict(isLazy=True), **kw))
        return np.concatenate([f, g])

    dense, lazy = potentials(dense=True), potentials(dense=False)
    assert not np.array_equal(dense, lazy)
    plan = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], comm=comm, stopThr=1e-9)
    np.testing.assert_array_equal(plan, conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 0.05, a[sx], b[sy], comm=comm,
                                                                       stopThr=1e-9, dense=True))
    loss = lambda **kw: conveyor.ot.empirical_sinkhorn2(X[sx], Y[sy], 0.05, a[sx], b[sy], comm=comm,  # noqa: E731
                                                        stopThr=1e-9, **kw)
    assert loss() == loss(dense=True) != loss(dense=False)
    assert loss(isLazy=True) == loss(dense=False)
    assert loss(exchange="ring") == loss(dense=False, exchange="ring")
    np.testing.assert_array_equal(potentials(), lazy)
    entries = len(X) * comm.allreduce(sy.stop - sy.start, op=MPI.MAX)  # (the largest rank's block)
    monkeypatch.setattr(_ot_points_dense, "DENSE_BYTES", 8 * entries)
    monkeypatch.setattr(_ot_points_dense, "DENSE_PEAK_BYTES", 0)
    assert loss() == loss(dense=True)
    monkeypatch.setattr(_ot_points_dense, "DENSE_BYTES", 8 * entries - 1)
    assert loss() == loss(dense=False)
    # Past DENSE_BYTES, within DENSE_PEAK_BYTES and half of each rank's share of its machine's memory:
    peak = entries * _ot_points_dense.PEAK_BYTES_PER_ENTRY
    monkeypatch.setattr(_ot_points_dense, "DENSE_PEAK_BYTES", peak)
    assert loss() == loss(dense=True)
    monkeypatch.setattr(_ot_points_dense, "DENSE_PEAK_BYTES", peak - 1)
    assert loss() == loss(dense=False)
    monkeypatch.setattr(_ot_points_dense, "DENSE_PEAK_BYTES", peak)
    targets = comm.allgather(sy.stop - sy.start)
    monkeypatch.setattr(_ot_points_dense, "DENSE_BYTES", 0)  # (every rank's block past it)
    for short in range(comm.size):  # one rank's machine short of memory: every rank takes the point-cloud solver
        # (the ranks share this machine: a rank's share is its machine's memory over the ranks; a rank
        # without targets has an empty block, formed whatever the memory)
        memory = (2 * peak * comm.size - 1) * targets[short] * len(X) // entries if comm.rank == short else 2 * peak * comm.size
        monkeypatch.setattr(_ot_points_dense, "available_memory", lambda: memory)
        assert loss() == loss(dense=targets[short] == 0)
    monkeypatch.setattr(_ot_points_dense, "available_memory", lambda: None)
    assert loss() == loss(dense=True)


def test_auto_forms_by_dtype_dimension_and_peak():
    """auto_forms's rule: a block within DENSE_BYTES always; past it, float32
    points of fewer than DENSE_MIN_DIM_FLOAT32 dimensions never; else while the
    peak is within DENSE_PEAK_BYTES and half the memory given."""
    from conveyor.ot._points_dense import (DENSE_BYTES, DENSE_MIN_DIM_FLOAT32, DENSE_PEAK_BYTES,
                                           PEAK_BYTES_PER_ENTRY, auto_forms)

    for itemsize in (4, 8):
        assert auto_forms(DENSE_BYTES // itemsize, 1, itemsize, memory=0)
    low = DENSE_MIN_DIM_FLOAT32
    past = DENSE_BYTES // 4 + 1
    assert not auto_forms(past, low - 1, 4) and auto_forms(past, low, 4) and auto_forms(past // 2 + 1, 1, 8)
    most = DENSE_PEAK_BYTES // PEAK_BYTES_PER_ENTRY
    assert auto_forms(most, 3, 8) and not auto_forms(most + 1, 3, 8)
    assert auto_forms(most, 64, 4, memory=2 * most * PEAK_BYTES_PER_ENTRY)
    assert not auto_forms(most, 64, 4, memory=2 * most * PEAK_BYTES_PER_ENTRY - 1)
    assert not auto_forms(most, 64, 8, memory=0) and auto_forms(most, 64, 8, memory=None)


def test_small_reg_iterates_on_log_potentials_and_a_failed_kernel_reruns(comm):
    """max(C) / reg past the kernel's range runs the engine's log-domain
    iteration (exp(-C / reg) would underflow to 0); and where the kernel form is
    tried anyway (the range raised) and fails, the solve reruns in the log
    domain: both give the point-cloud solver's plan."""
    from conveyor.ot import _points_dense as _ot_points_dense

    X, Y, a, b = clouds(n=30, m=20)
    Y = Y + 1.0  # (every cost >= 0.5: exp(-C / 1e-3) is 0 in float64)
    sx, sy = uneven(comm, len(X), -1), uneven(comm, len(Y), -1)
    kw = dict(isLazy=True, comm=comm, stopThr=1e-9, numIterMax=100000)
    gather = lambda v: np.concatenate(comm.allgather(v))  # noqa: E731
    ref = plan_of(*(gather(v) for v in conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 1e-3, a[sx], b[sy], dense=False,
                                                                      **kw)), X, Y, 1e-3, "sqeuclidean")
    f, g = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 1e-3, a[sx], b[sy], dense=True, **kw)
    assert np.isfinite(f).all() and np.isfinite(g).all()
    np.testing.assert_allclose(plan_of(gather(f), gather(g), X, Y, 1e-3, "sqeuclidean"), ref, rtol=1e-6, atol=1e-12)
    range_ = dict(_ot_points_dense._KERNEL_RANGE)
    try:
        _ot_points_dense._KERNEL_RANGE.update({4: 1e300, 8: 1e300})
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (the failed kernel attempt is not reported)
            f, g = conveyor.ot.empirical_sinkhorn(X[sx], Y[sy], 1e-3, a[sx], b[sy], dense=True, **kw)
    finally:
        _ot_points_dense._KERNEL_RANGE.update(range_)
    np.testing.assert_allclose(plan_of(gather(f), gather(g), X, Y, 1e-3, "sqeuclidean"), ref, rtol=1e-6, atol=1e-12)


def test_dense_warmstart_from_a_solution_stops_at_the_first_test():
    X, Y, a, b = clouds()
    f, g, log = conveyor.ot.empirical_sinkhorn(X, Y, 0.1, a, b, isLazy=True, log=True, dense=True)
    f2, g2, log2 = conveyor.ot.empirical_sinkhorn(X, Y, 0.1, a, b, isLazy=True, log=True, dense=True,
                                                  warmstart=(f, g))
    assert log["niter"] > 10 and log2["niter"] == 0
    np.testing.assert_allclose(f2, f, atol=1e-9)


def test_a_bad_dense_choice_on_one_rank_raises_on_every_rank(comm, bad_rank):
    """dense= must be "auto", True or False; one rank's other value (or one rank's
    other choice) raises on every rank instead of leaving the others waiting."""
    X, Y, a, b = clouds()
    sx, sy = uneven(comm, len(X), -1), uneven(comm, len(Y), -1)
    with pytest.raises(ValueError, match="dense" if comm.size == 1 else f"rank {bad_rank}"):
        conveyor.ot.empirical_sinkhorn2(X[sx], Y[sy], 0.1, a[sx], b[sy], comm=comm,
                                        dense="yes" if comm.rank == bad_rank else True)
    if comm.size > 1:
        with pytest.raises(ValueError, match="dense"):
            conveyor.ot.empirical_sinkhorn2(X[sx], Y[sy], 0.1, a[sx], b[sy], comm=comm, dense=comm.rank == bad_rank)


@pytest.mark.parametrize("dense", [True, False])
def test_sub_communicators_and_reused_calls(comm, dense):
    """Two halves of the ranks (comm.Split by parity), each solving its own
    problem from its shares, twice: each half's value is its problem's
    one-process value, on both paths."""
    sub = comm.Split(comm.rank % 2, comm.rank)
    try:
        X, Y, a, b = clouds(n=40, m=30, seed=comm.rank % 2)
        mx = slice(sub.rank * 40 // sub.size, (sub.rank + 1) * 40 // sub.size)
        my = slice(sub.rank * 30 // sub.size, (sub.rank + 1) * 30 // sub.size)
        ref = conveyor.ot.empirical_sinkhorn2(X, Y, 0.05, a, b, comm=MPI.COMM_SELF, dense=dense, stopThr=1e-12)
        for _ in range(2):
            value = conveyor.ot.empirical_sinkhorn2(X[mx], Y[my], 0.05, a[mx], b[my], comm=sub, dense=dense,
                                                    stopThr=1e-12)
            assert abs(value - ref) <= 1e-10 * abs(ref)
    finally:
        sub.Free()


def test_dense_with_empty_clouds_takes_the_point_cloud_solver():
    X, _, _, _ = clouds()
    empty = np.zeros((0, 3))
    for dense in (True, "auto"):
        assert conveyor.ot.empirical_sinkhorn2(X, empty, 0.1, dense=dense) == conveyor.ot.empirical_sinkhorn2(
            X, empty, 0.1, dense=False)
