# SPDX-License-Identifier: BSD-3-Clause
"""Gradients through conveyor.ot.barycenter: the vector-Jacobian product of the
fixed-support barycenter q with respect to the histograms A, the cost M and the
weights w, by implicit differentiation of the fixed point of the iteration
(docs/algorithms.md, "Gradients of the barycenter"), not by storing iterations.

The log-domain iteration (_barycenter.py's engine) on the log column
scalings G_k of the H plans P_k = diag(A_k) R_k, R_k the rows of
exp(G_k - M / reg) normalized to sum 1, c_k = P_k^T 1 their column sums and
phi_k = log c_k - G_k:

    log q = sum_k w_k phi_k,    G_k <- log q - phi_k.

(Not the form log q = sum_k w_k log c_k, equal on the iterates: its fixed
points are every common column marginal, and its weights' gradient vanishes.)
Reverse mode through the fixed point, with gamma = g o q (g the gradient of the
loss with respect to q) and one adjoint Lambda_k per histogram:

    beta = gamma + sum_k Lambda_k,   mu_k = w_k beta - Lambda_k,
    Lambda_k <- J_k^T mu_k,   J_k^T mu = -R_k^T (A_k o R_k (mu / c_k)),

iterated from Lambda = 0 until it stops changing (it contracts at the rate of
the forward iteration; one iteration: two products with the plans, one
allreduce of H x dim values with ``comm``). Then

    dL/dA_ik = (R_k (mu_k / c_k))_i,
    dL/dM_il = -(1 / reg) sum_k A_ik R_kil ((mu_k / c_k)_l - (R_k (mu_k / c_k))_i),
    dL/dw_k  = beta . phi_k.

Shifts G_k + t_k with sum_k w_k t_k = 0 leave the iteration's fixed point a
fixed point (eigenvalue 1); the right-hand side is orthogonal to them
(J_k 1 = -1), so the adjoint does not grow along them.

The barycenter exists for weights summing to 1 and histograms of one mass, so
only changes that keep those move q: the weights' gradient is returned centred,
the histograms' with the column means' spread removed (every column's change of
mass equal). With ``comm`` (M by rows, A and w whole) the column sums and the
products with R_k^T are summed over the ranks; M's gradient is this rank's rows,
A's and w's whole on every rank. float64 throughout.
"""
import numpy as np
from mpi4py import MPI

from ._gradients import _summed

_CHECK_EVERY = 10  # the adjoint's stop test (one allreduce of a flag) every tenth step


def _first_row(comm, rows):
    """The global index of this rank's first row of M (rows in rank order)."""
    if comm is None or comm.Get_size() == 1:
        return 0
    return comm.exscan(rows) or 0


class _Rows:
    """The plans' normalized rows R_k, each formed (H x rows x dim floats): for
    any reg, as the log-domain iteration."""

    def __init__(self, M, log_v, reg):
        x = log_v[:, None, :] - M[None, :, :] / reg
        x -= x.max(axis=2, keepdims=True)
        np.exp(x, out=x)
        x /= x.sum(axis=2, keepdims=True)
        self.R = x

    def apply(self, x):  # (R_k x_k)_i, H x rows (one gemv per histogram)
        return np.matmul(self.R, x[:, :, None])[:, :, 0]

    def apply_t(self, y):  # sum_i R_kil y_ki over this rank's rows, H x dim
        return np.matmul(y[:, None, :], self.R)[:, 0, :]

    def weighted(self, A, s, side):  # sum_k A_ki R_kil (s_kl - side_ki), rows x dim
        out = np.zeros(self.R.shape[1:])
        for k in range(len(self.R)):
            out += (A[k][:, None] * self.R[k]) * (s[k][None, :] - side[k][:, None])
        return out


class _Kernel:
    """R_k = diag(1 / d_k) K diag(v_k) through one K = exp(-M / reg) shared by
    the H histograms (rows x dim floats; each product one GEMM over the H
    columns, K read once for all of them). Exact where no entry of K or v
    leaves the normal range: see fits()."""

    def __init__(self, M, log_v, reg):
        # (Constant factors cancel in each row's normalization; a rank may hold no rows, the support be empty.)
        self.K = np.exp(-(M - (M.min() if M.size else 0.0)) / reg)
        self.V = np.exp(log_v - log_v.max(axis=1, keepdims=True, initial=-np.inf))
        self.D = self.K @ self.V.T  # rows x H: d_ik

    @staticmethod
    def fits(M, log_v, reg):
        """Whether every product K_ij v_kj is a normal float64 (no underflow to
        lose the rows' mass in): the spans of -M / reg and of each log_v add to
        less than the exponent range."""
        if M.size == 0:
            return True
        span = float(np.ptp(M)) / reg + float(np.ptp(log_v, axis=1).max(initial=0.0))
        return np.isfinite(span) and span < 600.0

    def apply(self, x):
        return (self.K @ (self.V * x).T).T / self.D.T

    def apply_t(self, y):
        return self.V * ((y / self.D.T) @ self.K)

    def weighted(self, A, s, side):
        alpha = A / self.D.T  # H x rows
        return self.K * (alpha.T @ (self.V * s) - (alpha * side).T @ self.V)


