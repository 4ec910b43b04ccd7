# SPDX-License-Identifier: BSD-3-Clause
# Type stubs of conveyor.ot (POT's sinkhorn / sinkhorn2).
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy.typing as npt
from mpi4py import MPI

IMPLEMENTED_METHODS: Tuple[str, ...]
METRICS: Tuple[str, ...]
UNBALANCED_METHODS: Tuple[str, ...]
BARYCENTER_METHODS: Tuple[str, ...]

def sinkhorn(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    M: npt.ArrayLike,
    reg: float,
    method: str = ...,
    numItermax: int = ...,
    stopThr: float = ...,
    verbose: bool = ...,
    log: bool = ...,
    warn: bool = ...,
    warmstart: Optional[Sequence[npt.ArrayLike]] = ...,
    comm: Optional[MPI.Comm] = ...,
    **kwargs: Any,
) -> Union[npt.NDArray[Any], Tuple[npt.NDArray[Any], Dict[str, Any]]]: ...
def sinkhorn2(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    M: npt.ArrayLike,
    reg: float,
    method: str = ...,
    numItermax: int = ...,
    stopThr: float = ...,
    verbose: bool = ...,
    log: bool = ...,
    warn: bool = ...,
    warmstart: Optional[Sequence[npt.ArrayLike]] = ...,
    comm: Optional[MPI.Comm] = ...,
    **kwargs: Any,
) -> Union[float, npt.NDArray[Any], Tuple[Union[float, npt.NDArray[Any]], Dict[str, Any]]]: ...
def empirical_sinkhorn(
    X_s: npt.ArrayLike,
    X_t: npt.ArrayLike,
    reg: float,
    a: Optional[npt.ArrayLike] = ...,
    b: Optional[npt.ArrayLike] = ...,
    metric: str = ...,
    numIterMax: int = ...,
    stopThr: float = ...,
    isLazy: bool = ...,
    batchSize: Union[int, Tuple[int, int]] = ...,
    verbose: bool = ...,
    log: bool = ...,
    warn: bool = ...,
    warmstart: Optional[Sequence[npt.ArrayLike]] = ...,
    comm: Optional[MPI.Comm] = ...,
    **kwargs: Any,
) -> Union[
    npt.NDArray[Any],
    Tuple[npt.NDArray[Any], Dict[str, Any]],
    Tuple[npt.NDArray[Any], npt.NDArray[Any]],
    Tuple[npt.NDArray[Any], npt.NDArray[Any], Dict[str, Any]],
]: ...
def empirical_sinkhorn2(
    X_s: npt.ArrayLike,
    X_t: npt.ArrayLike,
    reg: float,
    a: Optional[npt.ArrayLike] = ...,
    b: Optional[npt.ArrayLike] = ...,
    metric: str = ...,
    numIterMax: int = ...,
    stopThr: float = ...,
    isLazy: bool = ...,
    batchSize: Union[int, Tuple[int, int]] = ...,
    verbose: bool = ...,
    log: bool = ...,
    warn: bool = ...,
    warmstart: Optional[Sequence[npt.ArrayLike]] = ...,
    comm: Optional[MPI.Comm] = ...,
    **kwargs: Any,
) -> Union[Any, Tuple[Any, Dict[str, Any]]]: ...
def empirical_sinkhorn_divergence(
    X_s: npt.ArrayLike,
    X_t: npt.ArrayLike,
    reg: float,
    a: Optional[npt.ArrayLike] = ...,
    b: Optional[npt.ArrayLike] = ...,
    metric: str = ...,
    numIterMax: int = ...,
    stopThr: float = ...,
    verbose: bool = ...,
    log: bool = ...,
    warn: bool = ...,
    warmstart: Optional[Sequence[npt.ArrayLike]] = ...,
    comm: Optional[MPI.Comm] = ...,
    **kwargs: Any,
) -> Union[Any, Tuple[Any, Dict[str, Any]]]: ...
def empirical_plan_apply(
    X_s: npt.ArrayLike,
    X_t: npt.ArrayLike,
    reg: float,
    f: npt.ArrayLike,
    g: npt.ArrayLike,
    V: npt.ArrayLike,
    metric: str = ...,
    transpose: bool = ...,
    comm: Optional[MPI.Comm] = ...,
    **kwargs: Any,
) -> Any: ...
def empirical_barycentric_mapping(
    X_s: npt.ArrayLike,
    X_t: npt.ArrayLike,
    reg: float,
    f: npt.ArrayLike,
    g: npt.ArrayLike,
    metric: str = ...,
    comm: Optional[MPI.Comm] = ...,
    **kwargs: Any,
) -> Any: ...
def empirical_plan_rows(
    X_s: npt.ArrayLike,
    X_t: npt.ArrayLike,
    reg: float,
    f: npt.ArrayLike,
    g: npt.ArrayLike,
    rows: Any = ...,
    metric: str = ...,
    comm: Optional[MPI.Comm] = ...,
) -> Any: ...
def sinkhorn_unbalanced(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    M: npt.ArrayLike,
    reg: float,
    reg_m: Union[float, Sequence[float]],
    method: str = ...,
    reg_type: str = ...,
    c: Optional[npt.ArrayLike] = ...,
    warmstart: Optional[Sequence[npt.ArrayLike]] = ...,
    numItermax: int = ...,
    stopThr: float = ...,
    verbose: bool = ...,
    log: bool = ...,
    comm: Optional[MPI.Comm] = ...,
    **kwargs: Any,
) -> Union[npt.NDArray[Any], Tuple[npt.NDArray[Any], Dict[str, Any]]]: ...
def sinkhorn_unbalanced2(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    M: npt.ArrayLike,
    reg: float,
    reg_m: Union[float, Sequence[float]],
    method: str = ...,
    reg_type: str = ...,
    c: Optional[npt.ArrayLike] = ...,
    warmstart: Optional[Sequence[npt.ArrayLike]] = ...,
    returnCost: str = ...,
    numItermax: int = ...,
    stopThr: float = ...,
    verbose: bool = ...,
    log: bool = ...,
    comm: Optional[MPI.Comm] = ...,
    **kwargs: Any,
) -> Union[Any, Tuple[Any, Dict[str, Any]]]: ...
def barycenter(A: npt.ArrayLike, M: npt.ArrayLike, reg: float, weights: Optional[npt.ArrayLike] = ..., method: str = ...,
               numItermax: int = ..., stopThr: float = ..., verbose: bool = ..., log: bool = ..., warn: bool = ...,
               comm: Optional[MPI.Comm] = ..., **kwargs: Any) -> Union[Any, Tuple[Any, Dict[str, Any]]]: ...
