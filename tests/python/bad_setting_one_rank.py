# SPDX-License-Identifier: BSD-3-Clause
"""Run under mpiexec (CTest points_dot_min_dim_bad_on_one_rank): the last rank
alone sets CONVEYOR_POINTS_DOT_MIN_DIM to a bad value before its first
point-cloud solve; every rank must raise the same error naming the variable
(and nobody may hang: CTest's timeout). Not a pytest file: the setting is read
once per process, so it needs a process of its own."""
import os
import sys

import numpy as np
from mpi4py import MPI

import conveyor

comm = MPI.COMM_WORLD
if comm.Get_rank() == comm.Get_size() - 1:
    os.environ["CONVEYOR_POINTS_DOT_MIN_DIM"] = "twenty"
X = np.random.default_rng(comm.Get_rank()).random((5, 3))
try:
    conveyor.sinkhorn_points(X, X, 0.1, comm=comm)
    message = "no error"
except ValueError as e:
    message = str(e)
messages = comm.allgather(message)
want = f"rank {comm.Get_size() - 1}: CONVEYOR_POINTS_DOT_MIN_DIM must be a whole number, got 'twenty'"
ok = all(want in m for m in messages)
if comm.Get_rank() == 0:
    print("every rank raised it" if ok else f"want '{want}' on every rank, got {messages}")
sys.exit(0 if ok else 1)
