# SPDX-License-Identifier: BSD-3-Clause
# Type stubs of the package `conveyor` (checked by mypy and mypy.stubtest in
# scripts/test: tests/python/installed_package.sh).
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt
from mpi4py import MPI

from . import ot as ot

__version__: str

# Anything the extension takes as an array without copying it: a C-contiguous
# CPU object with DLPack or the buffer protocol (NumPy, PyTorch, JAX,
# memoryview, ...), or mpi4py's [buf, datatype] / [buf, count, datatype],
# or MPI.IN_PLACE where a send buffer is expected.
_Buffer = Any
# An MPI.Op (predefined) or its name: "sum", "prod", "min", "max", "band",
# "bor", "bxor", "land", "lor", "lxor", or "logaddexp" (no MPI.Op means it).
_OpLike = Union[MPI.Op, str]

def simd_target() -> str: ...
def empty(shape: Union[int, Sequence[int]], dtype: npt.DTypeLike = ...) -> npt.NDArray[Any]: ...
def reduce_local(inbuf: npt.ArrayLike, inoutbuf: npt.NDArray[Any], op: str = ...) -> npt.NDArray[Any]: ...
def allreduce(
    send: npt.ArrayLike,
    op: str = ...,
    comm: Optional[MPI.Comm] = ...,
    out: Optional[npt.NDArray[Any]] = ...,
    algorithm: str = ...,
    deterministic: bool = ...,
    validate: bool = ...,
    segment_bytes: Optional[int] = ...,
    ranks_per_node: Optional[int] = ...,
) -> npt.NDArray[Any]: ...
def Allreduce(sendbuf: _Buffer, recvbuf: _Buffer, op: _OpLike = ...,
              comm: Optional[MPI.Comm] = ...) -> None: ...
def Reduce_scatter_block(sendbuf: _Buffer, recvbuf: _Buffer, op: _OpLike = ...,
                         comm: Optional[MPI.Comm] = ...) -> None: ...
def Allgather(sendbuf: _Buffer, recvbuf: _Buffer, comm: Optional[MPI.Comm] = ...) -> None: ...
def Alltoall(sendbuf: _Buffer, recvbuf: _Buffer, comm: Optional[MPI.Comm] = ..., validate: bool = ...) -> None: ...
def Alltoallv(sendbuf: _Buffer, recvbuf: _Buffer, comm: Optional[MPI.Comm] = ..., validate: bool = ...) -> None: ...
def Alltoallw(sendbuf: _Buffer, recvbuf: _Buffer, comm: Optional[MPI.Comm] = ..., validate: bool = ...) -> None: ...

class ScalingResult(NamedTuple):
    u: npt.NDArray[np.floating[Any]]
    v: npt.NDArray[np.floating[Any]]
    status: str
    iterations: int
    error: float

class PointsResult(NamedTuple):
    log_u: npt.NDArray[np.floating[Any]]
    log_v: npt.NDArray[np.floating[Any]]
    status: str
    iterations: int
    error: float
    cost: float
    history: npt.NDArray[np.float64]
    annealing_steps: int

class TransportResult(NamedTuple):
    log_u: npt.NDArray[np.floating[Any]]
    log_v: npt.NDArray[np.floating[Any]]
    status: str
    iterations: int
    error: float
    cost: float
    plan: Optional[npt.NDArray[np.floating[Any]]]
    history: npt.NDArray[np.float64]

def balanced_rows(M: int, comm: Optional[MPI.Comm] = ...) -> Tuple[int, int]: ...
def sinkhorn_scale(
    A: npt.ArrayLike,
    r: npt.ArrayLike,
    c: npt.ArrayLike,
    comm: Optional[MPI.Comm] = ...,
    in_place: bool = ...,
    variant: str = ...,
    tol: float = ...,
    max_iter: int = ...,
    threads: int = ...,
    overlap: Optional[bool] = ...,
    mc: Optional[int] = ...,
    nc: Optional[int] = ...,
    mr: Optional[int] = ...,
    nr: Optional[int] = ...,
    init_u: Optional[npt.ArrayLike] = ...,
    init_v: Optional[npt.ArrayLike] = ...,
    allreduce_algorithm: str = ...,
    ranks_per_node: Optional[int] = ...,
    norm: str = ...,
    check_every: int = ...,
    columns_first: bool = ...,
) -> ScalingResult: ...
def sinkhorn_transport(
    C: npt.ArrayLike,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    eps: float,
    comm: Optional[MPI.Comm] = ...,
    tol: float = ...,
    max_iter: int = ...,
    log_domain: bool = ...,
    threads: int = ...,
    plan: bool = ...,
    variant: str = ...,
    overlap: Optional[bool] = ...,
    mc: Optional[int] = ...,
    nc: Optional[int] = ...,
    mr: Optional[int] = ...,
    nr: Optional[int] = ...,
    init_u: Optional[npt.ArrayLike] = ...,
    init_v: Optional[npt.ArrayLike] = ...,
    allreduce_algorithm: str = ...,
    ranks_per_node: Optional[int] = ...,
    norm: str = ...,
    check_every: int = ...,
    columns_first: bool = ...,
    reg_m_rows: float = ...,
    reg_m_cols: float = ...,
    reg_type: str = ...,
    stop: str = ...,
) -> TransportResult: ...
def sinkhorn_points(
    X: npt.ArrayLike,
    Y: npt.ArrayLike,
    eps: float,
    a: Optional[npt.ArrayLike] = ...,
    b: Optional[npt.ArrayLike] = ...,
    comm: Optional[MPI.Comm] = ...,
    metric: str = ...,
    tol: float = ...,
    max_iter: int = ...,
    norm: str = ...,
    check_every: int = ...,
    threads: int = ...,
    init_log_u: Optional[npt.ArrayLike] = ...,
    init_log_v: Optional[npt.ArrayLike] = ...,
    reg_m_rows: float = ...,
    reg_m_cols: float = ...,
    reg_type: str = ...,
    stop: str = ...,
    eps_scaling: float = ...,
    exchange: str = ...,
) -> PointsResult: ...
class BarycenterResult(NamedTuple):
    barycenter: npt.NDArray[np.floating[Any]]  # the same on every rank
    status: str
    iterations: int
    error: float
    history: npt.NDArray[np.float64]
    log_v: npt.NDArray[np.float64]  # (n_hists, dim), the same on every rank

