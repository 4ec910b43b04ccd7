# SPDX-License-Identifier: BSD-3-Clause
"""The distributed sum of outer products (DSOP) from Python (conveyor/dsop.hpp)."""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy.typing as npt
from mpi4py import MPI

from . import _conveyor
from ._mpi import comm_address, comm_or_world


def outer_rows(N: int, comm: Optional[MPI.Comm] = None) -> Tuple[int, int]:
    """The rows of G this rank receives from outer_sum(..., distributed=True).

    Returns
    -------
    first_row, rows : int
        The same split as balanced_rows(N, comm).

    Examples
    --------
    >>> import conveyor
    >>> from mpi4py import MPI
    >>> conveyor.outer_rows(5, MPI.COMM_SELF)
    (0, 5)
    """
    on = comm_or_world(comm)
    first, count = _conveyor.outer_rows(N, on.Get_rank(), on.Get_size())
    return first, count


def outer_sum(a: npt.ArrayLike, b: npt.ArrayLike, comm: Optional[MPI.Comm] = None, algorithm: str = "auto",
              distributed: bool = False, out: Optional[npt.NDArray[Any]] = None, order: str = "row_major",
              allreduce_algorithm: str = "auto", ranks_per_node: Optional[int] = None) -> npt.NDArray[Any]:
    """G = the sum over the ranks of outer(a, b): the distributed sum of outer products.

    Parameters
    ----------
    a, b : array_like, shapes (N,), (M,)
        float32/float64 (b converted to a's dtype).
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective; bad arguments on any rank raise on every rank.
    algorithm : str
        "auto" (the cost model's cheapest; CONVEYOR_DSOP_ALGORITHM overrides it) or one of:

{algorithms}
    distributed : bool
        Only this rank's rows of G (outer_rows).
    out : numpy.ndarray, optional
        Where to write G.
    order : str
        "row_major" (C order) or "column_major" (a Fortran-ordered array; `out` must be one).
    allreduce_algorithm, ranks_per_node :
        For the ring algorithm's allreduce.

    Returns
    -------
    numpy.ndarray
        G (or this rank's rows of it).

    Examples
    --------
    >>> import numpy as np, conveyor
    >>> from mpi4py import MPI
    >>> conveyor.outer_sum(np.array([1.0, 2.0]), np.array([3.0]), MPI.COMM_SELF).tolist()
    [[3.0], [6.0]]
    """
    options = dict(algorithm=algorithm, distributed=distributed, order=order, allreduce_algorithm=allreduce_algorithm,
                   ranks_per_node=ranks_per_node)
    return _conveyor.outer_sum(a, b, out, comm_address(comm), options)[0]


# The algorithms' names and summaries, from the extension's table: a new row is
# documented here without an edit.
outer_sum.__doc__ = (outer_sum.__doc__ or "").replace("{algorithms}", "\n".join(
    f"        - \"{name}\": {summary}" for name, summary in _conveyor.outer_algorithms()))
