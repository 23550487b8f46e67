"""SWC morphologies: read and validate a file, split its branches into compartments.

An SWC line is ``id type x y z radius parent`` (um; ``parent = -1`` for a root).
Errors name the file line. The root point becomes a soma compartment: a
cylinder of length and diameter ``2 r`` (NEURON's single-point soma, same area
as the sphere). Every unbranched run of points is a branch, split into equal
compartments whose radius is the interpolated radius at their midpoint.
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


def _branches(parents: np.ndarray) -> list[list[int]]:
    """Unbranched runs of non-root points, each from just below a fork/root to a fork/leaf."""
    children = [[] for _ in parents]
    for node, parent in enumerate(parents.tolist()):
        if parent >= 0:
            children[parent].append(node)
    branches, stack = [], [c for root in np.flatnonzero(parents < 0) for c in children[root]]
    while stack:
        branch = [stack.pop()]
        while len(children[branch[-1]]) == 1:
            branch.append(children[branch[-1]][0])
        branches.append(branch)
        stack.extend(children[branch[-1]])
    return branches


def compartments(morphology: Morphology, ncomp: int | None = None,
                 max_length: float | None = None) -> dict[str, np.ndarray]:
    """Split every branch into compartments.

    Args:
      morphology: from :func:`read_swc`.
      ncomp: compartments per branch; or
      max_length: longest compartment (um); each branch gets ``ceil(length / max_length)``.

    Returns:
      ``parents``, ``length`` (um), ``radius`` (um) and ``branch`` (branch index, -1
      for somas) per compartment, roots (somas) first.
    """
    if (ncomp is None) == (max_length is None):
        raise ConfigError("give exactly one of ncomp (per branch) or max_length (um)")
    if (ncomp is not None and ncomp < 1) or (max_length is not None and not max_length > 0):
        raise ConfigError(f"ncomp must be >= 1 and max_length > 0; got {ncomp}, {max_length}")
    roots = np.flatnonzero(morphology.parents < 0)
    last_of_point = {int(root): i for i, root in enumerate(roots)}
    parents = [-1] * roots.size
    length = [2.0 * morphology.radius[r] for r in roots]
    radius = [morphology.radius[r] for r in roots]
    branch_of = [-1] * roots.size
    for index, branch in enumerate(_branches(morphology.parents)):
        points = [int(morphology.parents[branch[0]]), *branch]
        steps = np.linalg.norm(np.diff(morphology.xyz[points], axis=0), axis=1)
        distance = np.cumsum(steps)
        total = max(float(distance[-1]), 1e-3)
        count = ncomp if ncomp is not None else max(1, math.ceil(total / max_length))
        midpoints = (np.arange(count) + 0.5) * total / count
        previous = last_of_point[points[0]]
        for mid in midpoints:
            parents.append(previous)
            previous = len(parents) - 1
            length.append(total / count)
            radius.append(float(np.interp(mid, distance, morphology.radius[branch])))
            branch_of.append(index)
        last_of_point[branch[-1]] = previous
    return {"parents": np.asarray(parents), "length": np.asarray(length),
            "radius": np.asarray(radius), "branch": np.asarray(branch_of)}
