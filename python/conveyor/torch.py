# SPDX-License-Identifier: BSD-3-Clause
"""``conveyor.torch``: Conveyor under ``torch.distributed``, for CPU tensors.

Importing it registers the backend ``"conveyor"``:

    import torch.distributed as dist
    import conveyor.torch
    dist.init_process_group("conveyor", init_method=..., rank=..., world_size=...)

Launched by ``mpiexec``/``mpirun``, each process a rank of MPI's COMM_WORLD. A
group (the default one or ``dist.new_group(ranks)``) maps its torch ranks to
MPI ranks through the group's store (each member writes its COMM_WORLD rank)
and runs on an MPI communicator of just its members (``Create_group``), in
torch's rank order, so torch's ranks need not equal MPI's.

Collectives: ``all_reduce`` (SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR, AVG;
PREMUL_SUM on torch 2, each rank's factor its own),
``reduce_scatter`` / ``_reduce_scatter_base``, ``all_gather`` /
``_all_gather_base``, ``all_gather_coalesced``, ``broadcast``,
``all_to_all_single`` (unequal splits too), ``all_to_all``, ``barrier``,
``reduce``, ``gather``, ``scatter``; float16, bfloat16, float32, float64 and
the integer types. The reductions are Conveyor's (``conveyor.Allreduce``,
``Reduce_scatter_block``: its algorithm selection, bfloat16 included, which
Gloo refuses; ``reduce`` is an allreduce whose non-root results are dropped);
all-gathers and all-to-all are Conveyor's; broadcast, gather, scatter and
barrier are MPI's own. Point to point (``send``, ``recv``, from any source
too) runs on a duplicate of the group's communicator, with a ``Work`` that
waits on the MPI request.

The contract: before each collective every rank's call is agreed (the
collective, dtype, element count, op, root) by one small allreduce, so a rank
that passes another shape or dtype, a CUDA tensor, or an op its dtype does
not support raises the same ``ValueError`` / ``TypeError`` on every rank
instead of leaving the others waiting.

Collectives' Work objects are complete when returned: a collective runs in
the calling thread (no progress thread spinning on a core the training
needs), so ``async_op=True`` gives a finished ``Work`` and DDP's buckets do
not overlap the backward pass; a point-to-point Work is its MPI request
until ``wait()``. For a model that keeps Gloo as its process group,
``allreduce_hook`` and ``bf16_allreduce_hook`` are DDP communication hooks
(``model.register_comm_hook(comm, conveyor.torch.allreduce_hook)``, comm an
mpi4py communicator or None for COMM_WORLD).

Torch versions: tested on Debian's 1.13, where the class is a Python
``ProcessGroup``, and on PyPI's 2.15, where it is a Python ``Backend`` that
torch wraps in a ProcessGroup of its own (and calls by torch 2's names:
``all_gather_single``, ``reduce_scatter_single``, ``all_to_all_single``, their
coalesced lists). torch 2.15's holder of a Python backend's Work forwards
``wait()`` and the future but not ``is_completed()`` (False, even after
``wait()``) nor the source rank of a receive from any source; it answers a
meta tensor's collective itself, and has no way to a Python backend's
``gather_single``.

Limits: CPU tensors only; PREMUL_SUM needs torch 2 (torch 1.13 does not give a
Python backend its factor: NotImplementedError).
"""
import inspect

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI
from torch._C._distributed_c10d import _create_work_from_future  # type: ignore[attr-defined]  # (not in its stub)

import conveyor
from . import _conveyor
from ._mpi import comm_address, register_torch_objects

__all__ = ["ProcessGroupConveyor", "allreduce_hook", "bf16_allreduce_hook", "BACKEND"]

#: The name ``dist.init_process_group`` takes.
BACKEND = "conveyor"

_RED = dist.ReduceOp.RedOpType
# (by integer code: comparing or hashing torch's pybind11 enums costs more than a
# small allreduce; docs/results.md, "torch.distributed's collectives")
_MPI_OPS = {int(_RED.SUM): MPI.SUM, int(_RED.AVG): MPI.SUM, int(_RED.PREMUL_SUM): MPI.SUM,
            int(_RED.PRODUCT): MPI.PROD, int(_RED.MIN): MPI.MIN, int(_RED.MAX): MPI.MAX, int(_RED.BAND): MPI.BAND, int(_RED.BOR): MPI.BOR, int(_RED.BXOR): MPI.BXOR}
