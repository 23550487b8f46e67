"""Differentiable solve of a tree-structured (Hines) matrix.

A matrix whose graph is a forest, as in a branched cable (neuron) model:
``A[c, c] = diag[c]``, ``A[c, parent(c)] = lower[c]``, ``A[parent(c), c] = upper[c]``.
:class:`Tree` holds the static structure, built once in NumPy; :func:`tree_solve`
solves in O(n) and takes derivatives by the shared implicit rule, so its
gradient costs one transposed solve (the transpose swaps ``lower`` and ``upper``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError, StructureError
from jaxlean.linalg import _tree_kernels as kernels
from jaxlean.linalg import _tree_structure as structure
from jaxlean.linalg._finite import check_finite
from jaxlean.linalg._implicit import implicit_linear_solve
from jaxlean.linalg._shapes import as_columns

__all__ = ["SCHEDULES", "Schedule", "Tree", "default_schedule", "tree_solve",
           "tree_solve_in_layout"]

Schedule = Literal["sequential", "level"]
SCHEDULES = ("sequential", "level")


@dataclasses.dataclass(frozen=True, eq=False)
class Tree:
    """Static structure of a forest: elimination order and both schedules.

    Build with :meth:`from_parents`. Compared and hashed by identity, so it can
    be a static argument of ``jax.jit``. The solver runs on :attr:`local`, the
    same forest renumbered roots first and breadth first, so the sequential
    elimination walks memory contiguously whatever the caller's numbering
    (a randomly numbered tree would otherwise cost a cache miss per node).

    Attributes:
      parents: parent of each node, ``-1`` for roots.
      order: non-root nodes, every child before its parent (Hines order).
      levels: non-root nodes grouped by height, one padded row per level (pad = ``n``).
      depth: largest number of edges from a node up to its root.
      permutation: the solver's numbering: ``permutation[i]`` is the node at position ``i``.
      local: this forest renumbered by ``permutation`` (``None`` when already so numbered).
    """

    parents: np.ndarray
    order: np.ndarray
    levels: np.ndarray
    depth: int
    permutation: np.ndarray
    local: Tree | None = None

    @classmethod
    def from_parents(cls, parents: object) -> Tree:
        """Build the structure from a parent array (``-1`` marks a root; any numbering).

        Raises:
          TreeError: a parent index is out of range or the parents form a cycle;
            the message names the node.
        """
        parents = structure.validate_parents(parents)
        bfs = structure.breadth_first_order(parents)
        if np.array_equal(bfs, np.arange(bfs.size)):
            return cls._from_parents_first(parents, bfs)
        position = np.empty_like(bfs)
        position[bfs] = np.arange(bfs.size)
        local_parents = np.where(parents[bfs] < 0, -1, position[parents[bfs]])
        local = cls._from_parents_first(local_parents, np.arange(bfs.size))
        return dataclasses.replace(cls._from_parents_first(parents, bfs), permutation=bfs,
                                   local=local)

    @classmethod
    def _from_parents_first(cls, parents: np.ndarray, parents_first: np.ndarray) -> Tree:
        """Schedules from an order that lists every parent before its children."""
        is_root = parents < 0
        order = parents_first[::-1][~is_root[parents_first[::-1]]]
        height = structure.heights(parents, parents_first)
        levels = structure.padded_levels(height, is_root, parents.size)
        depth = int(structure.depths(parents, parents_first).max())
        return cls(parents, order, levels, depth, np.arange(parents.size))

    def with_isolated_nodes(self, extra: int) -> Tree:
        """This forest with ``extra`` isolated nodes (childless roots) numbered after its own.

        The forest must be in its solver's numbering (``local is None``); so is
        the result, whose first ``n`` nodes are this forest's. The extra nodes
        cost the elimination nothing (it walks non-root nodes only).
        """
        if self.local is not None:
            raise StructureError("with_isolated_nodes needs a tree in its solver's numbering "
                                 "(use tree.local)")
        parents = np.concatenate([self.parents, np.full(extra, -1, self.parents.dtype)])
        return self._from_parents_first(parents, np.arange(parents.size))

    @property
    def n(self) -> int:
        """Number of nodes."""
        return int(self.parents.size)

    @functools.cached_property
    def padded_parents(self) -> np.ndarray:
        """Parents with roots (and the dummy node ``n``) pointing at the dummy node."""
        return np.concatenate([np.where(self.parents < 0, self.n, self.parents), [self.n]])

    @functools.cached_property
    def to_local(self) -> np.ndarray:
        """Gather indices into the solver's numbering, the dummy node ``n`` kept last."""
        return np.append(self.permutation, self.n)

    @functools.cached_property
    def from_local(self) -> np.ndarray:
        """Gather indices back from the solver's numbering (inverse of :attr:`to_local`)."""
        return np.argsort(self.to_local)


def default_schedule() -> Schedule:
    """``"sequential"`` on CPU, ``"level"`` on accelerators."""
    return "sequential" if jax.default_backend() == "cpu" else "level"


def _node_first(a: jax.Array, batch: tuple[int, ...], fill: float) -> jax.Array:
    """``batch + (n, k)`` -> ``(n + 1, *batch, k)`` with the dummy row set to ``fill``."""
    a = jnp.moveaxis(a, -2, 0)
    return jnp.concatenate([a, jnp.full((1, *a.shape[1:]), fill, a.dtype)], axis=0)


