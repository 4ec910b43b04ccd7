"""Conveyor from Python: NumPy arrays in and out, communicators from mpi4py.

The Python package: the Reduce engine's local reductions and allreduce, the
distributed Sinkhorn / entropic-OT solver, the distributed sum of outer products,
and the Redistribute engine for Cartesian and block-cyclic layouts. The reductions work on C-contiguous NumPy arrays of int8-64,
uint8-64, float16/32/64 and complex64/128, with MPI's operations by name
("sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor").
Errors from Conveyor arrive as ValueError (bad arguments), NotImplementedError
(an operation that means nothing for the dtype, e.g. "band" on floats) or
RuntimeError (MPI).
"""
from collections import namedtuple

from mpi4py import MPI  # noqa: F401  (initializes MPI before Conveyor needs it)
import numpy as np

from . import _conveyor

__version__ = _conveyor.__version__
__all__ = ["__version__", "simd_target", "reduce_local", "allreduce", "sinkhorn_scale", "sinkhorn_transport",
           "balanced_rows", "outer_sum", "outer_rows", "Layout", "Plan"]


def simd_target():
    """The SIMD target the reduction kernels run on, e.g. "AVX3"."""
    return _conveyor.simd_target()


def reduce_local(inbuf, inoutbuf, op="sum"):
    """inoutbuf = inbuf (op) inoutbuf, element by element, in place (MPI_Reduce_local).

    Both arrays must have the same dtype and size; inoutbuf must be writable and
    C-contiguous (it is never copied)."""
    _conveyor.reduce_local(np.ascontiguousarray(inbuf), inoutbuf, op)
    return inoutbuf


def allreduce(send, op="sum", comm=None, out=None, algorithm="auto", deterministic=False):
    """The reduction of `send` over every rank of `comm` (mpi4py, default
    COMM_WORLD), on every rank. Collective.

    out: where to write the result (same dtype and size; may be `send` itself
    for an in-place allreduce); a new array if None. algorithm: "auto" (the
    cost model), "ring", "recursive_doubling", "rabenseifner", "hierarchical".
    deterministic: the same bits for any algorithm and segmentation.
    Returns the result array."""
    comm = MPI.COMM_WORLD if comm is None else comm
    send = np.ascontiguousarray(send)
    if out is None:
        out = np.empty_like(send)
    _conveyor.allreduce(send, out, op, comm, algorithm, deterministic)
    return out


# ---------------------------------------------------------------------------
# Sinkhorn and entropic optimal transport (rows of the matrix spread over ranks)
# ---------------------------------------------------------------------------
ScalingResult = namedtuple("ScalingResult", "u v status iterations error")
TransportResult = namedtuple("TransportResult", "f g status iterations error cost plan")


def _comm(comm):
    return MPI.COMM_WORLD if comm is None else comm


def _agree(comm, problem):
    """Raises ValueError on every rank if any rank found a problem (before a
    collective call, so a bad argument on one rank cannot leave the others waiting)."""
    problems = [p for p in comm.allgather(problem) if p]
    if problems:
        raise ValueError(f"conveyor: {problems[0]}")


def balanced_rows(M, comm=None):
    """(first, count): the rows of an M-row matrix this rank holds in the
    balanced block partition the solvers expect (the first M % P ranks get one more)."""
    comm = _comm(comm)
    return _conveyor.balanced_rows(M, comm.Get_rank(), comm.Get_size())


def sinkhorn_scale(A, r, c, comm=None, in_place=False, variant="fused", tol=1e-9, max_iter=1000, threads=0):
    """Matrix scaling: u, v with diag(u) A diag(v) having row sums r and column
    sums c. A: this rank's rows (C-contiguous float32/float64); r: their row
    marginals; c: all column marginals. in_place: also rescale A (any variant:
    "fused", "typical", "c2r", "blocked"). Collective. Returns ScalingResult
    (status "converged", "max_iter" or "numerical_failure")."""
    comm, dtype = _comm(comm), A.dtype
    r, c = np.ascontiguousarray(r, dtype), np.ascontiguousarray(c, dtype)
    _agree(comm, None if A.ndim == 2 and r.shape == A.shape[:1] and c.shape == A.shape[1:] else
           f"rank {comm.Get_rank()}: A {A.shape} with r {r.shape} and c {c.shape}")
    u, v, status, iterations, error = _conveyor.sinkhorn_scale(A, r, c, comm, in_place, variant, tol, max_iter, threads)
    return ScalingResult(u, v, status, iterations, error)


