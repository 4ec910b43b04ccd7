# SPDX-License-Identifier: BSD-3-Clause
"""Redistribute from Python: N-D layouts and redistribution plans
(conveyor/redistribute.hpp)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from . import _conveyor
from ._mpi import agree, comm_address, comm_or_world


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

    local: Any  # this rank's array (cartesian, block_cyclic), or its (index, array) pairs (custom)
    comm: MPI.Comm

    def __init__(self, impl: Any, local: Optional[npt.NDArray[Any]], comm: MPI.Comm) -> None:
        self._impl, self.local, self.comm = impl, local, comm

    @property
    def shape(self) -> Tuple[int, ...]:
        """The global shape."""
        return tuple(self._impl.shape)

    @classmethod
    def cartesian(cls, shape: Sequence[int], grid: Sequence[int], local: Optional[npt.NDArray[Any]],
                  comm: Optional[MPI.Comm] = None, column_major_ranks: bool = False) -> 'Layout':
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
        comm = comm_or_world(comm)
        impl, local = _conveyor._Layout.cartesian(shape, grid, local, column_major_ranks, comm_address(comm))
        return cls(impl, local, comm)

    @classmethod
    def block_cyclic(cls, M: int, N: int, mb: int, nb: int, prow: int, pcol: int, local: Optional[npt.NDArray[Any]],
                     comm: Optional[MPI.Comm] = None, rsrc: int = 0, csrc: int = 0, row_major_grid: bool = True,
                     imb: int = 0, inb: int = 0) -> 'Layout':
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
        comm = comm_or_world(comm)
        impl, local = _conveyor._Layout.block_cyclic(M, N, mb, nb, prow, pcol, row_major_grid, rsrc, csrc, local,
                                                     comm_address(comm), imb, inb)
        return cls(impl, local, comm)

    @classmethod
    def from_descriptor(cls, desc: Sequence[int], local: Optional[npt.NDArray[Any]], prow: int, pcol: int,
                        comm: Optional[MPI.Comm] = None, row_major_grid: bool = True) -> 'Layout':
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

        M, N, imb, inb, mb, nb, rsrc, csrc = agree(comm_or_world(comm), parse)
        if local is not None and getattr(local, "ndim", 0) == 2:
            # ScaLAPACK allocates LLD >= NUMROC rows: the layout takes the first NUMROC
            # (a view; its column stride stays LLD). Anything else is checked, on
            # every rank together, by block_cyclic.
            rank = comm_or_world(comm).Get_rank()
            if rank < prow * pcol:
                rows = _conveyor.block_cyclic_local_shape(M, N, mb, nb, prow, pcol, row_major_grid, rsrc, csrc,
                                                          imb, inb, rank)[0]
                local = local[:rows, :]
            else:  # outside the grid: nothing here
                local = local[:0, :]
        return cls.block_cyclic(M, N, mb, nb, prow, pcol, local, comm, rsrc, csrc, row_major_grid, imb, inb)

    @classmethod
    def custom(cls, splits: Sequence[Sequence[int]], owners: Sequence[int],
               blocks: Sequence[Tuple[Sequence[int], npt.NDArray[Any]]], comm: Optional[MPI.Comm] = None) -> 'Layout':
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
        comm = comm_or_world(comm)
        impl, kept = _conveyor._Layout.custom(splits, owners, list(blocks), comm_address(comm))
        return cls(impl, kept, comm)

    def local_shape(self, rank: Optional[int] = None) -> Tuple[int, ...]:
        """The shape of `rank`'s (default: this rank's) local array.

        Examples
        --------
        >>> import numpy as np, conveyor
        >>> from mpi4py import MPI
        >>> conveyor.Layout.cartesian((5,), (1,), np.zeros(5), MPI.COMM_SELF).local_shape(0)
        (5,)
        """
        return tuple(self._impl.local_shape(self.comm.Get_rank() if rank is None else rank))


# One transform of Plan.batch: a (src, dst) pair, or a dict of Plan's arguments.
Transform = Union[Tuple[Layout, Layout], Dict[str, Any]]


class Plan:
    """A redistribution, built once and executed as often as the data changes.

    dst = alpha * op(src) + beta * dst between two layouts, op = an axis
    permutation (perm[k]: the source axis that becomes destination axis k; None:
    identity), with complex conjugation if asked. Built once (collective), then
    execute() as often as the local arrays change. alpha, beta: real or complex
    (complex dtypes). transport: "auto" (cost model), or one of the table of
    transports (src/redistribute/transport_table.hpp; one_copy needs the
    destinations, or the sources, made by ``conveyor.empty``):

{transports}

    relabel (see .sigma), one of the table of relabelings (src/redistribute/relabel.cpp):

{relabelings}

    intra_node_cost: what relabeling weighs a byte within a node by; ranks_per_node:
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

    src: Layout
    dst: Layout
    layouts: List[Tuple[Layout, Layout]]

    def __init__(self, src: Layout, dst: Layout, perm: Optional[Sequence[int]] = None, alpha: complex = 1.0,
                 beta: complex = 0.0, conjugate: bool = False, transport: str = "auto", relabel: str = "none",
                 intra_node_cost: Optional[float] = None, ranks_per_node: Optional[int] = None,
                 chunk_bytes: Optional[int] = None) -> None:
        self._build([(src, dst, dict(perm=perm, alpha=alpha, beta=beta, conjugate=conjugate))],
                    dict(transport=transport, relabel=relabel, intra_node_cost=intra_node_cost,
                         ranks_per_node=ranks_per_node, chunk_bytes=chunk_bytes))

    @classmethod
    def batch(cls, transforms: Sequence[Transform], transport: str = "auto", relabel: str = "none",
              intra_node_cost: Optional[float] = None, ranks_per_node: Optional[int] = None,
              chunk_bytes: Optional[int] = None) -> 'Plan':
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

    def execute(self) -> None:
        """Moves (and transforms) the data. Collective (see the class example)."""
        self._impl.execute()

    @property
    def transport(self) -> str:
        """The transport that runs ("auto" resolved)."""
        return self._impl.transport

    @property
    def volume(self) -> npt.NDArray[np.int64]:
        """P x P bytes: row i = what rank i sends to each rank (diagonal: local copies)."""
        v = np.array(self._impl.volume, dtype=np.int64)
        n = int(round(len(v) ** 0.5))
        return v.reshape(n, n)

    @property
    def sigma(self) -> list[int]:
        """The relabeling asked for: destination blocks of rank r would go to sigma[r]."""
        return list(self._impl.sigma)


# The transports' names and summaries, from the extension's table: a new row is
# documented here without an edit.
Plan.__doc__ = (Plan.__doc__ or "").replace("{transports}", "\n".join(
    f"    - \"{name}\": {summary}" for name, summary in _conveyor.transports())).replace("{relabelings}", "\n".join(
    f"    - \"{name}\": {summary}" for name, summary in _conveyor.relabelings()))