_OP_NAMES = {int(v): v.name for v in (_RED.SUM, _RED.AVG, _RED.PRODUCT, _RED.MIN, _RED.MAX, _RED.BAND, _RED.BOR,
                                      _RED.BXOR, _RED.PREMUL_SUM)}
_BITWISE = {int(_RED.BAND), int(_RED.BOR), int(_RED.BXOR)}
_AVG, _PREMUL_SUM = int(_RED.AVG), int(_RED.PREMUL_SUM)
_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.uint8, torch.int16,
           torch.int32, torch.int64]
_DTYPE_CODE = {t: k for k, t in enumerate(_DTYPES)}
# The collectives, as the agreement names them.
_CALLS = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all", "barrier", "reduce", "gather",
          "scatter", "a coalesced call"]
_ALL_REDUCE, _REDUCE_SCATTER, _ALL_GATHER, _BROADCAST, _ALL_TO_ALL, _BARRIER, _REDUCE, _GATHER, _SCATTER, _LIST = \
    range(len(_CALLS))
_AGREED_ERRORS = {"TypeError": TypeError, "ValueError": ValueError}


def _op_code(opts):
    """The integer code of an options object's ReduceOp."""
    op = opts.reduceOp
    return int(op.op) if hasattr(op, "op") else int(op)


def _premul_factor(opts):
    """PREMUL_SUM's factor (this rank's: each rank scales its own tensor), a
    float: torch 2 shows it as ``reduceOp.factor`` (a number or a one-element
    tensor, as torch checks); torch 1.13 keeps it from a Python backend."""
    try:
        return float(opts.reduceOp.factor)
    except AttributeError:
        raise NotImplementedError(f"conveyor.torch: PREMUL_SUM needs torch 2 (torch {torch.__version__} does not "
                                  "give a Python backend its factor); scale the tensor and use SUM") from None


def _reduction(opts, default):
    """An options object's ReduceOp as (integer code, PREMUL_SUM's factor or
    None); a factor torch 1.13 keeps is raised later, by the agreement, on
    every rank."""
    opts = default() if opts is None else opts
    code = _op_code(opts)
    if code != _PREMUL_SUM:
        return code, None
    try:
        return code, _premul_factor(opts)
    except NotImplementedError as e:
        return code, e


def _done(result):
    """A Work that has already completed with `result`."""
    future = torch.futures.Future()
    future.set_result(result)
    return _create_work_from_future(future)


