"""Morphology edits that fitting pipelines make before building a cell.

Each takes a :class:`~jaxlean.models.neuron.morphology.morphology_io.SectionTree` (from
:func:`~jaxlean.models.neuron.morphology.morphology_io.load_morphology`) and returns a new
one, for :meth:`Cell.from_morphology <jaxlean.models.neuron.cell.cell.Cell.from_morphology>`:

* :func:`delete_subtree`: a section and everything beyond it removed;
* :func:`scale_diameters`: the diameters of some sections (or all) multiplied;
* :func:`set_nseg`: some sections' own ``nseg`` (``sec.nseg = n``), kept by any rule.

The axon stubs of BluePyOpt and of published templates are in
:mod:`~jaxlean.models.neuron.morphology.axon_stub`.

Sections that stay keep their NEURON names, as they do in NEURON after
``delete_section``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping

from jaxlean._args import as_int, as_names
from jaxlean.errors import ConfigError
from jaxlean.models.neuron.morphology.morphology_io import SectionTree
from jaxlean.models.neuron.morphology.swc import REGIONS

__all__ = ["delete_subtree", "scale_diameters", "set_nseg"]


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
    cylinders = tuple(d if d is None or k not in chosen
                      else tuple(x * factor for x in d) if isinstance(d, tuple) else d * factor
                      for k, d in enumerate(tree.cylinders))
    return dataclasses.replace(tree, sections=scaled, cylinders=cylinders)


def set_nseg(tree: SectionTree, counts: Mapping[int | str, int | None]) -> SectionTree:
    """The morphology with some sections' own ``nseg`` (a new tree): ``{section: n}``,
    sections by name (``"soma[0]"``) or index, as ``sec.nseg = n`` after ``forall nseg =
    ...`` in NEURON; the discretisation rule of :meth:`Cell.from_morphology
    <jaxlean.models.neuron.cell.cell.Cell.from_morphology>` leaves them. ``None`` gives a
    section back to the rule.

    Raises:
      ConfigError: an unknown section, a count that is not a positive integer, or a
        section with one diameter per segment (its ``nseg`` is that count).
    """
    if not isinstance(counts, Mapping):
        raise ConfigError(f"set_nseg: counts must be a dict {{section: nseg}}; got "
                          f"{type(counts).__name__}")
    own = list(tree.nseg)
    for section, count in counts.items():
        k = tree.index(section, "set_nseg: section")
        if count is not None:
            count = as_int(count, f"set_nseg: nseg of {tree.names[k]}", minimum=1)
        if isinstance(tree.cylinders[k], tuple) and count != own[k]:
            raise ConfigError(f"set_nseg: {tree.names[k]} has one diameter per segment "
                              f"({own[k]}); its nseg cannot change")
        own[k] = count
    return dataclasses.replace(tree, nseg=tuple(own))


def _subset(tree: SectionTree, kept: list[int]) -> SectionTree:
    """The sections ``kept`` (parents among them), renumbered, with their names."""
    renumber = {old: new for new, old in enumerate(kept)}
    sections = tuple(dataclasses.replace(tree.sections[k],
                                         parent=renumber.get(tree.sections[k].parent, -1))
                     for k in kept)
    return SectionTree(sections, tuple(tree.names[k] for k in kept), tree.source,
                       tuple(tree.cylinders[k] for k in kept), tuple(tree.nseg[k] for k in kept))