def _solver(tree: Tree, schedule: Schedule):
    """``matvec``, ``solve`` and ``transpose_solve`` in the numbering of ``tree`` itself."""
    parent = tree.padded_parents

    def solve(operator, rhs):
        lower, diag, upper = operator
        if tree.order.size == 0:
            return rhs / diag
        if schedule == "sequential":
            d, rhs = kernels.eliminate(tree.order, parent, lower, diag, upper, rhs)
            return kernels.back_substitute_sequential(tree.order, parent, lower, d, rhs)
        d, rhs = kernels.eliminate(tree.levels, parent, lower, diag, upper, rhs)
        rounds = math.ceil(math.log2(tree.depth + 1))
        return kernels.back_substitute_jumping(rounds, parent, lower, d, rhs)

    def transpose_solve(operator, rhs):
        lower, diag, upper = operator
        return solve((upper, diag, lower), rhs)

    def matvec(operator, x):
        lower, diag, upper = operator
        y = diag * x + lower * x[parent]
        return y.at[parent].add(upper * x).at[-1].set(0)

    return matvec, solve, transpose_solve


def tree_solve(tree: Tree, lower: jax.Array, diag: jax.Array, upper: jax.Array,
               b: jax.Array, *, schedule: Schedule | None = None,
               check: bool = False) -> jax.Array:
    """Solve ``A x = b`` for the tree matrix ``A``, with implicit derivatives.

    No pivoting: stable for diagonally dominant matrices (every cable matrix is).
    ``lower`` and ``upper`` at roots are ignored and get zero gradient. Works
    under ``jit``, ``vmap`` (of right-hand sides and of matrices), ``grad`` and ``jvp``.

    Args:
      tree: the structure, from :meth:`Tree.from_parents`.
      lower, diag, upper: entries, shape ``batch + (n,)``; leading axes broadcast
        against each other and against ``b``.
      b: right-hand side, ``batch + (n,)``, or ``batch + (n, k)`` for ``k`` of them.
      schedule: ``"sequential"`` (Hines) or ``"level"``; default by backend
        (:func:`default_schedule`).
      check: raise :class:`~jaxlean.errors.NonFiniteError` (a runtime check under
        ``jit``) when the solution holds NaN or infinity.

    Returns:
      ``x`` with the broadcast batch shape and ``b``'s trailing shape.
    """
    schedule = default_schedule() if schedule is None else schedule
    if schedule not in SCHEDULES:
        raise ConfigError(f"schedule must be one of {SCHEDULES}; got {schedule!r}")
    lower, diag, upper, b = (jnp.asarray(a) for a in (lower, diag, upper, b))
    n = tree.n
    for name, entries in (("lower", lower), ("diag", diag), ("upper", upper)):
        if entries.ndim == 0 or entries.shape[-1] != n:
            raise StructureError(f"{name} must have shape (..., {n}); got {entries.shape}")
    rhs, vector_rhs = as_columns(b, n)
    batch = jnp.broadcast_shapes(lower.shape[:-1], diag.shape[:-1], upper.shape[:-1],
                                 rhs.shape[:-2])
    dtype = jnp.result_type(lower, diag, upper, b)
    is_root = jnp.asarray(tree.parents < 0)
    lower, upper = (jnp.where(is_root, 0, a) for a in (lower, upper))
    lower, diag, upper = (jnp.broadcast_to(a.astype(dtype), (*batch, n))[..., None]
                          for a in (lower, diag, upper))
    rhs = jnp.broadcast_to(rhs.astype(dtype), (*batch, n, rhs.shape[-1]))
    operator = (_node_first(lower, batch, 0), _node_first(diag, batch, 1),
                _node_first(upper, batch, 0))
    rhs = _node_first(rhs, batch, 0)
    if tree.local is None:
        x = implicit_linear_solve(*_solver(tree, schedule), operator, rhs)
    else:
        operator = tuple(entries[tree.to_local] for entries in operator)
        x = implicit_linear_solve(*_solver(tree.local, schedule), operator, rhs[tree.to_local])
        x = x[tree.from_local]
    x = jnp.moveaxis(x[:-1], 0, -2)
    x = check_finite(x, "tree_solve", x.ndim - 2) if check else x
    return x[..., 0] if vector_rhs else x


def tree_solve_in_layout(tree: Tree, lower: jax.Array, diag: jax.Array, upper: jax.Array,
                         b: jax.Array, *, schedule: Schedule | None = None) -> jax.Array:
    """:func:`tree_solve` for vectors already in the solver's layout, with implicit derivatives.

    For a caller that solves many times (a time loop) and keeps its vectors in
    that layout throughout: no permutation, padding or reshaping per call, so
    neither the forward nor the backward pass moves data around the solve.

    Args:
      tree: numbered as its solver walks it (``tree.local is None``; for any
        tree, :attr:`Tree.local` is).
      lower, diag, upper, b: shape ``(n + 1,)``: the ``n`` nodes, then a dummy
        entry with ``lower = upper = b = 0`` and ``diag = 1``. ``lower`` and
        ``upper`` must be zero at roots too (they are the dummy's couplings).

    Returns:
      ``x`` of shape ``(n + 1,)``, its last entry 0.
    """
    schedule = default_schedule() if schedule is None else schedule
    if schedule not in SCHEDULES:
        raise ConfigError(f"schedule must be one of {SCHEDULES}; got {schedule!r}")
    if tree.local is not None:
        raise StructureError("tree_solve_in_layout needs a tree in its solver's numbering "
                             "(pass tree.local)")
    for name, entries in (("lower", lower), ("diag", diag), ("upper", upper), ("b", b)):
        if jnp.shape(entries) != (tree.n + 1,):
            raise StructureError(f"{name} must have shape ({tree.n + 1},) (nodes and the dummy); "
                                 f"got {jnp.shape(entries)}")
    return implicit_linear_solve(*_solver(tree, schedule), (lower, diag, upper), b)
