"""Where each compartment of a cell lies in space: the 3-D points a shape plot draws.

A :class:`~jaxlean.models.neuron.Cell` keeps lengths and radii, not points. Given the
morphology it was built from (a file or a :class:`~jaxlean.models.neuron.SectionTree`,
the axon stub included), :func:`compartment_geometry` cuts each section's 3-D points into
its ``nseg`` segments of equal arc length, as NEURON does, so every compartment gets the
piece of the section it stands for; NEURON's ``PlotShape`` draws the same pieces. A cell
built from parents has no points: its branches are laid out as straight lines, each
subtree in a wedge of angles as wide as its share of the tips (NEURON's ``define_shape``
also invents a layout for sections without points). NumPy only: no plotting here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron import Cell, SectionTree, load_morphology

__all__ = ["Geometry", "compartment_geometry", "project"]

_FAN = np.pi / 3  # a branch's children fan out at most this far from its direction
PLANES = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2), "yx": (1, 0), "zx": (2, 0), "zy": (2, 1)}


@dataclasses.dataclass(frozen=True)
class Geometry:
    """Each compartment's piece of its section, proximal to distal.

    Attributes:
      points: one ``(k, 3)`` array (um) per compartment, ``k >= 2``.
      diameters: one ``(k,)`` array (um) per compartment: the diameter at each point.
      centres: ``(n, 3)``: each compartment's node, the middle of its arc (NEURON's
        ``sec((j + 0.5) / nseg)``).
      from_points: True when the points come from a morphology, False for a layout.
    """

    points: tuple[np.ndarray, ...]
    diameters: tuple[np.ndarray, ...]
    centres: np.ndarray
    from_points: bool


def compartment_geometry(cell: Cell, morphology: str | Path | SectionTree | None = None,
                         ) -> Geometry:
    """The 3-D piece of each of ``cell``'s compartments.

    Args:
      cell: the cell to draw.
      morphology: what ``cell`` was built from (a ``.swc``/``.asc``/``.h5`` path, or the
        :class:`SectionTree` given to ``Cell.from_morphology``, edits such as the axon stub
        included); ``None``: a layout from the cell's lengths and radii.

    Raises:
      ConfigError: a morphology whose sections are not the cell's (their number or names
        differ).
    """
    if morphology is None:
        return _layout(cell)
    tree = morphology if isinstance(morphology, SectionTree) else load_morphology(morphology)
    if len(tree) != cell.n_branches:
        raise ConfigError(f"compartment_geometry: the morphology {tree.source} has "
                          f"{len(tree)} sections and the cell {cell.n_branches}; give the "
                          f"morphology the cell was built from (with its edits, such as "
                          f"replace_axon)")
    if cell.section_names and tuple(cell.section_names) != tuple(tree.names):
        first = next(k for k, (a, b) in enumerate(zip(cell.section_names, tree.names, strict=True))
                     if a != b)
        raise ConfigError(f"compartment_geometry: section {first} is {tree.names[first]!r} in "
                          f"{tree.source} but {cell.section_names[first]!r} in the cell; give "
                          f"the morphology the cell was built from")
    points: list[np.ndarray] = [np.empty((0, 3))] * cell.n
    diameters: list[np.ndarray] = [np.empty(0)] * cell.n
    centres = np.zeros((cell.n, 3))
    for k, section in enumerate(tree.sections):
        xyz = np.asarray(section.xyz, dtype=float)
        diam = 2 * np.asarray(section.radius, dtype=float)
        if tree.cylinders[k] is not None:
            diam = np.full(len(xyz), float(tree.cylinders[k]))
        compartments = cell.compartments_of(k)
        pieces = _cut(xyz, diam, compartments.size)
        for c, (xyz_c, diam_c, centre) in zip(compartments.tolist(), pieces, strict=True):
            points[c], diameters[c], centres[c] = xyz_c, diam_c, centre
    return Geometry(tuple(points), tuple(diameters), centres, True)


def project(xyz: np.ndarray, plane: str | object = "xy") -> np.ndarray:
    """``xyz`` (``(..., 3)``) seen in ``plane``: ``"xy"`` (NEURON's default view), ``"xz"``,
    ``"yz"`` (and their swaps), or a ``(2, 3)`` matrix whose rows are the screen's axes.

    Raises:
      ConfigError: another plane name, or a matrix of another shape.
    """
    if isinstance(plane, str):
        if plane not in PLANES:
            raise ConfigError(f"plane must be one of {sorted(PLANES)} or a (2, 3) matrix; got "
                              f"{plane!r}")
        matrix = np.eye(3)[list(PLANES[plane])]
    else:
        matrix = np.asarray(plane, dtype=float)
        if matrix.shape != (2, 3):
            raise ConfigError(f"plane: a projection matrix must have shape (2, 3); got "
                              f"{matrix.shape}")
    return np.asarray(xyz, dtype=float) @ matrix.T


def _cut(xyz: np.ndarray, diam: np.ndarray, nseg: int):
    """``nseg`` pieces of equal arc length of a polyline: points, diameters, centre."""
    steps = np.sqrt(np.sum(np.diff(xyz, axis=0) ** 2, axis=1))
    arc = np.concatenate([[0.0], np.cumsum(steps)])
    bounds = np.linspace(0.0, arc[-1], nseg + 1)

    def at(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        where = np.stack([np.interp(s, arc, xyz[:, i]) for i in range(3)], axis=-1)
        return where, np.interp(s, arc, diam)

    for j in range(nseg):
        a, b = bounds[j], bounds[j + 1]
        inside = arc[(arc > a) & (arc < b)]
        piece, width = at(np.concatenate([[a], inside, [b]]))
        centre, _ = at(np.asarray([0.5 * (a + b)]))
        yield piece, width, centre[0]


def _layout(cell: Cell) -> Geometry:
    """Straight branches fanned out by their share of the tips (no 3-D points)."""
    parents = np.asarray(cell.parents)
    branch = np.asarray(cell.branch)
    first = {int(b): int(np.flatnonzero(branch == b)[0]) for b in np.unique(branch)}
    parent_branch = {b: (int(branch[parents[c]]) if parents[c] >= 0 else -1)
                     for b, c in first.items()}
    children: dict[int, list[int]] = {}
    for b, p in parent_branch.items():
        children.setdefault(p, []).append(b)
    leaves: dict[int, int] = {}

    def count(b: int) -> int:
        leaves[b] = sum(count(child) for child in children.get(b, [])) or 1
        return leaves[b]

    roots = children.get(-1, [])
    for root in roots:
        count(root)
    angle: dict[int, float] = {}

    def spread(b: int, low: float, high: float) -> None:
        angle[b] = middle = 0.5 * (low + high)
        low, high = max(low, middle - _FAN), min(high, middle + _FAN)
        start = low
        for child in children.get(b, []):
            width = (high - low) * leaves[child] / leaves[b]
            spread(child, start, start + width)
            start += width

    total = sum(leaves[root] for root in roots)
    start = -np.pi
    for root in roots:  # the root branch along x; its children share the full circle
        angle[root] = 0.0
        width = 2 * np.pi * leaves[root] / total
        begin = start
        for child in children.get(root, []):
            share = width * leaves[child] / leaves[root]
            spread(child, begin, begin + share)
            begin += share
        start += width
    length = np.asarray(cell.length, dtype=float)
    radius = np.asarray(cell.radius, dtype=float)
    proximal = np.zeros((cell.n, 3))
    distal = np.zeros((cell.n, 3))
    for c in np.argsort(_depths(parents), kind="stable").tolist():
        theta = angle[int(branch[c])]
        direction = np.array([np.cos(theta), np.sin(theta), 0.0])
        p = parents[c]
        if p < 0:
            start_point = -0.5 * length[c] * direction
        else:
            start_point = proximal[p] + float(cell.attach[c]) * (distal[p] - proximal[p])
        proximal[c] = start_point
        distal[c] = start_point + length[c] * direction
    points = tuple(np.stack([proximal[c], distal[c]]) for c in range(cell.n))
    diameters = tuple(np.full(2, 2 * radius[c]) for c in range(cell.n))
    return Geometry(points, diameters, 0.5 * (proximal + distal), False)


def _depths(parents: np.ndarray) -> np.ndarray:
    """Each compartment's number of ancestors (parents in any numbering)."""
    depth = np.full(parents.size, -1)
    for c in range(parents.size):
        path = []
        while c >= 0 and depth[c] < 0:
            path.append(c)
            c = int(parents[c])
        known = depth[c] if c >= 0 else -1
        for node in reversed(path):
            known += 1
            depth[node] = known
    return depth
