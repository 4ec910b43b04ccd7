# SPDX-License-Identifier: BSD-3-Clause
"""Sinkhorn / entropic OT and the distributed sum of outer products from Python,
under mpiexec (1-3 ranks, both MPIs): results against NumPy computed on every
rank from the same seeded data; every DSOP algorithm; errors."""
import numpy as np
import pytest

import conveyor



def problem(M, N, dtype, seed=5):
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.5, 1.5, (M, N)).astype(dtype)
    r = np.full(M, 1.0 / M, dtype)
    c = np.full(N, 1.0 / N, dtype)
    return A, r, c


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("variant,in_place", [(name, in_place) for name, _, in_place
                                              in conveyor._conveyor.sinkhorn_variants()])
def test_sinkhorn_scale_meets_the_marginals(comm, dtype, tol, variant, in_place):
    M, N = 37, 23
    A, r, c = problem(M, N, dtype)
    first, count = conveyor.balanced_rows(M)
    mine = A[first:first + count].copy()
    res = conveyor.sinkhorn_scale(mine, r[first:first + count], c, in_place=in_place, variant=variant, tol=tol)
    assert res.status == "converged", res
    u = np.concatenate(comm.allgather(res.u))
    scaled = u[:, None] * A.astype(np.float64) * res.v[None, :]
    np.testing.assert_allclose(scaled.sum(axis=1), r, rtol=10 * tol if dtype == np.float64 else 1e-3)
    np.testing.assert_allclose(scaled.sum(axis=0), c, rtol=1e-3, atol=10 * tol)
    if in_place:
        np.testing.assert_allclose(mine, (res.u[:, None] * A[first:first + count] * res.v[None, :]).astype(dtype), rtol=1e-5)


@pytest.mark.parametrize("log_domain", [False, True])
def test_sinkhorn_transport_plan_and_cost(comm, log_domain):
    M, N = 29, 31
    rng = np.random.default_rng(9)
    C = rng.uniform(0, 1, (M, N))
    a, b = np.full(M, 1.0 / M), np.full(N, 1.0 / N)
    first, count = conveyor.balanced_rows(M)
    res = conveyor.sinkhorn_transport(C[first:first + count], a[first:first + count], b, eps=0.05, log_domain=log_domain,
                                      tol=1e-11, max_iter=5000, plan=True)
    assert res.status == "converged"
    P = np.concatenate(comm.allgather(res.plan))
    np.testing.assert_allclose(P.sum(axis=1), a, rtol=1e-8)
    np.testing.assert_allclose(P.sum(axis=0), b, rtol=1e-8)
    assert res.cost == pytest.approx(float((P * C).sum()), rel=1e-10)
    log_u = np.concatenate(comm.allgather(res.log_u))
    np.testing.assert_allclose(P, np.exp(log_u[:, None] + res.log_v[None, :] - C / 0.05), rtol=1e-6)


def test_sinkhorn_errors(comm):
    A, r, c = problem(4, 3, np.float64)
    with pytest.raises(ValueError):  # a wrong marginal length on the last rank only: raised on every rank
        conveyor.sinkhorn_scale(A, r[:3] if comm.rank == comm.size - 1 else r, c)
    with pytest.raises(ValueError):
        conveyor.sinkhorn_scale(A, r, c, variant="quantum")


@pytest.mark.parametrize("algorithm", ["auto"] + [name for name, _ in conveyor._conveyor.outer_algorithms()])
@pytest.mark.parametrize("distributed", [False, True])
def test_outer_sum_every_algorithm(comm, algorithm, distributed):
    N, M = 17, 9
    vec = lambda n, r: np.arange(n, dtype=np.float64) * (r + 1) + r
    G = conveyor.outer_sum(vec(N, comm.rank), vec(M, -comm.rank), algorithm=algorithm, distributed=distributed)
    want = sum(np.outer(vec(N, r), vec(M, -r)) for r in range(comm.size))
    if distributed:
        first, rows = conveyor.outer_rows(N)
        want = want[first:first + rows]
    np.testing.assert_allclose(G, want, rtol=1e-12)


def test_outer_sum_errors():
    with pytest.raises(TypeError):  # out of another dtype
        conveyor.outer_sum(np.zeros(3), np.zeros(2), out=np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError):  # G too small: the engine's check, on every rank
        conveyor.outer_sum(np.zeros(3), np.zeros(2), out=np.zeros((1, 2)))
