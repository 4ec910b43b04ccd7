# SPDX-License-Identifier: BSD-3-Clause
"""Type-checked with mypy --strict against the package's annotations (scripts/test):
the calls a POT user and an mpi4py user write. Also run by pytest (1 rank and
more), so the calls are known to work too."""
import numpy as np
import numpy.typing as npt
from mpi4py import MPI

import conveyor
import conveyor.ot


def test_the_typed_calls() -> None:
    comm = MPI.COMM_WORLD
    x: npt.NDArray[np.float64] = np.arange(6.0)
    y = np.empty_like(x)
    conveyor.Allreduce(x, y, MPI.SUM, comm)
    conveyor.Allreduce(MPI.IN_PLACE, y, "max")
    blocks = np.empty(6 * comm.Get_size())
    conveyor.Allgather(x, blocks, comm)
    out: npt.NDArray[np.float64] = conveyor.allreduce(x, "sum", comm)
    assert out.shape == (6,)
    a = b = np.full(3, 1 / 3)
    M = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    P = conveyor.ot.sinkhorn(a, b, M, 1.0)
    W = conveyor.ot.sinkhorn2(a, b, M, 1.0, method="sinkhorn_log")
    assert P is not None and W is not None
    first, rows = conveyor.balanced_rows(3, comm)
    res = conveyor.sinkhorn_transport(M[first:first + rows], a[first:first + rows], b, 0.5, comm, plan=True)
    assert res.status == "converged" and res.iterations > 0
    assert isinstance(conveyor.simd_target(), str)
    self_comm = MPI.COMM_SELF
    src = conveyor.Layout.custom([[0, 2], [0, 3]], [0], [((0, 0), np.zeros((2, 3)))], self_comm)
    dst = conveyor.Layout.from_descriptor([1, 0, 2, 3, 1, 1, 0, 0, 2], np.zeros((2, 3), order="F"), 1, 1, self_comm)
    plan = conveyor.Plan.batch([(src, dst)], transport="packed")
    plan.execute()
    assert plan.transport == "packed"
