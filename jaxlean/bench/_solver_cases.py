"""Inputs and baselines of the ``solver`` benchmark: random branched trees, a plain Hines loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxlean.linalg import Tree


def random_branched_tree(n: int, seed: int = 0, branch_length: tuple[int, int] = (5, 40)):
    """Parent array of a neuron-like tree: unbranched runs of random length, each
    attached to a random earlier node (so depth grows with the branch lengths)."""
    rng = np.random.default_rng(seed)
    parents = np.full(n, -1)
    start = 1
    while start < n:
        length = min(int(rng.integers(*branch_length)), n - start)
        parents[start] = rng.integers(0, start)
        parents[start + 1: start + length] = np.arange(start, start + length - 1)
        start += length
    return parents


def dominant_system(n: int, dtype, seed: int = 1):
    """Random diagonally dominant entries like a cable matrix, and a right-hand side."""
    rng = np.random.default_rng(seed)
    lower, upper = rng.uniform(-1.0, -0.1, (2, n))
    diag = 4.0 + rng.uniform(0.0, 1.0, n)
    b = rng.normal(size=n)
    return tuple(jnp.asarray(a, dtype) for a in (lower, diag, upper, b))


def loop_solve(tree: Tree):
    """The naive baseline: Hines elimination as a plain ``fori_loop`` with ``.at[].set``.

    Differentiating this with ``jax.grad`` makes JAX carry (and copy) the whole
    state through every step of the reversed loop.
    """
    order = jnp.asarray(tree.order)
    parent = jnp.asarray(np.where(tree.parents < 0, 0, tree.parents))

    def solve(lower, diag, upper, b):
        def eliminate(i, carry):
            d, rhs = carry
            node = order[i]
            up = parent[node]
            factor = upper[node] / d[node]
            return (d.at[up].set(d[up] - factor * lower[node]),
                    rhs.at[up].set(rhs[up] - factor * rhs[node]))

        d, rhs = lax.fori_loop(0, order.shape[0], eliminate, (diag, b))
        steps = order.shape[0]

        def substitute(i, x):
            node = order[steps - 1 - i]
            return x.at[node].set((rhs[node] - lower[node] * x[parent[node]]) / d[node])

        return lax.fori_loop(0, steps, substitute, rhs / d)

    return solve


def gradient_of(solve, weights: jax.Array):
    """``grad`` of ``sum(weights * solve(...))`` with respect to all four inputs."""
    return jax.grad(lambda *a: jnp.sum(weights * solve(*a)), argnums=(0, 1, 2, 3))
