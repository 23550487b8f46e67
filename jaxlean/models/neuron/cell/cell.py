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
import hashlib
import numbers
from pathlib import Path

import numpy as np

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.linalg import Tree
from jaxlean.models.neuron.cell import params as parameters
from jaxlean.models.neuron.cell._topology import branches, depth, junctions
from jaxlean.models.neuron.mechanisms.mechanisms import Insertion, Mechanism
from jaxlean.models.neuron.morphology import discretize, swc
from jaxlean.models.neuron.morphology.morphology_io import SectionTree, load_morphology

__all__ = ["ATTACH", "Cell", "build_cell"]

ATTACH = (0.0, 0.5, 1.0)


@dataclasses.dataclass(frozen=True, eq=False)
class Cell:
    """A neuron's compartments (static geometry and topology) and its solver tree.

    Build with :meth:`from_swc` or :meth:`from_parents`, add mechanisms with
    :meth:`insert`; the parameters to simulate come from :meth:`params`.

    Attributes:
      parents: parent compartment of each compartment, ``-1`` for the root (soma).
      attach: where each compartment joins its parent: ``0``, ``0.5`` or ``1``.
      length, radius: per compartment (um); the defaults of ``params``. ``radius``
        is that of the cylinder with the compartment's membrane area.
      taper: ``(n, 2)``: proximal and distal half resistances of the compartment's
        real shape (tapering frustums) relative to that cylinder's; 1 for cylinders.
      branch: branch of each compartment, numbered by first compartment; the soma's
        is 0. In a cell from SWC a branch is a NEURON section, cut by Import3d's rules
        (at forks, at type changes, where a child is not on the next line), in
        NEURON's order and named in :attr:`section_names`: per-branch parameters and
        ``ncomp`` line up with the sections a NEURON user counts. In a cell from
        parents, a branch is an unbranched run of compartments.
      tree: the solver's tree over compartments ``0..n-1`` and junctions ``n..``.
      junction_owner: the compartment each junction belongs to.
      half_index: ``(nodes, 2)``: for the edge from each node to its tree parent,
        indices into ``concat(proximal halves, distal halves, [0])`` of the two
        resistances in series (``2 n`` selects zero).
      kind: SWC type of each compartment (1 soma, 2 axon, 3 basal, 4 apical
        dendrite; 0 when built from parents without types).
      mechanisms: the inserted mechanisms; empty: a preset chosen by the
        parameters (see :mod:`jaxlean.models.neuron.cell.params`).
      section_names: NEURON's name of each branch of a cell from SWC (``"soma[0]"``,
        ``"dend[3]"``, ``"apic[0]"``, ``"axon[0]"``, as Import3d names them); in a cell
        from parents, named the same way by the type of each branch's first compartment
        (``"sec[0]"`` where it has none). A name without an index (``"dend"``) is the only
        section of that name (``"dend[0]"`` with no ``"dend[1]"``), as a NEURON section
        made by ``h.Section(name="dend")``.
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
    kind: np.ndarray
    mechanisms: tuple[Insertion, ...] = ()
    section_names: tuple[str, ...] = ()

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

    def compartments_of(self, branch: int | str) -> np.ndarray:
        """Compartments of ``branch`` (an index, or a section name such as ``"dend[3]"``),
        proximal to distal."""
        return np.flatnonzero(self.branch == self._branch_index(branch, "branch"))

    def location(self, section: int | str, x: float = 0.5) -> int:
        """The compartment at ``x`` (0 to 1, proximal to distal) along ``section``: NEURON's
        ``sec(x)``. ``section`` is a branch index or a section name (``"dend[3]"``).

        The section's ``nseg`` compartments are its segments, centred at
        ``(j + 0.5) / nseg``; ``x`` selects the segment that holds it, as NEURON does
        (``soma(0.5)`` is the soma's middle segment). NEURON's ``x = 0`` and ``x = 1`` are
        the section's zero-area end nodes, which have no compartment here: they give the
        first and the last segment.

        Raises:
          ConfigError: an unknown section, or ``x`` not a number in ``[0, 1]``.
        """
        index = self._branch_index(section, "section")
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not 0.0 <= x <= 1.0:
            raise ConfigError(f"location: x must be a number in [0, 1] (0 the section's start, "
                              f"1 its end); got {x!r}")
        compartments = np.flatnonzero(self.branch == index)
        nseg = compartments.size
        return int(compartments[min(int(nseg * float(x)), nseg - 1)])

    def _branch_index(self, branch: int | str, argument: str) -> int:
        if isinstance(branch, str):
            alone = f"{branch}[0]"
            if (branch not in self.section_names and alone in self.section_names
                    and f"{branch}[1]" not in self.section_names):
                branch = alone
            if branch not in self.section_names:
                known = (f"this cell's sections are {_summary(self.section_names)}"
                         if self.section_names else
                         "this cell was built from parents and has no section names; give a "
                         "branch index")
                raise ConfigError(f"{argument}: no section named {branch!r}; {known}")
            return self.section_names.index(branch)
        if (isinstance(branch, bool) or not isinstance(branch, numbers.Integral)
                or not 0 <= branch < self.n_branches):
            raise ConfigError(f"{argument} must be in [0, {self.n_branches - 1}] (a branch "
                              f"index) or a section name; got {branch!r}")
        return int(branch)

    @functools.cached_property
    def structure(self) -> str:
        """A digest of everything a simulation program depends on besides the parameters
        (topology, attachments, tapers, junctions, branches): equal cells share compiled
        programs."""
        digest = hashlib.sha256()
        for array in (self.parents, self.attach, self.taper, self.half_index,
                      self.junction_owner, self.tree.parents, self.branch):
            digest.update(str(array.dtype).encode() + str(array.shape).encode())
            digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()

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
        for c in np.argsort(depth(self.parents), kind="stable").tolist():
            p = self.parents[c]
            if p >= 0:
                to_parent_node = 0.0 if self.attach[c] == 0.5 else 0.5
                distance[c] = distance[p] + to_parent_node * self.length[p] + 0.5 * self.length[c]
        return distance

    @classmethod
    def from_parents(cls, parents: object, length: object, radius: object,
                     attach: object = 1.0, kind: object = 0) -> Cell:
        """A cell of cylindrical compartments from a parent array (``-1`` = root).

        Args:
          parents: parent compartment of each compartment (any numbering).
          length, radius: um, scalars or one per compartment.
          attach: where each compartment joins its parent (``1`` end, ``0.5``
            centre, ``0`` start of a root); a scalar or one per compartment.
          kind: SWC type of each compartment (for :meth:`insert`), a scalar or one each.

        Each branch (an unbranched run) is named as Import3d names sections, by the type
        of its first compartment (:attr:`section_names`): ``location("dend", 0.3)``.
        """
        cell = _build(parents, length, radius, attach, np.ones((np.size(parents), 2)), kind)
        first = [int(np.argmax(cell.branch == b)) for b in range(cell.n_branches)]
        return dataclasses.replace(cell, section_names=swc.names_by_type(
            cell.kind[first].tolist(), untyped="sec"))

    @classmethod
    def from_swc(cls, source: str | Path, ncomp: int | None = None,
                 max_length: float | None = None,
                 nseg: discretize.Fixed | discretize.MaxLength | discretize.PerLength
                 | discretize.DLambda | None = None,
                 ) -> Cell:
        """A cell from an SWC file, cut into sections as NEURON's Import3d does.

        Give exactly one of: ``ncomp`` (the soma one compartment, every other
        section ``ncomp``), ``max_length`` (um; the soma one, the others
        ``ceil(length / max_length)``) or ``nseg``, a rule of
        :mod:`jaxlean.models.neuron.morphology.discretize` applied to every section
        (``Fixed``, ``MaxLength``, Hay's ``PerLength``, NEURON's ``DLambda``). Compartment areas and
        half resistances follow the 3-D points, as in NEURON.
        """
        where = "<swc text>" if isinstance(source, str) and "\n" in source else str(source)
        sections = swc.sections(swc.read_swc(source), where)
        counts = discretize.section_nseg(sections, ncomp, max_length, nseg)
        cell = _build(*discretize.compartments(sections, counts))
        return dataclasses.replace(cell, branch=np.repeat(np.arange(len(sections)), counts),
                                   section_names=swc.section_names(sections))

    def insert(self, mechanism: Mechanism, *, types: object = None, branches: object = None,
               compartments: object = None) -> Cell:
        """This cell with ``mechanism`` on some compartments (a new ``Cell``).

        A density mechanism goes everywhere, or on the compartments of the given
        SWC ``types`` (integers, or region names as ``by_region`` takes them: ``"apical"``,
        ``"somatic"``, ``"dend"``; ``"all"`` is everywhere), ``branches`` (indices or
        section names, ``"soma[0]"``) or ``compartments`` (give at most one); a point
        mechanism (a synapse) needs ``compartments``, one instance per entry. Inserting a
        mechanism again adds compartments (or instances).

        Raises:
          ConfigError: two selections, a selection that matches no compartment,
            an index out of range, or a mechanism whose name, states or currents
            clash with one already inserted.
        """
        where = _selection(self, mechanism, types, branches, compartments)
        inserted = list(self.mechanisms)
        for index, old in enumerate(inserted):
            if old.mechanism.name != mechanism.name:
                _no_clash(old.mechanism, mechanism)
                continue
            if old.mechanism is not mechanism:
                raise ConfigError(f"a different mechanism named {mechanism.name!r} is already "
                                  f"inserted")
            if mechanism.point:
                where = np.concatenate([old.compartments, where])
            elif old.compartments is None or where is None:
                where = None
            else:
                where = np.union1d(old.compartments, where)
            inserted[index] = Insertion(mechanism, where)
            break
        else:
            inserted.append(Insertion(mechanism, where))
        parameters.table(tuple(inserted))
        return dataclasses.replace(self, mechanisms=tuple(inserted))

    def insertions(self, params: dict | None = None) -> tuple[Insertion, ...]:
        """The inserted mechanisms, or the preset that ``params`` selects when there are none."""
        if self.mechanisms:
            return self.mechanisms
        return parameters.inferred_preset(params or {})

    def params(self, channels: str | None = None) -> dict:
        """Default parameters of the inserted mechanisms; with none inserted, of the
        preset ``"hh"`` (Hodgkin-Huxley + leak, the default) or ``"passive"`` (leak).

        Names, units and allowed shapes are listed in :mod:`jaxlean.models.neuron.cell.params`.
        """
        if self.mechanisms:
            if channels is not None:
                raise ConfigError(f"this cell has inserted mechanisms; channels={channels!r} "
                                  f"selects a preset only for a cell without them")
            return parameters.defaults(self, self.mechanisms)
        return parameters.defaults(self, parameters.preset(channels or "hh"))

    @classmethod
    def from_morphology(cls, source: object, ncomp: int | None = None,
                        max_length: float | None = None,
                        nseg: discretize.Fixed | discretize.MaxLength | discretize.PerLength
                        | discretize.DLambda | None = None) -> Cell:
        """A cell from a morphology file (``.swc``, Neurolucida ``.asc``, ``.h5``) or an edited
        :class:`~jaxlean.models.neuron.morphology.morphology_io.SectionTree`, with the sections
        NEURON's Import3d builds from the same file (see
        :mod:`jaxlean.models.neuron.morphology.morphology_io`;
        ``.asc`` and ``.h5`` need ``pip install 'jaxlean[morphology]'``). ``ncomp``,
        ``max_length`` and ``nseg`` as in :meth:`from_swc`.
        """
        return build_cell(source, ncomp, max_length, nseg)


def build_cell(source: str | Path | SectionTree, ncomp: int | None = None,
               max_length: float | None = None,
               nseg: discretize.Fixed | discretize.MaxLength | discretize.PerLength
               | discretize.DLambda | None = None,
               ) -> Cell:
    """A :class:`Cell` of a file's or a :class:`SectionTree`'s sections: the body of
    :meth:`Cell.from_morphology` (its arguments, its rules). A section whose ``nseg`` the
    tree fixes (:attr:`SectionTree.nseg`) keeps it, as after ``sec.nseg = n`` in NEURON."""
    tree = source if isinstance(source, SectionTree) else load_morphology(source)
    sections = list(tree.sections)
    counts = discretize.section_nseg(sections, ncomp, max_length, nseg)
    counts = np.array([n if own is None else own for n, own in zip(counts.tolist(), tree.nseg,
                                                                    strict=True)])
    cell = _build(*discretize.compartments(sections, counts))
    branch = np.repeat(np.arange(len(sections)), counts)
    radius, taper = cell.radius.copy(), cell.taper.copy()
    for k, diameter in enumerate(tree.cylinders):
        if diameter is not None:   # NEURON's sec.diam or seg.diam: exact, not rounded
            radius[branch == k] = np.asarray(diameter, dtype=float) / 2
            taper[branch == k] = 1.0
    return dataclasses.replace(cell, radius=radius, taper=taper, branch=branch,
                               section_names=tree.names)


def _selection(cell: Cell, mechanism: Mechanism, types: object, branches: object,
               compartments: object) -> np.ndarray | None:
    """The compartments a mechanism is inserted on (``None``: all of them)."""
    given = {k: v for k, v in (("types", types), ("branches", branches),
                               ("compartments", compartments)) if v is not None}
    what = f"insert {mechanism.name!r}"
    if len(given) > 1:
        raise ConfigError(f"{what}: give at most one of types, branches, compartments; "
                          f"got {sorted(given)}")
    if mechanism.point and set(given) != {"compartments"}:
        raise ConfigError(f"{what}: a point mechanism needs compartments (one per instance)")
    if not given:
        return None
    (key, value), = given.items()
    if key == "types" and (value := swc.region_types(value, what)) is None:
        return None   # region names ("apical") stand for their SWC type; "all": everywhere
    if key == "branches":   # section names ("dend[3]") stand for their branch index
        listed = [value] if isinstance(value, str) else value
        if isinstance(listed, list | tuple) and any(isinstance(v, str) for v in listed):
            value = [cell._branch_index(v, what + ": branches") for v in listed]
    values = np.atleast_1d(np.asarray(value))
    if values.ndim != 1 or values.size == 0 or not np.issubdtype(values.dtype, np.integer):
        raise ConfigError(f"{what}: {key} must be an integer or a non-empty sequence of them; "
                          f"got {value!r}")
    if key == "compartments":
        if values.min() < 0 or values.max() >= cell.n:
            raise ConfigError(f"{what}: compartments must be in [0, {cell.n - 1}]; "
                              f"got {values.tolist()}")
        return values if mechanism.point else np.unique(values)
    labels = cell.branch if key == "branches" else cell.kind
    chosen = np.flatnonzero(np.isin(labels, values))
    missing = sorted(set(values.tolist()) - set(labels.tolist()))
    if missing:
        raise ConfigError(f"{what}: no compartment has {key} {missing} (this cell has "
                          f"{key} {sorted(set(labels.tolist()))})")
    return chosen


def _no_clash(old: Mechanism, new: Mechanism) -> None:
    for what, a, b in (("state", old.states, new.states), ("current", old.currents, new.currents)):
        shared = sorted(set(a) & set(b))
        if shared:
            raise ConfigError(f"mechanisms {old.name!r} and {new.name!r} both name the {what} "
                              f"{shared}; names must be unique in a cell")


def _summary(names: tuple[str, ...], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return f"{shown}, ... ({len(names)} in all)" if len(names) > most else shown


def _per_compartment(name: str, values: object, n: int) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim > 1 or array.size not in (1, n):
        raise MorphologyError(f"{name} must be a scalar or one value per compartment ({n}); "
                              f"got shape {array.shape}")
    return np.broadcast_to(array, (n,)).copy()


def _build(parents: object, length: object, radius: object, attach: object,
           taper: np.ndarray, kind: object = 0) -> Cell:
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
    kind = _per_compartment("kind", kind, n).astype(np.int64)
    node_parents, owner, half_index = junctions(parents, attach)
    return Cell(parents, attach, geometry["length"], geometry["radius"], taper,
                branches(parents, attach), Tree.from_parents(node_parents), owner, half_index,
                kind)

