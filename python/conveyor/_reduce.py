# SPDX-License-Identifier: BSD-3-Clause
"""The Reduce engine from Python: local reductions of NumPy arrays
(conveyor/reduce.hpp, the C API's conveyor/c/reduce.h)."""
from __future__ import annotations

from typing import Any

import numpy.typing as npt

from . import _conveyor


def reduce_local(inbuf: npt.ArrayLike, inoutbuf: npt.NDArray[Any], op: str = "sum") -> npt.NDArray[Any]:
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
