# SPDX-License-Identifier: BSD-3-Clause
"""Gradients through conveyor.ot (issue "Optimal transport inside training
loops"): sinkhorn2's loss differentiated by implicit differentiation of the
Sinkhorn fixed point (conveyor/ot/_gradients.py), checked against central finite
differences of the solver itself and, under JAX, against a Sinkhorn loop unrolled
and differentiated by JAX (what POT does through its iterations). At several
ranks the problem is split by rows over the ranks (`comm`) and must give the
one-process gradients. JAX is installed in scripts/test's pip venvs
(tests/python/installed_package.sh); Debian's python3 used by CTest has none,
so the JAX tests run there only."""
import numpy as np
import pytest

import conveyor
import conveyor.ot
from conveyor.ot._gradients import sinkhorn2_gradients
from unrolled_sinkhorn import unrolled_plan

REG = 0.3


def problem(n=12, m=9, seed=0):
    """A small problem with uneven weights and a cost of scale 1."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, 2)), rng.standard_normal((m, 2))
    M = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    a, b = rng.random(n) + 0.5, rng.random(m) + 0.5
    return a / a.sum(), b / b.sum(), M / M.max()


def loss(a, b, M, comm=None):
    return conveyor.ot.sinkhorn2(a, b, M, REG, stopThr=1e-14, numItermax=100000, comm=comm)


def my_rows(comm, n):
    """This rank's rows in the balanced partition, as a slice."""
    first, count = conveyor.balanced_rows(n, comm)
    return slice(first, first + count)


def test_gradients_match_finite_differences():
    """Directional derivatives along random directions (mass-preserving ones for
    the weights) equal the central differences of the solver's loss."""
    a, b, M = problem()
    P = conveyor.ot.sinkhorn(a, b, M, REG, stopThr=1e-14, numItermax=100000)
    gM, ga, gb = sinkhorn2_gradients(P, M, REG)
    rng = np.random.default_rng(1)
    h = 1e-6
    D = rng.standard_normal(M.shape)
    da = rng.standard_normal(a.size)
    da -= da.mean()
    db = rng.standard_normal(b.size)
    db -= db.mean()
    for (grad, step, moved) in ((gM, D, lambda t: loss(a, b, M + t * D)), (ga, da, lambda t: loss(a + t * da, b, M)),
                                (gb, db, lambda t: loss(a, b + t * db, M))):
        fd = (moved(h) - moved(-h)) / (2 * h)
        assert float((grad * step).sum()) == pytest.approx(fd, rel=1e-6, abs=1e-9)
    assert abs(ga.sum()) < 1e-12 and abs(gb.sum()) < 1e-12  # centred
    assert gM.shape == M.shape and ga.shape == a.shape and gb.shape == b.shape


