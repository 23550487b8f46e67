"""Morphologies: where cell shapes are read, edited and cut into compartments.

* :mod:`~jaxlean.models.neuron.morphology.swc`: SWC files read and cut into sections with
  NEURON Import3d's rules (``_import3d``; ``_section``: the section record); SWC ``REGIONS``.
* :mod:`~jaxlean.models.neuron.morphology.morphology_io`: ``load_morphology`` for ``.swc``,
  Neurolucida ``.asc`` and ``.h5`` (MorphIO) as a ``SectionTree``; ``_contour``: a soma
  outline as Import3d turns it into a soma section.
* :mod:`~jaxlean.models.neuron.morphology.morph_edit`: subtree deletion, diameters, per-section
  ``nseg``; :mod:`~jaxlean.models.neuron.morphology.axon_stub`: the axon stubs of BluePyOpt
  (per release) and of published templates.
* :mod:`~jaxlean.models.neuron.morphology.discretize`: ``nseg`` rules (``Fixed``,
  ``MaxLength``, ``PerLength``, NEURON's ``DLambda``) and NEURON's defaults; ``_geometry``:
  segment areas and resistances from the 3-D points, as NEURON computes them.
"""

from __future__ import annotations

from jaxlean.models.neuron.morphology import axon_stub, discretize, morph_edit, morphology_io, swc
from jaxlean.models.neuron.morphology.axon_stub import (
    replace_axon,
    replace_axon_tapered,
    stub_diameters,
)
from jaxlean.models.neuron.morphology.discretize import (
    NEURON_DEFAULTS,
    DLambda,
    Fixed,
    MaxLength,
    PerLength,
    compartments,
    neuron_defaults,
    section_nseg,
)
from jaxlean.models.neuron.morphology.morph_edit import delete_subtree, scale_diameters, set_nseg
from jaxlean.models.neuron.morphology.morphology_io import (
    SUFFIXES,
    SectionTree,
    load_morphology,
    segment_diameters,
)
from jaxlean.models.neuron.morphology.swc import (
    TYPE_NAMES,
    Morphology,
    Section,
    fixture,
    read_swc,
    section_names,
    sections,
)

__all__ = [
    "NEURON_DEFAULTS",
    "SUFFIXES",
    "TYPE_NAMES",
    "DLambda",
    "Fixed",
    "MaxLength",
    "Morphology",
    "PerLength",
    "Section",
    "SectionTree",
    "axon_stub",
    "compartments",
    "delete_subtree",
    "discretize",
    "fixture",
    "load_morphology",
    "morph_edit",
    "morphology_io",
    "neuron_defaults",
    "read_swc",
    "replace_axon",
    "replace_axon_tapered",
    "scale_diameters",
    "section_names",
    "section_nseg",
    "sections",
    "segment_diameters",
    "set_nseg",
    "stub_diameters",
    "swc",
]