def free_support_sinkhorn_barycenter(measures_locations: Sequence[npt.ArrayLike],
                                     measures_weights: Sequence[npt.ArrayLike], X_init: npt.ArrayLike, reg: float,
                                     b: Optional[npt.ArrayLike] = ..., weights: Optional[npt.ArrayLike] = ...,
                                     numItermax: int = ..., numInnerItermax: int = ..., stopThr: float = ...,
                                     verbose: bool = ..., log: Optional[bool] = ..., comm: Optional[MPI.Comm] = ...,
                                     **kwargs: Any) -> Union[Any, Tuple[Any, Dict[str, Any]]]: ...

class OTResult:
    def __init__(self, value: Any = ..., value_linear: Any = ..., plan: Any = ..., potentials: Any = ...,
                 status: Any = ..., log: Optional[Dict[str, Any]] = ..., lazy_plan: Any = ...) -> None: ...
    @property
    def value(self) -> Any: ...
    @property
    def value_linear(self) -> Any: ...
    @property
    def value_quad(self) -> None: ...
    @property
    def plan(self) -> Any: ...
    @property
    def sparse_plan(self) -> Any: ...
    @property
    def lazy_plan(self) -> Any: ...
    @property
    def potentials(self) -> Optional[Tuple[Any, Any]]: ...
    @property
    def potential_a(self) -> Any: ...
    @property
    def potential_b(self) -> Any: ...
    @property
    def marginals(self) -> Tuple[Any, Any]: ...
    @property
    def marginal_a(self) -> Any: ...
    @property
    def marginal_b(self) -> Any: ...
    @property
    def status(self) -> Any: ...
    @property
    def log(self) -> Optional[Dict[str, Any]]: ...

