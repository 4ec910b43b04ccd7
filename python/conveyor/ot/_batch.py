# SPDX-License-Identifier: BSD-3-Clause
"""POT's batch solvers (``ot.batch.solve_batch``, ``ot.batch.solve_sample_batch``,
POT >= 0.9.6): many small entropic OT problems in one call, each solved to its
own convergence by the engine's batch solver (``sinkhorn::transport_batch``,
``transport_points_batch``: the problems shared by the rank's threads, each on
one thread from start to end; the point clouds' costs recomputed, no B x n x m
array).

The iteration is POT's log-domain Sinkhorn from zero potentials; the stopping
rule POT's (the L2 norm of the row-marginal error below ``tol``, every column
sum exact), tested after every iteration per problem instead of every tenth
over the whole batch: each problem stops at the first iterate within ``tol``.
``solver="sinkhorn"`` runs the same log-domain iteration (the same fixed point,
stable for any ``reg``). ``potentials`` are the log scalings (log u, log v), as
POT's log solver returns them.

``grad`` (PyTorch CPU tensors and JAX arrays): "envelope" (POT's default) gives
``value`` and ``value_linear`` the envelope theorem's gradients (the plan for
M, reg times the centred log potentials for a and b, and for point clouds
sum_j P_ij grad_x c(x_i, y_j), from two plan applications of the engine, no
matrix); "autodiff" (and POT's "last_step", its cheaper approximation of the
same) makes the plan and values differentiable by implicit differentiation of
each problem's fixed point (``_gradients.plan_vjp``; point clouds form their
cost matrices for it, as POT does); "detach" none.

With ``comm``, each rank passes its own problems (any number, zero included) and
gets their results; the arguments are checked together, so one rank's bad input
is every rank's error.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from .. import _conveyor
from .._mpi import comm_address
from ._gradients import autodiff_ops, is_jax, is_torch
from ._solve import OTResult

_GRADS = ("envelope", "autodiff", "last_step", "detach")
_METRICS = ("sqeuclidean", "euclidean")


class BatchResult(OTResult):
    """OTResult for a batch: ``value``, ``value_linear`` (B,), ``potentials``
    ((B, n), (B, m)), ``plan`` (B, n, m; made on first use when the solve did
    not need it), ``status`` (one per problem), ``log`` ({"n_iter": ...})."""

    def __init__(self, value: Any, value_linear: Any, potentials: Any, status: Any, log: Any, plan: Any = None,
                 make_plan: Any = None) -> None:
        super().__init__(value, value_linear, plan, potentials, status, log)
        self._make_plan = make_plan

    @property
    def plan(self):
        """The plans (B, n, m)."""
        if self._plan is None and self._make_plan is not None:
            self._plan = self._make_plan()
        return self._plan

    @property
    def marginal_a(self):
        """The plans' row sums (B, n)."""
        return self.plan.sum(2)

    @property
    def marginal_b(self):
        """The plans' column sums (B, m)."""
        return self.plan.sum(1)


def _check(reg, solver, reg_type, grad, max_iter, tol):
    if not (np.isscalar(reg) and np.isfinite(reg) and reg > 0):
        raise ValueError(f"reg must be a finite number > 0, got {reg!r}")
    if solver not in ("log_sinkhorn", "sinkhorn"):
        raise ValueError(f"Unknown solver: {solver}")
    if str(reg_type).lower() not in ("entropy", "kl"):
        raise ValueError(f"reg_type must be 'entropy' or 'KL', got {reg_type!r}")
    if grad is not None and grad not in _GRADS:
        raise ValueError(f"grad must be one of {_GRADS}, got {grad!r}")


def _numpy(x, dtype=None):
    """x's values as a NumPy array (a torch tensor on another device: an error naming it)."""
    if x is None:
        return None
    if is_torch(x):
        if x.device.type != "cpu":
            raise ValueError(f"conveyor.ot: tensors on {x.device} are not supported (CPU tensors only)")
        x = x.detach().numpy()
    x = np.asarray(x)
    if dtype is None:
        dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.float64
    return np.ascontiguousarray(x, dtype=dtype)


