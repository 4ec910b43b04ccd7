# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.ot.SamplesLoss, GeomLoss's Sinkhorn divergence between point clouds,
on the point-cloud engine and on formed cost arrays (backend "online" and
"tensorized"; issue "Optimal transport inside training loops").

Checked against GeomLoss's own SamplesLoss (its "tensorized" backend, the dense
reference) where GeomLoss is installed (tests/python/installed_package.sh
installs 0.3.1 into the package's venv; CTest's runs on the build tree have no
GeomLoss and skip those cases, saying so): values and every gradient, balanced
and unbalanced, with and without debiasing, float32 and float64, batches. Without
GeomLoss too: every rank holding a share of the clouds (uneven, one rank empty)
gets the one-process value and its rows of the one-process gradients; S(a, a) =
0; the softmin itself against NumPy; bad arguments."""
import numpy as np
import pytest
from mpi4py import MPI

import conveyor
import conveyor.ot
from conveyor import _conveyor
from conveyor._mpi import comm_address

torch = pytest.importorskip("torch")  # (Debian's python3-torch: scripts/setup installs it)


try:
    import geomloss
except ImportError:  # CTest's runs on the build tree
    geomloss = None
needs_geomloss = pytest.mark.skipif(geomloss is None, reason="GeomLoss is not installed here (the installed "
                                    "package's venv has it: tests/python/installed_package.sh)")

#: Both ways the softmins run: the point-cloud engine's passes and formed arrays.
BACKENDS = ["online", "tensorized"]
backends = pytest.mark.parametrize("backend", BACKENDS)

CASES = [dict(), dict(debias=False), dict(reach=0.5), dict(reach=0.3, debias=False), dict(blur=0.01, scaling=0.8),
         dict(blur=0.2, scaling=0.3)]


def clouds(n=23, m=17, d=3, dtype=torch.float64, seed=0, batch=None):
    g = torch.Generator().manual_seed(seed)
    shape = (batch,) if batch else ()
    x = torch.randn(shape + (n, d), generator=g, dtype=dtype)
    y = torch.randn(shape + (m, d), generator=g, dtype=dtype) + 0.4
    a = torch.rand(shape + (n,), generator=g, dtype=dtype) + 0.2
    b = torch.rand(shape + (m,), generator=g, dtype=dtype) + 0.2
    return a / a.sum(-1, keepdim=True), x, b / b.sum(-1, keepdim=True), y


def value_and_grads(loss, a, x, b, y):
    leaves = [t.clone().requires_grad_() for t in (a, x, b, y)]
    value = loss(*leaves)
    return value, torch.autograd.grad(value, leaves)


def close(ours, ref, rtol):
    scale = max(float(ref.abs().max()), 1e-30)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    assert float((ours - ref).abs().max()) <= rtol * scale, (float((ours - ref).abs().max()) / scale)


@needs_geomloss
@backends
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
def test_matches_geomloss(case, dtype, backend):
    a, x, b, y = clouds(dtype=dtype)
    rtol = 1e-11 if dtype == torch.float64 else 2e-3
    ref, ref_grads = value_and_grads(geomloss.SamplesLoss("sinkhorn", backend="tensorized", **case), a, x, b, y)
    ours, our_grads = value_and_grads(conveyor.ot.SamplesLoss("sinkhorn", backend=backend, **case), a, x, b, y)
    close(ours, ref, rtol)
    for o, r in zip(our_grads, ref_grads):
        close(o, r, rtol)


@needs_geomloss
@backends
def test_matches_geomloss_batch_uniform_and_potentials(backend):
    _, x, _, y = clouds(batch=3)
    ref = geomloss.SamplesLoss("sinkhorn", blur=0.1, backend="tensorized")(x, y)
    ours = conveyor.ot.SamplesLoss("sinkhorn", blur=0.1, backend=backend)(x, y)
    close(ours, ref, 1e-11)
    F, G = conveyor.ot.SamplesLoss("sinkhorn", blur=0.1, potentials=True, backend=backend)(x[0], y[0])
    F_ref, G_ref = geomloss.SamplesLoss("sinkhorn", blur=0.1, potentials=True, backend="tensorized")(x[0], y[0])
    close(F, F_ref.reshape(-1), 1e-11)  # (GeomLoss's are (1, N) for one problem: its batch of one)
    close(G, G_ref.reshape(-1), 1e-11)


@needs_geomloss
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("case", [dict(), dict(reach=0.5), dict(blur=0.2, debias=False),
                                  dict(reach=0.3, debias=False)],
                         ids=["default", "reach", "blur,no-debias", "reach,no-debias"])
def test_p1_matches_geomloss(case, dtype):
    """p = 1, the value and all four gradients, the points' from the engine's
    averages over |x - y| (cost_power=-1). Without debiasing no two points meet
    and float64 agrees to 1e-10; the debiasing problems meet every point with
    itself, where GeomLoss's distance is at least 1e-4 and ours 0: 1e-3 there.
    float32 against GeomLoss in float64 (1e-3): its float32 distances by
    |x|^2 + |y|^2 - 2 <x, y> lose ~1e-3 near 0, ours (by differences) do not."""
    a, x, b, y = clouds(dtype=dtype)
    ref, ref_grads = value_and_grads(geomloss.SamplesLoss("sinkhorn", p=1, backend="tensorized", **case),
                                     *(t.double() for t in (a, x, b, y)))
    ours, our_grads = value_and_grads(conveyor.ot.SamplesLoss("sinkhorn", p=1, **case), a, x, b, y)
    rtol = 1e-10 if dtype == torch.float64 and case.get("debias") is False else 1e-3
    close(ours, ref.to(dtype), rtol)
    for o, r in zip(our_grads, ref_grads):
        close(o, r.to(dtype), rtol)


def share(comm, count, first_empty):
    """This rank's slice: rank 0 none (with several ranks), the others balanced."""
    if comm.size == 1 or not first_empty:
        base, extra = divmod(count, comm.size)
        first = comm.rank * base + min(comm.rank, extra)
        return slice(first, first + base + (comm.rank < extra))
    if comm.rank == 0:
        return slice(0, 0)
    base, extra = divmod(count, comm.size - 1)
    first = (comm.rank - 1) * base + min(comm.rank - 1, extra)
    return slice(first, first + base + (comm.rank - 1 < extra))


