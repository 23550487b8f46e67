"""Hay et al.'s (2011) layer 5 pyramidal cell on any morphology, and BluePyOpt's L5PC example.

Two different models, each built from its own files:

* :func:`build`: the layout of Hay et al.'s ``L5PCbiophys3.hoc`` (ModelDB 139653) on any
  morphology, from Hay's ``.mod`` files, with BluePyOpt's axon stub. This is **not**
  BluePyOpt's ``l5pc`` example (that one puts NaTs2_t on the soma and apical dendrites,
  has ``e_pas = -75``, ``v_init = -65`` and other values); :func:`build` refuses a folder
  that sits beside BluePyOpt's ``mechanisms.json``/``parameters.json``.
* :func:`bluepyopt_example`: BluePyOpt's ``l5pc`` example itself, read from BluePyOpt's own
  files by :func:`jaxlean.models.neuron.formats.bluepyopt.load`; its released parameter
  set is :data:`BLUEPYOPT_RELEASE`.

:func:`build` in detail: the morphology read as NEURON's Import3d reads it, ``nseg = 1 + 2
int(L / 40)`` in every section
(:class:`~jaxlean.models.neuron.morphology.discretize.PerLength`), the axon replaced by
BluePyOpt's two 30 um stub sections (:func:`~jaxlean.models.neuron.morphology.axon_stub.
replace_axon`, the current release's rule), ``pas`` everywhere (``e_pas = -90`` mV,
``Ra = 100`` ohm cm, ``cm = 1`` uF/cm2 on soma and axon, 2 on the dendrites) and per
region (:data:`MECHANISMS`):

* soma: NaTa_t, Nap_Et2, K_Pst, K_Tst, SKv3_1, SK_E2, Ca_HVA, Ca_LVAst, Ih, CaDynamics_E2;
* axon: the same but Ih;
* apical: NaTa_t, SKv3_1, SK_E2, Ca_HVA, Ca_LVAst, Im, Ih, CaDynamics_E2;
* basal: Ih;

``ena = 50`` mV, ``ek = -85`` mV, ``eca`` from Nernst where the calcium shell writes
``cai``; 34 degC. Values (:data:`HAY`, see there for their sources) are keyed
``"name.region"`` as BluePyOpt keys them. Apical Ih rises exponentially with the path
distance ``d`` (um) from ``soma(0.5)``: ``g (-0.8696 + 2.087 exp(0.0031 d))`` (BluePyOpt's
form of Hay's rule); apical Ca_HVA and Ca_LVAst are ``g`` inside Hay's calcium hot zone
(``HOT_ZONE``, 685-885 um) and ``0.1 g`` / ``0.01 g`` outside it.

The channel files are not shipped with jaxlean: pass the folder holding Hay's
``.mod`` files (jaxlean's test suite has them in ``tests/models/neuron/nmodl/mods``)::

    model = l5pc.build("cell.asc", "mods/")
    params = model.params({"gNaTa_tbar_NaTa_t.somatic": 2.5})   # others: Hay's values

:meth:`L5PC.params` is differentiable in the values given (``jax.grad`` through it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import jax.numpy as jnp

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.cell import distribution
from jaxlean.models.neuron.cell.cell import Cell
from jaxlean.models.neuron.formats import bluepyopt as bluepyopt_format
from jaxlean.models.neuron.mechanisms.channels import pas
from jaxlean.models.neuron.morphology import axon_stub, discretize, morphology_io
from jaxlean.models.neuron.nmodl.load import load_mod_dir

__all__ = ["BLUEPYOPT_RELEASE", "CELL", "FITTED", "HAY", "HOT_ZONE", "IH_EXPONENTIAL", "L5PC",
           "MECHANISMS", "bluepyopt_example", "build"]

_SOMATIC = ("NaTa_t", "Nap_Et2", "K_Pst", "K_Tst", "SKv3_1", "SK_E2", "Ca_HVA", "Ca_LVAst",
            "CaDynamics_E2")
#: The mechanisms of each region (besides ``pas``, everywhere).
MECHANISMS = {"somatic": (*_SOMATIC, "Ih"), "axonal": _SOMATIC,
              "apical": ("NaTa_t", "SKv3_1", "SK_E2", "Ca_HVA", "Ca_LVAst", "Im", "Ih",
                         "CaDynamics_E2"),
              "basal": ("Ih",)}
_TYPES = {"somatic": 1, "axonal": 2, "basal": 3, "apical": 4}

#: The values, ``"name.region"``: S/cm2, ms, mV. Somatic, apical and basal as in Hay et al.'s
#: ``L5PCbiophys3.hoc``; axonal as BluePyOpt's ``l5pc`` example releases them (the axon
#: being its stub). The apical ``gIhbar_Ih`` scales the exponential; the apical calcium
#: conductances are their values inside the hot zone.
HAY = {
    "gNaTa_tbar_NaTa_t.somatic": 2.04, "gNap_Et2bar_Nap_Et2.somatic": 0.00172,
    "gK_Pstbar_K_Pst.somatic": 0.00223, "gK_Tstbar_K_Tst.somatic": 0.0812,
    "gSKv3_1bar_SKv3_1.somatic": 0.693, "gSK_E2bar_SK_E2.somatic": 0.0441,
    "gCa_HVAbar_Ca_HVA.somatic": 0.000992, "gCa_LVAstbar_Ca_LVAst.somatic": 0.00343,
    "gamma_CaDynamics_E2.somatic": 0.000501, "decay_CaDynamics_E2.somatic": 460.0,
    "gIhbar_Ih.somatic": 0.0002, "g_pas.somatic": 0.0000338,
    "gNaTa_tbar_NaTa_t.axonal": 3.137968, "gNap_Et2bar_Nap_Et2.axonal": 0.006827,
    "gK_Pstbar_K_Pst.axonal": 0.973538, "gK_Tstbar_K_Tst.axonal": 0.089259,
    "gSKv3_1bar_SKv3_1.axonal": 1.021945, "gSK_E2bar_SK_E2.axonal": 0.007104,
    "gCa_HVAbar_Ca_HVA.axonal": 0.000990, "gCa_LVAstbar_Ca_LVAst.axonal": 0.008752,
    "gamma_CaDynamics_E2.axonal": 0.002910, "decay_CaDynamics_E2.axonal": 287.198731,
    "g_pas.axonal": 0.0000325,
    "gNaTa_tbar_NaTa_t.apical": 0.0213, "gSKv3_1bar_SKv3_1.apical": 0.000261,
    "gSK_E2bar_SK_E2.apical": 0.0012, "gCa_HVAbar_Ca_HVA.apical": 0.000555,
    "gCa_LVAstbar_Ca_LVAst.apical": 0.0187, "gImbar_Im.apical": 0.0000675,
    "gIhbar_Ih.apical": 0.0002, "gamma_CaDynamics_E2.apical": 0.000509,
    "decay_CaDynamics_E2.apical": 122.0, "g_pas.apical": 0.0000589,
    "gIhbar_Ih.basal": 0.0002, "g_pas.basal": 0.0000467,
}

#: Twenty region parameters a fit adjusts (the rest stay at :data:`HAY`).
FITTED = (
    "gNaTa_tbar_NaTa_t.somatic", "gNap_Et2bar_Nap_Et2.somatic", "gK_Pstbar_K_Pst.somatic",
    "gK_Tstbar_K_Tst.somatic", "gSKv3_1bar_SKv3_1.somatic", "gSK_E2bar_SK_E2.somatic",
    "gCa_HVAbar_Ca_HVA.somatic", "gCa_LVAstbar_Ca_LVAst.somatic",
    "gamma_CaDynamics_E2.somatic", "decay_CaDynamics_E2.somatic",
    "gNaTa_tbar_NaTa_t.axonal", "gK_Tstbar_K_Tst.axonal", "gSKv3_1bar_SKv3_1.axonal",
    "gNaTa_tbar_NaTa_t.apical", "gSKv3_1bar_SKv3_1.apical", "gImbar_Im.apical",
    "gIhbar_Ih.apical", "g_pas.somatic", "g_pas.apical", "g_pas.basal",
)

#: Apical Ih: ``g (offset + scale exp(rate d))``, ``d`` in um from soma(0.5).
IH_EXPONENTIAL = {"offset": -0.8696, "scale": 2.087, "rate": 0.0031}
#: Hay's calcium hot zone (um from the soma) and the apical factors outside it.
HOT_ZONE = (685.0, 885.0)
_OUTSIDE = {"gCa_HVAbar_Ca_HVA": 0.1, "gCa_LVAstbar_Ca_LVAst": 0.01}
#: The cell's own values: ``Ra``, ``e_pas``, temperature, start, reversals.
CELL = {"Ra": 100.0, "e_pas": -90.0, "celsius": 34.0, "v_init": -80.0,
        "ena": 50.0, "ek": -85.0}
_CAPACITANCE = {"somatic": 1.0, "axonal": 1.0, "apical": 2.0, "basal": 2.0}


@dataclasses.dataclass(frozen=True, eq=False)
class L5PC:
    """The built model: its :class:`~jaxlean.models.neuron.cell.cell.Cell` (mechanisms
    inserted) and the hot zone it uses; :meth:`params` gives ``simulate``'s parameters."""

    cell: Cell
    hot_zone: tuple[float, float] = HOT_ZONE

    def params(self, values: Mapping[str, object] | None = None) -> dict:
        """``simulate``'s parameters with :data:`HAY`'s values, those in ``values``
        (``{"name.region": value}``, JAX scalars allowed: differentiable) replacing them.

        Raises:
          ConfigError: a key that is not one of :data:`HAY`'s, named.
        """
        values = dict(values or {})
        unknown = sorted(set(values) - set(HAY))
        if unknown:
            theirs = sorted(set(unknown) & set(BLUEPYOPT_RELEASE))
            hint = (f"; {theirs} are keys of BluePyOpt's l5pc example, a different model: "
                    "build it with l5pc.bluepyopt_example(folder)" if theirs else "")
            raise ConfigError(f"L5PC.params: unknown parameter(s) {unknown}; the keys of Hay "
                              f"et al.'s layout are 'name.region' of l5pc.HAY, e.g. "
                              f"'gNaTa_tbar_NaTa_t.somatic'{hint}")
        merged = {**HAY, **values}
        cell = self.cell
        out = {**cell.params(), **CELL}
        out["cm"] = distribution.by_region(
            cell, dict(_CAPACITANCE), name="cm")
        per_name: dict[str, dict[str, object]] = {}
        for key, value in merged.items():
            name, region = key.split(".")
            per_name.setdefault(name, {})[region] = value
        low, high = self.hot_zone
        for name, regions in per_name.items():
            rules = {}
            for region, value in regions.items():
                if region == "apical" and name == "gIhbar_Ih":
                    rules[region] = _exponential(value)
                elif region == "apical" and name in _OUTSIDE:
                    rules[region] = _hot_zone(value, _OUTSIDE[name], low, high)
                else:
                    rules[region] = value
            out[name] = distribution.by_region(cell, rules, fill=0.0, name=name)
        return out


