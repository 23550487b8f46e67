"""Migliore et al.'s (2018) CA1 pyramidal cell ``CA1_PC_cAC_sig6`` (ModelDB 244688).

The cell template ``cell_seed3_0-pyr-08.hoc`` of R. Migliore, C. A. Lupascu, L. L. Bologna
et al., "The physiological variability of channel density in hippocampal CA1 pyramidal
cells and interneurons explored using a unified data-driven modeling workflow", PLoS
Comput. Biol. 14(9): e1006423 (2018), was written by BluePyOpt; :data:`MECHANISMS` and
:data:`PARAMETERS` are its ``insertChannel()`` and ``biophys()`` in BluePyOpt's
``mechanisms.json`` / ``parameters.json`` form (values copied from the template, each
distribution its ``distribute_distance`` string with the value as ``{value}``), and
:func:`build` loads them with :func:`jaxlean.models.neuron.formats.bluepyopt.load` as
the template instantiates them:

* the morphology read as Import3d reads it (the paper's is ``mpg141209_A_idA.asc``),
  ``nseg = 1 + 2 int(L / 40)`` in every section;
* the axon replaced by the template's own ``replace_axon``: two 30 um sections of five
  segments each, with the old axon's first ten segment diameters
  (:func:`~jaxlean.models.neuron.morphology.axon_stub.replace_axon_tapered`);
* everywhere ``pas``, ``kdr``, ``nax``; soma, apical and basal dendrites the calcium
  channels ``can``, ``cal``, ``cat``, ``kca``, ``cagk`` and ``cacum``, ``hd`` and (not on
  the soma) ``kad``; soma and axon ``kmb`` and ``kap``; ``ena = 50``, ``ek = -90`` mV;
* with ``d`` the path distance (um) from ``soma[0](0.5)``: ``ghdbar_hd`` rising linearly
  (``(1 + 0.03 d) g``, soma and dendrites), ``gkabar_kad`` a sigmoid
  (``15 g / (1 + exp((300 - d) / 50))``, dendrites), ``e_pas`` falling linearly
  (``e - 5 d / 150``, soma and dendrites);
* ``celsius = 34``, ``v_init = -70`` (the template's ``check_simulator``).

The channel files are not shipped with jaxlean: pass the folder holding the twelve
published ``.mod`` files (jaxlean's tests have them in
``tests/models/neuron/nmodl/migliore``)::

    model = migliore_ca1.build("mpg141209_A_idA.asc", "migliore/")
    out = simulate(model.cell, model.params(), ...)

Every value is frozen (the published cell); to fit, scale the arrays of
``model.params()`` (``jax.grad`` goes through them).
"""

from __future__ import annotations

from pathlib import Path

from jaxlean.models.neuron.formats import bluepyopt as bluepyopt_format
from jaxlean.models.neuron.morphology import axon_stub, morphology_io

__all__ = ["CELL", "MECHANISMS", "PARAMETERS", "build"]

_CALCIUM = ["can", "cal", "cat", "kca", "cagk", "cacum"]
#: ``insertChannel()`` of the template: the mechanisms of each section list.
MECHANISMS = {"all": ["pas", "kdr", "nax"],
              "apical": ["kad", "hd", *_CALCIUM],
              "axonal": ["kmb", "kap"],
              "basal": ["kad", "hd", *_CALCIUM],
              "somatic": ["kmb", "kap", "hd", *_CALCIUM]}

#: The name of the cell template these values come from.
CELL = "CA1_PC_cAC_sig6"

_DENDRITIC = {   # the same values on the soma, the apical and the basal dendrites
    "gkdrbar_kdr": 0.0043036502438625682, "gbar_nax": 0.038280628170345957,
    "gcalbar_cal": 8.0324964335287e-06, "gcanbar_can": 2.2618914062501833e-06,
    "gcatbar_cat": 1.184948741542104e-06, "gbar_kca": 9.0311387916396796e-05,
    "gbar_cagk": 4.4820097108998517e-05, "Ra": 115.3957607556371,
    "g_pas": 9.031387191839301e-05,
}
_AXONAL = {"gbar_nax": 0.21113423945477339, "gkdrbar_kdr": 0.011664045469379856,
           "gbar_kmb": 0.026473888790212396, "gkabar_kap": 0.1636942175250268,
           "Ra": 85.202399381150826, "g_pas": 0.00012898002027660884,
           "e_pas": -79.917091935442244}
_SOMATIC = {"gkabar_kap": 0.075979013614757188, "gbar_kmb": 0.0054486096208209286}
_SECTION = ("Ra", "cm", "ena", "ek", "e_pas", "g_pas")
_DISTRIBUTIONS = {   # distribute_distance(list, name, string), in biophys()'s order
    "ghdbar_hd": ("(1. + 3./100. * {distance})*{value}", 1.9042409723832741e-05),
    "e_pas": ("({value}-5*{distance}/150)", -65.726902768520958),
    "gkabar_kad": ("(15./(1. + math.exp((300-{distance})/50)))*{value}",
                   0.012921529390557651),
}


def _entry(name: str, sectionlist: str, value: float, dist: str | None = None) -> dict:
    kind = "section" if name in _SECTION and dist is None else "range"
    entry = {"param_name": name, "sectionlist": sectionlist, "type": kind, "value": value}
    if dist is None:
        entry["dist_type"] = "uniform"
    else:
        entry.update(dist_type="exp", dist=dist)
    return entry


def _parameters() -> list[dict]:
    out = [{"param_name": "celsius", "type": "global", "value": 34.0},
           {"param_name": "v_init", "type": "global", "value": -70.0}]
    out += [_entry(name, "all", value) for name, value in
            (("cm", 1.0), ("ena", 50.0), ("ek", -90.0))]
    out += [_entry(name, "apical", value) for name, value in _DENDRITIC.items()]
    out += [_entry(name, "axonal", value) for name, value in _AXONAL.items()]
    out += [_entry(name, "basal", value) for name, value in _DENDRITIC.items()]
    out += [_entry(name, "somatic", value) for name, value in {**_SOMATIC, **_DENDRITIC}.items()]
    for sectionlist in ("apical", "basal", "somatic"):
        for name, (dist, value) in _DISTRIBUTIONS.items():
            if name != "gkabar_kad" or sectionlist != "somatic":
                out.append(_entry(name, sectionlist, value, dist))
    return out


#: ``biophys()`` of the template as BluePyOpt's ``parameters.json`` entries (all frozen).
PARAMETERS = _parameters()


def build(morphology: str | Path | morphology_io.SectionTree,
          mods: str | Path) -> bluepyopt_format.BluePyOptModel:
    """The cell ``CA1_PC_cAC_sig6`` on ``morphology`` (the paper's: ``mpg141209_A_idA.asc``)
    with the ``.mod`` files of folder ``mods``, built as its template builds it.

    ``model.params()`` gives the published values. Raises ``ConfigError`` naming any of
    the twelve mechanisms missing from ``mods``.
    """
    return bluepyopt_format.load(morphology, MECHANISMS, PARAMETERS, mods,
                                 replace_axon=axon_stub.replace_axon_tapered)
