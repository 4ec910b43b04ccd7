# SPDX-License-Identifier: BSD-3-Clause
"""``SamplesLoss``'s softmins on formed cost arrays: GeomLoss's "tensorized"
backend, for p = 2 where the arrays fit (``backend="auto"`` or
``"tensorized"``).

Why: the point-cloud engine recomputes each cost (d multiply-adds) on every
softmin, and the eps-scaling loop makes 4 softmins per eps; formed once (one
GEMM per problem), each softmin reads one entry and takes one ``exp``
(``sinkhorn::softmin``). The kernel exp(-C / eps) cannot be formed once, as the
fixed-eps solvers do, because eps changes at every step.

Steps, on every rank (each holding its share of both clouds):
1. every rank's points of the column side are gathered (once per side);
2. the rank forms its rows against all columns, C_ij = |x_i - y_j|^2 / 2
   (GeomLoss's cost), in float64 by one GEMM on points centred on the middle of
   both clouds' bounding box (|x|^2 + |y|^2 - 2 x.y, clipped at 0), stored in
   the clouds' dtype;
3. each softmin gathers the columns' potentials h (one Allgatherv of m values
   per problem) and runs ``sinkhorn::softmin`` over the rank's rows; the last
   one also returns the rows' weights W, and sum_j W_ij y_j (the gradient's
   average) is one batched GEMM.
Bytes on the wire: the points once ((n + m) d values), then m or n values per
softmin.

Limits: p = 2 only (p = 1's point gradient divides by the distance, which the
GEMM form does not give exactly near 0, where the engine computes it by
differences). The peak is a rank's arrays (two, four with debias) and the
weights W of one softmin (one more of the largest's size): within DENSE_BYTES
for the arrays "auto" forms them, past it within the dense limits' peak rule
(_points_dense.within_peak).
"""
import numpy as np

from .. import _conveyor
from ._points_dense import DENSE_BYTES, _gathered, cost_matrix, with_memory_shares, within_peak


#: The dimension from which ``backend="auto"`` forms the arrays, by itemsize: below
#: it a softmin costs the engine about what it costs on the formed array (both
#: one exp per pair), and forming them is the extra (the crossover measured at
#: n = 1000: docs/results.md, "Value and gradient of the debiased divergence").
FORMED_MIN_DIM = {4: 24, 8: 12}


#: Past DENSE_BYTES the arrays fall out of every cache and each softmin reads
#: them from memory: the dimension from which "auto" still forms them (n = 10^4 on
#: one core: the engine faster at 32 dimensions, the formed arrays from 48;
#: docs/results.md, "Value and gradient of the debiased divergence").
FORMED_MIN_DIM_PAST = 48


def use_formed(backend, p, debias, x, y, comm):
    """Whether the loss's softmins run on formed arrays (collective: every rank
    returns the same). "tensorized" forms them, "online" and "multiscale" never,
    "auto" from FORMED_MIN_DIM dimensions where `forms` says so for every rank;
    p = 1 and empty clouds always take the point-cloud engine.
    x, y: this rank's (B, n, D), (B, m, D)."""
    # Each rank's own arguments, shapes and itemsize: every rank evaluates every
    # rank's wish, so ranks that disagree (which the softmins then refuse) still
    # take one path, the formed arrays only if every rank wants them.
    everyone = with_memory_shares(comm, ((x.shape[1], y.shape[1], x.shape[0], x.shape[-1], x.dtype.itemsize),
                                         (p, bool(debias), backend)))
    shapes = np.array([c for (c, _), _ in everyone], dtype=np.int64).reshape(-1, 5)
    n, m = (int(c) for c in shapes[:, :2].sum(axis=0))

    def wants(rows, cols, batch, d, itemsize, p_, debias_, backend_, memory):
        if not (p_ == 2 and n > 0 and m > 0) or backend_ not in ("auto", "tensorized"):
            return False
        if backend_ == "tensorized":
            return True
        arrays = [rows * m, cols * n] + ([rows * n, cols * m] if debias_ else [])
        entry = batch * itemsize  # (bytes of one entry over the batch)
        return forms(sum(arrays) * entry, max(arrays) * entry, d, itemsize, memory)

    return all(wants(*(int(v) for v in row), *args, memory)
               for row, ((_, args), memory) in zip(shapes, everyone))


