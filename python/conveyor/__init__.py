# SPDX-License-Identifier: BSD-3-Clause
"""Conveyor from Python: NumPy arrays in and out, communicators from mpi4py.

The Python package: the Reduce engine's local reductions and allreduce, the
distributed Sinkhorn / entropic-OT solver, the distributed sum of outer products,
and the Redistribute engine for Cartesian and block-cyclic layouts. The reductions work on C-contiguous NumPy arrays of int8-64,
uint8-64, float16/32/64 and complex64/128, with MPI's operations by name
("sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor") and
"logaddexp" (log(exp(a) + exp(b)) on floats, NumPy's np.logaddexp: the
log-sum-exp of partial log-sum-exps, one number per element on the wire).
Errors from Conveyor arrive as ValueError (bad arguments), TypeError (an
argument of the wrong kind or dtype), NotImplementedError (an operation that
means nothing for the dtype, e.g. "band" on floats) or RuntimeError (MPI).

Collective functions follow Conveyor's collective contract (docs/api.md): every
argument is checked on its rank, then the ranks agree, so an argument that is
bad on one rank raises the same error on every rank ("... rank 1: ...") instead
of leaving the others waiting. The solvers, outer_sum, Layout and Plan always
agree; allreduce does when validate=True (one extra small allreduce), and
otherwise follows MPI's rules (a bad argument raises on its own rank only).
Only `comm` itself is checked before the agreement.
"""
from collections import namedtuple

from mpi4py import MPI  # initializes MPI before Conveyor needs it
import numpy as np

from ._mpi import agree, buffer_collective, check_same_mpi, comm_address, register_mpi_style_objects

check_same_mpi()  # before the extension loads: a clear error rather than a crash
from . import _conveyor  # noqa: E402

register_mpi_style_objects(_conveyor)
from . import ot  # noqa: E402,F401  (conveyor.ot: POT's sinkhorn / sinkhorn2)
from ._alltoall import Alltoall, Alltoallv, Alltoallw  # noqa: E402

__version__ = _conveyor.__version__
__all__ = ["__version__", "ot", "Allreduce", "Reduce_scatter_block", "Allgather", "Alltoall", "Alltoallv", "Alltoallw", "simd_target", "reduce_local", "allreduce", "sinkhorn_scale", "sinkhorn_transport",
           "balanced_rows", "outer_sum", "outer_rows", "empty", "Layout", "Plan", "ScalingResult", "TransportResult", "BarycenterResult", "sinkhorn_barycenter",
           "sinkhorn_points", "PointsResult", "apply_plan_points"]


def simd_target():
    """The SIMD target the reduction kernels run on.

    Returns
    -------
    str
        Highway's name of the target, e.g. "AVX3", "AVX2", "SSE4" (the best the CPU
        runs, unless CONVEYOR_SIMD_TARGET chose another).

    Examples
    --------
    >>> import conveyor
    >>> isinstance(conveyor.simd_target(), str)
    True
    """
    return _conveyor.simd_target()


def empty(shape, dtype=np.float64):
    """A NumPy array in node memory: memory the other ranks of this node can map.

    A ``Plan`` whose destination arrays lie in node memory on every rank copies each
    byte once (transport "one_copy", chosen by "auto" on one node): the senders
    write straight into the receivers' arrays. Not collective; freed with the
    array's last view. The contents are zero. C++ ``conveyor::node_alloc``.

    Parameters
    ----------
    shape : int or tuple of int
    dtype : NumPy dtype

    Examples
    --------
    >>> import conveyor
    >>> a = conveyor.empty((2, 3), dtype="float32")
    >>> a.shape, a.dtype.name, float(a.sum())
    ((2, 3), 'float32', 0.0)
    """
    dt = np.dtype(dtype)
    shape = tuple(int(n) for n in shape) if np.iterable(shape) else (int(shape),)
    if any(n < 0 for n in shape):
        raise ValueError(f"conveyor.empty: negative dimension in {shape}")
    count = 1
    for n in shape:
        count *= n
    return _conveyor.node_bytes(count * dt.itemsize).view(dt).reshape(shape)


