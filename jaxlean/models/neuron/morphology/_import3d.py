"""Sections of an SWC file by NEURON's Import3d rules (``read_swc.hoc``, ``import3d_gui.hoc``).

Import3d works on the points in file order (index ``i``), not on the tree alone:

* a point ends a section unless it has exactly one child, that child is the next
  line, and both have one type. A child on a later line ends the section even if
  it is the only one; so does a change of type. Soma points whose next line is
  their soma child continue the soma, except a non-root soma point with two or
  more soma children: there the soma branches into several sections;
* a dendrite whose first point ``p`` hangs from the soma by a wire may have a
  second child on a later line ("forks at its first point"): for ``p`` past the
  file's second point, ``p`` is not cut and that child joins the dendrite at
  ``x = 0``; for ``p`` the second point, ``p`` alone becomes a section, a stub
  from the soma centre that both branches join at its end;
* a one-point root is a sphere: a cylinder of length and diameter ``2 r``. So is
  the NeuroMorpho three-point soma (a centre and two points at distance ``r``
  with radius ``r``, nothing attached to them: its two outer points are dropped);
* a section starts with a copy of its parent point, with that point's radius,
  except under a soma, where the copy takes the section's own first radius; a
  dendrite wired to a one-point soma, to an interior soma point or to a soma
  fork point starts at its own first point instead ("wire") and joins the soma
  at ``x = 0.5`` (one-point or interior) or at the end it hangs from;
* a section joins its parent at ``x = 1``, at ``0`` if it hangs from the root's
  first point, at ``0.5`` if it hangs from a one-point soma or an interior point
  of a soma section;
* a section of two equal points (zero length) is dropped and its children join
  its parent where it joined; so is a one-point dendrite on the root's first
  point when the root has several soma children (Import3d wires it, leaving it
  no point).

Files Import3d cannot read as one cell are refused here by line: ids out of
order (Import3d's sort stops with an error), a parent listed after its child,
several roots, a file of one point. Coordinates and radii are rounded to float32
as Import3d's ``sscanf`` reads them, so the points are NEURON's to the last bit.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from jaxlean.errors import MorphologyError
from jaxlean.models.neuron.morphology._section import Section

_ONE = 100          # NEURON counts children as 1 (next line) or 1.01 (later line): x100
SOMA = 1


def _check_order(m, where: str) -> None:
    lines = m.lines
    if m.ids.size < 2:
        raise MorphologyError(f"{where}:{lines[0]}: a single point; NEURON's Import3d builds no "
                              "section from it")
    for i in range(1, m.ids.size):
        if m.ids[i] <= m.ids[i - 1]:
            raise MorphologyError(f"{where}:{lines[i]}: id {m.ids[i]} is not above the previous "
                                  f"id {m.ids[i - 1]}; NEURON's Import3d fails on unsorted files, "
                                  "sort the lines by id")
    late = np.flatnonzero(m.parents >= np.arange(m.ids.size))
    if late.size:
        i = int(late[0])
        raise MorphologyError(f"{where}:{lines[i]}: parent {m.ids[m.parents[i]]} of id {m.ids[i]} "
                              "comes later in the file; Import3d needs parents first")
    roots = np.flatnonzero(m.parents < 0)
    if roots.size != 1:
        raise MorphologyError(f"{where}: expected one root point (parent -1); got {roots.size} "
                              f"(lines {[int(lines[r]) for r in roots]})")


def _as_read(values: np.ndarray) -> np.ndarray:
    """Numbers as Import3d reads them: its ``sscanf("%f")`` rounds them to float32."""
    return np.asarray(values, dtype=np.float32).astype(float)


def _count_children(types: np.ndarray, pix: np.ndarray):
    """NEURON's ``mark_branch``: child counts (x100) and the points joined at ``x = 0``."""
    n = types.size
    nchild = np.zeros(n, dtype=np.int64)
    to_start = np.zeros(n, dtype=bool)
    for i in range(n):
        p = pix[i]
        if p < 0:
            continue
        nchild[p] += _ONE
        if p != i - 1:
            nchild[p] += 1
            if (p > 1 and types[p] != SOMA and types[pix[p]] == SOMA) or (
                    p == 0 and types[p] != SOMA):
                to_start[i] = True
                nchild[p] = _ONE
        if types[p] != types[i]:
            nchild[p] += 1
    return nchild, to_start


def _three_point_soma(m, pix: np.ndarray, nchild: np.ndarray) -> bool:
    """NeuroMorpho's three-point soma, tested exactly as NEURON tests it."""
    if np.count_nonzero(m.types == SOMA) != 3 or pix.size < 3:
        return False
    if not (pix[1] == 0 and pix[2] == 0 and nchild[1] == 0 and nchild[2] == 0):
        return False
    if not (m.radius[1] == m.radius[0] and m.radius[2] == m.radius[0]):
        return False
    span = np.linalg.norm(m.xyz[1:3] - m.xyz[0], axis=1).sum()
    return abs(span / (2 * m.radius[0]) - 1) < 0.01


