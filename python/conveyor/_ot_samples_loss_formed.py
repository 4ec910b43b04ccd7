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
differences); at most DENSE_BYTES per rank for the two (four with debias)
arrays, W besides.
"""
import numpy as np
from mpi4py import MPI

from . import _conveyor  # type: ignore[attr-defined]  # (the extension has no stub; the public modules have .pyi)
from ._ot_points_dense import DENSE_BYTES, _gathered, cost_matrix


#: The dimension from which ``backend="auto"`` forms the arrays, by itemsize: below
#: it a softmin costs the engine about what it costs on the formed array (both
#: one exp per pair), and forming them is the extra (the crossover measured at
#: n = 1000: docs/results.md, "Value and gradient of the debiased divergence").
FORMED_MIN_DIM = {4: 24, 8: 12}


def use_formed(backend, p, debias, x, y, comm):
    """Whether the loss's softmins run on formed arrays (collective: every rank
    returns the same). "tensorized" forms them, "online" and "multiscale" never,
    "auto" from FORMED_MIN_DIM dimensions where a rank's arrays fit in
    DENSE_BYTES; p = 1 and empty clouds always take the point-cloud engine.
    x, y: this rank's (B, n, D), (B, m, D)."""
    counts = np.array(comm.allgather((x.shape[1], y.shape[1])), dtype=np.int64).reshape(-1, 2)
    n, m = (int(c) for c in counts.sum(axis=0))
    per_rank = counts[:, 0] * m + counts[:, 1] * n + ((counts[:, 0] * n + counts[:, 1] * m) if debias else 0)
    fits = int(per_rank.max(initial=0)) * x.shape[0] * x.dtype.itemsize <= DENSE_BYTES
    wanted = backend == "tensorized" or (backend == "auto" and fits and x.shape[-1] >= FORMED_MIN_DIM[x.dtype.itemsize])
    mine = bool(p == 2 and n > 0 and m > 0 and wanted)
    return bool(comm.allreduce(mine, op=MPI.LAND))


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
