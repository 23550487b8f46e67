"""Morphology edits that fitting pipelines make before building a cell.

Each takes a :class:`~jaxlean.models.neuron.morphology.morphology_io.SectionTree` (from
:func:`~jaxlean.models.neuron.morphology.morphology_io.load_morphology`) and returns a new
one, for :meth:`Cell.from_morphology <jaxlean.models.neuron.cell.cell.Cell.from_morphology>`:

* :func:`replace_axon`: the axon replaced by BluePyOpt's stub, two 30 um cylinders;
* :func:`delete_subtree`: a section and everything beyond it removed;
* :func:`scale_diameters`: the diameters of some sections (or all) multiplied.

Sections that stay keep their NEURON names, as they do in NEURON after
``delete_section``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from jaxlean._args import as_names
from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron.morphology import morphology_io
from jaxlean.models.neuron.morphology.morphology_io import SectionTree
from jaxlean.models.neuron.morphology.swc import REGIONS, Section

__all__ = ["delete_subtree", "replace_axon", "scale_diameters", "stub_diameters"]

AXON, SOMA = 2, 1
STUB_LENGTH = 30.0          # um, each of the two stub sections
STUB_DIAMETER_DISTANCE = 60.0   # um from soma(0): where the second diameter is read


def stub_diameters(tree: SectionTree, segment_length: float = 40.0) -> tuple[float, float]:
    """The two stub diameters (um) BluePyOpt's ``replace_axon`` reads from the axon.

    BluePyOpt (``NrnFileMorphology.replace_axon``, after its ``set_nseg``): with every
    section cut into ``nseg = 1 + 2 int(L / segment_length)`` segments, the first
    diameter is the first axon section's ``diam`` (NEURON's ``sec.diam``: its middle
    segment's mean diameter,
    :func:`~jaxlean.models.neuron.morphology.morphology_io.segment_diameters`);
    the second is that of the first axon section, in NEURON's order, whose middle
    lies more than 60 um from ``soma(0)`` along the cable (``h.distance`` with the
    origin BluePyOpt sets, ``h.distance(sec=soma)``), else the first again. With no
    axon both are 1 um.
    """
    if not (isinstance(segment_length, numbers.Real) and 0 < segment_length < math.inf):
        raise ConfigError(f"replace_axon: segment_length must be a positive number of um; got "
                          f"{segment_length!r}")
    axonal = [k for k, s in enumerate(tree.sections) if s.kind == AXON]
    if not axonal:
        return 1.0, 1.0
    lengths = [tree.length(k) for k in range(len(tree))]

    def diam(k: int) -> float:
        if tree.cylinders[k] is not None:
            return float(tree.cylinders[k])
        nseg = 1 + 2 * int(lengths[k] / segment_length)
        return float(morphology_io.segment_diameters(tree.sections[k], nseg)[nseg // 2])

    start = np.zeros(len(tree))             # distance from soma(0) to each section's 0 end
    for k, section in enumerate(tree.sections):
        if section.parent >= 0:
            start[k] = start[section.parent] + section.parent_x * lengths[section.parent]
    first = diam(axonal[0])
    for k in axonal:
        if start[k] + 0.5 * lengths[k] > STUB_DIAMETER_DISTANCE:
            return first, diam(k)
    return first, first


def replace_axon(tree: SectionTree, segment_length: float = 40.0) -> SectionTree:
    """The morphology with its axon replaced by BluePyOpt's stub (a new tree).

    BluePyOpt's standard (``NrnFileMorphology.replace_axon``): every axon section
    (SWC type 2, ASC ``Axon``) is deleted and two cylinders of 30 um are added,
    ``axon[0]`` joined to the soma's 1 end (``soma(1)``) and ``axon[1]`` to the end of
    ``axon[0]``, with the diameters of :func:`stub_diameters`. In NEURON the stub has
    no 3-D points; here it runs along x from the soma's end rounded to whole um (only
    its length and diameter matter), and its diameters are exact, not rounded as
    3-D points are. The stub sections come last, as NEURON creates them.

    Raises:
      MorphologyError: no soma section, or a non-axon section hanging from the axon
        (NEURON's ``delete_section`` would leave it unconnected).
    """
    first, second = stub_diameters(tree, segment_length)
    if tree.sections[0].kind != SOMA:
        raise MorphologyError(f"{tree.source}: replace_axon joins the stub to the soma, and "
                              f"the root section {tree.names[0]} is not one")
    for k, section in enumerate(tree.sections):
        parent = section.parent
        if section.kind != AXON and parent >= 0 and tree.sections[parent].kind == AXON:
            raise MorphologyError(f"{tree.source}: section {tree.names[k]} (SWC type "
                                  f"{section.kind}) hangs from the axon section "
                                  f"{tree.names[parent]}; deleting the axon would leave it "
                                  "unconnected")
    kept = [k for k, s in enumerate(tree.sections) if s.kind != AXON]
    base = _subset(tree, kept)
    origin = np.round(tree.sections[0].xyz[-1])
    stub = []
    for index, diameter in enumerate((first, second)):
        xyz = origin + np.array([[index * STUB_LENGTH, 0, 0], [(index + 1) * STUB_LENGTH, 0, 0]])
        parent = 0 if index == 0 else len(base) + index - 1
        stub.append(Section(xyz, np.full(2, diameter / 2), parent, 1.0, AXON, -1))
    return SectionTree((*base.sections, *stub), (*base.names, "axon[0]", "axon[1]"),
                       tree.source, (*base.cylinders, first, second))


def delete_subtree(tree: SectionTree, section: int | str) -> SectionTree:
    """The morphology without ``section`` (a name such as ``"dend[3]"`` or an index) and
    every section beyond it (a new tree).

    Raises:
      ConfigError: an unknown section, or the root (the soma), which holds everything.
    """
    top = tree.index(section, "delete_subtree: section")
    if top == 0:
        raise ConfigError(f"delete_subtree: {tree.names[0]} is the root; deleting it leaves no "
                          "cell")
    gone = {top}
    for k, s in enumerate(tree.sections):     # parents come before their children
        if s.parent in gone:
            gone.add(k)
    return _subset(tree, [k for k in range(len(tree)) if k not in gone])


def scale_diameters(tree: SectionTree, factor: float, *, sections: object = None,
                    regions: object = None) -> SectionTree:
    """The morphology with the diameters of some sections multiplied by ``factor`` (a new
    tree): those named in ``sections`` (names or indices), those of the given
    ``regions`` (names of :data:`~jaxlean.models.neuron.morphology.swc.REGIONS` or SWC
    types), or every section (give at most one of the two).

    Raises:
      ConfigError: a factor that is not a positive number, both selections, an
        unknown section or region, or a selection of no section.
    """
    if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not (
            0 < factor < math.inf):
        raise ConfigError(f"scale_diameters: factor must be a positive number; got {factor!r}")
    if sections is not None and regions is not None:
        raise ConfigError("scale_diameters: give sections or regions, not both")
    chosen = set(range(len(tree)))
    if sections is not None:
        listed = as_names(sections, "scale_diameters: sections", indices=True)
        chosen = {tree.index(s, "scale_diameters: sections") for s in listed}
    elif regions is not None:
        listed = as_names(regions, "scale_diameters: regions", indices=True)
        chosen = set()
        for region in listed:
            if isinstance(region, str) and region not in REGIONS:
                raise ConfigError(f"scale_diameters: unknown region {region!r}; regions are "
                                  f"{', '.join(REGIONS)} or an SWC type (an integer)")
            kind = REGIONS[region] if isinstance(region, str) else int(region)
            chosen |= {k for k, s in enumerate(tree.sections) if kind is None or s.kind == kind}
    if not chosen:
        raise ConfigError(f"scale_diameters: the selection {sections or regions!r} has no "
                          f"section in {tree.source}")
    scaled = tuple(dataclasses.replace(s, radius=s.radius * factor) if k in chosen else s
                   for k, s in enumerate(tree.sections))
    cylinders = tuple(d * factor if d is not None and k in chosen else d
                      for k, d in enumerate(tree.cylinders))
    return dataclasses.replace(tree, sections=scaled, cylinders=cylinders)


def _subset(tree: SectionTree, kept: list[int]) -> SectionTree:
    """The sections ``kept`` (parents among them), renumbered, with their names."""
    renumber = {old: new for new, old in enumerate(kept)}
    sections = tuple(dataclasses.replace(tree.sections[k],
                                         parent=renumber.get(tree.sections[k].parent, -1))
                     for k in kept)
    return SectionTree(sections, tuple(tree.names[k] for k in kept), tree.source,
                       tuple(tree.cylinders[k] for k in kept))
