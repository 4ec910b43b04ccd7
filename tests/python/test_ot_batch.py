# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.ot.solve_batch / solve_sample_batch: many small OT problems in one
call (issue "Optimal transport inside training loops", item 4).

Each point-cloud problem of a batch gets the bits the single-problem solver
(sinkhorn_points on one rank) gives it, with its own iteration count; dense
batches agree with conveyor.ot.solve per problem; every rank may hold its own
number of problems (zero included); one rank's bad input is every rank's error;
torch and JAX gradients (envelope and implicit) against finite differences and
between each other. Against POT's own ot.batch (POT >= 0.9.6): where it is
importable — tests/python/installed_package.sh runs this file once more with
POT 0.9.6 on the path and CONVEYOR_REQUIRE_POT_BATCH=1, under which a missing
ot.batch fails instead of skipping (the build tree's Debian POT has none)."""
import os

import numpy as np
import pytest
from mpi4py import MPI

import conveyor
import conveyor.ot

torch = pytest.importorskip("torch")  # (Debian's python3-torch: scripts/setup installs it)


try:
    import ot.batch as pot_batch
except ImportError:
    pot_batch = None
if os.environ.get("CONVEYOR_REQUIRE_POT_BATCH") == "1" and pot_batch is None:
    raise ImportError("CONVEYOR_REQUIRE_POT_BATCH=1 but POT's ot.batch is not importable")
needs_pot_batch = pytest.mark.skipif(pot_batch is None, reason="POT < 0.9.6 here (no ot.batch); installed_package.sh "
                                     "runs these with POT 0.9.6")


def clouds(batch=5, n=13, m=19, d=3, seed=0, dtype=np.float64, weights=False, empty=True):
    rng = np.random.default_rng(seed)
    X = rng.random((batch, n, d)).astype(dtype)
    Y = (rng.random((batch, m, d)) + 0.3 * rng.random((batch, 1, d))).astype(dtype)
    if not weights:
        return X, Y, None, None
    a = rng.random((batch, n)) + 0.1
    b = rng.random((batch, m)) + 0.1
    if empty:
        a[:, 0] = 0  # an empty point in every problem
    return X, Y, (a / a.sum(1, keepdims=True)).astype(dtype), (b / b.sum(1, keepdims=True)).astype(dtype)


def costs(X, Y, metric="sqeuclidean"):
    squared = ((X[:, :, None, :] - Y[:, None, :, :]) ** 2).sum(-1)
    return squared if metric == "sqeuclidean" else np.sqrt(squared)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
@pytest.mark.parametrize("weights", [False, True])
def test_points_batch_is_each_problem_alone(dtype, metric, weights):
    X, Y, a, b = clouds(dtype=dtype, weights=weights)
    tol = 1e-9 if dtype == np.float64 else 1e-5
    res = conveyor.ot.solve_sample_batch(X, Y, 0.05, a, b, metric=metric, tol=tol, comm=MPI.COMM_SELF)
    assert res.value_linear.dtype == dtype
    iterations = set()
    for k in range(X.shape[0]):
        one = conveyor.sinkhorn_points(X[k], Y[k], 0.05, None if a is None else a[k], None if b is None else b[k],
                                       comm=MPI.COMM_SELF, metric=metric, tol=tol, norm="l2")
        np.testing.assert_array_equal(res.potentials[0][k], one.log_u)
        np.testing.assert_array_equal(res.potentials[1][k], one.log_v)
        assert res.log["n_iter"][k] == one.iterations
        assert res.status[k] == "converged"
        assert res.value_linear[k] == pytest.approx(one.cost, rel=1e-12 if dtype == np.float64 else 1e-6)
        iterations.add(one.iterations)
    assert len(iterations) > 1  # each problem its own convergence


@pytest.mark.parametrize("reg_type", ["entropy", "KL"])
def test_dense_batch_matches_solve_and_its_plan(reg_type):
    # (no empty point: POT's and conveyor.ot.solve's KL term is NaN there, 0 log 0 / 0)
    X, Y, a, b = clouds(weights=True, empty=reg_type == "entropy")
    M = costs(X, Y)
    res = conveyor.ot.solve_batch(M, 0.1, a, b, tol=1e-10, reg_type=reg_type, comm=MPI.COMM_SELF)
    P = res.plan
    np.testing.assert_allclose(P.sum(2), a, atol=1e-9)
    np.testing.assert_allclose(P.sum(1), b, atol=1e-12)
    np.testing.assert_allclose(res.value_linear, (P * M).sum((1, 2)), rtol=1e-12)
    for k in range(M.shape[0]):
        one = conveyor.ot.solve(M[k], a[k], b[k], reg=0.1, reg_type=reg_type, tol=1e-12, max_iter=10000)
        np.testing.assert_allclose(P[k], one.plan, atol=1e-9)
        assert res.value[k] == pytest.approx(one.value, abs=1e-9)
    # The point-cloud batch on the same costs: the same problems.
    points = conveyor.ot.solve_sample_batch(X, Y, 0.1, a, b, tol=1e-10, reg_type=reg_type, comm=MPI.COMM_SELF)
    np.testing.assert_allclose(points.value, res.value, rtol=1e-9)
    np.testing.assert_allclose(points.plan, P, atol=1e-9)


def test_every_rank_its_own_problems(comm):
    # Rank r holds r problems (rank 0 none); each result is the problem's alone.
    X, Y, _, _ = clouds(batch=max(comm.rank, 1) + 3, seed=comm.rank)
    X, Y = X[:comm.rank], Y[:comm.rank]
    res = conveyor.ot.solve_sample_batch(X, Y, 0.05, tol=1e-9, comm=comm)
    alone = conveyor.ot.solve_sample_batch(X, Y, 0.05, tol=1e-9, comm=MPI.COMM_SELF)
    assert res.value.shape == (comm.rank,)
    np.testing.assert_array_equal(res.value, alone.value)
    dense = conveyor.ot.solve_batch(costs(X, Y), 0.05, tol=1e-9, comm=comm)
    np.testing.assert_allclose(dense.value, res.value, rtol=1e-9)


def test_empty_and_max_iter():
    empty = conveyor.ot.solve_batch(np.zeros((0, 4, 5)), 0.1, comm=MPI.COMM_SELF)
    assert empty.value.shape == (0,) and empty.potentials[0].shape == (0, 4)
    X, Y, _, _ = clouds(batch=2)
    none = conveyor.ot.solve_sample_batch(X[:, :0], Y, 0.1, comm=MPI.COMM_SELF)
    assert list(none.value) == [0, 0] and list(none.status) == ["converged"] * 2
    capped = conveyor.ot.solve_sample_batch(X, Y, 0.01, tol=1e-14, max_iter=3, comm=MPI.COMM_SELF)
    assert list(capped.status) == ["max_iter"] * 2 and list(capped.log["n_iter"]) == [3, 3]


@pytest.mark.parametrize("what", ["nan", "mass", "shape", "reg"])
def test_bad_input_on_one_rank_is_every_ranks_error(comm, bad_rank, what):
    X, Y, a, b = clouds(batch=2, weights=True)
    M = costs(X, Y)
    reg = 0.1
    if comm.rank == bad_rank:
        if what == "nan":
            M[1, 2, 3] = np.nan
        elif what == "mass":
            a = a * 2
        elif what == "shape":
            M = M[:, :, 1:]
            b = b[:, 1:] / b[:, 1:].sum(1, keepdims=True)
        else:
            reg = 0.2
    if comm.size == 1 and what in ("shape", "reg"):  # (nothing to disagree with)
        conveyor.ot.solve_batch(M, reg, a, b, comm=comm)
        return
    with pytest.raises(ValueError) as info:
        conveyor.ot.solve_batch(M, reg, a, b, comm=comm)
    message = str(info.value)
    expected = {"nan": "costs must be finite", "mass": "equal positive masses", "shape": "point counts m",
                "reg": "eps values"}[what]
    assert expected in message
    if what in ("nan", "mass"):  # (a bad value names its rank; a disagreement names both values)
        assert f"rank {bad_rank}" in message


def test_bad_arguments():
    X, Y, _, _ = clouds(batch=2)
    with pytest.raises(NotImplementedError, match="minkowski"):
        conveyor.ot.solve_sample_batch(X, Y, 0.1, metric="minkowski")
    with pytest.raises(ValueError, match="Unknown solver"):
        conveyor.ot.solve_batch(costs(X, Y), 0.1, solver="greenkhorn")
    with pytest.raises(ValueError, match="3-D"):
        conveyor.ot.solve_batch(costs(X, Y)[0], 0.1, comm=MPI.COMM_SELF)
    with pytest.raises(ValueError, match="a has shape"):
        conveyor.ot.solve_batch(costs(X, Y), 0.1, a=np.ones((3, 13)) / 13, comm=MPI.COMM_SELF)
    with pytest.raises(ValueError, match="reg"):
        conveyor.ot.solve_batch(costs(X, Y), 0.0)


def _torch_value(X, Y, grad, metric="sqeuclidean", reg_type="entropy", dense=False):
    if dense:
        M = ((X[:, :, None, :] - Y[:, None, :, :]) ** 2).sum(-1)
        return conveyor.ot.solve_batch(M, 0.1, tol=1e-12, max_iter=100000, grad=grad, reg_type=reg_type).value
    return conveyor.ot.solve_sample_batch(X, Y, 0.1, metric=metric, tol=1e-12, max_iter=100000, grad=grad,
                                          reg_type=reg_type).value


@pytest.mark.parametrize("grad", ["envelope", "autodiff"])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_torch_point_gradients_against_finite_differences(grad, metric):
    X, Y, _, _ = clouds(batch=3, n=6, m=7, d=2)
    Xt, Yt = torch.tensor(X, requires_grad=True), torch.tensor(Y, requires_grad=True)
    w = torch.tensor([1.0, -0.5, 2.0], dtype=torch.float64)
    (w * _torch_value(Xt, Yt, grad, metric)).sum().backward()
    h = 1e-6
    for (k, i, c) in [(0, 1, 0), (2, 5, 1), (1, 0, 1)]:
        for T, G in ((X, Xt.grad), (Y, Yt.grad)):
            plus, minus = T.copy(), T.copy()
            plus[k, i, c] += h
            minus[k, i, c] -= h
            args = [(plus if T is X else X, plus if T is Y else Y), (minus if T is X else X, minus if T is Y else Y)]
            values = [conveyor.ot.solve_sample_batch(x, y, 0.1, metric=metric, tol=1e-13, max_iter=100000,
                                                     comm=MPI.COMM_SELF).value for x, y in args]
            fd = float((w.numpy() * (values[0] - values[1])).sum() / (2 * h))
            assert float(G[k, i, c]) == pytest.approx(fd, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("reg_type", ["entropy", "KL"])
def test_torch_dense_gradients_envelope_and_autodiff(reg_type):
    X, Y, _, _ = clouds(batch=2, n=5, m=4, d=2)
    grads = {}
    for grad in ("envelope", "autodiff", "last_step"):
        Xt = torch.tensor(X, requires_grad=True)
        _torch_value(Xt, torch.tensor(Y), grad, reg_type=reg_type, dense=True).sum().backward()
        grads[grad] = Xt.grad.numpy()
    np.testing.assert_allclose(grads["autodiff"], grads["envelope"], atol=1e-8)
    np.testing.assert_allclose(grads["last_step"], grads["autodiff"], atol=0)
    # The plan's implicit gradient, against torch's finite differences (gradcheck).
    M = torch.tensor(costs(X, Y)[:, :3, :3], requires_grad=True)
    plan = lambda M_: conveyor.ot.solve_batch(M_, 0.5, tol=1e-13, max_iter=100000, grad="autodiff").plan  # noqa: E731
    assert torch.autograd.gradcheck(plan, (M,), eps=1e-6, atol=1e-6)
    detached = conveyor.ot.solve_batch(M, 0.5, grad="detach")
    assert not detached.value.requires_grad and not detached.plan.requires_grad


def test_torch_weight_gradients_are_centred_potentials():
    X, Y, a, b = clouds(batch=2, n=5, m=6, d=2, weights=True)
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    res = conveyor.ot.solve_sample_batch(torch.tensor(X), torch.tensor(Y), 0.1, at, bt, tol=1e-12)
    res.value.sum().backward()
    f = 0.1 * (res.potentials[0] - res.potentials[0].mean(1, keepdim=True))
    np.testing.assert_allclose(at.grad.numpy(), f.numpy(), atol=1e-12)


def test_jax_matches_torch():
    jax = pytest.importorskip("jax")  # (the installed package's venv has JAX; the build tree may not)
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    X, Y, _, _ = clouds(batch=3, n=6, m=7, d=2)
    for grad in ("envelope", "autodiff"):
        def loss(x):
            return conveyor.ot.solve_sample_batch(x, jnp.asarray(Y), 0.1, tol=1e-12, grad=grad).value.sum()
        value, g = jax.value_and_grad(loss)(jnp.asarray(X))
        jitted = jax.jit(jax.grad(loss))(jnp.asarray(X))
        Xt = torch.tensor(X, requires_grad=True)
        _torch_value(Xt, torch.tensor(Y), grad).sum().backward()
        np.testing.assert_allclose(np.asarray(g), Xt.grad.numpy(), atol=1e-8)
        np.testing.assert_allclose(np.asarray(jitted), Xt.grad.numpy(), atol=1e-8)


@needs_pot_batch
@pytest.mark.parametrize("reg_type", ["entropy", "kl"])
@pytest.mark.parametrize("solver", ["log_sinkhorn", "sinkhorn"])
def test_pot_batch_values_and_plans(reg_type, solver):
    rng = np.random.RandomState(0)
    M = rng.rand(4, 16, 16)
    ours = conveyor.ot.batch.solve_batch(M, reg=0.1, tol=1e-9, solver=solver, reg_type=reg_type, grad="detach")
    pots = pot_batch.solve_batch(M, reg=0.1, tol=1e-9, max_iter=10000, solver=solver, reg_type=reg_type, grad="detach")
    np.testing.assert_allclose(ours.plan, pots.plan, atol=1e-8)
    np.testing.assert_allclose(ours.value_linear, pots.value_linear, atol=1e-8)
    np.testing.assert_allclose(ours.value, pots.value, atol=1e-8)


@needs_pot_batch
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
@pytest.mark.parametrize("grad", ["envelope", "autodiff"])
def test_pot_batch_samples_and_gradients(metric, grad):
    X, Y, _, _ = clouds(batch=3, n=10, m=12, d=2)
    ours = conveyor.ot.solve_sample_batch(X, Y, 0.1, metric=metric, tol=1e-10)
    pots = pot_batch.solve_sample_batch(X, Y, 0.1, metric=metric, tol=1e-10, max_iter=100000)
    np.testing.assert_allclose(ours.plan, pots.plan, atol=1e-9)
    np.testing.assert_allclose(ours.value, pots.value, atol=1e-9)
    Xc, Xp = torch.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    conveyor.ot.solve_sample_batch(Xc, torch.tensor(Y), 0.1, metric=metric, tol=1e-8, grad=grad).value.sum().backward()
    pot_batch.solve_sample_batch(Xp, torch.tensor(Y), 0.1, metric=metric, tol=1e-8, max_iter=100000,
                                 grad=grad).value.sum().backward()
    np.testing.assert_allclose(Xc.grad.numpy(), Xp.grad.numpy(), atol=1e-5)