def barycenter_vjp(A, M, weights, reg, log_v, q, g, comm=None, tol=1e-12, max_iter=100000):
    """The gradients of <g, q> with respect to A (whole, dim x H), M (this
    rank's rows) and the weights (H), q the barycenter of (A, M, weights)
    computed with final column scalings log_v (H x dim), and the adjoint's
    iterations (each two products with every R_k). Collective over comm."""
    A = np.asarray(A, dtype=np.float64)
    M = np.asarray(M, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    log_v = np.asarray(log_v, dtype=np.float64)
    H = A.shape[1]
    rows = M.shape[0]
    first = _first_row(comm, rows)
    A_mine = A[first:first + rows].T  # H x rows
    plans = (_Kernel if _Kernel.fits(M, log_v, reg) else _Rows)(M, log_v, reg)

    def row_side(mu):  # (R_k (mu_k / c_k))_i for this rank's rows, H x rows
        return plans.apply(mu * inv_c)

    def column_side(x):  # R_k^T x_k over every rank's rows, H x dim
        return _summed(comm, plans.apply_t(x))

    c = column_side(A_mine)
    inv_c = np.divide(1.0, c, out=np.zeros_like(c), where=c > 0)  # (a column without mass moves nothing)
    gamma = np.asarray(g, dtype=np.float64) * np.asarray(q, dtype=np.float64)

    adjoint = np.zeros_like(c)
    step = 0
    scale = max(float(np.linalg.norm(gamma)), np.finfo(float).tiny)
    for step in range(1, max_iter + 1):
        beta = gamma + adjoint.sum(axis=0)
        mu = w[:, None] * beta - adjoint
        updated = -column_side(A_mine * row_side(mu))
        change = float(np.linalg.norm(updated - adjoint))
        adjoint = updated
        if step % _CHECK_EVERY == 0:
            done = change <= tol * max(scale, float(np.linalg.norm(adjoint)))
            if done if comm is None or comm.Get_size() == 1 else comm.allreduce(done, op=MPI.LAND):
                break
    beta = gamma + adjoint.sum(axis=0)
    mu = w[:, None] * beta - adjoint
    side = row_side(mu)  # H x rows
    scaled = mu * inv_c
    gM = -plans.weighted(A_mine, scaled, side) / reg
    gA = np.zeros_like(A)
    gA[first:first + rows] = side.T
    gA = _summed(comm, gA)
    column_means = gA.mean(axis=0) if len(gA) else np.zeros(H)
    gA -= column_means - column_means.mean()
    phi = np.log(np.where(c > 0, c, 1.0)) - log_v
    gw = phi @ beta
    gw -= gw.mean()
    return gA, gM, gw, step


def _mean_over_ranks(comm, g):
    """The cotangent of q averaged over the ranks: q is the same on every rank and
    so, in the usual use, is the loss of it; a rank-dependent loss is taken as
    their mean."""
    if comm is None or comm.Get_size() == 1:
        return g
    return _summed(comm, np.asarray(g, dtype=np.float64)) / comm.Get_size()


def torch_barycenter(A, M, weights, reg, solve, comm):
    """The barycenter as a torch.autograd.Function of (A, M, weights):
    solve(A, M, weights) -> (q, log_v) on NumPy views in the forward pass,
    barycenter_vjp in the backward pass (collective with comm, as the solve)."""
    import torch

    from .._mpi import agree
    from ._gradients import _numpy_of

    def forward(ctx, A_, M_, w_):
        def convert():
            return tuple(_numpy_of(x) for x in (A_, M_, w_))

        arrays = convert() if comm is None else agree(comm, convert)
        q, log_v = solve(*arrays)
        ctx.arrays, ctx.q, ctx.log_v = arrays, q, log_v
        return torch.from_numpy(np.ascontiguousarray(q)).to(M_.dtype)

    def backward(ctx, g):
        A_, M_, w_ = ctx.arrays
        gA, gM, gw, _ = barycenter_vjp(A_, M_, w_, reg, ctx.log_v, ctx.q, _mean_over_ranks(comm, _numpy_of(g)), comm)
        return tuple(torch.from_numpy(np.ascontiguousarray(x)).to(g.dtype) for x in (gA, gM, gw))

    Barycenter = type("Barycenter", (torch.autograd.Function,), {"forward": staticmethod(forward),
                                                                  "backward": staticmethod(backward)})
    return Barycenter.apply(A, M, weights)


def jax_barycenter(A, M, weights, reg, solve, comm):
    """The barycenter as a JAX function of (A, M, weights) with a custom VJP, as
    torch_barycenter (host callbacks: jax.grad and jax.jit work)."""
    import jax

    dtype = M.dtype
    shapes = (jax.ShapeDtypeStruct((A.shape[0],), dtype), jax.ShapeDtypeStruct((A.shape[1], A.shape[0]), dtype))

    def forward(A_, M_, w_):
        q, log_v = solve(np.asarray(A_), np.asarray(M_), np.asarray(w_))
        return np.asarray(q).astype(dtype), np.asarray(log_v).astype(dtype)

    @jax.custom_vjp
    def barycenter(A_, M_, w_):
        return jax.pure_callback(forward, shapes, A_, M_, w_)[0]

    def barycenter_forward(A_, M_, w_):
        q, log_v = jax.pure_callback(forward, shapes, A_, M_, w_)
        return q, (A_, M_, w_, q, log_v)

    def barycenter_backward(residuals, g):
        def gradients(A_, M_, w_, q_, log_v_, g_):
            gA, gM, gw, _ = barycenter_vjp(A_, M_, w_, reg, log_v_, q_, _mean_over_ranks(comm, np.asarray(g_)), comm)
            return gA.astype(dtype), gM.astype(dtype), gw.astype(dtype)

        out = (jax.ShapeDtypeStruct(A.shape, dtype), jax.ShapeDtypeStruct(M.shape, dtype),
               jax.ShapeDtypeStruct(weights.shape, dtype))
        return jax.pure_callback(gradients, out, *residuals, g)

    barycenter.defvjp(barycenter_forward, barycenter_backward)
    return barycenter(A, M, weights)
