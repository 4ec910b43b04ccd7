# SPDX-License-Identifier: BSD-3-Clause
"""mpi4py as Conveyor's MPI front end: the check that both use one MPI library,
and mpi4py objects (communicators, ops, datatypes) as the addresses of their
MPI handles, the form the extension takes them in."""
import sys
from typing import Optional

from mpi4py import MPI

from . import _build_config


def _identity(version):
    """The first line of an MPI_Get_library_version string, e.g. "Open MPI
    v4.1.4, package: ..." or "MPICH Version: 4.0.2"."""
    lines = version.replace("\x00", "").strip().splitlines()
    return lines[0].strip() if lines else ""


def check_same_mpi():
    """Raises ImportError when mpi4py runs on another MPI library than the one
    Conveyor was built against: their handles differ (Open MPI's are pointers,
    MPICH's integers), so any call would crash or misbehave. Both sides report
    MPI_Get_library_version; the first lines must be equal."""
    built = _identity(_build_config.MPI_LIBRARY_VERSION)
    if not built:
        return  # the build could not probe its MPI (cross compilation): nothing to compare
    running = _identity(MPI.Get_library_version())
    if running != built:
        import mpi4py

        raise ImportError(
            "conveyor was built against one MPI library and mpi4py uses another:\n"
            f"  conveyor ({_build_config.MPI_FLAVOUR}): {built}\n"
            f"  mpi4py {mpi4py.__version__} ({mpi4py.__file__}): {running}\n"
            "Install an mpi4py built against conveyor's MPI (e.g. MPICC=<that MPI's mpicc> "
            "python3 -m pip install --no-binary mpi4py mpi4py), or rebuild conveyor with MPICC "
            "naming mpi4py's MPI.")


_addressof = MPI._addressof


_WORLD = MPI.COMM_WORLD
_WORLD_ADDRESS = _addressof(_WORLD)


def comm_or_world(comm: Optional[MPI.Comm]) -> MPI.Comm:
    """The communicator a call runs on: comm, or MPI.COMM_WORLD for None."""
    return MPI.COMM_WORLD if comm is None else comm


def comm_address(comm):
    """`comm` (None: COMM_WORLD) as the address of its MPI_Comm."""
    if comm is None or comm is _WORLD:
        return _WORLD_ADDRESS
    if not isinstance(comm, MPI.Comm):
        raise TypeError(f"comm must be an mpi4py communicator, got {type(comm).__name__}")
    return _addressof(comm)


# ---------------------------------------------------------------------------
# mpi4py's conventions: buffers given as `buf`, `[buf, datatype]` or
# `[buf, count, datatype]`, MPI.IN_PLACE, MPI.Op objects.
# ---------------------------------------------------------------------------
_handleof = MPI._handleof
_IN_PLACE = MPI.IN_PLACE
# Predefined reduction ops by handle (ints: cheap to look up on every call).
_OP_LIST = ("sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor")
_OP_NAMES = {_handleof(getattr(MPI, name.upper())): name for name in _OP_LIST}
# mpi4py's Op objects are unhashable: the predefined instances by identity first.
_OP_BY_ID = {id(getattr(MPI, name.upper())): name for name in _OP_LIST}


def _numpy_dtypes():
    """Predefined MPI datatypes by handle -> NumPy dtype, from mpi4py's own
    table of type codes (MPI._typedict); codes NumPy does not take are left out."""
    import numpy as np

    out = {}
    for code, datatype in MPI._typedict.items():
        try:
            out.setdefault(_handleof(datatype), np.dtype(code))
        except TypeError:
            pass
    return out


_DTYPES = _numpy_dtypes()


def op_name(op):
    """An MPI.Op (predefined) or one of Conveyor's op names, as the name."""
    name = _OP_BY_ID.get(id(op))
    if name is not None:
        return name
    if isinstance(op, str):
        return op
    if isinstance(op, MPI.Op):
        name = _OP_NAMES.get(_handleof(op))
        if name is not None:
            return name
        raise NotImplementedError("only MPI's predefined reduction ops (MPI.SUM, ..., MPI.LXOR) are supported, "
                                  "not MINLOC, MAXLOC, REPLACE or user-defined ops")
    raise TypeError(f"op must be an mpi4py MPI.Op or an op name, got {type(op).__name__}")


