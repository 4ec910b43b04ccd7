# SPDX-License-Identifier: BSD-3-Clause
"""Gradients of the point-cloud losses (issue "Optimal transport inside training
loops"): conveyor.ot.empirical_sinkhorn2 and empirical_sinkhorn_divergence on
torch tensors / JAX arrays, differentiated in the points and the weights by
implicit differentiation without the n x m matrix
(conveyor/ot/_points_gradients.py). Checked against the dense path on the cost
matrix made from the same points (conveyor.ot.sinkhorn2, itself checked against
POT in test_ot_gradients.py), against POT's own torch gradients, and against
central finite differences of the solver. At several ranks each rank holds a
share of both clouds (`comm`) and must get its rows of the one-process gradients."""
import numpy as np
import pytest

import conveyor
import conveyor.ot

REG = 0.5
TIGHT = dict(stopThr=1e-14, numIterMax=100000)


@pytest.fixture(params=[True, False], ids=["dense", "lazy"])
def tight(request):
    """TIGHT with the cost matrix formed (the default at these sizes) or not (the
    point-cloud solver and its plan applications): both paths differentiate."""
    return dict(TIGHT, dense=request.param)


def clouds(n=9, m=7, d=3, seed=0):
    """Two clouds with uneven weights (summing to 1)."""
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((n, d)), rng.standard_normal((m, d)) + 0.3
    a, b = rng.random(n) + 0.5, rng.random(m) + 0.5
    return X, Y, a / a.sum(), b / b.sum()


def share(comm, count, first_empty=False):
    """This rank's slice of `count` points (balanced; with first_empty, rank 0
    holds none when there are several ranks)."""
    if first_empty and comm.size > 1:
        if comm.rank == 0:
            return slice(0, 0)
        base, extra = divmod(count, comm.size - 1)
        first = (comm.rank - 1) * base + min(comm.rank - 1, extra)
        return slice(first, first + base + (comm.rank - 1 < extra))
    first, mine = conveyor.balanced_rows(count, comm)
    return slice(first, first + mine)


def torch_grads(function, *arrays):
    """function's value on tensors of the arrays and its gradients in each."""
    import torch
    tensors = [torch.tensor(x, requires_grad=True) for x in arrays]
    value = function(*tensors)
    value.backward()
    return float(value), [t.grad.numpy() for t in tensors]


def dense_loss(X, Y, a, b, metric="sqeuclidean"):
    """The same loss through the cost matrix: conveyor.ot.sinkhorn2 on |x - y|^2,
    or on |x - y| (its gradient taken as 0 where two points meet, as the engine's)."""
    import torch
    M = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    if metric == "euclidean":
        M = torch.where(M > 0, M.clamp_min(1e-300).sqrt(), torch.zeros_like(M))
    return conveyor.ot.sinkhorn2(a, b, M, REG, stopThr=1e-14, numItermax=100000)


METRICS = pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])


def centred(v):
    return v - v.mean()


@METRICS
def test_torch_points_gradients_equal_the_cost_matrix_path(metric, tight):
    """Value and gradients in X, Y, a, b (the weights' centred) equal those of
    sinkhorn2 on the cost matrix made from the points in torch (each rank alone);
    a loss of the value chains (loss**2). The distance's sums come from the
    engine's plan weighted by the cost and its inverse (cost_power)."""
    pytest.importorskip("torch")
    X, Y, a, b = clouds(seed=1)
    value, grads = torch_grads(lambda *t: conveyor.ot.empirical_sinkhorn2(t[0], t[1], REG, t[2], t[3], metric=metric,
                                                                         **tight), X, Y, a, b)
    ref_value, ref = torch_grads(lambda *t: dense_loss(*t, metric=metric), X, Y, a, b)
    assert value == pytest.approx(ref_value, rel=1e-12)
    for mine, theirs, view in zip(grads, ref, [np.asarray, np.asarray, centred, centred]):
        np.testing.assert_allclose(view(mine), view(theirs), rtol=1e-8, atol=1e-12)
    _, squared = torch_grads(lambda X_: conveyor.ot.empirical_sinkhorn2(X_, Y, REG, a, b, metric=metric, **tight) ** 2,
                             X)
    np.testing.assert_allclose(squared[0], 2 * value * grads[0], rtol=1e-10)


def test_torch_points_gradients_match_pot(tight):
    """POT on torch tensors (ot.dist, then ot.sinkhorn2, differentiated through its
    iterations) gives the same gradients in the points at convergence."""
    torch = pytest.importorskip("torch")
    ot = pytest.importorskip("ot")
    X, Y, a, b = clouds(n=8, m=6, seed=2)
    _, grads = torch_grads(lambda X_, Y_: conveyor.ot.empirical_sinkhorn2(X_, Y_, REG, a, b, **tight), X, Y)
    # (what POT's empirical_sinkhorn2 computes without isLazy; Debian's POT 0.8.2
    # returns that function's value detached from the points)
    _, ref = torch_grads(lambda X_, Y_: ot.sinkhorn2(torch.tensor(a), torch.tensor(b), ot.dist(X_, Y_), REG,
                                                     numItermax=100000, stopThr=1e-13), X, Y)
    for mine, theirs in zip(grads, ref):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-9)


