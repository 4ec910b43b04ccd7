# SPDX-License-Identifier: BSD-3-Clause
"""Entropic OT between point clouds with POT's interface (``ot.bregman.
empirical_sinkhorn``, ``empirical_sinkhorn2`` and
``empirical_sinkhorn_divergence``), computed by Conveyor's
point-cloud solver: the cost is recomputed where it is needed, never stored.

The contract followed is POT's lazy one (0.9, ``isLazy=True``): the iteration
updates the source potential first (f = log a - LSE_j(g_j - M_ij / reg)), then
the target's; the row-marginal error ``sum_i |rowsum_i - a_i|`` is tested after
iterations 10, 20, ... against ``stopThr``; the potentials are log-scalings
(f = log u). With ``isLazy=False`` (the default), where each rank's part of the
cost matrix fits (``_points_dense.auto_forms``), the matrix is formed
once and the dense engine runs this same iteration on it (_points_dense.py:
the error is then tested at iterations 1, 11, ...); with ``isLazy=True``, or
the keyword ``dense=False``, or past that rule, the point-cloud solver
recomputes each cost where it is needed; ``dense=True`` forms the matrix at
any size. ``batchSize`` is accepted and changes nothing. Deviations from POT,
each on purpose: with ``isLazy=False`` POT runs its dense ``sinkhorn`` (column
update first, L2 column error) and its log holds that solver's ``u``, ``v``
and ``err``; here the lazy iteration and its rule run either way, and the
log's ``u``, ``v`` are exp(f), exp(g). Metrics: ``"sqeuclidean"`` and
``"euclidean"``.

With ``comm`` (an mpi4py communicator) each rank passes its share of ``X_s``
(with ``a``) and of ``X_t`` (with ``b``), any sizes; the potentials returned
are this rank's, the plan is this rank's rows against every target point (in
rank order), the loss is the total.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Sequence
from typing import Any, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from .. import _conveyor
from .._backends import foreign_backend, on_numpy
from .._mpi import agree, comm_address
from .._typing import PlanOrPotentials, ValueOrLogged
from ._points_dense import check_choice, dense_vjp, solve_dense, use_dense
from ._points_gradients import local_loss, points_autodiff, points_vjp

__all__ = ["empirical_sinkhorn", "empirical_sinkhorn2", "empirical_sinkhorn_divergence", "empirical_plan_apply",
           "empirical_barycentric_mapping", "empirical_plan_rows", "METRICS"]

#: The ground costs the point-cloud solver computes (POT's names).
METRICS = ("sqeuclidean", "euclidean")
_ENGINE_KWARGS = ("threads", "eps_scaling", "exchange")
_CHECK_EVERY = 10  # POT's lazy solver tests the error after every 10th iteration


def _on_numpy_copies(function=None, *, differentiable=None):
    """Lets function(X_s, X_t, reg, a, b, ...) take another library's arrays
    (JAX, PyTorch, ...): it runs on NumPy copies, and its arrays (alone, in a
    tuple, in a log dict) are handed back as that library's, like X_s. With
    `differentiable`, torch tensors and JAX arrays (without log=True) go to
    differentiable(library ops, the call's arguments by name) instead."""
    if function is None:
        return functools.partial(_on_numpy_copies, differentiable=differentiable)
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(X_s, X_t, reg, a=None, b=None, *args, **kwargs):
        lib = None if differentiable is None else points_autodiff(X_s, X_t, a, b)
        if lib is not None:
            call = signature.bind(X_s, X_t, reg, a, b, *args, **kwargs)
            call.apply_defaults()
            if not call.arguments["log"]:
                return differentiable(lib, call.arguments)
        nx = foreign_backend(X_s, X_t, a, b)
        if nx is None:
            return function(X_s, X_t, reg, a, b, *args, **kwargs)
        return on_numpy(nx, X_s, function, X_s, X_t, reg, a, b, *args, **kwargs)
    return wrapper


@_on_numpy_copies()
def empirical_sinkhorn(X_s: npt.ArrayLike, X_t: npt.ArrayLike, reg: float, a: Optional[npt.ArrayLike] = None,
                       b: Optional[npt.ArrayLike] = None, metric: str = "sqeuclidean", numIterMax: int = 10000,
                       stopThr: float = 1e-9, isLazy: bool = False, batchSize: Union[int, Tuple[int, int]] = 100,
                       verbose: bool = False, log: bool = False, warn: bool = True,
                       warmstart: Optional[Sequence[npt.ArrayLike]] = None, comm: Optional[MPI.Comm] = None,
                       **kwargs: Any) -> PlanOrPotentials:
    """The entropic OT plan between two point clouds, or with ``isLazy=True``
    its dual potentials, as ``ot.bregman.empirical_sinkhorn``.

    Parameters
    ----------
    X_s : array_like, shape (n_samples_a, dim)
        Source points (this rank's share with ``comm``).
    X_t : array_like, shape (n_samples_b, dim)
        Target points (this rank's share with ``comm``).
    reg : float
        Entropic regularization (> 0).
    a, b : array_like, optional
        Weights of the points (this rank's); None: uniform over all points.
    metric : {"sqeuclidean", "euclidean"}
        The ground cost.
    numIterMax : int
        Iterations at most.
    stopThr : float
        Stop when the L1 row-marginal error, tested every 10th iteration, is below it.
    isLazy : bool
        Return the potentials (f, g) instead of the plan, and solve without
        forming the cost matrix.
    batchSize : int or tuple
        Accepted for POT's signature; the solver tiles the cost itself.
    verbose, log, warn : bool
        Print the tested errors; also return a dict (``err``, ``niter``, ``u``,
        ``v``; with ``isLazy``, ``lazy_plan`` when POT is installed and there is
        one rank); warn when the solve does not converge.
    warmstart : tuple of arrays, optional
        ``(f, g)``, log-scalings to start from.
    comm : mpi4py.MPI.Comm, optional
        Spread the problem over these ranks (collective).
    **kwargs
        ``threads``: OpenMP threads per rank; ``eps_scaling``: anneal reg from the
        clouds' diameter; ``exchange``: ring, gather or auto (both
        ``conveyor.sinkhorn_points``'s, and both imply the point-cloud solver);
        ``dense``: "auto" (default: form the cost matrix when not ``isLazy``
        and it fits in 256 MiB per rank), True (always) or False (never);
        anything else is ignored, as POT does.

    Returns
    -------
    gamma : ndarray, shape (n_samples_a, n_samples_b)
        The plan (``isLazy=False``; with ``comm``, this rank's rows against all
        target points).
    f, g : ndarray
        The potentials (``isLazy=True``): this rank's.
    log : dict
        Only when ``log=True``.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> X = np.array([[0.0], [1.0]]); Y = np.array([[0.1], [0.9]])
    >>> P = conveyor.ot.empirical_sinkhorn(X, Y, reg=0.1)
    >>> bool(np.allclose(P.sum(axis=1), 0.5))
    True
    """
    run = _solve_points(X_s, X_t, reg, a, b, metric, numIterMax, stopThr, verbose, warn, warmstart, comm, kwargs,
                        "empirical_sinkhorn", isLazy)
    f, g = run["log_u"], run["log_v"]
    if isLazy:
        if log:
            run["log"]["lazy_plan"] = _lazy_plan(run, metric, reg, comm)
            return f, g, run["log"]
        return f, g
    plan = _plan_rows(run, metric, reg, comm)
    return (plan, run["log"]) if log else plan


def _differentiable_sinkhorn2(lib, call):
    """empirical_sinkhorn2's loss in the arrays' own library (torch / JAX),
    differentiable in X_s, X_t, a and b (_points_gradients.py)."""
    return differentiable_sinkhorn2_potentials(lib, call)[0]


def differentiable_sinkhorn2_potentials(lib, call):
    """(_differentiable_sinkhorn2's loss, this rank's log potentials f and g without
    gradients) in the arrays' own library; `call`: empirical_sinkhorn2's arguments
    by name."""
    comm = MPI.COMM_SELF if call["comm"] is None else call["comm"]
    reg, metric, kwargs = float(call["reg"]), str(call["metric"]).lower(), call["kwargs"]

    def check():
        if metric not in METRICS:
            raise NotImplementedError(f"conveyor.ot.empirical_sinkhorn2: metric '{call['metric']}' is not "
                                      f"implemented (Conveyor computes {', '.join(METRICS)}); use POT for it")

    agree(comm, check)

    dense = {}  # whether the solve formed the cost matrix (its backward then forms the plan)

    def applier(X, Y, f, g):
        X, Y, f, g = (np.ascontiguousarray(x, dtype=np.float64) for x in (X, Y, f, g))
        return lambda V, transpose, power=0: _apply(X, Y, reg, f, g, V, metric, transpose, comm, kwargs, power)

    def solve(X, Y, a, b):
        run = _solve_points(X, Y, reg, a, b, metric, call["numIterMax"], call["stopThr"], call["verbose"],
                            call["warn"], call["warmstart"], comm, kwargs, "empirical_sinkhorn2",
                            call.get("isLazy", False))
        f, g = run["log_u"], run["log_v"]
        dense["used"] = run["dense"]
        if run["dense"] and comm.Get_size() == 1:  # (the engine's <P, C> is this rank's share)
            return float(run["cost"]), f, g
        return local_loss(applier(X, Y, f, g), X, Y, metric), f, g

    def vjp(X, Y, f, g, w):
        if dense["used"]:
            return dense_vjp(X, Y, f, g, reg, w, comm, metric)
        return points_vjp(applier(X, Y, f, g), X, Y, reg, w, comm, metric=metric)

    X, Y, a, b = lib.inputs(call["X_s"], call["X_t"], call["a"], call["b"], comm)
    value, f, g = lib.loss(X, Y, a, b, solve, vjp, comm)
    return lib.total(value, comm), f, g


def _differentiable_divergence(lib, call):
    """empirical_sinkhorn_divergence from three differentiable losses."""
    start = call["warmstart"]
    start_a, start_b = (None, None) if start is None else ((start[0], start[0]), (start[1], start[1]))

    def loss(X, Y, a, b, warmstart):
        return _differentiable_sinkhorn2(lib, dict(call, X_s=X, X_t=Y, a=a, b=b, warmstart=warmstart))

    X, Y, a, b = call["X_s"], call["X_t"], call["a"], call["b"]
    value = loss(X, Y, a, b, start) - 0.5 * (loss(X, X, a, a, start_a) + loss(Y, Y, b, b, start_b))
    return lib.clip(value)


def differentiable_with_potentials(X_s, X_t, reg, a=None, b=None, **kwargs):
    """On torch tensors or JAX arrays: (empirical_sinkhorn2's differentiable loss,
    (f, g) this rank's log potentials without gradients, POT's LazyTensor of the
    plan or None); None on other arrays. The arguments of empirical_sinkhorn2."""
    lib = points_autodiff(X_s, X_t, a, b)
    if lib is None:
        return None
    call = inspect.signature(empirical_sinkhorn2.__wrapped__).bind(X_s, X_t, reg, a, b, **kwargs)
    call.apply_defaults()
    value, f, g = differentiable_sinkhorn2_potentials(lib, call.arguments)
    try:  # (concrete values only: under jax.jit the potentials are tracers)
        run = {"X_s": np.asarray(X_s), "X_t": np.asarray(X_t), "log_u": np.asarray(f), "log_v": np.asarray(g)}
    except Exception:  # noqa: BLE001  (JAX's TracerArrayConversionError and its kin)
        return value, (f, g), None
    return value, (f, g), _lazy_plan(run, str(call.arguments["metric"]).lower(), float(reg), call.arguments["comm"])


@_on_numpy_copies(differentiable=_differentiable_sinkhorn2)
def empirical_sinkhorn2(X_s: npt.ArrayLike, X_t: npt.ArrayLike, reg: float, a: Optional[npt.ArrayLike] = None,
                        b: Optional[npt.ArrayLike] = None, metric: str = "sqeuclidean", numIterMax: int = 10000,
                        stopThr: float = 1e-9, isLazy: bool = False, batchSize: Union[int, Tuple[int, int]] = 100,
                        verbose: bool = False, log: bool = False, warn: bool = True,
                        warmstart: Optional[Sequence[npt.ArrayLike]] = None, comm: Optional[MPI.Comm] = None,
                        **kwargs: Any) -> ValueOrLogged:
    """The entropic OT loss <P, M> between two point clouds, as
    ``ot.bregman.empirical_sinkhorn2`` (the arguments of
    :func:`empirical_sinkhorn`); with ``comm``, the total over all ranks.
    On PyTorch tensors or JAX arrays (``log=False``) the loss is differentiable
    in the points and the weights (either metric; the n x m plan is formed in
    the backward only where the forward formed the cost matrix; with ``comm``,
    ``backward()`` is collective).

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> X = np.array([[0.0], [1.0]])
    >>> bool(conveyor.ot.empirical_sinkhorn2(X, X, reg=0.01) < 1e-6)
    True
    """
    run = _solve_points(X_s, X_t, reg, a, b, metric, numIterMax, stopThr, verbose, warn, warmstart, comm, kwargs,
                        "empirical_sinkhorn2", isLazy)
    loss = run["X_s"].dtype.type(run["cost"])
    if log and isLazy:
        run["log"]["lazy_plan"] = _lazy_plan(run, metric, reg, comm)
    return (loss, run["log"]) if log else loss


@_on_numpy_copies(differentiable=_differentiable_divergence)
def empirical_sinkhorn_divergence(X_s: npt.ArrayLike, X_t: npt.ArrayLike, reg: float, a: Optional[npt.ArrayLike] = None,
                                  b: Optional[npt.ArrayLike] = None, metric: str = "sqeuclidean",
                                  numIterMax: int = 10000, stopThr: float = 1e-9, verbose: bool = False,
                                  log: bool = False, warn: bool = True,
                                  warmstart: Optional[Sequence[npt.ArrayLike]] = None, comm: Optional[MPI.Comm] = None,
                                  **kwargs: Any) -> ValueOrLogged:
    """The debiased Sinkhorn divergence S = OT(a, b) - (OT(a, a) + OT(b, b)) / 2
    between two point clouds (each OT the loss <P, M> of
    :func:`empirical_sinkhorn2`), clipped at 0, as
    ``ot.bregman.empirical_sinkhorn_divergence``; the arguments of
    :func:`empirical_sinkhorn`. ``warmstart=(f, g)`` starts the symmetric
    problems from (f, f) and (g, g). With ``log``, also a dict of the three
    losses and logs (POT's keys).

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> X = np.array([[0.0], [1.0], [2.0]])
    >>> bool(conveyor.ot.empirical_sinkhorn_divergence(X, X, reg=0.1) < 1e-9)
    True
    """
    start_a, start_b = (None, None) if warmstart is None else ((warmstart[0], warmstart[0]),
                                                               (warmstart[1], warmstart[1]))
    common = dict(metric=metric, numIterMax=numIterMax, stopThr=stopThr, verbose=verbose, log=True, warn=warn,
                  comm=comm, **kwargs)
    loss_ab, log_ab = empirical_sinkhorn2(X_s, X_t, reg, a, b, warmstart=warmstart, **common)
    loss_a, log_a = empirical_sinkhorn2(X_s, X_s, reg, a, a, warmstart=start_a, **common)
    loss_b, log_b = empirical_sinkhorn2(X_t, X_t, reg, b, b, warmstart=start_b, **common)
    divergence = max(loss_ab.dtype.type(0), loss_ab - loss_ab.dtype.type(0.5) * (loss_a + loss_b))
    if not log:
        return divergence
    return divergence, {"sinkhorn_loss_ab": loss_ab, "sinkhorn_loss_a": loss_a, "sinkhorn_loss_b": loss_b,
                        "log_sinkhorn_ab": log_ab, "log_sinkhorn_a": log_a, "log_sinkhorn_b": log_b}


@_on_numpy_copies()
def empirical_plan_apply(X_s: npt.ArrayLike, X_t: npt.ArrayLike, reg: float, f: npt.ArrayLike, g: npt.ArrayLike,
                         V: npt.ArrayLike, metric: str = "sqeuclidean", transpose: bool = False,
                         comm: Optional[MPI.Comm] = None, **kwargs: Any) -> Any:
    """The plan of :func:`empirical_sinkhorn` applied to values without forming
    it: ``P @ V`` (V: a row per target point) or, with ``transpose``,
    ``P.T @ V`` (V: a row per source point), P_ij = exp(f_i + g_j - M_ij / reg)
    with (f, g) the potentials ``empirical_sinkhorn(..., isLazy=True)`` returned.
    Not in POT. With ``comm``: this rank's points, potentials and rows of V;
    returns this rank's rows of the product. ``threads=`` as for the solver.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> X = np.array([[0.0], [1.0]])
    >>> f, g = conveyor.ot.empirical_sinkhorn(X, X, 0.01, isLazy=True)
    >>> np.round(conveyor.ot.empirical_plan_apply(X, X, 0.01, f, g, np.ones((2, 1))).ravel(), 6)  # the row sums
    array([0.5, 0.5])
    """
    V = np.asarray(V)
    return _apply(X_s, X_t, reg, f, g, V if V.ndim == 2 else V[:, None], metric, transpose, comm, kwargs)


@_on_numpy_copies()
def empirical_barycentric_mapping(X_s: npt.ArrayLike, X_t: npt.ArrayLike, reg: float, f: npt.ArrayLike,
                                  g: npt.ArrayLike, metric: str = "sqeuclidean", comm: Optional[MPI.Comm] = None,
                                  **kwargs: Any) -> Any:
    """Each source point mapped to the barycenter of the target points it is
    sent to, ``(P @ X_t) / (P @ 1)`` (POT's ``ot.da`` barycentric mapping), the
    plan never formed; the arguments of :func:`empirical_plan_apply`. With
    ``comm``: this rank's source points mapped. Not in POT's ``ot.bregman``.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> X = np.array([[0.0], [1.0]])
    >>> f, g = conveyor.ot.empirical_sinkhorn(X, X + 5, 0.01, isLazy=True)
    >>> np.round(conveyor.ot.empirical_barycentric_mapping(X, X + 5, 0.01, f, g).ravel(), 6)
    array([5., 6.])
    """
    X_t = np.asarray(X_t)
    with_ones = np.concatenate([X_t, np.ones((X_t.shape[0], 1), dtype=X_t.dtype)], axis=1)
    product = _apply(X_s, X_t, reg, f, g, with_ones, metric, False, comm, kwargs)
    return product[:, :-1] / product[:, -1:]


def empirical_plan_rows(X_s: npt.ArrayLike, X_t: npt.ArrayLike, reg: float, f: npt.ArrayLike, g: npt.ArrayLike,
                        rows: Any = None, metric: str = "sqeuclidean", comm: Optional[MPI.Comm] = None) -> Any:
    """Rows of the plan of :func:`empirical_sinkhorn` on request: this rank's
    source points ``rows`` (a slice or index array; None: all of them) against
    every target point (in rank order with ``comm``), formed in row blocks of a
    few MB. Not in POT.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> X = np.array([[0.0], [1.0]])
    >>> f, g = conveyor.ot.empirical_sinkhorn(X, X, 0.01, isLazy=True)
    >>> np.round(conveyor.ot.empirical_plan_rows(X, X, 0.01, f, g, rows=slice(1, 2)), 6)
    array([[0. , 0.5]])
    """
    X = np.asarray(X_s)
    X = np.ascontiguousarray(X, dtype=np.float32 if X.dtype == np.float32 else np.float64)
    picked = np.arange(X.shape[0]) if rows is None else np.arange(X.shape[0])[rows]
    run = {"X_s": X[picked], "X_t": np.ascontiguousarray(X_t, dtype=X.dtype),
           "log_u": np.asarray(f, dtype=X.dtype)[picked], "log_v": np.asarray(g, dtype=X.dtype)}
    return _plan_rows(run, str(metric).lower(), reg, comm)


# ---------------------------------------------------------------------------
def _apply(X_s, X_t, reg, f, g, V, metric, transpose, comm, kwargs, power=0):
    X = np.asarray(X_s)
    dtype = np.float32 if X.dtype == np.float32 else np.float64
    return _conveyor.apply_plan_points(np.ascontiguousarray(X, dtype=dtype), np.ascontiguousarray(X_t, dtype=dtype),
                                       f, g, reg, np.ascontiguousarray(V, dtype=dtype),
                                       comm_address(MPI.COMM_SELF if comm is None else comm),
                                       dict(metric=str(metric).lower(), transpose=bool(transpose), cost_power=power,
                                            **{k: kwargs[k] for k in ("threads",) if k in kwargs}))


def _solve_points(X_s, X_t, reg, a, b, metric, numIterMax, stopThr, verbose, warn, warmstart, comm, kwargs, caller,
                  lazy=False):
    comm = MPI.COMM_SELF if comm is None else comm

    def prepare():  # local conversions and checks, agreed over the ranks before the engine runs
        name = str(metric).lower()
        if name not in METRICS:
            raise NotImplementedError(f"conveyor.ot.{caller}: metric '{metric}' is not implemented (Conveyor "
                                      f"computes {', '.join(METRICS)}); use POT for it")
        X = np.asarray(X_s)
        dtype = np.float32 if X.dtype == np.float32 else np.float64
        X = np.ascontiguousarray(X, dtype=dtype)
        Y = np.ascontiguousarray(X_t, dtype=dtype)
        weights = [None if w is None or np.size(w) == 0 else np.ascontiguousarray(w, dtype=dtype) for w in (a, b)]
        return name, X, Y, weights[0], weights[1], check_choice(kwargs.get("dense", "auto"))

    name, X, Y, a_, b_, choice = agree(comm, prepare, ("metrics, warm-start flags and dense choices",
                                                       (str(metric), warmstart is None, repr(kwargs.get("dense")))))
    options = dict(metric=name, tol=float(stopThr), max_iter=int(numIterMax), norm="l1", check_every=_CHECK_EVERY,
                   **{k: kwargs[k] for k in _ENGINE_KWARGS if k in kwargs})
    dense = use_dense(choice, lazy, kwargs, X, Y, comm)
    if dense:
        log_u, log_v, status, iterations, cost, history, first = solve_dense(X, Y, a_, b_, reg, name, options,
                                                                            warmstart, comm)
    else:
        if warmstart is not None:
            options["init_log_u"] = np.asarray(warmstart[0], dtype=np.float64)
            options["init_log_v"] = np.asarray(warmstart[1], dtype=np.float64)
        log_u, log_v, status, iterations, _, cost, history, *_ = _conveyor.sinkhorn_points(
            X, Y, a_, b_, reg, comm_address(comm), options)
        first = _CHECK_EVERY
    # POT's niter: the 0-based index of the last iteration run.
    niter = iterations if status == "numerical_failure" else max(iterations - 1, 0)
    err = [float(history[k - 1]) for k in range(first, iterations + 1, _CHECK_EVERY)]
    with np.errstate(over="ignore"):  # (as conveyor.ot.sinkhorn's: inf where reg is small)
        u, v = np.exp(log_u), np.exp(log_v)
    run = {"X_s": X, "X_t": Y, "log_u": log_u, "log_v": log_v, "cost": cost, "status": status, "dense": dense,
           "log": {"err": err, "niter": niter, "u": u, "v": v}}
    if verbose:
        for k, e in enumerate(err):  # (POT prints every 100th iteration's)
            if (k + 1) * _CHECK_EVERY % 100 == 0:
                print(f"Error in marginal at iteration {(k + 1) * _CHECK_EVERY} = {e}")
    warn_outcome(caller, status, iterations, warn, "iterate")
    return run


def warn_outcome(caller, status, iterations, warn, what):
    """POT's warnings: a numerical failure (always), no convergence (when warn)."""
    if status == "numerical_failure":
        warnings.warn(f"conveyor.ot.{caller}: numerical errors at iteration {iterations + 1}; the last finite "
                      f"{what} is returned", UserWarning, stacklevel=4)
    elif status == "max_iter" and warn:
        warnings.warn("Sinkhorn did not converge. You might want to increase the number of iterations "
                      "`numItermax` or the regularization parameter `reg`.", UserWarning, stacklevel=4)


def _ground(X, Y, metric):
    d2 = np.maximum(((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=2), 0)
    return np.sqrt(d2) if metric == "euclidean" else d2


def _all_targets(run, comm):
    """Every target point and its potential, in rank order."""
    Y, g = run["X_t"], run["log_v"]
    if comm is None or comm.Get_size() == 1:
        return Y, g
    parts = comm.allgather((Y, g))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _plan_rows(run, metric, reg, comm):
    """This rank's rows of the plan exp(f_i + g_j - C_ij / reg), in row blocks."""
    X, f = run["X_s"], run["log_u"]
    Y, g = _all_targets(run, comm)
    plan = np.empty((X.shape[0], Y.shape[0]), dtype=X.dtype)
    block = max(1, (1 << 22) // max(1, Y.shape[0] * X.shape[1]))
    for i in range(0, X.shape[0], block):
        C = _ground(X[i:i + block], Y, metric)
        plan[i:i + block] = np.exp(f[i:i + block, None] + g[None, :] - C / reg)
    return plan


def _lazy_plan(run, metric, reg, comm):
    """POT's LazyTensor of the plan (one rank, POT installed), else None."""
    if comm is not None and comm.Get_size() > 1:
        return None
    try:  # (POT >= 0.9.4; not exported by ot.bregman)
        from ot.bregman._empirical import get_sinkhorn_lazytensor  # type: ignore[import]
    except ImportError:
        return None
    return get_sinkhorn_lazytensor(run["X_s"], run["X_t"], run["log_u"], run["log_v"], metric, reg)
