"""Gaussian elimination on a tree matrix, leaves to roots, then back substitution.

Arrays are node-first with one extra dummy node at index ``n`` that stands in
for the parent of every root: entries ``(n + 1, *batch, 1)``, right-hand sides
``(n + 1, *batch, k)``. Root entries of ``lower``/``upper`` are zero and the
dummy row is the identity, so roots need no special case. None of this is ever
differentiated: :func:`jaxlean.linalg.tree.tree_solve` wraps it in the implicit rule.

Two schedules give the same result:

* sequential (Hines): one node per loop step, children before parents; O(n)
  work, best where loop steps are cheap (CPU).
* level: all nodes of equal height (distance to the farthest leaf) in one
  vectorised step, then back substitution by pointer jumping (recursive
  doubling) in ``ceil(log2(depth + 1))`` vectorised rounds; best on GPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def eliminate(steps: np.ndarray, parent: np.ndarray, lower: jax.Array, diag: jax.Array,
              upper: jax.Array, b: jax.Array):
    """Eliminate ``steps[i]`` into its parents' rows, children first.

    ``steps`` is the Hines order (one node per step) or the padded level rows (a
    level of nodes of equal height per step; padding is the dummy node).
    """
    steps, parent = jnp.asarray(steps), jnp.asarray(parent)

    def step(i, carry):
        d, rhs = carry
        nodes = steps[i]
        up = parent[nodes]
        factor = upper[nodes] / d[nodes]
        return d.at[up].add(-factor * lower[nodes]), rhs.at[up].add(-factor * rhs[nodes])

    return lax.fori_loop(0, steps.shape[0], step, (diag, b))


def back_substitute_sequential(order: np.ndarray, parent: np.ndarray, lower: jax.Array,
                               d: jax.Array, rhs: jax.Array) -> jax.Array:
    """``x[c] = (rhs[c] - lower[c] x[parent c]) / d[c]``, parents first."""
    order, parent = jnp.asarray(order), jnp.asarray(parent)
    x = rhs / d
    n_steps = order.shape[0]

    def step(i, x):
        node = order[n_steps - 1 - i]
        return x.at[node].set(x[node] - lower[node] / d[node] * x[parent[node]])

    return lax.fori_loop(0, n_steps, step, x)


def back_substitute_jumping(n_rounds: int, parent: np.ndarray, lower: jax.Array,
                            d: jax.Array, rhs: jax.Array) -> jax.Array:
    """Solve ``x[c] = beta[c] + alpha[c] x[parent c]`` by pointer jumping.

    After round ``r`` each node holds the sum over its first ``2**r`` ancestors,
    so ``ceil(log2(depth + 1))`` rounds reach every root.
    """
    alpha = -lower / d
    beta = rhs / d
    pointer = jnp.asarray(parent)
    for _ in range(n_rounds):
        beta = beta + alpha * beta[pointer]
        alpha = alpha * alpha[pointer]
        pointer = pointer[pointer]
    return beta