def forms(arrays, largest, d, itemsize, memory=None):
    """Whether "auto" forms a rank's `arrays` bytes of cost arrays (the `largest`
    of them that many bytes) for points of d dimensions and this itemsize, with
    `memory` bytes available to the rank (None: not limited by it)."""
    if d < FORMED_MIN_DIM[itemsize]:
        return False
    if arrays <= DENSE_BYTES:
        return True
    return d >= FORMED_MIN_DIM_PAST and within_peak(arrays + largest, memory)


class FormedArrays:
    """One call's clouds, gathered once per side, and the pairs on their formed
    arrays (`pair`); pr: the call's _Problems (points, comm)."""

    def __init__(self, pr):
        self.pr = pr
        self.points = {name: self._gather(getattr(pr, name)) for name in ("x", "y")}
        both = np.concatenate([self.points["x"][0], self.points["y"][0]], axis=1).astype(np.float64)
        self.middle = 0.5 * (both.min(axis=1, keepdims=True) + both.max(axis=1, keepdims=True))
        self.arrays = {}

    def _gather(self, mine):
        """Every rank's points of one side, (B, total, D), in rank order, and each
        rank's count of them."""
        counts = [int(c) for c in self.pr.comm.allgather(mine.shape[1])]
        everything = np.moveaxis(_gathered(self.pr.comm, np.moveaxis(mine, 1, 0), counts), 0, 1)
        return np.ascontiguousarray(everything), counts

    def pair(self, rows, cols):
        """The softmin of this rank's `rows` ("x" or "y") against every rank's `cols`."""
        return FormedPair(self.pr, getattr(self.pr, rows), *self.points[cols], self.cost(rows, cols))

    def cost(self, rows, cols):
        """|x_i - y_j|^2 for this rank's `rows` against every rank's `cols`, formed
        in the clouds' dtype on points centred on the middle of both clouds'
        bounding box (float32 as GeomLoss's tensorized backend forms it). On one
        rank the y-x array is the x-y one transposed (a copy, not a second GEMM)."""
        if self.pr.comm.Get_size() == 1 and (cols, rows) in self.arrays:
            return np.ascontiguousarray(np.swapaxes(self.arrays[(cols, rows)], -1, -2))
        mine = getattr(self.pr, rows)
        middle = self.middle.astype(mine.dtype)
        C = cost_matrix(mine - middle, self.points[cols][0] - middle, "sqeuclidean", mine.dtype, mine.dtype)
        if rows != cols:
            self.arrays[(rows, cols)] = C
        return C


class FormedPair:
    """One of the loss's four problems on its formed array: this rank's rows of
    C (B, n_r, m) against every rank's columns."""

    def __init__(self, pr, rows, cols, counts, C):
        self.pr, self.rows, self.cols, self.counts, self.C = pr, rows, cols, counts, C

    def softmin(self, eps, h, grads=False):
        """_PointPair.softmin's results on the formed array."""
        pr = self.pr
        h = np.ascontiguousarray(h, dtype=self.rows.dtype)
        if pr.comm.Get_size() > 1:
            h = np.ascontiguousarray(np.moveaxis(_gathered(pr.comm, np.moveaxis(h, 1, 0), self.counts), 0, 1))
        # (C holds |x - y|^2: the loss's cost |x - y|^2 / 2 over eps is C over 2 eps)
        lse, W = _conveyor.softmin(self.C, h, 2 * eps, grads, pr.address, {})
        f = -eps * lse.astype(np.float64)
        if not grads:
            return f, None
        return f, self.rows.astype(np.float64) - np.matmul(W, self.cols).astype(np.float64)
