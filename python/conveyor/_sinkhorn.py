# SPDX-License-Identifier: BSD-3-Clause
"""Sinkhorn and entropic optimal transport from Python, the rows of the matrix
spread over the ranks: matrix scaling, transport, point clouds, barycenters
(conveyor/sinkhorn*.hpp; POT's API over them is conveyor.ot)."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional, Tuple, cast

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from . import _conveyor
from ._mpi import comm_address, comm_or_world



class ScalingResult(NamedTuple):
    """What sinkhorn_scale returns: this rank's row scalings u, the column scalings v."""
    u: npt.NDArray[np.floating[Any]]
    v: npt.NDArray[np.floating[Any]]
    status: str
    iterations: int
    error: float


class TransportResult(NamedTuple):
    """What sinkhorn_transport returns: the log-scalings, the cost and this rank's rows of the plan."""
    log_u: npt.NDArray[np.floating[Any]]
    log_v: npt.NDArray[np.floating[Any]]
    status: str
    iterations: int
    error: float
    cost: float
    plan: Optional[npt.NDArray[np.floating[Any]]]
    history: npt.NDArray[np.float64]


class PointsResult(NamedTuple):
    """What sinkhorn_points returns: this rank's log-scalings of its points, the cost."""
    log_u: npt.NDArray[np.floating[Any]]
    log_v: npt.NDArray[np.floating[Any]]
    status: str
    iterations: int
    error: float
    cost: float
    history: npt.NDArray[np.float64]
    annealing_steps: int
    #: How X's and Y's points reached the other ranks ("auto"'s choice, or the exchange asked for).
    exchange_x: str
    exchange_y: str


class BarycenterResult(NamedTuple):
    """What sinkhorn_barycenter returns: the barycenter and log_v (n_hists, dim), the same on every rank."""
    barycenter: npt.NDArray[np.floating[Any]]
    status: str
    iterations: int
    error: float
    history: npt.NDArray[np.float64]
    log_v: npt.NDArray[np.float64]


def balanced_rows(M: int, comm: Optional[MPI.Comm] = None) -> Tuple[int, int]:
    """The rows of an M-row matrix this rank holds in the balanced block partition.

    The first M % P ranks get one row more; the solvers, conveyor.ot and
    Layout.cartesian with grid (P, 1) use this partition.

    Returns
    -------
    (int, int)
        (first row, number of rows).

    Examples
    --------
    >>> import conveyor
    >>> from mpi4py import MPI
    >>> conveyor.balanced_rows(10, MPI.COMM_SELF)
    (0, 10)
    """
    on = comm_or_world(comm)
    first, count = _conveyor.balanced_rows(M, on.Get_rank(), on.Get_size())
    return first, count


_SOLVER_OPTIONS_DOC = """
    Options shared by the solvers (None: the engine's default): variant, one of

{variants}

    overlap: scale columns as their sums arrive (in-place variants); mc, nc, mr, nr: the
    blocking of "blocked"; init_u, init_v: warm start (this rank's rows, all
    columns; log_domain: their logs, a TransportResult's log_u, log_v); allreduce_algorithm, ranks_per_node:
    for the column-sum allreduce; norm: of the column-marginal error, "l1" or
    "l2" (POT's); check_every: test convergence on iterations 1, 1 + check_every,
    ... (POT: 10); columns_first: begin with a column update from init_u (POT's
    order; init_v is ignored). Transport only: reg_m_rows, reg_m_cols: unbalanced
    OT, KL penalties on the marginals (inf: a constraint; the log-domain
    iteration runs); reg_type: the plan's entropic reference, "kl" (a b^T) or
    "entropy"; stop: what the convergence test measures, "marginal" or "change"
    (POT's unbalanced rule, the relative change of the scalings)."""