def reduce_local(inbuf, inoutbuf, op="sum"):
    """inoutbuf = inbuf (op) inoutbuf, element by element, in place, as MPI_Reduce_local.

    Parameters
    ----------
    inbuf : array_like
        Any array of inoutbuf's dtype and size.
    inoutbuf : numpy.ndarray
        Writable and C-contiguous (never copied); int8-64, uint8-64,
        float16/32/64, complex64/128.
    op : str
        "sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor",
        "logaddexp" (floats).

    Returns
    -------
    numpy.ndarray
        inoutbuf. Local: not collective.

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> b = np.array([1, 5, 3], dtype=np.int32)
    >>> conveyor.reduce_local(np.array([4, 2, 3], dtype=np.int32), b, "max").tolist()
    [4, 5, 3]
    """
    _conveyor.reduce_local(inbuf, inoutbuf, op)
    return inoutbuf


def allreduce(send, op="sum", comm=None, out=None, algorithm="auto", deterministic=False, validate=False,
              segment_bytes=None, ranks_per_node=None):
    """The reduction of `send` over every rank of `comm`, on every rank (NumPy style).

    Parameters
    ----------
    send : array_like
        This rank's contribution (any dtype reduce_local takes).
    op : str
        The op's name ("sum", ...).
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective over it.
    out : numpy.ndarray, optional
        Where to write the result (same dtype and size; may be `send` itself, in
        place); a new array when None.
    algorithm : str
        "auto" (measured cost model), "ring", "recursive_doubling",
        "rabenseifner", "hierarchical", "mpi", "shared_memory".
    deterministic : bool
        The same bits for any algorithm and segmentation.
    validate : bool
        Agree across ranks on every argument first (one extra small allreduce): a
        bad or mismatched argument on any rank raises on every rank.
    segment_bytes, ranks_per_node : int, optional
        The pipeline segment (None: the cost model's); emulated nodes of this many
        consecutive ranks (None: the real ones).

    Returns
    -------
    numpy.ndarray
        The result (`out` when given).

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> conveyor.allreduce(np.arange(3.0), "sum", MPI.COMM_SELF).tolist()
    [0.0, 1.0, 2.0]
    """
    # The common case (NumPy arrays, an `out` of the same dtype and size, every
    # option at its default) takes conveyor.Allreduce's C++ path: building the
    # options and the front end's call cost more than a small allreduce itself
    # (docs/results.md, "Per-call overhead of the Python layer"). Anything it does
    # not take goes the full way below.
    if (out is not None and algorithm == "auto" and not deterministic and not validate and segment_bytes is None
            and ranks_per_node is None and isinstance(send, np.ndarray) and isinstance(out, np.ndarray)
            and send.dtype == out.dtype and send.size == out.size):
        mpi_op = _MPI_OP_BY_NAME.get(op) if isinstance(op, str) else None
        if mpi_op is not None and _conveyor.try_buffer_allreduce(send, out, mpi_op, comm):
            return out
    options = dict(algorithm=algorithm, deterministic=deterministic, segment_bytes=segment_bytes,
                   ranks_per_node=ranks_per_node)
    return _conveyor.allreduce(send, out, op, comm_address(comm), bool(validate), options)[0]


_MPI_OP_BY_NAME = {name: getattr(MPI, name.upper())
                   for name in ("sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor")}


# ---------------------------------------------------------------------------
# mpi4py's conventions: comm.Allreduce(sendbuf, recvbuf, op) as
# conveyor.Allreduce(sendbuf, recvbuf, op, comm)
# ---------------------------------------------------------------------------
def Allreduce(sendbuf, recvbuf, op=MPI.SUM, comm=None):
    """recvbuf = the reduction of every rank's sendbuf, as mpi4py's ``comm.Allreduce``.

    Parameters
    ----------
    sendbuf : buffer, [buffer, datatype], [buffer, count, datatype] or MPI.IN_PLACE
        Any C-contiguous CPU array: NumPy, PyTorch / JAX (DLPack), memoryview, ...
        (bfloat16 through DLPack). MPI.IN_PLACE: the input is recvbuf.
    recvbuf : buffer or buffer specification
        Written in place, never copied; the same element type and count as sendbuf.
    op : mpi4py.MPI.Op or str
        A predefined op (MPI.SUM, MPI.MAX, ..., MPI.LXOR) or its name ("sum", ...).
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective over it.

    Notes
    -----
    Checks are MPI's: a bad argument raises on its own rank (as with mpi4py);
    ``conveyor.allreduce(..., validate=True)`` makes every rank agree first.
    The algorithm is the engine's choice (``auto``).

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> x = np.arange(4.0)
    >>> y = np.empty_like(x)
    >>> conveyor.Allreduce(x, y, MPI.SUM, MPI.COMM_SELF)
    >>> y.tolist()
    [0.0, 1.0, 2.0, 3.0]
    >>> conveyor.Allreduce(MPI.IN_PLACE, y, MPI.MAX, MPI.COMM_SELF)
    """
    if not _conveyor.try_buffer_allreduce(sendbuf, recvbuf, op, comm):  # the common case, in C++
        buffer_collective(_conveyor.buffer_allreduce, sendbuf, recvbuf, op, comm)


