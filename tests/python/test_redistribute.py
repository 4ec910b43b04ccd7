"""conveyor.Layout / conveyor.Plan under mpiexec (1-3 ranks, both MPIs): a
block-cyclic matrix (ScaLAPACK storage) transposed and scaled into Cartesian row
blocks and back, every transport, executed repeatedly; an N-D Cartesian axis
permutation; shape and dtype errors. Values are position-encoded."""
import numpy as np
import pytest
from mpi4py import MPI

import conveyor

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
TRANSPORTS = ["auto", "datatype", "packed", "pipelined", "one_sided", "alltoallv"]


def local_block_cyclic(M, N, mb, nb, prow, pcol, dtype, fill=None):
    """This rank's column-major local matrix of an M x N block-cyclic matrix (row-major
    grid), filled with the global index i * N + j, or `fill`."""
    if RANK >= prow * pcol:
        return None
    r, c = RANK // pcol, RANK % pcol
    rows = [i for i in range(M) if (i // mb) % prow == r]
    cols = [j for j in range(N) if (j // nb) % pcol == c]
    a = np.empty((len(rows), len(cols)), dtype=dtype, order="F")
    if fill is None:
        a[...] = (np.array(rows)[:, None] * N + np.array(cols)[None, :]).astype(dtype)
    else:
        a[...] = fill
    return a, rows, cols


def row_block(n, m, dtype, fill):
    """This rank's rows of an n x m matrix cut into SIZE row blocks (Cartesian, grid SIZE x 1)."""
    r0, count = conveyor.balanced_rows(n, COMM)  # Cartesian blocks: the first n % SIZE one longer
    r1 = r0 + count
    return np.full((r1 - r0, m), fill, dtype=dtype), r0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_block_cyclic_transposed_into_row_blocks_and_back(transport):
    M, N, mb, nb = 13, 11, 2, 3
    prow = 2 if SIZE % 2 == 0 else 1
    pcol = SIZE // prow
    a, rows, cols = local_block_cyclic(M, N, mb, nb, prow, pcol, np.float64)
    src = conveyor.Layout.block_cyclic(M, N, mb, nb, prow, pcol, a)
    t, r0 = row_block(N, M, np.float64, np.nan)
    dst = conveyor.Layout.cartesian((N, M), (SIZE, 1), t)
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
    b = local_block_cyclic(M, N, mb, nb, prow, pcol, np.float64, fill=0.0)[0]
    back = conveyor.Plan(dst, conveyor.Layout.block_cyclic(M, N, mb, nb, prow, pcol, b), perm=(1, 0), alpha=0.5, beta=1.0,
                         transport=transport)
    back.execute()
    np.testing.assert_array_equal(b, a)


def test_cartesian_axis_permutation_3d_complex():
    shape, grid = (4, 6, 5), (1, SIZE, 1)  # (SIZE <= 6)
    def block(sh, gr):
        coords = np.unravel_index(RANK, gr)
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
    dshape, dgrid = tuple(shape[p] for p in perm), (SIZE, 1, 1)
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


def test_layout_and_plan_errors():
    with pytest.raises(ValueError):  # wrong local shape
        conveyor.Layout.cartesian((8, 4), (SIZE, 1), np.zeros((99, 4)))
    with pytest.raises(ValueError):
        conveyor.Layout.block_cyclic(5, 5, 2, 2, 1, SIZE, np.zeros((1, 1), order="F") if RANK < SIZE else None)
    x, y = np.zeros(4), np.zeros(4, dtype=np.float32)  # this rank's 4 of 4 * SIZE
    src = conveyor.Layout.cartesian((4 * SIZE,), (SIZE,), x)
    dst = conveyor.Layout.cartesian((4 * SIZE,), (SIZE,), y)
    with pytest.raises(TypeError):
        conveyor.Plan(src, dst)
    with pytest.raises(ValueError):  # the engine's own check, on every rank
        conveyor.Plan(src, conveyor.Layout.cartesian((4 * SIZE,), (SIZE,), x.copy()), transport="carrier pigeon")