def sinkhorn_scale(A: npt.ArrayLike, r: npt.ArrayLike, c: npt.ArrayLike, comm: Optional[MPI.Comm] = None,
                   in_place: bool = False, variant: str = "fused", tol: float = 1e-9, max_iter: int = 1000,
                   threads: int = 0, overlap: Optional[bool] = None, mc: Optional[int] = None, nc: Optional[int] = None,
                   mr: Optional[int] = None, nr: Optional[int] = None, init_u: Optional[npt.ArrayLike] = None,
                   init_v: Optional[npt.ArrayLike] = None, allreduce_algorithm: str = "auto",
                   ranks_per_node: Optional[int] = None, norm: str = "l1", check_every: int = 1,
                   columns_first: bool = False) -> ScalingResult:
    """Matrix scaling: u, v with diag(u) A diag(v) having row sums r and column sums c.

    Parameters
    ----------
    A : array_like, shape (rows, N)
        This rank's rows (float32/float64; C-contiguous and writable when in_place).
    r : array_like, shape (rows,)
        Their row marginals.
    c : array_like, shape (N,)
        All column marginals (converted to A's dtype).
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective; a bad argument on any rank raises on every rank.
    in_place : bool
        Also rescale A (any variant).
    tol, max_iter, threads : float, int, int
        Stop when the column-marginal error <= tol; iterations at most; OpenMP
        threads per rank (0: automatic).

    Returns
    -------
    ScalingResult
        u (this rank's rows), v, status ("converged", "max_iter",
        "numerical_failure"), iterations, error.

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> res = conveyor.sinkhorn_scale(A, np.ones(2), np.ones(2), MPI.COMM_SELF)
    >>> res.status, bool(np.allclose((res.u[:, None] * A * res.v).sum(axis=0), 1))
    ('converged', True)
    """
    options = dict(variant=variant, tol=tol, max_iter=max_iter, threads=threads, overlap=overlap, mc=mc, nc=nc, mr=mr,
                   nr=nr, init_u=init_u, init_v=init_v, allreduce_algorithm=allreduce_algorithm,
                   ranks_per_node=ranks_per_node, norm=norm, check_every=check_every, columns_first=columns_first)
    return ScalingResult(*cast(Tuple[Any, ...], _conveyor.sinkhorn_scale(
        A, r, c, comm_address(comm), in_place, options)))


def sinkhorn_transport(C: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike, eps: float,
                       comm: Optional[MPI.Comm] = None, tol: float = 1e-9, max_iter: int = 1000,
                       log_domain: bool = False, threads: int = 0, plan: bool = False, variant: str = "fused",
                       overlap: Optional[bool] = None, mc: Optional[int] = None, nc: Optional[int] = None,
                       mr: Optional[int] = None, nr: Optional[int] = None, init_u: Optional[npt.ArrayLike] = None,
                       init_v: Optional[npt.ArrayLike] = None, allreduce_algorithm: str = "auto",
                       ranks_per_node: Optional[int] = None, norm: str = "l1", check_every: int = 1,
                       columns_first: bool = False, reg_m_rows: float = float("inf"), reg_m_cols: float = float("inf"),
                       reg_type: str = "kl", stop: str = "marginal") -> TransportResult:
    """Entropic optimal transport on this rank's rows of the cost matrix C.

    The plan is P = diag(u) exp(-C/eps) diag(v) with row sums a and column sums b
    (for POT's interface, see conveyor.ot).

    Parameters
    ----------
    C : array_like, shape (rows, N)
        This rank's rows of the costs (float32/float64).
    a : array_like, shape (rows,)
        Their row histogram.
    b : array_like, shape (N,)
        The column histogram (whole on every rank).
    eps : float
        The entropic regularization (> 0).
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective.
    log_domain : bool
        Iterate on the log scalings (stable for any eps).
    plan : bool
        Also return this rank's rows of P.

    Returns
    -------
    TransportResult
        log_u (this rank's rows), log_v (the log scalings; the dual potentials
        are eps log_u and eps log_v, as sinkhorn_points returns), status,
        iterations, error, cost (<P, C> over all ranks), plan (or None), history
        (the error of every iteration).

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> C = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> ot = conveyor.sinkhorn_transport(C, np.full(2, 0.5), np.full(2, 0.5), 0.1, MPI.COMM_SELF, plan=True)
    >>> ot.status, bool(np.allclose(ot.plan.sum(axis=0), 0.5))
    ('converged', True)
    """
    options = dict(variant=variant, tol=tol, max_iter=max_iter, log_domain=log_domain, threads=threads, overlap=overlap,
                   mc=mc, nc=nc, mr=mr, nr=nr, init_u=init_u, init_v=init_v,
                   allreduce_algorithm=allreduce_algorithm, ranks_per_node=ranks_per_node, norm=norm,
                   check_every=check_every, columns_first=columns_first, reg_m_rows=reg_m_rows,
                   reg_m_cols=reg_m_cols, reg_type=reg_type, stop=stop)
    return TransportResult(*cast(Tuple[Any, ...], _conveyor.sinkhorn_transport(
        C, a, b, eps, comm_address(comm), plan, options)))


# The variants' names and summaries, from the extension's table: a new row is
# documented here without an edit.
_SOLVER_OPTIONS_DOC = _SOLVER_OPTIONS_DOC.replace("{variants}", "\n".join(
    f"        - \"{name}\": {summary}" for name, summary, _ in _conveyor.sinkhorn_variants()))
sinkhorn_scale.__doc__ = (sinkhorn_scale.__doc__ or "") + _SOLVER_OPTIONS_DOC
sinkhorn_transport.__doc__ = (sinkhorn_transport.__doc__ or "") + _SOLVER_OPTIONS_DOC


