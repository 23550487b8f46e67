"""SWC morphologies: read and validate a file, cut it into sections as NEURON's Import3d does.

An SWC line is ``id type x y z radius parent`` (um; ``parent = -1`` for the root).
Errors name the file line. :func:`sections` follows Import3d's conventions so a
cell loaded here has the geometry a NEURON user gets from the same file:

* a section is an unbranched run of points of one SWC type; it ends at a fork,
  a leaf or a change of type;
* a one-point soma is a sphere, represented as a cylinder of length and diameter
  ``2 r`` (same area); the NeuroMorpho three-point soma (a centre and two points
  ``r`` away, all of radius ``r``, nothing attached to the outer two) is read the
  same way. Dendrites attached to such a soma join its centre (``parent_x = 0.5``)
  and start at their own first point (Import3d's "wire"), not at the soma centre;
* a soma of several points in a chain is a stack of frustums; dendrites attached
  to its last point join at ``parent_x = 1``, to its first at ``0``, to an
  interior point at ``0.5`` by a wire;
* every other section starts at its parent's last point (a dendrite continues
  from the fork), with that point's radius.
"""

from __future__ import annotations

import dataclasses
import math
from importlib import resources
from pathlib import Path

import numpy as np

from jaxlean.errors import ConfigError, MorphologyError


@dataclasses.dataclass(frozen=True, eq=False)
class Morphology:
    """The points of an SWC file, re-indexed ``0..n-1`` (``parents[i] = -1`` at roots)."""

    ids: np.ndarray
    types: np.ndarray
    xyz: np.ndarray
    radius: np.ndarray
    parents: np.ndarray


@dataclasses.dataclass(frozen=True, eq=False)
class Section:
    """An unbranched piece of cable: its 3-D points (um) proximal to distal and where it joins.

    Attributes:
      xyz, radius: the points (at least two) and their radii.
      parent: index of the parent section in the list, ``-1`` for the root.
      parent_x: where on the parent it joins: ``0`` (start), ``0.5`` (centre) or ``1`` (end).
      kind: SWC type of its points (1 soma, 2 axon, 3 basal, 4 apical dendrite).
      last_id: SWC id of its distal point, to find it again.
    """

    xyz: np.ndarray
    radius: np.ndarray
    parent: int
    parent_x: float
    kind: int
    last_id: int


def fixture(name: str) -> Path:
    """Path of a bundled SWC file: ``"y"``, ``"binary100"`` or ``"pyramidal"``."""
    path = resources.files("jaxlean.models.neuron") / "data" / f"{name}.swc"
    if not path.is_file():
        raise ConfigError(f"no bundled morphology {name!r}; have y, binary100, pyramidal")
    return Path(str(path))


def _parse_line(fields: list[str], where: str) -> tuple:
    if len(fields) != 7:
        raise MorphologyError(f"{where}: expected 7 fields (id type x y z radius parent), "
                              f"got {len(fields)}")
    try:
        ident, kind, parent = int(fields[0]), int(fields[1]), int(fields[6])
        x, y, z, radius = (float(value) for value in fields[2:6])
    except ValueError as error:
        raise MorphologyError(f"{where}: {error}") from None
    if not (radius > 0 and math.isfinite(radius)):
        raise MorphologyError(f"{where}: radius must be positive, got {fields[5]}")
    if not all(math.isfinite(c) for c in (x, y, z)):
        raise MorphologyError(f"{where}: coordinates must be finite")
    return ident, kind, x, y, z, radius, parent


def read_swc(source: str | Path) -> Morphology:
    """Read and validate an SWC file (a path, or the text itself if it has a newline).

    Raises:
      MorphologyError: a malformed line, a duplicate id, a parent that is not
        defined in the file, or a cycle; the message names the line.
    """
    text = source if isinstance(source, str) and "\n" in source else Path(source).read_text()
    name = "<swc text>" if isinstance(source, str) and "\n" in source else str(source)
    rows, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0].strip()
        if content:
            rows.append(_parse_line(content.split(), f"{name}:{number}"))
            lines.append(number)
    if not rows:
        raise MorphologyError(f"{name}: no points")
    ids = np.array([row[0] for row in rows])
    index_of = {}
    for ident, number in zip(ids.tolist(), lines, strict=True):
        if ident in index_of:
            raise MorphologyError(f"{name}:{number}: duplicate id {ident}")
        index_of[ident] = len(index_of)
    parents = np.empty(len(rows), dtype=np.int64)
    for i, (row, number) in enumerate(zip(rows, lines, strict=True)):
        if row[6] == -1:
            parents[i] = -1
        elif row[6] not in index_of or row[6] == row[0]:
            raise MorphologyError(f"{name}:{number}: parent {row[6]} of id {row[0]} is not "
                                  "another point of the file")
        else:
            parents[i] = index_of[row[6]]
    _check_acyclic(parents, lines, name)
    return Morphology(ids, np.array([row[1] for row in rows]),
                      np.array([row[2:5] for row in rows], dtype=float),
                      np.array([row[5] for row in rows], dtype=float), parents)


