# SPDX-License-Identifier: BSD-3-Clause
"""conveyor.Layout / conveyor.Plan under mpiexec (1-3 ranks, both MPIs): a
block-cyclic matrix (ScaLAPACK storage) transposed and scaled into Cartesian row
blocks and back, every transport, executed repeatedly; an N-D Cartesian axis
permutation; shape and dtype errors. Values are position-encoded."""
import numpy as np
import pytest

import conveyor

# Every row of the table of transports but one_copy (node memory: its own tests), and auto.
TRANSPORTS = ["auto"] + [name for name, _ in conveyor._conveyor.transports() if name != "one_copy"]


def local_block_cyclic(comm, M, N, mb, nb, prow, pcol, dtype, fill=None):
    """This rank's column-major local matrix of an M x N block-cyclic matrix (row-major
    grid), filled with the global index i * N + j, or `fill`."""
    if comm.rank >= prow * pcol:
        return None
    r, c = comm.rank // pcol, comm.rank % pcol
    rows = [i for i in range(M) if (i // mb) % prow == r]
    cols = [j for j in range(N) if (j // nb) % pcol == c]
    a = np.empty((len(rows), len(cols)), dtype=dtype, order="F")
    if fill is None:
        a[...] = (np.array(rows)[:, None] * N + np.array(cols)[None, :]).astype(dtype)
    else:
        a[...] = fill
    return a, rows, cols


def row_block(comm, n, m, dtype, fill):
    """This rank's rows of an n x m matrix cut into one row block per rank (Cartesian, grid ranks x 1)."""
    r0, count = conveyor.balanced_rows(n, comm)  # Cartesian blocks: the first n % ranks one longer
    r1 = r0 + count
    return np.full((r1 - r0, m), fill, dtype=dtype), r0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_block_cyclic_transposed_into_row_blocks_and_back(comm, transport):
    M, N, mb, nb = 13, 11, 2, 3
    prow = 2 if comm.size % 2 == 0 else 1
    pcol = comm.size // prow
    a, rows, cols = local_block_cyclic(comm, M, N, mb, nb, prow, pcol, np.float64)
    src = conveyor.Layout.block_cyclic(M, N, mb, nb, prow, pcol, a)
    t, r0 = row_block(comm, N, M, np.float64, np.nan)
    dst = conveyor.Layout.cartesian((N, M), (comm.size, 1), t)
    plan = conveyor.Plan(src, dst, perm=(1, 0), alpha=2.0, transport=transport)
    assert plan.transport != "auto"
    assert plan.volume.sum() == M * N * 8
    for generation in range(3):
        a += 1 if generation else 0
        plan.execute()
        i = np.arange(r0, r0 + t.shape[0])[:, None]
        j = np.arange(M)[None, :]
        np.testing.assert_array_equal(t, 2.0 * (j * N + i + generation))
    # And back, into a fresh block-cyclic matrix, with beta = 1 over zeros.
    b = local_block_cyclic(comm, M, N, mb, nb, prow, pcol, np.float64, fill=0.0)[0]
    back = conveyor.Plan(dst, conveyor.Layout.block_cyclic(M, N, mb, nb, prow, pcol, b), perm=(1, 0), alpha=0.5, beta=1.0,
                         transport=transport)
    back.execute()
    np.testing.assert_array_equal(b, a)


def test_cartesian_axis_permutation_3d_complex(comm):
    shape, grid = (4, 6, 5), (1, comm.size, 1)  # (ranks <= 6)
    def block(sh, gr):
        coords = np.unravel_index(comm.rank, gr)
        def start(n, k, g):  # Cartesian blocks: the first n % g one longer
            return n // g * k + min(k, n % g)
        lo = [start(sh[d], coords[d], gr[d]) for d in range(3)]
        hi = [start(sh[d], coords[d] + 1, gr[d]) for d in range(3)]
        return lo, hi
    lo, hi = block(shape, grid)
    idx = np.indices([h - l for l, h in zip(lo, hi)])
    gi = [idx[d] + lo[d] for d in range(3)]
    x = ((gi[0] * 6 + gi[1]) * 5 + gi[2]).astype(np.complex128) * (1 + 1j)
    perm = (2, 0, 1)  # dst axis k = src axis perm[k]
    dshape, dgrid = tuple(shape[p] for p in perm), (comm.size, 1, 1)
    dlo, dhi = block(dshape, dgrid)
    y = np.zeros([h - l for l, h in zip(dlo, dhi)], dtype=np.complex128)
    plan = conveyor.Plan(conveyor.Layout.cartesian(shape, grid, x), conveyor.Layout.cartesian(dshape, dgrid, y),
                         perm=perm, conjugate=True)
    plan.execute()
    d = np.indices(y.shape)
    k = [d[a] + dlo[a] for a in range(3)]  # destination coordinates; source axis perm[a] = k[a]
    s = [None] * 3
    for a in range(3):
        s[perm[a]] = k[a]
    want = np.conj(((s[0] * 6 + s[1]) * 5 + s[2]).astype(np.complex128) * (1 + 1j))
    np.testing.assert_array_equal(y, want)


def test_layout_and_plan_errors(comm):
    with pytest.raises(ValueError):  # wrong local shape
        conveyor.Layout.cartesian((8, 4), (comm.size, 1), np.zeros((99, 4)))
    with pytest.raises(ValueError):
        conveyor.Layout.block_cyclic(5, 5, 2, 2, 1, comm.size, np.zeros((1, 1), order="F") if comm.rank < comm.size else None)
    x, y = np.zeros(4), np.zeros(4, dtype=np.float32)  # this rank's 4 of 4 per rank
    src = conveyor.Layout.cartesian((4 * comm.size,), (comm.size,), x)
    dst = conveyor.Layout.cartesian((4 * comm.size,), (comm.size,), y)
    with pytest.raises(TypeError):
        conveyor.Plan(src, dst)
    with pytest.raises(ValueError):  # the engine's own check, on every rank
        conveyor.Plan(src, conveyor.Layout.cartesian((4 * comm.size,), (comm.size,), x.copy()), transport="carrier pigeon")


# --- custom layouts, batched plans, layouts from ScaLAPACK descriptors --------
def global_matrix(M, N):
    return np.arange(M * N, dtype=np.float64).reshape(M, N)


def rows_layout(comm, M, N, fill=0.0):
    """Cartesian row blocks of an M x N matrix (grid ranks x 1), filled with `fill`."""
    first, count = conveyor.balanced_rows(M, comm)
    return conveyor.Layout.cartesian((M, N), (comm.size, 1), np.full((count, N), fill), comm), first, count


def owned_indices(extent, first_block, block, procs, src, p):
    """Global indices owned by process coordinate p in a block-cyclic split with
    a first block of `first_block` and then `block`, in local order."""
    out, start, g = [], 0, 0
    while start < extent:
        size = min(first_block if g == 0 else block, extent - start)
        if (src + g) % procs == p:
            out.extend(range(start, start + size))
        start, g = start + size, g + 1
    return out


def test_custom_layout_with_irregular_strided_blocks(comm):
    M, N = 7, 5
    G = global_matrix(M, N)
    row_points, col_points = [0, 2, 5, 7], [0, 3, 5]
    owners = [k % comm.size for k in range(6)]
    blocks = []
    for k, owner in enumerate(owners):
        if owner != comm.rank:
            continue
        bi, bj = divmod(k, 2)
        block = G[row_points[bi]:row_points[bi + 1], col_points[bj]:col_points[bj + 1]]
        # Alternate storage: Fortran order, and a strided view into a bigger array.
        if k % 2:
            stored = np.asfortranarray(block)
        else:
            bigger = np.zeros((block.shape[0], 2 * block.shape[1]))
            bigger[:, ::2] = block
            stored = bigger[:, ::2]
        blocks.append(((bi, bj), stored))
    src = conveyor.Layout.custom([row_points, col_points], owners, blocks, comm)
    assert src.shape == (M, N)
    dst, first, count = rows_layout(comm, M, N)
    conveyor.Plan(src, dst).execute()
    np.testing.assert_array_equal(dst.local, G[first:first + count])
    # And back, accumulating: custom blocks += 2 * rows.
    conveyor.Plan(dst, src, alpha=2.0, beta=1.0).execute()
    for (bi, bj), stored in src.local:
        want = 3 * G[row_points[bi]:row_points[bi + 1], col_points[bj]:col_points[bj + 1]]
        np.testing.assert_array_equal(stored, want)


def test_custom_layout_errors_raise_everywhere(comm):
    # A block of the wrong shape on the last rank: every rank raises.
    owners = [0, comm.size - 1]  # block (0, 1), on the last rank, is given 3 columns instead of 2
    blocks = [((0, k), np.zeros((2, 3 if k == 1 else 2))) for k in range(2) if owners[k] == comm.rank]
    with pytest.raises(ValueError, match="shape"):
        conveyor.Layout.custom([[0, 2], [0, 2, 4]], owners, blocks, comm)


def test_batched_plan_moves_every_transform(comm):
    v = np.arange(10.0)
    first, count = conveyor.balanced_rows(10, comm)
    a = conveyor.Layout.cartesian((10,), (comm.size,), v[first:first + count].copy(), comm)
    a_whole = conveyor.Layout.cartesian((10,), (1,), np.zeros(10) if comm.rank == 0 else None, comm)
    n, m = 2 * comm.size + 2, comm.size + 3  # each at least one row per rank, both ways
    G = global_matrix(n, m)
    src, r0, rc = rows_layout(comm, n, m)
    src.local[...] = G[r0:r0 + rc]
    dst, c0, cc = rows_layout(comm, m, n)
    plan = conveyor.Plan.batch([(a, a_whole), dict(src=src, dst=dst, perm=(1, 0), alpha=-1.0)])
    for _ in range(2):
        plan.execute()
    if comm.rank == 0:
        np.testing.assert_array_equal(a_whole.local, v)
    np.testing.assert_array_equal(dst.local, -G.T[c0:c0 + cc])
    single = conveyor.Plan(src, dst, perm=(1, 0))
    assert plan.volume.sum() == single.volume.sum() + conveyor.Plan(a, a_whole).volume.sum()


@pytest.mark.parametrize("desc_type", [1, 2])
def test_layout_from_a_scalapack_descriptor(comm, desc_type):
    M, N, mb, nb, prow, pcol = 9, 7, 2, 3, comm.size, 1
    imb, inb = (1, 2) if desc_type == 2 else (mb, nb)
    rsrc = comm.size - 1
    G = global_matrix(M, N)
    rows = owned_indices(M, imb, mb, prow, rsrc, comm.rank // pcol)
    cols = owned_indices(N, inb, nb, pcol, 0, comm.rank % pcol)
    lld = max(1, len(rows)) + 3  # ScaLAPACK allocates LLD >= NUMROC rows
    local = np.zeros((lld, len(cols)), order="F")
    local[:len(rows)] = G[np.ix_(rows, cols)]
    if desc_type == 1:
        desc = [1, 0, M, N, mb, nb, rsrc, 0, lld]
    else:
        desc = [2, 0, M, N, imb, inb, mb, nb, rsrc, 0, lld]
    L = conveyor.Layout.from_descriptor(desc, local, prow, pcol, comm)
    assert L.shape == (M, N) and L.local_shape() == (len(rows), len(cols))
    dst, first, count = rows_layout(comm, M, N)
    conveyor.Plan(L, dst).execute()
    np.testing.assert_array_equal(dst.local, G[first:first + count])
    with pytest.raises(ValueError, match="descriptor"):
        conveyor.Layout.from_descriptor([1, 0, M, N], local, prow, pcol, comm)


def test_a_bad_descriptor_on_one_rank_raises_on_every_rank(comm, bad_rank):
    desc = [1, 0, 4, 4, 2, 2, 0, 0, 4] if comm.rank != bad_rank else [1, 0, 4, 4]
    local = np.zeros((4, 4), order="F") if comm.rank == 0 else None
    with pytest.raises(ValueError, match=f"rank {bad_rank}: expected a ScaLAPACK descriptor"):
        conveyor.Layout.from_descriptor(desc, local, 1, 1, comm)


def test_empty_is_node_memory_of_any_shape():
    a = conveyor.empty((3, 4), dtype=np.float32)
    assert a.shape == (3, 4) and a.dtype == np.float32 and a.flags.c_contiguous
    assert not a.any()  # fresh memory is zero
    assert conveyor.empty(5).shape == (5,) and conveyor.empty(5).dtype == np.float64
    assert conveyor.empty((0, 7)).size == 0
    with pytest.raises(ValueError, match="negative"):
        conveyor.empty((2, -1))
    view = conveyor.empty((4, 4))[1:3]  # a view keeps the allocation alive
    view[...] = 1.0
    assert view.sum() == 8.0


@pytest.mark.parametrize("in_node_memory", ["destination", "source"])
def test_one_copy_through_node_memory(comm, in_node_memory):
    """Destinations from conveyor.empty: auto pushes each piece once into them;
    sources only: one_copy when asked (each receiver reads the senders' arrays)."""
    n, m = 6 * comm.size + 1, 5
    r0, count = conveyor.balanced_rows(n, comm)
    c0, ccount = conveyor.balanced_rows(m * comm.size, comm)
    whole = np.arange(n * m * comm.size, dtype=np.float64).reshape(n, m * comm.size)
    src_arr = conveyor.empty((count, m * comm.size)) if in_node_memory == "source" else np.empty((count, m * comm.size))
    dst_arr = conveyor.empty((n, ccount)) if in_node_memory == "destination" else np.empty((n, ccount))
    src = conveyor.Layout.cartesian((n, m * comm.size), (comm.size, 1), src_arr, comm)
    dst = conveyor.Layout.cartesian((n, m * comm.size), (1, comm.size), dst_arr, comm)
    asked = "auto" if in_node_memory == "destination" else "one_copy"
    plan = conveyor.Plan(src, dst, alpha=2.0, transport=asked)
    assert plan.transport == "one_copy"
    for step in range(3):
        src.local[...] = whole[r0:r0 + count] + step
        plan.execute()
        np.testing.assert_array_equal(dst.local, 2 * (whole[:, c0:c0 + ccount] + step))
    if in_node_memory == "source":
        assert conveyor.Plan(src, dst).transport != "one_copy"  # auto never pulls