def _engine(C, X, Y, a, b, reg, max_iter, tol, metric, comm, threads):
    """(log_u, log_v, status, iterations, error, cost, entropy, kl) of the batch on NumPy arrays."""
    options = dict(tol=float(tol), max_iter=int(max_iter), norm="l2", metric=metric)
    if threads:
        options["threads"] = int(threads)
    return _conveyor.sinkhorn_batch(C, X, Y, a, b, float(reg), comm_address(comm or MPI.COMM_SELF), options)


def _values(out, reg, reg_type):
    """(value, value_linear) of the batch from the engine's cost and plan terms."""
    cost, entropy, kl = out[5], out[6], out[7]
    term = -entropy if str(reg_type).lower() == "entropy" else kl
    return cost + reg * term, cost


def _dense_plan(M, log_u, log_v, reg, xp=np):
    return xp.exp(log_u[:, :, None] + log_v[:, None, :] - M / reg)


def _solve_concrete(C, X, Y, a, b, reg, max_iter, tol, metric, comm, threads, dtype):
    """The engine on NumPy copies of concrete arrays (torch tensors, NumPy or JAX arrays)."""
    convert = [_numpy(v, dtype) for v in (C, X, Y, a, b)]
    return _engine(*convert, reg, max_iter, tol, metric, comm, threads)


def solve_batch(M: npt.ArrayLike, reg: float, a: Optional[npt.ArrayLike] = None, b: Optional[npt.ArrayLike] = None,
                max_iter: int = 1000, tol: float = 1e-5, solver: str = "log_sinkhorn", reg_type: str = "entropy",
                grad: str = "envelope", comm: Optional[MPI.Comm] = None, threads: int = 0) -> BatchResult:
    """POT's ``ot.batch.solve_batch``: B entropic OT problems, each its own cost
    matrix M[k] (B, n, m) and weights a[k] (B, n), b[k] (B, m) (None: uniform),
    solved in one call (see the module's docstring; ``threads``: OpenMP threads,
    0 the engine's choice).

    Returns
    -------
    BatchResult
        ``value`` (B,) = ``value_linear`` + reg * (-H(P) or KL(P | a b^T)),
        ``value_linear`` (B,) = <P, M>, ``plan`` (B, n, m), ``potentials``
        (log u, log v), ``status``, ``log`` {"n_iter": iterations per problem}.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> M = np.array([[[0.0, 1.0], [1.0, 0.0]]] * 3)
    >>> res = conveyor.ot.solve_batch(M, reg=0.1)
    >>> res.value_linear.shape, bool(np.allclose(res.plan.sum((1, 2)), 1))
    ((3,), True)
    """
    _check(reg, solver, reg_type, grad, max_iter, tol)
    ops = None if grad in (None, "detach") else autodiff_ops(M, a, b)
    if ops is None and not is_torch(M, a, b) and not is_jax(M, a, b):
        Mn = _numpy(M)
        out = _solve_concrete(Mn, None, None, a, b, reg, max_iter, tol, "sqeuclidean", comm, threads, Mn.dtype)
        value, value_linear = _values(out, reg, reg_type)
        return BatchResult(value.astype(Mn.dtype), value_linear.astype(Mn.dtype), (out[0], out[1]), out[2],
                           {"n_iter": out[3].astype(int)}, make_plan=lambda: _dense_plan(Mn, out[0], out[1], reg))
    return _solve_batch_arrays(M, a, b, reg, max_iter, tol, reg_type, grad, comm, threads)


def _library(*arrays):
    """(xp, stop-gradient, as_array) of the arrays' library: torch or jax.numpy."""
    if is_jax(*arrays):
        import jax
        import jax.numpy as jnp
        return jnp, jax.lax.stop_gradient, jnp.asarray
    import torch
    return torch, (lambda x: x.detach()), torch.as_tensor


def _uniform(xp, like, batch, count):
    return xp.ones((batch, count), dtype=like.dtype) / count


