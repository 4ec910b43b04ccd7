# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.Allreduce / Reduce_scatter_block / Allgather with mpi4py's argument
conventions, on any buffer: NumPy arrays, buffer specifications with MPI
datatypes, MPI.IN_PLACE, memoryview / bytearray, DLPack-only objects (float32 from
NumPy, bfloat16 through a ctypes DLPack producer), JAX arrays where JAX is
installed (the pip venvs of scripts/test). References: every rank's
input gathered with mpi4py and reduced by NumPy."""
import ctypes

import numpy as np
import pytest
from mpi4py import MPI

import conveyor

REDUCE = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum, "band": np.bitwise_and,
          "bor": np.bitwise_or, "bxor": np.bitwise_xor}


def local_input(n, dtype, rank):
    rng = np.random.default_rng(1000 + rank)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 5, size=n).astype(dtype)
    x = rng.integers(-3, 4, size=n).astype(dtype)  # small integers: sums exact in every type
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.integers(-3, 4, size=n).astype(dtype)
    return x


def expected(comm, n, dtype, op):
    blocks = [local_input(n, dtype, r) for r in range(comm.size)]
    out = blocks[0].copy()
    for b in blocks[1:]:
        out = REDUCE[op](out, b).astype(dtype)
    return out


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32, np.float64,
                                   np.complex64, np.complex128])
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_allreduce_every_dtype_sum(comm, dtype, n):
    x = local_input(n, dtype, comm.rank)
    y = np.empty_like(x)
    conveyor.Allreduce(x, y, MPI.SUM, comm)
    np.testing.assert_array_equal(y, expected(comm, n, dtype, "sum"))


@pytest.mark.parametrize("op", ["prod", "min", "max", "band", "bor", "bxor"])
def test_allreduce_ops_as_mpi_op_and_name(comm, op):
    x = local_input(33, np.int32, comm.rank)
    want = expected(comm, 33, np.int32, op)
    y = np.empty_like(x)
    conveyor.Allreduce(x, y, getattr(MPI, op.upper()))
    np.testing.assert_array_equal(y, want)
    z = np.empty_like(x)
    conveyor.Allreduce(x, z, op, comm)
    np.testing.assert_array_equal(z, want)


def test_in_place_and_buffer_specifications(comm):
    want = expected(comm, 10, np.float64, "sum")
    y = local_input(10, np.float64, comm.rank)
    conveyor.Allreduce(MPI.IN_PLACE, y, MPI.SUM)
    np.testing.assert_array_equal(y, want)
    x = local_input(10, np.float64, comm.rank)
    raw = bytearray(80)  # untyped bytes, typed by the datatype (MPI's view)
    conveyor.Allreduce([x, MPI.DOUBLE], [raw, MPI.DOUBLE])
    np.testing.assert_array_equal(np.frombuffer(raw), want)
    view = memoryview(bytearray(80)).cast("d")
    conveyor.Allreduce(x, view)
    np.testing.assert_array_equal(np.asarray(view), want)
    # [buf, count, datatype]: the first `count` elements.
    big = np.zeros(20)
    conveyor.Allreduce([np.concatenate([x, x]), 10, MPI.DOUBLE], [big, 10, MPI.DOUBLE])
    np.testing.assert_array_equal(big[:10], want)
    assert not big[10:].any()
    # MPI.INT and C's int: NumPy's int32 here.
    xi = local_input(5, np.int32, comm.rank)
    yi = np.empty(5, dtype=np.int32)
    conveyor.Allreduce([xi, MPI.INT], [yi, MPI.INT], MPI.MAX)
    np.testing.assert_array_equal(yi, expected(comm, 5, np.int32, "max"))


def test_reduce_scatter_block_and_allgather(comm):
    n = 3
    x = local_input(comm.size * n, np.float64, comm.rank)
    want = expected(comm, comm.size * n, np.float64, "sum")[comm.rank * n:(comm.rank + 1) * n]
    y = np.empty(n)
    conveyor.Reduce_scatter_block(x, y, MPI.SUM)
    np.testing.assert_array_equal(y, want)
    inplace = x.copy()
    conveyor.Reduce_scatter_block(MPI.IN_PLACE, inplace, MPI.SUM)
    np.testing.assert_array_equal(inplace[:n], want)

    mine = np.full(n, comm.rank, dtype=np.int64)
    every = np.empty(comm.size * n, dtype=np.int64)
    conveyor.Allgather(mine, every)
    np.testing.assert_array_equal(every, np.repeat(np.arange(comm.size), n))
    every2 = np.zeros(comm.size * n, dtype=np.int64)
    every2[comm.rank * n:(comm.rank + 1) * n] = comm.rank
    conveyor.Allgather(MPI.IN_PLACE, every2)
    np.testing.assert_array_equal(every2, every)


def test_a_sub_communicator(comm):
    sub = comm.Split(comm.rank % 2, comm.rank)
    x = np.full(4, comm.rank, dtype=np.float64)
    y = np.empty(4)
    conveyor.Allreduce(x, y, MPI.SUM, sub)
    np.testing.assert_array_equal(y, sum(r for r in range(comm.size) if r % 2 == comm.rank % 2))
    sub.Free()


FAST_PATH_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
                    np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", FAST_PATH_DTYPES)
def test_the_common_case_in_cpp_gives_the_general_paths_result(comm, dtype):
    """The common case (buffer-protocol buffers, a predefined MPI.Op, None or any
    communicator) runs in the extension (try_buffer_*); the same call through
    the general path gives the same bits."""
    from conveyor import _conveyor

    x = local_input(11, dtype, comm.rank)
    fast = np.empty_like(x)
    assert _conveyor.try_buffer_allreduce(x, fast, MPI.SUM, None)
    general = np.empty_like(x)
    conveyor.Allreduce([x], [general], "sum", comm)  # specifications and an op name: the general path
    np.testing.assert_array_equal(fast, general)
    np.testing.assert_array_equal(fast, expected(comm, 11, dtype, "sum"))
    # memoryview and IN_PLACE through the same entry
    inplace = x.copy()
    assert _conveyor.try_buffer_allreduce(MPI.IN_PLACE, memoryview(inplace), MPI.SUM, comm)
    np.testing.assert_array_equal(inplace, fast)


def test_what_the_common_case_leaves_to_the_general_path(comm):
    """try_buffer_* declines (returns False, having done nothing) whatever it
    does not handle; the public call then takes the general path."""
    from conveyor import _conveyor

    x, y = np.ones(4), np.zeros(4)
    declined = {
        "a buffer specification": ([x, MPI.DOUBLE], y, MPI.SUM, None),
        "an op name": (x, y, "sum", None),
        "a non-predefined op": (x, y, MPI.MINLOC, None),
        "a non-communicator": (x, y, MPI.SUM, "world"),
        "bool elements": (x.astype(bool), y.astype(bool), MPI.SUM, None),
        "big-endian elements": (x.astype(">f8"), y.astype(">f8"), MPI.SUM, None),
        "a read-only recvbuf": (x, np.frombuffer(bytes(32)), MPI.SUM, None),
        "a strided recvbuf": (x, np.zeros(8)[::2], MPI.SUM, None),
        "a DLPack-only object": (DLPackOnly(x), y, MPI.SUM, None),
    }
    for what, args in declined.items():
        assert _conveyor.try_buffer_allreduce(*args) is False, what
        assert not y.any(), what
    sub = comm.Dup()
    assert _conveyor.try_buffer_allreduce(x, y, MPI.SUM, sub)
    np.testing.assert_array_equal(y, comm.size)
    sub.Free()  # a freed communicator is MPI_COMM_NULL: an error, on either path
    with pytest.raises(ValueError, match="MPI_COMM_NULL"):
        conveyor.Allreduce(x, y, MPI.SUM, sub)


class DLPackOnly:
    """An array known to the extension only through the DLPack protocol."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@pytest.mark.skipif(not hasattr(np.ndarray, "__dlpack__"), reason="NumPy without DLPack")