def buffer_of(spec, name):
    """mpi4py's buffer specification as an object the extension takes (any
    DLPack or buffer-protocol object): `buf`, `[buf, datatype]` or
    `[buf, count, datatype]`. A datatype that differs from the buffer's element
    type reinterprets its bytes (a NumPy view, no copy), as MPI would."""
    if not isinstance(spec, (list, tuple)):
        return spec
    import numpy as np

    if not spec or len(spec) > 3:
        raise ValueError(f"{name}: expected buf, [buf, datatype] or [buf, count, datatype]")
    buf = spec[0]
    datatype = spec[-1] if len(spec) > 1 and isinstance(spec[-1], MPI.Datatype) else None
    count = spec[1] if len(spec) == 3 else None
    if datatype is None and count is None:
        return buf
    array = np.asarray(buf)
    if datatype is not None:
        want = _DTYPES.get(_handleof(datatype))
        if want is None:
            raise TypeError(f"{name}: MPI datatype {datatype.Get_name()} is not a predefined element type")
        if array.dtype != want:
            array = array.reshape(-1).view(want)
    if count is not None:
        array = array.reshape(-1)[:count]
    return array


def register_mpi_style_objects(extension):
    """Tells the extension which objects are MPI.IN_PLACE, COMM_WORLD and the
    predefined ops, and how to read a communicator's handle: its try_buffer_*
    entries handle the common case of conveyor.Allreduce & co.
    (buffer-protocol buffers, those objects, any communicator) without this
    module, and return False for the rest."""
    extension.register_mpi_style_objects(_IN_PLACE, _WORLD, _WORLD_ADDRESS, MPI.Comm, _addressof,
                                         [(getattr(MPI, name.upper()), name) for name in _OP_LIST])
    _TORCH["extension"] = extension
    register_torch_objects()


# torch's real dtypes the extension reads a tensor of (complex ones go through
# DLPack, which refuses a conjugate view).
_TORCH_DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64")
_TORCH = {"extension": None, "done": False}


def register_torch_objects():
    """Tells the extension torch.Tensor and its dtypes, once torch is imported
    (without importing it: a program that never uses torch never pays for it):
    its try_buffer_* entries then read CPU tensors directly, as buffers."""
    torch = sys.modules.get("torch")
    if _TORCH["done"] or _TORCH["extension"] is None or torch is None or not hasattr(torch, "Tensor"):
        return
    _TORCH["done"] = True
    _TORCH["extension"].register_torch_objects(torch.Tensor, [(getattr(torch, n), n) for n in _TORCH_DTYPES])


def buffer_collective(function, sendbuf, recvbuf, op, comm):
    """Runs `function` (an extension entry of mpi4py's shape) on the converted
    arguments; MPI.IN_PLACE (or None) as sendbuf reads from recvbuf. The general
    path of conveyor.Allreduce & co.: buffer specifications, DLPack-only
    objects, op names, other communicators, and the wording of errors (the
    common case never reaches it: the extension's try_buffer_* entries)."""
    if not _TORCH["done"]:
        register_torch_objects()  # (torch imported after conveyor: its tensors take the fast path from the next call)
    if sendbuf is None or sendbuf is _IN_PLACE:
        send = None
    elif isinstance(sendbuf, (list, tuple)):
        send = buffer_of(sendbuf, "sendbuf")
    else:
        send = sendbuf
    recv = buffer_of(recvbuf, "recvbuf") if isinstance(recvbuf, (list, tuple)) else recvbuf
    name = _OP_BY_ID.get(id(op)) or op_name(op)
    address = _WORLD_ADDRESS if comm is None or comm is _WORLD else comm_address(comm)
    try:
        function(send, recv, name, address)
    except TypeError as e:
        if "incompatible function arguments" not in str(e):
            raise
        raise TypeError("sendbuf and recvbuf must be C-contiguous CPU buffers (DLPack or the buffer protocol), "
                        f"recvbuf writable; got {type(send).__name__} and {type(recv).__name__}") from None


_AGREED_ERRORS = {"ValueError": ValueError, "TypeError": TypeError, "NotImplementedError": NotImplementedError}


def agree(comm, prepare, must_match=None):
    """The collective contract for argument handling done in Python before a
    collective call: runs prepare() on every rank of `comm`, and if it raised on
    any rank, raises the first such error on every rank ("rank r: message"),
    instead of leaving the other ranks waiting in the collective. must_match:
    (description, value) that every rank must pass equal (e.g. the method),
    else ValueError everywhere. One allgather of a small object, only on
    communicators of more than one rank."""
    try:
        result, problem = prepare(), None
    except Exception as e:  # noqa: BLE001 (reported to every rank, then raised)
        result, problem = None, (type(e).__name__, str(e))
        if comm.Get_size() == 1:  # nothing to agree on; the same message form as below
            raise _AGREED_ERRORS.get(problem[0], RuntimeError)(f"rank 0: {problem[1]}") from e
    if comm.Get_size() > 1:
        shared = comm.allgather((problem, None if must_match is None else must_match[1]))
        for rank, (p, _) in enumerate(shared):
            if p is not None:
                raise _AGREED_ERRORS.get(p[0], RuntimeError)(f"rank {rank}: {p[1]}")
        values = [v for _, v in shared]
        if any(v != values[0] for v in values):
            raise ValueError(f"ranks passed different {must_match[0]}: {values}")
    return result