def _engine_in_library(xp, C, X, Y, a, b, reg, max_iter, tol, metric, comm, threads, like):
    """The engine's outputs as arrays of the inputs' library (JAX: through a host
    callback, so jax.jit works; the statuses are then not known)."""
    B, n, m = like
    if xp.__name__ == "torch":
        out = _solve_concrete(C, X, Y, a, b, reg, max_iter, tol, metric, comm, threads, None)
        dtype = (C if C is not None else X).dtype
        conv = [xp.from_numpy(np.ascontiguousarray(v)).to(dtype) for v in (out[0], out[1], out[5], out[6], out[7])]
        return conv, out[2], out[3]
    import jax
    ref = C if C is not None else X
    dtype = ref.dtype
    shapes = (jax.ShapeDtypeStruct((B, n), dtype), jax.ShapeDtypeStruct((B, m), dtype),
              *(jax.ShapeDtypeStruct((B,), dtype) for _ in range(3)))

    def host(*arrays):
        out = _solve_concrete(*arrays, reg, max_iter, tol, metric, comm, threads, None)
        return tuple(np.asarray(v).astype(dtype) for v in (out[0], out[1], out[5], out[6], out[7]))

    args = [C, X, Y, a, b]
    present = [i for i, v in enumerate(args) if v is not None]

    def call(*given):
        full = [None] * 5
        for i, v in zip(present, given):
            full[i] = v
        return host(*full)

    conv = list(jax.pure_callback(call, shapes, *[args[i] for i in present]))
    return conv, None, None


def _envelope_weights(xp, sg, value, a, b, log_u, log_v, reg):
    """value plus the envelope theorem's weight terms: reg * centred log potentials."""
    f = reg * (log_u - xp.mean(log_u, 1, keepdims=True) if xp.__name__ != "torch"
               else log_u - log_u.mean(1, keepdim=True))
    g = reg * (log_v - xp.mean(log_v, 1, keepdims=True) if xp.__name__ != "torch"
               else log_v - log_v.mean(1, keepdim=True))
    return value + xp.sum(sg(f) * (a - sg(a)), 1) + xp.sum(sg(g) * (b - sg(b)), 1)


def _solve_batch_arrays(M, a, b, reg, max_iter, tol, reg_type, grad, comm, threads):
    """solve_batch on torch tensors or JAX arrays (values in their library)."""
    xp, sg, as_array = _library(M, a, b)
    M = as_array(M)
    if M.dtype not in (xp.float32, xp.float64):
        M = M.astype(xp.float64) if xp.__name__ != "torch" else M.to(xp.float64)
    B, n, m = M.shape
    a = _uniform(xp, M, B, n) if a is None else as_array(a)
    b = _uniform(xp, M, B, m) if b is None else as_array(b)
    (log_u, log_v, cost, entropy, kl), status, iterations = _engine_in_library(
        xp, sg(M), None, None, sg(a), sg(b), reg, max_iter, tol, "sqeuclidean", comm, threads, (B, n, m))
    log_u, log_v = sg(log_u), sg(log_v)
    log = None if iterations is None else {"n_iter": iterations.astype(int)}
    term = -entropy if str(reg_type).lower() == "entropy" else kl
    if grad in ("autodiff", "last_step"):
        def solve_one(a_, b_, M_):  # (JAX: inside the plan's host callback, where the potentials are not concrete)
            out = _engine(M_[None], None, None, a_[None], b_[None], reg, max_iter, tol, "sqeuclidean", None, threads)
            return np.exp(out[0][0][:, None] + out[1][0][None, :] - M_ / reg), out[0][0], out[1][0]

        P = _autodiff_plans(xp, a, b, M, reg, log_u, log_v, solve_one)
        linear = xp.sum(P * M, (1, 2)) if xp.__name__ != "torch" else (P * M).sum((1, 2))
        if str(reg_type).lower() == "entropy":
            reg_term = (P * xp.log(P + 1e-16)).sum((1, 2))
        else:
            reg_term = (P * xp.log(P / (a[:, :, None] * b[:, None, :]) + 1e-16)).sum((1, 2))
        return BatchResult(linear + reg * reg_term, linear, (log_u, log_v), status, log, plan=P)
    P = sg(_dense_plan(sg(M), log_u, log_v, reg, xp))
    if grad in (None, "detach"):
        return BatchResult(sg(cost + reg * term), sg(cost), (log_u, log_v), status, log, plan=P)
    linear = (P * M).sum((1, 2))
    value = _envelope_weights(xp, sg, linear + reg * sg(term), a, b, log_u, log_v, reg)
    return BatchResult(value, linear, (log_u, log_v), status, log, plan=P)