def sinkhorn_points(X: npt.ArrayLike, Y: npt.ArrayLike, eps: float, a: Optional[npt.ArrayLike] = None,
                    b: Optional[npt.ArrayLike] = None, comm: Optional[MPI.Comm] = None, metric: str = "sqeuclidean",
                    tol: float = 1e-9, max_iter: int = 1000, norm: str = "l1", check_every: int = 1, threads: int = 0,
                    init_log_u: Optional[npt.ArrayLike] = None, init_log_v: Optional[npt.ArrayLike] = None,
                    reg_m_rows: float = float("inf"), reg_m_cols: float = float("inf"), reg_type: str = "kl",
                    stop: str = "marginal", eps_scaling: float = 0.0, exchange: str = "auto") -> PointsResult:
    """Entropic optimal transport between two point clouds, the cost never stored.

    The plan is P_ij = exp(log_u_i + log_v_j - C(x_i, y_j) / eps) with row sums a
    and column sums b (for POT's interface, see conveyor.ot.empirical_sinkhorn).

    Parameters
    ----------
    X : array_like, shape (n, dim)
        This rank's source points (float32/float64).
    Y : array_like, shape (m, dim)
        This rank's target points.
    eps : float
        The entropic regularization (> 0).
    a, b : array_like, optional
        The weights of this rank's points; None: uniform over all ranks' points.
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective.
    metric : {"sqeuclidean", "euclidean"}
        The ground cost C.
    tol, max_iter, norm, check_every, threads
        As sinkhorn_transport; the error is the row-marginal error, and
        convergence is tested after iterations check_every, 2 check_every, ...
    init_log_u, init_log_v : array_like, optional
        Warm start (both or neither).
    reg_m_rows, reg_m_cols, reg_type, stop
        Unbalanced OT, as sinkhorn_transport.
    eps_scaling : float
        0 (off) or a factor s in (0, 1): first one update of each side at
        eps_k = D^p s^k while eps_k > eps (D the clouds' bounding-box diameter,
        p = 2 for sqeuclidean, 1 for euclidean), the dual potentials carried
        from step to step; fewer iterations at small eps.
    exchange : str
        How each side's points reach the other ranks (the bits are the same
        either way): "auto" (a side's first pass by the first below, timed, then
        the one predicted cheapest for that side) or one of:

{exchanges}

    Returns
    -------
    PointsResult
        log_u (this rank's X points), log_v (its Y points), status, iterations,
        error, cost (<P, C> over all ranks), history (the error of every iteration),
        annealing_steps (the eps-scaling steps before the iterations), exchange_x,
        exchange_y (how each side's points reached the other ranks).

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> X = np.array([[0.0, 0.0], [1.0, 1.0]])
    >>> r = conveyor.sinkhorn_points(X, X + 0.1, 0.05, comm=MPI.COMM_SELF)
    >>> r.status, round(r.cost, 6)
    ('converged', 0.02)
    """
    options = dict(metric=metric, tol=tol, max_iter=max_iter, norm=norm, check_every=check_every, threads=threads,
                   init_log_u=init_log_u, init_log_v=init_log_v, reg_m_rows=reg_m_rows, reg_m_cols=reg_m_cols,
                   reg_type=reg_type, stop=stop, eps_scaling=eps_scaling, exchange=exchange)
    return PointsResult(*cast(Tuple[Any, ...], _conveyor.sinkhorn_points(
        X, Y, a, b, eps, comm_address(comm), options)))


# The exchanges' names and summaries, from the extension's table: a new row is
# documented here without an edit.
sinkhorn_points.__doc__ = (sinkhorn_points.__doc__ or "").replace("{exchanges}", "\n".join(
    f"        - \"{name}\": {summary}" for name, summary in _conveyor.points_exchanges()))


