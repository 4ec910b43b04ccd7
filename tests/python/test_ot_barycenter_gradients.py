# SPDX-License-Identifier: BSD-3-Clause
"""Gradients through conveyor.ot.barycenter (issue "Optimal transport inside
training loops"): torch tensors and JAX arrays, differentiated by implicit
differentiation of the barycenter's fixed point (ot/_barycenter_gradients.py).
Checked against central finite differences of the NumPy barycenter (M by rows
over the ranks, A and the weights whole), against POT's unrolled gradients,
with torch.autograd.gradcheck, float32 against float64, JAX against torch, and
with bad input on one rank. Run under mpiexec at any rank count; JAX runs in
the pip venvs only."""
import numpy as np
import pytest

import conveyor
import conveyor.ot

torch = pytest.importorskip("torch")
REG = 0.05
TIGHT = dict(stopThr=1e-13, numItermax=100000)
WEIGHTS = np.array([0.2, 0.3, 0.5])


def problem(dim=11, hists=3, seed=0):
    """Histograms with a zero entry, a squared-distance cost of scale 1."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.random(dim))
    A = rng.random((dim, hists)) + 0.1
    A[0, 0] = 0.0
    return A / A.sum(axis=0), (x[:, None] - x[None, :]) ** 2


def my_rows(comm, n):
    first, count = conveyor.balanced_rows(n, comm)
    return slice(first, first + count)


def torch_gradients(comm, A, M, weights, g, method="sinkhorn_log", dtype=torch.float64, **kw):
    """q and the gradients of <g, q> by backward(), this rank's rows of M."""
    At = torch.tensor(A, dtype=dtype, requires_grad=True)
    Mt = torch.tensor(M[my_rows(comm, len(M))], dtype=dtype, requires_grad=True)
    wt = torch.tensor(weights, dtype=dtype, requires_grad=True)
    q = conveyor.ot.barycenter(At, Mt, REG, wt, method=method, comm=comm, **{**TIGHT, **kw})
    (q * torch.tensor(g, dtype=dtype)).sum().backward()
    return q.detach().numpy(), At.grad.numpy(), Mt.grad.numpy(), wt.grad.numpy()


def value(comm, A, M, weights, g):
    """<g, q> of the NumPy barycenter, M split over the ranks."""
    return float(g @ conveyor.ot.barycenter(A, M[my_rows(comm, len(M))], REG, weights, method="sinkhorn_log",
                                            comm=comm, **TIGHT))


@pytest.mark.parametrize("method,scale", [("sinkhorn", 1), ("sinkhorn_log", 1), ("sinkhorn_log", 40)])
def test_gradients_equal_finite_differences(comm, method, scale):
    """Along directions that keep the problem valid: any change of M (not
    symmetric), changes of A that keep every column's mass equal, weights that
    keep their sum. At scale 40 (M / reg spans 700) the backward forms each
    plan's rows; at scale 1 it goes through the shared kernel."""
    A, M = problem()
    M = scale * M
    rng = np.random.default_rng(7)
    g = rng.standard_normal(len(A))
    q, gA, gM, gw = torch_gradients(comm, A, M, WEIGHTS, g, method)
    assert q == pytest.approx(conveyor.ot.barycenter(A, M, REG, WEIGHTS, method="sinkhorn_log", **TIGHT), abs=1e-12)
    dA = rng.standard_normal(A.shape)
    dA[0, 0] = 0.0  # (A[0, 0] = 0 stays >= 0)
    dA[1:] -= (dA.sum(axis=0) - 0.3) / (len(A) - 1)  # every column gains the same mass
    directions = [(rng.standard_normal(M.shape), None, None), (None, dA, None), (None, None, np.array([1, -0.4, -0.6]))]
    h = 1e-6
    for dM, dA_, dw in directions:
        def moved(t):
            return value(comm, A + t * dA_ if dA_ is not None else A, M + t * dM if dM is not None else M,
                         WEIGHTS + t * dw if dw is not None else WEIGHTS, g)

        fd = (moved(h) - moved(-h)) / (2 * h)
        if dM is not None:
            analytic = comm.allreduce(float((gM * dM[my_rows(comm, len(M))]).sum()))
        else:
            analytic = float((gA * dA_).sum()) if dA_ is not None else float(gw @ dw)
        assert analytic == pytest.approx(fd, rel=1e-6 * scale, abs=1e-9)
    # A and the weights are whole on every rank: the same gradients everywhere.
    for other in comm.allgather((gA, gw)):
        np.testing.assert_allclose(other[0], gA, rtol=0, atol=1e-13)
        np.testing.assert_allclose(other[1], gw, rtol=0, atol=1e-13)
    assert abs(gw.sum()) < 1e-12 and np.ptp(gA.sum(axis=0)) < 1e-12  # centred: only valid changes move q


