# SPDX-License-Identifier: BSD-3-Clause
"""Entropic Wasserstein barycenters with POT's interface:

- ``barycenter`` (``ot.bregman.barycenter``): the histogram on a fixed support
  nearest, in weighted entropic OT, to the columns of ``A``; computed by
  Conveyor's barycenter engine (``conveyor.sinkhorn_barycenter``: iterative
  Bregman projections, POT's start, POT's error ``sum_j std_k`` of the plans'
  column sums tested at iterations 1, 11, 21, ... (0-based) against
  ``stopThr``; ``method="sinkhorn_log"`` iterates on log scalings). With
  ``comm`` the cost ``M`` is this rank's rows (any split), ``A`` is whole on
  every rank and every rank returns the whole barycenter.
- ``free_support_sinkhorn_barycenter``
  (``ot.bregman.free_support_sinkhorn_barycenter``): the support's points move
  to the weighted mean of their barycentric maps onto each measure, POT's
  fixed point, with each transport solved by the point-cloud engine (the
  squared Euclidean cost recomputed, never stored) and the map applied without
  forming the plan. With ``comm`` each rank passes its share of every
  measure's points and of ``X_init`` (and ``b``), and gets its share of the
  support back. Deviation from POT: POT solves each transport with its dense
  ``sinkhorn`` (column update first, L2 column error); here the point-cloud
  iteration runs (row update first, L1 row error), both to ``1e-9`` (``1e-6``
  for float32 points here), so the supports agree to the solvers' tolerance,
  not to rounding.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from .. import _conveyor
from .._backends import foreign_backend, on_numpy
from .._mpi import agree, comm_address
from .._typing import ValueOrLogged
from ._barycenter_gradients import jax_barycenter, torch_barycenter
from ._gradients import is_jax, is_torch
from ._points import _apply, _solve_points, warn_outcome

__all__ = ["barycenter", "free_support_sinkhorn_barycenter", "BARYCENTER_METHODS"]

#: The ``method`` values of ``barycenter`` Conveyor runs (POT's names).
BARYCENTER_METHODS = ("sinkhorn", "sinkhorn_log")
_POT_ONLY_METHODS = ("sinkhorn_stabilized",)
_ENGINE_KWARGS = ("threads", "allreduce_algorithm", "ranks_per_node")
_CHECK_EVERY = 10  # POT tests the error on iterations 1, 11, 21, ... (0-based)


def barycenter(A: npt.ArrayLike, M: npt.ArrayLike, reg: float, weights: Optional[npt.ArrayLike] = None,
               method: str = "sinkhorn", numItermax: int = 10000, stopThr: float = 1e-4, verbose: bool = False,
               log: bool = False, warn: bool = True, comm: Optional[MPI.Comm] = None, **kwargs: Any) -> ValueOrLogged:
    """The entropic Wasserstein barycenter of the histograms in the columns of
    ``A``, as ``ot.bregman.barycenter``.

    Parameters
    ----------
    A : array_like, shape (dim, n_hists)
        The histograms, one per column, each of the same mass (whole on every rank).
    M : array_like, shape (dim, dim)
        The cost (with ``comm``: this rank's rows, shape (rows, dim)).
    reg : float
        Entropic regularization (> 0).
    weights : array_like, shape (n_hists,), optional
        The histograms' weights (default uniform).
    method : {"sinkhorn", "sinkhorn_log"}
        ``"sinkhorn_log"`` iterates on log scalings (any ``reg``).
    numItermax : int
        Iterations at most.
    stopThr : float
        Stop when ``sum_j std_k`` of the plans' column sums, tested every 10th
        iteration, is below it.
    verbose, log, warn : bool
        Print the tested errors; also return a dict (``err``, ``niter``); warn
        when the solve does not converge.
    comm : mpi4py.MPI.Comm, optional
        Spread the cost's rows over these ranks (collective).
    **kwargs
        ``threads``, ``allreduce_algorithm``, ``ranks_per_node``: Conveyor's engine
        options; anything else is ignored, as POT does.

    Returns
    -------
    a : ndarray, shape (dim,)
        The barycenter (the same on every rank).
    log : dict
        Only when ``log=True``.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> x = np.linspace(0, 1, 5); M = (x[:, None] - x[None, :]) ** 2
    >>> A = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 0.0], [0.0, 0.5], [0.0, 0.5]])
    >>> q = conveyor.ot.barycenter(A, M, reg=0.05)
    >>> bool(abs(q.sum() - 1) < 1e-8), int(np.argmax(q))
    (True, 2)
    """
    args = (method, numItermax, stopThr, verbose, warn, comm, kwargs)
    if is_torch(A, M, weights) or is_jax(A, M, weights):
        # Differentiable (an autograd Function, a custom VJP): implicit
        # differentiation of the fixed point (_barycenter_gradients.py).
        return _differentiable(A, M, reg, weights, log, args)
    nx = foreign_backend(A, M, weights)
    if nx is not None:
        return on_numpy(nx, M, _barycenter, A, M, reg, weights, log, args)
    return _barycenter(A, M, reg, weights, log, args)


def _differentiable(A, M, reg, weights, log, args):
    torch = is_torch(A, M, weights)
    uniform = weights is None  # (the engine's own uniform weights, exact in float32 too)
    if torch:
        import torch as xp
        M = xp.as_tensor(M)
        dtype = M.dtype if M.dtype in (xp.float32, xp.float64) else xp.float64
        M, A = M.to(dtype), xp.as_tensor(A).to(dtype)
        weights = xp.full((A.shape[1],), 1.0 / A.shape[1], dtype=dtype) if weights is None \
            else xp.as_tensor(weights).to(dtype)
    else:
        import jax.numpy as xp
        M = xp.asarray(M)
        dtype = M.dtype if M.dtype in (xp.float32, xp.float64) else xp.result_type(float)
        M, A = M.astype(dtype), xp.asarray(A, dtype)
        weights = xp.full(A.shape[1], 1.0 / A.shape[1], dtype) if weights is None else xp.asarray(weights, dtype)
    logs = {}

    def solve(A_, M_, w_):
        q, log_v, logs["log"] = _run(A_, M_, reg, None if uniform else w_, *args)
        return q, log_v

    q = (torch_barycenter if torch else jax_barycenter)(A, M, weights, reg, solve, args[5])
    if log and "log" not in logs:  # (traced under jax.jit: the solve runs later, when the compiled call does)
        raise NotImplementedError("conveyor.ot.barycenter: log=True under jax.jit is not supported (the log's "
                                  "lengths are known only once the solve has run); call it without jit, or "
                                  "with log=False")
    return (q, logs["log"]) if log else q


def _barycenter(A, M, reg, weights, log, args):
    q, _, log_ = _run(A, M, reg, weights, *args)
    return (q, log_) if log else q


def _run(A, M, reg, weights, method, numItermax, stopThr, verbose, warn, comm, kwargs):
    """The engine's barycenter on NumPy arrays: (q, log_v, POT's log dict)."""
    comm = MPI.COMM_SELF if comm is None else comm

    def prepare():  # local conversions and checks, agreed over the ranks before the engine runs
        name = str(method).lower()
        if name in _POT_ONLY_METHODS:
            raise NotImplementedError(f"conveyor.ot.barycenter: method '{method}' is not implemented (Conveyor runs "
                                      f"{', '.join(BARYCENTER_METHODS)}); use POT for it")
        if name not in BARYCENTER_METHODS:
            raise ValueError(f"Unknown method '{method}'.")
        M_ = np.asarray(M)
        dtype = np.float32 if M_.dtype == np.float32 else np.float64
        M_ = np.ascontiguousarray(M_, dtype=dtype)
        A_ = np.ascontiguousarray(A, dtype=dtype)
        if A_.ndim != 2:
            raise ValueError(f"A must be 2-D (dim, n_hists), got shape {A_.shape}")
        w = None if weights is None else np.ascontiguousarray(weights, dtype=dtype)
        return name, M_, A_, w

    name, M_, A_, w = agree(comm, prepare, ("methods and weights-given flags", (str(method), weights is None)))
    options = dict(tol=float(stopThr), max_iter=int(numItermax), check_every=_CHECK_EVERY, first_check=2,
                   log_domain=name == "sinkhorn_log", **{k: kwargs[k] for k in _ENGINE_KWARGS if k in kwargs})
    q, status, iterations, _, history, log_v = _conveyor.sinkhorn_barycenter(M_, A_, w, reg, comm_address(comm),
                                                                             options)
    # POT's niter: the 0-based index of the last iteration run.
    niter = iterations if status == "numerical_failure" else max(iterations - 1, 0)
    err = [float(e) for e in history[1:iterations:_CHECK_EVERY]]
    if verbose:
        for k, e in enumerate(err):
            if k % 20 == 0:
                print(f"{'It.':>5s}|{'Err':>12s}\n" + "-" * 19)
            print(f"{1 + k * _CHECK_EVERY:5d}|{e:12e}|")
    warn_outcome("barycenter", status, iterations, warn, "barycenter")
    return q, log_v, {"err": err, "niter": niter}


def free_support_sinkhorn_barycenter(measures_locations: Sequence[npt.ArrayLike],
                                     measures_weights: Sequence[npt.ArrayLike], X_init: npt.ArrayLike, reg: float,
                                     b: Optional[npt.ArrayLike] = None, weights: Optional[npt.ArrayLike] = None,
                                     numItermax: int = 100, numInnerItermax: int = 1000, stopThr: float = 1e-7,
                                     verbose: bool = False, log: Optional[bool] = None, comm: Optional[MPI.Comm] = None,
                                     **kwargs: Any) -> ValueOrLogged:
    """The support (its points moved, its weights ``b`` kept) of the entropic
    Wasserstein barycenter of point clouds, as
    ``ot.bregman.free_support_sinkhorn_barycenter``.

    Parameters
    ----------
    measures_locations : list of array_like, each shape (k_i, d)
        The measures' points (with ``comm``: this rank's share of each).
    measures_weights : list of array_like, each shape (k_i,)
        Their weights (this rank's share), each measure of mass 1.
    X_init : array_like, shape (k, d)
        The support's first points (this rank's share).
    reg : float
        Entropic regularization (> 0) of every transport.
    b : array_like, shape (k,), optional
        The support's weights (this rank's share; default uniform over all points).
    weights : array_like, shape (N,), optional
        The measures' weights (default uniform).
    numItermax, numInnerItermax : int
        Fixed-point steps at most; iterations of each transport at most.
    stopThr : float
        Stop when the squared displacement of the support (summed over all
        ranks) is at most this.
    verbose, log : bool
        Print the displacements; also return a dict (``displacement_square_norms``).
    comm : mpi4py.MPI.Comm, optional
        Spread the points over these ranks (collective).
    **kwargs
        ``threads``: OpenMP threads per rank; anything else is ignored.

    Returns
    -------
    X : ndarray, shape (k, d)
        The support (this rank's share).
    log : dict
        Only when ``log`` is true.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> left = np.array([[0.0, 0.0], [0.0, 1.0]]); right = np.array([[2.0, 0.0], [2.0, 1.0]])
    >>> w = np.full(2, 0.5)
    >>> X = conveyor.ot.free_support_sinkhorn_barycenter([left, right], [w, w], np.zeros((2, 2)), reg=0.01)
    >>> bool(np.allclose(X[:, 0], 1.0))
    True
    """
    nx = foreign_backend(X_init, b, weights, *measures_locations, *measures_weights)
    args = (measures_locations, measures_weights, X_init, reg, b, weights, numItermax, numInnerItermax, stopThr,
            verbose, log, comm, kwargs)
    return on_numpy(nx, X_init, _free_support, *args) if nx is not None else _free_support(*args)


def _free_support(measures_locations, measures_weights, X_init, reg, b, weights, numItermax, numInnerItermax,
                  stopThr, verbose, log, comm, kwargs):
    comm = MPI.COMM_SELF if comm is None else comm
    X = np.asarray(X_init)
    dtype = np.float32 if X.dtype == np.float32 else np.float64
    X = np.ascontiguousarray(X, dtype=dtype)
    if b is None:
        b = np.full(X.shape[0], 1.0 / comm.allreduce(X.shape[0]), dtype=dtype)
    b = np.asarray(b, dtype=dtype)
    count = len(measures_locations)
    weights = np.full(count, 1.0 / max(count, 1)) if weights is None else np.asarray(weights, dtype=np.float64)
    inner_tol = 1e-6 if dtype == np.float32 else 1e-9  # (POT's sinkhorn default; float32 cannot reach it)
    displacements = []
    displacement = stopThr + 1.0
    steps = 0
    while displacement > stopThr and steps < numItermax:
        moved = np.zeros(X.shape, dtype=np.float64)
        for points, point_weights, weight in zip(measures_locations, measures_weights, weights):
            points = np.ascontiguousarray(points, dtype=dtype)
            run = _solve_points(X, points, reg, b, point_weights, "sqeuclidean", numInnerItermax, inner_tol, False, True,
                                None, comm, kwargs, "free_support_sinkhorn_barycenter")
            mapped = _apply(X, points, reg, run["log_u"], run["log_v"], points, "sqeuclidean", False, comm, kwargs)
            moved += weight * mapped / b[:, None]
        displacement = float(comm.allreduce(float(np.sum((moved - X) ** 2))))
        displacements.append(displacement)
        X = moved.astype(dtype)
        if verbose:
            print(f"iteration {steps}, displacement_square_norm={displacement:f}")
        steps += 1
    return (X, {"displacement_square_norms": displacements}) if log else X
