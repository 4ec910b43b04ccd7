# SPDX-License-Identifier: BSD-3-Clause
"""The point-cloud losses through their cost matrix, where it fits in memory:
what POT's ``empirical_sinkhorn`` family does with ``isLazy=False`` (its
default) and GeomLoss's "tensorized" backend does below its size limit.

Why: the point-cloud solver recomputes each cost (d multiply-adds) and its
``exp`` on every pass; with the matrix formed once (one GEMM), the kernel
K = exp(-C / reg) costs one multiply-add per entry and pass
(docs/results.md, "Value and gradient of the debiased divergence").

Steps, on every rank (each holding its share of both clouds, as the
point-cloud solver's callers pass them):
1. every source point and weight is gathered; the rank forms its target
   points' rows against all sources, Ct (m_r x n), by one GEMM in float64
   (|y|^2 + |x|^2 - 2 y.x, clipped at 0; the distance's square root after),
   stored in the clouds' dtype;
2. the dense engine (conveyor.ot.sinkhorn's, rows split over the ranks as
   they are) iterates on Ct: its column update is the sources' potential f,
   its row update the targets' g, in that order (columns_first), so its
   column-marginal error after iteration k is the source-marginal error the
   point-cloud solver tests after its iteration k. The kernel form runs while
   max(C) / reg keeps K and the scalings in floating range (_KERNEL_RANGE),
   else (or after a numerical failure) the engine's log-domain iteration.
Bytes on the wire: the gathers (n (d + 1) values), then the engine's
allreduce of n values per iteration.

Deviations from the point-cloud solver: the error is tested on iterations
1, 11, 21, ... (the dense engine's rule) instead of 10, 20, ...; the sums are
in the kernel form's rounding.

The gradients' plan applications (``apply(V, transpose, cost_power)`` of
_points_gradients) use this rank's Pt = exp(f_i + g_j - Ct_ji / reg),
formed in float64: P @ V is a local product and an allreduce of n x k values,
P^T @ U an allgather of U and a local product.

Limits: "auto" forms Ct up to DENSE_BYTES per rank, and past it within
DENSE_PEAK_BYTES and half the machine's available memory per rank (`auto_forms`):
the peak is the gradient's, about PEAK_BYTES_PER_ENTRY per entry of a rank's
block (the forward's Ct and the engine's kernel are within it).
"""
import os

import numpy as np
from mpi4py import MPI

from .. import _conveyor
from .._mpi import agree, comm_address
from ._gradients import _summed
from ._points_gradients import _adjoint, _centred

#: Bytes of one rank's cost matrix up to which ``dense="auto"`` forms it whatever
#: the dtype and dimension (2^28: 5792^2 float64 entries, near GeomLoss's 5000^2 for
#: its tensorized backend).
DENSE_BYTES = 1 << 28
#: Past DENSE_BYTES, the peak memory per rank up to which "auto" still forms the
#: matrix (n = m = 13,000 on one rank): the point-cloud solver recomputes d
#: multiply-adds per pair and pass, so forming wins where the matrix can be held
#: (docs/results.md, "Value and gradient of the debiased divergence", n = 10^4).
DENSE_PEAK_BYTES = 4 << 30
#: The peak's bytes per entry of a rank's block: the gradient's float64 cost
#: matrix, plan and one temporary of their size (whatever the clouds' dtype).
PEAK_BYTES_PER_ENTRY = 24
#: Past DENSE_BYTES, float32 clouds of fewer dimensions stay on the point-cloud
#: solver: there a pass costs it about one `exp` per pair, the formed matrix's
#: pass a read from memory, and its gradient runs in float64.
DENSE_MIN_DIM_FLOAT32 = 8
#: max(C) / reg up to which the kernel form runs, by itemsize: exp(-C / reg) stays
#: normal and the scalings (up to about exp(max(C) / reg) n) finite.
_KERNEL_RANGE = {4: 60.0, 8: 500.0}
_CHOICES = ("auto", True, False)


def check_choice(choice):
    """The ``dense=`` keyword's value ("auto", True or False), or ValueError."""
    if not any(choice is c or (isinstance(c, str) and choice == c) for c in _CHOICES):
        raise ValueError(f"conveyor.ot: dense must be 'auto', True or False, got {choice!r}")
    return choice


