# SPDX-License-Identifier: BSD-3-Clause
"""The oracle of the gradient tests (test_ot_gradients.py, test_ot_solve.py): the
log-domain Sinkhorn loop in jax.numpy, unrolled with lax.fori_loop, which JAX
differentiates through its iterations as POT does."""


def unrolled_plan(a, b, M, reg, iterations=500):
    """The entropic plan after `iterations` log-domain updates (columns first)."""
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    def step(_, fg):
        f, g = fg
        g = reg * jnp.log(b) - reg * logsumexp((f[:, None] - M) / reg, axis=0)
        f = reg * jnp.log(a) - reg * logsumexp((g[None, :] - M) / reg, axis=1)
        return f, g

    f, g = jax.lax.fori_loop(0, iterations, step, (jnp.zeros_like(a), jnp.zeros_like(b)))
    return jnp.exp((f[:, None] + g[None, :] - M) / reg)
