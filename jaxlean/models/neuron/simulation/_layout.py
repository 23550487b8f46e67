"""Where the time loop keeps each node: the solver's order, padding, then a dummy entry."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.linalg import Tree
from jaxlean.models.neuron.cell.cell import Cell

__all__ = ["PAD_FROM", "PAD_TO", "Layout"]

PAD_TO = 128
"""Large loop vectors are padded to a multiple of this many entries (:class:`Layout`)."""
PAD_FROM = 4096
"""Loop vectors this long or longer are padded (then the padding adds at most about 3 %)."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where the time loop keeps each node: the solver's order, padding, then its dummy entry.

    The loop's vectors are laid out as :func:`tree_solve_in_layout` wants them,
    so no step permutes or pads around the solve (in the forward or the
    backward pass). ``order[i]`` is the node at position ``i`` (``nodes`` for
    the padding and the dummy); ``position[j]`` is where node ``j`` sits.

    A large cell's vectors are padded with isolated nodes (no membrane, zero
    solution) to a multiple of :data:`PAD_TO`: XLA:CPU splits its costliest
    elementwise kernels over threads in equal blocks, and when the length does
    not divide evenly, a kernel that also reads a stored step (the backward
    pass) is not vectorised. On the 10k-compartment cell of ``jaxlean bench
    solver`` that kernel took 88 us per step, padded 29-33 us.
    """

    tree: Tree
    order: np.ndarray
    position: np.ndarray

    @classmethod
    def of(cls, cell: Cell) -> Layout:
        tree = cell.tree
        solver = tree if tree.local is None else tree.local
        size = tree.n + 1
        extra = -size % PAD_TO if size >= PAD_FROM else 0
        order = np.concatenate([tree.to_local[:-1], np.full(extra + 1, tree.n)])
        position = np.append(tree.from_local[:-1], tree.n + extra)
        return cls(solver.with_isolated_nodes(extra) if extra else solver, order, position)

    def put(self, x: jax.Array, fill: float = 0.0) -> jax.Array:
        """One value per node (compartments, then junctions) -> this layout."""
        return jnp.concatenate([x, jnp.full((1,), fill, x.dtype)])[self.order]

    def take(self, x: jax.Array, nodes: int) -> jax.Array:
        """This layout -> the first ``nodes`` nodes in their own numbering."""
        return x[self.position[:nodes]]
