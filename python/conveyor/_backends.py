# SPDX-License-Identifier: BSD-3-Clause
"""Arrays of other libraries (JAX, PyTorch, ...) in conveyor.ot: the solvers
compute on NumPy copies and hand results back through POT's backend for that
library, when POT is installed."""
import numpy as np


def is_foreign(x):
    """An array of another library than NumPy (not a Python sequence or scalar,
    nor another object such as a communicator: an array has a shape)."""
    return type(x).__module__.split(".")[0] not in ("numpy", "builtins") and hasattr(x, "shape")


def foreign_backend(*arrays):
    """POT's backend for input arrays that are not NumPy's (None for NumPy
    input, Python sequences and scalars, or where POT is not installed)."""
    foreign = [x for x in arrays if is_foreign(x)]
    if not foreign:
        return None
    try:
        from ot.backend import get_backend  # type: ignore[import]  # (POT ships no type information)
        return get_backend(*foreign)
    except (ImportError, ValueError):  # no POT, or a type none of its backends knows
        return None


def on_numpy(nx, like, function, *args, **kwargs):
    """function on NumPy copies of another library's arrays (alone or in lists
    and tuples); its arrays (alone, in a tuple, in a log dict) handed back as
    that library's, like `like`."""
    def to_numpy(x):
        if isinstance(x, (tuple, list)):
            return type(x)(to_numpy(y) for y in x)
        return nx.to_numpy(x) if is_foreign(x) else x

    def back(x):
        if isinstance(x, dict):
            return {k: v if k == "lazy_plan" else back(v) for k, v in x.items()}  # (the plan: POT's, on NumPy)
        if isinstance(x, (tuple, list)):
            return type(x)(back(y) for y in x)
        return nx.from_numpy(np.asarray(x), type_as=like) if isinstance(x, (np.ndarray, np.generic)) else x

    return back(function(*(to_numpy(x) for x in args), **{k: to_numpy(v) for k, v in kwargs.items()}))
