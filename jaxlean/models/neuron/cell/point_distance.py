"""NEURON's ``h.distance`` from any point of a cell to every segment's centre.

:func:`~jaxlean.models.neuron.cell.distribution.path_distance` measures from ``soma(0.5)``;
BluePyOpt's scalers also measure from ``soma[0](0)`` (``soma_ref_location``) or from a
point on another section (``NrnSegmentSectionDistanceScaler``). ``h.distance(sec(x),
seg)`` is the length of the path along the cable between the two points; here it is
computed from the sections of the
:class:`~jaxlean.models.neuron.morphology.morphology_io.SectionTree` the cell was built
from (their NEURON lengths ``L`` and where each joins its parent), to the centre
``(j + 0.5) / nseg`` of every segment. As in NEURON, a point inside a section stands for
the centre of the segment holding it (``h.distance(0, 0.3, sec=...)`` measures from there).
"""

from __future__ import annotations

import numbers

import numpy as np

from jaxlean.errors import ConfigError

__all__ = ["distance_from"]


def _node(x: float, nseg: int) -> float:
    """Where NEURON puts ``x``: the section's end at 0 and 1, else the centre of the segment
    holding it (``node_exact``; origins and attachment points both)."""
    if x <= 0.0 or x >= 1.0:
        return float(min(max(x, 0.0), 1.0))
    return (min(int(x * nseg), nseg - 1) + 0.5) / nseg


def distance_from(cell, tree, section: int | str, x: float) -> np.ndarray:
    """``h.distance(section(x), seg)`` (um) for every compartment of ``cell``, ``(cell.n,)``.

    Args:
      cell: a :class:`~jaxlean.models.neuron.cell.cell.Cell` built from ``tree``.
      tree: its :class:`~jaxlean.models.neuron.morphology.morphology_io.SectionTree`.
      section: the origin's section (name or index); ``x`` in ``[0, 1]`` along it.

    Raises:
      ConfigError: an unknown section, ``x`` outside ``[0, 1]``, or a cell that is not
        ``tree``'s.
    """
    origin = tree.index(section, "distance_from: section")
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not 0.0 <= x <= 1.0:
        raise ConfigError(f"distance_from: x must be a number in [0, 1]; got {x!r}")
    if tuple(cell.section_names) != tuple(tree.names):
        raise ConfigError("distance_from: the cell was not built from this tree (their "
                          "section names differ)")
    count = len(tree)
    nseg = [cell.compartments_of(k).size for k in range(count)]
    lengths = np.array([cell.length[cell.compartments_of(k)].sum() for k in range(count)])
    parent = np.array([s.parent for s in tree.sections])
    parent_x = np.array([_node(s.parent_x, nseg[s.parent]) if s.parent >= 0 else 0.0
                         for s in tree.sections])
    x = _node(float(x), nseg[origin])
    start = np.zeros(count)                  # distance from the root's 0 end to each 0 end
    for k in range(count):
        if parent[k] >= 0:
            start[k] = start[parent[k]] + parent_x[k] * lengths[parent[k]]
    entry = {origin: float(x)}               # ancestor of the origin -> where its path enters
    k = origin
    while parent[k] >= 0:
        entry[int(parent[k])] = float(parent_x[k])
        k = int(parent[k])
    from_origin = start[origin] + float(x) * lengths[origin]
    out = np.empty(cell.n)
    for j in range(count):
        where = cell.compartments_of(j)
        y = (np.arange(where.size) + 0.5) / where.size
        a, through = j, None                 # walk up from j to the origin's path
        while a not in entry:
            through = float(parent_x[a])
            a = int(parent[a])
        here = y if through is None else np.full(where.size, through)
        meet = start[a] + np.minimum(entry[a], here) * lengths[a]
        out[where] = from_origin + start[j] + y * lengths[j] - 2 * meet
    return out
