# SPDX-License-Identifier: BSD-3-Clause
"""What every engine shares, from Python: the SIMD target the kernels run on,
and arrays in node memory (the C API's conveyor/c/common.h)."""
import numpy as np

from . import _conveyor  # type: ignore[attr-defined]  # (the extension has no stub; the public modules have .pyi)


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