def use_dense(choice, lazy, engine_kwargs, X, Y, comm):
    """Whether the solve forms its cost matrix (collective; every rank returns
    the same): True forces it, False forbids it; "auto" forms it unless the
    caller asked for the lazy solver (``isLazy``, ``lazy``, or an option only
    the point-cloud solver has) or `auto_forms` says no for some rank. Empty
    clouds, and points of different dimensions (which the point-cloud solver
    refuses on every rank), always take the point-cloud solver."""
    two_d = X.ndim == 2 and Y.ndim == 2
    mine = (len(X), len(Y), X.shape[-1] if two_d else -1, Y.shape[-1] if two_d else -2)
    everyone = with_memory_shares(comm, mine)
    shapes = np.array([s for s, _ in everyone], dtype=np.int64).reshape(-1, 4)
    counts = shapes[:, :2]
    n_total, m_total = int(counts[:, 0].sum()), int(counts[:, 1].sum())
    if choice is False or n_total == 0 or m_total == 0 or len(np.unique(shapes[:, 2:])) > 1:
        return False
    if choice is True:
        return True
    if lazy or any(k in engine_kwargs for k in ("eps_scaling", "exchange")):
        return False
    return all(auto_forms(int(m) * n_total, int(shapes[0, 2]), X.dtype.itemsize, memory)
               for m, (_, memory) in zip(counts[:, 1], everyone))


def auto_forms(entries, d, itemsize, memory=None):
    """Whether ``dense="auto"`` forms a rank's block of `entries` (its targets
    times all sources) for points of d dimensions: up to DENSE_BYTES always;
    past it, if the dtype and d let the formed matrix win and the peak
    (PEAK_BYTES_PER_ENTRY per entry) is within DENSE_PEAK_BYTES and half of
    `memory`, the bytes available to this rank (None: not limited by it)."""
    if entries * itemsize <= DENSE_BYTES:
        return True
    if itemsize == 4 and d < DENSE_MIN_DIM_FLOAT32:
        return False
    return within_peak(entries * PEAK_BYTES_PER_ENTRY, memory)


