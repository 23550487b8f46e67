"""A network's cells as one cell with many roots: compartments, mechanisms and parameters.

The compartments of cell ``k`` are numbered from ``offsets[k]`` (cells in order), then come
every cell's junctions in the same order; the solver's tree is the forest of the cells'
trees, solved in one sweep per step. A mechanism inserted in several cells is one
insertion on all their compartments (a point mechanism: their instances, cell by cell);
each parameter is laid out per compartment (per instance), a cell's own value where it has
the mechanism, the default elsewhere (unused there).
"""

from __future__ import annotations

import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.linalg import Tree
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.mechanisms.mechanisms import Insertion

__all__ = ["forest", "merged_insertions", "offsets"]


def offsets(cells: tuple[Cell, ...]) -> np.ndarray:
    """First compartment of each cell in the forest, and the total (``len(cells) + 1``)."""
    return np.concatenate([[0], np.cumsum([cell.n for cell in cells])]).astype(np.int64)


def forest(cells: tuple[Cell, ...], insertions: tuple[Insertion, ...]) -> Cell:
    """One :class:`Cell` holding ``cells`` side by side (one root each), with ``insertions``."""
    first = offsets(cells)
    total = int(first[-1])
    junctions = np.concatenate([[0], np.cumsum([c.tree.n - c.n for c in cells])]) + total
    node_parents, half, owner, branch_base = [], [], [], 0
    branches = []
    for k, cell in enumerate(cells):
        def node(i, k=k, cell=cell):  # a node of cell k -> the forest's numbering
            i = np.asarray(i)
            return np.where(i < 0, -1, np.where(i < cell.n, first[k] + i,
                                                junctions[k] + i - cell.n))
        n = cell.n
        node_parents.append((cell.tree.parents[:n], cell.tree.parents[n:]))
        h = cell.half_index
        half.append((h, np.where(h < n, first[k] + h, np.where(
            h < 2 * n, total + first[k] + h - n, 2 * total))))
        owner.append(first[k] + cell.junction_owner)
        branches.append(branch_base + cell.branch)
        branch_base += cell.n_branches
        node_parents[-1] = (node(node_parents[-1][0]), node(node_parents[-1][1]))
    parents_of_nodes = np.concatenate([p for p, _ in node_parents]
                                      + [j for _, j in node_parents]).astype(np.int64)
    halves = np.concatenate([m[:c.n] for (_, m), c in zip(half, cells, strict=True)]
                            + [m[c.n:] for (_, m), c in zip(half, cells, strict=True)])
    compartment_parents = np.concatenate([np.where(c.parents < 0, -1, c.parents + first[k])
                                          for k, c in enumerate(cells)])

    def joined(name):
        return np.concatenate([getattr(c, name) for c in cells])

    return Cell(compartment_parents, joined("attach"), joined("length"), joined("radius"),
                joined("taper"), np.concatenate(branches), Tree.from_parents(parents_of_nodes),
                np.concatenate(owner).astype(np.int64), halves.astype(np.int64), joined("kind"),
                insertions)


def merged_insertions(cells: tuple[Cell, ...], per_cell: list[tuple[Insertion, ...]],
                      ) -> tuple[Insertion, ...]:
    """Each mechanism once, on the compartments (instances) of every cell that has it."""
    first = offsets(cells)
    found: dict[str, tuple] = {}
    for k, insertions in enumerate(per_cell):
        for ins in insertions:
            mechanism = ins.mechanism
            if mechanism.name in found and found[mechanism.name][0] is not mechanism:
                raise ConfigError(f"cells {found[mechanism.name][1]} and {k} insert different "
                                  f"mechanisms named {mechanism.name!r}; a network needs one "
                                  f"mechanism per name")
            where = (np.arange(cells[k].n) if ins.compartments is None
                     else ins.compartments) + first[k]
            everywhere = ins.compartments is None
            old = found.get(mechanism.name, (mechanism, k, [], True))
            found[mechanism.name] = (mechanism, old[1], old[2] + [where], old[3] and everywhere)
    out = []
    for mechanism, _, wheres, everywhere in found.values():
        whole = everywhere and sum(w.size for w in wheres) == first[-1]
        out.append(Insertion(mechanism, None if whole else np.concatenate(wheres)))
    return tuple(out)