def sinkhorn_transport(C, a, b, eps, comm=None, tol=1e-9, max_iter=1000, log_domain=False, threads=0, plan=False):
    """Entropic optimal transport on this rank's rows of the cost matrix C: the
    dual potentials f (this rank's rows), g (all columns), <P, C> over all ranks,
    and this rank's rows of the plan P if plan=True. log_domain: stable for any
    eps. Collective. Returns TransportResult."""
    comm, C = _comm(comm), np.ascontiguousarray(C)
    a, b = np.ascontiguousarray(a, C.dtype), np.ascontiguousarray(b, C.dtype)
    _agree(comm, None if C.ndim == 2 and a.shape == C.shape[:1] and b.shape == C.shape[1:] else
           f"rank {comm.Get_rank()}: C {C.shape} with a {a.shape} and b {b.shape}")
    P = np.empty_like(C) if plan else None
    f, g, status, iterations, error, cost = _conveyor.sinkhorn_transport(C, a, b, float(eps), comm, tol, max_iter,
                                                                         log_domain, threads, P)
    return TransportResult(f, g, status, iterations, error, cost, P)


# ---------------------------------------------------------------------------
# Distributed sum of outer products
# ---------------------------------------------------------------------------
def outer_rows(N, comm=None):
    """(first_row, rows): the rows of G this rank receives with distributed=True."""
    comm = _comm(comm)
    return _conveyor.outer_rows(N, comm.Get_rank(), comm.Get_size())


def outer_sum(a, b, comm=None, algorithm="auto", distributed=False, out=None):
    """G = the sum over the ranks of outer(a, b) (a: N, b: M, float32/float64),
    row-major; with distributed=True only this rank's rows (outer_rows).
    algorithm: "auto", "allgather", "allreduce", "ring", "generalized_rabenseifner".
    Collective; bad arguments on any rank raise on every rank."""
    comm = _comm(comm)
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b, a.dtype)
    rows = outer_rows(a.size, comm)[1] if distributed else a.size
    if out is None:
        out = np.empty((rows, b.size), dtype=a.dtype)
    _conveyor.outer_sum(a, b, out, comm, algorithm, distributed)
    return out


# ---------------------------------------------------------------------------
# Redistribute
# ---------------------------------------------------------------------------
_DTYPES = {np.dtype(t): i for i, t in enumerate(
    [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
     np.float16, None, np.float32, np.float64, np.complex64, np.complex128]) if t is not None}


