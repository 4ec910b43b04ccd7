# SPDX-License-Identifier: BSD-3-Clause
"""The distributed sum of outer products (DSOP) from Python (conveyor/dsop.hpp)."""
from . import _conveyor  # type: ignore[attr-defined]  # (the extension has no stub; the public modules have .pyi)
from ._mpi import comm_address, comm_or_world


def outer_rows(N, comm=None):
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
    comm = comm_or_world(comm)
    return _conveyor.outer_rows(N, comm.Get_rank(), comm.Get_size())


def outer_sum(a, b, comm=None, algorithm="auto", distributed=False, out=None, order="row_major",
              allreduce_algorithm="auto", ranks_per_node=None):
    """G = the sum over the ranks of outer(a, b): the distributed sum of outer products.

    Parameters
    ----------
    a, b : array_like, shapes (N,), (M,)
        float32/float64 (b converted to a's dtype).
    comm : mpi4py.MPI.Comm, optional
        Default MPI.COMM_WORLD. Collective; bad arguments on any rank raise on every rank.
    algorithm : str
        "auto", "allgather", "allreduce", "ring", "generalized_rabenseifner".
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
