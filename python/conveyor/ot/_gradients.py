# SPDX-License-Identifier: BSD-3-Clause
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
import types
import warnings

import numpy as np
from mpi4py import MPI

from .._mpi import agree


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


def plan_vjp(P, G, reg, comm=None, tol=1e-10, max_iter=None, marginals=None):
    """The gradients of <P, G> (G held constant) with respect to `M` (this rank's
    rows), `a` (this rank's rows) and `b` (whole), P being the entropic optimum
    for (a, b, M): the plan's vector-Jacobian product. Balanced (`marginals`
    None): the weights' gradients centred over all ranks. Unbalanced:
    `marginals` = (reg_m_rows, reg_m_cols, reference, a, b) of the problem
    solved (_unbalanced; reference "kl" or "entropy"). float64 throughout."""
    P = np.asarray(P, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    reg = float(reg)
    rows = P.sum(axis=1)
    cols = _summed(comm, P.sum(axis=0))
    PG = P * G
    r = PG.sum(axis=1) / reg
    c = _summed(comm, PG.sum(axis=0)) / reg
    # A KL penalty of weight reg_m on a marginal adds reg / reg_m to its block of H
    # (1 + reg / reg_m times the marginal): nonsingular unless both are constraints.
    diag_rows, diag_cols = rows, cols
    if marginals is not None:
        diag_rows = rows * (1.0 + reg / float(marginals[0]))
        diag_cols = cols * (1.0 + reg / float(marginals[1]))
    inv_rows = np.divide(1.0, diag_rows, out=np.zeros_like(rows), where=diag_rows > 0)
    inv_cols = np.divide(1.0, diag_cols, out=np.zeros_like(cols), where=diag_cols > 0)

    def schur(y):
        return diag_cols * y - _summed(comm, P.T @ (inv_rows * (P @ y)))

    rhs = c - _summed(comm, P.T @ (inv_rows * r))
    limit = max_iter if max_iter is not None else max(100, 10 * cols.size)
    y, residual = _conjugate_gradients(schur, rhs, inv_cols, lambda u, v: float(u @ v), tol, limit)
    if residual > max(tol, 1e-6):
        warnings.warn(f"conveyor.ot: the gradient's linear solve stopped at relative residual {residual:.1e} "
                      f"(reg {reg} may be too small for this problem)", UserWarning, stacklevel=3)
    Py = P @ y
    x = inv_rows * (r - Py)
    grad_M = P * (x[:, None] + y[None, :] - G / reg)
    if marginals is None:
        total_rows = _summed(comm, np.array([float(x.size)]))[0]
        grad_a = reg * (x - _summed(comm, np.array([x.sum()]))[0] / total_rows)
        grad_b = reg * (y - y.mean())
        return grad_M, grad_a, grad_b
    a, b = (np.asarray(w, dtype=np.float64) for w in marginals[3:5])
    if marginals[2] == "kl":  # the reference a b^T moves with the weights
        num_a, num_b = reg * (r - Py), reg * (c - _summed(comm, P.T @ x))
    else:
        num_a, num_b = reg * x * rows, reg * y * cols
    return (grad_M, np.divide(num_a, a, out=np.zeros_like(a), where=a > 0),
            np.divide(num_b, b, out=np.zeros_like(b), where=b > 0))


def sinkhorn2_gradients(P, M, reg, comm=None, tol=1e-10, max_iter=None):
    """Gradients of L = <P, M> at the entropic optimum `P` with respect to `M`
    (this rank's rows), `a` (this rank's rows; centred over all ranks) and `b`
    (whole; centred): the plan's VJP with G = M, plus P itself for M."""
    grad_M, grad_a, grad_b = plan_vjp(P, M, reg, comm, tol, max_iter)
    return grad_M + np.asarray(P, dtype=np.float64), grad_a, grad_b


def is_jax(*arrays):
    """Whether any of the arrays is JAX's (a concrete array or a tracer under jax.grad / jit)."""
    return any(type(x).__module__.split(".")[0] in ("jax", "jaxlib") for x in arrays)


def jax_plan(a, b, M, reg, solve, comm, penalties=None):
    """The entropic plan and its log potentials as a JAX function of (a, b, M)
    with a custom VJP (plan_vjp; `penalties`: None for the balanced problem, else
    (reg_m_rows, reg_m_cols, reference) of the unbalanced one; the potentials' cotangents are not used: callers
    hand the potentials out through jax.lax.stop_gradient). The forward pass solves
    on NumPy copies (solve(a, b, M) -> (this rank's plan, log u, log v)), the
    backward pass is one implicit solve; both are host callbacks, so jax.grad,
    jax.value_and_grad and jax.jit work. a, b, M: JAX arrays of one floating dtype."""
    import jax

    dtype = M.dtype
    shapes = (jax.ShapeDtypeStruct(M.shape, dtype), jax.ShapeDtypeStruct(a.shape, dtype),
              jax.ShapeDtypeStruct(b.shape, dtype))

    def forward(a_, b_, M_):
        return tuple(np.asarray(x).astype(dtype) for x in solve(np.asarray(a_), np.asarray(b_), np.asarray(M_)))

    @jax.custom_vjp
    def solution(a_, b_, M_):
        return jax.pure_callback(forward, shapes, a_, b_, M_)

    def solution_forward(a_, b_, M_):
        out = jax.pure_callback(forward, shapes, a_, b_, M_)
        return out, (out[0], a_, b_)

    def solution_backward(residuals, cotangents):
        def gradients(P_, a_, b_, G_):
            marginals = None if penalties is None else (*penalties, a_, b_)
            gM, ga, gb = plan_vjp(P_, G_, reg, comm, marginals=marginals)
            return ga.astype(dtype), gb.astype(dtype), gM.astype(dtype)

        return jax.pure_callback(gradients, (shapes[1], shapes[2], shapes[0]), *residuals, cotangents[0])

    solution.defvjp(solution_forward, solution_backward)
    return solution(a, b, M)


def jax_inputs(a, b, M, comm):
    """a, b, M as JAX arrays of M's floating dtype; POT's empty histograms as uniform ones."""
    import jax.numpy as jnp

    M = jnp.asarray(M)
    dtype = M.dtype if M.dtype in (jnp.float32, jnp.float64) else jnp.result_type(float)
    M = M.astype(dtype)
    n, m = M.shape
    a = jnp.full(n, 1.0 / (comm.allreduce(n) if comm is not None else n), dtype) if a is None or np.size(a) == 0 \
        else jnp.asarray(a, dtype)
    b = jnp.full(m, 1.0 / m, dtype) if b is None or np.size(b) == 0 else jnp.asarray(b, dtype)
    return a, b, M


def total_over_ranks(local, comm):
    """A JAX scalar summed over `comm`, differentiable in this rank's term (the
    others' terms are constants here: each rank differentiates its own)."""
    if comm is None or comm.Get_size() == 1:
        return local
    import jax

    rest = jax.pure_callback(lambda x: np.asarray(_summed(comm, np.array([float(x)]))[0] - float(x), dtype=x.dtype),
                             jax.ShapeDtypeStruct((), local.dtype), jax.lax.stop_gradient(local))
    return local + rest


def jax_vector_total(local, comm):
    """A JAX vector summed over `comm`, differentiable in this rank's term."""
    if comm is None or comm.Get_size() == 1:
        return local
    import jax

    def rest(x):
        mine = np.asarray(x, dtype=np.float64)
        return (_summed(comm, mine) - mine).astype(x.dtype)

    return local + jax.pure_callback(rest, jax.ShapeDtypeStruct(local.shape, local.dtype),
                                     jax.lax.stop_gradient(local))


def jax_shared(x, comm):
    """x (the same on every rank of `comm`, as b) unchanged, its cotangent summed
    over the ranks: where each rank's term of a total uses it, every rank gets
    the whole gradient (collective in the backward pass)."""
    if comm is None or comm.Get_size() == 1:
        return x
    import jax

    @jax.custom_vjp
    def shared(x_):
        return x_

    def backward(_, cotangent):
        summed = jax.pure_callback(lambda g: _summed(comm, np.asarray(g, dtype=np.float64)).astype(g.dtype),
                                   jax.ShapeDtypeStruct(cotangent.shape, cotangent.dtype), cotangent)
        return (summed,)

    shared.defvjp(lambda x_: (x_, None), backward)
    return shared(x)


def is_torch(*arrays):
    """Whether any of the arrays is a PyTorch tensor."""
    return any(type(x).__module__.split(".")[0] == "torch" for x in arrays)


def _is_empty(x):
    """POT's "uniform weights": None or an empty list, array or tensor."""
    if x is None:
        return True
    numel = getattr(x, "numel", None)
    return numel() == 0 if callable(numel) else np.size(x) == 0


def torch_inputs(a, b, M, comm):
    """a, b, M as tensors of M's floating dtype (float64 for other dtypes) on M's
    device; POT's empty histograms as uniform ones."""
    import torch

    M = torch.as_tensor(M)
    dtype = M.dtype if M.dtype in (torch.float32, torch.float64) else torch.float64
    M = M.to(dtype)
    n, m = M.shape
    total = comm.allreduce(n) if comm is not None else n
    a = torch.full((n,), 1.0 / total, dtype=dtype) if _is_empty(a) else torch.as_tensor(a).to(dtype)
    b = torch.full((m,), 1.0 / m, dtype=dtype) if _is_empty(b) else torch.as_tensor(b).to(dtype)
    return a, b, M


def _numpy_of(t):
    """A CPU tensor's values as a NumPy array (a GPU tensor is refused with its device named)."""
    if t.device.type != "cpu":
        raise ValueError(f"conveyor.ot: tensors on {t.device} are not supported (CPU tensors only)")
    return t.detach().numpy()


def torch_plan(a, b, M, reg, solve, comm, penalties=None):
    """The entropic plan and its log potentials as a torch.autograd.Function of
    (a, b, M), as jax_plan (`penalties` likewise): the forward pass solves on NumPy views (solve(a, b,
    M) -> (this rank's plan, log u, log v)), the backward pass is plan_vjp (the
    potentials are marked non-differentiable). With comm, backward() is
    collective, as the solve is."""
    import torch

    def forward(ctx, a_, b_, M_):
        def convert():
            return tuple(_numpy_of(x) for x in (a_, b_, M_))

        # One rank's bad tensor is every rank's error, not the others waiting in the solve.
        arrays = convert() if comm is None else agree(comm, convert)
        out = tuple(torch.from_numpy(np.ascontiguousarray(np.asarray(x))).to(M_.dtype) for x in solve(*arrays))
        ctx.save_for_backward(out[0])
        ctx.weights = arrays[:2]
        ctx.mark_non_differentiable(out[1], out[2])
        return out

    def backward(ctx, grad_plan, _grad_log_u, _grad_log_v):
        (P,) = ctx.saved_tensors
        marginals = None if penalties is None else (*penalties, *ctx.weights)
        gM, ga, gb = plan_vjp(P.numpy(), _numpy_of(grad_plan), reg, comm, marginals=marginals)
        return tuple(torch.from_numpy(np.ascontiguousarray(g)).to(P.dtype) for g in (ga, gb, gM))

    # The Function made with type(): a class statement here would be a nested class
    # that the stubs' checker (mypy.stubtest) takes for a missing module member.
    Plan = type("Plan", (torch.autograd.Function,), {"forward": staticmethod(forward),
                                                      "backward": staticmethod(backward)})
    return Plan.apply(a, b, M)


def torch_total_over_ranks(local, comm):
    """A scalar tensor summed over `comm`, differentiable in this rank's term."""
    if comm is None or comm.Get_size() == 1:
        return local
    value = float(local.detach())
    return local + (float(_summed(comm, np.array([value]))[0]) - value)


def torch_vector_total(local, comm):
    """A tensor summed over `comm`, differentiable in this rank's term."""
    if comm is None or comm.Get_size() == 1:
        return local
    import torch

    mine = local.detach().numpy().astype(np.float64)
    return local + torch.from_numpy(_summed(comm, mine) - mine).to(local.dtype)


def torch_shared(x, comm):
    """x unchanged, its cotangent summed over the ranks (as jax_shared)."""
    if comm is None or comm.Get_size() == 1:
        return x
    import torch

    def backward(ctx, grad):
        return torch.from_numpy(_summed(comm, grad.detach().numpy().astype(np.float64))).to(grad.dtype)

    Shared = type("Shared", (torch.autograd.Function,), {"forward": staticmethod(lambda ctx, x_: x_.clone()),
                                                          "backward": staticmethod(backward)})
    return Shared.apply(x)


def _jax_stop(x):
    import jax
    return jax.lax.stop_gradient(x)


def _jax_math():
    import jax.numpy as jnp
    return jnp


def _torch_math():
    import torch
    return torch


# What solve and sinkhorn2 differentiate with: the inputs' conversion, the
# differentiable plan, the totals over ranks (a scalar's, a vector's), an input
# whole on every rank (b: its gradient summed), stop-gradient and the array module.
_JAX_OPS = types.SimpleNamespace(inputs=jax_inputs, plan=jax_plan, total=total_over_ranks,
                                 vector_total=jax_vector_total, shared=jax_shared, stop=_jax_stop, math=_jax_math)
_TORCH_OPS = types.SimpleNamespace(inputs=torch_inputs, plan=torch_plan, total=torch_total_over_ranks,
                                   vector_total=torch_vector_total, shared=torch_shared, stop=lambda x: x.detach(),
                                   math=_torch_math)


def autodiff_ops(*arrays, jax_ops=_JAX_OPS, torch_ops=_TORCH_OPS):
    """The differentiating library of the arrays (its ops: JAX's or PyTorch's, by
    default the dense losses'), or None."""
    if is_jax(*arrays):
        return jax_ops
    if is_torch(*arrays):
        return torch_ops
    return None


def autodiff_sinkhorn2(ops, a, b, M, reg, solve_plan, comm):
    """sinkhorn2's loss <P, M> (summed over `comm`) in the arrays' own library,
    differentiable through the plan (jax_plan / torch_plan)."""
    a, b, M = ops.inputs(a, b, M, comm)
    P, _, _ = ops.plan(a, b, M, reg, solve_plan, comm)
    return ops.total(ops.math().sum(P * M), comm)