def _exponential(g):
    c = IH_EXPONENTIAL
    return lambda d: g * (c["offset"] + c["scale"] * jnp.exp(c["rate"] * d))


def _hot_zone(g, outside: float, low: float, high: float):
    return lambda d: g * jnp.where((d > low) & (d < high), 1.0, outside)


def build(morphology: str | Path | morphology_io.SectionTree, mods: str | Path, *,
          segment_length: float = 40.0, replace_axon: bool = True,
          hot_zone: tuple[float, float] = HOT_ZONE) -> L5PC:
    """Hay's cell on ``morphology`` (``.asc``, ``.swc``, ``.h5`` or a tree), channels from the
    ``.mod`` files of the folder ``mods``.

    ``nseg = 1 + 2 int(L / segment_length)`` in every section, then (``replace_axon``)
    the axon becomes BluePyOpt's stub (one segment per stub section), as BluePyOpt's
    ``NrnFileMorphology`` does. Mechanisms are inserted in NEURON's order (``pas``,
    NEURON's built-in, first; then ``nrnivmodl``'s order of the files).

    Raises:
      ConfigError: a mechanism of :data:`MECHANISMS` missing from ``mods``, a region of
        the table with no compartment in the morphology, or ``mods`` beside BluePyOpt's
        ``mechanisms.json``/``parameters.json`` (that model is
        :func:`bluepyopt_example`'s), named.
    """
    _not_bluepyopt_example(Path(mods))
    tree = morphology if isinstance(morphology, morphology_io.SectionTree) else (
        morphology_io.load_morphology(morphology))
    if replace_axon:
        tree = axon_stub.replace_axon(tree, segment_length)
    cell = Cell.from_morphology(tree, nseg=discretize.PerLength(segment_length))
    loaded = load_mod_dir(mods)
    needed = {name for names in MECHANISMS.values() for name in names}
    missing = sorted(needed - set(loaded))
    if missing:
        raise ConfigError(f"l5pc.build: the folder {str(mods)!r} has no .mod file for "
                          f"{missing}; Hay et al.'s channel files are needed")
    present = set(cell.kind.tolist())
    absent = [region for region, kind in _TYPES.items() if kind not in present]
    if absent:
        raise ConfigError(f"l5pc.build: the morphology {tree.source!r} has no {absent} "
                          f"section (SWC types {sorted(present)})")
    cell = cell.insert(pas)
    for name, mechanism in loaded.items():
        types = [_TYPES[region] for region, names in MECHANISMS.items() if name in names]
        if types:
            cell = cell.insert(mechanism, types=types)
    return L5PC(cell, tuple(float(x) for x in hot_zone))


