# SPDX-License-Identifier: BSD-3-Clause
"""Entropic optimal transport with POT's interface: ``conveyor.ot.sinkhorn`` and
``conveyor.ot.sinkhorn2`` take the arguments of ``ot.sinkhorn`` / ``ot.sinkhorn2``
and return what they return, computed by Conveyor's Sinkhorn engine;
``empirical_sinkhorn``, ``empirical_sinkhorn2`` and
``empirical_sinkhorn_divergence`` those of POT's point-cloud solvers
(``ot.bregman``), computed without the cost matrix (``_points.py``), with
``empirical_plan_apply``, ``empirical_barycentric_mapping`` and
``empirical_plan_rows`` for what users do with that plan (not in POT);
``sinkhorn_unbalanced`` and ``sinkhorn_unbalanced2`` those of
``ot.unbalanced`` (``_unbalanced.py``); ``barycenter`` and
``free_support_sinkhorn_barycenter`` those of ``ot.bregman``'s barycenters
(``_barycenter.py``); ``solve`` and ``solve_sample`` POT 0.9's unified ``ot.solve`` and
``ot.solve_sample`` for entropic problems (``_solve.py``); ``SamplesLoss``
GeomLoss's Sinkhorn divergence between point clouds (``_samples_loss.py``).

The contract followed is POT's (0.9): the iteration starts with the column update
(v = b / K^T u, then u = a / K v; for ``method="sinkhorn_log"`` the same on log
potentials), the marginal error ``||colsum(P) - b||_2`` is tested every 10th
iteration (0, 10, 20, ...) against ``stopThr``, ``log`` holds ``err`` (the errors
tested), ``niter`` (the index of the last iteration), ``u``, ``v`` (and ``log_u``,
``log_v`` for ``sinkhorn_log``), and a ``UserWarning`` says when the solve did
not converge (``warn``) or stopped on a numerical failure. For the same problem
and the same number of iterations the plan is POT's to rounding (tested to
1e-10 relative in float64).

Beyond POT: ``comm`` (an mpi4py communicator) spreads the problem over its ranks
by rows: ``M`` and ``a`` are this rank's rows (any split; the balanced one is
``conveyor.balanced_rows``), ``b`` is whole on every rank, and the plan returned
is this rank's rows; ``sinkhorn2``'s loss is the total over all ranks. Without
``comm`` the whole problem runs in this process, on its OpenMP threads
(``threads=`` sets their number). ``allreduce_algorithm=`` chooses the column-sum
allreduce.

Inputs: NumPy arrays and anything ``numpy.asarray`` takes; float32 stays float32,
other dtypes become float64. Arrays of another library that POT has a backend
for (JAX, PyTorch, CuPy, TensorFlow) are accepted when POT is installed: the
engine computes on NumPy copies (a device array is copied to the host) and the
plan, losses and ``log`` vectors come back as that library's arrays, of ``M``'s
dtype and device, through POT's backend. ``sinkhorn2`` on JAX arrays or PyTorch
CPU tensors (one histogram, ``log=False``) is differentiable: ``jax.grad`` /
``jax.value_and_grad`` / ``jax.jit``, or ``loss.backward()``, give the gradient of
the converged loss with respect to ``M``, ``a`` and ``b`` by implicit
differentiation of the fixed point (``_gradients.py``; the weights' gradients
centred), with ``comm`` too (``backward()`` is then collective, as the solve is).
The other results of this module come back as values: no gradient flows through
them yet (``solve``, ``solve_sample`` and ``SamplesLoss`` aside).
"""
from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from .. import _conveyor
from .._backends import foreign_backend, is_foreign
from ._gradients import autodiff_ops, autodiff_sinkhorn2
from .._mpi import agree, comm_address
from .._typing import ArrayOrLogged
from ._points import (METRICS, empirical_barycentric_mapping, empirical_plan_apply, empirical_plan_rows,
                         empirical_sinkhorn, empirical_sinkhorn2, empirical_sinkhorn_divergence)
from ._barycenter import BARYCENTER_METHODS, barycenter, free_support_sinkhorn_barycenter
from ._unbalanced import UNBALANCED_METHODS, sinkhorn_unbalanced, sinkhorn_unbalanced2
from ._solve import OTResult, solve, solve_sample
from ._samples_loss import SamplesLoss
from ._batch import BatchResult, solve_batch, solve_sample_batch
from . import _batch as batch  # (POT's spelling: ot.batch.solve_batch)

