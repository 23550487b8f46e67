"""A cell's tree as the solver sees it: junction nodes where branches meet, and branch labels.

Pure NumPy on the compartments' parents and attachment points, computed once when a
:class:`~jaxlean.models.neuron.cell.cell.Cell` is built.
"""

from __future__ import annotations

import numpy as np

from jaxlean.linalg import Tree


def depth(parents: np.ndarray) -> np.ndarray:
    """Each compartment's number of ancestors."""
    out = np.zeros(parents.size, dtype=np.int64)
    for c in Tree.from_parents(parents).order[::-1].tolist():
        out[c] = out[parents[c]] + 1
    return out


def junctions(parents: np.ndarray, attach: np.ndarray):
    """The solver's tree: a zero-area node wherever two or more children join one end.

    Returns the parent of every node (compartments, then junctions), each
    junction's owner compartment, and the two half resistances of each node's
    edge to its parent (see :attr:`Cell.half_index`).
    """
    n = parents.size
    zero = 2 * n
    node_parents = parents.tolist()
    half_index = [[zero, zero] for _ in range(n)]
    owner = []
    groups: dict[tuple[int, float], list[int]] = {}
    for c in np.flatnonzero(parents >= 0).tolist():
        groups.setdefault((int(parents[c]), float(attach[c])), []).append(c)
    for (p, where), children in sorted(groups.items()):
        parent_half = zero if where == 0.5 else p if where == 0.0 else n + p
        if len(children) == 1 or where == 0.5:
            for c in children:
                half_index[c] = [c, parent_half]
            continue
        junction = len(node_parents)
        node_parents.append(p)
        half_index.append([zero, parent_half])
        owner.append(p)
        for c in children:
            node_parents[c] = junction
            half_index[c] = [c, zero]
    return np.asarray(node_parents), np.asarray(owner, dtype=np.int64), np.asarray(half_index)


def branches(parents: np.ndarray, attach: np.ndarray) -> np.ndarray:
    """Branch labels: a new branch at the root, at a fork, and where a compartment joins
    its parent anywhere but at the end, numbered in the order of their first compartment."""
    n = parents.size
    child_count = np.bincount(parents[parents >= 0], minlength=n)
    starts = (parents < 0) | (attach != 1.0)
    starts |= (parents >= 0) & (child_count[np.maximum(parents, 0)] != 1)
    starts |= (parents >= 0) & (parents[np.maximum(parents, 0)] < 0)
    branch = np.full(n, -1)
    order = np.argsort(depth(parents), kind="stable")
    for c in order.tolist():
        branch[c] = c if starts[c] else branch[parents[c]]
    firsts = np.unique(branch)
    return np.searchsorted(firsts, branch)