def solve(M: npt.ArrayLike, a: Optional[npt.ArrayLike] = ..., b: Optional[npt.ArrayLike] = ...,
          reg: Optional[float] = ..., c: Optional[npt.ArrayLike] = ..., reg_type: str = ...,
          unbalanced: Optional[Any] = ..., unbalanced_type: str = ..., method: Optional[str] = ...,
          n_threads: int = ..., max_iter: Optional[int] = ..., plan_init: Optional[npt.ArrayLike] = ...,
          potentials_init: Optional[Sequence[npt.ArrayLike]] = ..., tol: Optional[float] = ...,
          verbose: bool = ..., grad: str = ..., comm: Optional[MPI.Comm] = ..., **kwargs: Any) -> OTResult: ...
def solve_sample(X_a: npt.ArrayLike, X_b: npt.ArrayLike, a: Optional[npt.ArrayLike] = ...,
                 b: Optional[npt.ArrayLike] = ..., metric: str = ..., reg: Optional[float] = ...,
                 c: Optional[npt.ArrayLike] = ..., reg_type: str = ..., unbalanced: Optional[Any] = ...,
                 unbalanced_type: str = ..., lazy: bool = ..., batch_size: Optional[int] = ...,
                 method: Optional[str] = ..., n_threads: int = ..., max_iter: Optional[int] = ...,
                 plan_init: Optional[npt.ArrayLike] = ..., rank: int = ..., scaling: float = ...,
                 potentials_init: Optional[Sequence[npt.ArrayLike]] = ..., X_init: Optional[npt.ArrayLike] = ...,
                 tol: Optional[float] = ..., verbose: bool = ..., grad: str = ..., comm: Optional[MPI.Comm] = ...,
                 **kwargs: Any) -> OTResult: ...

class SamplesLoss:
    loss: str
    p: int
    blur: float
    reach: Optional[float]
    diameter: Optional[float]
    scaling: float
    debias: bool
    potentials: bool
    backend: str
    truncate: Optional[float]
    verbose: bool
    comm: Optional[MPI.Comm]
    def __init__(self, loss: str = ..., p: int = ..., blur: float = ..., reach: Optional[float] = ...,
                 diameter: Optional[float] = ..., scaling: float = ..., truncate: Optional[float] = ...,
                 cost: None = ..., kernel: None = ..., cluster_scale: None = ..., debias: bool = ...,
                 potentials: bool = ..., verbose: bool = ..., backend: str = ...,
                 comm: Optional[MPI.Comm] = ...) -> None: ...
    def __call__(self, *args: Any) -> Any: ...

class BatchResult(OTResult):
    def __init__(self, value: Any, value_linear: Any, potentials: Any, status: Any, log: Any, plan: Any = ...,
                 make_plan: Any = ...) -> None: ...

def solve_batch(M: npt.ArrayLike, reg: float, a: Optional[npt.ArrayLike] = ..., b: Optional[npt.ArrayLike] = ...,
                max_iter: int = ..., tol: float = ..., solver: str = ..., reg_type: str = ..., grad: str = ...,
                comm: Optional[MPI.Comm] = ..., threads: int = ...) -> BatchResult: ...
def solve_sample_batch(X_a: npt.ArrayLike, X_b: npt.ArrayLike, reg: float, a: Optional[npt.ArrayLike] = ...,
                       b: Optional[npt.ArrayLike] = ..., metric: str = ..., p: int = ..., max_iter: int = ...,
                       tol: float = ..., solver: str = ..., reg_type: str = ..., grad: str = ...,
                       comm: Optional[MPI.Comm] = ..., threads: int = ...) -> BatchResult: ...