def _autodiff_plans(xp, a, b, M, reg, log_u, log_v, solve_one):
    """The B plans, each differentiable in (a[k], b[k], M[k]) by implicit
    differentiation of its own fixed point (ops.plan): from the batch's
    potentials (torch), or solved again per problem (JAX, whose callbacks see
    no concrete potentials under jit)."""
    ops = autodiff_ops(M)
    plans = []
    for k in range(M.shape[0]):
        def solved(a_, b_, M_, k=k):
            if xp.__name__ != "torch":
                return solve_one(a_, b_, M_)
            lu, lv = log_u[k].numpy(), log_v[k].numpy()
            return np.exp(lu[:, None] + lv[None, :] - M_ / reg), lu, lv

        plans.append(ops.plan(a[k], b[k], M[k], reg, solved, None)[0])
    return xp.stack(plans)


def _sample_costs(xp, X, Y, metric):
    """The cost matrices (B, n, m) of batched clouds in their library (POT's formula)."""
    XX = (X ** 2).sum(-1)[:, :, None]
    YY = (Y ** 2).sum(-1)[:, None, :]
    squared = XX + YY - 2 * xp.einsum("bid,bjd->bij", X, Y)
    squared = squared.clamp(min=0) if xp.__name__ == "torch" else xp.maximum(squared, 0)
    return squared if metric == "sqeuclidean" else xp.sqrt(squared)


def solve_sample_batch(X_a: npt.ArrayLike, X_b: npt.ArrayLike, reg: float, a: Optional[npt.ArrayLike] = None,
                       b: Optional[npt.ArrayLike] = None, metric: str = "sqeuclidean", p: int = 2, max_iter: int = 1000,
                       tol: float = 1e-5, solver: str = "log_sinkhorn", reg_type: str = "entropy",
                       grad: str = "envelope", comm: Optional[MPI.Comm] = None, threads: int = 0) -> BatchResult:
    """POT's ``ot.batch.solve_sample_batch``: B entropic OT problems between point
    clouds X_a[k] (B, n, d) and X_b[k] (B, m, d), the cost |x - y|^2
    ("sqeuclidean") or |x - y| ("euclidean") recomputed by the engine (no B x n x m
    array unless ``grad="autodiff"`` or ``plan`` is read); otherwise as
    :func:`solve_batch`. ``p`` is accepted for POT's signature ("minkowski" and
    "kl" raise NotImplementedError).

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> X = np.random.default_rng(0).random((4, 8, 2))
    >>> res = conveyor.ot.solve_sample_batch(X, X + 1.0, reg=0.1)
    >>> res.value_linear.shape, bool(np.all(res.value_linear >= 2))  # (a shift by (1, 1) costs at least 2)
    ((4,), True)
    """
    _check(reg, solver, reg_type, grad, max_iter, tol)
    if metric not in _METRICS:
        raise NotImplementedError(f"conveyor.ot.solve_sample_batch computes the metrics {_METRICS}, not {metric!r}")
    foreign = is_torch(X_a, X_b, a, b) or is_jax(X_a, X_b, a, b)
    if not foreign:
        X = _numpy(X_a)
        Y = _numpy(X_b, X.dtype)
        out = _solve_concrete(None, X, Y, a, b, reg, max_iter, tol, metric, comm, threads, X.dtype)
        value, value_linear = _values(out, reg, reg_type)

        def numpy_plan():
            M = np.asarray(_sample_costs(np, X.astype(np.float64), Y.astype(np.float64), metric))
            return _dense_plan(M, out[0].astype(np.float64), out[1].astype(np.float64), reg).astype(X.dtype)

        return BatchResult(value.astype(X.dtype), value_linear.astype(X.dtype), (out[0], out[1]), out[2],
                           {"n_iter": out[3].astype(int)}, make_plan=numpy_plan)
    xp, sg, as_array = _library(X_a, X_b, a, b)
    X, Y = as_array(X_a), as_array(X_b)
    if grad in ("autodiff", "last_step"):
        return _solve_batch_arrays(_sample_costs(xp, X, Y, metric), a, b, reg, max_iter, tol, reg_type, grad, comm,
                                   threads)
    B, n, m = X.shape[0], X.shape[1], Y.shape[1]
    a = _uniform(xp, X, B, n) if a is None else as_array(a)
    b = _uniform(xp, X, B, m) if b is None else as_array(b)
    (log_u, log_v, cost, entropy, kl), status, iterations = _engine_in_library(
        xp, None, sg(X), sg(Y), sg(a), sg(b), reg, max_iter, tol, metric, comm, threads, (B, n, m))
    log_u, log_v = sg(log_u), sg(log_v)
    log = None if iterations is None else {"n_iter": iterations.astype(int)}
    term = -entropy if str(reg_type).lower() == "entropy" else kl

    def plan():
        return sg(_dense_plan(_sample_costs(xp, sg(X), sg(Y), metric), log_u, log_v, reg, xp))

    if grad in (None, "detach"):
        return BatchResult(sg(cost + reg * term), sg(cost), (log_u, log_v), status, log, make_plan=plan)
    gX, gY = _point_gradients(xp, X, Y, log_u, log_v, reg, metric, comm)
    linear = sg(cost) + (gX * (X - sg(X))).sum((1, 2)) + (gY * (Y - sg(Y))).sum((1, 2))
    value = _envelope_weights(xp, sg, linear + reg * sg(term), a, b, log_u, log_v, reg)
    return BatchResult(value, linear, (log_u, log_v), status, log, make_plan=plan)