def _numroc(n, nb, iproc, isrc, nprocs):
    """ScaLAPACK's NUMROC: rows (or columns) of an n-long dimension in blocks of
    nb that process iproc holds."""
    mydist = (nprocs + iproc - isrc) % nprocs
    nblocks = n // nb
    count = (nblocks // nprocs) * nb
    extra = nblocks % nprocs
    if mydist < extra:
        count += nb
    elif mydist == extra:
        count += n % nb
    return count


class Layout:
    """How an N-D array is spread over the ranks of a communicator: its global
    shape, the blocks, their owners, and this rank's local array (which the
    layout keeps alive). Build with Layout.cartesian or Layout.block_cyclic."""

    def __init__(self, impl, local, comm):
        self._impl, self.local, self.comm = impl, local, comm

    @property
    def shape(self):
        return tuple(self._impl.shape)

    @classmethod
    def cartesian(cls, shape, grid, local, comm=None, column_major_ranks=False):
        """The tensor paper's distribution: dimension d cut into grid[d] near-equal
        blocks; the block at grid coordinates c belongs to the rank whose row-major
        (or column-major) index in the grid is c. `local`: this rank's block, any
        strides (None on ranks outside the grid); its shape must be the block's."""
        comm = MPI.COMM_WORLD if comm is None else comm
        shape, grid = [int(x) for x in shape], [int(g) for g in grid]
        if len(shape) != len(grid):
            raise ValueError("conveyor: shape and grid need the same number of dimensions")
        rank, cells = comm.Get_rank(), int(np.prod(grid))
        if rank < cells and all(n > 0 for n in shape):
            coords, r = [], rank
            for g in (reversed(grid) if not column_major_ranks else grid):
                coords.append(r % g)
                r //= g
            if not column_major_ranks:
                coords.reverse()
            want = tuple(shape[d] * (coords[d] + 1) // grid[d] - shape[d] * coords[d] // grid[d] for d in range(len(shape)))
            if local is None or tuple(local.shape) != want:
                raise ValueError(f"conveyor: rank {rank} holds a block of shape {want}, got "
                                 f"{None if local is None else tuple(local.shape)}")
        else:
            local = None
        return cls(_conveyor._Layout.cartesian(shape, grid, local, column_major_ranks), local, comm)

    @classmethod
    def block_cyclic(cls, M, N, mb, nb, prow, pcol, local, comm=None, rsrc=0, csrc=0, row_major_grid=True):
        """ScaLAPACK's 2-D block-cyclic distribution of an M x N matrix in mb x nb
        blocks over a prow x pcol grid (process (r, c) is rank r*pcol + c, or
        c*prow + r). `local`: this rank's local matrix, column-major (order='F'),
        shape (NUMROC rows, NUMROC columns); None on ranks outside the grid."""
        comm = MPI.COMM_WORLD if comm is None else comm
        rank = comm.Get_rank()
        if rank < prow * pcol:
            r, c = (rank // pcol, rank % pcol) if row_major_grid else (rank % prow, rank // prow)
            want = (_numroc(M, mb, r, rsrc, prow), _numroc(N, nb, c, csrc, pcol))
            if local is None or tuple(local.shape) != want:
                raise ValueError(f"conveyor: rank {rank} holds a {want[0]} x {want[1]} local matrix, got "
                                 f"{None if local is None else tuple(local.shape)}")
            if want[0] * want[1] == 0:
                local = None
        else:
            local = None
        impl = _conveyor._Layout.block_cyclic(M, N, mb, nb, prow, pcol, row_major_grid, rsrc, csrc, local)
        return cls(impl, local, comm)


class Plan:
    """dst = alpha * op(src) + beta * dst between two layouts, op = an axis
    permutation (perm[k]: the source axis that becomes destination axis k; None:
    identity), with complex conjugation if asked. Built once (collective), then
    execute() as often as the local arrays change. transport: "auto" (cost
    model), "datatype", "packed", "pipelined", "one_sided", "alltoallv";
    relabel: "none", "greedy", "optimal" (see .sigma)."""

    def __init__(self, src, dst, perm=None, alpha=1.0, beta=0.0, conjugate=False, transport="auto", relabel="none"):
        dtypes = {a.dtype for a in (src.local, dst.local) if a is not None}
        dtype = np.dtype(np.float64) if not dtypes else dtypes.pop()
        if dtypes:
            raise TypeError("conveyor: source and destination arrays differ in dtype")
        if dtype not in _DTYPES:
            raise TypeError(f"conveyor: unsupported dtype {dtype}")
        # Every rank must agree on the dtype (a rank without blocks has no array).
        codes = src.comm.allgather(_DTYPES[dtype] if (src.local is not None or dst.local is not None) else -1)
        known = {c for c in codes if c >= 0}
        if len(known) > 1:
            raise TypeError("conveyor: ranks hold arrays of different dtypes")
        code = known.pop() if known else _DTYPES[np.dtype(np.float64)]
        self.src, self.dst = src, dst  # keep the arrays alive
        self._impl = _conveyor._Plan(src._impl, dst._impl, src.comm, list(perm or []), float(alpha), float(beta),
                                     bool(conjugate), code, transport, relabel)

    def execute(self):
        """Moves (and transforms) the data. Collective."""
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