def test_gradients_split_over_ranks_equal_one_process(comm):
    """With `comm` each rank passes its rows of M and a: its rows of the
    gradients, and b's gradient (whole on every rank), are the one-process ones."""
    a, b, M = problem(n=17, m=6, seed=2)
    rows = my_rows(comm, 17)
    P_all = conveyor.ot.sinkhorn(a, b, M, REG, stopThr=1e-14, numItermax=100000)
    whole = sinkhorn2_gradients(P_all, M, REG)
    P = conveyor.ot.sinkhorn(a[rows], b, M[rows], REG, stopThr=1e-14, numItermax=100000, comm=comm)
    gM, ga, gb = sinkhorn2_gradients(P, M[rows], REG, comm=comm)
    np.testing.assert_allclose(gM, whole[0][rows], rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(ga, whole[1][rows], rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(gb, whole[2], rtol=1e-7, atol=1e-12)


def test_zero_weights_give_zero_rows():
    """A source of weight zero carries no plan: its row of dL/dM is zero, and the
    solve does not divide by its zero row sum."""
    a, b, M = problem(n=8, m=5, seed=3)
    a[2] = 0.0
    a /= a.sum()
    P = conveyor.ot.sinkhorn(a, b, M, REG, stopThr=1e-14, numItermax=100000)
    gM, ga, gb = sinkhorn2_gradients(P, M, REG)
    assert np.all(gM[2] == 0) and np.all(np.isfinite(gM)) and np.all(np.isfinite(ga)) and np.all(np.isfinite(gb))


# --- JAX --------------------------------------------------------------------------

def unrolled_loss(a, b, M):
    """sinkhorn2's loss as JAX differentiates it through the iterations."""
    import jax.numpy as jnp

    return jnp.sum(unrolled_plan(a, b, M, REG, 400) * M)


def test_jax_value_and_grad_match_the_unrolled_loop():
    """jax.value_and_grad through conveyor.ot.sinkhorn2 (float64; each rank alone
    at several ranks): the value, and
    the gradients with respect to M, a and b (the weights' up to a constant,
    compared centred), equal those of the unrolled loop at convergence; jax.jit
    of the gradient gives the same; float32 input gives float32 gradients."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    a, b, M = problem(n=20, m=14, seed=4)
    with enable_x64():
        args = (jnp.asarray(a), jnp.asarray(b), jnp.asarray(M))
        value, grads = jax.value_and_grad(lambda *x: conveyor.ot.sinkhorn2(*x, REG, stopThr=1e-13, numItermax=100000),
                                          argnums=(0, 1, 2))(*args)
        ref_value, ref = jax.value_and_grad(unrolled_loss, argnums=(0, 1, 2))(*args)
        assert type(value) is type(ref_value) and float(value) == pytest.approx(float(ref_value), rel=1e-12)
        centred = [lambda v: np.asarray(v) - np.asarray(v).mean()] * 2 + [np.asarray]
        for mine, theirs, view in zip(grads[:2] + (grads[2],), ref[:2] + (ref[2],), centred):
            np.testing.assert_allclose(view(mine), view(theirs), rtol=1e-8, atol=1e-11)
        jitted = jax.jit(jax.grad(lambda M_: conveyor.ot.sinkhorn2(args[0], args[1], M_, REG, stopThr=1e-13,
                                                                    numItermax=100000)))(args[2])
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(grads[2]), rtol=1e-10, atol=1e-14)
        # The chain rule through a loss of the value.
        squared = jax.grad(lambda M_: conveyor.ot.sinkhorn2(args[0], args[1], M_, REG, stopThr=1e-13) ** 2)(args[2])
        np.testing.assert_allclose(np.asarray(squared), 2 * float(value) * np.asarray(grads[2]), rtol=1e-6)
    g32 = jax.grad(lambda M_: conveyor.ot.sinkhorn2(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32), M_, REG,
                                                    stopThr=1e-7))(jnp.asarray(M, jnp.float32))
    assert g32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(g32), np.asarray(grads[2]), rtol=1e-3, atol=1e-5)


def test_jax_grad_split_over_ranks(comm):
    """With `comm`, jax.grad on each rank's rows gives that rank's rows of the
    one-process gradient (and b's whole); the loss is the total on every rank.
    Uniform weights passed as POT's empty lists are constants."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    a, b, M = problem(n=15, m=7, seed=5)
    rows = my_rows(comm, 15)
    with enable_x64():
        full = jax.grad(unrolled_loss, argnums=(1, 2))(jnp.asarray(a), jnp.asarray(b), jnp.asarray(M))
        value, (gb, gM) = jax.value_and_grad(
            lambda b_, M_: conveyor.ot.sinkhorn2(jnp.asarray(a[rows]), b_, M_, REG, stopThr=1e-13, comm=comm),
            argnums=(0, 1))(jnp.asarray(b), jnp.asarray(M[rows]))
        np.testing.assert_allclose(np.asarray(gM), np.asarray(full[1])[rows], rtol=1e-8, atol=1e-11)
        np.testing.assert_allclose(np.asarray(gb) - np.mean(gb), np.asarray(full[0]) - np.mean(full[0]),
                                   rtol=1e-8, atol=1e-11)
        assert float(value) == pytest.approx(float(unrolled_loss(jnp.asarray(a), jnp.asarray(b), jnp.asarray(M))),
                                             rel=1e-10)
        uniform = jax.grad(lambda M_: conveyor.ot.sinkhorn2([], [], M_, REG, comm=comm))(jnp.asarray(M[rows]))
        assert uniform.shape == (len(range(15)[rows]), 7) and bool(jnp.all(jnp.isfinite(uniform)))


# --- PyTorch ------------------------------------------------------------------------
# Debian's python3-torch (scripts/setup) in every Python run; the oracle is POT's own
# torch backend, which differentiates sinkhorn2 through its iterations.

def pot_torch_gradients(a, b, M, **kwargs):
    """The loss and gradients (M, a, b; the weights' centred) of POT's sinkhorn2
    on torch tensors, differentiated by PyTorch through POT's iterations."""
    torch = pytest.importorskip("torch")
    ot = pytest.importorskip("ot")
    t = [torch.tensor(x, requires_grad=True) for x in (M, a, b)]
    value = ot.sinkhorn2(t[1], t[2], t[0], REG, stopThr=1e-13, numItermax=100000, **kwargs)
    value.backward()
    g = [x.grad.numpy() for x in t]
    return float(value), g[0], g[1] - g[1].mean(), g[2] - g[2].mean()


def test_torch_backward_matches_pot():
    """loss.backward() through conveyor.ot.sinkhorn2 on float64 tensors (each rank
    alone): the value and the gradients of M, a and b equal POT's torch-backend
    ones at convergence; float32 tensors give float32 gradients close to those;
    tensors that do not require grad give a plain tensor."""
    torch = pytest.importorskip("torch")
    a, b, M = problem()
    value, gM, ga, gb = pot_torch_gradients(a, b, M)
    t = [torch.tensor(x, requires_grad=True) for x in (M, a, b)]
    loss_t = conveyor.ot.sinkhorn2(t[1], t[2], t[0], REG, stopThr=1e-13, numItermax=100000)
    assert isinstance(loss_t, torch.Tensor) and loss_t.dtype == torch.float64 and loss_t.grad_fn is not None
    loss_t.backward()
    assert float(loss_t) == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(t[0].grad.numpy(), gM, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(t[1].grad.numpy(), ga, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(t[2].grad.numpy(), gb, rtol=1e-8, atol=1e-12)
    M32 = torch.tensor(M, dtype=torch.float32, requires_grad=True)
    conveyor.ot.sinkhorn2(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32), M32,
                          REG).backward()
    assert M32.grad.dtype == torch.float32
    np.testing.assert_allclose(M32.grad.numpy(), gM, rtol=1e-4, atol=1e-6)
    plain = conveyor.ot.sinkhorn2(torch.tensor(a), torch.tensor(b), torch.tensor(M), REG)
    assert isinstance(plain, torch.Tensor) and not plain.requires_grad


def test_torch_gradient_reaches_the_points():
    """The cost made from points in torch (cdist squared): the points' gradient
    through conveyor.ot.sinkhorn2 equals POT's, as a training loop's would."""
    torch = pytest.importorskip("torch")
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((10, 3)), rng.standard_normal((8, 3))
    a, b = np.full(10, 0.1), np.full(8, 0.125)
    grads = []
    for solver in (conveyor.ot.sinkhorn2, ot.sinkhorn2):
        X = torch.tensor(x, requires_grad=True)
        cost = torch.cdist(X, torch.tensor(y)) ** 2
        solver(torch.tensor(a), torch.tensor(b), cost, 1.0, stopThr=1e-13, numItermax=100000).backward()
        grads.append(X.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-8, atol=1e-12)


def test_torch_backward_split_over_ranks(comm):
    """With `comm` each rank's tensors are its rows: backward() (collective) gives
    each rank its rows of the one-process M gradient and b's whole gradient; the
    loss is the total on every rank."""
    torch = pytest.importorskip("torch")
    a, b, M = problem(n=15, m=7, seed=5)
    rows = my_rows(comm, 15)
    value, gM, _, gb = pot_torch_gradients(a, b, M)
    Mt = torch.tensor(M[rows], requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)
    loss_t = conveyor.ot.sinkhorn2(torch.tensor(a[rows]), bt, Mt, REG, stopThr=1e-13, numItermax=100000, comm=comm)
    loss_t.backward()
    assert float(loss_t) == pytest.approx(value, rel=1e-10)
    np.testing.assert_allclose(Mt.grad.numpy(), gM[rows], rtol=1e-7, atol=1e-11)
    np.testing.assert_allclose(bt.grad.numpy(), gb, rtol=1e-7, atol=1e-11)


def test_torch_solve_value_gradient_is_the_plan():
    """conveyor.ot.solve on tensors: res.value.backward() gives dvalue/dM = the plan
    (the envelope theorem, exact at convergence), under grad="autodiff" and
    "envelope"; "detach" gives a value without a gradient."""
    torch = pytest.importorskip("torch")
    a, b, M = problem(seed=4)
    for grad in ("autodiff", "envelope"):
        Mt = torch.tensor(M, requires_grad=True)
        res = conveyor.ot.solve(Mt, torch.tensor(a), torch.tensor(b), reg=REG, tol=1e-13, max_iter=100000, grad=grad)
        res.value.backward()
        np.testing.assert_allclose(Mt.grad.numpy(), res.plan.detach().numpy(), rtol=1e-7, atol=1e-12)
    res = conveyor.ot.solve(torch.tensor(M, requires_grad=True), torch.tensor(a), torch.tensor(b), reg=REG,
                            grad="detach")
    assert not res.value.requires_grad


def test_torch_tensor_off_the_cpu_refused_on_every_rank(comm):
    """A tensor on another device than the CPU (here PyTorch's "meta" device, as a
    CUDA one would be) on one rank, each rank in turn: ValueError naming the device
    on every rank, not the others waiting in the solve."""
    torch = pytest.importorskip("torch")
    a, b, M = problem(n=6, m=4)
    for bad in range(comm.size):
        Mt = torch.tensor(M, requires_grad=True)
        if comm.rank == bad:
            Mt = torch.empty(M.shape, dtype=torch.float64, device="meta", requires_grad=True)
        with pytest.raises(ValueError, match=f"rank {bad}: .*meta" if comm.size > 1 else "meta"):
            conveyor.ot.sinkhorn2(torch.tensor(a), torch.tensor(b), Mt, REG, comm=comm)
