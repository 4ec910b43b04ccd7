"""Gradients of conveyor.ot's losses by implicit differentiation of the Sinkhorn
fixed point (docs/algorithms.md, "Gradients"): the gradient of the value at
convergence, from the plan alone, instead of POT's differentiation through the
stored iterations.

For ``sinkhorn2``'s L = <P, M>, P the entropic optimum (P_ij = exp((f_i + g_j -
M_ij) / reg), rows summing to a, columns to b), linearizing the two marginal
constraints gives, with r = (P o M) 1, c = (P o M)^T 1, p_r = P 1, p_c = P^T 1:

    H [x; y] = [r; c] / reg,   H = [[diag(p_r), P], [P^T, diag(p_c)]]
    dL/dM = P o (1 - M / reg + x_i + y_j),   dL/da = reg x,   dL/db = reg y.

H is singular along (1, -1) (the potentials' shared constant), and [r; c] is
orthogonal to it (both sum to L), so the system is consistent; it is solved on
its Schur complement S y = c / reg - P^T (r / (reg p_r)), S = diag(p_c) - P^T
diag(1/p_r) P, by conjugate gradients preconditioned by diag(p_c): each
iteration applies P and P^T once (two plan applications). With ``comm`` (rows
split over ranks as in the solve) the column vectors are summed over the ranks:
one allreduce per iteration.

The weights' gradients are returned centred (each sums to zero): a and b are
histograms of fixed mass, so only changes that keep their sums move the value
(the balanced problem needs sum a = sum b); POT's unrolled gradients differ
from these by a constant per vector.
"""
import warnings

import numpy as np
from mpi4py import MPI


def _summed(comm, v):
    """v summed over the ranks of comm (a copy; v itself without comm)."""
    if comm is None or comm.Get_size() == 1:
        return v
    out = np.empty_like(v)
    comm.Allreduce(np.ascontiguousarray(v), out, op=MPI.SUM)
    return out


def _conjugate_gradients(apply, rhs, preconditioner, dot, tol, max_iter):
    """Solves apply(y) = rhs for symmetric positive semidefinite `apply` and a
    consistent rhs; returns (y, relative residual). Written here because the dot
    products must be the distributed ones (`dot`) and SciPy's cg changed its
    tolerance arguments between the versions Debian and PyPI carry."""
    y = np.zeros_like(rhs)
    r = rhs.copy()
    z = preconditioner * r
    p = z.copy()
    rz = dot(r, z)
    norm = np.sqrt(dot(rhs, rhs))
    if norm == 0:
        return y, 0.0
    for _ in range(max_iter):
        q = apply(p)
        pq = dot(p, q)
        if pq <= 0:
            break
        step = rz / pq
        y += step * p
        r -= step * q
        if np.sqrt(dot(r, r)) <= tol * norm:
            break
        z = preconditioner * r
        rz_next = dot(r, z)
        p = z + (rz_next / rz) * p
        rz = rz_next
    return y, float(np.sqrt(dot(r, r)) / norm)


def sinkhorn2_gradients(P, M, reg, comm=None, tol=1e-10, max_iter=None):
    """Gradients of L = <P, M> at the entropic optimum `P` with respect to `M`
    (this rank's rows), `a` (this rank's rows; centred over all ranks) and `b`
    (whole; centred). float64 throughout."""
    P = np.asarray(P, dtype=np.float64)
    M = np.asarray(M, dtype=np.float64)
    reg = float(reg)
    rows = P.sum(axis=1)
    cols = _summed(comm, P.sum(axis=0))
    PM = P * M
    r = PM.sum(axis=1) / reg
    c = _summed(comm, PM.sum(axis=0)) / reg
    inv_rows = np.divide(1.0, rows, out=np.zeros_like(rows), where=rows > 0)
    inv_cols = np.divide(1.0, cols, out=np.zeros_like(cols), where=cols > 0)

    def schur(y):
        return cols * y - _summed(comm, P.T @ (inv_rows * (P @ y)))

    rhs = c - _summed(comm, P.T @ (inv_rows * r))
    limit = max_iter if max_iter is not None else max(100, 10 * cols.size)
    y, residual = _conjugate_gradients(schur, rhs, inv_cols, lambda u, v: float(u @ v), tol, limit)
    if residual > max(tol, 1e-6):
        warnings.warn(f"conveyor.ot: the gradient's linear solve stopped at relative residual {residual:.1e} "
                      f"(reg {reg} may be too small for this problem)", UserWarning, stacklevel=3)
    x = inv_rows * (r - P @ y)
    grad_M = P * (1.0 - M / reg + x[:, None] + y[None, :])
    total_rows = _summed(comm, np.array([float(x.size)]))[0]
    grad_a = reg * (x - _summed(comm, np.array([x.sum()]))[0] / total_rows)
    grad_b = reg * (y - y.mean())
    return grad_M, grad_a, grad_b


def is_jax(*arrays):
    """Whether any of the arrays is JAX's (a concrete array or a tracer under jax.grad / jit)."""
    return any(type(x).__module__.split(".")[0] in ("jax", "jaxlib") for x in arrays)


def jax_sinkhorn2(a, b, M, reg, solve_plan, comm):
    """sinkhorn2's loss as a JAX function of (a, b, M) with a custom VJP: the
    forward pass solves on NumPy copies (solve_plan(a, b, M) -> this rank's plan;
    the loss summed over `comm`), the backward pass is sinkhorn2_gradients. Both
    run as host callbacks, so jax.grad, jax.value_and_grad and jax.jit work."""
    import jax
    import jax.numpy as jnp

    M = jnp.asarray(M)
    dtype = M.dtype if M.dtype in (jnp.float32, jnp.float64) else jnp.result_type(float)
    M = M.astype(dtype)
    n, m = M.shape
    # POT's empty histograms mean uniform ones (constants here: their gradients are dropped).
    a = jnp.full(n, 1.0 / (comm.allreduce(n) if comm is not None else n), dtype) if np.size(a) == 0 else jnp.asarray(a, dtype)
    b = jnp.full(m, 1.0 / m, dtype) if np.size(b) == 0 else jnp.asarray(b, dtype)
    scalar = jax.ShapeDtypeStruct((), dtype)

    def forward(a_, b_, M_):
        P = np.asarray(solve_plan(np.asarray(a_), np.asarray(b_), np.asarray(M_)))
        value = _summed(comm, np.array([float((P.astype(np.float64) * np.asarray(M_, np.float64)).sum())]))[0]
        return np.asarray(value, dtype), P.astype(dtype)

    @jax.custom_vjp
    def loss(a_, b_, M_):
        return jax.pure_callback(lambda *v: forward(*v)[0], scalar, a_, b_, M_)

    def loss_forward(a_, b_, M_):
        value, P = jax.pure_callback(forward, (scalar, jax.ShapeDtypeStruct(M_.shape, dtype)), a_, b_, M_)
        return value, (P, M_)

    def loss_backward(residual, g):
        P, M_ = residual

        def gradients(P_, M__):
            gM, ga, gb = sinkhorn2_gradients(P_, M__, reg, comm)
            return gM.astype(dtype), ga.astype(dtype), gb.astype(dtype)

        shapes = (jax.ShapeDtypeStruct(M_.shape, dtype), jax.ShapeDtypeStruct(a.shape, dtype),
                  jax.ShapeDtypeStruct(b.shape, dtype))
        gM, ga, gb = jax.pure_callback(gradients, shapes, P, M_)
        return g * ga, g * gb, g * gM

    loss.defvjp(loss_forward, loss_backward)
    return loss(a, b, M)
