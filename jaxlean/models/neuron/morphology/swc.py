"""SWC morphologies: read and validate a file, cut it into sections as NEURON's Import3d does.

An SWC line is ``id type x y z radius parent`` (um; ``parent = -1`` for the root).
Errors name the file line. :func:`sections` applies Import3d's rules (listed in
:mod:`jaxlean.models.neuron.morphology._import3d`), so a cell loaded here has the sections,
3-D points and connections a NEURON user gets from the same file: forks at a
dendrite's first point, repeated points, lines out of tree order, one-point,
three-point, multi-point and branched somata, soma outlines (contours written as
a chain of type-1 points). Files Import3d would misread are refused by line.
"""

from __future__ import annotations

import dataclasses
import math
from importlib import resources
from pathlib import Path

import numpy as np

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron.morphology import _import3d
from jaxlean.models.neuron.morphology._section import Section

__all__ = ["REGIONS", "TYPE_NAMES", "Morphology", "Section", "fixture", "names_by_type", "read_swc",
           "region_types", "section_names", "sections"]

Section.__module__ = __name__  # its public home (defined apart to break an import circle)


@dataclasses.dataclass(frozen=True, eq=False)
class Morphology:
    """The points of an SWC file, re-indexed ``0..n-1`` (``parents[i] = -1`` at roots);
    ``lines`` holds each point's line number in the file."""

    ids: np.ndarray
    types: np.ndarray
    xyz: np.ndarray
    radius: np.ndarray
    parents: np.ndarray
    lines: np.ndarray


TYPE_NAMES = {1: "soma", 2: "axon", 3: "dend", 4: "apic"}

#: Region names and the SWC types they select: NEURON's section names (``soma``,
#: ``axon``, ``dend``, ``apic``) and section lists (``somatic``, ``axonal``,
#: ``basal``, ``apical``) both work; ``"all"`` is every compartment, set first so
#: that the other regions given override it. An integer selects that SWC type.
REGIONS = {"all": None, "soma": 1, "somatic": 1, "axon": 2, "axonal": 2, "basal": 3,
           "dend": 3, "apical": 4, "apic": 4}
"""The section name Import3d gives each SWC type (others: ``dend_<type>``)."""


def region_types(types: object, what: str) -> object:
    """``types`` with region names (:data:`REGIONS`: ``"apical"``) as their SWC types;
    ``None`` where ``"all"`` is among them; anything else as given."""
    listed = [types] if isinstance(types, str) else types
    if not (isinstance(listed, list | tuple) and any(isinstance(v, str) for v in listed)):
        return types
    unknown = [v for v in listed if isinstance(v, str) and v not in REGIONS]
    if unknown:
        raise ConfigError(f"{what}: unknown region(s) {unknown}; regions are "
                          f"{', '.join(REGIONS)} or SWC types (integers)")
    return None if "all" in listed else [REGIONS[v] if isinstance(v, str) else v
                                         for v in listed]


def section_names(sections: list[Section]) -> tuple[str, ...]:
    """NEURON's names of ``sections`` (in Import3d's order): ``"dend[3]"`` is the fourth
    section of type 3, counted in that order, as Import3d's ``instantiate`` names them."""
    return names_by_type([section.kind for section in sections])


def names_by_type(kinds: list[int], untyped: str | None = None) -> tuple[str, ...]:
    """Import3d's names of sections of SWC types ``kinds``, in order (``"dend[3]"``); type 0
    is named ``untyped`` when given (a cell built without types)."""
    count: dict[str, int] = {}
    names = []
    for kind in kinds:
        base = untyped if (kind == 0 and untyped) else TYPE_NAMES.get(kind, f"dend_{kind}")
        names.append(f"{base}[{count.get(base, 0)}]")
        count[base] = count.get(base, 0) + 1
    return tuple(names)


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
                      np.array([row[5] for row in rows], dtype=float), parents,
                      np.asarray(lines))


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


def sections(morphology: Morphology, where: str = "<swc>") -> list[Section]:
    """Cut a morphology into sections as NEURON's Import3d does, in Import3d's order
    (the root's section first, then by first line in the file).

    Raises:
      MorphologyError: ids out of order, a parent listed after its child, or
        more than one root; the message names the line.
    """
    return _import3d.sections(morphology, where)
