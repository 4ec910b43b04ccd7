# SPDX-License-Identifier: BSD-3-Clause
"""Gradients of the point-cloud loss L = <P, C(X, Y)> (``empirical_sinkhorn2``,
squared Euclidean cost or the distance) with respect to the points and the weights, by implicit
differentiation of the Sinkhorn fixed point (docs/algorithms.md, "Gradients of
point-cloud losses"), without forming the n x m plan or cost: every sum over a
row or column of P is one application of the plan (``apply(V, transpose)``,
the point-cloud engine's P @ V or P^T @ V, split over ``comm`` as the solve).

With w the cotangent of this rank's term (its rows' share of L), G_ij = w_i C_ij,
s = [(P o G) 1; (P o G)^T 1] and H = [[diag(P 1), P], [P^T, diag(P^T 1)]], the
adjoint (alpha, beta) solves H [alpha; beta] = s (on the Schur complement of
the source block, by conjugate gradients, as _gradients.plan_vjp), and

    dL/dC_ij = W_ij = P_ij (w_i + (alpha_i + beta_j - w_i C_ij) / reg),
    dL/dx_i = 2 sum_j W_ij (x_i - y_j),   dL/dy_j = 2 sum_i W_ij (y_j - x_i),
    dL/da = alpha,  dL/db = beta  (each centred over all ranks).

The sums of W need sum_j P_ij C_ij and sum_j P_ij C_ij y_j: the engine's plan
weighted by the cost (cost_power=1) applied to [1, Y] (the transposed side
likewise). Cost: four applications of 1 + d to 3 + 2d columns, two of one
column per conjugate-gradient iteration, two at the end; no n x m array. The
Euclidean distance's sums also need the plan weighted by the inverse cost
(_euclidean_vjp).
"""
import types
import warnings

import numpy as np

from .._mpi import agree
from ._gradients import _conjugate_gradients, _is_empty, _numpy_of, _summed, autodiff_ops
from ._gradients import total_over_ranks, torch_total_over_ranks


def local_loss(apply, X, Y, metric="sqeuclidean"):
    """This rank's rows' share of <P, C>: sum_i sum_j P_ij C(x_i, y_j), from P o C
    applied to ones (the engine's cost_power=1; either metric)."""
    return float(apply(np.ones((np.shape(Y)[0], 1)), False, 1).sum())


def _adjoint(apply, s_rows, s_cols, p_r, p_c, reg, comm, tol, max_iter, Y=None):
    """The adjoint (alpha, beta) of H [alpha; beta] = [s_rows; s_cols] (on the
    Schur complement of the source block, by conjugate gradients), and P applied
    to [beta] (with Y: [beta, beta Y]) on the way."""
    inv_r = np.divide(1.0, p_r, out=np.zeros_like(p_r), where=p_r > 0)
    inv_c = np.divide(1.0, p_c, out=np.zeros_like(p_c), where=p_c > 0)

    def dot(u, v):
        return float(_summed(comm, np.array([float(u @ v)]))[0])

    def schur(beta):
        return p_c * beta - apply((inv_r * apply(beta[:, None], False)[:, 0])[:, None], True)[:, 0]

    rhs = s_cols - apply((inv_r * s_rows)[:, None], True)[:, 0]
    total_targets = int(_summed(comm, np.array([float(p_c.shape[0])]))[0])
    limit = max_iter if max_iter is not None else max(100, 10 * total_targets)
    beta, residual = _conjugate_gradients(schur, rhs, inv_c, dot, tol, limit)
    if residual > max(tol, 1e-6):
        warnings.warn(f"conveyor.ot: the gradient's linear solve stopped at relative residual {residual:.1e} "
                      f"(reg {reg} may be too small for this problem)", UserWarning, stacklevel=4)
    columns = [beta[:, None]] if Y is None else [beta[:, None], beta[:, None] * Y]
    forward = apply(np.ascontiguousarray(np.concatenate(columns, axis=1)), False)
    return inv_r * (s_rows - forward[:, 0]), beta, forward


