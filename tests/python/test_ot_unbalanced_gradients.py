# SPDX-License-Identifier: BSD-3-Clause
"""Gradients through the unbalanced losses (issue "Optimal transport inside
training loops"): conveyor.ot.sinkhorn_unbalanced / sinkhorn_unbalanced2 and
ot.solve(unbalanced=...) on PyTorch tensors and JAX arrays, differentiated by
implicit differentiation of the fixed point with the KL penalties
(_ot_gradients.plan_vjp with `marginals`). Checked against central finite
differences of the NumPy solver, against POT's own unrolled gradients where
POT >= 0.9 is installed (the pip venvs of scripts/test), split over ranks, and
with bad arguments on one rank. JAX runs in the pip venvs only."""
import numpy as np
import pytest

import conveyor
import conveyor.ot

torch = pytest.importorskip("torch")
REG = 0.3
INF = float("inf")
TIGHT = dict(stopThr=1e-15, numItermax=100000)


def problem(n=12, m=9, seed=0):
    """Uneven weights, b with half a's mass, a cost of scale 1."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, 2)), rng.standard_normal((m, 2))
    M = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    a, b = rng.random(n) + 0.5, rng.random(m) + 0.5
    return a / a.sum(), b / (2 * b.sum()), M / M.max()


def my_rows(comm, n):
    first, count = conveyor.balanced_rows(n, comm)
    return slice(first, first + count)


def tensors(*arrays):
    return tuple(torch.tensor(x, requires_grad=True) for x in arrays)


def directional_check(gradients, inputs, loss, seed=1):
    """<gradient, D> against the central difference of loss along a random D, for
    each input in turn (the tolerance absolute too: some losses are ~0)."""
    rng = np.random.default_rng(seed)
    h = 1e-6
    for k, grad in enumerate(gradients):
        D = rng.standard_normal(inputs[k].shape)

        def moved(t):
            return float(loss(*(x + t * D if j == k else x for j, x in enumerate(inputs))))

        fd = (moved(h) - moved(-h)) / (2 * h)
        assert float((np.asarray(grad) * D).sum()) == pytest.approx(fd, rel=1e-6, abs=1e-9), f"input {k}"


# One-sided penalties (the other marginal a constraint) and two-sided ones; POT's
# total cost is identically 0 at the optimum when both are finite (its KL terms
# leave out the mass terms), so the linear cost carries that case.
CASES = [(1.0, "linear"), ((0.5, INF), "linear"), ((0.5, INF), "total"), ((INF, 2.0), "total"),
         ((0.2, 3.0), "linear"), ((0.2, 3.0), "total")]


@pytest.mark.parametrize("reg_type", ["kl", "entropy"])
@pytest.mark.parametrize("reg_m, cost", CASES)
def test_loss_gradients_match_finite_differences(reg_type, reg_m, cost):
    a, b, M = problem()

    def loss(a_, b_, M_):
        return conveyor.ot.sinkhorn_unbalanced2(a_, b_, M_, REG, reg_m, reg_type=reg_type, returnCost=cost, **TIGHT)

    at, bt, Mt = tensors(a, b, M)
    value = loss(at, bt, Mt)
    value.backward()
    assert float(value) == pytest.approx(float(loss(a, b, M)), rel=1e-12, abs=1e-15)
    directional_check((at.grad, bt.grad, Mt.grad), (a, b, M), loss)


@pytest.mark.parametrize("reg_type", ["kl", "entropy"])
def test_plan_gradient_matches_finite_differences(reg_type):
    """The plan itself is differentiable: <P, G> for a fixed G; with a reference
    c of one's own (held constant) too."""
    a, b, M = problem(seed=2)
    G = np.random.default_rng(3).standard_normal(M.shape)
    c = np.random.default_rng(4).random(M.shape) + 0.5
    for reference in (None, c):
        def loss(a_, b_, M_):
            P = conveyor.ot.sinkhorn_unbalanced(a_, b_, M_, REG, (0.7, 1.5), reg_type=reg_type, c=reference,
                                                **TIGHT)
            return (P * (torch.tensor(G) if torch.is_tensor(P) else G)).sum()

        at, bt, Mt = tensors(a, b, M)
        loss(at, bt, Mt).backward()
        directional_check((at.grad, bt.grad, Mt.grad), (a, b, M), loss)


