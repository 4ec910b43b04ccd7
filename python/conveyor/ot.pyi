# Type stubs of conveyor.ot (POT's sinkhorn / sinkhorn2).
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy.typing as npt
from mpi4py import MPI

IMPLEMENTED_METHODS: Tuple[str, ...]
METRICS: Tuple[str, ...]

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