@backends
@pytest.mark.parametrize("case", [dict(), dict(reach=0.5, debias=False), dict(p=1)], ids=["balanced", "unbalanced", "p1"])
@pytest.mark.parametrize("first_empty", [False, True])
def test_shares_over_ranks_give_the_one_process_result(comm, case, first_empty, backend):
    a, x, b, y = clouds()
    whole, whole_grads = value_and_grads(conveyor.ot.SamplesLoss("sinkhorn", backend=backend, **case), a, x, b, y)
    sx, sy = share(comm, len(x), first_empty), share(comm, len(y), first_empty)
    part, part_grads = value_and_grads(conveyor.ot.SamplesLoss("sinkhorn", comm=comm, backend=backend, **case),
                                       a[sx], x[sx], b[sy], y[sy])
    assert abs(float(part) - float(whole)) <= 1e-12 * abs(float(whole))
    assert len(set(comm.allgather(float(part)))) == 1  # the same bits on every rank
    for got, full, s in zip(part_grads, whole_grads, (sx, sx, sy, sy)):
        close(got, full[s], 1e-11) if got.numel() else None


@backends
def test_sub_communicators_and_a_reused_loss(comm, backend):
    """Two halves of the ranks (comm.Split by parity), each with its own
    clouds shared over its ranks, one loss object called twice: each half gets
    its problem's one-process value and its rows of the gradients."""
    sub = comm.Split(comm.rank % 2, comm.rank)
    try:
        a, x, b, y = clouds(d=16, seed=10 + comm.rank % 2)
        whole, whole_grads = value_and_grads(conveyor.ot.SamplesLoss("sinkhorn", backend=backend), a, x, b, y)
        loss = conveyor.ot.SamplesLoss("sinkhorn", backend=backend, comm=sub)
        sx = slice(sub.rank * len(x) // sub.size, (sub.rank + 1) * len(x) // sub.size)
        sy = slice(sub.rank * len(y) // sub.size, (sub.rank + 1) * len(y) // sub.size)
        for _ in range(2):
            part, part_grads = value_and_grads(loss, a[sx], x[sx], b[sy], y[sy])
            assert abs(float(part) - float(whole)) <= 1e-12 * abs(float(whole))
            for got, full, s in zip(part_grads, whole_grads, (sx, sx, sy, sy)):
                close(got, full[s], 1e-11) if got.numel() else None
    finally:
        sub.Free()


def test_numpy_inputs_and_uniform_weights_over_ranks(comm):
    _, x, _, y = clouds()
    whole = conveyor.ot.SamplesLoss("sinkhorn", blur=0.1)(x.numpy(), y.numpy())
    sx, sy = share(comm, len(x), False), share(comm, len(y), False)
    part = conveyor.ot.SamplesLoss("sinkhorn", blur=0.1, comm=comm)(x.numpy()[sx], y.numpy()[sy])
    assert isinstance(whole, np.floating) and whole.dtype == np.float64
    assert abs(part - whole) <= 1e-12 * abs(whole)


def test_divergence_of_a_measure_with_itself_is_zero():
    a, x, _, _ = clouds()
    value, grads = value_and_grads(conveyor.ot.SamplesLoss("sinkhorn"), a, x, a, x)
    assert float(value) == 0.0
    assert all(float(g.abs().max()) < 1e-12 for g in grads)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmin_points_against_numpy(dtype):
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((11, 4)).astype(dtype), rng.standard_normal((9, 4)).astype(dtype)
    h = (rng.standard_normal(9) * 50).astype(dtype)  # far beyond exp's range once divided by eps
    h[3] = -np.inf  # a point left out
    eps = 0.05
    lse, avg = _conveyor.softmin_points(X, Y, h, eps, Y, comm_address(MPI.COMM_SELF), {})
    z = h[None].astype(np.float64) - ((X[:, None].astype(np.float64) - Y[None]) ** 2).sum(-1) / eps
    ref = z.max(1) + np.log(np.exp(z - z.max(1, keepdims=True)).sum(1))
    w = np.exp(z - ref[:, None])
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert np.abs(lse - ref).max() <= tol * np.abs(ref).max()
    assert np.abs(avg - w @ Y.astype(np.float64)).max() <= tol * 10
    lse_only, none = _conveyor.softmin_points(X, Y, h, eps, None, comm_address(MPI.COMM_SELF), {})
    assert none.shape == (11, 0) and np.array_equal(lse_only, lse)
    # cost_power: the averages weighted by C_ij^power, the log-sum-exps unchanged
    # (a point of Y on a point of X: 0 under -1)
    Y[5] = X[2]
    C = ((X[:, None].astype(np.float64) - Y[None]) ** 2).sum(-1)
    z = h[None].astype(np.float64) - C / eps
    lse = z.max(1) + np.log(np.exp(z - z.max(1, keepdims=True)).sum(1))
    w = np.exp(z - lse[:, None])
    inverse = np.divide(1.0, C, out=np.zeros_like(C), where=C > 0)
    for power, factor in ((1, C), (-1, inverse)):
        got_lse, got = _conveyor.softmin_points(X, Y, h, eps, Y, comm_address(MPI.COMM_SELF), {"cost_power": power})
        assert np.abs(got_lse - lse).max() <= tol * np.abs(lse).max()
        want = (w * factor) @ Y.astype(np.float64)
        assert np.abs(got - want).max() <= tol * 10 * np.abs(want).max()
    with pytest.raises(ValueError, match="cost_power"):
        _conveyor.softmin_points(X, Y, h, eps, Y, comm_address(MPI.COMM_SELF), {"cost_power": 2})


@backends
@pytest.mark.parametrize("case", [dict(), dict(reach=0.5, debias=False), dict(p=1)], ids=["balanced", "unbalanced", "p1"])
def test_a_batch_equals_each_problem_alone(case, backend):
    """(B, N, D): one engine call per softmin for the whole batch (the batched
    softmin_points), each problem's value and gradients those of its own call
    (one diameter given: a batch's default is that of all its problems)."""
    a, x, b, y = clouds(batch=5, seed=3)
    loss = conveyor.ot.SamplesLoss("sinkhorn", diameter=4.0, backend=backend, **case)
    leaves = [t.clone().requires_grad_() for t in (a, x, b, y)]
    values = loss(*leaves)
    assert values.shape == (5,)
    grads = torch.autograd.grad(values.sum(), leaves)
    for k in range(5):
        one = [t[k].clone().requires_grad_() for t in (a, x, b, y)]
        value = loss(*one)
        assert abs(float(value) - float(values[k])) <= 1e-12 * max(abs(float(value)), 1e-30)
        for got, want in zip(grads, torch.autograd.grad(value, one)):
            close(got[k], want, 1e-11)


@backends
@pytest.mark.parametrize("first_empty", [False, True])
def test_a_batch_over_ranks_gives_the_one_process_result(comm, first_empty, backend):
    a, x, b, y = clouds(batch=3, seed=4)
    whole, whole_grads = value_and_grads(lambda *t: conveyor.ot.SamplesLoss("sinkhorn", backend=backend)(*t).sum(),
                                         a, x, b, y)
    sx, sy = share(comm, x.shape[1], first_empty), share(comm, y.shape[1], first_empty)
    part, part_grads = value_and_grads(lambda *t: conveyor.ot.SamplesLoss("sinkhorn", comm=comm,
                                                                          backend=backend)(*t).sum(),
                                       a[:, sx], x[:, sx], b[:, sy], y[:, sy])
    assert abs(float(part) - float(whole)) <= 1e-12 * abs(float(whole))
    assert len(set(comm.allgather(float(part)))) == 1
    for got, full, s in zip(part_grads, whole_grads, (sx, sx, sy, sy)):
        close(got, full[:, s], 1e-11) if got.numel() else None


@pytest.mark.parametrize("dim", [3, 40])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmin_points_without_values_over_ranks(comm, dtype, dim):
    """softmin_points without V (the solver's pass, no column of ones) gives the
    log-sum-exps the pass with V gives: rows of several tiles, a batch, the
    difference and dot-product forms (d = 3, 40), the columns split over ranks."""
    rng = np.random.default_rng(11)
    B, n, m = 2, 5 + comm.rank, 300 + 200 * comm.rank  # every rank its own share; rows of 2 or more tiles
    X = rng.standard_normal((B, n, dim)).astype(dtype)
    Y = rng.standard_normal((B, m, dim)).astype(dtype)
    h = (rng.standard_normal((B, m)) * 30).astype(dtype)
    h[0, 7] = -np.inf
    address = comm_address(comm)
    lse_only, none = _conveyor.softmin_points(X, Y, h, 0.5, None, address, {})
    lse, _ = _conveyor.softmin_points(X, Y, h, 0.5, Y, address, {})
    assert none.shape == (B, n, 0) and lse_only.shape == (B, n)
    assert np.allclose(lse_only, lse, rtol=1e-13 if dtype == np.float64 else 1e-6, atol=0)
    # against NumPy on every rank's columns
    Y_all = np.concatenate(comm.allgather(Y), axis=1).astype(np.float64)
    h_all = np.concatenate(comm.allgather(h), axis=1).astype(np.float64)
    z = h_all[:, None, :] - ((X[:, :, None, :].astype(np.float64) - Y_all[:, None]) ** 2).sum(-1) / 0.5
    ref = z.max(-1) + np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1))
    assert np.abs(lse_only - ref).max() <= (1e-12 if dtype == np.float64 else 2e-5) * np.abs(ref).max()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_batched_softmin_and_plan_against_each_problem(dtype):
    rng = np.random.default_rng(2)
    B = 4
    X, Y = rng.standard_normal((B, 11, 3)).astype(dtype), rng.standard_normal((B, 9, 3)).astype(dtype)
    h = rng.standard_normal((B, 9)).astype(dtype)
    h[1, 3] = -np.inf
    self_comm = comm_address(MPI.COMM_SELF)
    lse, avg = _conveyor.softmin_points(X, Y, h, 0.05, Y, self_comm, {})
    assert lse.shape == (B, 11) and avg.shape == (B, 11, 3) and lse.dtype == dtype
    log_u = rng.standard_normal((B, 11)).astype(dtype)
    out = conveyor.apply_plan_points(X, Y, log_u, h, 0.05, Y, comm=MPI.COMM_SELF)
    out_t = conveyor.apply_plan_points(X, Y, log_u, h, 0.05, X, comm=MPI.COMM_SELF, transpose=True)
    assert out.shape == (B, 11, 3) and out_t.shape == (B, 9, 3)
    for k in range(B):
        lse1, avg1 = _conveyor.softmin_points(X[k], Y[k], h[k], 0.05, Y[k], self_comm, {})
        assert np.allclose(lse[k], lse1, rtol=1e-12 if dtype == np.float64 else 1e-6)
        assert np.allclose(avg[k], avg1, rtol=1e-12 if dtype == np.float64 else 1e-6)
        assert np.allclose(out[k], conveyor.apply_plan_points(X[k], Y[k], log_u[k], h[k], 0.05, Y[k],
                                                              comm=MPI.COMM_SELF), rtol=1e-12, atol=0)
        assert np.allclose(out_t[k], conveyor.apply_plan_points(X[k], Y[k], log_u[k], h[k], 0.05, X[k],
                                                                comm=MPI.COMM_SELF, transpose=True), rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match=r"h has shape \(4, 8\), needs \(4, 9\)"):
        _conveyor.softmin_points(X, Y, h[:, :8], 0.05, None, self_comm, {})
    with pytest.raises(ValueError, match=r"Y has shape \(3, 9, 3\), needs \(4, 9, 3\)"):
        _conveyor.softmin_points(X, Y[:3], h, 0.05, None, self_comm, {})
    with pytest.raises(ValueError, match="3-D"):
        _conveyor.softmin_points(X, Y[0], h, 0.05, None, self_comm, {})
    empty_lse, empty_avg = _conveyor.softmin_points(X[:0], Y[:0], h[:0], 0.05, Y[:0], self_comm, {})
    assert empty_lse.shape == (0, 11) and empty_avg.shape == (0, 11, 3)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmin_on_a_formed_array_against_numpy(dtype):
    """sinkhorn::softmin: each row's log-sum-exp and (asked for) its weights,
    one problem and a batch; a row of -Inf potentials; no rows or no columns."""
    rng = np.random.default_rng(7)
    B, n, m, eps = 3, 11, 9, 0.05
    C = (rng.random((B, n, m)) * 4).astype(dtype)
    h = (rng.standard_normal((B, m)) * 50).astype(dtype)  # far beyond exp's range once divided by eps
    h[1, 3] = -np.inf  # a point left out
    self_comm = comm_address(MPI.COMM_SELF)
    lse, W = _conveyor.softmin(C, h, eps, True, self_comm, {})
    z = h[:, None, :].astype(np.float64) - C / eps
    ref = z.max(-1) + np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1))
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert lse.dtype == dtype and W.dtype == dtype and lse.shape == (B, n) and W.shape == C.shape
    assert np.abs(lse - ref).max() <= tol * np.abs(ref).max()
    assert np.abs(W - np.exp(z - ref[..., None])).max() <= tol * 10
    assert np.abs(W.sum(-1) - 1).max() <= tol * 10 and (W[1, :, 3] == 0).all()
    for k in range(B):  # one problem alone: the same bits, and None without weights
        one, none = _conveyor.softmin(C[k], h[k], eps, False, self_comm, {"threads": 1})
        assert np.array_equal(one, lse[k]) and none is None
    h_out = np.full((B, m), -np.inf, dtype)
    lse_out, W_out = _conveyor.softmin(C, h_out, eps, True, self_comm, {})
    assert (lse_out == -np.inf).all() and np.isnan(W_out).all()
    no_cols, W0 = _conveyor.softmin(C[:, :, :0], h[:, :0], eps, True, self_comm, {})
    assert (no_cols == -np.inf).all() and W0.shape == (B, n, 0)
    no_rows, _ = _conveyor.softmin(C[:, :0], h, eps, False, self_comm, {})
    assert no_rows.shape == (B, 0)
    with pytest.raises(ValueError, match=r"h has shape \(3, 8\), needs \(3, 9\)"):
        _conveyor.softmin(C, h[:, :8], eps, False, self_comm, {})
    with pytest.raises(ValueError, match="eps must be finite and > 0"):
        _conveyor.softmin(C, h, 0.0, False, self_comm, {})
    with pytest.raises(TypeError, match="float32 or float64"):
        _conveyor.softmin(C.astype(np.int32), h, eps, False, self_comm, {})
    with pytest.raises(ValueError, match="2-D .* or 3-D"):
        _conveyor.softmin(C[0, 0], h[0], eps, False, self_comm, {})
    with pytest.raises(ValueError, match="unknown option"):
        _conveyor.softmin(C, h, eps, False, self_comm, {"metric": "sqeuclidean"})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmin_terms_below_the_smallest_normal_are_zero(dtype):
    """The exp of the row passes: a term whose true value is below the smallest
    normal number is exactly 0 (a subnormal result costs a slow path on many
    CPUs: src/sinkhorn/exp_normal-inl.h); the others are exp's, to rounding."""
    tiny = np.finfo(dtype).tiny
    floor = np.log(tiny)  # -87.3 (float32), -708.4 (double)
    offsets = np.array([0.0, floor + 4, floor + 3, floor - 1, floor - 10, -1e4])  # the sum is 7: z = h - 1.95
    m = 37  # a full vector and a tail on every target
    h = np.resize(offsets, m).astype(dtype)
    C = np.zeros((2, m), dtype)
    lse, W = _conveyor.softmin(C, h, 1.0, True, comm_address(MPI.COMM_SELF), {"threads": 1})
    z = h.astype(np.float64) - np.log(np.exp(h.astype(np.float64)).sum())
    want = np.exp(z)
    below = want < tiny
    assert below.sum() == 3 * 6 and (W[:, below] == 0).all()
    # (exp(x)'s relative error is x's absolute one: |x| ulps of 1)
    assert np.abs(W[:, ~below] / want[~below] - 1).max() < 4 * abs(floor) * np.finfo(dtype).eps
    assert np.abs(lse - np.log(np.exp(h.astype(np.float64)).sum())).max() < 10 * np.finfo(dtype).eps