def points_vjp(apply, X, Y, reg, w, comm=None, tol=1e-10, max_iter=None, metric="sqeuclidean"):
    """(dL/dX, dL/dY, dL/da, dL/db) for this rank's points and weights, L being
    sum over ranks of w_r times rank r's share of <P, C>; `apply(V, transpose,
    cost_power=0)` applies this rank's view of the plan (collective with comm).
    float64."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    reg, w = float(reg), float(w)
    if metric == "euclidean":
        return _euclidean_vjp(apply, X, Y, reg, w, comm, tol, max_iter)
    # Row i: sum_j P_ij [1, y_j] plain and weighted by C_ij; column j: sum_i P_ij [1, x_i, w, w x_i]
    # plain and sum_i P_ij C_ij [w, w x_i] (w per rank: each rank's rows carry their own).
    n, m = X.shape[0], Y.shape[0]
    wn = np.full(n, w)
    ones_y = np.ascontiguousarray(np.concatenate([np.ones((m, 1)), Y], axis=1))
    rows = apply(ones_y, False)
    row_costs = apply(ones_y, False, 1)
    cols = apply(np.ascontiguousarray(np.concatenate([np.ones((n, 1)), X, wn[:, None], wn[:, None] * X], axis=1)),
                 True)
    col_costs = apply(np.ascontiguousarray(np.concatenate([wn[:, None], wn[:, None] * X], axis=1)), True, 1)
    d = X.shape[1]
    p_r, PY, row_cost, row_moment = rows[:, 0], rows[:, 1:], row_costs[:, 0], row_costs[:, 1:]
    p_c, PX, col_w_plain, col_wx_plain = cols[:, 0], cols[:, 1:1 + d], cols[:, 1 + d], cols[:, 2 + d:]
    col_cost, col_moment = col_costs[:, 0], col_costs[:, 1:]
    alpha, beta, forward = _adjoint(apply, w * row_cost, col_cost, p_r, p_c, reg, comm, tol, max_iter, Y)
    back = apply(np.ascontiguousarray(np.concatenate([alpha[:, None], alpha[:, None] * X], axis=1)), True)
    # Row i: sum_j W_ij and sum_j W_ij y_j; column j: sum_i W_ij and sum_i W_ij x_i.
    row_w = w * p_r + (alpha * p_r + forward[:, 0] - w * row_cost) / reg
    row_wy = w * PY + (alpha[:, None] * PY + forward[:, 1:] - w * row_moment) / reg
    col_w = col_w_plain + (back[:, 0] + beta * p_c - col_cost) / reg
    col_wx = col_wx_plain + (back[:, 1:] + beta[:, None] * PX - col_moment) / reg
    grad_X = 2 * (X * row_w[:, None] - row_wy)
    grad_Y = 2 * (Y * col_w[:, None] - col_wx)
    return grad_X, grad_Y, _centred(alpha, comm), _centred(beta, comm)


def _euclidean_vjp(apply, X, Y, reg, w, comm, tol, max_iter):
    """points_vjp for C_ij = |x_i - y_j|, whose gradient (x_i - y_j) / C_ij has no
    moment expansion: the sums come from the engine's P o C (cost_power=1) and
    P o C^-1 (cost_power=-1, 0 at C_ij = 0, where x_i - y_j = 0 too). With
    W_ij = P_ij (w + (alpha_i + beta_j - w C_ij) / reg) and Q = P o C^-1,
      dL/dx_i = sum_j W_ij (x_i - y_j) / C_ij
              = t_i (x_i Q1 - QY)_i + (x_i Q beta - Q (beta Y))_i / reg - w (x_i P1 - PY)_i / reg,
    t_i = w + alpha_i / reg, and dL/dy_j alike with Q^T and P^T (the rows' w per
    rank). Applications: four, two per conjugate-gradient iteration, three."""
    n, m = X.shape[0], Y.shape[0]
    wn = np.full(n, w)
    plain_rows = apply(np.ascontiguousarray(np.concatenate([np.ones((m, 1)), Y], axis=1)), False)
    plain_cols = apply(np.ascontiguousarray(np.concatenate([np.ones((n, 1)), wn[:, None], wn[:, None] * X], axis=1)),
                       True)
    row_cost = apply(np.ones((m, 1)), False, 1)[:, 0]
    col_cost = apply(wn[:, None], True, 1)[:, 0]
    p_r, p_c = plain_rows[:, 0], plain_cols[:, 0]
    alpha, beta, _ = _adjoint(apply, w * row_cost, col_cost, p_r, p_c, reg, comm, tol, max_iter)
    q = apply(np.ascontiguousarray(np.concatenate([np.ones((m, 1)), Y, beta[:, None], beta[:, None] * Y], axis=1)),
              False, -1)
    d = X.shape[1]
    t = w + alpha / reg
    grad_X = (t[:, None] * (X * q[:, :1] - q[:, 1:1 + d]) + (X * q[:, 1 + d:2 + d] - q[:, 2 + d:]) / reg
              - w * (X * p_r[:, None] - plain_rows[:, 1:]) / reg)
    tn = wn + alpha / reg
    qt = apply(np.ascontiguousarray(np.concatenate([tn[:, None], tn[:, None] * X, np.ones((n, 1)), X], axis=1)),
               True, -1)
    grad_Y = ((Y * qt[:, :1] - qt[:, 1:1 + d]) + beta[:, None] * (Y * qt[:, 1 + d:2 + d] - qt[:, 2 + d:]) / reg
              - (Y * plain_cols[:, 1:2] - plain_cols[:, 2:]) / reg)
    return grad_X, grad_Y, _centred(alpha, comm), _centred(beta, comm)


def _centred(v, comm):
    """v minus its mean over every rank's entries."""
    totals = _summed(comm, np.array([v.sum(), float(v.size)]))
    return v - (totals[0] / totals[1] if totals[1] > 0 else 0.0)


