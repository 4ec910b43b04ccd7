# SPDX-License-Identifier: BSD-3-Clause
"""Unbalanced entropic OT with POT's interface (``ot.unbalanced.sinkhorn_unbalanced``
and ``sinkhorn_unbalanced2``, also ``ot.sinkhorn_unbalanced``), computed by
Conveyor's log-domain Sinkhorn engine with KL penalties on the marginals.

The contract followed is POT's (0.9) ``sinkhorn_knopp_unbalanced``: K = exp(-M /
reg) * c with c = a b^T (``reg_type="kl"``) or 1 (``"entropy"``), u = (a / K v) ^ fi1
then v = (b / K^T u) ^ fi2 from u = v = 1, fi = reg_m / (reg_m + reg); the error is
the relative change of (u, v) in an iteration, tested on every iteration against
``stopThr``; ``log`` holds ``err`` (every iteration's), ``logu``, ``logv``,
``cost`` (<P, M>) and ``total_cost``. Conveyor iterates on the potentials (log
domain), so ``"sinkhorn"`` and ``"sinkhorn_stabilized"`` are the same iteration
here, and neither overflows for small ``reg``. A reference ``c`` of one's own
enters as the cost M - reg log c with the entropy reference.

Beyond POT: ``comm`` spreads the rows over ranks as in ``conveyor.ot.sinkhorn``
(``M`` and ``a`` are this rank's rows, ``b`` is whole); the plan returned is this
rank's rows, the costs the totals.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from .. import _conveyor
from .._backends import foreign_backend, is_foreign
from .._mpi import agree, comm_address
from .._typing import ArrayOrLogged, ValueOrLogged
from ._gradients import autodiff_ops

__all__ = ["sinkhorn_unbalanced", "sinkhorn_unbalanced2", "UNBALANCED_METHODS"]

#: The ``method`` values Conveyor runs (POT's names; the same log-domain iteration).
UNBALANCED_METHODS = ("sinkhorn", "sinkhorn_stabilized", "sinkhorn_reg_scaling")


def sinkhorn_unbalanced(a: npt.ArrayLike, b: npt.ArrayLike, M: npt.ArrayLike, reg: float,
                        reg_m: Union[float, Sequence[float]], method: str = "sinkhorn", reg_type: str = "kl",
                        c: Optional[npt.ArrayLike] = None, warmstart: Optional[Sequence[npt.ArrayLike]] = None,
                        numItermax: int = 1000, stopThr: float = 1e-6, verbose: bool = False, log: bool = False,
                        comm: Optional[MPI.Comm] = None, **kwargs: Any) -> ArrayOrLogged:
    """The unbalanced entropic OT plan, as ``ot.unbalanced.sinkhorn_unbalanced``.

    Parameters
    ----------
    a : array_like, shape (dim_a,)
        Source histogram (this rank's rows with ``comm``); empty: uniform.
    b : array_like, shape (dim_b,) or (dim_b, n_hists)
        Target histogram(s); with several, the losses are returned.
    M : array_like, shape (dim_a, dim_b)
        Cost matrix (this rank's rows with ``comm``).
    reg : float
        Entropic regularization (> 0).
    reg_m : float or pair of floats
        KL penalties on the marginals (one for both, or (rows, columns));
        ``float("inf")`` keeps a marginal a constraint.
    method : {"sinkhorn", "sinkhorn_stabilized", "sinkhorn_reg_scaling"}
        POT's names, one log-domain iteration here; "sinkhorn_translation_invariant"
        raises NotImplementedError.
    reg_type : {"kl", "entropy"}
        The plan's entropic reference c: a b^T or 1.
    c : array_like, shape (dim_a, dim_b), optional
        A reference of one's own (this rank's rows).
    warmstart : tuple of arrays, optional
        ``(log u, log v)`` to start from.
    numItermax, stopThr, verbose, log
        As POT's.
    comm : mpi4py.MPI.Comm, optional
        Spread the rows over these ranks (collective).
    **kwargs
        ``threads``: OpenMP threads per rank; anything else is ignored, as POT does.

    Returns
    -------
    gamma : ndarray, shape (dim_a, dim_b)
        The plan (this rank's rows); with a 2-D ``b``, the loss of each histogram.
    log : dict
        Only when ``log=True``.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> M = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> P = conveyor.ot.sinkhorn_unbalanced(np.array([0.5, 0.5]), np.array([0.3, 0.3]), M, 0.1, 1.0)
    >>> bool(P.sum() < 1.0)
    True
    """
    return _solve(a, b, M, reg, reg_m, method, reg_type, c, warmstart, numItermax, stopThr, verbose, log, comm,
                  kwargs, "linear", want_plan=True)


def sinkhorn_unbalanced2(a: npt.ArrayLike, b: npt.ArrayLike, M: npt.ArrayLike, reg: float,
                         reg_m: Union[float, Sequence[float]], method: str = "sinkhorn", reg_type: str = "kl",
                         c: Optional[npt.ArrayLike] = None, warmstart: Optional[Sequence[npt.ArrayLike]] = None,
                         returnCost: str = "linear", numItermax: int = 1000, stopThr: float = 1e-6,
                         verbose: bool = False, log: bool = False, comm: Optional[MPI.Comm] = None,
                         **kwargs: Any) -> ValueOrLogged:
    """The unbalanced entropic OT loss, as ``ot.unbalanced.sinkhorn_unbalanced2``
    (the arguments of :func:`sinkhorn_unbalanced`): ``returnCost="linear"``
    gives <P, M>, ``"total"`` the whole objective (with the entropic and
    marginal KL terms); with ``comm``, the totals over all ranks.

    Examples
    --------
    >>> import numpy as np, conveyor.ot
    >>> M = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> W = conveyor.ot.sinkhorn_unbalanced2(np.array([0.5, 0.5]), np.array([0.5, 0.5]), M, 0.1, 1.0)
    >>> bool(0 < W < 0.1)
    True
    """
    if returnCost not in ("linear", "total"):
        raise ValueError("Unknown returnCost = {}".format(returnCost))
    return _solve(a, b, M, reg, reg_m, method, reg_type, c, warmstart, numItermax, stopThr, verbose, log, comm,
                  kwargs, returnCost, want_plan=False)


# ---------------------------------------------------------------------------
def _pair(reg_m):
    """(rows, columns) from a number, a one- or two-element sequence or array (POT's forms)."""
    values = np.asarray(reg_m, dtype=np.float64).ravel()
    if values.size == 1:
        return float(values[0]), float(values[0])
    if values.size != 2:
        raise ValueError(f"reg_m must be one number or two, got {values.size}")
    return float(values[0]), float(values[1])


def _solve(a, b, M, reg, reg_m, method, reg_type, c, warmstart, numItermax, stopThr, verbose, log, comm, kwargs,
           return_cost, want_plan):
    ops = autodiff_ops(a, b, M)
    if ops is not None and not log and np.ndim(b) <= 1:
        def solve_plan(a_, b_, M_):
            plan, log_ = _solve(a_, b_, M_, reg, reg_m, method, reg_type, _numpy(c), _numpy(warmstart), numItermax,
                                stopThr, verbose, True, comm, kwargs, "linear", True)
            return plan, log_["logu"], log_["logv"]

        P, _, _, linear, total = autodiff_unbalanced(ops, a, b, M, reg, reg_m, reg_type, c, solve_plan, comm)
        return P if want_plan else linear if return_cost == "linear" else total
    nx = foreign_backend(a, b, M, c)
    if nx is not None:
        def to_numpy(x):
            return nx.to_numpy(x) if is_foreign(x) else x

        start = None if warmstart is None else tuple(to_numpy(w) for w in warmstart)
        out = _solve(to_numpy(a), to_numpy(b), to_numpy(M), reg, reg_m, method, reg_type, to_numpy(c), start,
                     numItermax, stopThr, verbose, log, comm, kwargs, return_cost, want_plan)

        def back(x):
            return nx.from_numpy(np.asarray(x), type_as=M) if isinstance(x, (np.ndarray, np.generic, float)) else x

        if not log:
            return back(out)
        return back(out[0]), {k: back(v) for k, v in out[1].items()}
    comm = MPI.COMM_SELF if comm is None else comm

    def prepare():
        name = str(method).lower()
        if name == "sinkhorn_translation_invariant":
            raise NotImplementedError("conveyor.ot: method 'sinkhorn_translation_invariant' is not implemented "
                                      f"(Conveyor implements {', '.join(UNBALANCED_METHODS)}); use POT's for it")
        if name not in UNBALANCED_METHODS:
            raise ValueError("Unknown method %s." % method)
        kind = str(reg_type).lower()
        if kind not in ("kl", "entropy"):
            raise ValueError(f"Unknown reg_type = {reg_type}")
        M_ = np.asarray(M)
        dtype = np.float32 if M_.dtype == np.float32 else np.float64
        M_ = np.ascontiguousarray(M_, dtype=dtype)
        if M_.ndim != 2:
            raise ValueError(f"M must be 2-D, got shape {M_.shape}")
        a_ = np.ascontiguousarray(a, dtype=dtype)
        b_ = np.ascontiguousarray(b, dtype=dtype)
        c_ = None if c is None else np.ascontiguousarray(c, dtype=np.float64)
        return kind, M_, a_, b_, c_, _pair(reg_m)

    kind, M, a, b, c, (reg_m_rows, reg_m_cols) = agree(comm, prepare, ("methods, reg_types and warm-start flags",
                                                                         (str(method), str(reg_type),
                                                                          warmstart is None, c is None)))
    rows, cols = M.shape
    if a.size == 0:
        total = comm.allreduce(rows) if comm.Get_size() > 1 else rows
        a = np.full(rows, 1.0 / total, dtype=M.dtype)
    if b.size == 0:
        b = np.full(cols, 1.0 / cols, dtype=M.dtype)
    if b.ndim == 2:  # POT: one loss per histogram, K without a b^T
        runs = [_run(a, np.ascontiguousarray(b[:, k]), M, reg, reg_m_rows, reg_m_cols, "entropy", None, None,
                     numItermax, stopThr, comm, kwargs) for k in range(b.shape[1])]
        losses = np.array([r["cost"] for r in runs], dtype=M.dtype)
        if not log:
            return losses
        return losses, {"err": [r["log"]["err"] for r in runs],
                        "logu": np.stack([r["log"]["logu"] for r in runs], axis=1),
                        "logv": np.stack([r["log"]["logv"] for r in runs], axis=1)}
    run = _run(a, b, M, reg, reg_m_rows, reg_m_cols, kind, c, warmstart, numItermax, stopThr, comm, kwargs)
    if verbose:
        for i, e in enumerate(run["log"]["err"]):
            if i % 50 == 0:
                print("{:5s}|{:12s}".format("It.", "Err") + "\n" + "-" * 19)
            print("{:5d}|{:8e}|".format(i, e))
    if want_plan:
        return (run["plan"], run["log"]) if log else run["plan"]
    cost = run["log"]["cost"] if return_cost == "linear" else run["log"]["total_cost"]
    return (cost, run["log"]) if log else cost


def _numpy(x):
    """A tensor's or JAX array's values as NumPy's (held constant); tuples element-wise."""
    if x is None:
        return None
    if isinstance(x, tuple):
        return tuple(_numpy(y) for y in x)
    return np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)


def autodiff_unbalanced(ops, a, b, M, reg, reg_m, reg_type, c, solve_plan, comm):
    """The unbalanced plan in the arrays' own library (`ops`: _gradients'
    JAX or PyTorch ops), differentiable in a, b and M by implicit
    differentiation of its fixed point (plan_vjp with the marginal penalties; a
    reference `c` held constant), and the values computed from it there, so
    that they are differentiable too: returns (P, log u, log v, <P, M>, total
    cost), the costs summed over `comm`, as _run's."""
    xp, sg = ops.math(), ops.stop
    rho_rows, rho_cols = _pair(reg_m)
    kind = str(reg_type).lower()
    a, b, M = ops.inputs(a, b, M, comm)
    penalties = (rho_rows, rho_cols, "entropy" if c is not None else kind)
    P, log_u, log_v = ops.plan(a, b, M, reg, solve_plan, comm, penalties=penalties)

    def kl(p, q):  # POT 0.9.5's kl_div, 0 where p is (as _kl_div)
        safe = xp.where(q > 0, q, xp.ones_like(q))
        return xp.sum(xp.where(p > 0, p * xp.log(p / safe + 1e-16), xp.zeros_like(p)))

    if c is not None:
        reference = xp.asarray(_numpy(c), dtype=M.dtype)
    else:
        # (b is whole on every rank and each rank's rows use it: its gradient summed over the ranks)
        reference = a[:, None] * ops.shared(b, comm)[None, :] if kind == "kl" else xp.ones_like(M)
    linear = xp.sum(P * M)
    local = linear + reg * kl(P, reference)
    if rho_rows != float("inf"):
        local = local + rho_rows * kl(xp.sum(P, 1), a)
    if rho_cols != float("inf"):
        # The columns' term is one for all ranks: counted once, differentiated by each in its rows.
        term = rho_cols * kl(ops.vector_total(xp.sum(P, 0), comm), b)
        first = comm is None or comm.Get_rank() == 0
        local = local + (term if first else term - sg(term))
    return P, log_u, log_v, ops.total(linear, comm), ops.total(local, comm)


def _kl_div(p, q):
    """The KL term of POT's total_cost: its backend's kl_div(p, q) without the
    mass term, sum p log(p / q + 1e-16) (POT 0.9.5's definition, kept so the
    totals agree)."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / q + 1e-16), 0.0)
    return float(np.sum(terms))


def _run(a, b, M, reg, reg_m_rows, reg_m_cols, kind, c, warmstart, numItermax, stopThr, comm, kwargs):
    """One histogram: the engine with POT's start, order and stopping rule."""
    cost_matrix, reference = M, kind
    if c is not None:  # K = exp(-M / reg) c = exp(-(M - reg log c) / reg)
        with np.errstate(divide="ignore"):
            cost_matrix = np.ascontiguousarray(M - reg * np.log(c), dtype=M.dtype)
        reference = "entropy"
    kl = reference == "kl"
    with np.errstate(divide="ignore"):
        log_a, log_b = np.log(a.astype(np.float64)), np.log(b.astype(np.float64))
    # POT's scalings u, v (K holding a b^T for kl) as the engine's, of K = exp(-M / reg):
    # log u + log a for kl, log u for entropy.
    log_u0 = np.zeros(M.shape[0]) if warmstart is None else np.asarray(warmstart[0], dtype=np.float64)
    log_v0 = np.zeros(M.shape[1]) if warmstart is None else np.asarray(warmstart[1], dtype=np.float64)
    engine_u0 = log_u0 + (log_a if kl else 0.0)
    engine_v0 = log_v0 + (log_b if kl else 0.0)
    engine_u0[~np.isfinite(engine_u0)] = 0.0  # empty rows and columns: left out by the engine
    engine_v0[~np.isfinite(engine_v0)] = 0.0
    options = dict(tol=float(stopThr), max_iter=int(numItermax), log_domain=True, reg_m_rows=reg_m_rows,
                   reg_m_cols=reg_m_cols, reg_type=reference, stop="change", init_u=engine_u0, init_v=engine_v0,
                   **{k: kwargs[k] for k in ("threads",) if k in kwargs})
    engine_u, engine_v, status, iterations, _, _, plan, history = _conveyor.sinkhorn_transport(
        cost_matrix, a, b, reg, comm_address(comm), True, options)
    with np.errstate(divide="ignore", invalid="ignore"):
        logu = engine_u.astype(np.float64) - (log_a if kl else 0.0)
        logv = engine_v.astype(np.float64) - (log_b if kl else 0.0)
    linear = float(np.sum(plan.astype(np.float64) * M))
    row_sums = plan.sum(axis=1)
    column_sums = plan.sum(axis=0)
    c_ref = c if c is not None else (np.outer(a, b) if kind == "kl" else np.ones_like(M, dtype=np.float64))
    plan_term = _kl_div(plan, c_ref)
    if comm.Get_size() > 1:
        linear, plan_term = comm.allreduce(linear), comm.allreduce(plan_term)
        column_sums = comm.allreduce(column_sums)
    total = linear + reg * plan_term
    if reg_m_rows != float("inf"):
        total += reg_m_rows * (comm.allreduce(_kl_div(row_sums, a)) if comm.Get_size() > 1 else _kl_div(row_sums, a))
    if reg_m_cols != float("inf"):
        total += reg_m_cols * _kl_div(column_sums, b)
    log = {"err": [float(e) for e in history[:iterations]], "logu": logu, "logv": logv,
           "cost": M.dtype.type(linear), "total_cost": M.dtype.type(total), "status": status}
    return {"plan": plan, "cost": M.dtype.type(linear), "log": log}
