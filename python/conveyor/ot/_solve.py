# SPDX-License-Identifier: BSD-3-Clause
"""POT 0.9's unified entry point, ``conveyor.ot.solve``, for the problems
Conveyor solves: entropic optimal transport between two histograms (``reg``
given, ``reg_type`` "KL" or "entropy", balanced), by the log-domain Sinkhorn
solver as POT's ``ot.solve`` uses it (its defaults: 1000 iterations, tolerance
1e-9), and with ``unbalanced`` (KL marginals, ``reg_type`` "KL") as POT's
Sinkhorn branch (``conveyor.ot.sinkhorn_unbalanced``: ``value`` its total cost,
``potentials`` its log scalings). The others (exact OT, quadratic
regularization, other marginal penalties, a reference measure ``c``) raise
NotImplementedError naming what is missing.

``grad`` (on JAX arrays and PyTorch CPU tensors; NumPy has no gradients): "autodiff"
makes ``value``, ``value_linear`` and ``plan`` differentiable, through the plan's
implicit differentiation (``_gradients.py``; with ``unbalanced``, its fixed
point with the KL penalties); "envelope" ``value`` alone, by the envelope theorem
(balanced; unbalanced, through the plan: POT's total cost leaves out the KL mass
terms, so the envelope theorem's gradients are not its gradients); "detach"
none. The potentials carry no gradient.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Dict, Optional, Tuple

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from .._backends import foreign_backend, is_foreign
from .._mpi import agree
from ._gradients import _summed, autodiff_ops, is_jax, is_torch
from ._unbalanced import autodiff_unbalanced, sinkhorn_unbalanced

GRAD_MODES = ("autodiff", "envelope", "detach")


def _pot_backend(x):
    """POT's backend for x (NumPy's for NumPy arrays and scalars), or None without POT."""
    try:
        from ot.backend import get_backend  # type: ignore[import]  # (POT ships no type information)
    except ImportError:
        return None
    if isinstance(x, (np.generic, float, int)) or not hasattr(x, "shape"):
        x = np.asarray(x)  # (POT 0.8's get_backend takes no NumPy scalars)
    try:
        return get_backend(x)
    except (ValueError, AttributeError):  # no backend of POT's for this type
        return None


class OTResult:
    """The result of :func:`solve`, with the attributes of POT's ``ot.utils.OTResult``
    that apply to it (and its ``_backend``, POT's backend of the arrays where POT
    is installed, which code written for POT's results reads)."""

    def __init__(self, value: Any = None, value_linear: Any = None, plan: Any = None, potentials: Any = None,
                 status: Any = None, log: Optional[Dict[str, Any]] = None, lazy_plan: Any = None) -> None:
        self._value, self._value_linear, self._plan = value, value_linear, plan
        self._potentials, self._status, self._log = potentials, status, log
        self._lazy_plan = lazy_plan
        self._backend = _pot_backend(plan if plan is not None else value_linear)

    def __repr__(self):
        shown = ", ".join(f"{k}={v!r}" for k, v in (("value", self._value), ("value_linear", self._value_linear))
                          if v is not None)
        return f"OTResult({shown})"

    @property
    def value(self) -> Any:
        """The regularized objective at the solution."""
        return self._value

    @property
    def value_linear(self) -> Any:
        """The linear part <P, M>."""
        return self._value_linear

    @property
    def value_quad(self) -> None:
        """None: no quadratic part in these problems."""
        return None

    @property
    def plan(self) -> Any:
        """The transport plan (this rank's rows with ``comm``)."""
        return self._plan

    @property
    def sparse_plan(self) -> Any:
        """The plan as a sparse matrix (POT's backend's, or SciPy's CSR)."""
        if self._plan is None:
            return None
        if self._backend is not None:
            return self._backend.tocsr(self._plan)
        import scipy.sparse  # type: ignore[import]  # (SciPy ships no type information here)
        return scipy.sparse.csr_matrix(np.asarray(self._plan))

    @property
    def lazy_plan(self) -> Any:
        """The plan without its matrix (``solve_sample(..., lazy=True)``): rows on
        indexing, as POT's LazyTensor."""
        return self._lazy_plan

    @property
    def potentials(self) -> Optional[Tuple[Any, Any]]:
        """The dual potentials (log u, log v) of the log-domain solver, as POT's."""
        return self._potentials

    @property
    def potential_a(self) -> Any:
        """The first potential."""
        return None if self._potentials is None else self._potentials[0]

    @property
    def potential_b(self) -> Any:
        """The second potential."""
        return None if self._potentials is None else self._potentials[1]

    @property
    def marginals(self) -> Tuple[Any, Any]:
        """(row sums, column sums) of the plan."""
        return self.marginal_a, self.marginal_b

    @property
    def marginal_a(self) -> Any:
        """The plan's row sums."""
        return None if self._plan is None else self._plan.sum(1)

    @property
    def marginal_b(self) -> Any:
        """The plan's column sums (this rank's rows' share with ``comm``)."""
        return None if self._plan is None else self._plan.sum(0)

    @property
    def status(self) -> Any:
        """None, as POT's entropic solve leaves it."""
        return self._status

    @property
    def log(self) -> Optional[Dict[str, Any]]:
        """The solver's log (errors tested, iterations)."""
        return self._log


def _agreed(comm, checks):
    """The arguments' checks; with `comm`, agreed (a bad argument on one rank is
    the same error on every rank, not the others waiting in the solve)."""
    if comm is None:
        checks()
    else:
        agree(comm, checks)


def _check(M, reg, c, reg_type, unbalanced, unbalanced_type, grad):
    if grad not in GRAD_MODES:
        raise ValueError(f"conveyor.ot.solve: grad must be one of {', '.join(GRAD_MODES)}, got {grad!r}")
    if reg is None or float(reg) == 0:
        raise NotImplementedError("conveyor.ot.solve: exact OT (reg=None) is not implemented; Conveyor solves "
                                  "entropic problems (reg > 0): use POT's ot.solve for exact OT")
    if str(reg_type).lower() not in ("kl", "entropy"):
        raise NotImplementedError(f"conveyor.ot.solve: reg_type={reg_type!r} is not implemented (only 'KL' and "
                                  "'entropy'); use POT's ot.solve for it")
    if c is not None:
        raise NotImplementedError("conveyor.ot.solve: a reference measure c is not implemented; use POT's ot.solve")
    if _penalized(unbalanced) and (str(unbalanced_type).lower() != "kl" or str(reg_type).lower() != "kl"):
        raise NotImplementedError(f"conveyor.ot.solve: unbalanced={unbalanced!r} with unbalanced_type="
                                  f"{unbalanced_type!r} and reg_type={reg_type!r} is not implemented (Conveyor "
                                  "solves KL marginals with reg_type 'KL', by Sinkhorn as POT does); use POT's "
                                  "ot.solve for it")
    if np.ndim(M) != 2:
        raise ValueError(f"conveyor.ot.solve: M must be 2-D, got shape {np.shape(M)}")


def _penalized(unbalanced):
    """Whether `unbalanced` relaxes a marginal (None and infinite penalties keep both)."""
    return unbalanced is not None and not np.all(np.isinf(np.asarray(unbalanced, dtype=float)))


def _solve_numpy(M, a, b, reg, reg_type, max_iter, tol, verbose, warmstart, comm, engine, unbalanced=None):
    """Values on NumPy arrays: (value, value_linear, plan, (log_u, log_v), log)."""
    from . import sinkhorn  # (conveyor/ot/__init__.py imports this module)

    M = np.asarray(M)
    dtype = np.float32 if M.dtype == np.float32 else np.float64
    n, m = M.shape
    a = np.full(n, 1.0 / (comm.allreduce(n) if comm is not None else n), dtype) if a is None else a
    b = np.full(m, 1.0 / m, dtype) if b is None else b
    if _penalized(unbalanced):  # POT's sinkhorn_knopp_unbalanced branch: its total cost and log potentials
        plan, log = sinkhorn_unbalanced(a, b, M, reg, unbalanced, reg_type="kl", warmstart=warmstart,
                                        numItermax=max_iter, stopThr=tol, verbose=verbose, log=True, comm=comm,
                                        **{k: engine[k] for k in ("threads",) if k in engine})
        return dtype(log["total_cost"]), dtype(log["cost"]), plan, (log["logu"], log["logv"]), log
    plan, log = sinkhorn(a, b, M, reg, method="sinkhorn_log", numItermax=max_iter, stopThr=tol, verbose=verbose,
                         log=True, warn=True, warmstart=warmstart, comm=comm, **engine)
    P = plan.astype(np.float64)
    value_linear = _summed(comm, np.array([float((P * M).sum())]))[0]
    if str(reg_type).lower() == "entropy":
        regularizer = float((P * np.log(P + 1e-16)).sum())
    else:  # KL to a b^T, as POT's nx.kl_div(P, a b^T), with 0 log 0 = 0 where a weight is 0 (POT's: NaN)
        reference = np.asarray(a, np.float64)[:, None] * np.asarray(b, np.float64)[None, :]
        mass = P > 0
        regularizer = float((P[mass] * np.log(P[mass] / reference[mass] + 1e-16)).sum())
    value = value_linear + reg * _summed(comm, np.array([regularizer]))[0]
    potentials = (log["log_u"], log["log_v"])
    return dtype(value), dtype(value_linear), plan, potentials, log


def solve(M: npt.ArrayLike, a: Optional[npt.ArrayLike] = None, b: Optional[npt.ArrayLike] = None,
          reg: Optional[float] = None, c: Optional[npt.ArrayLike] = None, reg_type: str = "KL",
          unbalanced: Optional[Any] = None, unbalanced_type: str = "KL", method: Optional[str] = None,
          n_threads: int = 1, max_iter: Optional[int] = None, plan_init: Optional[npt.ArrayLike] = None,
          potentials_init: Optional[Sequence[npt.ArrayLike]] = None, tol: Optional[float] = None, verbose: bool = False,
          grad: str = "autodiff", comm: Optional[MPI.Comm] = None, **kwargs: Any) -> OTResult:
    """POT's ``ot.solve`` for entropic OT between histograms (see the module's
    docstring for what is implemented and what ``grad`` does).

    ``a`` and ``b`` default to uniform; ``max_iter`` to 1000 and ``tol`` to 1e-9
    (POT's); ``potentials_init`` (log u, log v) warm-starts the solver (POT 0.9.5
    ignores it for this problem; the solution is the same to ``tol``);
    ``plan_init``, ``method`` and ``n_threads`` are accepted and unused, as in
    POT's entropic solve (``threads=`` sets Conveyor's). ``comm``: as in
    :func:`conveyor.ot.sinkhorn` (M and a are this rank's rows; the values are
    totals; the plan is this rank's rows).

    Returns
    -------
    OTResult
        ``value``, ``value_linear``, ``plan``, ``potentials``, ``status``, ``log``.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> M = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> res = conveyor.ot.solve(M, reg=0.1)
    >>> bool(abs(res.plan.sum() - 1) < 1e-9)
    True
    """
    _agreed(comm, lambda: _check(M, reg, c, reg_type, unbalanced, unbalanced_type, grad))
    assert reg is not None  # (_check refused None on every rank)
    reg = float(reg)
    max_iter = 1000 if max_iter is None else int(max_iter)
    tol = 1e-9 if tol is None else float(tol)
    engine = {k: kwargs[k] for k in ("threads", "allreduce_algorithm", "ranks_per_node") if k in kwargs}
    a = None if a is None or np.size(a) == 0 else a
    b = None if b is None or np.size(b) == 0 else b
    ops = autodiff_ops(M, a, b)
    if ops is not None:
        return _solve_autodiff(ops, M, a, b, reg, reg_type, max_iter, tol, verbose, potentials_init, comm, engine,
                               grad, unbalanced)
    nx = foreign_backend(M, a, b)
    if nx is None:
        start = None if potentials_init is None else tuple(np.asarray(p) for p in potentials_init)
        value, value_linear, plan, potentials, log = _solve_numpy(M, a, b, reg, reg_type, max_iter, tol, verbose,
                                                                   start, comm, engine, unbalanced)
        return OTResult(value, value_linear, plan, potentials, None, log)

    def to_numpy(x):
        return None if x is None else nx.to_numpy(x) if is_foreign(x) else np.asarray(x)

    start = None if potentials_init is None else tuple(to_numpy(p) for p in potentials_init)
    value, value_linear, plan, potentials, log = _solve_numpy(to_numpy(M), to_numpy(a), to_numpy(b), reg, reg_type,
                                                               max_iter, tol, verbose, start, comm, engine, unbalanced)

    def back(x):
        return nx.from_numpy(np.asarray(x), type_as=M)

    return OTResult(back(value), back(value_linear), back(plan), tuple(back(p) for p in potentials), None, log)


def _solve_autodiff(ops, M, a, b, reg, reg_type, max_iter, tol, verbose, potentials_init, comm, engine, grad,
                    unbalanced=None):
    """solve on JAX arrays or PyTorch tensors (`ops`, _gradients.autodiff_ops):
    the plan (and potentials) from one solve, differentiable through the plan
    (jax_plan's custom VJP, torch_plan's autograd Function); the values computed
    from it in the arrays' library, so "autodiff" differentiates them through the
    plan; "envelope" gives the value the envelope theorem's gradients (the plan
    for M, the centred potentials times reg for the weights, as POT's) and
    detaches the rest. Unbalanced, "envelope" differentiates the value through
    the plan too (POT's total cost leaves out the KL mass terms, so the envelope
    theorem's gradients are not its gradients)."""
    xp, sg = ops.math(), ops.stop
    start = None if potentials_init is None else tuple(np.asarray(p) for p in potentials_init)

    def numpy_solve(a_, b_, M_):
        _, _, plan, (log_u, log_v), _ = _solve_numpy(M_, a_, b_, reg, reg_type, max_iter, tol, verbose, start, comm,
                                                     engine, unbalanced)
        return plan, log_u, log_v

    if _penalized(unbalanced):
        if grad == "detach":
            a, b, M = (sg(x) for x in ops.inputs(a, b, M, comm))
        P, log_u, log_v, value_linear, value = autodiff_unbalanced(ops, a, b, M, reg, unbalanced, "kl", None,
                                                                   numpy_solve, comm)
        if grad != "autodiff":
            value_linear, P = sg(value_linear), sg(P)
        return OTResult(value, value_linear, P, (sg(log_u), sg(log_v)), None, None)
    a, b, M = ops.inputs(a, b, M, comm)

    inputs = (a, b, M) if grad == "autodiff" else (sg(a), sg(b), sg(M))
    P, log_u, log_v = ops.plan(*inputs, reg, numpy_solve, comm)
    A, B, C = inputs

    def objective(P_):
        linear = ops.total(xp.sum(P_ * C), comm)
        if str(reg_type).lower() == "entropy":
            term = xp.sum(P_ * xp.log(P_ + 1e-16))
        else:  # 0 log 0 = 0 where a weight is 0; the reference replaced there so no NaN reaches the gradient
            mass = P_ > 0
            reference = xp.where(mass, A[:, None] * ops.shared(B, comm)[None, :], xp.ones_like(P_))
            term = xp.sum(xp.where(mass, P_ * xp.log(P_ / reference + 1e-16), xp.zeros_like(P_)))
        return linear + reg * ops.total(term, comm), linear

    value, value_linear = objective(P)
    if grad == "envelope":
        # Equal to the value; its gradients: P for M, reg * (centred log potentials) for a and b.
        total_rows = comm.allreduce(a.shape[0]) if comm is not None else a.shape[0]
        f = reg * (log_u - ops.total(xp.sum(log_u), comm) / total_rows)
        g = reg * (log_v - xp.mean(log_v))
        value = (sg(value) + xp.sum(sg(P) * (M - sg(M))) + xp.sum(sg(f) * (a - sg(a)))
                 + xp.sum(sg(g) * (b - sg(b))))
    return OTResult(value, value_linear, P if grad == "autodiff" else sg(P), (sg(log_u), sg(log_v)), None, None)


# The metrics solve_sample forms a cost matrix for (lazy=False): POT's names.
_DENSE_METRICS = ("sqeuclidean", "euclidean")
# POT's solve_sample methods that are other solvers than Sinkhorn.
_OTHER_METHODS = ("1d", "gaussian", "factored", "lowrank")


def _cost_matrix(X_a, X_b, metric):
    """The cost matrix of two point clouds (JAX arrays stay JAX's, so gradients
    reach the points): |x|^2 + |y|^2 - 2 x.y, or its square root."""
    if is_jax(X_a, X_b):
        import jax.numpy as xp
    elif is_torch(X_a, X_b):
        import torch
        X_a, X_b = torch.as_tensor(X_a), torch.as_tensor(X_b)
        squared = ((X_a ** 2).sum(1)[:, None] + (X_b ** 2).sum(1)[None, :] - 2 * X_a @ X_b.T).clamp(min=0)
        return squared if metric == "sqeuclidean" else squared.sqrt()
    else:
        xp = np
        X_a, X_b = np.asarray(X_a), np.asarray(X_b)
    X_a, X_b = xp.asarray(X_a), xp.asarray(X_b)
    squared = (X_a ** 2).sum(1)[:, None] + (X_b ** 2).sum(1)[None, :] - 2 * X_a @ X_b.T
    squared = xp.maximum(squared, 0)
    return squared if metric == "sqeuclidean" else xp.sqrt(squared)


def solve_sample(X_a: npt.ArrayLike, X_b: npt.ArrayLike, a: Optional[npt.ArrayLike] = None,
                 b: Optional[npt.ArrayLike] = None, metric: str = "sqeuclidean", reg: Optional[float] = None,
                 c: Optional[npt.ArrayLike] = None, reg_type: str = "KL", unbalanced: Optional[Any] = None,
                 unbalanced_type: str = "KL", lazy: bool = False, batch_size: Optional[int] = None,
                 method: Optional[str] = None, n_threads: int = 1, max_iter: Optional[int] = None,
                 plan_init: Optional[npt.ArrayLike] = None, rank: int = 100, scaling: float = 0.95,
                 potentials_init: Optional[Sequence[npt.ArrayLike]] = None, X_init: Optional[npt.ArrayLike] = None,
                 tol: Optional[float] = None, verbose: bool = False, grad: str = "autodiff",
                 comm: Optional[MPI.Comm] = None, **kwargs: Any) -> OTResult:
    """POT's ``ot.solve_sample`` for entropic OT between point clouds.

    ``lazy=False``: the cost matrix of ``metric`` ("sqeuclidean" or "euclidean"),
    then :func:`solve` (its results, its ``grad`` modes: on JAX arrays the
    gradient reaches the points through the cost). ``lazy=True``: Conveyor's
    point-cloud solver without the matrix (:func:`conveyor.ot.empirical_sinkhorn2`,
    every metric it has), as POT's lazy branch: ``value_linear``, the log
    potentials and ``lazy_plan``, ``value`` None; on torch tensors and JAX
    arrays ``value_linear`` is differentiable in the points and weights unless
    ``grad="detach"`` (POT's lazy branch differentiates it whatever ``grad``;
    with ``grad="envelope"`` it is the value there is), and ``log`` is None.
    POT's other methods ("1d", "gaussian", "factored", "lowrank", "geomloss*"),
    exact and unbalanced problems raise NotImplementedError. ``comm``: with
    ``lazy=False`` as :func:`solve` (X_a and a this rank's rows, X_b whole); with
    ``lazy=True`` as ``empirical_sinkhorn2`` (each rank its share of both clouds).

    Returns
    -------
    OTResult

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> X = np.array([[0.0], [1.0]])
    >>> res = conveyor.ot.solve_sample(X, X, reg=0.01, lazy=True)
    >>> bool(res.value_linear < 1e-6)
    True
    """
    def checks():
        name = "" if method is None else str(method).lower()
        if name in _OTHER_METHODS or name.startswith("geomloss"):
            raise NotImplementedError(f"conveyor.ot.solve_sample: method={method!r} is not implemented (Conveyor "
                                      "solves entropic problems with Sinkhorn); use POT's ot.solve_sample for it")
        if not lazy and metric not in _DENSE_METRICS:
            raise NotImplementedError(f"conveyor.ot.solve_sample: metric={metric!r} with lazy=False is not "
                                      f"implemented ({', '.join(_DENSE_METRICS)}; lazy=True takes more)")
        if lazy:
            _check(np.zeros((1, 1)), reg, c, "KL", unbalanced, unbalanced_type, grad)
            if _penalized(unbalanced):
                raise NotImplementedError("conveyor.ot.solve_sample: unbalanced problems with lazy=True are not "
                                          "implemented (as in POT); lazy=False solves them")

    _agreed(comm, checks)
    if not lazy:
        return solve(_cost_matrix(X_a, X_b, metric), a, b, reg, c, reg_type, unbalanced, unbalanced_type, None,
                     n_threads, max_iter, plan_init, potentials_init, tol, verbose, grad, comm=comm, **kwargs)
    from ._points import differentiable_with_potentials, empirical_sinkhorn2  # (conveyor/ot/__init__.py imports this module)
    assert reg is not None  # (_check refused None on every rank)

    arguments = dict(metric=metric, numIterMax=1000 if max_iter is None else int(max_iter),
                     stopThr=1e-9 if tol is None else float(tol), isLazy=True,
                     batchSize=100 if batch_size is None else batch_size, verbose=verbose, comm=comm, **kwargs)
    if grad != "detach":
        differentiable = differentiable_with_potentials(X_a, X_b, float(reg), a, b, **arguments)
        if differentiable is not None:
            value_linear, potentials, lazy_plan = differentiable
            return OTResult(None, value_linear, None, potentials, None, None, lazy_plan)
    value_linear, log = empirical_sinkhorn2(X_a, X_b, float(reg), a, b, log=True, **arguments)
    nx = foreign_backend(X_a, X_b)

    def log_of(x):
        return nx.log(x) if nx is not None else np.log(x)

    return OTResult(None, value_linear, None, (log_of(log["u"]), log_of(log["v"])), None, log, log["lazy_plan"])