def test_dlpack_objects_without_copies(comm):
    x = local_input(9, np.float32, comm.rank)
    y = np.zeros(9, dtype=np.float32)
    conveyor.Allreduce(DLPackOnly(x), DLPackOnly(y))  # written through the capsule: no copy
    np.testing.assert_array_equal(y, expected(comm, 9, np.float32, "sum"))


class DLPackExporter:
    """A DLPack producer written with ctypes (DLPack 0.x: a "dltensor" capsule of
    a DLManagedTensor), for a dtype NumPy cannot export: bfloat16 (code 4), over a
    uint16 array holding the bits: the bfloat16 DLPack path without any array
    library (PyTorch's tensors are tested too, below)."""

    class Device(ctypes.Structure):
        _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]

    class DataType(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

    class Tensor(ctypes.Structure):
        pass

    class Managed(ctypes.Structure):
        pass

    Tensor._fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int), ("dtype", DataType),
                       ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                       ("byte_offset", ctypes.c_uint64)]
    Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    Managed._fields_ = [("dl_tensor", Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", Deleter)]

    def __init__(self, bits, code=4):
        self.bits = bits  # the storage, kept alive by this object
        self.shape = (ctypes.c_int64 * 1)(bits.size)
        self.deleter = self.Deleter(lambda _: None)
        self.managed = self.Managed()
        t = self.managed.dl_tensor
        t.data, t.ndim, t.shape, t.strides, t.byte_offset = bits.ctypes.data, 1, self.shape, None, 0
        t.device = self.Device(1, 0)  # kDLCPU
        t.dtype = self.DataType(code, 8 * bits.itemsize, 1)
        self.managed.deleter = self.deleter

    def __dlpack__(self, **kwargs):
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new_capsule(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack_device__(self):
        return (1, 0)


def bfloat16_bits(x):
    """float32 values (exactly representable) as bfloat16 bits: the top half."""
    return (np.asarray(x, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def test_bfloat16_through_dlpack(comm):
    values = np.arange(12, dtype=np.float32) * (comm.rank + 1)  # small integers: exact in bfloat16
    send = DLPackExporter(bfloat16_bits(values))
    recv_bits = np.zeros(12, dtype=np.uint16)
    conveyor.Allreduce(send, DLPackExporter(recv_bits), MPI.SUM)  # written through the capsule
    want = np.arange(12, dtype=np.float32) * (comm.size * (comm.size + 1) / 2)
    np.testing.assert_array_equal(recv_bits, bfloat16_bits(want))
    conveyor.Allreduce(MPI.IN_PLACE, DLPackExporter(recv_bits), MPI.MAX)
    np.testing.assert_array_equal(recv_bits, bfloat16_bits(want))


def test_jax_arrays_through_dlpack(comm):
    """JAX CPU arrays (immutable: send buffers only), float32 and bfloat16. JAX is
    installed in scripts/test's pip venvs (tests/python/installed_package.sh);
    Debian's python3 used by CTest has none, so there it is skipped."""
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(6, dtype=jnp.float32) + comm.rank
    y = np.empty(6, dtype=np.float32)
    conveyor.Allreduce(x, y, MPI.SUM)
    np.testing.assert_array_equal(y, sum(np.arange(6, dtype=np.float32) + r for r in range(comm.size)))
    xb = jnp.arange(8, dtype=jnp.bfloat16) * (comm.rank + 1)
    recv_bits = np.zeros(8, dtype=np.uint16)
    conveyor.Allreduce(xb, DLPackExporter(recv_bits), MPI.SUM)
    np.testing.assert_array_equal(recv_bits, bfloat16_bits(np.arange(8, dtype=np.float32) * (comm.size * (comm.size + 1) / 2)))


def test_torch_tensors_through_dlpack(comm):
    """PyTorch CPU tensors (Debian's python3-torch, scripts/setup) as both buffers,
    written in place through DLPack: float32 and bfloat16 (which Gloo refuses),
    in place too; a non-contiguous receive view is refused (TypeError) on the
    calling rank, which writes nothing."""
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32) + comm.rank
    y = torch.zeros(6, dtype=torch.float32)
    conveyor.Allreduce(x, y, MPI.SUM)
    np.testing.assert_array_equal(y.numpy(), sum(np.arange(6, dtype=np.float32) + r for r in range(comm.size)))
    xb = torch.arange(8, dtype=torch.bfloat16) * (comm.rank + 1)
    yb = torch.zeros(8, dtype=torch.bfloat16)
    conveyor.Allreduce(xb, yb, MPI.SUM)
    want = bfloat16_bits(np.arange(8, dtype=np.float32) * (comm.size * (comm.size + 1) / 2))
    np.testing.assert_array_equal(yb.view(torch.int16).numpy().view(np.uint16), want)
    conveyor.Allreduce(MPI.IN_PLACE, yb, MPI.MAX)
    np.testing.assert_array_equal(yb.view(torch.int16).numpy().view(np.uint16), want)
    grid = torch.zeros(4, 4)
    with pytest.raises(TypeError, match="C-contiguous"):
        conveyor.Allreduce(torch.ones(4), grid[:, 0], MPI.SUM, MPI.COMM_SELF)
    assert not grid.any()


def test_torch_tensors_read_directly_and_unusual_ones_declined(comm):
    """Once torch is imported, the extension reads a contiguous CPU tensor of a
    real dtype itself (try_buffer_* take it: no DLPack, no Python layer); a
    tensor that requires grad, is not contiguous, empty, complex, sparse or a
    negative view is declined, and the general path gives its result or error."""
    torch = pytest.importorskip("torch")
    from conveyor import _conveyor
    from conveyor._mpi import _TORCH_DTYPES, register_torch_objects

    register_torch_objects()
    for name in _TORCH_DTYPES:
        dtype = getattr(torch, name)
        x = (torch.arange(5) % 3 + comm.rank).to(dtype)
        y = torch.zeros(5, dtype=dtype)
        assert _conveyor.try_buffer_allreduce(x, y, MPI.SUM, comm), name
        want = sum((torch.arange(5) % 3 + r).to(dtype).double() for r in range(comm.size)).to(dtype)
        assert torch.equal(y, want), name
        assert _conveyor.try_buffer_allreduce(None, y, MPI.MAX, comm)
        assert torch.equal(y, want)
    base = torch.arange(8.0)
    assert _conveyor.try_buffer_allreduce(base[4:], base[:4].clone(), MPI.SUM, MPI.COMM_SELF)  # (an offset view)
    z = torch.full((3,), 1 + 2j, dtype=torch.complex64)
    declined = [(torch.ones(3, requires_grad=True), torch.zeros(3)), (torch.ones(3), torch.zeros(2, 3).t()[0]),
                (torch.ones(0), torch.zeros(0)), (z, torch.zeros(3, dtype=torch.complex64)),
                (z.conj().imag, torch.zeros(3)), (torch.ones(3).to_sparse(), torch.zeros(3))]
    for send, recv in declined:
        assert not _conveyor.try_buffer_allreduce(send, recv, MPI.SUM, MPI.COMM_SELF), (send, recv)
    y = torch.zeros(3)
    conveyor.Allreduce(z.conj().imag, y, MPI.SUM, MPI.COMM_SELF)  # (the view's values, negated)
    assert torch.equal(y, torch.full((3,), -2.0))
    conveyor.Allreduce(torch.ones(3, requires_grad=True), y, MPI.SUM, MPI.COMM_SELF)
    assert torch.equal(y, torch.ones(3))
    with pytest.raises(TypeError, match="C-contiguous"):
        conveyor.Allreduce(torch.ones(3).to_sparse(), y, MPI.SUM, MPI.COMM_SELF)
    with pytest.raises(TypeError, match="differ in dtype"):
        conveyor.Allreduce(torch.ones(3), torch.zeros(3, dtype=torch.float64), MPI.SUM, MPI.COMM_SELF)
    with pytest.raises(ValueError, match="needs 4"):
        conveyor.Allreduce(torch.ones(3), torch.zeros(4), MPI.SUM, MPI.COMM_SELF)


def test_errors_raise_on_the_calling_rank(comm):
    x = np.zeros(4)
    with pytest.raises(ValueError, match="needs 3"):
        conveyor.Allreduce(x, np.zeros(3))
    with pytest.raises(TypeError, match="differ in dtype"):
        conveyor.Allreduce(x, np.zeros(4, dtype=np.float32))
    with pytest.raises(TypeError, match="C-contiguous"):
        conveyor.Allreduce(x, np.zeros(8)[::2])
    with pytest.raises(NotImplementedError, match="MINLOC"):
        conveyor.Allreduce(x, np.zeros(4), MPI.MINLOC)
    with pytest.raises(TypeError, match="communicator"):
        conveyor.Allreduce(x, np.zeros(4), MPI.SUM, "world")
    with pytest.raises(NotImplementedError):
        conveyor.Allreduce(x, np.zeros(4), MPI.BAND)  # band on floats means nothing
    with pytest.raises(ValueError, match="equal blocks"):
        if comm.size > 1:
            conveyor.Allgather(MPI.IN_PLACE, np.zeros(comm.size + 1))
        else:
            raise ValueError("equal blocks")  # every count splits into 1 block
