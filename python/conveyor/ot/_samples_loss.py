# SPDX-License-Identifier: BSD-3-Clause
"""GeomLoss's ``SamplesLoss("sinkhorn", ...)`` between point clouds, computed by
Conveyor's point-cloud engine (``softmin_points``: no N x M array, the clouds
split over ``comm``), with the gradients GeomLoss gives.

The loss (Feydy et al., "Interpolating between optimal transport and MMD using
Sinkhorn divergences", AISTATS 2019; Feydy's thesis, section 3.3) with the cost
C(x, y) = |x - y|^p / p (p = 1 or 2), eps = blur^p, rho = reach^p (None:
balanced):

  softmin(eps, x, y, h)_i = -eps LSE_j (h_j - C(x_i, y_j) / eps)
  eps-scaling: eps_0 = diameter^p, then exp(t) for t in arange(p log diameter,
    p log blur, p log scaling), then blur^p; damping d = 1 / (1 + eps / rho)
    (1 when balanced); starting potentials at eps_0 from log a, log b alone;
  at every eps of the list, the symmetric update, averaged with the previous:
    f_ba <- (f_ba + d softmin(eps, x, y, log b + g_ab / eps)) / 2, and g_ab, f_aa,
    g_bb alike (f_aa, g_bb: the debiasing problems a <-> a, b <-> b);
  one last update at blur^p, not averaged (its gradients are the loss's);
  value: <a, f_ba - f_aa> + <b, g_ab - g_bb> (debias; <a, f_ba> + <b, g_ab>
    without), and with rho the unbalanced form (rho + eps / 2) <a, e^{-f_aa/rho}
    - e^{-f_ba/rho}> + ... .

Gradients are GeomLoss's, those of the last update with its softmins'
potentials and columns held fixed (at the fixed point, by the envelope theorem,
the gradient of OT_eps in x_i is a_i times that of its potential): in a weight,
the potential it multiplies (or its unbalanced form); in a point x_i (p = 2),
c_i d (x_i - sum_j w_ij y_j) from each softmin with x_i as a row, w its weights
(softmin_points' averages of the columns' points, in the same pass) and c the
derivative of the value in its output; for p = 1, c_i d sum_j w_ij (x_i - y_j) /
|x_i - y_j| (the engine's averages under cost_power=-1, 0 at coincident points).

Passes (each one engine pass over the n m pairs, split over the ranks): 2 per
eps, 4 with debias, and as many for the last update (gradients included).
Where the problem's arrays fit and the dimension makes a pass cost more than
an exp per pair (``backend="auto"``, _samples_loss_formed.use_formed), or with ``backend="tensorized"``, the
same softmins run on cost arrays formed once (_samples_loss_formed.py;
p = 2 only); "online" and "multiscale" are the engine's passes.
Differences from GeomLoss, each on purpose: the engine folds every softmin in
double (on the formed arrays, in the clouds' dtype, as GeomLoss's tensorized
backend); the p = 1 cost is |x - y| exactly (GeomLoss's is at least 1e-4, a
floor against the gradient's 0 / 0; values differ by ~1e-4 relative); the
backends give the same values up to rounding (GeomLoss's "multiscale" is its
own approximation; here it is "online"; cluster labels and ``cost`` callables
are not accepted, ``truncate`` changes nothing); losses other than "sinkhorn"
raise NotImplementedError; with
``potentials=True`` one problem's potentials are (N,) and (M,) (GeomLoss's
tensorized backend gives (1, N) and (1, M)). Beyond GeomLoss (PyTorch only):
JAX arrays, under ``jax.grad``, ``jax.value_and_grad`` and ``jax.jit`` (host
callbacks; the gradients are made in the forward pass, whether asked for or not).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from mpi4py import MPI

from .. import _conveyor
from .._mpi import agree, comm_address
from ._gradients import is_jax
from ._samples_loss_formed import FormedArrays, use_formed

_METRIC = {1: "euclidean", 2: "sqeuclidean"}
_KERNEL_EPS = {1: 1.0, 2: 2.0}  # the engine's cost is |x - y|^p: C / eps = |x - y|^p / (p eps)
_LOG_ZERO = -100000.0  # GeomLoss's log of a zero weight


class SamplesLoss:
    """``geomloss.SamplesLoss`` for ``loss="sinkhorn"``: call it with ``(x, y)``
    or ``(a, x, b, y)`` (weights first, as GeomLoss; uniform when left out), 2-D
    ``(N, D)`` clouds or batches ``(B, N, D)``; NumPy arrays or torch tensors.
    Torch tensors that require grad get GeomLoss's gradients. With ``comm`` (an
    mpi4py communicator) each rank passes its share of the points and weights;
    the value is the total, the gradients and potentials this rank's share.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> x = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> loss = conveyor.ot.SamplesLoss("sinkhorn", p=2, blur=0.01)
    >>> print(f"{loss(x, x):.3f} {loss(x, x + [0.0, 1.0]):.3f}")
    0.000 0.500
    """

    def __init__(self, loss: str = "sinkhorn", p: int = 2, blur: float = 0.05, reach: Optional[float] = None,
                 diameter: Optional[float] = None, scaling: float = 0.5, truncate: Optional[float] = None,
                 cost: None = None, kernel: None = None, cluster_scale: None = None, debias: bool = True,
                 potentials: bool = False, verbose: bool = False, backend: str = "auto",
                 comm: Optional[MPI.Comm] = None) -> None:
        if loss != "sinkhorn":
            raise NotImplementedError(f"conveyor.ot.SamplesLoss computes loss='sinkhorn' only, not {loss!r}")
        if p not in _METRIC:
            raise ValueError(f"p must be 1 or 2, got {p!r}")
        if cost is not None or kernel is not None or cluster_scale is not None:
            raise NotImplementedError("conveyor.ot.SamplesLoss takes no cost, kernel or cluster_scale: "
                                      "the cost is |x - y|^p / p, computed by the engine")
        if not blur > 0:
            raise ValueError(f"blur must be > 0, got {blur!r}")
        if not 0 < scaling < 1:
            raise ValueError(f"scaling must be in (0, 1), got {scaling!r}")
        if reach is not None and not reach > 0:
            raise ValueError(f"reach must be > 0 or None, got {reach!r}")
        if backend not in ("auto", "tensorized", "online", "multiscale"):
            raise ValueError(f"unknown backend {backend!r}")
        self.loss, self.p, self.blur, self.reach, self.diameter = loss, p, blur, reach, diameter
        self.scaling, self.debias, self.potentials, self.backend = scaling, debias, potentials, backend
        self.truncate, self.verbose, self.comm = truncate, verbose, comm

    def __call__(self, *args: Any) -> Any:
        if len(args) == 2:
            (x, y), a, b = args, None, None
        elif len(args) == 4:
            a, x, b, y = args
        else:
            raise ValueError("SamplesLoss takes (x, y) or (a, x, b, y) (cluster labels are not accepted)")
        torch = _torch_of(x, y, a, b)
        if torch is not None:
            return _torch_call(torch, self, a, x, b, y)
        if is_jax(x, y, a, b):
            return _jax_call(self, a, x, b, y)
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype not in (np.float32, np.float64):
            x = x.astype(np.float64)
        y = y.astype(x.dtype)
        a = None if a is None else np.asarray(a, dtype=x.dtype)
        b = None if b is None else np.asarray(b, dtype=x.dtype)
        out = _batched(self, a, x, b, y, grads=False)
        return out[0] if self.potentials else out[0].astype(x.dtype)[()]


def _torch_of(*arrays):
    for v in arrays:
        if v is not None and type(v).__module__.startswith("torch"):
            import torch
            return torch
    return None


def _torch_call(torch, loss, a, x, b, y):
    if x.device.type != "cpu" or y.device.type != "cpu":
        raise ValueError(f"conveyor.ot.SamplesLoss works on CPU tensors, got {x.device} and {y.device}")

    def numpy_of(t):
        return None if t is None else t.detach().numpy()

    if loss.potentials:
        F, G = _batched(loss, numpy_of(a), numpy_of(x), numpy_of(b), numpy_of(y), grads=False)
        return torch.from_numpy(F), torch.from_numpy(G)

    class _Loss(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a_, x_, b_, y_):
            value, grads = _batched(loss, numpy_of(a_), numpy_of(x_), numpy_of(b_), numpy_of(y_),
                                    grads=any(ctx.needs_input_grad), point_grads=ctx.needs_input_grad[1] or
                                    ctx.needs_input_grad[3])
            ctx.grads = grads
            return torch.from_numpy(np.asarray(value, dtype=numpy_of(x_).dtype))

        @staticmethod
        def backward(ctx, out):
            def scaled(g, needed):
                if not needed or g is None:
                    return None
                g = torch.from_numpy(g)
                return out.reshape(out.shape + (1,) * (g.dim() - out.dim())) * g

            da, dx, db, dy = ctx.grads
            need = ctx.needs_input_grad
            return scaled(da, need[0]), scaled(dx, need[1]), scaled(db, need[2]), scaled(dy, need[3])

    value = _Loss.apply(a, x, b, y)
    return value


def _jax_call(loss, a, x, b, y):
    """The loss on JAX arrays: a function of the arrays given, with a custom VJP
    whose gradients (the envelope theorem's, as the torch path's) come from the
    forward pass; both are host callbacks, so jax.grad, jax.value_and_grad and
    jax.jit work. With loss.potentials, (F, G) without gradients."""
    import jax
    import jax.numpy as jnp

    x = jnp.asarray(x)
    dtype = x.dtype if x.dtype in (jnp.float32, jnp.float64) else jnp.result_type(float)
    given = {k: jnp.asarray(v, dtype) for k, v in zip("axby", (a, x, b, y)) if v is not None}
    names = list(given)

    def host(*values, grads=True):
        named = {k: np.asarray(v) for k, v in zip(names, values)}
        out = _batched(loss, named.get("a"), named["x"], named.get("b"), named["y"], grads=grads)
        if loss.potentials:
            return tuple(np.asarray(v, dtype) for v in out)
        gradients = dict(zip("axby", out[1]))
        return (np.asarray(out[0], dtype),) + tuple(np.asarray(gradients[k], dtype) for k in names)

    if loss.potentials:
        batch = given["x"].shape[:-2]
        shapes = (jax.ShapeDtypeStruct(batch + given["x"].shape[-2:-1], dtype),
                  jax.ShapeDtypeStruct(batch + given["y"].shape[-2:-1], dtype))
        return jax.pure_callback(lambda *v: host(*v, grads=False), shapes, *given.values())
    shapes = (jax.ShapeDtypeStruct(given["x"].shape[:-2], dtype),) + tuple(
        jax.ShapeDtypeStruct(v.shape, dtype) for v in given.values())

    @jax.custom_vjp
    def value(*arrays):
        return jax.pure_callback(host, shapes, *arrays)[0]

    def forward(*arrays):
        out = jax.pure_callback(host, shapes, *arrays)
        return out[0], out[1:]

    def backward(gradients, w):  # (w: the value's cotangent, one per problem of a batch)
        return tuple(w.reshape(w.shape + (1,) * (g.ndim - w.ndim)) * g for g in gradients)

    value.defvjp(forward, backward)
    return value(*given.values())


def _batched(loss, a, x, b, y, grads, point_grads=True):
    """(values, (da, dx, db, dy)) over a batch (B, N, D) or one problem (N, D);
    with loss.potentials, (F, G) instead. A batch is solved in one pass per
    softmin over all its problems (the engine's batched softmin_points)."""
    # Bad arguments on any one rank: the same error on every rank (before any collective).
    agree(_comm_of(loss), lambda: _check_shapes(a, x, b, y))
    batch = x.ndim == 3
    xs, ys = (x, y) if batch else (x[None], y[None])
    as_ = None if a is None else (a if batch else a[None])
    bs = None if b is None else (b if batch else b[None])
    # One diameter for the batch (GeomLoss's: of every problem's points), unless given.
    diameter = _diameter(xs.reshape(-1, xs.shape[-1]), ys.reshape(-1, ys.shape[-1]), _comm_of(loss)) \
        if loss.diameter is None else float(loss.diameter)
    out = _problems(loss, as_, xs, bs, ys, diameter, grads, point_grads)

    def one(v):  # (one problem: without the batch axis)
        return v if batch or v is None else v[0]

    if loss.potentials:
        return one(out[0]), one(out[1])
    value = one(out[0].astype(x.dtype))
    if not grads:
        return value, None
    return value, tuple(one(g) for g in out[1])


def _check_shapes(a, x, b, y):
    if x.ndim not in (2, 3) or y.ndim != x.ndim or x.shape[-1] != y.shape[-1]:
        raise ValueError(f"x and y must be (N, D) and (M, D), or (B, N, D) and (B, M, D); got {x.shape} and {y.shape}")
    if x.ndim == 3 and x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y hold {x.shape[0]} and {y.shape[0]} problems")
    for w, points, name in ((a, x, "a"), (b, y, "b")):
        if w is not None and np.shape(w) != points.shape[:-1]:
            raise ValueError(f"{name} must hold one weight per point ({points.shape[:-1]}), got shape {np.shape(w)}")


class _Problems:
    """A batch of B problems on this rank: their points (B, N, D) and log weights
    (B, N), the engine's batched call."""

    def __init__(self, loss, a, x, b, y):
        self.p, self.comm = loss.p, _comm_of(loss)
        self.address = comm_address(self.comm)
        self.x = np.ascontiguousarray(x)
        self.y = np.ascontiguousarray(y, dtype=self.x.dtype)
        self.a = self._weights(a, self.x.shape[:2], "a")
        self.b = self._weights(b, self.y.shape[:2], "b")
        self.a_log, self.b_log = _log_weights(self.a), _log_weights(self.b)

    def _weights(self, w, shape, name):
        if w is None:  # uniform over every rank's points, as GeomLoss's over its one array
            total = self.comm.allreduce(shape[1])
            return np.full(shape, 1.0 / max(total, 1), dtype=self.x.dtype)
        w = np.ascontiguousarray(w, dtype=self.x.dtype)
        if w.shape != shape:
            raise ValueError(f"{name} must hold one weight per point ({shape}), got shape {w.shape}")
        return w

    def pair(self, rows, cols, formed):
        """The softmin of `rows` against `cols` (each "x" or "y", this rank's
        points of that side): on the formed cost arrays (formed: the call's
        FormedArrays) or, with formed None, the engine's pass."""
        if formed is not None:
            return formed.pair(rows, cols)
        return _PointPair(self, getattr(self, rows), getattr(self, cols))

    def total(self, local):
        """Each problem's sum over the ranks, the same bits on every rank (rank order)."""
        parts = self.comm.allgather(np.asarray(local, dtype=np.float64))
        out = parts[0].copy()
        for q in parts[1:]:
            out += q
        return out


class _PointPair:
    """One of the loss's four problems on the point-cloud engine: each softmin
    one engine pass over every rank's columns (softmin_points)."""

    def __init__(self, pr, rows, cols):
        self.pr, self.rows, self.cols = pr, rows, cols

    def softmin(self, eps, h, grads=False):
        """(-eps LSE_j (h_j - C(rows_i, cols_j) / eps), and with grads each row's
        sum_j w_ij grad_x C(rows_i, cols_j), C = |x - y|^p / p (float64)), h
        this rank's columns' part."""
        p = self.pr.p
        values, power = _gradient_values(p, self.cols) if grads else (None, 0)
        lse, avg = _conveyor.softmin_points(self.rows, self.cols, np.ascontiguousarray(h, dtype=self.pr.x.dtype),
                                           _KERNEL_EPS[p] * eps, values, self.pr.address,
                                           {"metric": _METRIC[p], "cost_power": power})
        f = -eps * lse.astype(np.float64)
        if not grads:
            return f, None
        avg = avg.astype(np.float64)
        x = self.rows.astype(np.float64)
        return f, (x - avg if p == 2 else x * avg[..., :1] - avg[..., 1:])


def _log_weights(w):
    with np.errstate(divide="ignore"):
        out = np.log(w.astype(np.float64))
    out[w <= 0] = _LOG_ZERO
    return out


def _comm_of(loss):
    return MPI.COMM_SELF if loss.comm is None else loss.comm


def _diameter(x, y, comm):
    """GeomLoss's: the diagonal of the bounding box of both clouds (every rank's)."""
    d = x.shape[1]
    both = np.concatenate([x, y]).astype(np.float64)
    lo = both.min(axis=0) if len(both) else np.full(d, np.inf)
    hi = both.max(axis=0) if len(both) else np.full(d, -np.inf)
    comm.Allreduce(MPI.IN_PLACE, lo, op=MPI.MIN)
    comm.Allreduce(MPI.IN_PLACE, hi, op=MPI.MAX)
    return float(np.linalg.norm(hi - lo))


def _epsilons(p, diameter, blur, scaling):
    """The eps-scaling list: diameter^p, the geometric steps in between, blur^p."""
    if not diameter > 0:  # every point in one place: no scale to anneal from
        return [blur ** p, blur ** p]
    steps = np.arange(p * np.log(diameter), p * np.log(blur), p * np.log(scaling))
    return [diameter ** p] + [float(np.exp(e)) for e in steps] + [blur ** p]


def _problems(loss, a, x, b, y, diameter, grads, point_grads):
    """The batch's values (B,) and gradients, or with loss.potentials (F, G); the
    arrays carry the batch axis first."""
    pr = _Problems(loss, a, x, b, y)
    p, rho, debias = loss.p, None if loss.reach is None else loss.reach ** loss.p, loss.debias
    eps_list = _epsilons(p, diameter, loss.blur, loss.scaling)
    formed = FormedArrays(pr) if use_formed(loss.backend, p, debias, pr.x, pr.y, pr.comm) else None

    def damping(eps):
        return 1.0 if rho is None else 1.0 / (1.0 + eps / rho)

    # The four problems, each with the log weights of its columns: f_ba on x
    # against y, g_ab on y against x, f_aa and g_bb (the debiasing ones).
    names = [("x", "y"), ("y", "x")] + ([("x", "x"), ("y", "y")] if debias else [])
    pairs = [pr.pair(r, c, formed) for r, c in names]
    col_logs = [pr.b_log if c == "y" else pr.a_log for _, c in names]
    # Which potential's columns each problem's update reads: f_ba reads g_ab, g_ab
    # reads f_ba, f_aa and g_bb read themselves.
    partner = [1, 0, 2, 3]

    eps = eps_list[0]
    pots = [damping(eps) * q.softmin(eps, lw)[0] for q, lw in zip(pairs, col_logs)]
    for eps in eps_list:
        d = damping(eps)
        new = [d * q.softmin(eps, lw + pots[partner[k]] / eps)[0] for k, (q, lw) in enumerate(zip(pairs, col_logs))]
        pots = [0.5 * (old + nw) for old, nw in zip(pots, new)]
    eps = eps_list[-1]
    d = damping(eps)
    # The last update, not averaged: its weights' potentials are held fixed.
    want_rows = grads and point_grads and not loss.potentials
    last = [q.softmin(eps, lw + pots[partner[k]] / eps, want_rows) for k, (q, lw) in enumerate(zip(pairs, col_logs))]
    pots = [d * s[0] for s in last]
    f_ba, g_ab = pots[0], pots[1]
    f_aa, g_bb = (pots[2], pots[3]) if debias else (None, None)
    if loss.potentials:
        F = f_ba - f_aa if debias else f_ba
        G = g_ab - g_bb if debias else g_ab
        return F.astype(pr.x.dtype), G.astype(pr.x.dtype)

    # The value and its derivative in each potential (c, one per problem).
    def term(w, f):
        if rho is None:
            return w * f, w
        s = rho + eps / 2
        e = np.exp(-f / rho)
        return w * s * (1 - e), w * s * e / rho

    v_ba, c_ba = term(pr.a, f_ba)
    v_ab, c_ab = term(pr.b, g_ab)
    local = v_ba.sum(axis=-1) + v_ab.sum(axis=-1)
    coefficients = [c_ba, c_ab]
    if debias:
        v_aa, c_aa = term(pr.a, f_aa)
        v_bb, c_bb = term(pr.b, g_bb)
        local -= v_aa.sum(axis=-1) + v_bb.sum(axis=-1)
        coefficients += [-c_aa, -c_bb]
    value = pr.total(local)
    if not grads:
        return value, None

    # Weights: the potential each multiplies (the unbalanced form without the 1 -).
    def weight_grad(f, f_self):
        if rho is None:
            return f if f_self is None else f - f_self
        s = rho + eps / 2
        g = s * (1 - np.exp(-f / rho))
        return g if f_self is None else g - s * (1 - np.exp(-f_self / rho))

    da = weight_grad(f_ba, f_aa).astype(pr.x.dtype)
    db = weight_grad(g_ab, g_bb).astype(pr.x.dtype)
    if not point_grads:
        return value, (da, None, db, None)
    # Points: each problem's rows alone (its columns held fixed, as GeomLoss's
    # cost(x, y.detach())): c_i d sum_j w_ij grad C(x_i, y_j), which is
    # c_i d (x_i - sum_j w_ij y_j) for p = 2 and, for p = 1,
    # c_i d (x_i sum_j w_ij / C_ij - sum_j w_ij y_j / C_ij): the pairs' directions.
    dx = np.zeros(pr.x.shape, dtype=np.float64)
    dy = np.zeros(pr.y.shape, dtype=np.float64)
    for (_, direction), c, grad in zip(last, coefficients, [dx, dy, dx, dy]):
        grad += (d * c)[..., None] * direction
    return value, (da, dx.astype(pr.x.dtype), db, dy.astype(pr.y.dtype))


def _gradient_values(p, cols):
    """The softmin's values and cost power whose averages give the point
    gradients: the columns' points (p = 2), or [1, points] over |x - y| (p = 1)."""
    if p == 2:
        return cols, 0
    ones = np.ones(cols.shape[:-1] + (1,), dtype=cols.dtype)
    return np.ascontiguousarray(np.concatenate([ones, cols], axis=-1)), -1