# ---------------------------------------------------------------------------
# The loss (and the log potentials) as a function of (X, Y, a, b) in the caller's library. solve(X, Y, a, b)
# (NumPy arrays) -> (this rank's share of the loss, f, g); vjp(X, Y, f, g, w) ->
# (dX, dY, da, db); both collective with comm.

def _weights(w, count, comm, full):
    """POT's empty weights as uniform ones over every rank's points (the count is
    summed on every rank: a rank may hold no points, and so empty weights)."""
    total = comm.allreduce(count) if comm is not None else count
    if w is None or (_is_empty(w) and count > 0):
        return full(count, 1.0 / max(total, 1))
    return w  # (a rank's own empty weights for its no points stay the caller's tensor)


def torch_inputs(X, Y, a, b, comm):
    """X, Y, a, b as tensors of X's floating dtype (float64 for others)."""
    import torch

    X = torch.as_tensor(X)
    dtype = X.dtype if X.dtype in (torch.float32, torch.float64) else torch.float64
    X, Y = X.to(dtype), torch.as_tensor(Y).to(dtype)
    full = lambda k, v: torch.full((k,), v, dtype=dtype)  # noqa: E731
    return (X, Y, torch.as_tensor(_weights(a, X.shape[0], comm, full)).to(dtype),
            torch.as_tensor(_weights(b, Y.shape[0], comm, full)).to(dtype))


def torch_loss(X, Y, a, b, solve, vjp, comm):
    """This rank's share of the loss as a torch.autograd.Function of (X, Y, a, b),
    and this rank's log potentials (f, g), not differentiable."""
    import torch

    def forward(ctx, X_, Y_, a_, b_):
        arrays = agree(comm, lambda: tuple(_numpy_of(t) for t in (X_, Y_, a_, b_)))
        value, f, g = solve(*arrays)
        ctx.state = (arrays[0], arrays[1], f, g)
        f_, g_ = (torch.from_numpy(np.ascontiguousarray(p)).to(X_.dtype) for p in (f, g))
        ctx.mark_non_differentiable(f_, g_)
        return torch.tensor(value, dtype=X_.dtype), f_, g_

    def backward(ctx, grad_value, _grad_f, _grad_g):
        grads = vjp(*ctx.state, float(grad_value))
        return tuple(torch.from_numpy(np.ascontiguousarray(g_)).to(grad_value.dtype) for g_ in grads)

    # Made with type(), as _gradients.torch_plan (a nested class trips mypy.stubtest).
    Loss = type("PointsLoss", (torch.autograd.Function,), {"forward": staticmethod(forward),
                                                           "backward": staticmethod(backward)})
    return Loss.apply(X, Y, a, b)