def test_shared_kernel_equals_formed_rows():
    """The two ways through the plans (_Kernel where K and v stay normal floats,
    _Rows otherwise) give the same products, and each is chosen where it should be."""
    from conveyor.ot._barycenter_gradients import _Kernel, _Rows

    A, M = problem()
    log_v = np.random.default_rng(8).standard_normal((A.shape[1], len(A))) * 3
    assert _Kernel.fits(M, log_v, REG) and not _Kernel.fits(40 * M, log_v, REG)
    kernel, rows = _Kernel(M, log_v, REG), _Rows(M, log_v, REG)
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal(log_v.shape), rng.standard_normal(A.T.shape)
    np.testing.assert_allclose(kernel.apply(x), rows.apply(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel.apply_t(y), rows.apply_t(y), rtol=1e-12, atol=1e-14)
    side = rows.apply(x)
    np.testing.assert_allclose(kernel.weighted(A.T, x, side), rows.weighted(A.T, x, side), rtol=1e-11, atol=1e-14)


def test_gradients_equal_pots_unrolled(comm):
    """POT's barycenter (method="sinkhorn", differentiated through its
    iterations) with uniform weights, where its start gives the barycenter:
    the same q and gradients for A and M. POT < 0.9 uses K where the transpose
    belongs (the same value for a symmetric M): there the symmetric part of M's
    gradient is compared. The weights' gradient is not: POT's start depends on
    the weights, so its unrolled gradient is that of its start's limit."""
    ot = pytest.importorskip("ot")
    A, M = problem(seed=3)
    g = np.random.default_rng(2).standard_normal(len(A))
    uniform = np.full(A.shape[1], 1 / A.shape[1])
    q, gA, gM_mine, _ = torch_gradients(comm, A, M, uniform, g, "sinkhorn")
    gM = np.zeros_like(M)
    gM[my_rows(comm, len(M))] = gM_mine
    gM = comm.allreduce(gM)
    At, Mt = torch.tensor(A, requires_grad=True), torch.tensor(M, requires_grad=True)
    q_pot = ot.bregman.barycenter(At, Mt, REG, method="sinkhorn", **TIGHT)
    (q_pot * torch.tensor(g)).sum().backward()
    gA_pot = At.grad.numpy() - (At.grad.numpy().mean(axis=0) - At.grad.numpy().mean())
    gM_pot = Mt.grad.numpy()
    if tuple(int(x) for x in ot.__version__.split(".")[:2]) < (0, 9):
        gM, gM_pot = gM + gM.T, gM_pot + gM_pot.T
    np.testing.assert_allclose(q, q_pot.detach().numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gA, gA_pot, rtol=0, atol=1e-9 * np.abs(gA_pot).max())
    np.testing.assert_allclose(gM, gM_pot, rtol=0, atol=1e-9 * np.abs(gM_pot).max())


def test_gradcheck_through_softmax_parameters(comm):
    """torch.autograd.gradcheck on float64 inputs: histograms and weights as
    softmaxes (every change valid), and M on one rank (gradcheck perturbs an
    entry of every rank's rows at once, so with M split it would measure the
    sum of their effects; the finite-difference test covers M over ranks)."""
    A, M = problem(dim=6, seed=5)
    theta = torch.tensor(np.log(A + 0.05), requires_grad=True)
    phi = torch.tensor(np.log(WEIGHTS), requires_grad=True)
    M_mine = torch.tensor(M[my_rows(comm, len(M))], requires_grad=True)

    def q(theta_, phi_, M_):
        return conveyor.ot.barycenter(torch.softmax(theta_, 0), M_, REG, torch.softmax(phi_, 0), method="sinkhorn_log",
                                      comm=comm, **TIGHT)

    if comm.size == 1:
        assert torch.autograd.gradcheck(q, (theta, phi, M_mine), eps=1e-6, atol=1e-6, rtol=1e-5)
    else:
        assert torch.autograd.gradcheck(lambda t, p: q(t, p, M_mine.detach()), (theta, phi), eps=1e-6, atol=1e-6,
                                        rtol=1e-5)


def test_float32_follows_float64_and_log_and_no_grad(comm):
    A, M = problem()
    g = np.random.default_rng(4).standard_normal(len(A))
    single = torch_gradients(comm, A, M, WEIGHTS, g, dtype=torch.float32, stopThr=1e-6, numItermax=10000)
    double = torch_gradients(comm, A, M, WEIGHTS, g)
    for s, d in zip(single, double):
        assert s.dtype == np.float32
        np.testing.assert_allclose(s, d, rtol=0, atol=1e-3 * np.abs(d).max())
    At = torch.tensor(A, requires_grad=True)
    q, log = conveyor.ot.barycenter(At, torch.tensor(M[my_rows(comm, len(M))]), REG, log=True, comm=comm, **TIGHT)
    assert set(log) == {"err", "niter"} and log["niter"] > 0
    q.sum().backward()  # q has the histograms' mass: a share 1 / H of each column's
    np.testing.assert_allclose(At.grad.numpy(), 1 / A.shape[1], rtol=0, atol=1e-9)
    plain = conveyor.ot.barycenter(torch.tensor(A), torch.tensor(M[my_rows(comm, len(M))]), REG, comm=comm, **TIGHT)
    assert isinstance(plain, torch.Tensor) and not plain.requires_grad


def test_bad_cost_on_one_rank_raises_everywhere(comm, bad_rank):
    A, M = problem()
    M_mine = M[my_rows(comm, len(M))].copy()  # (11 rows: every rank holds some at up to 11 ranks)
    if comm.rank == bad_rank:
        M_mine[0, 1] = np.nan
    At = torch.tensor(A, requires_grad=True)
    with pytest.raises(ValueError, match="must be finite"):
        conveyor.ot.barycenter(At, torch.tensor(M_mine, requires_grad=True), REG, comm=comm)


def test_jax_grad_equals_torch_backward(comm):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    A, M = problem()
    g = np.random.default_rng(6).standard_normal(len(A))
    _, gA, gM, gw = torch_gradients(comm, A, M, WEIGHTS, g)
    with enable_x64():
        def loss(A_, M_, w_):
            return jnp.dot(jnp.asarray(g), conveyor.ot.barycenter(A_, M_, REG, w_, method="sinkhorn_log", comm=comm,
                                                                  **TIGHT))

        grad = jax.grad(loss, argnums=(0, 1, 2))
        args = (jnp.asarray(A), jnp.asarray(M[my_rows(comm, len(M))]), jnp.asarray(WEIGHTS))
        for result in (grad(*args), jax.jit(grad)(*args)):
            for mine, torch_ in zip(result, (gA, gM, gw)):
                np.testing.assert_allclose(np.asarray(mine), torch_, rtol=0, atol=1e-12)


def test_jax_grad_with_log(comm):
    """log=True on JAX arrays: the same gradients as log=False and the NumPy
    call's log; under jax.jit, a clear NotImplementedError (the log's length is
    known only after the run)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    A, M = problem()
    g = np.random.default_rng(7).standard_normal(len(A))
    M_mine = M[my_rows(comm, len(M))]
    _, log_numpy = conveyor.ot.barycenter(A, M_mine, REG, WEIGHTS, log=True, comm=comm, **TIGHT)
    with enable_x64():
        logs = []

        def loss(A_, with_log):
            out = conveyor.ot.barycenter(A_, jnp.asarray(M_mine), REG, jnp.asarray(WEIGHTS), log=with_log,
                                         comm=comm, **TIGHT)
            if with_log:
                logs.append(out[1])
                out = out[0]
            return jnp.dot(jnp.asarray(g), out)

        with_log = jax.grad(lambda A_: loss(A_, True))(jnp.asarray(A))
        without = jax.grad(lambda A_: loss(A_, False))(jnp.asarray(A))
        np.testing.assert_array_equal(np.asarray(with_log), np.asarray(without))
        assert logs[0]["niter"] == log_numpy["niter"] and np.array_equal(logs[0]["err"], log_numpy["err"])
        with pytest.raises(NotImplementedError, match="log=True under jax.jit"):
            jax.jit(lambda A_: loss(A_, True))(jnp.asarray(A))


def test_empty_support_and_ranks_without_rows(comm):
    """An empty support gives empty gradients; with 3 points over up to 5 ranks
    some ranks hold no rows of M and still take part (the same gradients as one
    process)."""
    A = torch.zeros((0, 3), dtype=torch.float64, requires_grad=True)
    M = torch.zeros((0, 0), dtype=torch.float64, requires_grad=True)
    conveyor.ot.barycenter(A, M, REG, comm=comm).sum().backward()
    assert A.grad.shape == (0, 3) and M.grad.shape == (0, 0)
    A, M = problem(dim=3, seed=11)
    g = np.array([1.0, -2.0, 0.5])
    _, gA, gM, gw = torch_gradients(comm, A, M, WEIGHTS, g)
    alone = [torch.tensor(x, requires_grad=True) for x in (A, M, WEIGHTS)]
    q = conveyor.ot.barycenter(*alone[:2], REG, alone[2], method="sinkhorn_log", **TIGHT)
    (q * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(gA, alone[0].grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gM, alone[1].grad.numpy()[my_rows(comm, 3)], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gw, alone[2].grad.numpy(), rtol=1e-9, atol=1e-12)


def test_sub_communicator_and_reused_calls(comm):
    """Two halves of the ranks, each its own problem on its own communicator,
    twice over: each half's gradients are its problem's alone."""
    sub = comm.Split(comm.rank % 2, comm.rank)
    try:
        A, M = problem(seed=20 + comm.rank % 2)
        g = np.random.default_rng(comm.rank % 2).standard_normal(len(A))
        first, count = conveyor.balanced_rows(len(M), sub)
        mine = slice(first, first + count)
        alone = [torch.tensor(x, requires_grad=True) for x in (A, M, WEIGHTS)]
        (conveyor.ot.barycenter(*alone[:2], REG, alone[2], **TIGHT) * torch.tensor(g)).sum().backward()
        for _ in range(2):
            At, Mt, wt = (torch.tensor(x, requires_grad=True) for x in (A, M[mine], WEIGHTS))
            (conveyor.ot.barycenter(At, Mt, REG, wt, comm=sub, **TIGHT) * torch.tensor(g)).sum().backward()
            np.testing.assert_allclose(At.grad.numpy(), alone[0].grad.numpy(), rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(Mt.grad.numpy(), alone[1].grad.numpy()[mine], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(wt.grad.numpy(), alone[2].grad.numpy(), rtol=1e-9, atol=1e-12)
    finally:
        sub.Free()
