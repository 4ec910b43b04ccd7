# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.ot.sinkhorn_unbalanced / sinkhorn_unbalanced2 against POT's (the POT
installed beside it: 0.9.x with the same iteration, or Debian's 0.8.2, whose
start and kernel differ, compared at convergence); then the rows spread over
ranks, and the unbalanced options of the engine."""
import numpy as np
import pytest
from mpi4py import MPI

import conveyor
import conveyor.ot

ot = pytest.importorskip("ot")
POT_09 = tuple(int(x) for x in ot.__version__.split(".")[:2]) >= (0, 9)


def problem(n=40, m=30, seed=0):
    rng = np.random.RandomState(seed)
    x, y = rng.randn(n, 2), rng.randn(m, 2)
    M = ot.dist(x, y)
    M /= M.max()
    a, b = rng.rand(n), rng.rand(m)
    return a / a.sum(), b / (2 * b.sum()), M  # b holds half the mass


@pytest.mark.skipif(not POT_09, reason="POT 0.8's unbalanced solver starts elsewhere (see the test below)")
@pytest.mark.parametrize("reg_type", ["kl", "entropy"])
@pytest.mark.parametrize("reg_m", [1.0, (0.5, float("inf")), 5.0])
def test_same_iterates_plan_and_costs_as_pot(reg_type, reg_m):
    a, b, M = problem()
    P, log = conveyor.ot.sinkhorn_unbalanced(a, b, M, 0.05, reg_m, reg_type=reg_type, log=True)
    Q, qlog = ot.unbalanced.sinkhorn_unbalanced(a, b, M, 0.05, reg_m, reg_type=reg_type, log=True)
    assert len(log["err"]) == len(qlog["err"])
    np.testing.assert_allclose(log["err"], qlog["err"], rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(P, Q, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(log["logu"], qlog["logu"], rtol=1e-10, atol=1e-10)
    for cost in ("linear", "total"):
        mine = conveyor.ot.sinkhorn_unbalanced2(a, b, M, 0.05, reg_m, reg_type=reg_type, returnCost=cost)
        pots = ot.unbalanced.sinkhorn_unbalanced2(a, b, M, 0.05, reg_m, reg_type=reg_type, returnCost=cost)
        assert float(mine) == pytest.approx(float(pots), rel=1e-10, abs=1e-14)


def test_converged_plan_equals_pots_whatever_its_version():
    a, b, M = problem(seed=1)
    P = conveyor.ot.sinkhorn_unbalanced(a, b, M, 0.1, 1.0, reg_type="entropy", stopThr=1e-12)
    Q = ot.sinkhorn_unbalanced(a, b, M, 0.1, 1.0, stopThr=1e-12, **({"reg_type": "entropy"} if POT_09 else {}))
    np.testing.assert_allclose(P, Q, rtol=1e-7, atol=1e-12)


def test_several_histograms_and_a_reference_of_ones_own():
    a, b, M = problem(seed=2)
    B = np.stack([b, 2 * b], axis=1)
    losses = conveyor.ot.sinkhorn_unbalanced(a, B, M, 0.1, 1.0)
    assert losses.shape == (2,)
    for k in range(2):
        one = conveyor.ot.sinkhorn_unbalanced2(a, np.ascontiguousarray(B[:, k]), M, 0.1, 1.0, reg_type="entropy")
        assert losses[k] == pytest.approx(float(one), rel=1e-12)
    # c = a b^T given explicitly is the kl reference.
    P = conveyor.ot.sinkhorn_unbalanced(a, b, M, 0.1, 1.0, c=np.outer(a, b))
    np.testing.assert_allclose(P, conveyor.ot.sinkhorn_unbalanced(a, b, M, 0.1, 1.0), rtol=1e-9, atol=1e-15)


def test_methods_conveyor_does_not_implement_raise():
    a, b, M = problem(seed=3)
    with pytest.raises(NotImplementedError, match="sinkhorn_translation_invariant"):
        conveyor.ot.sinkhorn_unbalanced(a, b, M, 0.1, 1.0, method="sinkhorn_translation_invariant")
    with pytest.raises(ValueError, match="Unknown method"):
        conveyor.ot.sinkhorn_unbalanced(a, b, M, 0.1, 1.0, method="greenkhorn")
    with pytest.raises(ValueError, match="reg_m must be > 0"):
        conveyor.ot.sinkhorn_unbalanced(a, b, M, 0.1, 0.0)


def test_rows_spread_over_ranks_give_the_single_process_plan(comm):
    a, b, M = problem(37, 23, seed=4)
    first, rows = conveyor.balanced_rows(37, comm)
    P_rows, log = conveyor.ot.sinkhorn_unbalanced(a[first:first + rows], b, M[first:first + rows], 0.05, (1.0, 2.0),
                                                  log=True, comm=comm)
    P, log1 = conveyor.ot.sinkhorn_unbalanced(a, b, M, 0.05, (1.0, 2.0), log=True)
    assert len(log["err"]) == len(log1["err"])
    np.testing.assert_allclose(P_rows, P[first:first + rows], rtol=1e-11, atol=1e-300)
    total = conveyor.ot.sinkhorn_unbalanced2(a[first:first + rows], b, M[first:first + rows], 0.05, (1.0, 2.0),
                                             returnCost="total", comm=comm)
    assert float(total) == pytest.approx(float(conveyor.ot.sinkhorn_unbalanced2(a, b, M, 0.05, (1.0, 2.0),
                                                                                  returnCost="total")), rel=1e-10)


def test_point_clouds_unbalanced_equal_the_dense_solver():
    rng = np.random.RandomState(5)
    X, Y = rng.rand(30, 3), rng.rand(20, 3) + 0.2
    a, b = np.full(30, 1 / 30), np.full(20, 1 / 40)
    M = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=2)
    for reg_type in ("kl", "entropy"):
        pts = conveyor.sinkhorn_points(X, Y, 0.05, a, b, comm=MPI.COMM_SELF, reg_m_rows=1.0, reg_m_cols=0.5,
                                       reg_type=reg_type, stop="change", tol=1e-12, max_iter=5000)
        dense = conveyor.sinkhorn_transport(M, a, b, 0.05, MPI.COMM_SELF, reg_m_rows=1.0, reg_m_cols=0.5,
                                            reg_type=reg_type, stop="change", tol=1e-12, max_iter=5000)
        assert pts.status == dense.status == "converged", reg_type
        assert pts.iterations == dense.iterations
        np.testing.assert_allclose(pts.log_u, dense.log_u, rtol=1e-9, atol=1e-11)
        assert pts.cost == pytest.approx(dense.cost, rel=1e-9)