def sinkhorn_barycenter(C: npt.ArrayLike, A: npt.ArrayLike, eps: float, weights: Optional[npt.ArrayLike] = None,
                        comm: Optional[MPI.Comm] = None, tol: float = 1e-4, max_iter: int = 1000, check_every: int = 1,
                        first_check: int = 1, log_domain: bool = False, threads: int = 0,
                        allreduce_algorithm: str = "auto", ranks_per_node: Optional[int] = None) -> BarycenterResult:
    """The entropic Wasserstein barycenter of histograms on a fixed support.

    The histogram q minimizing sum_k w_k OT_eps(q, A[:, k]) under the cost C, by
    iterative Bregman projections (for POT's interface, see conveyor.ot.barycenter).

    Parameters
    ----------
    C : array_like, shape (rows, dim)
        This rank's rows of the dim x dim cost (float32/float64; any split).
    A : array_like, shape (dim, n_hists)
        The histograms, one per column, each of the same mass (whole on every rank).
    eps : float
        The entropic regularization (> 0).
    weights : array_like, shape (n_hists,), optional
        The histograms' weights (default uniform).
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective.
    tol, max_iter : float, int
        Stop when sum_j std_k of the plans' column sums <= tol (tested on
        iterations first_check, first_check + check_every, ...); iterations at most.
    log_domain : bool
        Iterate on log scalings (stable for any eps).
    threads : int
        OpenMP threads per rank (0: automatic).
    allreduce_algorithm, ranks_per_node
        For the allreduce of the plans' column sums.

    Returns
    -------
    BarycenterResult
        barycenter (the same on every rank), status, iterations, error, history
        (the error of every iteration), log_v (n_hists x dim: the log of each
        plan's column scaling after the last iteration, diag(A_k / K v_k) K
        diag(v_k) being plan k; what gradients through the barycenter start from).

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> x = np.linspace(0, 1, 5); C = (x[:, None] - x[None, :]) ** 2
    >>> A = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 0.0], [0.0, 0.5], [0.0, 0.5]])
    >>> r = conveyor.sinkhorn_barycenter(C, A, 0.05, comm=MPI.COMM_SELF, tol=1e-9, max_iter=5000)
    >>> r.status, int(np.argmax(r.barycenter))
    ('converged', 2)
    """
    options = dict(tol=tol, max_iter=max_iter, check_every=check_every, first_check=first_check,
                   log_domain=log_domain, threads=threads, allreduce_algorithm=allreduce_algorithm,
                   ranks_per_node=ranks_per_node)
    return BarycenterResult(*cast(Tuple[Any, ...], _conveyor.sinkhorn_barycenter(
        C, A, weights, eps, comm_address(comm), options)))


def apply_plan_points(X: npt.ArrayLike, Y: npt.ArrayLike, log_u: npt.ArrayLike, log_v: npt.ArrayLike, eps: float,
                      V: npt.ArrayLike, comm: Optional[MPI.Comm] = None, metric: str = "sqeuclidean",
                      transpose: bool = False, threads: int = 0, cost_power: int = 0) -> npt.NDArray[np.floating[Any]]:
    """The plan of a point-cloud solve applied to values, without forming it.

    With P_ij = exp(log_u_i + log_v_j - C(x_i, y_j) / eps) (the plan of
    sinkhorn_points), returns P V for this rank's X points, V holding k values
    per Y point of this rank (every rank's Y points and V take part), or with
    ``transpose`` P^T V for this rank's Y points (V: a row per X point).
    Batches: X, Y of shape (B, n, dim), (B, m, dim) are B independent problems
    (the potentials (B, n), (B, m), V (B, m, k), the result (B, n, k)), each
    problem's points meeting only its own, in one pass over all of them.

    Parameters
    ----------
    X, Y : array_like, shape (n, dim), (m, dim), or (B, n, dim), (B, m, dim)
        This rank's points, as passed to sinkhorn_points.
    log_u, log_v : array_like, shape (n,), (m,), or (B, n), (B, m)
        This rank's potentials, as sinkhorn_points returned them.
    eps : float
        The solve's regularization.
    V : array_like, shape (m, k), or (n, k) with transpose (batches: (B, m, k), (B, n, k))
        The values of the other side's points held by this rank.
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective.
    metric : {"sqeuclidean", "euclidean"}
        The solve's ground cost.
    transpose : bool
        Apply P^T instead of P.
    threads : int
        OpenMP threads per rank (0: automatic).
    cost_power : {0, 1, -1}
        Apply P o C^cost_power: 1 each entry times its cost C(x_i, y_j) (the
        rows' transport costs), -1 divided by it and 0 where the cost is 0 (with
        ``metric="euclidean"``, sum_j P_ij (x_i - y_j) / C_ij is the cost's
        gradient in x_i).

    Returns
    -------
    ndarray, shape (n, k), or (m, k) with transpose (batches: (B, n, k), (B, m, k))
        This rank's rows of the product, of X's dtype.

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> X = np.array([[0.0], [1.0]])
    >>> r = conveyor.sinkhorn_points(X, X, 0.01, comm=MPI.COMM_SELF)
    >>> P_Y = conveyor.apply_plan_points(X, X, r.log_u, r.log_v, 0.01, X, comm=MPI.COMM_SELF)
    >>> np.round(P_Y[:, 0] / 0.5, 6)  # each point sent to itself: the barycentric map is the identity
    array([0., 1.])
    """
    options = dict(metric=metric, transpose=transpose, threads=threads, cost_power=cost_power)
    out = _conveyor.apply_plan_points(X, Y, log_u, log_v, eps, V, comm_address(comm), options)
    return cast(npt.NDArray[np.floating[Any]], out)
