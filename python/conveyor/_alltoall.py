# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.Alltoall, Alltoallv and Alltoallw: mpi4py's calls, with mpi4py's
buffer specifications, moved by the Redistribute engine's all-to-all
(conveyor/alltoall.hpp: the same entry libconveyor_mpi serves MPI_Alltoallw with).

Each side is turned into one (count, displacement in bytes, datatype) per rank.
A buffer given without a datatype moves as bytes (its elements' size times the
counts), so any NumPy dtype works; a datatype given (predefined or derived,
committed) is used as MPI would, each derived type decoded once while it lives.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from mpi4py import MPI

from ._typing import Buffer
from . import _conveyor
from ._mpi import agree, comm_address

_IN_PLACE = MPI.IN_PLACE
_addressof = MPI._addressof
_BYTE = _addressof(MPI.BYTE)


def _array(buf, name, writable):
    """`buf` as a NumPy array sharing its memory: NumPy arrays, buffer-protocol
    objects, and tensors with __array__ or DLPack (CPU)."""
    if isinstance(buf, np.ndarray):
        a = buf
    elif isinstance(buf, (list, tuple)) or buf is None:
        raise TypeError(f"{name}: expected a buffer (an array, bytearray, ...), got {type(buf).__name__}")
    elif hasattr(buf, "__array__") or hasattr(buf, "__array_interface__"):
        a = np.asarray(buf)
    elif hasattr(buf, "__dlpack__"):
        a = np.from_dlpack(buf)
    else:
        try:
            a = np.asarray(memoryview(buf))
        except TypeError:
            raise TypeError(f"{name}: expected a buffer (an array, bytearray, ...), got {type(buf).__name__}") from None
    if not a.flags.c_contiguous:
        raise ValueError(f"{name}: the buffer must be contiguous (as MPI buffers are)")
    if writable and not a.flags.writeable:
        raise ValueError(f"{name}: the receive buffer is read-only")
    return a


def _type(datatype, name):
    if not isinstance(datatype, MPI.Datatype) or datatype == MPI.DATATYPE_NULL:
        raise TypeError(f"{name}: expected an mpi4py MPI.Datatype, got {type(datatype).__name__}")
    return datatype


def _split(spec, name, forms):
    """(buf, rest) of a buffer specification; `forms`: what the call accepts (for errors)."""
    if isinstance(spec, (list, tuple)):
        if not 1 <= len(spec) <= 4:
            raise ValueError(f"{name}: expected {forms}")
        return spec[0], list(spec[1:])
    return spec, []


def _equal_parts(a, P, name):
    """Bytes per rank when the buffer's items are split equally over P ranks."""
    if a.size % P:
        raise ValueError(f"{name}: {a.size} items cannot be split equally over {P} ranks")
    return a.size // P * a.itemsize


def _alltoall_side(spec, P, name, writable):
    forms = "buf, [buf, datatype] or [buf, count, datatype]"
    buf, rest = _split(spec, name, forms)
    a = _array(buf, name, writable)
    if len(rest) > 2:
        raise ValueError(f"{name}: expected {forms}")
    datatype = _type(rest[-1], name) if rest and isinstance(rest[-1], MPI.Datatype) else None
    count = rest[0] if len(rest) == 2 or (len(rest) == 1 and datatype is None) else None
    if datatype is None:
        n = _equal_parts(a, P, name) if count is None else int(count) * a.itemsize
        return a, [(n, q * n, _BYTE) for q in range(P)]
    extent = datatype.Get_extent()[1]
    if count is None:
        if extent <= 0 or a.nbytes % (extent * P):
            raise ValueError(f"{name}: {a.nbytes} bytes are not P = {P} equal parts of whole {datatype} items")
        count = a.nbytes // (extent * P)
    count = int(count)
    h = _addressof(datatype)
    return a, [(count, q * count * extent, h) for q in range(P)]