@METRICS
def test_points_gradients_match_finite_differences(metric, tight):
    """Central differences of the NumPy solver's value in every coordinate of X and Y."""
    pytest.importorskip("torch")
    X, Y, a, b = clouds(n=5, m=4, d=2, seed=3)
    _, grads = torch_grads(lambda X_, Y_: conveyor.ot.empirical_sinkhorn2(X_, Y_, REG, a, b, metric=metric, **tight),
                           X, Y)
    h = 1e-6
    for which, points in enumerate((X, Y)):
        fd = np.zeros_like(points)
        for index in np.ndindex(points.shape):
            step = np.zeros_like(points)
            step[index] = h
            args = ((X + step, Y), (X - step, Y)) if which == 0 else ((X, Y + step), (X, Y - step))
            plus, minus = (conveyor.ot.empirical_sinkhorn2(p[0], p[1], REG, a, b, metric=metric, **tight)
                           for p in args)
            fd[index] = (plus - minus) / (2 * h)
        np.testing.assert_allclose(grads[which], fd, rtol=1e-6, atol=1e-8)


@METRICS
@pytest.mark.parametrize("first_empty", [False, True])
def test_torch_points_split_over_ranks(comm, first_empty, metric, tight):
    """With `comm` each rank holds a share of X (with a) and of Y (with b); the
    value is the total on every rank and backward() (collective) gives each rank
    its rows of the one-process gradients. Also with no points at all on rank 0,
    and with uniform weights (None)."""
    torch = pytest.importorskip("torch")
    X, Y, a, b = clouds(n=10, m=7, seed=4)
    value, full = torch_grads(lambda *t: conveyor.ot.empirical_sinkhorn2(t[0], t[1], REG, t[2], t[3], metric=metric,
                                                                        **tight), X, Y, a, b)
    rx, ry = share(comm, 10, first_empty), share(comm, 7, first_empty)
    mine, grads = torch_grads(lambda *t: conveyor.ot.empirical_sinkhorn2(t[0], t[1], REG, t[2], t[3], comm=comm,
                                                                        metric=metric, **tight),
                              X[rx], Y[ry], a[rx], b[ry])
    assert mine == pytest.approx(value, rel=1e-11)
    np.testing.assert_allclose(grads[0], full[0][rx], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(grads[1], full[1][ry], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(grads[2], centred(full[2])[rx], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(grads[3], centred(full[3])[ry], rtol=1e-8, atol=1e-12)
    _, uniform = torch_grads(lambda X_: conveyor.ot.empirical_sinkhorn2(X_, Y, REG, metric=metric, **tight), X)
    Xt = torch.tensor(X[rx], requires_grad=True)
    conveyor.ot.empirical_sinkhorn2(Xt, torch.tensor(Y[ry]), REG, comm=comm, metric=metric, **tight).backward()
    np.testing.assert_allclose(Xt.grad.numpy(), uniform[0][rx], rtol=1e-8, atol=1e-12)


def test_torch_divergence_gradient(tight):
    """empirical_sinkhorn_divergence on tensors: value and gradient in X equal the
    same combination of the three cost-matrix losses; equal clouds give 0 with a
    zero gradient (the minimum)."""
    torch = pytest.importorskip("torch")
    X, Y, a, b = clouds(n=6, m=5, seed=5)
    # (Sinkhorn's alternating updates on the symmetric problem OT(a, a) creep here:
    # its marginal error is still 2.1e-9 after 10^5 iterations)
    loose = dict(stopThr=1e-8, numIterMax=100000, dense=tight["dense"])
    value, grads = torch_grads(lambda X_: conveyor.ot.empirical_sinkhorn_divergence(X_, Y, REG, a, b, **loose), X)

    def dense_divergence(X_):
        Y_ = torch.tensor(Y)
        return dense_loss(X_, Y_, a, b) - 0.5 * (dense_loss(X_, X_, a, a) + dense_loss(Y_, Y_, b, b))

    ref_value, ref = torch_grads(dense_divergence, X)
    assert value == pytest.approx(ref_value, rel=1e-7)
    np.testing.assert_allclose(grads[0], ref[0], rtol=1e-5, atol=1e-7)
    same, zero = torch_grads(lambda X_: conveyor.ot.empirical_sinkhorn_divergence(X_, X, REG, a, a, **loose), X)
    assert same == 0.0
    np.testing.assert_allclose(zero[0], 0.0, atol=1e-6)  # (to the solves' tolerance)


def test_torch_float32_points(tight):
    """float32 points give a float32 value and gradients close to float64's."""
    torch = pytest.importorskip("torch")
    X, Y, a, b = clouds(seed=6)
    _, ref = torch_grads(lambda X_: conveyor.ot.empirical_sinkhorn2(X_, Y, REG, a, b, **tight), X)
    Xt = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    value = conveyor.ot.empirical_sinkhorn2(Xt, torch.tensor(Y, dtype=torch.float32), REG,
                                            torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32),
                                            stopThr=1e-6, dense=tight["dense"])
    value.backward()
    assert value.dtype == torch.float32 and Xt.grad.dtype == torch.float32
    np.testing.assert_allclose(Xt.grad.numpy(), ref[0], rtol=1e-3, atol=1e-4)


def test_jax_points_value_and_grad(tight):
    """jax.value_and_grad (and under jax.jit) gives the torch path's value and
    gradients; float32 gives float32."""
    jax = pytest.importorskip("jax")
    pytest.importorskip("torch")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    X, Y, a, b = clouds(seed=7)
    value, ref = torch_grads(lambda *t: conveyor.ot.empirical_sinkhorn2(t[0], t[1], REG, t[2], t[3], **tight),
                             X, Y, a, b)

    def loss(*arrays):
        return conveyor.ot.empirical_sinkhorn2(arrays[0], arrays[1], REG, arrays[2], arrays[3], **tight)

    with enable_x64():
        args = [jnp.asarray(x) for x in (X, Y, a, b)]
        mine, grads = jax.value_and_grad(loss, argnums=(0, 1, 2, 3))(*args)
        assert float(mine) == pytest.approx(value, rel=1e-12)
        for g, r in zip(grads, ref):
            np.testing.assert_allclose(np.asarray(g), r, rtol=1e-8, atol=1e-12)
        jitted = jax.jit(jax.grad(loss))(*args)
        np.testing.assert_allclose(np.asarray(jitted), ref[0], rtol=1e-8, atol=1e-12)
    g32 = jax.grad(lambda X_: conveyor.ot.empirical_sinkhorn2(X_, jnp.asarray(Y, jnp.float32), REG, stopThr=1e-6,
                                                             dense=tight["dense"]))(jnp.asarray(X, jnp.float32))
    assert g32.dtype == jnp.float32
    # the distance (cost_power sums) through the same custom VJP
    _, ref = torch_grads(lambda X_: conveyor.ot.empirical_sinkhorn2(X_, Y, REG, a, b, metric="euclidean", **tight), X)
    with enable_x64():
        g = jax.grad(lambda X_: conveyor.ot.empirical_sinkhorn2(X_, jnp.asarray(Y), REG, jnp.asarray(a), jnp.asarray(b),
                                                               metric="euclidean", **tight))(jnp.asarray(X))
        np.testing.assert_allclose(np.asarray(g), ref[0], rtol=1e-8, atol=1e-12)


def test_euclidean_gradients_where_points_meet(tight):
    """metric="euclidean" with a point of Y on a point of X: |x - y| has no
    gradient there; the engine's inverse cost counts that pair 0 (the
    subgradient 0, as GeomLoss's clamped distance), so the gradients stay finite
    and equal the dense path's with the same rule, and the divergence's
    self-problems (every point on itself) differentiate too."""
    torch = pytest.importorskip("torch")
    X, Y, a, b = clouds(n=6, m=5, seed=8)
    Y[1] = X[3]
    value, grads = torch_grads(lambda *t: conveyor.ot.empirical_sinkhorn2(t[0], t[1], REG, t[2], t[3],
                                                                         metric="euclidean", **tight), X, Y, a, b)
    ref_value, ref = torch_grads(lambda *t: dense_loss(*t, metric="euclidean"), X, Y, a, b)
    assert value == pytest.approx(ref_value, rel=1e-12)
    for mine, theirs, view in zip(grads, ref, [np.asarray, np.asarray, centred, centred]):
        assert np.isfinite(mine).all()
        np.testing.assert_allclose(view(mine), view(theirs), rtol=1e-8, atol=1e-12)
    loose = dict(stopThr=1e-8, numIterMax=100000, dense=tight["dense"])
    _, div = torch_grads(lambda X_: conveyor.ot.empirical_sinkhorn_divergence(X_, Y, REG, a, b, metric="euclidean",
                                                                              **loose), X)

    def dense_divergence(X_):
        Y_ = torch.tensor(Y)
        return (dense_loss(X_, Y_, a, b, "euclidean")
                - 0.5 * (dense_loss(X_, X_, a, a, "euclidean") + dense_loss(Y_, Y_, b, b, "euclidean")))

    _, div_ref = torch_grads(dense_divergence, X)
    np.testing.assert_allclose(div[0], div_ref[0], rtol=1e-5, atol=1e-7)


def test_torch_tensor_off_the_cpu_refused_on_every_rank(comm):
    """One rank's points on another device (PyTorch's "meta", as CUDA would be),
    each rank in turn: ValueError naming the device on every rank."""
    torch = pytest.importorskip("torch")
    X, Y, _, _ = clouds(n=6, m=4)
    for bad in range(comm.size):
        Xt = torch.tensor(X, requires_grad=True)
        if comm.rank == bad:
            Xt = torch.empty(X.shape, dtype=torch.float64, device="meta", requires_grad=True)
        with pytest.raises(ValueError, match=f"rank {bad}: .*meta" if comm.size > 1 else "meta"):
            conveyor.ot.empirical_sinkhorn2(Xt, torch.tensor(Y), REG, comm=comm)
