"""Conveyor from Python: NumPy arrays in and out, communicators from mpi4py.

The first part of the Python package: the Reduce engine's local reductions and
its allreduce. Every function works on C-contiguous NumPy arrays of int8-64,
uint8-64, float16/32/64 and complex64/128, with MPI's operations by name
("sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor").
Errors from Conveyor arrive as ValueError (bad arguments), NotImplementedError
(an operation that means nothing for the dtype, e.g. "band" on floats) or
RuntimeError (MPI).
"""
from mpi4py import MPI  # noqa: F401  (initializes MPI before Conveyor needs it)
import numpy as np

from . import _conveyor

__version__ = _conveyor.__version__
__all__ = ["__version__", "simd_target", "reduce_local", "allreduce"]


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
