# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.Alltoall / Alltoallv / Alltoallw with mpi4py's argument conventions,
against mpi4py's own calls with the same arguments (the MPI library's
all-to-all): every buffer specification form, MPI.IN_PLACE, sparse and uneven
counts, derived datatypes (mpi4py-fft's slab transfer), sub-communicators, and
bad arguments raising instead of touching memory."""
import numpy as np
import pytest
from mpi4py import MPI

import conveyor



def data(comm, n, dtype, salt=0):
    x = (np.arange(n) * 7 + 1000 * (comm.rank + 1) + salt) % 251
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float64, np.complex128])
@pytest.mark.parametrize("per_rank", [0, 1, 7, 1000])
def test_alltoall_every_form(comm, dtype, per_rank):
    send = data(comm, per_rank * comm.size, dtype)
    want = np.zeros_like(send)
    comm.Alltoall(send, want)
    mpi_type = MPI._typedict[np.dtype(dtype).char]
    for spec in (lambda b: b, lambda b: [b, mpi_type], lambda b: [b, per_rank, mpi_type]):
        got = np.full_like(send, 3)
        conveyor.Alltoall(spec(send), spec(got), comm)
        np.testing.assert_array_equal(got, want)
    inplace = send.copy()
    conveyor.Alltoall(MPI.IN_PLACE, inplace, comm)
    np.testing.assert_array_equal(inplace, want)


def test_alltoall_other_buffers(comm):
    send = bytearray(data(comm, 5 * comm.size, np.uint8).tobytes())
    got = bytearray(5 * comm.size)
    want = bytearray(5 * comm.size)
    comm.Alltoall(send, want)
    conveyor.Alltoall(memoryview(send), got, comm)
    assert got == want


def uneven(rank_from, rank_to):
    # Sparse: some pairs exchange nothing.
    return 0 if (rank_from + 2 * rank_to) % 3 == 0 else 1 + (rank_from * 5 + rank_to * 3) % 17


@pytest.mark.parametrize("dtype", [np.int16, np.float64])
def test_alltoallv_sparse_uneven_every_form(comm, dtype):
    scounts = [uneven(comm.rank, q) for q in range(comm.size)]
    rcounts = [uneven(q, comm.rank) for q in range(comm.size)]
    sdispls = list(np.cumsum([0] + scounts[:-1]) + 3)  # gaps before each part
    rdispls = [sum(rcounts) + sum(rcounts[:q]) for q in range(comm.size)]  # after a gap of sum(rcounts)
    send = data(comm, sum(scounts) + 3, dtype)
    want = np.full(2 * sum(rcounts) + 1, -1, dtype=dtype)
    comm.Alltoallv([send, scounts, sdispls, MPI._typedict[np.dtype(dtype).char]], [want, rcounts, rdispls,
                                                                                   MPI._typedict[np.dtype(dtype).char]])
    mpi_type = MPI._typedict[np.dtype(dtype).char]
    for s, r in (([send, scounts, sdispls], [None, rcounts, rdispls]),
                 ([send, (scounts, sdispls)], [None, (rcounts, rdispls)]),
                 ([send, scounts, sdispls, mpi_type], [None, rcounts, rdispls, mpi_type]),
                 ([send, (scounts, sdispls), mpi_type], [None, (rcounts, rdispls), mpi_type])):
        got = np.full_like(want, -1)
        r[0] = got
        conveyor.Alltoallv(s, r, comm)
        np.testing.assert_array_equal(got, want)


def test_alltoallv_equal_counts_and_in_place(comm):
    send = data(comm, 4 * comm.size, np.float32)
    want = np.empty_like(send)
    comm.Alltoallv([send, None], [want, None])
    got = np.empty_like(send)
    conveyor.Alltoallv([send, None], [got, None], comm)
    np.testing.assert_array_equal(got, want)
    counts = [4] * comm.size
    displs = [4 * q for q in range(comm.size)]
    inplace = send.copy()
    conveyor.Alltoallv(MPI.IN_PLACE, [inplace, counts, displs], comm)
    np.testing.assert_array_equal(inplace, want)


def slab_types(comm, n, m, order, base=MPI.C_DOUBLE_COMPLEX):
    """mpi4py-fft's slab transfer: (m, n, n) sends its (m, m, n) column blocks,
    received as the (m) row blocks of (n, m, n)."""
    send, recv = [], []
    for q in range(comm.size):
        a = base.Create_subarray([m, n, n], [m, m, n], [0, q * m, 0], order=order).Commit()
        b = base.Create_subarray([n, m, n], [m, m, n], [q * m, 0, 0], order=order).Commit()
        send.append(a), recv.append(b)
    return send, recv


@pytest.mark.parametrize("order", [MPI.ORDER_C, MPI.ORDER_FORTRAN])
@pytest.mark.parametrize("m", [1, 3, 24])
def test_alltoallw_slab_transfer_repeated(comm, order, m):
    n = m * comm.size
    st, rt = slab_types(comm, n, m, order)
    ones, zeros = [1] * comm.size, [0] * comm.size
    send = (data(comm, m * n * n, np.float64) + 1j * data(comm, m * n * n, np.float64, 5)).astype(np.complex128)
    want = np.zeros(n * m * n, dtype=np.complex128)
    comm.Alltoallw([send, ones, zeros, st], [want, ones, zeros, rt])
    for _ in range(3):  # an FFT's every step: the same types again
        got = np.zeros_like(want)
        conveyor.Alltoallw([send, ones, zeros, st], [got, (ones, zeros), rt], comm)
        np.testing.assert_array_equal(got, want)
    for t in st + rt:
        t.Free()


def test_alltoallw_mixed_types_and_byte_displacements(comm):
    # Send: every other int32 of a row (a vector) per rank; receive: plain int32s
    # at byte displacements with gaps.
    k = 5
    vec = MPI.INT32_T.Create_vector(k, 1, 2).Create_resized(0, 4).Commit()
    send = data(comm, 2 * k + comm.size, np.int32)
    sdispls = [4 * q for q in range(comm.size)]
    rdispls = [4 * (k + 1) * q for q in range(comm.size)]
    want = np.full((k + 1) * comm.size, -1, dtype=np.int32)
    comm.Alltoallw([send, [1] * comm.size, sdispls, [vec] * comm.size], [want, [k] * comm.size, rdispls, [MPI.INT32_T] * comm.size])
    got = np.full_like(want, -1)
    conveyor.Alltoallw([send, [1] * comm.size, sdispls, vec], [got, [k] * comm.size, rdispls, MPI.INT32_T], comm)
    np.testing.assert_array_equal(got, want)
    vec.Free()


def test_on_a_subcommunicator(comm):
    half = comm.Split(comm.rank % 2, comm.rank)
    P = half.Get_size()
    send = data(comm, 3 * P, np.float64)
    want = np.empty_like(send)
    half.Alltoall(send, want)
    got = np.empty_like(send)
    conveyor.Alltoall(send, got, half)
    np.testing.assert_array_equal(got, want)
    half.Free()


def test_bad_arguments_raise_on_every_rank_that_passes_them(comm):
    send = np.zeros(2 * comm.size)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(2 * comm.size)
        ro.flags.writeable = False
        conveyor.Alltoall(send, ro, comm)
    if comm.size > 1:
        with pytest.raises(ValueError, match="equally"):
            conveyor.Alltoall(np.zeros(2 * comm.size + 1), np.zeros(2 * comm.size + 1), comm)
    with pytest.raises(ValueError, match="counts for"):
        conveyor.Alltoallv([send, [1] * (comm.size + 1)], [send.copy(), [1] * comm.size], comm)
    # A part reaching past its buffer: an error, never a write outside it.
    with pytest.raises(ValueError, match="covers bytes"):
        conveyor.Alltoallw([send, [1] * comm.size, [0] * comm.size, MPI.DOUBLE],
                           [np.zeros(comm.size), [1] * comm.size, [8 * comm.size] * comm.size, MPI.DOUBLE], comm)
    with pytest.raises(TypeError, match="Datatype"):
        conveyor.Alltoallw([send, [1] * comm.size, [0] * comm.size, "double"], [send.copy(), [1] * comm.size, [0] * comm.size, MPI.DOUBLE],
                           comm)
    with pytest.raises(TypeError, match="expected a buffer"):
        conveyor.Alltoall([1.0, 2.0], np.zeros(comm.size), comm)


def test_alltoall_from_node_memory(comm):
    """Send arrays from conveyor.empty (each receiver copies the large pairs from
    its own mapping of the sender's array): the same bytes as mpi4py moves."""
    per_rank = (1 << 20) // 8  # 1 MiB per peer: above the shared slots at every rank count
    send = conveyor.empty(per_rank * comm.size)
    send[...] = data(comm, per_rank * comm.size, np.float64)
    got, want = np.zeros(per_rank * comm.size), np.zeros(per_rank * comm.size)
    comm.Alltoall(send, want)
    conveyor.Alltoall(send, got, comm)
    np.testing.assert_array_equal(got, want)


def test_validate_one_bad_rank_raises_everywhere(comm, bad_rank):
    """validate=True: a bad specification on one rank (each rank in turn) is the
    same ValueError on every rank, and the communicator works after."""
    n = 3
    send = data(comm, n * comm.size, np.float64)
    got, want = np.zeros(n * comm.size), np.zeros(n * comm.size)
    recv = got
    if comm.rank == bad_rank:
        recv = got.copy()
        recv.flags.writeable = False
    for call, spec in ((conveyor.Alltoall, lambda b: b), (conveyor.Alltoallv, lambda b: [b, [n] * comm.size])):
        with pytest.raises(ValueError, match=f"rank {bad_rank}: recvbuf: the receive buffer is read-only"):
            call(spec(send), spec(recv), comm, validate=True)
    conveyor.Alltoall(send, got, comm, validate=True)
    comm.Alltoall(send, want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.min_ranks(2)  # a pair that disagrees
def test_validate_pair_mismatch_raises_everywhere(comm):
    """Rank 0 sends rank 1 one item where rank 1 expects two: with validate, the
    same ValueError on every rank (without it, only on rank 1)."""
    sc, rc = [2] * comm.size, [2] * comm.size
    if comm.rank == 0:
        sc[1] = 1
    send, got = data(comm, sum(sc), np.int32), np.zeros(sum(rc), np.int32)
    with pytest.raises(ValueError, match="rank 1: rank 0 sent 4 bytes where this rank expects 8"):
        conveyor.Alltoallv([send, sc], [got, rc], comm, validate=True)