def _counts_displs(counts, displs, P, name, total):
    if counts is None:
        if total % P:
            raise ValueError(f"{name}: {total} items cannot be split equally over {P} ranks")
        counts = [total // P] * P
    counts = [int(c) for c in counts]
    if len(counts) != P:
        raise ValueError(f"{name}: {len(counts)} counts for {P} ranks")
    if displs is None:
        displs = np.concatenate(([0], np.cumsum(counts[:-1], dtype=np.int64))).tolist() if P else []
    displs = [int(d) for d in displs]
    if len(displs) != P:
        raise ValueError(f"{name}: {len(displs)} displacements for {P} ranks")
    return counts, displs


def _alltoallv_side(spec, P, name, writable):
    forms = ("[buf, counts], [buf, (counts, displs)], [buf, counts, displs], [buf, counts, datatype], "
             "[buf, (counts, displs), datatype] or [buf, counts, displs, datatype]")
    buf, rest = _split(spec, name, forms)
    a = _array(buf, name, writable)
    datatype = _type(rest.pop(), name) if rest and isinstance(rest[-1], MPI.Datatype) else None
    counts = displs = None
    if len(rest) == 1 and isinstance(rest[0], tuple) and len(rest[0]) == 2 and not np.isscalar(rest[0][0]):
        counts, displs = rest[0]
    elif len(rest) == 1:
        counts = rest[0]
    elif len(rest) == 2:
        counts, displs = rest
    elif rest:
        raise ValueError(f"{name}: expected {forms}")
    if datatype is None:
        size, h = a.itemsize, _BYTE
        counts, displs = _counts_displs(counts, displs, P, name, a.size)
        return a, [(c * size, d * size, h) for c, d in zip(counts, displs)]
    extent = datatype.Get_extent()[1]
    counts, displs = _counts_displs(counts, displs, P, name, a.nbytes // extent if extent > 0 else 0)
    h = _addressof(datatype)
    return a, [(c, d * extent, h) for c, d in zip(counts, displs)]


def _alltoallw_side(spec, P, name, writable):
    forms = "[buf, counts, displs, datatypes] or [buf, (counts, displs), datatypes] (displacements in bytes)"
    buf, rest = _split(spec, name, forms)
    a = _array(buf, name, writable)
    if len(rest) == 3:
        counts, displs, datatypes = rest
    elif len(rest) == 2 and isinstance(rest[0], tuple) and len(rest[0]) == 2:
        (counts, displs), datatypes = rest
    else:
        raise ValueError(f"{name}: expected {forms}")
    if isinstance(datatypes, MPI.Datatype):
        datatypes = [datatypes] * P
    datatypes = [_type(t, name) for t in datatypes]
    if len(datatypes) != P:
        raise ValueError(f"{name}: {len(datatypes)} datatypes for {P} ranks")
    counts = [int(c) for c in counts]
    if len(counts) != P:
        raise ValueError(f"{name}: {len(counts)} counts for {P} ranks")
    if displs is None:
        displs, at = [], 0
        for c, t in zip(counts, datatypes):
            displs.append(at)
            at += c * t.Get_extent()[1]
    displs = [int(d) for d in displs]
    if len(displs) != P:
        raise ValueError(f"{name}: {len(displs)} displacements for {P} ranks")
    return a, [(c, d, _addressof(t)) for c, d, t in zip(counts, displs, datatypes)]


def _run(side, sendbuf, recvbuf, comm, validate):
    comm = MPI.COMM_WORLD if comm is None else comm
    address = comm_address(comm)
    P = comm.Get_size()
    in_place = sendbuf is None or sendbuf is _IN_PLACE

    def parse():
        r, rparts = side(recvbuf, P, "recvbuf", True)
        s, sparts = (None, []) if in_place else side(sendbuf, P, "sendbuf", False)
        return r, rparts, s, sparts

    # validate: a bad specification on one rank is the same error on every rank
    # (one allgather), and the engine checks the parts against each other.
    r, rparts, s, sparts = agree(comm, parse) if validate else parse()
    _conveyor.alltoallw(None if in_place else s.ctypes.data, 0 if in_place else s.nbytes, sparts,
                        r.ctypes.data, r.nbytes, rparts, address, validate)


def Alltoall(sendbuf: Buffer, recvbuf: Buffer, comm: Optional[MPI.Comm] = None, validate: bool = False) -> None:
    """Part q of every rank's sendbuf arrives, in rank order, in recvbuf of rank q,
    as mpi4py's ``comm.Alltoall``.

    Parameters
    ----------
    sendbuf : buffer specification or MPI.IN_PLACE
        ``buf``, ``[buf, datatype]`` or ``[buf, count, datatype]`` (count items
        per rank; without it, the buffer is P equal parts). Any contiguous CPU
        buffer: NumPy, memoryview, bytearray, tensors with ``__array__`` or DLPack.
        MPI.IN_PLACE: the parts are taken from recvbuf.
    recvbuf : buffer specification
        Written in place, never copied.
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective over it (an intra-communicator).
    validate : bool, optional
        Also in Alltoallv and Alltoallw. False (default): MPI's checks — a bad
        argument raises on its own rank (ValueError, TypeError), as with mpi4py,
        while the others wait in the call; byte counts that disagree between two
        ranks raise on the receiving rank. True: any of these, and receive parts
        that overlap, raise the same error on every rank (``"rank r: ..."``), for
        one allgather and one agreement more per call.

    Notes
    -----
    A part that would reach outside its buffer raises ValueError instead of
    touching memory.

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> out = np.empty(3)
    >>> conveyor.Alltoall(np.array([1.0, 2.0, 3.0]), out, MPI.COMM_SELF)
    >>> out.tolist()
    [1.0, 2.0, 3.0]
    """
    _run(_alltoall_side, sendbuf, recvbuf, comm, validate)


def Alltoallv(sendbuf: Buffer, recvbuf: Buffer, comm: Optional[MPI.Comm] = None, validate: bool = False) -> None:
    """Alltoall with a count and displacement per rank, as mpi4py's
    ``comm.Alltoallv``.

    Parameters
    ----------
    sendbuf, recvbuf : buffer specifications (sendbuf may be MPI.IN_PLACE)
        ``[buf, counts]``, ``[buf, (counts, displs)]``, ``[buf, counts, displs]``,
        ``[buf, counts, datatype]``, ``[buf, (counts, displs), datatype]`` or
        ``[buf, counts, displs, datatype]``: counts and displacements in items
        (counts None: equal parts; displs None: packed in rank order). Ranks with
        nothing to exchange cost nothing.
    comm : mpi4py.MPI.Comm, optional

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> out = np.zeros(4, dtype=np.int32)
    >>> conveyor.Alltoallv([np.arange(4, dtype=np.int32), [2], [1]], [out, [2], [2]], MPI.COMM_SELF)
    >>> out.tolist()
    [0, 0, 1, 2]
    """
    _run(_alltoallv_side, sendbuf, recvbuf, comm, validate)


def Alltoallw(sendbuf: Buffer, recvbuf: Buffer, comm: Optional[MPI.Comm] = None, validate: bool = False) -> None:
    """Alltoall with a count, a byte displacement and a datatype per rank, as
    mpi4py's ``comm.Alltoallw`` (mpi4py-fft's transfers: subarray datatypes).

    Parameters
    ----------
    sendbuf, recvbuf : buffer specifications (sendbuf may be MPI.IN_PLACE)
        ``[buf, counts, displs, datatypes]`` or ``[buf, (counts, displs),
        datatypes]``: displacements in bytes (None: packed in rank order);
        datatypes a list of committed mpi4py datatypes, one per rank (or one for
        all). Each derived datatype is decoded once while it lives.
    comm : mpi4py.MPI.Comm, optional

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> column = MPI.DOUBLE.Create_vector(2, 1, 3).Create_resized(0, 8).Commit()
    >>> out = np.empty(2)
    >>> conveyor.Alltoallw([a, [1], [8], [column]], [out, [2], [0], [MPI.DOUBLE]], MPI.COMM_SELF)
    >>> out.tolist()
    [1.0, 4.0]
    >>> column.Free()
    """
    _run(_alltoallw_side, sendbuf, recvbuf, comm, validate)