def _point_gradients(xp, X, Y, log_u, log_v, reg, metric, comm):
    """sum_j P_ij grad_x c(x_i, y_j) for every point of X, and the same for Y, from
    plan applications of the engine (cost_power 0 for |x - y|^2, whose gradient
    is 2 (x_i - y_j); -1 for |x - y|, (x_i - y_j) / |x_i - y_j|), each problem's
    plan its own (the engine's batched apply on this rank)."""
    power, factor = (0, 2.0) if metric == "sqeuclidean" else (-1, 1.0)

    def host(X_, Y_, lu, lv):
        X_, Y_, lu, lv = (np.ascontiguousarray(np.asarray(v)) for v in (X_, Y_, lu, lv))
        options = dict(metric=metric, cost_power=power)
        self = comm_address(MPI.COMM_SELF)
        ones_x = np.ones(X_.shape[:2] + (1,), X_.dtype)
        ones_y = np.ones(Y_.shape[:2] + (1,), Y_.dtype)
        rows = _conveyor.apply_plan_points(X_, Y_, lu, lv, float(reg), np.concatenate([ones_y, Y_], 2), self,
                                           dict(options, transpose=False))
        cols = _conveyor.apply_plan_points(X_, Y_, lu, lv, float(reg), np.concatenate([ones_x, X_], 2), self,
                                           dict(options, transpose=True))
        gX = factor * (rows[:, :, :1] * X_ - rows[:, :, 1:])
        gY = factor * (cols[:, :, :1] * Y_ - cols[:, :, 1:])
        return gX.astype(X_.dtype), gY.astype(X_.dtype)

    if xp.__name__ == "torch":
        gX, gY = host(X.detach(), Y.detach(), log_u, log_v)
        return xp.from_numpy(gX), xp.from_numpy(gY)
    import jax
    shapes = (jax.ShapeDtypeStruct(X.shape, X.dtype), jax.ShapeDtypeStruct(Y.shape, X.dtype))
    return jax.pure_callback(host, shapes, jax.lax.stop_gradient(X), jax.lax.stop_gradient(Y), log_u, log_v)
