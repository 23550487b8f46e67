"""The mechanisms' reads and writes at their compartments, as one gather and one scatter-add.

A mechanism inserted on some compartments reads the voltage there (a gather) and adds its
currents to the membrane's diagonal, drive and ion totals there (scatter-adds). Done per
mechanism, each is its own kernel in the compiled step, and the backward pass transposes
each gather into one more scatter: on Hay's L5PC (eleven mechanisms by region) about a
fifth of the step's kernels. Here all mechanisms read with one gather and each vector is
added to with one scatter-add, in both passes.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def gather_each(x: jax.Array, where: Sequence[np.ndarray | None]) -> list[jax.Array]:
    """``[x if w is None else x[w] for w in where]``, with one gather for all of them."""
    some = [w for w in where if w is not None]
    if len(some) < 2:
        return [x if w is None else x[w] for w in where]
    taken = x[np.concatenate(some)]
    out, start = [], 0
    for w in where:
        if w is None:
            out.append(x)
        else:
            out.append(taken[start:start + w.size])
            start += w.size
    return out


class Sums:
    """Values to add into vectors at positions, kept until :meth:`into` adds each vector's
    all at once (one scatter-add)."""

    def __init__(self) -> None:
        self.parts: dict[str, list[tuple[np.ndarray, jax.Array]]] = {}

    def add(self, name: str, where: np.ndarray, values: jax.Array) -> None:
        self.parts.setdefault(name, []).append((where, values))

    def into(self, name: str, total: jax.Array) -> jax.Array:
        """``total`` with every value kept for ``name`` added at its position."""
        parts = self.parts.pop(name, [])
        if not parts:
            return total
        if len(parts) == 1:
            return total.at[parts[0][0]].add(parts[0][1])
        positions = np.concatenate([where for where, _ in parts])
        values = jnp.concatenate([jnp.broadcast_to(x, where.shape) for where, x in parts])
        return total.at[positions].add(values)