def _check_acyclic(parents: np.ndarray, lines: list[int], name: str) -> None:
    state = np.zeros(parents.size, dtype=np.int8)
    for start in range(parents.size):
        path, node = [], start
        while node >= 0 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = parents[node]
        if node >= 0 and state[node] == 1:
            raise MorphologyError(f"{name}:{lines[node]}: this point is on a cycle of parents")
        state[path] = 2


def _children(parents: np.ndarray) -> list[list[int]]:
    children = [[] for _ in parents]
    for node, parent in enumerate(parents.tolist()):
        if parent >= 0:
            children[parent].append(node)
    return children


def _three_point_soma(m: Morphology, children: list[list[int]], root: int) -> list[int]:
    """The two outer points of a NeuroMorpho three-point soma around ``root``, or ``[]``."""
    outer = [c for c in children[root] if m.types[c] == 1]
    if len(outer) != 2 or any(children[c] for c in outer):
        return []
    if not np.allclose(m.radius[outer], m.radius[root], rtol=0, atol=0):
        return []
    span = np.linalg.norm(m.xyz[outer] - m.xyz[root], axis=1).sum()
    return outer if abs(span / (2 * m.radius[root]) - 1) < 0.01 else []


def _soma_chain(m: Morphology, children: list[list[int]], root: int, where: str) -> list[int]:
    """The soma's points from the root along its type-1 children (must not fork)."""
    chain = [root]
    while True:
        somatic = [c for c in children[chain[-1]] if m.types[c] == 1]
        if not somatic:
            return chain
        if len(somatic) > 1:
            raise MorphologyError(f"{where}: the soma forks at id {m.ids[chain[-1]]}; "
                                  "only an unbranched soma can be read")
        chain.append(somatic[0])


def sections(morphology: Morphology, where: str = "<swc>") -> list[Section]:
    """Cut a morphology into sections as NEURON's Import3d does (see the module docstring).

    The soma (or, without a type-1 root, the root's run of points) is section 0;
    the others follow in the order of their first point in the file.

    Raises:
      MorphologyError: more than one root, or a soma that forks.
    """
    m = morphology
    roots = np.flatnonzero(m.parents < 0)
    if roots.size != 1:
        raise MorphologyError(f"{where}: expected one root point (parent -1); got {roots.size} "
                              f"(ids {m.ids[roots].tolist()})")
    root = int(roots[0])
    children = _children(m.parents)
    is_soma = m.types[root] == 1
    ignored = set(_three_point_soma(m, children, root)) if is_soma else set()
    chain = [root] if ignored else _soma_chain(m, children, root, where) if is_soma else [root]
    if len(chain) == 1 and is_soma:
        centre, r = m.xyz[root], m.radius[root]
        offset = np.array([r, 0.0, 0.0])
        root_section = Section(np.stack([centre - offset, centre, centre + offset]),
                               np.full(3, r), -1, 0.5, 1, int(m.ids[root]))
        chain_run = [root]
    else:
        chain_run = chain if is_soma else _run(m, children, root)
        root_section = Section(m.xyz[chain_run], m.radius[chain_run], -1, 0.5,
                               int(m.types[root]), int(m.ids[chain_run[-1]]))
    out = [root_section]
    section_of_end = {chain_run[-1]: 0}
    starts = [c for p in chain_run for c in children[p]
              if c not in ignored and c not in chain_run]
    pending = sorted(starts)
    while pending:
        first = pending.pop(0)
        run = _run(m, children, first)
        parent_point = int(m.parents[first])
        soma = chain_run if is_soma else []
        out.append(_attach(m, run, parent_point, soma, section_of_end, len(chain)))
        section_of_end[run[-1]] = len(out) - 1
        pending = sorted(pending + children[run[-1]])
    return out


def _run(m: Morphology, children: list[list[int]], first: int) -> list[int]:
    """Points of one section from ``first``: on through single children of the same type."""
    run = [first]
    while len(children[run[-1]]) == 1 and m.types[children[run[-1]][0]] == m.types[first]:
        run.append(children[run[-1]][0])
    return run


def _attach(m: Morphology, run: list[int], parent_point: int, soma: list[int],
            section_of_end: dict[int, int], soma_points: int) -> Section:
    """The section of ``run``, joined to its parent as Import3d joins it."""
    kind, last = int(m.types[run[0]]), int(m.ids[run[-1]])
    if parent_point not in soma:
        points = [parent_point, *run]
        return Section(m.xyz[points], m.radius[points], section_of_end[parent_point], 1.0, kind,
                       last)
    at_end = parent_point == soma[-1] and soma_points > 1
    at_start = parent_point == soma[0] and soma_points > 1
    if (at_end or at_start) or len(run) == 1:
        points = [parent_point, *run]
        radius = np.concatenate([[m.radius[run[0]]], m.radius[run]])
        parent_x = 1.0 if at_end else 0.0 if at_start else 0.5
        return Section(m.xyz[points], radius, 0, parent_x, kind, last)
    return Section(m.xyz[run], m.radius[run], 0, 0.5, kind, last)