def _checked(tensor, name="tensor"):
    """The tensor, if Conveyor can serve it (else the error the contract shares)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"conveyor.torch: {name} must be a torch.Tensor, got {type(tensor).__name__}")
    if not tensor.is_cpu:
        raise ValueError(f"conveyor.torch: {name} is on {tensor.device}; the conveyor backend serves CPU tensors only")
    if tensor.dtype not in _DTYPE_CODE:
        raise TypeError(f"conveyor.torch: {name} has dtype {tensor.dtype}; supported: "
                        + ", ".join(str(t) for t in _DTYPES))
    return tensor


def _op_checked(code, dtype, factor=None):
    """`code` (a ReduceOp's), if it applies to this dtype; `factor`, PREMUL_SUM's
    (or the exception that reading it raised)."""
    if isinstance(factor, Exception):
        raise factor
    if code not in _MPI_OPS:
        raise ValueError(f"conveyor.torch: unknown ReduceOp {code}")
    if code in _BITWISE and dtype.is_floating_point:
        raise TypeError(f"conveyor.torch: {_OP_NAMES[code]} needs an integer dtype, got {dtype}")
    if code in (_AVG, _PREMUL_SUM) and not dtype.is_floating_point:
        raise TypeError(f"conveyor.torch: {_OP_NAMES[code]} needs a floating dtype, got {dtype}")
    return code


def _reduce_checked(tensor, code, factor=None):
    _op_checked(code, _checked(tensor).dtype, factor)


def _buffer(tensor):
    """A contiguous tensor as what conveyor's mpi4py-style calls take: the
    tensor itself, which the extension reads directly (register_torch_objects)."""
    return tensor.detach() if tensor.requires_grad else tensor


def _bytes(tensor):
    """A contiguous tensor's bytes as a NumPy uint8 view (data movement only)."""
    return tensor.detach().reshape(-1).view(torch.uint8).numpy()


register_torch_objects()  # (torch is imported: its CPU tensors reach the extension without DLPack)

_BYTE = MPI._addressof(MPI.BYTE)


def _byte_parts(counts, displacements):
    """An all-to-all side's parts as the extension takes them: (bytes, byte offset, MPI_BYTE)."""
    return [(c, d, _BYTE) for c, d in zip(counts, displacements)]


def _member_comm(store, rank, size):
    """An MPI communicator of the group's members in torch's rank order: each
    member writes its COMM_WORLD rank to the group's store and reads the others'."""
    world = MPI.COMM_WORLD
    if size == 1:
        return MPI.COMM_SELF.Dup()
    store.set(f"conveyor/mpi_rank/{rank}", str(world.Get_rank()))
    ranks = [int(store.get(f"conveyor/mpi_rank/{r}")) for r in range(size)]
    group = world.Get_group().Incl(ranks)
    try:
        return world.Create_group(group)
    finally:
        group.Free()


# torch 2 wraps a backend (its C++ Backend, which a Python class may extend) in a
# ProcessGroup of its own, which then also names, splits and destroys the group;
# torch 1.13 has no such class and takes a Python ProcessGroup itself.
_BASE = getattr(torch._C._distributed_c10d, "Backend", dist.ProcessGroup)
# The torch 2 backends until their shutdown(): torch may keep only a backend's C++
# side (TORCH_DISTRIBUTED_DEBUG=DETAIL's wrapper does), and its Python methods
# answer only while the Python object lives.
_LIVE: dict = {}


class ProcessGroupConveyor(_BASE):  # type: ignore[misc,valid-type]
    """The ``"conveyor"`` process group (torch 1.13) or backend (torch 2):
    torch's collectives on an MPI communicator (``comm``) through Conveyor's
    engines. Made by ``dist.init_process_group("conveyor")`` /
    ``dist.new_group(..., backend="conveyor")``."""

    def __init__(self, rank, size, comm):
        super().__init__(rank, size)
        if comm.Get_size() != size or comm.Get_rank() != rank:
            raise ValueError(f"conveyor.torch: the MPI communicator has rank {comm.Get_rank()} of {comm.Get_size()}, "
                             f"torch's group rank {rank} of {size}")
        self.comm, self._size = comm, size
        # (point-to-point on a communicator of its own: a pending send cannot match a
        # message of the collectives' engines on `comm`)
        self._p2p = comm.Dup()
        self._signature = np.zeros(11, dtype=np.int64)
        self._sequence = 0
        if _BASE is not dist.ProcessGroup:
            _LIVE[id(self)] = self

    # (torch 2's checks under TORCH_DISTRIBUTED_DEBUG=DETAIL compare these over the
    # ranks: the count of collectives this group agreed)
    def _set_sequence_number_for_group(self):
        self._sequence = 0

    def _get_sequence_number_for_group(self):
        return self._sequence

    def shutdown(self):
        """torch 2's end of the backend (destroy_process_group): it may be freed now."""
        _LIVE.pop(id(self), None)

    def getBackendName(self):  # noqa: N802 (torch's name)
        return BACKEND

    # (torch 2's Backend asks a Python subclass for these by name and, finding its
    # own properties, recurses: plain values here; torch 1.13 does not read them)
    supports_coalescing = supports_splitting = supports_shrinking = supports_reconfigure = False
    supports_window = _supports_time_estimate = False

    # --- the contract ------------------------------------------------------
    def _agree(self, call, check, args=(), dtype=None, count=0, op=0, root=0):
        """Runs check(*args) here and agrees the call with every rank (one
        allreduce of 11 integers: a problem flag, then the collective, dtype,
        count, op and root with their negatives under MAX): raises the first
        failing rank's error, or a mismatch, on every rank; else check's result."""
        problem = None
        self._sequence += 1
        try:
            out = check(*args)
        except (TypeError, ValueError, NotImplementedError) as e:
            problem, out = e, None
        if self._size == 1:
            if problem is not None:
                raise type(problem)(f"rank 0: {problem}")
            return out
        fields = (call, -1 if dtype is None else _DTYPE_CODE.get(dtype, -1), count, op, root)
        sig = self._signature
        sig[0] = 0 if problem is None else 1
        sig[1:11] = fields + (-call, -fields[1], -count, -op, -root)
        conveyor.Allreduce(MPI.IN_PLACE, sig, MPI.MAX, self.comm)
        v = sig.tolist()
        if v[0]:
            self._raise_agreed(problem)
        if v[1:6] != [-x for x in v[6:11]]:
            self._raise_mismatch(call, fields, v)
        return out

    def _raise_agreed(self, problem):
        """The first failing rank's error, raised on every rank."""
        bad = self.comm.allreduce(self.comm.Get_rank() if problem is not None else self._size, op=MPI.MIN)
        kind, text = self.comm.bcast((type(problem).__name__, str(problem)) if problem is not None else None,
                                     root=bad)
        raise _AGREED_ERRORS.get(kind, NotImplementedError)(f"rank {bad}: {text}")

    def _raise_mismatch(self, call, fields, v):
        """ValueError on every rank, naming what differs and every rank's value."""
        names = ["collective", "dtype", "element count", "op", "root"]
        if call == _LIST:  # (_agree_list's fields)
            names[2:4] = ["number of tensor", "collective"]
        for k, name in enumerate(names):
            if v[1 + k] != -v[6 + k]:
                values = self.comm.allgather(fields[k])
                if k == 0 or (call == _LIST and k == 3):
                    values = [_CALLS[x] for x in values]
                elif k == 1:
                    values = [str(_DTYPES[x]) if 0 <= x < len(_DTYPES) else "?" for x in values]
                elif k == 3:
                    values = [_OP_NAMES.get(x, x) for x in values]
                raise ValueError(f"conveyor.torch: ranks passed different {name}s to {_CALLS[call]}: {values}")

    def _agree_list(self, call, tensors):
        """Agrees the number of tensors a list form (a coalesced call) takes, so
        that a rank with fewer cannot leave the others waiting in the next one."""
        self._agree(_LIST, lambda: None, (), None, len(tensors), call)

    # --- collectives -------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        code, factor = _reduction(opts, dist.AllreduceOptions)
        if len(tensors) != 1:
            self._agree_list(_ALL_REDUCE, tensors)
        for t in tensors:
            self._agree(_ALL_REDUCE, _reduce_checked, (t, code, factor), t.dtype, t.numel(), code)
            self._reduce_in_place(t, code, factor)
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        opts = dist.AllreduceCoalescedOptions() if opts is None else opts
        return self.allreduce(tensors, opts)

    def _reduce_in_place(self, t, code, factor=None):
        work = t if t.is_contiguous() else t.contiguous()
        if code == _PREMUL_SUM:
            work.mul_(factor)
        if self._size > 1 and work.numel():
            conveyor.Allreduce(MPI.IN_PLACE, _buffer(work), _MPI_OPS[code], self.comm)
        if code == _AVG:
            work.div_(self._size)
        if work is not t:
            t.copy_(work)

    def broadcast(self, tensors, opts=None):
        opts = dist.BroadcastOptions() if opts is None else opts
        for t in tensors:
            def check():
                _checked(t)
                if not 0 <= opts.rootRank < self._size:
                    raise ValueError(f"conveyor.torch: broadcast root {opts.rootRank} is not a rank of the group")
            self._agree(_BROADCAST, check, (), t.dtype, t.numel(), 0, opts.rootRank)
            work = t if t.is_contiguous() else t.contiguous()
            if self._size > 1 and work.numel():
                self.comm.Bcast(_bytes(work), root=opts.rootRank)
            if work is not t:
                t.copy_(work)
        return _done(tensors)

    def _allgather_base(self, output, input, opts=None):  # noqa: A002 (torch's name)
        def check():
            _checked(input, "input")
            _checked(output, "output")
            if output.dtype != input.dtype or output.numel() != input.numel() * self._size:
                raise ValueError(f"conveyor.torch: all_gather's output must hold {self._size} inputs of "
                                 f"{input.numel()} {input.dtype}, got {output.numel()} {output.dtype}")
        self._agree(_ALL_GATHER, check, (), input.dtype, input.numel())
        out = output if output.is_contiguous() else torch.empty_like(output, memory_format=torch.contiguous_format)
        conveyor.Allgather(_bytes(input.contiguous()), _bytes(out), self.comm)
        if out is not output:
            output.copy_(out)
        return _done([output])

    def _per_rank_checked(self, call, one, one_name, many, many_name):
        """The list forms' arguments: `one` tensor and `many`, one per rank, each
        of its dtype and element count."""
        _checked(one, one_name)
        if len(many) != self._size:
            raise ValueError(f"conveyor.torch: {call} needs {self._size} {many_name} tensors, got {len(many)}")
        for t in many:
            _checked(t, many_name)
            if t.dtype != one.dtype or t.numel() != one.numel():
                raise ValueError(f"conveyor.torch: {call}'s {many_name}s must match the {one_name} "
                                 f"({one.numel()} {one.dtype}), got {t.numel()} {t.dtype}")

    def allgather(self, output_tensors, input_tensors, opts=None):
        for outputs, t in zip(output_tensors, input_tensors):
            self._agree(_ALL_GATHER, self._per_rank_checked, ("all_gather", t, "input", outputs, "output"), t.dtype,
                        t.numel())
            flat = torch.empty((self._size, t.numel()), dtype=t.dtype)
            conveyor.Allgather(_bytes(t.contiguous()), _bytes(flat), self.comm)
            for o, row in zip(outputs, flat):
                o.copy_(row.view(o.shape))
        return _done(output_tensors)

    def _reduce_scatter_base(self, output, input, opts=None):  # noqa: A002 (torch's name)
        code, factor = _reduction(opts, dist.ReduceScatterOptions)

        def check():
            _checked(input, "input")
            _checked(output, "output")
            if output.dtype != input.dtype or input.numel() != output.numel() * self._size:
                raise ValueError(f"conveyor.torch: reduce_scatter's input must hold {self._size} outputs "
                                 f"of {output.numel()} {output.dtype}, got {input.numel()} {input.dtype}")
            _op_checked(code, input.dtype, factor)
        self._agree(_REDUCE_SCATTER, check, (), output.dtype, output.numel(), code)
        self._reduce_scatter(output, input.contiguous(), code, factor)
        return _done([output])

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        code, factor = _reduction(opts, dist.ReduceScatterOptions)
        for out, inputs in zip(output_tensors, input_tensors):
            def check():
                self._per_rank_checked("reduce_scatter", out, "output", inputs, "input")
                _op_checked(code, out.dtype, factor)
            self._agree(_REDUCE_SCATTER, check, (), out.dtype, out.numel(), code)
            self._reduce_scatter(out, torch.cat([t.reshape(-1) for t in inputs]), code, factor)
        return _done(output_tensors)

    def _reduce_scatter(self, output, flat_input, code, factor=None):
        out = output if output.is_contiguous() else torch.empty_like(output, memory_format=torch.contiguous_format)
        if code == _PREMUL_SUM:  # (a scaled copy: the input is the caller's)
            flat_input = flat_input * factor
        if out.numel():
            conveyor.Reduce_scatter_block(_buffer(flat_input), _buffer(out), _MPI_OPS[code], self.comm)
        if code == _AVG:
            out.div_(self._size)
        if out is not output:
            output.copy_(out)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):  # noqa: A002
        size = self._size

        def counts(tensor, splits, name):
            rows = tensor.shape[0] if tensor.dim() else 1
            if not splits:
                if rows % size:
                    raise ValueError(f"conveyor.torch: all_to_all_single's {name} has {rows} rows, not a multiple of "
                                     f"the group's {size} ranks; pass split sizes")
                splits = [rows // size] * size
            if len(splits) != size or sum(splits) != rows or min(splits) < 0:
                raise ValueError(f"conveyor.torch: all_to_all_single's {name} split sizes {list(splits)} must be "
                                 f"{size} counts summing to its {rows} rows")
            row_bytes = tensor.element_size() * (tensor[0].numel() if tensor.dim() and rows else 1)
            c = [int(s) * row_bytes for s in splits]
            return c, [int(x) for x in np.cumsum([0] + c[:-1])]

        equal = not input_split_sizes and not output_split_sizes

        def check():
            _checked(input, "input")
            _checked(output, "output")
            if output.dtype != input.dtype:
                raise ValueError(f"conveyor.torch: all_to_all_single's output is {output.dtype}, its input "
                                 f"{input.dtype}")
            if equal:
                if output.numel() != input.numel() or input.numel() % size:
                    raise ValueError(f"conveyor.torch: all_to_all_single without split sizes needs an output of the "
                                     f"input's {input.numel()} elements, a multiple of the group's {size} ranks; "
                                     f"got {output.numel()}")
                return None, None
            return counts(input, input_split_sizes, "input"), counts(output, output_split_sizes, "output")
        # (equal parts: the element count is agreed with the dtype, so every part matches its peer's)
        sends, receives = self._agree(_ALL_TO_ALL, check, (), input.dtype, input.numel() if equal else -1)
        out = output if output.is_contiguous() else torch.empty_like(output, memory_format=torch.contiguous_format)
        src = input.contiguous()
        if equal:
            part = src.numel() * src.element_size() // size
            sends = receives = ([part] * size, [part * j for j in range(size)])
        # The engine's all-to-all on the tensors' bytes, its parts given as they are (conveyor.Alltoall's
        # parsing of buffer specifications is most of a small call's time); validate=True for unequal
        # splits: the engine checks that what r sends to j is what j expects from r, on every rank.
        _conveyor.alltoallw(src.data_ptr(), src.numel() * src.element_size(), _byte_parts(*sends), out.data_ptr(),
                            out.numel() * out.element_size(), _byte_parts(*receives), comm_address(self.comm),
                            not equal)
        if out is not output:
            output.copy_(out)
        return _done([output])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        flat_in = torch.cat([t.reshape(-1) for t in input_tensors]) if input_tensors else torch.empty(0)
        flat_out = torch.empty(sum(t.numel() for t in output_tensors), dtype=flat_in.dtype)
        self.alltoall_base(flat_out, flat_in, [t.numel() for t in output_tensors],
                           [t.numel() for t in input_tensors], opts)
        at = 0
        for t in output_tensors:
            t.copy_(flat_out[at:at + t.numel()].view(t.shape))
            at += t.numel()
        return _done(output_tensors)

    def allgather_coalesced(self, output_lists, input_tensors, opts=None):
        """output_lists[r][i] receives rank r's input_tensors[i] (one gather of their bytes)."""
        def check():
            for t in input_tensors:
                _checked(t, "input")
            if len(output_lists) != self._size:
                raise ValueError(f"conveyor.torch: all_gather_coalesced needs {self._size} output lists, "
                                 f"got {len(output_lists)}")
            for outputs in output_lists:
                if [(o.dtype, o.numel()) for o in outputs] != [(t.dtype, t.numel()) for t in input_tensors]:
                    raise ValueError("conveyor.torch: all_gather_coalesced's output lists must each match the "
                                     "inputs' dtypes and element counts")
        mine = sum(t.numel() * t.element_size() for t in input_tensors if isinstance(t, torch.Tensor))
        self._agree(_ALL_GATHER, check, (), None, mine)  # (the bytes agreed: every rank's outputs match its inputs)
        if mine == 0:  # (every output is empty: its input was)
            return _done(output_lists)
        flat = torch.cat([t.contiguous().reshape(-1).view(torch.uint8) for t in input_tensors])
        everyone = torch.empty((self._size, mine), dtype=torch.uint8)
        conveyor.Allgather(flat.numpy(), everyone.numpy(), self.comm)
        for outputs, row in zip(output_lists, everyone):
            at = 0
            for o in outputs:
                k = o.numel() * o.element_size()
                o.copy_(row[at:at + k].view(o.dtype).view(o.shape))
                at += k
        return _done(output_lists)

    # --- torch 2's names (2.15 calls the single-tensor forms all_gather_single, ...;
    # 2.0-2.14 the underscored ones above) and its coalesced lists ------------
    all_gather_single = _allgather_base
    reduce_scatter_single = _reduce_scatter_base
    all_to_all_single = alltoall_base

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        """outputs[i] receives every rank's inputs[i], one all-gather per pair."""
        self._agree_list(_ALL_GATHER, inputs)
        for output, input in zip(outputs, inputs):  # noqa: A001 (torch's name)
            self._allgather_base(output, input, opts)
        return _done(outputs)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        """outputs[i] receives its part of inputs[i] reduced, one reduce-scatter per pair."""
        self._agree_list(_REDUCE_SCATTER, inputs)
        for output, input in zip(outputs, inputs):  # noqa: A001 (torch's name)
            self._reduce_scatter_base(output, input, opts)
        return _done(outputs)

    allgather_into_tensor_coalesced = all_gather_single_coalesced
    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    def start_coalescing(self):
        """torch 2's coalescing manager, given a device: every call inside runs
        when made (this group's Works complete on return), so nothing to start."""

    def end_coalescing(self):
        return _done(None)

    def reduce(self, tensors, opts=None):
        """The reduction to opts.rootRank: Conveyor's allreduce (its selection and
        dtypes), into the tensor on the root and into a copy elsewhere (torch
        leaves the other ranks' tensors as they were)."""
        opts = dist.ReduceOptions() if opts is None else opts
        code, factor = _reduction(opts, dist.ReduceOptions)
        for t in tensors:
            def check():
                _reduce_checked(t, code, factor)
                self._root_checked(opts.rootRank)
            self._agree(_REDUCE, check, (), t.dtype, t.numel(), code, opts.rootRank)
            self._reduce_in_place(t if self.comm.Get_rank() == opts.rootRank else t.clone(), code, factor)
        return _done(tensors)

    def gather(self, output_tensors, input_tensors, opts=None):
        """Every rank's input_tensors[0] into output_tensors[0][r] on opts.rootRank
        (MPI's Gather of their bytes)."""
        opts = dist.GatherOptions() if opts is None else opts
        root = opts.rootRank
        t = self._rooted(_GATHER, root, input_tensors, "input", output_tensors, "output")
        here = self.comm.Get_rank() == root
        flat = torch.empty((self._size, t.numel()), dtype=t.dtype) if here else None
        if t.numel():
            self.comm.Gather(_bytes(t.contiguous()), _bytes(flat) if here else None, root=root)
        if here:
            for o, row in zip(output_tensors[0], flat):
                o.copy_(row.view(o.shape))
        return _done(output_tensors)

    def scatter(self, output_tensors, input_tensors, opts=None):
        """input_tensors[0][r] on opts.rootRank into rank r's output_tensors[0]
        (MPI's Scatter of their bytes)."""
        opts = dist.ScatterOptions() if opts is None else opts
        root = opts.rootRank
        t = self._rooted(_SCATTER, root, output_tensors, "output", input_tensors, "input")
        here = self.comm.Get_rank() == root
        flat = torch.cat([i.reshape(-1) for i in input_tensors[0]]) if here else None
        out = t if t.is_contiguous() else torch.empty_like(t, memory_format=torch.contiguous_format)
        if t.numel():
            self.comm.Scatter(_bytes(flat) if here else None, _bytes(out), root=root)
        if out is not t:
            t.copy_(out)
        return _done(output_tensors)

    def _rooted(self, call, root, ones, one_name, lists, many_name):
        """gather's and scatter's arguments, agreed: every rank's one tensor
        (`ones`, a list of one) and the root's list of one per rank (`lists`, a
        list of one list; empty elsewhere). Returns the rank's tensor."""
        name = _CALLS[call]
        t = ones[0] if len(ones) == 1 else None

        def check():
            if t is None:
                raise ValueError(f"conveyor.torch: {name} takes one {one_name} tensor, got {len(ones)}")
            self._root_checked(root)
            if self.comm.Get_rank() == root:
                if len(lists) != 1:
                    raise ValueError(f"conveyor.torch: {name}'s root takes one list of {many_name} tensors")
                self._per_rank_checked(name, t, one_name, lists[0], many_name)
            elif lists and any(len(x) for x in lists):
                raise ValueError(f"conveyor.torch: {name}'s {many_name}s belong on the root ({root}) alone")
            else:
                _checked(t, one_name)
        self._agree(call, check, (), None if t is None else t.dtype, 0 if t is None else t.numel(), 0, root)
        return t

    def _root_checked(self, root):
        if not 0 <= root < self._size:
            raise ValueError(f"conveyor.torch: root {root} is not a rank of the group of {self._size}")

    # --- point to point (not agreed: one rank's call; errors are its own) ---
    def send(self, tensors, dst, tag=0):
        t = self._p2p_checked(tensors, dst, tag, "send")
        t = t.contiguous()
        return _RequestWork(self._p2p.Isend(_bytes(t), dest=dst, tag=tag), t)

    def recv(self, tensors, src, tag=0):
        t = self._p2p_checked(tensors, src, tag, "recv")
        return self._receive(t, src, tag)

    def recv_anysource(self, tensors, tag=0):
        t = self._p2p_checked(tensors, None, tag, "recv")
        return self._receive(t, MPI.ANY_SOURCE, tag)

    def _receive(self, t, src, tag):
        out = t if t.is_contiguous() else torch.empty_like(t, memory_format=torch.contiguous_format)
        return _RequestWork(self._p2p.Irecv(_bytes(out), source=src, tag=tag), out, t)

    def _p2p_checked(self, tensors, peer, tag, call):
        if len(tensors) != 1:
            raise ValueError(f"conveyor.torch: {call} takes one tensor, got {len(tensors)}")
        if peer is not None and (not 0 <= peer < self._size or peer == self.comm.Get_rank()):
            raise ValueError(f"conveyor.torch: {call}'s peer {peer} is not another rank of the group of {self._size}")
        largest = MPI.COMM_WORLD.Get_attr(MPI.TAG_UB)
        if not 0 <= tag <= largest:
            raise ValueError(f"conveyor.torch: {call}'s tag {tag} is outside MPI's 0..{largest}")
        return _checked(tensors[0])

    def barrier(self, opts=None):
        self._agree(_BARRIER, lambda: None)
        return _done(None)


class _RequestWork(dist.Work):
    """A point-to-point operation's Work: an MPI request, waited on (in the
    calling thread) by wait(); a receive checks it got the tensor's bytes and,
    for a non-contiguous tensor, copies them in."""

    def __init__(self, request, buffer, target=None):
        super().__init__()
        self._request, self._buffer, self._target = request, buffer, target
        self._status, self._source, self._done = MPI.Status(), -1, False

    def _finish(self):
        self._done, self._source = True, self._status.Get_source()
        if self._target is None:  # (a send)
            return
        got, want = self._status.Get_count(MPI.BYTE), self._buffer.numel() * self._buffer.element_size()
        if got != want:
            raise ValueError(f"conveyor.torch: recv expected {want} bytes ({self._buffer.numel()} "
                             f"{self._buffer.dtype}) from rank {self._source}, got {got}")
        if self._buffer is not self._target:
            self._target.copy_(self._buffer)

    def wait(self, timeout=None):
        if not self._done:
            self._request.Wait(self._status)
            self._finish()
        return True

    def is_completed(self):
        if not self._done and self._request.Test(self._status):
            self._finish()
        return self._done

    def is_success(self):
        return self.is_completed()

    def source_rank(self):
        self.wait()
        return self._source

    _source_rank = source_rank

    def result(self):
        self.wait()
        return [self._target if self._target is not None else self._buffer]


def _create(store, rank, size, timeout):
    world = MPI.COMM_WORLD.Get_size()
    if size > world:
        raise RuntimeError(f"conveyor.torch: the group has {size} ranks but MPI's COMM_WORLD has {world}: launch the "
                           "processes with mpiexec / mpirun (each torch rank an MPI rank); torchrun and "
                           "multiprocessing start processes MPI does not know")
    return ProcessGroupConveyor(rank, size, _member_comm(store, rank, size))


def allreduce_hook(comm, bucket):
    """DDP communication hook: the bucket's gradients averaged over `comm` (an
    mpi4py communicator, None: COMM_WORLD) by Conveyor's allreduce, for a model
    whose process group is another backend (Gloo). Register with
    ``model.register_comm_hook(comm, conveyor.torch.allreduce_hook)``."""
    comm = MPI.COMM_WORLD if comm is None else comm
    buffer = bucket.buffer()
    _checked(buffer, "the bucket")
    if comm.Get_size() > 1:
        conveyor.Allreduce(MPI.IN_PLACE, _buffer(buffer), MPI.SUM, comm)
        buffer.div_(comm.Get_size())
    future = torch.futures.Future()
    future.set_result(buffer)
    return future


def bf16_allreduce_hook(comm, bucket):
    """As allreduce_hook, with the bucket sent as bfloat16 (half the bytes):
    divided by the ranks, rounded to bfloat16, summed, written back in the
    bucket's dtype (the steps of PyTorch's bf16_compress_hook, whose name DDP
    reserves for NCCL)."""
    comm = MPI.COMM_WORLD if comm is None else comm
    buffer = bucket.buffer()
    _checked(buffer, "the bucket")
    compressed = buffer.to(torch.bfloat16).div_(comm.Get_size())
    if comm.Get_size() > 1:
        conveyor.Allreduce(MPI.IN_PLACE, compressed, MPI.SUM, comm)
    buffer.copy_(compressed)
    future = torch.futures.Future()
    future.set_result(buffer)
    return future


if BACKEND.upper() not in dist.Backend._plugins:  # (a second import of the module)
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:  # (torch 2)
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
    else:
        dist.Backend.register_backend(BACKEND, _create)