#: The released parameter set of BluePyOpt's ``l5pc`` example (``release_params`` in its
#: ``examples/l5pc/l5pc_analysis.py``, commit 146bb019a866; the same values as
#: ``tests/models/neuron/fixtures/bluepyopt_l5pc/release_params.json``).
BLUEPYOPT_RELEASE = {
    "gNaTs2_tbar_NaTs2_t.apical": 0.026145, "gSKv3_1bar_SKv3_1.apical": 0.004226,
    "gImbar_Im.apical": 0.000143, "gNaTa_tbar_NaTa_t.axonal": 3.137968,
    "gK_Tstbar_K_Tst.axonal": 0.089259, "gamma_CaDynamics_E2.axonal": 0.002910,
    "gNap_Et2bar_Nap_Et2.axonal": 0.006827, "gSK_E2bar_SK_E2.axonal": 0.007104,
    "gCa_HVAbar_Ca_HVA.axonal": 0.000990, "gK_Pstbar_K_Pst.axonal": 0.973538,
    "gSKv3_1bar_SKv3_1.axonal": 1.021945, "decay_CaDynamics_E2.axonal": 287.198731,
    "gCa_LVAstbar_Ca_LVAst.axonal": 0.008752, "gamma_CaDynamics_E2.somatic": 0.000609,
    "gSKv3_1bar_SKv3_1.somatic": 0.303472, "gSK_E2bar_SK_E2.somatic": 0.008407,
    "gCa_HVAbar_Ca_HVA.somatic": 0.000994, "gNaTs2_tbar_NaTs2_t.somatic": 0.983955,
    "decay_CaDynamics_E2.somatic": 210.485284, "gCa_LVAstbar_Ca_LVAst.somatic": 0.000333,
}
_EXAMPLE_FILES = ("mechanisms.json", "parameters.json")


