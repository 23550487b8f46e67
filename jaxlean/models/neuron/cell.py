"""Compartments of a neuron and how they join, as NEURON discretises a cell.

Each compartment is a segment with a node at its centre. A compartment joins its
parent at the parent's centre (``attach = 0.5``: a dendrite wired to a soma), at
the parent's distal end (``1``: the next segment, or a child section at a fork)
or, for a root parent only, at its proximal end (``0``). Where several children
join the same end, they meet at a zero-area node, as in NEURON: the parent's
half resistance to that end is shared once, not counted again for each child.
The solver's tree therefore holds the compartments followed by those junction
nodes; a junction has no membrane and its row is Kirchhoff's current law.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.linalg import Tree
from jaxlean.models.neuron import discretize, params, swc

ATTACH = (0.0, 0.5, 1.0)


@dataclasses.dataclass(frozen=True, eq=False)
class Cell:
    """A neuron's compartments (static geometry and topology) and its solver tree.

    Build with :meth:`from_swc` or :meth:`from_parents`; the parameters to
    simulate come from :meth:`params`.

    Attributes:
      parents: parent compartment of each compartment, ``-1`` for the root (soma).
      attach: where each compartment joins its parent: ``0``, ``0.5`` or ``1``.
      length, radius: per compartment (um); the defaults of ``params``. ``radius``
        is that of the cylinder with the compartment's membrane area.
      taper: ``(n, 2)``: proximal and distal half resistances of the compartment's
        real shape (tapering frustums) relative to that cylinder's; 1 for cylinders.
      branch: branch of each compartment: an unbranched run of compartments,
        numbered by first compartment; the soma's is 0.
      tree: the solver's tree over compartments ``0..n-1`` and junctions ``n..``.
      junction_owner: the compartment each junction belongs to.
      half_index: ``(nodes, 2)``: for the edge from each node to its tree parent,
        indices into ``concat(proximal halves, distal halves, [0])`` of the two
        resistances in series (``2 n`` selects zero).
    """

    parents: np.ndarray
    attach: np.ndarray
    length: np.ndarray
    radius: np.ndarray
    taper: np.ndarray
    branch: np.ndarray
    tree: Tree
    junction_owner: np.ndarray
    half_index: np.ndarray

    @property
    def n(self) -> int:
        """Number of compartments."""
        return int(self.parents.size)

    @property
    def n_branches(self) -> int:
        """Number of branches."""
        return int(self.branch.max()) + 1

    @property
    def soma(self) -> int:
        """The root compartment (the soma of an SWC cell)."""
        return int(np.flatnonzero(self.parents < 0)[0])

    def compartments_of(self, branch: int) -> np.ndarray:
        """Compartments of ``branch``, proximal to distal."""
        if not 0 <= branch < self.n_branches:
            raise ConfigError(f"branch must be in [0, {self.n_branches - 1}]; got {branch}")
        return np.flatnonzero(self.branch == branch)

    @functools.cached_property
    def tips(self) -> np.ndarray:
        """Distal tips: compartments that no other compartment joins."""
        has_child = np.zeros(self.n, dtype=bool)
        has_child[self.parents[self.parents >= 0]] = True
        return np.flatnonzero(~has_child)

    @functools.cached_property
    def path_distance(self) -> np.ndarray:
        """Path length (um) from the soma's centre to each compartment's centre."""
        distance = np.zeros(self.n)
        for c in np.argsort(_depth(self.parents), kind="stable").tolist():
            p = self.parents[c]
            if p >= 0:
                to_parent_node = 0.0 if self.attach[c] == 0.5 else 0.5
                distance[c] = distance[p] + to_parent_node * self.length[p] + 0.5 * self.length[c]
        return distance

    @classmethod
    def from_parents(cls, parents: object, length: object, radius: object,
                     attach: object = 1.0) -> Cell:
        """A cell of cylindrical compartments from a parent array (``-1`` = root).

        Args:
          parents: parent compartment of each compartment (any numbering).
          length, radius: um, scalars or one per compartment.
          attach: where each compartment joins its parent (``1`` end, ``0.5``
            centre, ``0`` start of a root); a scalar or one per compartment.
        """
        return _build(parents, length, radius, attach, np.ones((np.size(parents), 2)))

    @classmethod
    def from_swc(cls, source: str | Path, ncomp: int | None = None,
                 max_length: float | None = None,
                 nseg: discretize.Fixed | discretize.MaxLength | discretize.DLambda | None = None,
                 ) -> Cell:
        """A cell from an SWC file, cut into sections as NEURON's Import3d does.

        Give exactly one of: ``ncomp`` (the soma one compartment, every other
        section ``ncomp``), ``max_length`` (um; the soma one, the others
        ``ceil(length / max_length)``) or ``nseg``, a rule of
        :mod:`jaxlean.models.neuron.discretize` applied to every section
        (``Fixed``, ``MaxLength``, NEURON's ``DLambda``). Compartment areas and
        half resistances follow the 3-D points, as in NEURON.
        """
        where = "<swc text>" if isinstance(source, str) and "\n" in source else str(source)
        sections = swc.sections(swc.read_swc(source), where)
        counts = discretize.section_nseg(sections, ncomp, max_length, nseg)
        return _build(*discretize.compartments(sections, counts))

    def params(self, channels: str = "hh") -> dict:
        """Default parameters: ``"hh"`` (Hodgkin-Huxley + leak) or ``"passive"`` (leak only).

        Names, units and allowed shapes are listed in :mod:`jaxlean.models.neuron.params`.
        """
        return params.defaults(self, channels)


def _depth(parents: np.ndarray) -> np.ndarray:
    depth = np.zeros(parents.size, dtype=np.int64)
    for c in Tree.from_parents(parents).order[::-1].tolist():
        depth[c] = depth[parents[c]] + 1
    return depth


def _per_compartment(name: str, values: object, n: int) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim > 1 or array.size not in (1, n):
        raise MorphologyError(f"{name} must be a scalar or one value per compartment ({n}); "
                              f"got shape {array.shape}")
    return np.broadcast_to(array, (n,)).copy()


def _build(parents: object, length: object, radius: object, attach: object,
           taper: np.ndarray) -> Cell:
    parents = Tree.from_parents(parents).parents
    n = parents.size
    roots = np.count_nonzero(parents < 0)
    if roots != 1:
        raise MorphologyError(f"a cell has one root compartment; got {roots}")
    geometry = {}
    for name, values in (("length", length), ("radius", radius)):
        array = _per_compartment(name, values, n)
        bad = np.flatnonzero(~(array > 0) | ~np.isfinite(array))
        if bad.size:
            raise MorphologyError(f"compartment {int(bad[0])}: {name} must be positive, "
                                  f"got {array[bad[0]]}")
        geometry[name] = array
    attach = _per_compartment("attach", attach, n)
    bad = np.flatnonzero(~np.isin(attach, ATTACH) | ((attach == 0) & (parents >= 0)
                                                      & (parents[np.maximum(parents, 0)] >= 0)))
    if bad.size:
        raise MorphologyError(f"compartment {int(bad[0])}: attach must be 1 (end), 0.5 (centre) "
                              f"or 0 (start of the root); got {attach[bad[0]]}")
    attach = np.where(parents < 0, 1.0, attach)
    node_parents, owner, half_index = _junctions(parents, attach)
    return Cell(parents, attach, geometry["length"], geometry["radius"], taper,
                _branches(parents, attach), Tree.from_parents(node_parents), owner, half_index)


def _junctions(parents: np.ndarray, attach: np.ndarray):
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


def _branches(parents: np.ndarray, attach: np.ndarray) -> np.ndarray:
    """Branch labels: a new branch at the root, at a fork, and where a compartment joins
    its parent anywhere but at the end, numbered in the order of their first compartment."""
    n = parents.size
    child_count = np.bincount(parents[parents >= 0], minlength=n)
    starts = (parents < 0) | (attach != 1.0)
    starts |= (parents >= 0) & (child_count[np.maximum(parents, 0)] != 1)
    starts |= (parents >= 0) & (parents[np.maximum(parents, 0)] < 0)
    branch = np.full(n, -1)
    order = np.argsort(_depth(parents), kind="stable")
    for c in order.tolist():
        branch[c] = c if starts[c] else branch[parents[c]]
    firsts = np.unique(branch)
    return np.searchsorted(firsts, branch)
