# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.torch: the "conveyor" torch.distributed backend and the DDP hooks,
against Gloo (PyTorch's CPU backend, in the same processes) and against values
computed from what every rank passed: every collective, dtype and ReduceOp it
serves, empty, non-contiguous and large tensors, unequal all-to-all splits,
groups of a subset of the ranks (each call made twice), bad arguments on one
rank at a time (every rank raises, and the group still works after), and a
DDP training run: the same losses as with Gloo, bitwise the same parameters on
every rank."""
import os
import shutil
import tempfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # (scripts/test installs Debian's python3-torch)
dist = pytest.importorskip("torch.distributed")
import conveyor.torch  # noqa: E402  (registers the backend)

RED = dist.ReduceOp
# torch 2 shows a Python backend PREMUL_SUM's factor and calls the collectives by
# its own names (scripts/test runs this file on Debian's 1.13 and on PyPI's torch 2).
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


@pytest.fixture(scope="module", autouse=True)
def process_group(comm):
    """The default group on the conveyor backend (a file store in a directory
    rank 0 makes), and a Gloo group of every rank beside it; torn down after."""
    where = comm.bcast(tempfile.mkdtemp(prefix="conveyor-torch-") if comm.rank == 0 else None)
    dist.init_process_group("conveyor", init_method="file://" + os.path.join(where, "store"), rank=comm.rank,
                            world_size=comm.size)
    gloo = dist.new_group(list(range(comm.size)), backend="gloo")
    yield gloo
    dist.destroy_process_group()
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def gloo(process_group):
    return process_group


def mine(comm, n, dtype, salt=0):
    """This rank's tensor: small integers (exact in every dtype's sums)."""
    return ((torch.arange(n) * 3 + 5 * comm.rank + salt) % 7 + 1).to(dtype)


def of_rank(r, n, dtype, salt=0):
    return ((torch.arange(n) * 3 + 5 * r + salt) % 7 + 1).to(dtype)


FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


def test_backend_name_and_the_group(comm):
    assert dist.get_backend() == "conveyor"
    assert dist.get_rank() == comm.rank and dist.get_world_size() == comm.size


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("n", [0, 1, 1000])
def test_all_reduce_sum_max_min_product(comm, dtype, n):
    everyone = [of_rank(r, n, torch.float64) for r in range(comm.size)]
    for op, reference in [(RED.SUM, sum), (RED.MAX, lambda ts: torch.stack(ts).max(0).values),
                          (RED.MIN, lambda ts: torch.stack(ts).min(0).values)]:
        t = mine(comm, n, dtype)
        dist.all_reduce(t, op=op)
        want = reference(everyone) if n else torch.empty(0)
        if dtype in (torch.int8, torch.uint8) and op == RED.SUM:
            want = want.to(torch.int64).to(dtype)  # (wraps as the dtype does)
        assert torch.equal(t, want.to(dtype)), (op, t, want)
    if n and comm.size <= 3 and dtype not in (torch.int8, torch.uint8, torch.bfloat16):  # (7^3 stays exact)
        t = mine(comm, n, dtype)
        dist.all_reduce(t, op=RED.PRODUCT)
        want = torch.stack(everyone).prod(0)
        assert torch.equal(t, want.to(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_all_reduce_avg(comm, dtype):
    t = mine(comm, 64, dtype)
    dist.all_reduce(t, op=RED.AVG)
    want = sum(of_rank(r, 64, torch.float64) for r in range(comm.size)) / comm.size
    assert torch.allclose(t.double(), want, rtol=1e-2 if dtype == torch.bfloat16 else 1e-6)


@pytest.mark.parametrize("dtype", INTS)
def test_all_reduce_bitwise(comm, dtype):
    for salt, (op, fold) in enumerate([(RED.BAND, np.bitwise_and), (RED.BOR, np.bitwise_or),
                                       (RED.BXOR, np.bitwise_xor)]):
        t = mine(comm, 33, dtype, salt)
        dist.all_reduce(t, op=op)
        want = of_rank(0, 33, dtype, salt).numpy()
        for r in range(1, comm.size):
            want = fold(want, of_rank(r, 33, dtype, salt).numpy())
        assert np.array_equal(t.numpy(), want)


def test_all_reduce_against_gloo_on_the_same_tensors(comm, gloo):
    for n in (1, 1000, 1 << 20):
        a = torch.randn(n, generator=torch.Generator().manual_seed(comm.rank))
        b = a.clone()
        dist.all_reduce(a)
        dist.all_reduce(b, group=gloo)
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-6)


def test_non_contiguous_and_async(comm):
    base = mine(comm, 12, torch.float64).reshape(3, 4)
    t = base.t()  # (a view, not contiguous)
    assert not t.is_contiguous()
    dist.all_reduce(t)
    want = sum(of_rank(r, 12, torch.float64) for r in range(comm.size)).reshape(3, 4).t()
    assert torch.equal(t, want) and torch.equal(base.t(), want)  # written through the view
    work = dist.all_reduce(torch.ones(3), async_op=True)
    if TORCH2:  # (torch 2's holder of a Python backend's Work answers is_completed() from its own state,
        # never set: its future and wait() are the backend's; the backend's own Work says it is complete)
        assert work.wait() and work.get_future().done()
        work = dist.group.WORLD._get_backend(torch.device("cpu")).allreduce([torch.ones(3)])
    assert work.wait() and work.is_completed()
    fut = dist.all_reduce(torch.ones(3), async_op=True).get_future()
    assert torch.equal(fut.wait()[0], torch.full((3,), float(comm.size)))


@pytest.mark.parametrize("n", [0, 5])
def test_all_gather_both_forms(comm, gloo, n):
    outs = [torch.full((n,), -1.0) for _ in range(comm.size)]
    dist.all_gather(outs, mine(comm, n, torch.float32))
    for r in range(comm.size):
        assert torch.equal(outs[r], of_rank(r, n, torch.float32))
    flat = torch.empty(comm.size * n, dtype=torch.bfloat16)
    dist._all_gather_base(flat, mine(comm, n, torch.bfloat16))
    assert torch.equal(flat, torch.cat([of_rank(r, n, torch.bfloat16) for r in range(comm.size)]))
    if n:  # (Gloo 1.13 dies of SIGFPE on an empty all_gather on 2+ ranks)
        via_gloo = [torch.empty(n) for _ in range(comm.size)]
        dist.all_gather(via_gloo, mine(comm, n, torch.float32), group=gloo)
        assert all(torch.equal(a, b) for a, b in zip(outs, via_gloo))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16])
def test_reduce_scatter_both_forms(comm, dtype):
    n = 6
    inputs = [mine(comm, n, dtype, salt=j) for j in range(comm.size)]
    out = torch.empty(n, dtype=dtype)
    dist.reduce_scatter(out, inputs)
    want = sum(of_rank(r, n, torch.float64, salt=comm.rank) for r in range(comm.size))
    assert torch.equal(out, want.to(dtype))
    out2 = torch.empty(n, dtype=dtype)
    dist._reduce_scatter_base(out2, torch.cat(inputs), op=RED.MAX)
    want_max = torch.stack([of_rank(r, n, torch.float64, salt=comm.rank) for r in range(comm.size)]).max(0).values
    assert torch.equal(out2, want_max.to(dtype))


def test_broadcast_from_every_root(comm, gloo):
    for root in range(comm.size):
        t = mine(comm, 9, torch.float64) if comm.rank == root else torch.zeros(9, dtype=torch.float64)
        dist.broadcast(t, src=root)
        assert torch.equal(t, of_rank(root, 9, torch.float64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_reduce_to_every_root(comm, gloo, dtype):
    for root in range(comm.size):
        for op, combine in ((RED.SUM, lambda s: s.sum(0)), (RED.MAX, lambda s: s.max(0).values)):
            t = mine(comm, 7, dtype)
            dist.reduce(t, dst=root, op=op)
            want = combine(torch.stack([of_rank(r, 7, torch.float64) for r in range(comm.size)])).to(dtype)
            assert torch.equal(t, want if comm.rank == root else mine(comm, 7, dtype))  # (the others' tensors unchanged)
    if dtype == torch.float32:  # (Gloo refuses bfloat16)
        a = torch.randn(1000, generator=torch.Generator().manual_seed(comm.rank))
        b = a.clone()
        dist.reduce(a, dst=comm.size - 1)
        dist.reduce(b, dst=comm.size - 1, group=gloo)
        if comm.rank == comm.size - 1:
            assert torch.allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [0, 5])
def test_gather_and_scatter_from_every_root(comm, gloo, n):
    for root in range(comm.size):
        outs = [torch.full((n, 2), -1.0).t() for _ in range(comm.size)] if comm.rank == root else None  # (non-contiguous)
        dist.gather(mine(comm, 2 * n, torch.float32).reshape(2, n), gather_list=outs, dst=root)
        if comm.rank == root:
            assert all(torch.equal(outs[r], of_rank(r, 2 * n, torch.float32).reshape(2, n)) for r in range(comm.size))
        parts = [of_rank(r, n, torch.bfloat16, salt=root) for r in range(comm.size)] if comm.rank == root else None
        out = torch.full((n,), -1.0, dtype=torch.bfloat16)
        dist.scatter(out, scatter_list=parts, src=root)
        assert torch.equal(out, of_rank(comm.rank, n, torch.bfloat16, salt=root))
        if n:  # (the same through Gloo)
            theirs = torch.empty(n, dtype=torch.float32)
            dist.scatter(theirs, [p.float() for p in parts] if comm.rank == root else None, src=root, group=gloo)
            assert torch.equal(theirs, out.float())


def test_all_gather_coalesced(comm):
    # (torch wants one dtype for all of them)
    inputs = [mine(comm, 3, torch.float64), mine(comm, 0, torch.float64), mine(comm, 4, torch.float64).reshape(2, 2)]
    outs = [[torch.empty_like(t) for t in inputs] for _ in range(comm.size)]
    dist.all_gather_coalesced(outs, inputs)
    for r in range(comm.size):
        want = [of_rank(r, 3, torch.float64), of_rank(r, 0, torch.float64), of_rank(r, 4, torch.float64).reshape(2, 2)]
        assert all(torch.equal(o, w) for o, w in zip(outs[r], want))


def test_send_and_recv_around_a_ring(comm):
    if comm.size == 1:  # (one rank has no peer: the calls refuse it; torch 2's send itself)
        with pytest.raises(ValueError, match="not another rank|should not be the same as the rank"):
            dist.send(torch.ones(2), dst=0)
        return
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    for tag in (0, 7):
        for dtype in (torch.float32, torch.bfloat16, torch.int64):
            sent = mine(comm, 5, dtype, salt=tag)
            got = torch.full((5, 2), -1, dtype=dtype)[:, 0]  # (non-contiguous)
            request = dist.irecv(got, src=left, tag=tag)
            dist.isend(sent, dst=right, tag=tag).wait()
            assert request.wait() and (TORCH2 or request.is_completed())  # (torch 2: test_non_contiguous_and_async)
            assert torch.equal(got, of_rank(left, 5, dtype, salt=tag))
    # blocking forms, from any source: rank 0 hears every other rank once
    if comm.rank == 0:
        heard = set()
        for _ in range(comm.size - 1):
            t = torch.empty(1, dtype=torch.int64)
            if TORCH2:  # (torch 2's holder of a Python backend's Work does not give recv its source rank)
                assert dist.irecv(t).wait()
                source = t.item() - 100
            else:
                source = dist.recv(t)
                assert t.item() == 100 + source
            heard.add(source)
        assert heard == set(range(1, comm.size))
    else:
        dist.send(torch.tensor([100 + comm.rank]), dst=0)
    # a receive of another size than the send raises on the receiver
    if comm.rank == 0:
        with pytest.raises(ValueError, match="expected 12 bytes .* from rank 1, got 8"):
            dist.recv(torch.empty(3, dtype=torch.float32), src=1, tag=3)
    elif comm.rank == 1:
        dist.send(torch.ones(2, dtype=torch.float32), dst=0, tag=3)
    with pytest.raises(ValueError, match="not another rank"):
        dist.isend(torch.ones(1), dst=comm.rank)
    with pytest.raises(ValueError, match="tag -1"):
        dist.isend(torch.ones(1), dst=right, tag=-1)
    dist.barrier()


def test_all_to_all_equal_and_unequal_splits(comm):
    rows = 2
    inp = torch.arange(comm.size * rows * 3, dtype=torch.float32).reshape(comm.size * rows, 3) + 1000 * comm.rank
    out = torch.empty_like(inp)
    dist.all_to_all_single(out, inp)
    want = torch.cat([(torch.arange(comm.size * rows * 3, dtype=torch.float32).reshape(comm.size * rows, 3) + 1000 * r)
                      [comm.rank * rows:(comm.rank + 1) * rows] for r in range(comm.size)])
    assert torch.equal(out, want)
    # unequal: rank r sends (r + j) % 3 rows to rank j, each row tagged with (from, to)
    send = [(comm.rank + j) % 3 for j in range(comm.size)]
    recv = [(j + comm.rank) % 3 for j in range(comm.size)]
    inp = torch.cat([torch.full((send[j], 2), float(100 * comm.rank + j)) for j in range(comm.size)])
    out = torch.full((sum(recv), 2), -1.0)
    dist.all_to_all_single(out, inp, output_split_sizes=recv, input_split_sizes=send)
    want = torch.cat([torch.full((recv[j], 2), float(100 * j + comm.rank)) for j in range(comm.size)])
    assert torch.equal(out, want)
    # splits that disagree (rank `bad` expects two rows from rank 0, which sends one): the same
    # error on every rank, the group usable after
    for bad in range(comm.size):
        recv = [2 if (j == 0 and comm.rank == bad) else 1 for j in range(comm.size)]
        with pytest.raises(ValueError, match=f"rank {bad}: .*(sends itself 4 bytes but receives 8|sent 4 bytes "
                                             "where this rank expects 8)"):
            dist.all_to_all_single(torch.empty(sum(recv)), torch.ones(comm.size), output_split_sizes=recv,
                                   input_split_sizes=[1] * comm.size)
    outs = [torch.empty(2, dtype=torch.int64) for _ in range(comm.size)]
    dist.all_to_all(outs, [torch.full((2,), 10 * comm.rank + j, dtype=torch.int64) for j in range(comm.size)])
    assert all(torch.equal(outs[j], torch.full((2,), 10 * j + comm.rank, dtype=torch.int64)) for j in range(comm.size))


def test_groups_of_a_subset_each_call_twice(comm):
    members = list(range(0, comm.size, 2)) if comm.size > 1 else [0]
    group = dist.new_group(members)  # (every rank calls new_group; the others get no group)
    others = dist.new_group([r for r in range(comm.size) if r not in members] or [0])
    for _ in range(2):
        if comm.rank in members:
            t = torch.ones(4)
            dist.all_reduce(t, group=group)
            assert torch.equal(t, torch.full((4,), float(len(members))))
            outs = [torch.empty(1) for _ in members]
            dist.all_gather(outs, torch.tensor([float(comm.rank)]), group=group)
            assert [o.item() for o in outs] == [float(r) for r in members]
        elif comm.size > 1:
            t = torch.full((2,), 2.0)
            dist.all_reduce(t, group=others)
            assert torch.equal(t, torch.full((2,), 2.0 * (comm.size - len(members))))
    dist.barrier()


def test_a_bad_argument_on_one_rank_raises_on_every_rank(comm, bad_rank):
    bad = comm.rank == bad_rank
    cases = [
        (lambda: dist.all_reduce(torch.ones(4 + bad)), ValueError, "different element counts"),
        (lambda: dist.all_reduce(torch.ones(4, dtype=torch.float64 if bad else torch.float32)), ValueError,
         "different dtypes"),
        (lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool if bad else torch.float32)), TypeError,
         f"rank {bad_rank}: .*torch.bool"),
        (lambda: dist.broadcast(torch.ones(3), src=comm.size if bad else 0), ValueError,
         "different roots|not a rank of the group"),
        (lambda: dist.all_gather([torch.empty(2) for _ in range(comm.size + bad)], torch.ones(2)), ValueError,
         f"rank {bad_rank}: .*output tensors"),
        (lambda: dist.all_reduce(torch.ones(3), op=RED.MAX if bad else RED.SUM), ValueError, "different ops"),
        (lambda: dist.all_reduce_coalesced([torch.ones(2)] * (2 + bad)), ValueError, "different number of tensors"),
        (lambda: dist.reduce(torch.ones(3), dst=comm.size - 1 if bad else 0), ValueError, "different roots"),
        (lambda: dist.reduce(torch.ones(3), dst=-1 if bad else 0), ValueError,
         "different roots|not a rank of the group"),
        (lambda: dist.gather(torch.ones(2 + bad), gather_list=[torch.empty(2) for _ in range(comm.size)]
                             if comm.rank == 0 else None, dst=0), ValueError, "different element counts|must match"),
        (lambda: dist.scatter(torch.empty(2 + bad), [torch.ones(2) for _ in range(comm.size)] if comm.rank == 0 else None,
                              src=0), ValueError, "different element counts|rank 0: .*scatter's inputs must match"),
    ]
    if not TORCH2:  # (torch 2 answers a meta tensor's collective itself, without its backend)
        cases.append((lambda: dist.all_reduce(torch.ones(4, device="meta" if bad else "cpu")), ValueError,
                      f"rank {bad_rank}: .*on meta.*CPU tensors only"))
    if comm.size == 1:  # (one rank cannot disagree with itself)
        cases = [c for c in cases if "different" not in c[2]]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
        t = torch.ones(2)  # the group still works
        dist.all_reduce(t)
        assert torch.equal(t, torch.full((2,), float(comm.size)))


def test_ops_a_dtype_does_not_take():
    with pytest.raises(TypeError, match="AVG needs a floating dtype"):
        dist.all_reduce(torch.ones(2, dtype=torch.int32), op=RED.AVG)
    with pytest.raises(TypeError, match="BAND needs an integer dtype"):
        dist.all_reduce(torch.ones(2), op=RED.BAND)
    if TORCH2:
        with pytest.raises(TypeError, match="PREMUL_SUM needs a floating dtype"):
            dist.all_reduce(torch.ones(2, dtype=torch.int64), op=dist._make_nccl_premul_sum(2.0))
    else:
        with pytest.raises(NotImplementedError, match="PREMUL_SUM needs torch 2"):
            dist.all_reduce(torch.ones(2), op=dist._make_nccl_premul_sum(2.0))


@pytest.mark.skipif(not TORCH2, reason="torch 1.13 keeps PREMUL_SUM's factor from a Python backend (the test above)")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_premul_sum_each_rank_its_own_factor(comm, dtype):
    n = 6
    factor = comm.rank + 1.5
    want = sum((r + 1.5) * of_rank(r, n, torch.float64) for r in range(comm.size))
    for make in (lambda: dist._make_nccl_premul_sum(factor), lambda: dist._make_nccl_premul_sum(torch.tensor(factor))):
        t = mine(comm, n, dtype)
        dist.all_reduce(t, op=make())
        assert torch.equal(t, want.to(dtype)), (t, want)
        inputs = torch.cat([mine(comm, n, dtype, salt=j) for j in range(comm.size)])
        before = inputs.clone()
        out = torch.empty(n, dtype=dtype)
        dist.reduce_scatter_tensor(out, inputs, op=make())
        assert torch.equal(inputs, before)  # (the input is the caller's)
        part = sum((r + 1.5) * of_rank(r, n, torch.float64, salt=comm.rank) for r in range(comm.size))
        assert torch.equal(out, part.to(dtype))
        t = mine(comm, n, dtype)
        dist.reduce(t, dst=comm.size - 1, op=make())
        assert torch.equal(t, want.to(dtype) if comm.rank == comm.size - 1 else mine(comm, n, dtype))


@pytest.mark.skipif(not TORCH2, reason="torch 2's coalescing manager and single-tensor names (1.13 has neither)")
def test_torch2_coalescing_manager_and_single_tensor_forms(comm):
    for device in (None, torch.device("cpu")):  # (with a device: each call made inside, between the backend's
        # start_coalescing and end_coalescing; without: torch's one allreduce_coalesced)
        a, b = mine(comm, 5, torch.float32), mine(comm, 3, torch.float32)
        with dist._coalescing_manager(device=device):
            dist.all_reduce(a)
            dist.all_reduce(b)
        assert torch.equal(a, sum(of_rank(r, 5, torch.float32) for r in range(comm.size)))
        assert torch.equal(b, sum(of_rank(r, 3, torch.float32) for r in range(comm.size)))
    outs = [torch.empty(comm.size * 4), torch.empty(comm.size * 2)]
    with dist._coalescing_manager():
        dist.all_gather_single(outs[0], mine(comm, 4, torch.float32))
        dist.all_gather_single(outs[1], mine(comm, 2, torch.float32, salt=1))
    assert torch.equal(outs[0], torch.cat([of_rank(r, 4, torch.float32) for r in range(comm.size)]))
    assert torch.equal(outs[1], torch.cat([of_rank(r, 2, torch.float32, salt=1) for r in range(comm.size)]))
    parts = [torch.empty(3), torch.empty(1)]
    with dist._coalescing_manager():
        for p in parts:
            dist.reduce_scatter_single(p, torch.cat([mine(comm, p.numel(), torch.float32, salt=j)
                                                     for j in range(comm.size)]))
    for p in parts:
        assert torch.equal(p, sum(of_rank(r, p.numel(), torch.float32, salt=comm.rank) for r in range(comm.size)))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))

    def forward(self, x):
        return self.net(x)


def train(comm, group=None, hook=None, steps=6):
    """A fixed-seed DDP run (each rank its own data); the losses and the final
    parameters."""
    torch.manual_seed(0)
    model = MLP()
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group, bucket_cap_mb=0.001)
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(100 + comm.rank)
    losses = []
    for _ in range(steps):
        x, y = torch.randn(16, 8, generator=data), torch.randn(16, 4, generator=data)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def test_ddp_training_matches_gloo_and_agrees_bitwise_over_ranks(comm, gloo):
    ours, ours_params = train(comm)
    theirs, theirs_params = train(comm, group=gloo)
    assert np.allclose(ours, theirs, rtol=1e-5, atol=1e-7)
    assert torch.allclose(ours_params, theirs_params, rtol=1e-5, atol=1e-6)
    everyone = comm.allgather(ours_params.numpy())
    assert all(np.array_equal(p, everyone[0]) for p in everyone)


def test_ddp_hooks_on_a_gloo_group(comm, gloo):
    plain, plain_params = train(comm, group=gloo)
    hooked, hooked_params = train(comm, group=gloo, hook=conveyor.torch.allreduce_hook)
    assert np.allclose(plain, hooked, rtol=1e-5, atol=1e-7)
    assert torch.allclose(plain_params, hooked_params, rtol=1e-5, atol=1e-6)
    compressed, compressed_params = train(comm, group=gloo, hook=conveyor.torch.bf16_allreduce_hook)
    assert np.allclose(plain, compressed, rtol=2e-2, atol=1e-3)
    everyone = comm.allgather(compressed_params.numpy())
    assert all(np.array_equal(p, everyone[0]) for p in everyone)


def test_a_group_larger_than_the_mpi_job_names_the_launcher(comm):
    """torchrun (or multiprocessing) starts processes MPI does not know: the group
    is refused at creation, saying how to launch."""
    with pytest.raises(RuntimeError, match=f"group has {comm.size + 1} ranks but MPI's COMM_WORLD has {comm.size}.*mpiexec"):
        conveyor.torch._create(None, comm.rank, comm.size + 1, None)
