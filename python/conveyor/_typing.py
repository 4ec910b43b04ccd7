# SPDX-License-Identifier: BSD-3-Clause
"""The names of the argument and result kinds the signatures share (annotations only)."""
from typing import Any, Dict, Tuple, Union

import numpy.typing as npt
from mpi4py import MPI

# Anything the extension takes as an array without copying it: a C-contiguous
# CPU object with DLPack or the buffer protocol (NumPy, PyTorch, JAX,
# memoryview, ...), or mpi4py's [buf, datatype] / [buf, count, datatype],
# or MPI.IN_PLACE where a send buffer is expected.
Buffer = Any
# An MPI.Op (predefined) or its name: "sum", "prod", "min", "max", "band",
# "bor", "bxor", "land", "lor", "lxor", or "logaddexp" (no MPI.Op means it).
OpLike = Union[MPI.Op, str]

# conveyor.ot's results in POT's forms: with log=True, the result and POT's log.
Log = Dict[str, Any]
# An array (a plan, a barycenter), or it and the log.
ArrayOrLogged = Union[npt.NDArray[Any], Tuple[npt.NDArray[Any], Log]]
# A value (a float, or a torch / JAX scalar that carries its gradient), or it and the log.
ValueOrLogged = Union[Any, Tuple[Any, Log]]
# empirical_sinkhorn: the plan, or with isLazy=True the two potentials; either with the log.
PlanOrPotentials = Union[npt.NDArray[Any], Tuple[npt.NDArray[Any], Log], Tuple[npt.NDArray[Any], npt.NDArray[Any]],
                         Tuple[npt.NDArray[Any], npt.NDArray[Any], Log]]
