"""The axon replaced by a stub, as BluePyOpt and the cell templates it writes replace it.

Fitted cell models (BluePyOpt's, the Blue Brain Project's) delete the reconstructed axon and
attach a short stub to the soma. The rule that picks the stub's diameters changed between
BluePyOpt releases, so :func:`replace_axon` takes the release (``bluepyopt=``):

* ``"1.10"`` and later (the default, :data:`CURRENT`): the distance to an axon
  section's middle is measured from ``soma(0.5)`` (``h.distance(0, 0.5, sec=soma[0])``);
* before ``"1.10"``, and ``"hoc"`` (the ``replace_axon`` procedure BluePyOpt's
  ``create_hoc`` writes into a cell template, to this day): from ``soma(0)``
  (``h.distance(sec=soma)``, ``soma distance()``);
* from ``"1.14.15"`` the stub's length (``axon_stub_length``) and its ``nseg`` rule
  (``axon_nseg_frequency``) are arguments; before, 60 um and ``nseg = 1``.

:func:`replace_axon_tapered` is the ``replace_axon`` of Blue Brain's published templates
(e.g. the CA1 cells of Migliore et al. 2018; BluePyEModel's ``replace_axon_legacy`` and
its HOC): two sections of five segments each, every segment with the diameter of one
segment of the old axon. BluePyEModel's ``replace_axon_with_taper`` (the same stub and a
1000 um myelin section) is not provided.
"""

from __future__ import annotations

import math
import numbers
import re

import numpy as np

from jaxlean.errors import ConfigError, MorphologyError
from jaxlean.models.neuron.morphology import morphology_io
from jaxlean.models.neuron.morphology.morph_edit import _subset
from jaxlean.models.neuron.morphology.morphology_io import SectionTree
from jaxlean.models.neuron.morphology.swc import Section

__all__ = ["CURRENT", "replace_axon", "replace_axon_tapered", "stub_diameters"]

AXON, SOMA = 2, 1
#: The BluePyOpt release whose rule :func:`replace_axon` follows by default.
CURRENT = "1.14.26"
_SOMA_MIDDLE_FROM = (1, 10)       # BluePyOpt 1.10: distances from soma(0.5), not soma(0)
_STUB_ARGUMENTS_FROM = (1, 14, 15)  # axon_stub_length, axon_nseg_frequency


def _release(bluepyopt: str) -> tuple[int, ...] | None:
    """``(1, 14, 26)`` of ``"1.14.26"``; ``None`` for ``"hoc"``."""
    if bluepyopt == "hoc":
        return None
    if not isinstance(bluepyopt, str) or not re.fullmatch(r"\d+(\.\d+){1,2}", bluepyopt):
        raise ConfigError(f"replace_axon: bluepyopt must be a BluePyOpt release such as "
                          f"{CURRENT!r} or '1.9', or 'hoc' (the create_hoc template's "
                          f"procedure); got {bluepyopt!r}")
    return tuple(int(part) for part in bluepyopt.split("."))


def _positive(value: object, what: str) -> float:
    if isinstance(value, bool) or not (isinstance(value, numbers.Real) and 0 < value < math.inf):
        raise ConfigError(f"replace_axon: {what} must be a positive number of um; got {value!r}")
    return float(value)


def _starts(tree: SectionTree, origin: float) -> np.ndarray:
    """Path distance (um) from ``soma(origin)`` to each section's 0 end (``h.distance``)."""
    lengths = [tree.length(k) for k in range(len(tree))]
    start = np.zeros(len(tree))
    for k, section in enumerate(tree.sections):
        p = section.parent
        if p == 0:
            start[k] = abs(section.parent_x - origin) * lengths[0]
        elif p > 0:
            start[k] = start[p] + section.parent_x * lengths[p]
    return start