__all__ = ["sinkhorn", "sinkhorn2", "IMPLEMENTED_METHODS", "empirical_sinkhorn", "empirical_sinkhorn2",
           "empirical_sinkhorn_divergence", "empirical_plan_apply", "empirical_barycentric_mapping",
           "empirical_plan_rows", "METRICS", "sinkhorn_unbalanced", "sinkhorn_unbalanced2",
           "UNBALANCED_METHODS", "barycenter", "free_support_sinkhorn_barycenter", "BARYCENTER_METHODS", "solve",
           "solve_sample", "OTResult", "SamplesLoss", "solve_batch", "solve_sample_batch", "BatchResult"]

#: The ``method`` values Conveyor runs (POT's names).
IMPLEMENTED_METHODS = ("sinkhorn", "sinkhorn_log")
# POT's other Sinkhorn methods: named in the NotImplementedError.
_POT_ONLY_METHODS = ("greenkhorn", "sinkhorn_stabilized", "sinkhorn_epsilon_scaling")
# Keyword arguments Conveyor understands beyond POT's; others are ignored, as
# POT's solvers ignore keyword arguments they do not use.
_ENGINE_KWARGS = ("threads", "allreduce_algorithm", "ranks_per_node")
_CHECK_EVERY = 10  # POT tests the error on every 10th iteration


def sinkhorn(a: npt.ArrayLike, b: npt.ArrayLike, M: npt.ArrayLike, reg: float, method: str = "sinkhorn",
             numItermax: int = 1000, stopThr: float = 1e-9, verbose: bool = False, log: bool = False, warn: bool = True,
             warmstart: Optional[Sequence[npt.ArrayLike]] = None, comm: Optional[MPI.Comm] = None,
             **kwargs: Any) -> ArrayOrLogged:
    """The entropic OT plan, as ``ot.sinkhorn``.

    Parameters
    ----------
    a : array_like, shape (dim_a,)
        Source histogram (this rank's rows with ``comm``); empty: uniform.
    b : array_like, shape (dim_b,) or (dim_b, n_hists)
        Target histogram(s); empty: uniform. With several, the losses are returned.
    M : array_like, shape (dim_a, dim_b)
        Cost matrix (this rank's rows with ``comm``).
    reg : float
        Entropic regularization (> 0).
    method : {"sinkhorn", "sinkhorn_log"}
        ``"sinkhorn_log"`` iterates on log potentials (stable for small ``reg``).
        POT's other methods raise NotImplementedError.
    numItermax : int
        Iterations at most.
    stopThr : float
        Stop when the L2 marginal error, tested every 10th iteration, is below it.
    verbose : bool
        Print the tested errors.
    log : bool
        Also return a dict: ``err``, ``niter``, ``u``, ``v`` (``log_u``, ``log_v``
        for ``sinkhorn_log``).
    warn : bool
        Warn when the solve does not converge.
    warmstart : tuple of arrays, optional
        ``(log u, log v)`` to start from (POT's convention; ``log v`` is not used,
        since the iteration starts with the update of v).
    comm : mpi4py.MPI.Comm, optional
        Spread the problem over these ranks by rows (collective).
    **kwargs
        ``threads``, ``allreduce_algorithm``, ``ranks_per_node``: Conveyor's engine
        options; anything else is ignored, as POT does.

    Returns
    -------
    gamma : ndarray, shape (dim_a, dim_b)
        The plan (this rank's rows with ``comm``); with a 2-D ``b``, the loss of
        each histogram instead.
    log : dict
        Only when ``log=True``.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> a = b = np.full(3, 1 / 3)
    >>> M = np.array([[0.0, 1.0, 4.0], [1.0, 0.0, 1.0], [4.0, 1.0, 0.0]])
    >>> P = conveyor.ot.sinkhorn(a, b, M, reg=1.0)
    >>> bool(np.allclose(P.sum(axis=0), b))
    True
    """
    return _solve(a, b, M, reg, method, numItermax, stopThr, verbose, log, warn, warmstart, comm, kwargs,
                  want_plan=True, caller="sinkhorn")


