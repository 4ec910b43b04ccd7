"""Conveyor from Python: NumPy arrays in and out, communicators from mpi4py.

The Python package: the Reduce engine's local reductions and allreduce, the
distributed Sinkhorn / entropic-OT solver, the distributed sum of outer products,
and the Redistribute engine for Cartesian and block-cyclic layouts. The reductions work on C-contiguous NumPy arrays of int8-64,
uint8-64, float16/32/64 and complex64/128, with MPI's operations by name
("sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor").
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

from ._mpi import check_same_mpi, comm_address

check_same_mpi()  # before the extension loads: a clear error rather than a crash
from . import _conveyor  # noqa: E402
from . import ot  # noqa: E402,F401  (conveyor.ot: POT's sinkhorn / sinkhorn2)

__version__ = _conveyor.__version__
__all__ = ["__version__", "ot", "simd_target", "reduce_local", "allreduce", "sinkhorn_scale", "sinkhorn_transport",
           "balanced_rows", "outer_sum", "outer_rows", "Layout", "Plan"]


def simd_target():
    """The SIMD target the reduction kernels run on, e.g. "AVX3"."""
    return _conveyor.simd_target()


def reduce_local(inbuf, inoutbuf, op="sum"):
    """inoutbuf = inbuf (op) inoutbuf, element by element, in place (MPI_Reduce_local).

    Both arrays must have the same dtype and size; inoutbuf must be writable and
    C-contiguous (it is never copied). Local: not collective."""
    _conveyor.reduce_local(inbuf, inoutbuf, op)
    return inoutbuf


def allreduce(send, op="sum", comm=None, out=None, algorithm="auto", deterministic=False, validate=False,
              segment_bytes=None, ranks_per_node=None):
    """The reduction of `send` over every rank of `comm` (mpi4py, default
    COMM_WORLD), on every rank. Collective.

    out: where to write the result (same dtype and size; may be `send` itself
    for an in-place allreduce); a new array if None. algorithm: "auto" (the
    cost model), "ring", "recursive_doubling", "rabenseifner", "hierarchical",
    "mpi", "shared_memory".
    deterministic: the same bits for any algorithm and segmentation.
    segment_bytes: the pipeline segment (None: the cost model's).
    ranks_per_node: emulate nodes of this many consecutive ranks (None: the real ones).
    validate: agree across ranks on every argument first (one extra small
    allreduce): a bad or mismatched argument on any rank raises on every rank.
    Returns the result array."""
    options = dict(algorithm=algorithm, deterministic=deterministic, segment_bytes=segment_bytes,
                   ranks_per_node=ranks_per_node)
    return _conveyor.allreduce(send, out, op, comm_address(comm), bool(validate), options)[0]


# ---------------------------------------------------------------------------
# Sinkhorn and entropic optimal transport (rows of the matrix spread over ranks)
# ---------------------------------------------------------------------------
ScalingResult = namedtuple("ScalingResult", "u v status iterations error")
TransportResult = namedtuple("TransportResult", "f g status iterations error cost plan history")


def _comm(comm):
    return MPI.COMM_WORLD if comm is None else comm


def balanced_rows(M, comm=None):
    """(first, count): the rows of an M-row matrix this rank holds in the
    balanced block partition the solvers expect (the first M % P ranks get one more)."""
    comm = _comm(comm)
    return _conveyor.balanced_rows(M, comm.Get_rank(), comm.Get_size())


_SOLVER_OPTIONS_DOC = """
    Options shared by the solvers (None: the engine's default): variant "fused"
    (never writes the matrix), "typical", "c2r", "blocked" (in place); overlap:
    scale columns as their sums arrive (in-place variants); mc, nc, mr, nr: the
    blocking of "blocked"; init_u, init_v: warm start (this rank's rows, all
    columns; log_domain: the potentials); allreduce_algorithm, ranks_per_node:
    for the column-sum allreduce; norm: of the column-marginal error, "l1" or
    "l2" (POT's); check_every: test convergence on iterations 1, 1 + check_every,
    ... (POT: 10); columns_first: begin with a column update from init_u (POT's
    order; init_v is ignored)."""


def sinkhorn_scale(A, r, c, comm=None, in_place=False, variant="fused", tol=1e-9, max_iter=1000, threads=0,
                   overlap=None, mc=None, nc=None, mr=None, nr=None, init_u=None, init_v=None,
                   allreduce_algorithm="auto", ranks_per_node=None, norm="l1", check_every=1, columns_first=False):
    """Matrix scaling: u, v with diag(u) A diag(v) having row sums r and column
    sums c. A: this rank's rows (float32/float64; C-contiguous and writable when
    in_place); r: their row marginals; c: all column marginals (converted to A's
    dtype). in_place: also rescale A (any variant). Collective. Returns
    ScalingResult (status "converged", "max_iter" or "numerical_failure")."""
    options = dict(variant=variant, tol=tol, max_iter=max_iter, threads=threads, overlap=overlap, mc=mc, nc=nc, mr=mr,
                   nr=nr, init_u=init_u, init_v=init_v, allreduce_algorithm=allreduce_algorithm,
                   ranks_per_node=ranks_per_node, norm=norm, check_every=check_every, columns_first=columns_first)
    return ScalingResult(*_conveyor.sinkhorn_scale(A, r, c, comm_address(comm), in_place, options))


def sinkhorn_transport(C, a, b, eps, comm=None, tol=1e-9, max_iter=1000, log_domain=False, threads=0, plan=False,
                       variant="fused", overlap=None, mc=None, nc=None, mr=None, nr=None, init_u=None, init_v=None,
                       allreduce_algorithm="auto", ranks_per_node=None, norm="l1", check_every=1,
                       columns_first=False):
    """Entropic optimal transport on this rank's rows of the cost matrix C: the
    dual potentials f (this rank's rows), g (all columns), <P, C> over all ranks,
    and this rank's rows of the plan P if plan=True. log_domain: stable for any
    eps. Collective. Returns TransportResult (history: the error of every
    iteration)."""
    options = dict(variant=variant, tol=tol, max_iter=max_iter, log_domain=log_domain, threads=threads, overlap=overlap,
                   mc=mc, nc=nc, mr=mr, nr=nr, init_u=init_u, init_v=init_v,
                   allreduce_algorithm=allreduce_algorithm, ranks_per_node=ranks_per_node, norm=norm,
                   check_every=check_every, columns_first=columns_first)
    return TransportResult(*_conveyor.sinkhorn_transport(C, a, b, eps, comm_address(comm), plan, options))


sinkhorn_scale.__doc__ += _SOLVER_OPTIONS_DOC
sinkhorn_transport.__doc__ += _SOLVER_OPTIONS_DOC


# ---------------------------------------------------------------------------
# Distributed sum of outer products
# ---------------------------------------------------------------------------
def outer_rows(N, comm=None):
    """(first_row, rows): the rows of G this rank receives with distributed=True."""
    comm = _comm(comm)
    return _conveyor.outer_rows(N, comm.Get_rank(), comm.Get_size())


def outer_sum(a, b, comm=None, algorithm="auto", distributed=False, out=None, order="row_major",
              allreduce_algorithm="auto", ranks_per_node=None):
    """G = the sum over the ranks of outer(a, b) (a: N, b: M, float32/float64);
    with distributed=True only this rank's rows (outer_rows). order: "row_major"
    (C order) or "column_major" (a Fortran-ordered array; `out` must be one).
    algorithm: "auto", "allgather", "allreduce", "ring", "generalized_rabenseifner";
    allreduce_algorithm, ranks_per_node: for the ring algorithm's allreduce.
    Collective; bad arguments on any rank raise on every rank."""
    options = dict(algorithm=algorithm, distributed=distributed, order=order, allreduce_algorithm=allreduce_algorithm,
                   ranks_per_node=ranks_per_node)
    return _conveyor.outer_sum(a, b, out, comm_address(comm), options)[0]


# ---------------------------------------------------------------------------
# Redistribute
# ---------------------------------------------------------------------------
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
        blocks (the first shape[d] % grid[d] one longer, as balanced_rows and
        outer_rows: a solver's row blocks are Cartesian with grid (P, 1)); the block at grid coordinates c belongs to the rank whose row-major
        (or column-major) index in the grid is c. `local`: this rank's block, any
        strides (None on ranks without elements); its shape must be the block's
        (local_shape). Collective: a wrong local array on any rank raises on every
        rank, and the ranks agree on the dtype."""
        comm = _comm(comm)
        impl, local = _conveyor._Layout.cartesian(shape, grid, local, column_major_ranks, comm_address(comm))
        return cls(impl, local, comm)

    @classmethod
    def block_cyclic(cls, M, N, mb, nb, prow, pcol, local, comm=None, rsrc=0, csrc=0, row_major_grid=True):
        """ScaLAPACK's 2-D block-cyclic distribution of an M x N matrix in mb x nb
        blocks over a prow x pcol grid (process (r, c) is rank r*pcol + c, or
        c*prow + r). `local`: this rank's local matrix, column-major (order='F'),
        shape (NUMROC rows, NUMROC columns) = local_shape(); None on ranks without
        elements. Collective, like cartesian."""
        comm = _comm(comm)
        impl, local = _conveyor._Layout.block_cyclic(M, N, mb, nb, prow, pcol, row_major_grid, rsrc, csrc, local, comm_address(comm))
        return cls(impl, local, comm)

    def local_shape(self, rank=None):
        """The shape of `rank`'s (default: this rank's) local array."""
        return tuple(self._impl.local_shape(self.comm.Get_rank() if rank is None else rank))


class Plan:
    """dst = alpha * op(src) + beta * dst between two layouts, op = an axis
    permutation (perm[k]: the source axis that becomes destination axis k; None:
    identity), with complex conjugation if asked. Built once (collective), then
    execute() as often as the local arrays change. alpha, beta: real or complex
    (complex dtypes). transport: "auto" (cost model), "datatype", "packed",
    "pipelined", "one_sided", "alltoallv"; relabel: "none", "greedy", "optimal"
    (see .sigma), weighing bytes within a node by intra_node_cost; ranks_per_node:
    emulate nodes (None: the real ones); chunk_bytes: the pipelined transport's
    chunk (None: 8 MiB)."""

    def __init__(self, src, dst, perm=None, alpha=1.0, beta=0.0, conjugate=False, transport="auto", relabel="none",
                 intra_node_cost=None, ranks_per_node=None, chunk_bytes=None):
        self.src, self.dst = src, dst  # keep the arrays alive
        options = dict(perm=perm, alpha=alpha, beta=beta, conjugate=conjugate, transport=transport, relabel=relabel,
                       intra_node_cost=intra_node_cost, ranks_per_node=ranks_per_node, chunk_bytes=chunk_bytes)
        self._impl = _conveyor._Plan(src._impl, dst._impl, comm_address(src.comm), options)

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