def test_softmin_bad_argument_on_one_rank_raises_on_every_rank(comm, bad_rank):
    rng = np.random.default_rng(8)
    C, h = rng.random((4 + comm.rank, 6)), rng.standard_normal(6)  # (rows may differ; columns must not)
    eps = 0.0 if comm.rank == bad_rank else 0.1
    with pytest.raises(ValueError, match="eps must be finite and > 0"):
        _conveyor.softmin(C, h, eps, False, comm_address(comm), {})
    if comm.size > 1:  # columns that differ between ranks: named on every rank
        m = 7 if comm.rank == bad_rank else 6
        with pytest.raises(ValueError, match="column counts m"):
            _conveyor.softmin(rng.random((3, m)), rng.standard_normal(m), 0.1, False, comm_address(comm), {})


def test_auto_backend_forms_the_arrays_where_the_rule_says(comm):
    """backend="auto" gives the formed arrays' bits from FORMED_MIN_DIM dimensions
    (by itemsize) while a rank's arrays fit DENSE_BYTES, and the engine's
    otherwise; p = 1 always the engine's, whatever the backend."""
    from conveyor.ot import _samples_loss_formed as formed

    def both(d, dtype=torch.float64, **case):
        a, x, b, y = clouds(d=d, dtype=dtype, seed=9)
        sx, sy = share(comm, len(x), False), share(comm, len(y), False)
        out = {k: value_and_grads(conveyor.ot.SamplesLoss("sinkhorn", backend=k, comm=comm, **case),
                                  a[sx], x[sx], b[sy], y[sy]) for k in ["auto"] + BACKENDS}

        def same(u, v):
            return float(u[0]) == float(v[0]) and all(torch.equal(g, h) for g, h in zip(u[1], v[1]))
        return same(out["auto"], out["tensorized"]), same(out["auto"], out["online"])

    for dtype, itemsize in ((torch.float64, 8), (torch.float32, 4)):
        low = formed.FORMED_MIN_DIM[itemsize]
        assert both(low, dtype) == (True, False)
        assert both(low - 1, dtype) == (False, True)
    assert both(16, p=1) == (True, True)
    # The size limit: the four arrays (23 x 17 + 17 x 23 + 23^2 + 17^2 entries) at
    # exactly DENSE_BYTES are formed, one byte less are not. (One rank holds them all.)
    if comm.size == 1:
        need = (2 * 23 * 17 + 23 * 23 + 17 * 17) * 8
        saved = formed.DENSE_BYTES
        try:
            formed.DENSE_BYTES = need
            assert both(16) == (True, False)
            formed.DENSE_BYTES = need - 1
            assert both(16) == (False, True)
        finally:
            formed.DENSE_BYTES = saved