def test_float32_gradients_follow_float64():
    a, b, M = problem(seed=6)
    grads = []
    for dtype in (torch.float64, torch.float32):
        at, bt, Mt = (torch.tensor(x, dtype=dtype, requires_grad=True) for x in (a, b, M))
        value = conveyor.ot.sinkhorn_unbalanced2(at, bt, Mt, REG, (0.5, INF), returnCost="total", stopThr=1e-7)
        value.backward()
        assert value.dtype == dtype and Mt.grad.dtype == dtype
        grads.append([g.grad.double().numpy() for g in (at, bt, Mt)])
    for g64, g32 in zip(*grads):
        np.testing.assert_allclose(g32, g64, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("reg_m, cost", [((0.2, 3.0), "linear"), ((INF, 2.0), "total"), ((0.5, INF), "total")])
def test_split_over_ranks_equals_one_process(comm, reg_m, cost):
    """Rows over the ranks (`comm`; one rank may hold none): each rank's rows of
    the one-process M and a gradients, b's whole gradient, the total value."""
    a, b, M = problem(n=comm.size + 2, m=7, seed=5)
    rows = my_rows(comm, a.size)

    def loss(a_, b_, M_, comm=None):
        return conveyor.ot.sinkhorn_unbalanced2(a_, b_, M_, REG, reg_m, returnCost=cost, comm=comm, **TIGHT)

    at, bt, Mt = tensors(a, b, M)
    whole = loss(at, bt, Mt)
    whole.backward()
    mine = tensors(a[rows], b, M[rows])
    value = loss(*mine, comm=comm)
    value.backward()
    assert float(value) == pytest.approx(float(whole), rel=1e-10, abs=1e-15)
    np.testing.assert_allclose(mine[0].grad.numpy(), at.grad.numpy()[rows], rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(mine[1].grad.numpy(), bt.grad.numpy(), rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(mine[2].grad.numpy(), Mt.grad.numpy()[rows], rtol=1e-7, atol=1e-12)


def test_bad_reg_type_on_one_rank_is_an_error_on_every_rank(comm):
    """Each rank in turn with a reg_type the others do not share (or no one has):
    the same error on every rank, not the others waiting in the solve."""
    a, b, M = problem(n=6, m=4)
    for bad in range(comm.size):
        for wrong in ("nonsense", "entropy")[:2 if comm.size > 1 else 1]:  # (one rank alone may choose entropy)
            at, bt, Mt = tensors(a, b, M)
            reg_type = wrong if comm.rank == bad else "kl"
            with pytest.raises(ValueError):
                conveyor.ot.sinkhorn_unbalanced2(at, bt, Mt, REG, 1.0, reg_type=reg_type, comm=comm)


def test_solve_unbalanced_grad_modes():
    """ot.solve with KL marginals: value = the total cost, value_linear = <P, M>;
    "autodiff" differentiates value, value_linear and the plan, "envelope" the
    value alone, "detach" none; the value's gradient is the one of
    sinkhorn_unbalanced2's total."""
    a, b, M = problem(seed=7)
    reg_m = (0.5, INF)
    flags = {}
    for grad in ("autodiff", "envelope", "detach"):
        at, bt, Mt = tensors(a, b, M)
        res = conveyor.ot.solve(Mt, at, bt, reg=REG, unbalanced=reg_m, grad=grad, tol=1e-15, max_iter=100000)
        flags[grad] = (res.value.requires_grad, res.value_linear.requires_grad, res.plan.requires_grad)
        if grad != "detach":
            res.value.backward()
            ref = tensors(a, b, M)
            conveyor.ot.sinkhorn_unbalanced2(*ref, REG, reg_m, returnCost="total", **TIGHT).backward()
            for mine, theirs in zip((at, bt, Mt), ref):
                np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-13)
    assert flags == {"autodiff": (True, True, True), "envelope": (True, False, False),
                     "detach": (False, False, False)}


def test_solve_unbalanced_as_pots_unrolled_gradients():
    """Against POT's ot.solve on tensors (its Sinkhorn iterations differentiated
    by PyTorch) at a tight tolerance: values, plan, potentials and gradients."""
    ot = pytest.importorskip("ot")
    if not hasattr(ot, "solve"):
        pytest.skip("POT < 0.9 has no ot.solve (Debian's 0.8.2; the pip venvs run this)")
    a, b, M = problem(seed=8)
    for reg_m in ((0.5, INF), (INF, 2.0), 0.9):
        for which in ("value", "value_linear"):
            results = []
            for solve in (conveyor.ot.solve, ot.solve):
                at, bt, Mt = tensors(a, b, M)
                res = solve(Mt, at, bt, reg=REG, unbalanced=reg_m, tol=1e-14, max_iter=100000)
                getattr(res, which).backward()
                results.append((res, [t.grad.numpy() for t in (at, bt, Mt)]))
            (mine, mine_grads), (pots, pot_grads) = results
            assert float(getattr(mine, which)) == pytest.approx(float(getattr(pots, which)), rel=1e-9, abs=1e-14)
            np.testing.assert_allclose(mine.plan.detach().numpy(), pots.plan.detach().numpy(), rtol=1e-9,
                                       atol=1e-15)
            np.testing.assert_allclose(mine.potentials[0].numpy(), pots.potentials[0].detach().numpy(), rtol=1e-8,
                                       atol=1e-10)
            for g, h in zip(mine_grads, pot_grads):
                np.testing.assert_allclose(g, h, rtol=1e-8, atol=1e-12)


def test_jax_grad_equals_torch_backward(comm):
    """jax.grad (and under jax.jit) of sinkhorn_unbalanced2 and of solve's values:
    PyTorch's gradients. Split over ranks with `comm` too."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    a, b, M = problem(seed=9)
    rows = my_rows(comm, a.size)
    with enable_x64():
        for reg_type in ("kl", "entropy"):
            for reg_m, cost in (((0.5, INF), "total"), ((0.2, 3.0), "linear")):
                def loss(a_, b_, M_, comm=None):
                    return conveyor.ot.sinkhorn_unbalanced2(a_, b_, M_, REG, reg_m, reg_type=reg_type,
                                                            returnCost=cost, comm=comm, **TIGHT)

                at, bt, Mt = tensors(a[rows], b, M[rows])
                loss(at, bt, Mt, comm).backward()
                args = (jnp.asarray(a[rows]), jnp.asarray(b), jnp.asarray(M[rows]))
                grad = jax.grad(lambda *x: loss(*x, comm=comm), argnums=(0, 1, 2))
                for gj in (grad(*args), jax.jit(grad)(*args)):
                    for g, t in zip(gj, (at, bt, Mt)):
                        np.testing.assert_allclose(np.asarray(g), t.grad.numpy(), rtol=1e-9, atol=1e-14)
        at, bt, Mt = tensors(a, b, M)
        conveyor.ot.solve(Mt, at, bt, reg=REG, unbalanced=(INF, 2.0)).value.backward()
        gM = jax.grad(lambda M_: conveyor.ot.solve(M_, jnp.asarray(a), jnp.asarray(b), reg=REG,
                                                   unbalanced=(INF, 2.0)).value)(jnp.asarray(M))
        np.testing.assert_allclose(np.asarray(gM), Mt.grad.numpy(), rtol=1e-9, atol=1e-14)