def jax_inputs(X, Y, a, b, comm):
    """X, Y, a, b as JAX arrays of X's floating dtype."""
    import jax.numpy as jnp

    X = jnp.asarray(X)
    dtype = X.dtype if X.dtype in (jnp.float32, jnp.float64) else jnp.result_type(float)
    X, Y = X.astype(dtype), jnp.asarray(Y).astype(dtype)
    full = lambda k, v: jnp.full(k, v, dtype)  # noqa: E731
    return (X, Y, jnp.asarray(_weights(a, X.shape[0], comm, full), dtype),
            jnp.asarray(_weights(b, Y.shape[0], comm, full), dtype))


def jax_loss(X, Y, a, b, solve, vjp, comm):
    """This rank's share of the loss as a JAX function of (X, Y, a, b) with a
    custom VJP, and this rank's log potentials (f, g) (through stop_gradient);
    forward and backward are host callbacks (jax.grad and jax.jit work)."""
    import jax

    dtype = X.dtype
    value_shape = jax.ShapeDtypeStruct((), dtype)
    outputs = (value_shape, jax.ShapeDtypeStruct((X.shape[0],), dtype), jax.ShapeDtypeStruct((Y.shape[0],), dtype))
    inputs = tuple(jax.ShapeDtypeStruct(x.shape, dtype) for x in (X, Y, a, b))

    def run(X_, Y_, a_, b_):
        arrays = agree(comm, lambda: tuple(np.asarray(x) for x in (X_, Y_, a_, b_)))
        value, f, g = solve(*arrays)
        return np.asarray(value, dtype=dtype), np.asarray(f, dtype), np.asarray(g, dtype)

    def gradients(X_, Y_, f, g, w):
        return tuple(np.asarray(x, dtype=dtype) for x in vjp(np.asarray(X_), np.asarray(Y_), f, g, float(w)))

    @jax.custom_vjp
    def loss(X_, Y_, a_, b_):
        return jax.pure_callback(run, outputs, X_, Y_, a_, b_)

    def loss_forward(X_, Y_, a_, b_):
        value, f, g = jax.pure_callback(run, outputs, X_, Y_, a_, b_)
        return (value, f, g), (X_, Y_, f, g)

    def loss_backward(residuals, cotangents):  # (the potentials' cotangents are zero: stop_gradient below)
        return jax.pure_callback(gradients, inputs, *residuals, cotangents[0])

    loss.defvjp(loss_forward, loss_backward)
    value, f, g = loss(X, Y, a, b)
    return value, jax.lax.stop_gradient(f), jax.lax.stop_gradient(g)


def _torch_clip(x):
    import torch
    return torch.clamp(x, min=0)


def _jax_clip(x):
    import jax.numpy as jnp
    return jnp.maximum(x, 0)


# The inputs' conversion, the differentiable loss, the total over ranks, max(0, x).
_TORCH = types.SimpleNamespace(inputs=torch_inputs, loss=torch_loss, total=torch_total_over_ranks, clip=_torch_clip)
_JAX = types.SimpleNamespace(inputs=jax_inputs, loss=jax_loss, total=total_over_ranks, clip=_jax_clip)


def points_autodiff(*arrays):
    """The differentiating library of the arrays (JAX's or PyTorch's point-cloud ops), or None."""
    return autodiff_ops(*arrays, jax_ops=_JAX, torch_ops=_TORCH)