def test_ranks_that_disagree_on_the_backend_take_one_path(comm):
    """use_formed gives every rank the same answer when one rank (each in turn)
    passes another backend or p: the formed arrays only if every rank wants them."""
    from conveyor.ot._samples_loss_formed import FORMED_MIN_DIM, use_formed

    x = np.zeros((1, 5, FORMED_MIN_DIM[8]))
    for odd in range(comm.size):
        for mine, others, want in ((("online", 2), ("tensorized", 2), False), (("tensorized", 1), ("auto", 2), False),
                                   (("auto", 2), ("tensorized", 2), True)):
            backend, p = mine if comm.rank == odd else others
            got = comm.allgather(use_formed(backend, p, True, x, x, comm))
            assert got == [want] * comm.size, (odd, mine, others)


def test_auto_backend_past_dense_bytes_limits_the_peak(comm, monkeypatch):
    """Past DENSE_BYTES, backend="auto" forms the arrays from FORMED_MIN_DIM_PAST
    dimensions while a rank's peak (its arrays and one more of the largest's
    size) is within DENSE_PEAK_BYTES and half its share of its machine's memory;
    one rank short of memory sends every rank to the engine."""
    from conveyor.ot import _points_dense as dense
    from conveyor.ot import _samples_loss_formed as formed

    d = formed.FORMED_MIN_DIM_PAST
    a, x, b, y = clouds(d=d, seed=4)
    sx, sy = share(comm, len(x), False), share(comm, len(y), False)
    n, m = len(x), len(y)
    rows, cols = comm.allgather(sx.stop - sx.start), comm.allgather(sy.stop - sy.start)
    peaks = [8 * (r * m + c * n + r * n + c * m + max(r * m, c * n, r * n, c * m)) for r, c in zip(rows, cols)]

    def path():
        out = {k: value_and_grads(conveyor.ot.SamplesLoss("sinkhorn", backend=k, comm=comm),
                                  a[sx], x[sx], b[sy], y[sy]) for k in ["auto"] + BACKENDS}
        same = {k: float(out["auto"][0]) == float(out[k][0]) and
                all(torch.equal(g, h) for g, h in zip(out["auto"][1], out[k][1])) for k in BACKENDS}
        assert same["tensorized"] != same["online"]
        return "tensorized" if same["tensorized"] else "online"

    monkeypatch.setattr(formed, "DENSE_BYTES", 0)
    monkeypatch.setattr(dense, "available_memory", lambda: None)
    monkeypatch.setattr(dense, "DENSE_PEAK_BYTES", max(peaks))
    assert path() == "tensorized"
    monkeypatch.setattr(dense, "DENSE_PEAK_BYTES", max(peaks) - 1)
    assert path() == "online"
    monkeypatch.setattr(formed, "FORMED_MIN_DIM_PAST", d + 1)
    monkeypatch.setattr(dense, "DENSE_PEAK_BYTES", max(peaks))
    assert path() == "online"
    monkeypatch.setattr(formed, "FORMED_MIN_DIM_PAST", d)
    for short in range(comm.size):  # (the ranks share this machine: a rank's share is its memory over the ranks)
        plenty = 2 * max(peaks) * comm.size
        memory = 2 * peaks[short] * comm.size - 1 if comm.rank == short else plenty
        monkeypatch.setattr(dense, "available_memory", lambda: memory)
        assert path() == "online"
        monkeypatch.setattr(dense, "available_memory", lambda: plenty)
        assert path() == "tensorized"


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(loss="energy"), NotImplementedError, "sinkhorn"),
    (dict(p=3), ValueError, "p must be 1 or 2"),
    (dict(blur=0.0), ValueError, "blur"),
    (dict(scaling=1.5), ValueError, "scaling"),
    (dict(reach=-1.0), ValueError, "reach"),
    (dict(cost=lambda x, y: x), NotImplementedError, "cost"),
])
def test_bad_settings(kwargs, error, match):
    with pytest.raises(error, match=match):
        conveyor.ot.SamplesLoss(**kwargs)