def _sec_diam(tree: SectionTree, k: int, segment_length: float) -> float:
    """NEURON's ``sec.diam`` (the middle segment's) after ``nseg = 1 + 2 int(L / um)``."""
    own = tree.cylinders[k]
    if own is not None:
        return float(own[len(own) // 2]) if isinstance(own, tuple) else float(own)
    nseg = 1 + 2 * int(tree.length(k) / segment_length)
    return float(morphology_io.segment_diameters(tree.sections[k], nseg)[nseg // 2])


def stub_diameters(tree: SectionTree, segment_length: float = 40.0, *,
                   bluepyopt: str = CURRENT, stub_length: float = 60.0) -> tuple[float, float]:
    """The two stub diameters (um) BluePyOpt's ``replace_axon`` reads from the axon.

    With every section cut into ``nseg = 1 + 2 int(L / segment_length)`` segments
    (BluePyOpt's ``set_nseg``, before the stub), the first diameter is the first axon
    section's ``sec.diam`` (its middle segment's); the second is that of the first axon
    section, in NEURON's order, whose middle lies more than ``stub_length`` um along the
    cable from the soma (from ``soma(0.5)`` or ``soma(0)``: see the module), else the first
    again. One axon section: its diameter twice; none: 1 um twice.
    """
    release = _release(bluepyopt)
    _positive(segment_length, "segment_length")
    stub_length = _positive(stub_length, "stub_length")
    origin = 0.5 if release is not None and release >= _SOMA_MIDDLE_FROM else 0.0
    axonal = [k for k, s in enumerate(tree.sections) if s.kind == AXON]
    if not axonal:
        return 1.0, 1.0
    first = _sec_diam(tree, axonal[0], segment_length)
    if len(axonal) == 1:
        return first, first
    start = _starts(tree, origin)
    for k in axonal:
        if start[k] + 0.5 * tree.length(k) > stub_length:
            return first, _sec_diam(tree, k, segment_length)
    return first, first


def _checked_soma(tree: SectionTree, what: str) -> None:
    if tree.sections[0].kind != SOMA:
        raise MorphologyError(f"{tree.source}: {what} joins the stub to the soma, and the root "
                              f"section {tree.names[0]} is not one")
    for k, section in enumerate(tree.sections):
        parent = section.parent
        if section.kind != AXON and parent >= 0 and tree.sections[parent].kind == AXON:
            raise MorphologyError(f"{tree.source}: section {tree.names[k]} (SWC type "
                                  f"{section.kind}) hangs from the axon section "
                                  f"{tree.names[parent]}; deleting the axon would leave it "
                                  "unconnected")


def _with_stub(tree: SectionTree, diameters: list, length: float, nseg: int) -> SectionTree:
    """The tree without its axon, two stub sections of ``length`` um each appended."""
    base = _subset(tree, [k for k, s in enumerate(tree.sections) if s.kind != AXON])
    origin = np.round(tree.sections[0].xyz[-1])
    sections = []
    for index, diameter in enumerate(diameters):
        xyz = origin + np.array([[index * length, 0, 0], [(index + 1) * length, 0, 0]])
        parent = 0 if index == 0 else len(base) + index - 1
        mean = float(np.mean(diameter))
        sections.append(Section(xyz, np.full(2, mean / 2), parent, 1.0, AXON, -1))
    return SectionTree((*base.sections, *sections), (*base.names, "axon[0]", "axon[1]"),
                       tree.source, (*base.cylinders, *diameters), (*base.nseg, nseg, nseg))


def replace_axon(tree: SectionTree, segment_length: float = 40.0, *, bluepyopt: str = CURRENT,
                 stub_length: float = 60.0, stub_segment_length: float = 40.0) -> SectionTree:
    """The morphology with its axon replaced by BluePyOpt's stub (a new tree).

    BluePyOpt's ``NrnFileMorphology.replace_axon`` of the release ``bluepyopt`` (see the
    module; ``"hoc"``: the procedure of ``create_hoc``'s templates): every axon section
    (SWC type 2, ASC ``Axon``) is deleted and two cylinders of ``stub_length / 2`` um are
    added, ``axon[0]`` joined to ``soma(1)`` and ``axon[1]`` to the end of ``axon[0]``,
    with the diameters of :func:`stub_diameters` (exact, as ``sec.diam`` sets them) and
    their own ``nseg``: ``1 + 2 int(L / stub_segment_length)`` (1 before 1.14.15), kept
    whatever rule later discretises the other sections. The stub sections come last,
    as NEURON creates them; they run along x from the soma's end (only their length and
    diameter matter).

    Raises:
      ConfigError: an unknown release, or stub arguments changed for a release (or the
        HOC procedure) that has none.
      MorphologyError: no soma section, or a non-axon section hanging from the axon
        (NEURON's ``delete_section`` would leave it unconnected).
    """
    release = _release(bluepyopt)
    stub_length = _positive(stub_length, "stub_length")
    stub_segment_length = _positive(stub_segment_length, "stub_segment_length")
    if (release is None or release < _STUB_ARGUMENTS_FROM) and (
            stub_length, stub_segment_length) != (60.0, 40.0):
        raise ConfigError(f"replace_axon: BluePyOpt {bluepyopt} has no axon_stub_length or "
                          "axon_nseg_frequency (60 um, nseg 1); they came in 1.14.15")
    _checked_soma(tree, "replace_axon")
    first, second = stub_diameters(tree, segment_length, bluepyopt=bluepyopt,
                                   stub_length=stub_length)
    half = stub_length / 2
    nseg = 1 + 2 * int(half / stub_segment_length)
    if release is None or release < _STUB_ARGUMENTS_FROM:
        nseg = 1
    return _with_stub(tree, [first, second], half, nseg)


def replace_axon_tapered(tree: SectionTree, *, length: float = 60.0,
                         nseg: int = 5) -> SectionTree:
    """The ``replace_axon`` of Blue Brain's published cell templates (a new tree).

    The first ``2 nseg`` segment diameters of the old axon are read, each axon section
    (in NEURON's order) cut for this into ``1 + 2 int(L / (2 chunk))`` segments with
    ``chunk = length / (2 nseg)``; the axon is deleted; two sections of ``length / 2`` um
    and ``nseg`` segments each are joined as :func:`replace_axon` joins its stub, segment
    ``j`` of the pair getting diameter ``j`` (``diam(x) = ...`` in the template).

    Raises:
      MorphologyError: no axon, fewer than ``2 nseg`` axon segments to read, or the
        conditions of :func:`replace_axon`.
    """
    length = _positive(length, "length")
    if isinstance(nseg, bool) or not isinstance(nseg, numbers.Integral) or nseg < 1:
        raise ConfigError(f"replace_axon_tapered: nseg must be a positive integer; got {nseg!r}")
    _checked_soma(tree, "replace_axon_tapered")
    chunk = length / (2 * nseg)
    diameters: list[float] = []
    for k, section in enumerate(tree.sections):
        if section.kind != AXON or len(diameters) == 2 * nseg:
            continue
        count = 1 + int(tree.length(k) / chunk / 2.0) * 2
        read = morphology_io.segment_diameters(section, count)
        diameters.extend(float(d) for d in read[: 2 * nseg - len(diameters)])
    if len(diameters) < 2 * nseg:
        raise MorphologyError(f"{tree.source}: replace_axon_tapered reads {2 * nseg} segment "
                              f"diameters from the axon, and it has {len(diameters)}")
    return _with_stub(tree, [tuple(diameters[:nseg]), tuple(diameters[nseg:])], length / 2,
                      int(nseg))