def sinkhorn_barycenter(C: npt.ArrayLike, A: npt.ArrayLike, eps: float, weights: Optional[npt.ArrayLike] = ...,
                        comm: Optional[MPI.Comm] = ..., tol: float = ..., max_iter: int = ..., check_every: int = ...,
                        first_check: int = ..., log_domain: bool = ..., threads: int = ...,
                        allreduce_algorithm: str = ..., ranks_per_node: Optional[int] = ...) -> BarycenterResult: ...
def apply_plan_points(
    X: npt.ArrayLike,
    Y: npt.ArrayLike,
    log_u: npt.ArrayLike,
    log_v: npt.ArrayLike,
    eps: float,
    V: npt.ArrayLike,
    comm: Optional[MPI.Comm] = ...,
    metric: str = ...,
    transpose: bool = ...,
    threads: int = ...,
    cost_power: int = ...,
) -> npt.NDArray[np.floating[Any]]: ...
def outer_rows(N: int, comm: Optional[MPI.Comm] = ...) -> Tuple[int, int]: ...
def outer_sum(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    comm: Optional[MPI.Comm] = ...,
    algorithm: str = ...,
    distributed: bool = ...,
    out: Optional[npt.NDArray[Any]] = ...,
    order: str = ...,
    allreduce_algorithm: str = ...,
    ranks_per_node: Optional[int] = ...,
) -> npt.NDArray[Any]: ...

class Layout:
    # This rank's array (cartesian, block_cyclic), or its (index, array) pairs (custom).
    local: Any
    comm: MPI.Comm
    def __init__(self, impl: Any, local: Optional[npt.NDArray[Any]], comm: MPI.Comm) -> None: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @classmethod
    def cartesian(cls, shape: Sequence[int], grid: Sequence[int], local: Optional[npt.NDArray[Any]],
                  comm: Optional[MPI.Comm] = ..., column_major_ranks: bool = ...) -> "Layout": ...
    @classmethod
    def block_cyclic(cls, M: int, N: int, mb: int, nb: int, prow: int, pcol: int, local: Optional[npt.NDArray[Any]],
                     comm: Optional[MPI.Comm] = ..., rsrc: int = ..., csrc: int = ...,
                     row_major_grid: bool = ..., imb: int = ..., inb: int = ...) -> "Layout": ...
    @classmethod
    def from_descriptor(cls, desc: Sequence[int], local: Optional[npt.NDArray[Any]], prow: int, pcol: int,
                        comm: Optional[MPI.Comm] = ..., row_major_grid: bool = ...) -> "Layout": ...
    @classmethod
    def custom(cls, splits: Sequence[Sequence[int]], owners: Sequence[int],
               blocks: Sequence[Tuple[Sequence[int], npt.NDArray[Any]]], comm: Optional[MPI.Comm] = ...) -> "Layout": ...
    def local_shape(self, rank: Optional[int] = ...) -> Tuple[int, ...]: ...

_Transform = Union[Tuple[Layout, Layout], Dict[str, Any]]

class Plan:
    src: Layout
    dst: Layout
    layouts: List[Tuple[Layout, Layout]]
    def __init__(self, src: Layout, dst: Layout, perm: Optional[Sequence[int]] = ..., alpha: complex = ...,
                 beta: complex = ..., conjugate: bool = ..., transport: str = ..., relabel: str = ...,
                 intra_node_cost: Optional[float] = ..., ranks_per_node: Optional[int] = ...,
                 chunk_bytes: Optional[int] = ...) -> None: ...
    @classmethod
    def batch(cls, transforms: Sequence[_Transform], transport: str = ..., relabel: str = ...,
              intra_node_cost: Optional[float] = ..., ranks_per_node: Optional[int] = ...,
              chunk_bytes: Optional[int] = ...) -> "Plan": ...
    def execute(self) -> None: ...
    @property
    def transport(self) -> str: ...
    @property
    def volume(self) -> npt.NDArray[np.int64]: ...
    @property
    def sigma(self) -> list[int]: ...
