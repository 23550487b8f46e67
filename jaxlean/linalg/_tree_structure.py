"""Validation and traversal orders of a parent array, computed once in NumPy."""

from __future__ import annotations

from collections import deque

import numpy as np

from jaxlean.errors import TreeError


def validate_parents(parents: object) -> np.ndarray:
    """Return ``parents`` as an int64 vector, or raise :class:`TreeError` naming a bad node."""
    array = np.asarray(parents)
    if array.ndim != 1 or array.size == 0:
        raise TreeError(f"parents must be a non-empty 1-D array; got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer):
        raise TreeError(f"parents must hold integer node indices; got dtype {array.dtype}")
    array = array.astype(np.int64)
    n = array.size
    bad = np.flatnonzero((array < -1) | (array >= n))
    if bad.size:
        node = int(bad[0])
        raise TreeError(f"node {node} has parent {int(array[node])}, outside [-1, {n - 1}]")
    selfish = np.flatnonzero(array == np.arange(n))
    if selfish.size:
        raise TreeError(f"node {int(selfish[0])} is its own parent (a cycle)")
    return array


def breadth_first_order(parents: np.ndarray) -> np.ndarray:
    """Nodes from the roots outwards (every parent before its children).

    Raises :class:`TreeError` naming a node on a cycle when some nodes cannot be
    reached from a root.
    """
    n = parents.size
    children = np.argsort(parents, kind="stable")
    counts = np.bincount(parents + 1, minlength=n + 1)
    starts = np.concatenate([[0], np.cumsum(counts)])
    order = []
    queue = deque(children[: counts[0]].tolist())
    while queue:
        node = queue.popleft()
        order.append(node)
        queue.extend(children[starts[node + 1]: starts[node + 2]].tolist())
    if len(order) < n:
        seen = np.zeros(n, dtype=bool)
        seen[order] = True
        node = int(np.flatnonzero(~seen)[0])
        visited = set()
        while node not in visited:
            visited.add(node)
            node = int(parents[node])
        raise TreeError(f"parents do not form a forest: node {node} is on a cycle")
    return np.asarray(order, dtype=np.int64)


def heights(parents: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Longest distance from each node down to a leaf (leaves are 0)."""
    height = np.zeros(parents.size, dtype=np.int64)
    for node in order[::-1].tolist():
        parent = parents[node]
        if parent >= 0 and height[parent] <= height[node]:
            height[parent] = height[node] + 1
    return height


def depths(parents: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Distance from each node up to its root (roots are 0)."""
    depth = np.zeros(parents.size, dtype=np.int64)
    for node in order.tolist():
        parent = parents[node]
        if parent >= 0:
            depth[node] = depth[parent] + 1
    return depth


def padded_levels(height: np.ndarray, is_root: np.ndarray, pad: int) -> np.ndarray:
    """Non-root nodes grouped by height, one row per level, padded with ``pad``."""
    nodes = np.flatnonzero(~is_root)
    if nodes.size == 0:
        return np.full((0, 1), pad, dtype=np.int64)
    nodes = nodes[np.argsort(height[nodes], kind="stable")]
    level_of = height[nodes]
    n_levels = int(level_of.max()) + 1
    widths = np.bincount(level_of, minlength=n_levels)
    levels = np.full((n_levels, max(int(widths.max()), 1)), pad, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(widths)[:-1]])
    levels[level_of, np.arange(nodes.size) - starts[level_of]] = nodes
    return levels
