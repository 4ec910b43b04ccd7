# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.ot.barycenter and free_support_sinkhorn_barycenter against POT, at
any rank count (run under mpiexec): the dense engine's rows of M split over the
ranks, the point-cloud engine's points split over them; the same barycenter as
one process; bad input on one rank raising on every rank."""
import numpy as np
import pytest

import conveyor
import conveyor.ot

ot = pytest.importorskip("ot")


def gaussians(n_bins=60, means=(20, 35, 45), std=6.0):
    x = np.arange(n_bins, dtype=np.float64)
    A = np.stack([np.exp(-0.5 * ((x - m) / std) ** 2) for m in means], axis=1)
    A /= A.sum(axis=0)
    M = (x[:, None] - x[None, :]) ** 2
    return A, M / M.max()


def my_rows(comm, n):
    first, count = conveyor.balanced_rows(n, comm)
    return slice(first, first + count)


@pytest.mark.parametrize("method", ["sinkhorn", "sinkhorn_log"])
def test_barycenter_equals_pot_with_uniform_weights(comm, method):
    A, M = gaussians()
    q_pot, log_pot = ot.bregman.barycenter(A, M, 1e-2, method=method, stopThr=1e-10, numItermax=5000, log=True)
    q, log = conveyor.ot.barycenter(A, M[my_rows(comm, len(M))], 1e-2, method=method, stopThr=1e-10, numItermax=5000,
                                    log=True, comm=comm)
    # sinkhorn_log: POT's iterates (its start); sinkhorn: POT's recursion from
    # u = 1, the same limit with uniform weights.
    np.testing.assert_allclose(q, q_pot, rtol=1e-7, atol=1e-12)
    if method == "sinkhorn_log":
        assert log["niter"] == log_pot["niter"]
        np.testing.assert_allclose(log["err"], log_pot["err"], rtol=1e-6, atol=1e-14)
    assert q.sum() == pytest.approx(1.0, abs=1e-9)


def test_barycenter_weighted_is_the_log_domain_fixed_point(comm):
    """With unequal weights POT's sinkhorn start moves its limit; Conveyor's
    two methods and POT's sinkhorn_log agree (docs/algorithms.md, "Barycenter")."""
    A, M = gaussians()
    w = np.array([0.2, 0.3, 0.5])
    q_log = ot.bregman.barycenter(A, M, 1e-2, w, method="sinkhorn_log", stopThr=1e-12, numItermax=10000)
    for method in ("sinkhorn", "sinkhorn_log"):
        q = conveyor.ot.barycenter(A, M[my_rows(comm, len(M))], 1e-2, w, method=method, stopThr=1e-12, numItermax=10000,
                                   comm=comm)
        np.testing.assert_allclose(q, q_log, rtol=1e-8, atol=1e-13)


def test_barycenter_on_ranks_equals_one_process_and_float32(comm):
    A, M = gaussians()
    whole = conveyor.ot.barycenter(A, M, 2e-2, stopThr=1e-9, numItermax=5000)
    shared = conveyor.ot.barycenter(A, M[my_rows(comm, len(M))], 2e-2, stopThr=1e-9, numItermax=5000, comm=comm,
                                    threads=2)
    np.testing.assert_allclose(shared, whole, rtol=1e-12, atol=1e-15)
    single = conveyor.ot.barycenter(A.astype(np.float32), M[my_rows(comm, len(M))].astype(np.float32), 2e-2,
                                    stopThr=1e-6, numItermax=5000, comm=comm)
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, whole, atol=1e-4)
    # The engine itself: the same bits on every rank.
    res = conveyor.sinkhorn_barycenter(M[my_rows(comm, len(M))], A, 2e-2, comm=comm, tol=1e-9, max_iter=5000)
    assert res.status == "converged"
    assert all(np.array_equal(res.barycenter, other) for other in comm.allgather(res.barycenter))


def test_barycenter_log_warn_and_methods(comm):
    A, M = gaussians()
    with pytest.warns(UserWarning, match="did not converge"):
        conveyor.ot.barycenter(A, M[my_rows(comm, len(M))], 1e-2, numItermax=3, comm=comm)
    with pytest.raises(NotImplementedError, match="sinkhorn_stabilized"):
        conveyor.ot.barycenter(A, M, 1e-2, method="sinkhorn_stabilized")
    with pytest.raises(ValueError, match="Unknown method"):
        conveyor.ot.barycenter(A, M, 1e-2, method="nope")


@pytest.mark.parametrize("bad", ["nan in A", "negative weight", "masses differ", "reg"])
def test_barycenter_bad_input_on_one_rank_raises_everywhere(comm, bad):
    A, M = gaussians(n_bins=12)
    for culprit in range(comm.size):
        A_, w, reg = A.copy(), np.full(3, 1 / 3), 0.1
        if comm.rank == culprit:
            if bad == "nan in A":
                A_[3, 1] = np.nan
            elif bad == "negative weight":
                w[0] = -1.0
            elif bad == "masses differ":
                A_[:, 2] *= 2
            else:
                reg = -1.0
        with pytest.raises(ValueError):
            conveyor.ot.barycenter(A_, M[my_rows(comm, len(M))], reg, w, comm=comm)