def sinkhorn2(a: npt.ArrayLike, b: npt.ArrayLike, M: npt.ArrayLike, reg: float, method: str = "sinkhorn",
              numItermax: int = 1000, stopThr: float = 1e-9, verbose: bool = False, log: bool = False,
              warn: bool = False, warmstart: Optional[Sequence[npt.ArrayLike]] = None, comm: Optional[MPI.Comm] = None,
              **kwargs: Any) -> Union[float, npt.NDArray[Any], Tuple[Union[float, npt.NDArray[Any]], Dict[str, Any]]]:
    """The entropic OT loss <P, M>, as ``ot.sinkhorn2`` (same arguments as
    :func:`sinkhorn`; ``warn`` defaults to False, as in POT).

    Returns
    -------
    W : float or ndarray, shape (n_hists,)
        The loss (over all ranks with ``comm``); one per histogram for a 2-D ``b``.
    log : dict
        Only when ``log=True``.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> a = b = np.full(2, 0.5)
    >>> M = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> W = conveyor.ot.sinkhorn2(a, b, M, reg=0.1)
    >>> bool(0 <= W < 1e-3)
    True
    """
    ops = autodiff_ops(a, b, M)
    if ops is not None and not log and np.ndim(b) <= 1:
        # JAX (a custom VJP) or PyTorch (an autograd Function): gradients by implicit
        # differentiation of the fixed point (_gradients.py).
        start = None if warmstart is None else tuple(np.asarray(w) for w in warmstart)

        def solve_plan(a_, b_, M_):
            plan, log_ = _solve_numpy(a_, b_, M_, reg, method, numItermax, stopThr, verbose, True, warn, start, comm,
                                      kwargs, True, "sinkhorn2")
            return plan, np.log(log_["u"]), np.log(log_["v"])

        return autodiff_sinkhorn2(ops, a, b, M, reg, solve_plan, comm)
    return _solve(a, b, M, reg, method, numItermax, stopThr, verbose, log, warn, warmstart, comm, kwargs,
                  want_plan=False, caller="sinkhorn2")


# ---------------------------------------------------------------------------
def _check_method(method):
    name = str(method).lower()
    if name in IMPLEMENTED_METHODS:
        return name
    if name in _POT_ONLY_METHODS:
        raise NotImplementedError(f"conveyor.ot: method '{method}' is not implemented (Conveyor implements "
                                  f"{', '.join(IMPLEMENTED_METHODS)}); use POT's ot.sinkhorn for it")
    raise ValueError(f"Unknown method '{method}'.")


def _as_float_array(x, dtype=None):
    x = np.asarray(x)
    if dtype is None:
        dtype = np.float32 if x.dtype == np.float32 else np.float64
    return np.ascontiguousarray(x, dtype=dtype)


def _solve(a, b, M, reg, method, numItermax, stopThr, verbose, log, warn, warmstart, comm, kwargs, want_plan, caller):
    nx = foreign_backend(a, b, M)
    if nx is None:
        return _solve_numpy(a, b, M, reg, method, numItermax, stopThr, verbose, log, warn, warmstart, comm, kwargs,
                            want_plan, caller)
    # Another library's arrays: solved on NumPy copies, results handed back as that library's arrays.
    def to_numpy(x):
        return nx.to_numpy(x) if is_foreign(x) else x

    start = None if warmstart is None else tuple(to_numpy(w) for w in warmstart)
    out = _solve_numpy(to_numpy(a), to_numpy(b), to_numpy(M), reg, method, numItermax, stopThr, verbose, log, warn,
                       start, comm, kwargs, want_plan, caller)

    def back(x):
        return nx.from_numpy(np.asarray(x), type_as=M)

    if not log:
        return back(out)
    result, log_dict = out
    return back(result), {k: back(v) if isinstance(v, np.ndarray) else v for k, v in log_dict.items()}


def _solve_numpy(a, b, M, reg, method, numItermax, stopThr, verbose, log, warn, warmstart, comm, kwargs, want_plan,
                 caller):
    comm = MPI.COMM_SELF if comm is None else comm

    def prepare():  # local conversions and checks, agreed over the ranks before the engine runs
        name = _check_method(method)
        M_ = _as_float_array(M)
        if M_.ndim != 2:
            raise ValueError(f"M must be 2-D, got shape {M_.shape}")
        return name, M_, _as_float_array(a, M_.dtype), _as_float_array(b, M_.dtype)

    method, M, a, b = agree(comm, prepare, ("methods and warm-start flags", (str(method), warmstart is None)))
    engine = {k: kwargs[k] for k in _ENGINE_KWARGS if k in kwargs}
    rows, cols = M.shape
    if comm.Get_size() > 1 and comm.allreduce(int(a.size == 0), op=MPI.MAX):
        total_rows = comm.allreduce(rows)
        if a.size == 0:
            a = np.full(rows, 1.0 / total_rows, dtype=M.dtype)
    elif a.size == 0:
        a = np.full(rows, 1.0 / rows, dtype=M.dtype)
    if b.size == 0:
        b = np.full(cols, 1.0 / cols, dtype=M.dtype)
    if b.ndim == 2:
        return _several_histograms(a, b, M, reg, method, numItermax, stopThr, verbose, log, warn, warmstart, comm,
                                   engine, caller)
    run = _run(a, b, M, reg, method, numItermax, stopThr, warmstart, comm, engine, want_plan)
    _report(run, verbose, warn, caller)
    result = run["plan"] if want_plan else run["cost"]
    return (result, run["log"]) if log else result