def test_bad_shapes():
    a, x, b, y = clouds()
    loss = conveyor.ot.SamplesLoss()
    with pytest.raises(ValueError, match="must be"):
        loss(x, y[:, :2])
    with pytest.raises(ValueError, match="one weight per point"):
        loss(a[:-1], x, b, y)
    with pytest.raises(ValueError, match=r"\(x, y\) or \(a, x, b, y\)"):
        loss(x, y, x)


@backends
def test_bad_weights_on_one_rank_raise_on_every_rank(comm, bad_rank, backend):
    a, x, b, y = clouds()
    sx, sy = share(comm, len(x), False), share(comm, len(y), False)
    a_mine = a[sx][:-1] if comm.rank == bad_rank else a[sx]
    if comm.rank == bad_rank and len(a[sx]) == 0:
        a_mine = a[:1]
    with pytest.raises(ValueError, match="one weight per point"):
        conveyor.ot.SamplesLoss(comm=comm, backend=backend)(a_mine, x[sx], b[sy], y[sy])


@pytest.mark.parametrize("case", [dict(), dict(reach=0.5, debias=False), dict(p=1)], ids=["balanced", "unbalanced", "p1"])
def test_jax_gradients_equal_torch(comm, case):
    """On JAX arrays: jax.value_and_grad (and under jax.jit) gives the torch path's
    value and the four gradients, weighted and unweighted, for one problem and a
    batch (the batch's values summed), and over ranks (each its share, as torch)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    loss = conveyor.ot.SamplesLoss("sinkhorn", blur=0.1, **case)
    for batch in (None, 3):
        a, x, b, y = clouds(batch=batch, seed=4)
        value, grads = value_and_grads(lambda *t: loss(*t).sum(), a, x, b, y)
        with enable_x64():
            args = tuple(jnp.asarray(t.numpy()) for t in (a, x, b, y))
            f = jax.value_and_grad(lambda *v: loss(*v).sum(), argnums=(0, 1, 2, 3))
            for mine, mine_grads in (f(*args), jax.jit(f)(*args)):
                assert float(mine) == pytest.approx(float(value), rel=1e-12)
                for g, t in zip(mine_grads, grads):
                    np.testing.assert_allclose(np.asarray(g), t.numpy(), rtol=1e-10, atol=1e-14)
            gx = jax.grad(lambda x_: loss(x_, args[3]).sum())(args[1])  # uniform weights
            tx = x.clone().requires_grad_()
            loss(tx, y).sum().backward()
            np.testing.assert_allclose(np.asarray(gx), tx.grad.numpy(), rtol=1e-10, atol=1e-14)
    # Shares over ranks, one rank possibly empty: each rank's value is the total.
    a, x, b, y = clouds(n=comm.size + 2, m=comm.size + 1, seed=5)
    shared = conveyor.ot.SamplesLoss("sinkhorn", blur=0.1, comm=comm, **case)
    first, count = conveyor.balanced_rows(x.shape[0], comm)
    rows = slice(first, first + count)
    first, count = conveyor.balanced_rows(y.shape[0], comm)
    cols = slice(first, first + count)
    tx = x[rows].clone().requires_grad_()
    torch_value = shared(a[rows], tx, b[cols], y[cols])
    torch_value.backward()
    with enable_x64():
        v, gx = jax.value_and_grad(lambda x_: shared(jnp.asarray(a[rows].numpy()), x_, jnp.asarray(b[cols].numpy()),
                                                     jnp.asarray(y[cols].numpy())))(jnp.asarray(x[rows].numpy()))
    assert float(v) == pytest.approx(float(torch_value), rel=1e-12)
    np.testing.assert_allclose(np.asarray(gx), tx.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_jax_potentials_equal_torch():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import enable_x64

    a, x, b, y = clouds(seed=6)
    loss = conveyor.ot.SamplesLoss("sinkhorn", blur=0.1, potentials=True)
    F, G = loss(a, x, b, y)
    with enable_x64():
        Fj, Gj = loss(*(jnp.asarray(t.numpy()) for t in (a, x, b, y)))
    np.testing.assert_allclose(np.asarray(Fj), F.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(Gj), G.numpy(), rtol=1e-12, atol=1e-14)
