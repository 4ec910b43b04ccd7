# SPDX-License-Identifier: BSD-3-Clause
"""Conveyor from Python: NumPy arrays in and out, communicators from mpi4py.

The Python package: the Reduce engine's local reductions and allreduce, the
distributed Sinkhorn / entropic-OT solver, the distributed sum of outer products,
and the Redistribute engine for Cartesian and block-cyclic layouts. The reductions work on C-contiguous NumPy arrays of int8-64,
uint8-64, float16/32/64 and complex64/128, with MPI's operations by name
("sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor") and
"logaddexp" (log(exp(a) + exp(b)) on floats, NumPy's np.logaddexp: the
log-sum-exp of partial log-sum-exps, one number per element on the wire).
Errors from Conveyor arrive as ValueError (bad arguments), TypeError (an
argument of the wrong kind or dtype), NotImplementedError (an operation that
means nothing for the dtype, e.g. "band" on floats) or RuntimeError (MPI).

Collective functions follow Conveyor's collective contract (docs/api.md): every
argument is checked on its rank, then the ranks agree, so an argument that is
bad on one rank raises the same error on every rank ("... rank 1: ...") instead
of leaving the others waiting. The solvers, outer_sum, Layout and Plan always
agree; allreduce does when validate=True (one extra small allreduce), and
otherwise follows MPI's rules (a bad argument raises on its own rank only).
Only `comm` itself is checked before the agreement.
"""
from mpi4py import MPI  # noqa: F401  (initializes MPI before Conveyor needs it)

from ._mpi import check_same_mpi, register_mpi_style_objects

check_same_mpi()  # before the extension loads: a clear error rather than a crash
from . import _conveyor  # noqa: E402

register_mpi_style_objects(_conveyor)
# One module per engine; this file only re-exports them.
from ._library import empty, simd_target  # noqa: E402
from ._reduce import reduce_local  # noqa: E402
from ._collectives import Allgather, Allreduce, Reduce_scatter_block, allreduce  # noqa: E402
from ._alltoall import Alltoall, Alltoallv, Alltoallw  # noqa: E402
from ._sinkhorn import (BarycenterResult, PointsResult, ScalingResult, TransportResult,  # noqa: E402
                        apply_plan_points, balanced_rows, sinkhorn_barycenter, sinkhorn_points, sinkhorn_scale,
                        sinkhorn_transport)
from ._dsop import outer_rows, outer_sum  # noqa: E402
from ._redistribute import Layout, Plan  # noqa: E402
from . import ot  # noqa: E402,F401  (conveyor.ot: POT's API over the Sinkhorn engine)

__version__: str = getattr(_conveyor, "__version__")  # (stubgen leaves dunder attributes out of the stub)
__all__ = ["__version__", "ot", "Allreduce", "Reduce_scatter_block", "Allgather", "Alltoall", "Alltoallv", "Alltoallw", "simd_target", "reduce_local", "allreduce", "sinkhorn_scale", "sinkhorn_transport",
           "balanced_rows", "outer_sum", "outer_rows", "empty", "Layout", "Plan", "ScalingResult", "TransportResult", "BarycenterResult", "sinkhorn_barycenter",
           "sinkhorn_points", "PointsResult", "apply_plan_points"]
