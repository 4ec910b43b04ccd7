# SPDX-License-Identifier: BSD-3-Clause
"""The collectives from Python: allreduce with Conveyor's options, and
mpi4py's conventions (conveyor.Allreduce(sendbuf, recvbuf, op, comm) as
comm.Allreduce(sendbuf, recvbuf, op)) for Allreduce, Reduce_scatter_block and
Allgather (conveyor/collectives.hpp; the all-to-all family is in _alltoall.py)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from ._typing import Buffer, OpLike
from . import _conveyor
from ._mpi import buffer_collective, comm_address


def allreduce(send: npt.ArrayLike, op: str = "sum", comm: Optional[MPI.Comm] = None,
              out: Optional[npt.NDArray[Any]] = None, algorithm: str = "auto", deterministic: bool = False,
              validate: bool = False, segment_bytes: Optional[int] = None,
              ranks_per_node: Optional[int] = None) -> npt.NDArray[Any]:
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
        "auto" (the cost model's choice, measured against the candidates of
        CONVEYOR_ALLREDUCE_MEASURE), or one of the table of algorithms
        (src/collectives/allreduce/):

{algorithms}
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



# The algorithms' names and summaries, from the extension's table: a new row is
# documented here without an edit.
allreduce.__doc__ = (allreduce.__doc__ or "").replace("{algorithms}", "\n".join(
    f"        - \"{name}\": {summary}" for name, summary in _conveyor.allreduce_algorithms()))

_MPI_OP_BY_NAME = {name: getattr(MPI, name.upper())
                   for name in ("sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor")}


# ---------------------------------------------------------------------------
# mpi4py's conventions: comm.Allreduce(sendbuf, recvbuf, op) as
# conveyor.Allreduce(sendbuf, recvbuf, op, comm)
# ---------------------------------------------------------------------------
def Allreduce(sendbuf: Buffer, recvbuf: Buffer, op: OpLike = MPI.SUM, comm: Optional[MPI.Comm] = None) -> None:
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


def Reduce_scatter_block(sendbuf: Buffer, recvbuf: Buffer, op: OpLike = MPI.SUM,
                         comm: Optional[MPI.Comm] = None) -> None:
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


def Allgather(sendbuf: Buffer, recvbuf: Buffer, comm: Optional[MPI.Comm] = None) -> None:
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
