"""Arrays of other libraries (JAX, PyTorch, ...) in conveyor.ot: the solvers
compute on NumPy copies and hand results back through POT's backend for that
library, when POT is installed."""


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