def free_support_reference(locations, weights_list, X, reg, b, weights, steps):
    """POT's free_support_sinkhorn_barycenter loop (each plan by ot.sinkhorn)."""
    for _ in range(steps):
        moved = np.zeros_like(X)
        for Y, a, w in zip(locations, weights_list, weights):
            P = ot.sinkhorn(b, a, ot.dist(X, Y), reg, numItermax=10000, stopThr=1e-12)
            moved += w * (P @ Y) / b[:, None]
        X = moved
    return X


def clouds(seed=3):
    rng = np.random.default_rng(seed)
    locations = [rng.normal(size=(23, 2)) + [2.0, 0.0], rng.normal(size=(17, 2)) - [2.0, 1.0]]
    weights_list = [np.full(23, 1 / 23), rng.uniform(0.5, 1.5, 17)]
    weights_list[1] /= weights_list[1].sum()
    return locations, weights_list, rng.normal(size=(11, 2))


def share(comm, x, n):
    first, count = conveyor.balanced_rows(n, comm)
    return x[first:first + count]


def test_free_support_equals_pots_loop_and_splits_over_ranks(comm):
    locations, weights_list, X0 = clouds()
    b, w = np.full(11, 1 / 11), np.array([0.4, 0.6])
    ref = free_support_reference(locations, weights_list, X0, 0.5, b, w, steps=4)
    X, log = conveyor.ot.free_support_sinkhorn_barycenter(
        [share(comm, Y, len(Y)) for Y in locations], [share(comm, a, len(a)) for a in weights_list], share(comm, X0, 11), 0.5,
        b=share(comm, b, 11), weights=w, numItermax=4, stopThr=0.0, log=True, comm=comm)
    np.testing.assert_allclose(np.concatenate(comm.allgather(X)), ref, rtol=1e-6, atol=1e-7)
    assert len(log["displacement_square_norms"]) == 4
    assert all(d == other for d, other in zip(log["displacement_square_norms"],
                                              comm.bcast(log["displacement_square_norms"])))


def test_free_support_pots_own_case_and_float32():
    # POT's test: two Diracs at -1 and 1, barycenter at 0 from -12.
    X = conveyor.ot.free_support_sinkhorn_barycenter([np.array([[-1.0]]), np.array([[1.0]])],
                                                     [np.array([1.0]), np.array([1.0])], np.array([[-12.0]]), reg=1)
    np.testing.assert_allclose(X, [[0.0]], rtol=1e-5, atol=1e-7)
    locations, weights_list, X0 = clouds(5)
    X32 = conveyor.ot.free_support_sinkhorn_barycenter([Y.astype(np.float32) for Y in locations], weights_list,
                                                       X0.astype(np.float32), 0.5, numItermax=3, stopThr=0.0)
    X64 = conveyor.ot.free_support_sinkhorn_barycenter(locations, weights_list, X0, 0.5, numItermax=3, stopThr=0.0)
    assert X32.dtype == np.float32
    np.testing.assert_allclose(X32, X64, atol=1e-4)


@pytest.mark.parametrize("bad", ["nan in a cloud", "negative weight", "nan in X_init", "reg", "dimension"])
def test_free_support_bad_input_on_one_rank_raises_everywhere(comm, bad):
    locations, weights_list, X0 = clouds(7)
    for culprit in range(comm.size):
        Ys = [share(comm, Y, len(Y)).copy() for Y in locations]
        ws = [share(comm, a, len(a)).copy() for a in weights_list]
        X, reg = share(comm, X0, 11).copy(), 0.5
        if comm.rank == culprit:
            if bad == "nan in a cloud" and len(Ys[1]):
                Ys[1][0, 1] = np.nan
            elif bad == "negative weight" and len(ws[0]):
                ws[0][0] = -ws[0][0]
            elif bad == "nan in X_init" and len(X):
                X[0, 0] = np.nan
            elif bad == "reg":
                reg = 0.0
            elif bad == "dimension":
                Ys[0] = np.zeros((len(Ys[0]), 3))
        with pytest.raises(ValueError):
            conveyor.ot.free_support_sinkhorn_barycenter(Ys, ws, X, reg, numItermax=2, stopThr=0.0, comm=comm)
    # The communicator is still usable: a good call after the bad ones.
    X = conveyor.ot.free_support_sinkhorn_barycenter([share(comm, Y, len(Y)) for Y in locations],
                                                     [share(comm, a, len(a)) for a in weights_list], share(comm, X0, 11), 0.5,
                                                     numItermax=2, stopThr=0.0, comm=comm)
    assert np.all(np.isfinite(X))