def _run(a, b, M, reg, method, numItermax, stopThr, warmstart, comm, engine, want_plan):
    """One histogram: the engine in POT's order and stopping rule."""
    log_domain = method == "sinkhorn_log"
    rows = M.shape[0]
    if warmstart is not None:
        start = np.asarray(warmstart[0], dtype=np.float64)
        init_u = start if log_domain else np.exp(start)
    elif log_domain:
        init_u = None  # zeros
    else:  # POT starts from u = 1/dim_a (the scale of u and v, not the plan, depends on it)
        total_rows = comm.allreduce(rows) if comm.Get_size() > 1 else rows
        init_u = np.full(rows, 1.0 / total_rows)
    options = dict(tol=float(stopThr), max_iter=int(numItermax), log_domain=log_domain, norm="l2",
                   check_every=_CHECK_EVERY, columns_first=True, init_u=init_u, **engine)
    log_u, log_v, status, iterations, _, cost, plan, history = _conveyor.sinkhorn_transport(
        M, a, b, reg, comm_address(comm), bool(want_plan), options)
    # POT's niter: the 0-based index of the last iteration run (the failing one
    # after a numerical failure, whose iterate is not kept).
    niter = iterations if status == "numerical_failure" else max(iterations - 1, 0)
    out = {"status": status, "niter": niter, "cost": cost, "plan": plan, "numItermax": numItermax,
           "stopThr": stopThr}
    log = {"err": [float(e) for e in history[:iterations:_CHECK_EVERY]], "niter": niter}
    if log_domain:
        log["log_u"], log["log_v"] = log_u, log_v
    with np.errstate(over="ignore"):  # (u, v overflow to inf where reg is small; log_u, log_v hold them)
        log["u"], log["v"] = np.exp(log_u), np.exp(log_v)
    out["log"] = log
    return out


def _user_stacklevel():
    """The stacklevel at which warnings.warn, called from a function of this
    module, names the first caller outside it (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1
    return level


def _report(run, verbose, warn, caller):
    if verbose:
        for k, err in enumerate(run["log"]["err"]):
            if k % 20 == 0:
                print(f"{'It.':>5s}|{'Err':>12s}\n" + "-" * 19)
            print(f"{k * _CHECK_EVERY:5d}|{err:12e}|")
    if run["status"] == "numerical_failure":
        warnings.warn(f"conveyor.ot.{caller}: numerical errors at iteration {run['niter']} (a scaling factor "
                      "became 0, Inf or NaN); the last finite iterate is returned", UserWarning,
                      stacklevel=_user_stacklevel())
    elif run["status"] == "max_iter" and warn:
        last = run["log"]["err"][-1] if run["log"]["err"] else float("nan")
        warnings.warn(f"conveyor.ot.{caller}: Sinkhorn did not converge in numItermax={run['numItermax']} "
                      f"iterations (marginal error {last:.3e}, stopThr={run['stopThr']:g}); raise numItermax "
                      "or reg", UserWarning, stacklevel=_user_stacklevel())


def _several_histograms(a, b, M, reg, method, numItermax, stopThr, verbose, log, warn, warmstart, comm, engine,
                        caller):
    """A 2-D b: one solve per column; the losses (POT returns them for either
    function). The log's err combines the histograms' errors at each test (each
    one's last error once it has stopped)."""
    n_hists = b.shape[1]
    runs = []
    for k in range(n_hists):
        start = None
        if warmstart is not None:
            start = (np.asarray(warmstart[0])[:, k], np.asarray(warmstart[1])[:, k])
        run = _run(a, np.ascontiguousarray(b[:, k]), M, reg, method, numItermax, stopThr, start, comm, engine,
                   want_plan=False)
        _report(run, verbose, warn, caller)
        runs.append(run)
    losses = np.array([r["cost"] for r in runs], dtype=M.dtype)
    if not log:
        return losses
    stacked = {key: np.stack([r["log"][key] for r in runs], axis=1)
               for key in ("u", "v", "log_u", "log_v") if key in runs[0]["log"]}
    if method == "sinkhorn_log":  # POT's log for several histograms in the log domain
        return losses, stacked
    tests = max(len(r["log"]["err"]) for r in runs)
    err = [float(np.sqrt(sum(r["log"]["err"][min(t, len(r["log"]["err"]) - 1)] ** 2 for r in runs if r["log"]["err"])))
           for t in range(tests)]
    return losses, dict(err=err, niter=max(r["niter"] for r in runs), **stacked)
