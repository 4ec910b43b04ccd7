# SPDX-License-Identifier: BSD-3-Clause
"""What every engine shares, from Python: the SIMD target the kernels run on,
and arrays in node memory (the C API's conveyor/c/common.h)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from . import _conveyor


def simd_target() -> str:
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


def empty(shape: Union[int, Sequence[int]], dtype: npt.DTypeLike = np.float64) -> npt.NDArray[Any]:
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
    dims = tuple(int(n) for n in np.atleast_1d(shape))
    if any(n < 0 for n in dims):
        raise ValueError(f"conveyor.empty: negative dimension in {dims}")
    count = 1
    for n in dims:
        count *= n
    return _conveyor.node_bytes(count * dt.itemsize).view(dt).reshape(dims)