def sections(m, where: str) -> list:
    """Import3d's sections of morphology ``m`` (see the module docstring), in its order."""
    _check_order(m, where)
    m = dataclasses.replace(m, xyz=_as_read(m.xyz), radius=_as_read(m.radius))
    types, pix = m.types, m.parents.copy()
    n = types.size
    nchild, to_start = _count_children(types, pix)
    soma_children = np.zeros(n, dtype=np.int64)
    for i in range(1, n):
        if types[i] == SOMA and types[pix[i]] == SOMA:
            soma_children[pix[i]] += 1
    sphere3 = _three_point_soma(m, pix, nchild)
    if sphere3:
        pix[2] = 1
    for i in range(n - 1):
        if (types[i] == SOMA and types[i + 1] == SOMA and pix[i + 1] == i
                and (i == 0 or soma_children[i] <= 1)):
            nchild[i] = _ONE
    ends = np.flatnonzero(nchild != _ONE)
    starts = np.concatenate([[0], ends[:-1] + 1])
    section_of = np.repeat(np.arange(ends.size), ends - starts + 1)

    kept = []          # (points, diameters source, parent section, parent_x, wire)
    for k, (first, last) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        own = list(range(first, last + 1))
        if k == 0:
            own = [0] if sphere3 else own
            kept.append({"points": own, "radius": m.radius[own], "parent": -1, "x": 0.5})
            continue
        p = int(pix[first])
        ps = int(section_of[p])
        p_type = types[starts[ps]]
        den_on_soma = p_type == SOMA and types[first] != SOMA
        p_size = (1 if sphere3 else ends[0] + 1) if ps == 0 else ends[ps] - starts[ps] + 2
        x, wire, handled = 1.0, False, ps == 0
        if ps == 0 and den_on_soma and p_size == 1:
            x, wire = 0.5, len(own) > 1
        elif ps == 0 and p == starts[0]:
            x, wire = 0.0, types[first] != SOMA and soma_children[p] > 1
        else:
            handled = False
        if not handled and p_type == SOMA:
            if p < starts[ps] + p_size + (-1 if starts[ps] == 0 else -2):
                x, wire = 0.5, den_on_soma and len(own) > 1
            elif len(own) > 1 and soma_children[p] > 1 and types[first] != SOMA:
                wire = True
        radius = m.radius[[p, *own]].copy()
        if p_type == SOMA and types[first] != SOMA:
            radius[0] = radius[1]
        if to_start[first]:
            x = 0.0
        points = [p, *own]
        if wire:
            points, radius = own, radius[1:]
        kept.append({"points": points, "radius": radius, "parent": ps, "x": x})

    alive = _drop_zero_length(m, kept, [int(starts[k]) for k in range(len(kept))], where)
    renumber = {old: new for new, old in enumerate(alive)}
    out = []
    for old in alive:
        s = kept[old]
        xyz = m.xyz[s["points"]]
        radius = np.asarray(s["radius"], dtype=float)
        if len(s["points"]) == 1:
            offset = np.array([radius[0], 0.0, 0.0])
            xyz = np.stack([xyz[0] - offset, xyz[0], xyz[0] + offset])
            radius = np.full(3, radius[0])
        last = int(ends[old]) if old else int(s["points"][-1])
        out.append(Section(xyz, radius, renumber.get(s["parent"], -1), s["x"],
                           int(types[starts[old]]), int(m.ids[last])))
    return out


def _drop_zero_length(m, kept: list[dict], firsts: list[int], where: str) -> list[int]:
    """Import3d's ``chk_valid``: drop, last to first and with a warning, sections left with
    one point (a one-point dendrite wired to the root's first point) or with two equal
    points; their children join their parent where they joined. Returns the indices kept."""
    alive = list(range(len(kept)))
    for k in range(len(kept) - 1, 0, -1):
        points = kept[k]["points"]
        if len(points) == 1 or (len(points) == 2
                                and np.array_equal(m.xyz[points[0]], m.xyz[points[1]])):
            what = "one point" if len(points) == 1 else "zero length"
            warnings.warn(f"{where}:{m.lines[firsts[k]]}: id {m.ids[firsts[k]]} makes a section of "
                          f"{what}; dropped, as NEURON's Import3d drops it", stacklevel=4)
            alive.remove(k)
            for child in kept[k + 1:]:
                if child["parent"] == k:
                    child["parent"], child["x"] = kept[k]["parent"], kept[k]["x"]
    return alive
