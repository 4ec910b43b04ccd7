# SPDX-License-Identifier: BSD-3-Clause
"""The Python package under mpirun (CTest runs it at 1 and 2 ranks, both MPIs):
results against NumPy on every dtype and op, in place, every algorithm, and
errors. Every rank runs every test; collective calls happen in the same order."""
import numpy as np
import pytest
from mpi4py import MPI

import conveyor

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float16, np.float32, np.float64]
COMPLEX = [np.complex64, np.complex128]


def values(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 100, n).astype(dtype)
    x = rng.integers(-50, 50, n).astype(np.float64)  # exact in every float type
    if np.issubdtype(dtype, np.complexfloating):
        return (x + 1j * x[::-1]).astype(dtype)
    return x.astype(dtype)


NUMPY = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
         "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}


@pytest.mark.parametrize("dtype", INTS + FLOATS + COMPLEX)
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor", "logaddexp"])
def test_reduce_local_matches_numpy(dtype, op):
    a, b = values(dtype, 1001, 1), values(dtype, 1001, 2)
    integer = np.issubdtype(dtype, np.integer)
    if op in ("band", "bor", "bxor", "land", "lor", "lxor") and not integer:
        with pytest.raises(NotImplementedError):
            conveyor.reduce_local(a, b.copy(), op)
        return
    if op == "logaddexp":
        if dtype not in FLOATS:
            with pytest.raises(NotImplementedError):
                conveyor.reduce_local(a, b.copy(), op)
            return
        a[:3], b[:3] = [-np.inf, np.inf, np.nan], [-np.inf, 1, 0]
        out = conveyor.reduce_local(a, b.copy(), op)
        eps = np.finfo(dtype).eps  # one ulp for float16, within 8 for the others (exp, log1p)
        tol = eps if dtype == np.float16 else 8 * eps
        np.testing.assert_allclose(out, np.logaddexp(a.astype(np.float64), b), rtol=tol, atol=tol)
        return
    if op in ("min", "max") and np.issubdtype(dtype, np.complexfloating):
        with pytest.raises(NotImplementedError):
            conveyor.reduce_local(a, b.copy(), op)
        return
    out = b.copy()
    assert conveyor.reduce_local(a, out, op) is out
    if op in NUMPY:
        want = NUMPY[op](a, b)
    else:
        logical = {"land": np.logical_and, "lor": np.logical_or, "lxor": np.logical_xor}[op]
        want = logical(a != 0, b != 0).astype(dtype)
    np.testing.assert_array_equal(out, want)


def test_reduce_local_rejects_mismatches():
    with pytest.raises(TypeError):
        conveyor.reduce_local(np.zeros(4, np.float32), np.zeros(4, np.float64))
    with pytest.raises(ValueError):
        conveyor.reduce_local(np.zeros(4), np.zeros(5))
    with pytest.raises(ValueError):
        conveyor.reduce_local(np.zeros(4), np.zeros(4), "average")


# Every row of the table of algorithms (src/collectives/allreduce/), and auto.
@pytest.mark.parametrize("algorithm", ["auto"] + [name for name, _ in conveyor._conveyor.allreduce_algorithms()])
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 100003])
def test_allreduce_sum_every_algorithm(comm, algorithm, n):
    mine = values(np.float64, n, 10 + comm.rank)
    want = sum(values(np.float64, n, 10 + r) for r in range(comm.size)) if n else np.zeros(0)
    got = conveyor.allreduce(mine, "sum", comm, algorithm=algorithm)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(mine, values(np.float64, n, 10 + comm.rank))  # send untouched


@pytest.mark.parametrize("dtype", INTS + [np.float32, np.complex128])
def test_allreduce_dtypes_in_place_and_against_mpi4py(comm, dtype):
    buf = values(dtype, 513, 20 + comm.rank)
    want = np.empty_like(buf)
    comm.Allreduce(buf, want, op=MPI.MAX if dtype != np.complex128 else MPI.SUM)
    op = "max" if dtype != np.complex128 else "sum"
    assert conveyor.allreduce(buf, op, comm, out=buf) is buf  # in place
    np.testing.assert_array_equal(buf, want)


def test_allreduce_deterministic_on_a_subcommunicator(comm):
    sub = comm.Split(comm.rank % 2, comm.rank)
    x = values(np.float32, 4097, 30 + comm.rank) / np.float32(7)
    a = conveyor.allreduce(x, "sum", sub, algorithm="ring", deterministic=True)
    b = conveyor.allreduce(x, "sum", sub, algorithm="rabenseifner", deterministic=True)
    np.testing.assert_array_equal(a, b)  # same bits whatever the algorithm
    sub.Free()


def test_errors_are_python_exceptions(comm):
    with pytest.raises(TypeError):
        conveyor.allreduce(np.zeros(3), "sum", comm="not a communicator")
    with pytest.raises(ValueError):
        conveyor.allreduce(np.zeros(3), "sum", comm, out=np.zeros(4))
    assert conveyor.simd_target()
    assert conveyor.__version__.count(".") == 2