def Reduce_scatter_block(sendbuf, recvbuf, op=MPI.SUM, comm=None):
    """Rank r receives block r of the reduction of every rank's sendbuf, as
    mpi4py's ``comm.Reduce_scatter_block``.

    Parameters
    ----------
    sendbuf : buffer specification or MPI.IN_PLACE
        P blocks of recvbuf's size (P = comm's size). MPI.IN_PLACE: recvbuf holds
        the P blocks and receives the result in its first block.
    recvbuf : buffer specification
        One block (P blocks in place).
    op : mpi4py.MPI.Op or str
    comm : mpi4py.MPI.Comm, optional

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> out = np.empty(2)
    >>> conveyor.Reduce_scatter_block(np.array([1.0, 2.0]), out, MPI.SUM, MPI.COMM_SELF)
    >>> out.tolist()
    [1.0, 2.0]
    """
    if not _conveyor.try_buffer_reduce_scatter_block(sendbuf, recvbuf, op, comm):  # the common case, in C++
        buffer_collective(_conveyor.buffer_reduce_scatter_block, sendbuf, recvbuf, op, comm)


def Allgather(sendbuf, recvbuf, comm=None):
    """Every rank's sendbuf, concatenated in rank order, on every rank, as
    mpi4py's ``comm.Allgather``.

    Parameters
    ----------
    sendbuf : buffer specification or MPI.IN_PLACE
        This rank's block. MPI.IN_PLACE: the block is already at its place in recvbuf.
    recvbuf : buffer specification
        P blocks (P = comm's size), written in place.
    comm : mpi4py.MPI.Comm, optional

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> out = np.empty(3, dtype=np.int32)
    >>> conveyor.Allgather(np.array([7, 8, 9], dtype=np.int32), out, MPI.COMM_SELF)
    >>> out.tolist()
    [7, 8, 9]
    """
    if not _conveyor.try_buffer_allgather(sendbuf, recvbuf, None, comm):  # the common case, in C++
        buffer_collective(_conveyor.buffer_allgather, sendbuf, recvbuf, "sum", comm)


# ---------------------------------------------------------------------------
# Sinkhorn and entropic optimal transport (rows of the matrix spread over ranks)
# ---------------------------------------------------------------------------
ScalingResult = namedtuple("ScalingResult", "u v status iterations error")
TransportResult = namedtuple("TransportResult", "log_u log_v status iterations error cost plan history")
PointsResult = namedtuple("PointsResult", "log_u log_v status iterations error cost history annealing_steps")
BarycenterResult = namedtuple("BarycenterResult", "barycenter status iterations error history log_v")


def _comm(comm):
    return MPI.COMM_WORLD if comm is None else comm


def balanced_rows(M, comm=None):
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
    comm = _comm(comm)
    return _conveyor.balanced_rows(M, comm.Get_rank(), comm.Get_size())


