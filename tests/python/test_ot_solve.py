# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.ot.solve, POT 0.9's unified entry point for entropic problems: its
results against POT's own ot.solve (where the installed POT has it: 0.9.5 in
scripts/test's pip venvs; Debian's 0.8.2 has none, so there the comparison is
with conveyor.ot.sinkhorn's log-domain solve), what is not implemented, the
problem split over ranks, and under JAX the three `grad` modes: autodiff
differentiates the value, the linear value and the plan (against a Sinkhorn loop
unrolled and differentiated by JAX), envelope gives the value POT's envelope
gradients and detaches the rest, detach gives values only."""
import numpy as np
import pytest

import conveyor
import conveyor.ot
from unrolled_sinkhorn import unrolled_plan

REG = 0.25


def problem(n=16, m=11, seed=0):
    rng = np.random.default_rng(seed)
    M = rng.random((n, m))
    a, b = rng.random(n) + 0.5, rng.random(m) + 0.5
    return M, a / a.sum(), b / b.sum()


def reference(M, a, b, reg_type):
    """POT's ot.solve, or the same formulas over conveyor.ot.sinkhorn's log-domain solve."""
    try:
        import ot
        if hasattr(ot, "solve"):
            r = ot.solve(M, a, b, reg=REG, reg_type=reg_type)
            return r.value, r.value_linear, r.plan, r.potentials
    except ImportError:
        pass
    P, log = conveyor.ot.sinkhorn(a, b, M, REG, method="sinkhorn_log", log=True)
    ref = np.outer(a, b) if reg_type == "KL" else np.ones_like(M)
    linear = float((P * M).sum())
    return linear + REG * float((P * np.log(P / ref + 1e-16)).sum()), linear, P, (log["log_u"], log["log_v"])


@pytest.mark.parametrize("reg_type", ["KL", "entropy"])
def test_values_plan_and_potentials_as_pot(reg_type):
    M, a, b = problem()
    value, linear, plan, (f, g) = reference(M, a, b, reg_type)
    res = conveyor.ot.solve(M, a, b, reg=REG, reg_type=reg_type)
    assert res.value == pytest.approx(value, rel=1e-12) and res.value_linear == pytest.approx(linear, rel=1e-12)
    np.testing.assert_allclose(res.plan, plan, rtol=1e-10, atol=1e-16)
    np.testing.assert_allclose(res.potentials[0], f, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.potential_b, g, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.marginal_a, a, atol=1e-9)
    assert res.value_quad is None and res.status is None and "niter" in res.log and "value=" in repr(res)


def test_defaults_uniform_and_float32():
    M, _, _ = problem(9, 7, seed=1)
    res = conveyor.ot.solve(M, reg=REG)
    np.testing.assert_allclose(res.marginal_a, np.full(9, 1 / 9), atol=1e-9)
    res32 = conveyor.ot.solve(M.astype(np.float32), reg=REG, tol=1e-6)
    assert res32.plan.dtype == np.float32 and isinstance(res32.value, np.float32)
    assert float(res32.value) == pytest.approx(float(res.value), rel=1e-4)


def test_zero_weight_counts_as_zero_log_zero():
    """A zero weight in a and in b: the KL value is that of the problem without
    those points (0 log 0 = 0; POT's is NaN there), on NumPy and on torch tensors,
    whose autodiff gradients stay finite."""
    M, a, b = problem(9, 7, seed=4)
    a[2], b[5] = 0.0, 0.0
    a, b = a / a.sum(), b / b.sum()
    keep_a, keep_b = np.flatnonzero(a), np.flatnonzero(b)
    reduced = conveyor.ot.solve(M[np.ix_(keep_a, keep_b)], a[keep_a], b[keep_b], reg=REG, tol=1e-13, max_iter=10000)
    res = conveyor.ot.solve(M, a, b, reg=REG, tol=1e-13, max_iter=10000)
    assert res.value == pytest.approx(reduced.value, rel=1e-10)
    torch = pytest.importorskip("torch")
    Mt, at, bt = (torch.tensor(x, requires_grad=True) for x in (M, a, b))
    value = conveyor.ot.solve(Mt, at, bt, reg=REG, tol=1e-13, max_iter=10000).value
    assert float(value) == pytest.approx(reduced.value, rel=1e-10)
    value.backward()
    assert all(np.isfinite(t.grad.numpy()).all() for t in (Mt, at, bt))


@pytest.mark.parametrize("kwargs, words", [
    (dict(), "exact OT"),
    (dict(reg=REG, reg_type="L2"), "reg_type='L2'"),
    (dict(reg=REG, c=np.ones((4, 3))), "reference measure"),
    (dict(reg=REG, unbalanced=1.0, unbalanced_type="TV"), "unbalanced_type='TV'"),
    (dict(reg=REG, unbalanced=1.0, reg_type="entropy"), "reg_type='entropy'"),
])
def test_what_is_not_implemented_says_so(kwargs, words):
    M, a, b = problem(4, 3)
    with pytest.raises(NotImplementedError, match=words.replace("(", r"\(").replace(")", r"\)")):
        conveyor.ot.solve(M, a, b, **kwargs)


def test_bad_arguments():
    M, a, b = problem(4, 3)
    with pytest.raises(ValueError, match="grad must be one of"):
        conveyor.ot.solve(M, a, b, reg=REG, grad="unrolled")
    with pytest.raises(ValueError, match="M must be 2-D"):
        conveyor.ot.solve(M.ravel(), reg=REG)
    # Infinite relaxation is the balanced problem (POT's convention).
    assert conveyor.ot.solve(M, a, b, reg=REG, unbalanced=float("inf")).value == \
        pytest.approx(conveyor.ot.solve(M, a, b, reg=REG).value)


def test_bad_argument_on_one_rank_is_an_error_on_every_rank(comm, bad_rank):
    """One rank's bad `grad` (each rank in turn), and one rank's unimplemented
    method in solve_sample: the same error on every rank, no rank left waiting."""
    M, a, b = problem(6, 4)
    with pytest.raises(ValueError, match=f"rank {bad_rank}: .*grad must be one of"):
        conveyor.ot.solve(M, a, b, reg=REG, grad="unrolled" if comm.rank == bad_rank else "autodiff", comm=comm)
    X, Y = clouds(6, 4)
    with pytest.raises(NotImplementedError, match=f"rank {bad_rank}: .*method='1d'"):
        conveyor.ot.solve_sample(X, Y, reg=REG, method="1d" if comm.rank == bad_rank else None, lazy=True, comm=comm)
    first, count = conveyor.balanced_rows(6, comm)  # the communicator works after
    rows = slice(first, first + count)
    assert conveyor.ot.solve(M[rows], a[rows], b, reg=REG, comm=comm).value == \
        pytest.approx(conveyor.ot.solve(M, a, b, reg=REG).value, rel=1e-9)


def test_split_over_ranks(comm):
    """With comm: the values are totals, the plan and the first potential this
    rank's rows of the one-process ones."""
    M, a, b = problem(13, 6, seed=2)
    first, count = conveyor.balanced_rows(13, comm)
    rows = slice(first, first + count)
    whole = conveyor.ot.solve(M, a, b, reg=REG)
    mine = conveyor.ot.solve(M[rows], a[rows], b, reg=REG, comm=comm)
    assert mine.value == pytest.approx(whole.value, rel=1e-10)
    assert mine.value_linear == pytest.approx(whole.value_linear, rel=1e-10)
    np.testing.assert_allclose(mine.plan, whole.plan[rows], rtol=1e-9, atol=1e-15)


# --- JAX --------------------------------------------------------------------------

def test_jax_grad_modes():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    M, a, b = problem(12, 9, seed=3)
    W = np.random.default_rng(4).standard_normal(M.shape)
    with enable_x64():
        args = tuple(jnp.asarray(x) for x in (a, b, M))

        def through(grad, pick):
            return lambda a_, b_, M_: pick(conveyor.ot.solve(M_, a_, b_, reg=REG, tol=1e-13, max_iter=100000,
                                                             grad=grad))

        # autodiff: the plan's VJP and the linear value against the unrolled loop.
        mine = jax.grad(through("autodiff", lambda r: jnp.sum(r.plan * W)), argnums=(0, 1, 2))(*args)
        ref = jax.grad(lambda a_, b_, M_: jnp.sum(unrolled_plan(a_, b_, M_, REG) * W), argnums=(0, 1, 2))(*args)
        centred = lambda v: np.asarray(v) - np.asarray(v).mean()
        np.testing.assert_allclose(np.asarray(mine[2]), np.asarray(ref[2]), rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(centred(mine[0]), centred(ref[0]), rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(centred(mine[1]), centred(ref[1]), rtol=1e-7, atol=1e-10)
        linear = jax.grad(through("autodiff", lambda r: r.value_linear), argnums=2)(*args)
        ref_linear = jax.grad(lambda M_: jnp.sum(unrolled_plan(args[0], args[1], M_, REG) * M_))(args[2])
        np.testing.assert_allclose(np.asarray(linear), np.asarray(ref_linear), rtol=1e-7, atol=1e-10)
        # The value: envelope is POT's rule (P for M, reg * centred potentials for a and b);
        # autodiff the value's true gradient, the same for the entropy and, for KL to
        # a b^T, that minus reg * log of the weights (the reference measure moves with them).
        for reg_type in ("entropy", "KL"):
            res = conveyor.ot.solve(M, a, b, reg=REG, reg_type=reg_type, tol=1e-13, max_iter=100000)
            shift = (np.log(a), np.log(b)) if reg_type == "KL" else (0.0, 0.0)

            def value_of(grad):
                return lambda a_, b_, M_: conveyor.ot.solve(M_, a_, b_, reg=REG, reg_type=reg_type, tol=1e-13,
                                                            max_iter=100000, grad=grad).value

            auto = jax.grad(value_of("autodiff"), argnums=(0, 1, 2))(*args)
            env = jax.grad(value_of("envelope"), argnums=(0, 1, 2))(*args)
            for g, (sa, sb) in ((auto, shift), (env, (0.0, 0.0))):
                np.testing.assert_allclose(np.asarray(g[2]), res.plan, rtol=1e-7, atol=1e-12)
                np.testing.assert_allclose(centred(g[0]), REG * centred(res.potentials[0] - sa), rtol=1e-6, atol=1e-9)
                np.testing.assert_allclose(centred(g[1]), REG * centred(res.potentials[1] - sb), rtol=1e-6, atol=1e-9)
            h = 1e-6  # the autodiff gradient is the value's: a central difference along a mass-keeping direction
            d = np.random.default_rng(5).standard_normal(a.size)
            d -= d.mean()
            fd = (float(value_of("detach")(args[0] + h * d, args[1], args[2]))
                  - float(value_of("detach")(args[0] - h * d, args[1], args[2]))) / (2 * h)
            assert float(np.asarray(auto[0]) @ d) == pytest.approx(fd, rel=1e-5, abs=1e-8)
        # envelope detaches the linear value and the plan; detach everything.
        assert not np.any(np.asarray(jax.grad(through("envelope", lambda r: r.value_linear), argnums=2)(*args)))
        assert not np.any(np.asarray(jax.grad(through("detach", lambda r: r.value), argnums=2)(*args)))
        value = jax.jit(lambda M_: conveyor.ot.solve(M_, args[0], args[1], reg=REG).value)(args[2])
        assert float(value) == pytest.approx(float(res.value), rel=1e-8)


def test_jax_split_over_ranks(comm):
    """Under JAX with comm: each rank's gradient of the total value with respect
    to its rows of M is those rows of the one-process gradient (autodiff and
    envelope: the plan's rows)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    M, a, b = problem(11, 5, seed=6)
    first, count = conveyor.balanced_rows(11, comm)
    rows = slice(first, first + count)
    whole = conveyor.ot.solve(M, a, b, reg=REG, tol=1e-13, max_iter=100000)
    with enable_x64():
        for grad in ("autodiff", "envelope"):
            value, gM = jax.value_and_grad(lambda M_: conveyor.ot.solve(M_, jnp.asarray(a[rows]), jnp.asarray(b), reg=REG,
                                                                        tol=1e-13, max_iter=100000, grad=grad,
                                                                        comm=comm).value)(jnp.asarray(M[rows]))
            assert float(value) == pytest.approx(float(whole.value), rel=1e-10)
            np.testing.assert_allclose(np.asarray(gM), whole.plan[rows], rtol=1e-7, atol=1e-12)


def test_torch_split_over_ranks_weights_gradients(comm):
    """With comm, backward() of the total value gives each rank its rows of the
    one-process gradients for M and a, and b's whole gradient (b is whole on
    every rank and enters each rank's KL term: its gradient is summed over the
    ranks), under "autodiff" and "envelope"."""
    torch = pytest.importorskip("torch")
    M, a, b = problem(comm.size + 3, 5, seed=6)
    first, count = conveyor.balanced_rows(a.size, comm)
    rows = slice(first, first + count)
    for grad in ("autodiff", "envelope"):
        grads = []
        for take, on in ((slice(None), None), (rows, comm)):
            Mt, at, bt = (torch.tensor(x, requires_grad=True) for x in (M[take], a[take], b))
            conveyor.ot.solve(Mt, at, bt, reg=REG, tol=1e-13, max_iter=100000, grad=grad, comm=on).value.backward()
            grads.append([t.grad.numpy() for t in (Mt, at, bt)])
        (gM, ga, gb), (mM, ma, mb) = grads
        np.testing.assert_allclose(mM, gM[rows], rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(ma, ga[rows], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(mb, gb, rtol=1e-6, atol=1e-9)


# --- solve_sample -------------------------------------------------------------------

def clouds(n=14, m=10, seed=7):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 2)), rng.standard_normal((m, 2))


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_solve_sample_as_pot(lazy, metric):
    """Against POT 0.9.5's ot.solve_sample (venvs); against Conveyor's own two
    routes where the POT installed has none (each route checks the other)."""
    X, Y = clouds()
    res = conveyor.ot.solve_sample(X, Y, reg=0.5, lazy=lazy, metric=metric)
    import importlib
    ot = importlib.import_module("ot") if importlib.util.find_spec("ot") else None
    if ot is not None and hasattr(ot, "solve_sample"):
        ref = ot.solve_sample(X, Y, reg=0.5, lazy=lazy, metric=metric)
        value, linear, f = ref.value, ref.value_linear, np.asarray(ref.potentials[0])
        plan = ref.lazy_plan[:] if lazy else ref.plan
    else:
        other = conveyor.ot.solve_sample(X, Y, reg=0.5, lazy=not lazy, metric=metric)
        linear, f = other.value_linear, np.asarray(other.potentials[0])
        plan = conveyor.ot.empirical_sinkhorn(X, Y, 0.5, metric=metric)  # the point solver's plan
        uniform = np.full(plan.shape, 1.0 / plan.size)
        value = linear + 0.5 * float((plan * np.log(plan / uniform + 1e-16)).sum())
    assert res.value_linear == pytest.approx(linear, rel=1e-8)
    if lazy:
        assert res.value is None and res.plan is None
        if res.lazy_plan is not None or hasattr(ot, "solve_sample"):  # (POT 0.8 has no LazyTensor to give)
            np.testing.assert_allclose(res.lazy_plan[:], plan, rtol=1e-7, atol=1e-14)
    else:
        assert res.value == pytest.approx(value, rel=1e-8)
        np.testing.assert_allclose(res.plan, plan, rtol=1e-7, atol=1e-14)
    mine = np.asarray(res.potentials[0])
    if not (ot is not None and hasattr(ot, "solve_sample")):  # the two routes fix the shared constant differently
        mine, f = mine - mine.mean(), f - f.mean()
    np.testing.assert_allclose(mine, f, rtol=1e-7, atol=1e-7)  # (two solves to tol 1e-9 in the fallback)


def test_solve_sample_not_implemented():
    X, Y = clouds(5, 4)
    for kwargs, words in ((dict(reg=0.5, method="1d"), "method='1d'"), (dict(reg=0.5, method="geomloss_online"), "geomloss"),
                          (dict(reg=0.5, metric="cityblock"), "metric='cityblock'"), (dict(lazy=True), "exact OT"),
                          (dict(reg=0.5, lazy=True, unbalanced=1.0), "unbalanced")):
        with pytest.raises(NotImplementedError, match=words):
            conveyor.ot.solve_sample(X, Y, **kwargs)


def test_jax_gradient_reaches_the_points():
    """solve_sample(lazy=False) on JAX points: the gradient of the linear value
    with respect to the source points, through the cost and the plan's VJP,
    equals that of the unrolled loop on the same cost."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    X, Y = clouds(9, 7, seed=8)
    with enable_x64():
        Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
        u, v = jnp.full(9, 1 / 9), jnp.full(7, 1 / 7)

        def cost(X_):
            return jnp.sum((X_[:, None, :] - Yj[None, :, :]) ** 2, axis=-1)

        mine = jax.grad(lambda X_: conveyor.ot.solve_sample(X_, Yj, reg=REG, tol=1e-13, max_iter=100000).value_linear)(Xj)
        ref = jax.grad(lambda X_: jnp.sum(unrolled_plan(u, v, cost(X_), REG) * cost(X_)))(Xj)
        np.testing.assert_allclose(np.asarray(mine), np.asarray(ref), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean"])
def test_lazy_value_linear_differentiable(comm, metric):
    """solve_sample(lazy=True) on tensors: value_linear is empirical_sinkhorn2's
    loss with its gradients (points and weights), the potentials those of the
    NumPy call, without gradients; "detach" gives no gradient. With comm (each
    rank its share of both clouds, one rank possibly none), the same as
    empirical_sinkhorn2 split alike."""
    torch = pytest.importorskip("torch")
    X, Y = clouds(comm.size + 4, 6, seed=9)
    b = np.random.default_rng(2).random(6) + 0.5
    b /= b.sum()
    numpy = conveyor.ot.solve_sample(X, Y, b=b, reg=REG, lazy=True, metric=metric, tol=1e-13, max_iter=100000)
    first, count = conveyor.balanced_rows(X.shape[0], comm)
    mine_rows = slice(first, first + count)
    cols_first, cols_count = conveyor.balanced_rows(Y.shape[0], comm)
    mine_cols = slice(cols_first, cols_first + cols_count)
    for on, rows, cols in ((None, slice(None), slice(None)), (comm, mine_rows, mine_cols)):
        grads = []
        for route in ("solve_sample", "empirical_sinkhorn2"):
            Xt, Yt, bt = (torch.tensor(x, requires_grad=True) for x in (X[rows], Y[cols], b[cols]))
            if route == "solve_sample":
                res = conveyor.ot.solve_sample(Xt, Yt, b=bt, reg=REG, lazy=True, metric=metric, tol=1e-13,
                                               max_iter=100000, comm=on)
                value = res.value_linear
                assert res.value is None and res.log is None and not res.potentials[0].requires_grad
                if on is None:
                    np.testing.assert_allclose(res.potentials[0].numpy(), numpy.potentials[0], rtol=1e-10,
                                               atol=1e-12)
            else:
                value = conveyor.ot.empirical_sinkhorn2(Xt, Yt, REG, b=bt, metric=metric, stopThr=1e-13,
                                                        numIterMax=100000, comm=on)
            value.backward()
            assert float(value) == pytest.approx(float(numpy.value_linear), rel=1e-10)
            grads.append([t.grad.numpy() for t in (Xt, Yt, bt)])
        for g, h in zip(*grads):
            np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-15)
    detached = conveyor.ot.solve_sample(torch.tensor(X, requires_grad=True), torch.tensor(Y), reg=REG, lazy=True,
                                        metric=metric, grad="detach")
    assert not detached.value_linear.requires_grad


def test_jax_lazy_grad_and_jit():
    """jax.grad of solve_sample(lazy=True).value_linear, also under jax.jit: the
    gradient of empirical_sinkhorn2 on the same points."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    X, Y = clouds(9, 7, seed=10)
    with enable_x64():
        Xj, Yj = jnp.asarray(X), jnp.asarray(Y)

        def lazy(X_):
            return conveyor.ot.solve_sample(X_, Yj, reg=REG, lazy=True, tol=1e-13, max_iter=100000).value_linear

        ref = jax.grad(lambda X_: conveyor.ot.empirical_sinkhorn2(X_, Yj, REG, stopThr=1e-13, numIterMax=100000,
                                                                   isLazy=True))(Xj)
        for grad in (jax.grad(lazy), jax.jit(jax.grad(lazy))):
            np.testing.assert_allclose(np.asarray(grad(Xj)), np.asarray(ref), rtol=1e-12, atol=1e-15)