def within_peak(peak, memory):
    """Whether a formed path's `peak` bytes on a rank are within DENSE_PEAK_BYTES
    and half of `memory`, the bytes available to the rank (None: not limited by
    it): the other half is left to the caller's own arrays."""
    return peak <= (DENSE_PEAK_BYTES if memory is None else min(DENSE_PEAK_BYTES, memory // 2))


def with_memory_shares(comm, mine):
    """Every rank's `mine` and its share of its machine's available memory (bytes,
    or None where unknown), in rank order: the ranks on one machine (by processor
    name) share it equally. Collective: one allgather."""
    everyone = comm.allgather((mine, available_memory(), MPI.Get_processor_name()))
    hosts = [host for _, _, host in everyone]
    return [(theirs, None if free is None else free // hosts.count(host)) for theirs, free, host in everyone]


def available_memory():
    """Bytes of physical memory available now on this rank's machine (shared by
    its ranks there): Linux's MemAvailable (free memory and the page cache it
    can drop), else the free pages, else None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def _counts(comm, k):
    return [int(c) for c in comm.allgather(int(k))]


def _gathered(comm, A, counts):
    """Every rank's rows of A (same trailing shape and dtype), in rank order."""
    A = np.ascontiguousarray(A)
    if comm.Get_size() == 1:
        return A
    row = int(np.prod(A.shape[1:], dtype=np.int64))
    out = np.empty((sum(counts),) + A.shape[1:], dtype=A.dtype)
    comm.Allgatherv(A, [out, [c * row for c in counts]])
    return out


def cost_matrix(rows, cols, metric, dtype, precision=np.float64):
    """C_ij = |rows_i - cols_j|^2 (or its square root, "euclidean"), formed in
    `precision` by one GEMM and stored as dtype; rows (..., n, d) and cols
    (..., m, d) give (..., n, m)."""
    R = np.asarray(rows, dtype=precision)
    Q = np.asarray(cols, dtype=precision)
    C = R @ np.swapaxes(Q, -1, -2)
    C *= -2
    C += (R * R).sum(axis=-1)[..., :, None]
    C += (Q * Q).sum(axis=-1)[..., None, :]
    np.maximum(C, 0, out=C)
    if metric == "euclidean":
        np.sqrt(C, out=C)
    return C.astype(dtype, copy=False)


def solve_dense(X, Y, a, b, reg, metric, options, warmstart, comm):
    """The point-cloud solver's results on the formed matrix: (log_u for this
    rank's sources, log_v for its targets, status, iterations, <P, C> over all
    ranks, the error after each iteration, the iteration of the first test).
    a, b: this rank's weights or None (uniform); options: the point-cloud
    solver's (tol, max_iter, threads)."""
    def finite():  # (the point-cloud solver's check and message: a NaN cost would name a matrix the caller never saw)
        if not (np.isfinite(X).all() and np.isfinite(Y).all()):
            raise ValueError("conveyor.ot: points must be finite")

    agree(comm, finite)
    counts = _counts(comm, X.shape[0])
    n_total, m_total = sum(counts), comm.allreduce(Y.shape[0])
    offset = sum(counts[:comm.Get_rank()])
    dtype = X.dtype
    # (a rank without points passes no weights while the others pass theirs: None is uniform, per rank)
    a_mine = np.full(X.shape[0], 1.0 / n_total, dtype) if a is None else a
    a_all = _gathered(comm, a_mine, counts)
    b_mine = np.full(Y.shape[0], 1.0 / m_total, dtype) if b is None else b
    Ct = cost_matrix(Y, _gathered(comm, X, counts), metric, dtype)
    largest = comm.allreduce(float(Ct.max()) if Ct.size else 0.0, op=MPI.MAX)
    engine = dict(tol=options["tol"], max_iter=options["max_iter"], norm="l1", check_every=options["check_every"],
                  columns_first=True, **{k: options[k] for k in ("threads",) if k in options})
    start = None if warmstart is None else np.asarray(warmstart[1], dtype=np.float64)
    # (a bad reg goes to the engine, which raises on every rank)
    log_domain = largest > _KERNEL_RANGE[dtype.itemsize] * abs(reg) or (
        start is not None and comm.allreduce(float(np.abs(start).max()) if start.size else 0.0, op=MPI.MAX) > 500)
    for attempt in (False, True):
        log_domain = log_domain or attempt
        if start is not None:
            engine["init_u"] = start if log_domain else np.exp(start)
        log_g, log_f_all, status, iterations, _, cost, _, history = _conveyor.sinkhorn_transport(
            Ct, b_mine, a_all, reg, comm_address(comm), False, dict(engine, log_domain=log_domain))
        if status != "numerical_failure" or log_domain:
            break
    return log_f_all[offset:offset + X.shape[0]], log_g, status, iterations, cost, history, 1


def dense_vjp(X, Y, f, g, reg, w, comm, metric="sqeuclidean", tol=1e-10, max_iter=None):
    """points_vjp's (dL/dX, dL/dY, dL/da, dL/db) on the formed plan: the same
    adjoint (its products with P one column wide), then dL/dC = W formed, and
    the points' gradients from W by two GEMMs of d columns (where
    points_vjp's sums take 2 d + 5 columns of plan applications). Collective;
    float64."""
    comm = MPI.COMM_SELF if comm is None else comm
    reg, w = float(reg), float(w)
    X, Y = (np.asarray(p, dtype=np.float64) for p in (X, Y))
    counts = _counts(comm, X.shape[0])
    mine = slice(sum(counts[:comm.Get_rank()]), sum(counts[:comm.Get_rank() + 1]))
    X_all = _gathered(comm, X, counts)
    Ct = cost_matrix(Y, X_all, metric, np.float64)
    Pt = np.exp(np.asarray(g, dtype=np.float64)[:, None]
                + _gathered(comm, np.asarray(f, dtype=np.float64), counts)[None, :] - Ct / reg)
    w_all = np.repeat(np.array(comm.allgather(w)), counts)  # (each rank's rows carry its own w)

    def apply(V, transpose, power=0):  # P @ V (V: this rank's targets' rows) or P^T @ V (its sources')
        if transpose:
            return Pt @ _gathered(comm, np.asarray(V, dtype=np.float64), counts)
        return _summed(comm, Pt.T @ V)[mine]

    PCt = Pt * Ct
    p_r, p_c = _summed(comm, Pt.sum(axis=0))[mine], Pt.sum(axis=1)
    row_cost = _summed(comm, PCt.sum(axis=0))[mine]
    col_cost = PCt @ w_all
    del PCt
    alpha, beta, _ = _adjoint(apply, w * row_cost, col_cost, p_r, p_c, reg, comm, tol, max_iter)
    # W_ji = P_ij (w_i + (alpha_i + beta_j - w_i C_ij) / reg), this rank's targets' rows; the points'
    # gradients are sums of W times dC/dx = 2 (x - y) (squared) or (x - y) / C (the distance).
    factor = Ct * (-w_all / reg)[None, :]
    factor += (w_all + _gathered(comm, alpha, counts) / reg)[None, :]
    factor += beta[:, None] / reg
    Pt *= factor  # (in place: the plan is not needed again)
    Wt, factor = Pt, None
    if metric == "euclidean":
        Wt *= np.divide(1.0, Ct, out=np.zeros_like(Ct), where=Ct > 0)
    scale = 1.0 if metric == "euclidean" else 2.0
    grad_Y = scale * (Y * Wt.sum(axis=1)[:, None] - Wt @ X_all)
    sums = _summed(comm, np.concatenate([Wt.sum(axis=0)[:, None], Wt.T @ Y], axis=1))[mine]
    grad_X = scale * (X * sums[:, :1] - sums[:, 1:])
    return grad_X, grad_Y, _centred(alpha, comm), _centred(beta, comm)