_SOLVER_OPTIONS_DOC = """
    Options shared by the solvers (None: the engine's default): variant "fused"
    (never writes the matrix), "typical", "c2r", "blocked" (in place); overlap:
    scale columns as their sums arrive (in-place variants); mc, nc, mr, nr: the
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


def sinkhorn_scale(A, r, c, comm=None, in_place=False, variant="fused", tol=1e-9, max_iter=1000, threads=0,
                   overlap=None, mc=None, nc=None, mr=None, nr=None, init_u=None, init_v=None,
                   allreduce_algorithm="auto", ranks_per_node=None, norm="l1", check_every=1, columns_first=False):
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
    return ScalingResult(*_conveyor.sinkhorn_scale(A, r, c, comm_address(comm), in_place, options))


def sinkhorn_transport(C, a, b, eps, comm=None, tol=1e-9, max_iter=1000, log_domain=False, threads=0, plan=False,
                       variant="fused", overlap=None, mc=None, nc=None, mr=None, nr=None, init_u=None, init_v=None,
                       allreduce_algorithm="auto", ranks_per_node=None, norm="l1", check_every=1,
                       columns_first=False, reg_m_rows=float("inf"), reg_m_cols=float("inf"), reg_type="kl",
                       stop="marginal"):
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
    return TransportResult(*_conveyor.sinkhorn_transport(C, a, b, eps, comm_address(comm), plan, options))


sinkhorn_scale.__doc__ += _SOLVER_OPTIONS_DOC
sinkhorn_transport.__doc__ += _SOLVER_OPTIONS_DOC


def sinkhorn_points(X, Y, eps, a=None, b=None, comm=None, metric="sqeuclidean", tol=1e-9, max_iter=1000, norm="l1",
                    check_every=1, threads=0, init_log_u=None, init_log_v=None, reg_m_rows=float("inf"),
                    reg_m_cols=float("inf"), reg_type="kl", stop="marginal", eps_scaling=0.0, exchange="auto"):
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
    exchange : {"auto", "ring", "gather"}
        How each side's points reach the other ranks: round a ring (transfer
        overlapped with work), by one allgather per pass, or the ring's first
        pass measured against the gather's model (the bits are the same).

    Returns
    -------
    PointsResult
        log_u (this rank's X points), log_v (its Y points), status, iterations,
        error, cost (<P, C> over all ranks), history (the error of every iteration),
        annealing_steps (the eps-scaling steps before the iterations).

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
    return PointsResult(*_conveyor.sinkhorn_points(X, Y, a, b, eps, comm_address(comm), options))


def sinkhorn_barycenter(C, A, eps, weights=None, comm=None, tol=1e-4, max_iter=1000, check_every=1, first_check=1,
                        log_domain=False, threads=0, allreduce_algorithm="auto", ranks_per_node=None):
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
    return BarycenterResult(*_conveyor.sinkhorn_barycenter(C, A, weights, eps, comm_address(comm), options))


def apply_plan_points(X, Y, log_u, log_v, eps, V, comm=None, metric="sqeuclidean", transpose=False, threads=0,
                      cost_power=0):
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
    return _conveyor.apply_plan_points(X, Y, log_u, log_v, eps, V, comm_address(comm), options)


# ---------------------------------------------------------------------------
# Distributed sum of outer products
# ---------------------------------------------------------------------------
def outer_rows(N, comm=None):
    """The rows of G this rank receives from outer_sum(..., distributed=True).

    Returns
    -------
    first_row, rows : int
        The same split as balanced_rows(N, comm).

    Examples
    --------
    >>> import conveyor
    >>> from mpi4py import MPI
    >>> conveyor.outer_rows(5, MPI.COMM_SELF)
    (0, 5)
    """
    comm = _comm(comm)
    return _conveyor.outer_rows(N, comm.Get_rank(), comm.Get_size())


def outer_sum(a, b, comm=None, algorithm="auto", distributed=False, out=None, order="row_major",
              allreduce_algorithm="auto", ranks_per_node=None):
    """G = the sum over the ranks of outer(a, b): the distributed sum of outer products.

    Parameters
    ----------
    a, b : array_like, shapes (N,), (M,)
        float32/float64 (b converted to a's dtype).
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective; bad arguments on any rank raise on every rank.
    algorithm : str
        "auto", "allgather", "allreduce", "ring", "generalized_rabenseifner".
    distributed : bool
        Only this rank's rows of G (outer_rows).
    out : numpy.ndarray, optional
        Where to write G.
    order : str
        "row_major" (C order) or "column_major" (a Fortran-ordered array; `out` must be one).
    allreduce_algorithm, ranks_per_node :
        For the ring algorithm's allreduce.

    Returns
    -------
    numpy.ndarray
        G (or this rank's rows of it).

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> conveyor.outer_sum(np.array([1.0, 2.0]), np.array([3.0]), MPI.COMM_SELF).tolist()
    [[3.0], [6.0]]
    """
    options = dict(algorithm=algorithm, distributed=distributed, order=order, allreduce_algorithm=allreduce_algorithm,
                   ranks_per_node=ranks_per_node)
    return _conveyor.outer_sum(a, b, out, comm_address(comm), options)[0]


# ---------------------------------------------------------------------------
# Redistribute
# ---------------------------------------------------------------------------
class Layout:
    """How an N-D array is spread over the ranks of a communicator.

    Its global shape, the blocks, their owners, and this rank's local array(s),
    which the layout keeps alive (``.local``). Build one with Layout.cartesian,
    Layout.block_cyclic, Layout.from_descriptor or Layout.custom; move data
    between two with Plan.

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> L = conveyor.Layout.cartesian((4, 2), (1, 1), np.zeros((4, 2)), MPI.COMM_SELF)
    >>> L.shape, L.local_shape()
    ((4, 2), (4, 2))
    """

    def __init__(self, impl, local, comm):
        self._impl, self.local, self.comm = impl, local, comm

    @property
    def shape(self):
        """The global shape."""
        return tuple(self._impl.shape)

    @classmethod
    def cartesian(cls, shape, grid, local, comm=None, column_major_ranks=False):
        """The tensor paper's distribution: dimension d cut into grid[d] near-equal
        blocks (the first shape[d] % grid[d] one longer, as balanced_rows and
        outer_rows: a solver's row blocks are Cartesian with grid (P, 1)); the block at grid coordinates c belongs to the rank whose row-major
        (or column-major) index in the grid is c. `local`: this rank's block, any
        strides (None on ranks without elements); its shape must be the block's
        (local_shape). Collective: a wrong local array on any rank raises on every
        rank, and the ranks agree on the dtype.

        Examples
        --------
        >>> import numpy as np, conveyor
        >>> from mpi4py import MPI
        >>> conveyor.Layout.cartesian((6, 4), (1, 1), np.zeros((6, 2)), MPI.COMM_SELF)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: ...this rank holds a local array of shape (6, 4), got (6, 2)
        >>> conveyor.Layout.cartesian((6, 4), (1, 1), np.zeros((6, 4)), MPI.COMM_SELF).shape
        (6, 4)
        """
        comm = _comm(comm)
        impl, local = _conveyor._Layout.cartesian(shape, grid, local, column_major_ranks, comm_address(comm))
        return cls(impl, local, comm)

    @classmethod
    def block_cyclic(cls, M, N, mb, nb, prow, pcol, local, comm=None, rsrc=0, csrc=0, row_major_grid=True, imb=0,
                     inb=0):
        """ScaLAPACK's 2-D block-cyclic distribution of an M x N matrix in mb x nb
        blocks over a prow x pcol grid (process (r, c) is rank r*pcol + c, or
        c*prow + r). `local`: this rank's local matrix, column-major (order='F'),
        shape (NUMROC rows, NUMROC columns) = local_shape(); None on ranks without
        elements. imb, inb: the first row / column block's size (PBLAS's 11-integer
        descriptors; 0: mb, nb). Collective, like cartesian.

        Examples
        --------
        >>> import numpy as np, conveyor
        >>> from mpi4py import MPI
        >>> L = conveyor.Layout.block_cyclic(5, 3, 2, 2, 1, 1, np.zeros((5, 3), order="F"), MPI.COMM_SELF)
        >>> L.local_shape()
        (5, 3)
        """
        comm = _comm(comm)
        impl, local = _conveyor._Layout.block_cyclic(M, N, mb, nb, prow, pcol, row_major_grid, rsrc, csrc, local,
                                                     comm_address(comm), imb, inb)
        return cls(impl, local, comm)

    @classmethod
    def from_descriptor(cls, desc, local, prow, pcol, comm=None, row_major_grid=True):
        """The layout of a ScaLAPACK matrix from its array descriptor: 9 integers
        (DTYPE 1: DTYPE, CTXT, M, N, MB, NB, RSRC, CSRC, LLD) or 11 (DTYPE 2:
        DTYPE, CTXT, M, N, IMB, INB, MB, NB, RSRC, CSRC, LLD), on a prow x pcol
        process grid (the BLACS context's shape; its process (r, c) is rank
        r*pcol + c, or c*prow + r). `local`: this rank's local array as ScaLAPACK
        allocates it, column-major with leading dimension LLD (LLD x LOCc, or just
        its first NUMROC rows); None on ranks without elements. Collective.

        Examples
        --------
        >>> import numpy as np, conveyor
        >>> from mpi4py import MPI
        >>> A = np.asfortranarray(np.arange(12.0).reshape(3, 4))
        >>> L = conveyor.Layout.from_descriptor([1, 0, 3, 4, 2, 2, 0, 0, 3], A, 1, 1, MPI.COMM_SELF)
        >>> L.shape
        (3, 4)
        """
        def parse():  # agreed over the ranks: a bad descriptor on one rank raises on every rank
            d = [int(x) for x in desc]
            if len(d) == 9 and d[0] == 1:
                return d[2], d[3], 0, 0, d[4], d[5], d[6], d[7]
            if len(d) == 11 and d[0] == 2:
                return tuple(d[2:10])
            raise ValueError(f"expected a ScaLAPACK descriptor of 9 integers (DTYPE 1) or 11 (DTYPE 2), got {d}")

        M, N, imb, inb, mb, nb, rsrc, csrc = agree(_comm(comm), parse)
        if local is not None and getattr(local, "ndim", 0) == 2:
            # ScaLAPACK allocates LLD >= NUMROC rows: the layout takes the first NUMROC
            # (a view; its column stride stays LLD). Anything else is checked, on
            # every rank together, by block_cyclic.
            rank = _comm(comm).Get_rank()
            if rank < prow * pcol:
                rows = _conveyor.block_cyclic_local_shape(M, N, mb, nb, prow, pcol, row_major_grid, rsrc, csrc,
                                                          imb, inb, rank)[0]
                local = local[:rows, :]
            else:  # outside the grid: nothing here
                local = local[:0, :]
        return cls.block_cyclic(M, N, mb, nb, prow, pcol, local, comm, rsrc, csrc, row_major_grid, imb, inb)

    @classmethod
    def custom(cls, splits, owners, blocks, comm=None):
        """Any blocked distribution: `splits[d]` are the split points of
        dimension d (0, ..., extent; block k spans [splits[d][k], splits[d][k+1])),
        `owners` the rank of every block in row-major order of block coordinates,
        and `blocks` this rank's blocks as (block coordinates, array) pairs, each
        array the block's shape with any strides (every block the rank owns,
        once). Collective: the ranks agree on splits, owners and dtype.

        Examples
        --------
        >>> import numpy as np, conveyor
        >>> from mpi4py import MPI
        >>> a, b = np.zeros((2, 3)), np.zeros((2, 1))
        >>> L = conveyor.Layout.custom([[0, 2], [0, 3, 4]], [0, 0], [((0, 0), a), ((0, 1), b)], MPI.COMM_SELF)
        >>> L.shape
        (2, 4)
        """
        comm = _comm(comm)
        impl, kept = _conveyor._Layout.custom(splits, owners, list(blocks), comm_address(comm))
        return cls(impl, kept, comm)

    def local_shape(self, rank=None):
        """The shape of `rank`'s (default: this rank's) local array.

        Examples
        --------
        >>> import numpy as np, conveyor
        >>> from mpi4py import MPI
        >>> conveyor.Layout.cartesian((5,), (1,), np.zeros(5), MPI.COMM_SELF).local_shape(0)
        (5,)
        """
        return tuple(self._impl.local_shape(self.comm.Get_rank() if rank is None else rank))


class Plan:
    """A redistribution, built once and executed as often as the data changes.

    dst = alpha * op(src) + beta * dst between two layouts, op = an axis
    permutation (perm[k]: the source axis that becomes destination axis k; None:
    identity), with complex conjugation if asked. Built once (collective), then
    execute() as often as the local arrays change. alpha, beta: real or complex
    (complex dtypes). transport: "auto" (cost model), "datatype", "packed",
    "pipelined", "one_sided", "alltoallv", "one_copy" (destinations, or sources, made
    by ``conveyor.empty``); relabel: "none", "greedy", "optimal"
    (see .sigma), weighing bytes within a node by intra_node_cost; ranks_per_node:
    emulate nodes (None: the real ones); chunk_bytes: the pipelined transport's
    chunk (None: 8 MiB). Plan.batch: several transforms in one plan.

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> src = conveyor.Layout.cartesian((2, 3), (1, 1), np.arange(6.0).reshape(2, 3), MPI.COMM_SELF)
    >>> dst = conveyor.Layout.cartesian((3, 2), (1, 1), np.zeros((3, 2)), MPI.COMM_SELF)
    >>> plan = conveyor.Plan(src, dst, perm=(1, 0), alpha=2.0)
    >>> plan.execute()
    >>> dst.local.tolist()
    [[0.0, 6.0], [2.0, 8.0], [4.0, 10.0]]
    """

    def __init__(self, src, dst, perm=None, alpha=1.0, beta=0.0, conjugate=False, transport="auto", relabel="none",
                 intra_node_cost=None, ranks_per_node=None, chunk_bytes=None):
        self._build([(src, dst, dict(perm=perm, alpha=alpha, beta=beta, conjugate=conjugate))],
                    dict(transport=transport, relabel=relabel, intra_node_cost=intra_node_cost,
                         ranks_per_node=ranks_per_node, chunk_bytes=chunk_bytes))

    @classmethod
    def batch(cls, transforms, transport="auto", relabel="none", intra_node_cost=None, ranks_per_node=None,
              chunk_bytes=None):
        """One plan for several transforms, executed together (one exchange for
        all of them): `transforms` is a sequence of (src, dst) pairs or of dicts
        with keys src, dst and optionally perm, alpha, beta, conjugate. The other
        arguments are the plan's, as in Plan(). Collective.

        Examples
        --------
        >>> import numpy as np, conveyor
        >>> from mpi4py import MPI
        >>> a, b = np.arange(4.0), np.arange(6.0).reshape(2, 3)
        >>> A = conveyor.Layout.cartesian((4,), (1,), a, MPI.COMM_SELF)
        >>> A2 = conveyor.Layout.cartesian((4,), (1,), np.zeros(4), MPI.COMM_SELF)
        >>> B = conveyor.Layout.cartesian((2, 3), (1, 1), b, MPI.COMM_SELF)
        >>> Bt = conveyor.Layout.cartesian((3, 2), (1, 1), np.zeros((3, 2)), MPI.COMM_SELF)
        >>> plan = conveyor.Plan.batch([(A, A2), dict(src=B, dst=Bt, perm=(1, 0))])
        >>> plan.execute()
        >>> A2.local.tolist(), Bt.local[:, 0].tolist()
        ([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0])
        """
        items = []
        for t in transforms:
            if isinstance(t, dict):
                t = dict(t)
                items.append((t.pop("src"), t.pop("dst"), t))
            else:
                src, dst = t
                items.append((src, dst, {}))
        plan = cls.__new__(cls)
        plan._build(items, dict(transport=transport, relabel=relabel, intra_node_cost=intra_node_cost,
                                ranks_per_node=ranks_per_node, chunk_bytes=chunk_bytes))
        return plan

    def _build(self, items, options):
        if not items:
            raise ValueError("a plan needs one or more (source, destination) pairs")
        self.src, self.dst = items[0][0], items[0][1]
        self.layouts = [(src, dst) for src, dst, _ in items]  # keep the arrays alive
        self._impl = _conveyor._Plan([src._impl for src, _, _ in items], [dst._impl for _, dst, _ in items],
                                     [t for _, _, t in items], comm_address(items[0][0].comm), options)

    def execute(self):
        """Moves (and transforms) the data. Collective (see the class example)."""
        self._impl.execute()

    @property
    def transport(self):
        """The transport that runs ("auto" resolved)."""
        return self._impl.transport

    @property
    def volume(self):
        """P x P bytes: row i = what rank i sends to each rank (diagonal: local copies)."""
        v = np.array(self._impl.volume, dtype=np.int64)
        n = int(round(len(v) ** 0.5))
        return v.reshape(n, n)

    @property
    def sigma(self):
        """The relabeling asked for: destination blocks of rank r would go to sigma[r]."""
        return list(self._impl.sigma)