def _example_files(folder: Path) -> dict[str, Path] | None:
    """BluePyOpt's example files in ``folder``: its repository's layout (``config/``,
    ``morphology/``, ``mechanisms/``) or all in one folder; ``None`` when absent."""
    for config in (folder / "config", folder):
        if all((config / name).is_file() for name in _EXAMPLE_FILES):
            break
    else:
        return None
    found = {name: config / name for name in _EXAMPLE_FILES}
    found["mechanisms/"] = folder / "mechanisms"
    for place in (folder / "morphology", folder):
        if (place / "C060114A7.asc").is_file():
            found["morphology"] = place / "C060114A7.asc"
    return found


def _not_bluepyopt_example(mods: Path) -> None:
    for folder in (mods, mods.parent):
        files = _example_files(folder)
        if files is not None:
            raise ConfigError(f"l5pc.build: {str(mods)!r} belongs to BluePyOpt's l5pc example "
                              f"({', '.join(str(files[n]) for n in _EXAMPLE_FILES)} beside "
                              "it), a different model from Hay et al.'s layout that build() "
                              "makes; build the example from its own files with "
                              f"l5pc.bluepyopt_example({str(folder)!r})")


def bluepyopt_example(folder: str | Path, *, replace_axon: bool = True,
                      bluepyopt: str = axon_stub.CURRENT):
    """BluePyOpt's ``l5pc`` example from its own files in ``folder`` (BluePyOpt's
    ``examples/l5pc`` or a folder holding ``C060114A7.asc``, ``mechanisms.json``,
    ``parameters.json`` and ``mechanisms/``), as its ``create(do_replace_axon)`` builds it:
    a :class:`~jaxlean.models.neuron.formats.bluepyopt.BluePyOptModel`; its
    ``params(l5pc.BLUEPYOPT_RELEASE)`` are the released values.

    Raises:
      ConfigError: a file of the example missing from ``folder``, named.
    """
    files = _example_files(Path(folder))
    if files is None or "morphology" not in files or not files["mechanisms/"].is_dir():
        raise ConfigError(f"l5pc.bluepyopt_example: {str(folder)!r} does not hold BluePyOpt's "
                          "l5pc example (config/mechanisms.json, config/parameters.json, "
                          "morphology/C060114A7.asc and mechanisms/, or all in one folder)")
    return bluepyopt_format.load(files["morphology"], files["mechanisms.json"],
                                 files["parameters.json"], files["mechanisms/"],
                                 replace_axon=replace_axon, bluepyopt=bluepyopt)
