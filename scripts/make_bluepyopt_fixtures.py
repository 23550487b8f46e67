"""Write fixtures of BluePyOpt's model format made by BluePyOpt itself, run in NEURON.

Needs ``bluepyopt``, ``neuron`` and a C compiler (``nrnivmodl``): ``pip install
'jaxlean[bluepyopt-parity]'`` (the committed fixtures: BluePyOpt 1.14.26, NEURON 9.0.2, in a
venv of their own: ``pip install neuron==9.0.2 bluepyopt numpy``), plus ``pip install
--no-deps bluepyemodel`` for the ``bluepyemodel_taper`` case (1.0.50). From the repository
root::

    python scripts/make_bluepyopt_fixtures.py [--out DIR] [CASE ...]

Every case starts from BluePyOpt's own files of its L5PC example, committed in
``tests/models/neuron/fixtures/bluepyopt_l5pc/`` (``C060114A7.asc``, ``mechanisms.json``,
``parameters.json``, ``release_params.json``, ``mechanisms/*.mod``; see ``SOURCES.md``),
and BluePyOpt builds the cell (``scripts/_bluepyopt_cell.py``): ``NrnFileMorphology``
(Import3d, ``nseg = 1 + 2 int(L / 40)``, BluePyOpt's ``replace_axon``), its mechanism,
parameter and scaler objects. Cases (:data:`CASES`):

* ``bluepyopt_l5pc``: the example's ``create(do_replace_axon=True)`` with the released
  parameters; an ``NrnSquarePulse`` on ``soma[0](0.5)`` and ``CompRecording`` s, run by
  BluePyOpt's ``NrnSimulator`` at a fixed ``dt`` (backward Euler). Saved: the voltage at
  the soma and two dendritic points every ``every``-th step, the 0 mV upward crossings of
  the full traces (spike times), the sections, ``nseg``, every segment's distance from
  ``soma(0.5)`` and the values of the distributed parameters.
* ``bluepyopt_stub``: the morphology alone, the axon replaced by BluePyOpt's Python
  ``replace_axon`` (``python_*``) and by the HOC ``replace_axon`` of the cell template
  BluePyOpt's ``create_hoc`` writes (``hoc_*``): names, ``nseg``, lengths and
  diameters of the stub sections.
* ``bluepyemodel_taper`` (needs ``pip install --no-deps bluepyemodel``): the tapered stub
  of Blue Brain's published templates, two sections of five segments with one diameter
  each, as BluePyEModel's ``replace_axon_legacy`` morphology modifier makes it in Python
  (``python_*``, through BluePyOpt's ``morph_modifiers``) and as its HOC
  ``replace_axon_legacy_hoc`` does in a ``create_hoc`` template (``hoc_*``).
* ``bluepyopt_locations``: the cell with BluePyOpt's stub alone, BluePyOpt's
  ``NrnSomaDistanceCompLocation`` (its point at a path distance from ``soma(0.5)`` in a
  section list: the example's ``dend1`` and ``dend2`` among them) at each distance of the
  case: the section and ``x`` it picks.
* ``bluepyemodel_taper_run`` (needs ``bluepyemodel`` too): that tapered stub
  (``replace_axon_legacy``) on a passive cell (:data:`TAPER_PARAMETERS`), 20 ms of the step
  protocol at the soma and in both stub sections.
* ``bluepyopt_scalers``: the example's mechanisms with :data:`SCALER_PARAMETERS` (every
  scaler BluePyOpt has: linear with multiplier and offset, soma distance from
  ``soma(0)`` and ``soma(0.5)``, the step scaler, the section distance scaler, an
  expression with ``math`` functions, section and global parameters; ``Ra`` and ``cm``
  differing between sections, NEURON's defaults elsewhere): each segment's value of every
  range parameter, and 20 ms of BluePyOpt's step protocol (soma and an apical point).

BluePyOpt's and NEURON's versions are saved with each fixture.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from _bluepyopt_cell import (
    cell_model,
    hoc_template_cell,
    mechanisms,
    parameters,
    short_name,
    simulator,
)
from _fixture_cli import command_line, nrnivmodl_and_load, run_cases  # scripts/ is on sys.path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "models" / "neuron" / "fixtures" / "bluepyopt_l5pc"
OUT = FOLDER
MORPHOLOGY = FOLDER / "C060114A7.asc"

CASES = {
    "bluepyopt_l5pc": {"dt": 0.025, "t_max": 500.0, "amp": 0.5, "delay": 20.0, "dur": 400.0,
                       "every": 10, "sites": [["somatic", 0, 0.5], ["basal", 8, 0.5],
                                              ["apical", 12, 0.5]]},
    "bluepyopt_stub": {},
    "bluepyopt_scalers": {"dt": 0.025, "t_max": 20.0, "amp": 0.5, "delay": 2.0, "dur": 15.0,
                          "every": 4, "sites": [["somatic", 0, 0.5], ["apical", 12, 0.5]]},
    "bluepyemodel_taper": {},
    # a passive cell with the tapered stub: the per-segment cylinders' areas and resistances
    "bluepyemodel_taper_run": {"dt": 0.025, "t_max": 20.0, "amp": 0.5, "delay": 2.0,
                               "dur": 15.0, "every": 4,
                               "sites": [["somatic", 0, 0.5], ["axonal", 0, 0.5],
                                         ["axonal", 1, 0.9]]},
    # the L5PC example's dend1 and dend2 (660 and 800 um apical), and points across regions
    "bluepyopt_locations": {"apical": [5.0, 60.0, 150.0, 333.3, 660.0, 800.0, 1100.0],
                            "basal": [10.0, 45.5, 120.0, 200.0]},
}

#: ``parameters.json`` entries of ``bluepyemodel_taper_run``: ``pas`` everywhere.
TAPER_PARAMETERS = [
    {"param_name": "g_pas", "sectionlist": "all", "type": "range", "dist_type": "uniform",
     "value": 1e-4},
    {"param_name": "e_pas", "sectionlist": "all", "type": "range", "dist_type": "uniform",
     "value": -65.0},
    {"param_name": "Ra", "sectionlist": "all", "type": "section", "dist_type": "uniform",
     "value": 100.0},
]

#: Entries in ``parameters.json``'s form exercising each BluePyOpt scaler (values arbitrary).
SCALER_PARAMETERS = [
    {"param_name": "celsius", "type": "global", "value": 34},
    {"param_name": "cm", "sectionlist": "all", "type": "section", "dist_type": "uniform",
     "value": 1.5},
    {"param_name": "Ra", "sectionlist": "apical", "type": "section", "dist_type": "uniform",
     "value": 120},
    {"param_name": "g_pas", "sectionlist": "all", "type": "range", "dist_type": "uniform",
     "value": 3e-5, "multiplier": 2.0, "offset": 1e-6},
    {"param_name": "gIhbar_Ih", "mech": "Ih", "mech_param": "gIhbar", "type": "range",
     "sectionlist": "apical", "dist_type": "exp", "value": 8e-5,
     "dist": "(-0.8696 + 2.087*math.exp(({distance})*0.0031))*{value}"},
    {"param_name": "gIhbar_Ih", "mech": "Ih", "mech_param": "gIhbar", "type": "range",
     "sectionlist": "basal", "dist_type": "exp", "value": 8e-5, "soma_ref_location": 0.0,
     "dist": "{value}*math.exp(-{distance}/150.0)"},
    {"param_name": "gImbar_Im", "mech": "Im", "mech_param": "gImbar", "type": "range",
     "sectionlist": "apical", "dist_type": "step", "value": 1e-4, "step_begin": 300.0,
     "step_end": 500.0,
     "dist": "{value} * (1.0 if ({distance} > {step_begin} and {distance} < {step_end}) "
             "else 0.1)"},
    {"param_name": "gSKv3_1bar_SKv3_1", "mech": "SKv3_1", "mech_param": "gSKv3_1bar",
     "type": "range", "sectionlist": "apical", "dist_type": "exp", "value": 4e-3,
     "ref_section": "apic[5]", "ref_location": 0.3,
     "dist": "{value}*(1 + 0.001*{distance})"},
    {"param_name": "gNaTs2_tbar_NaTs2_t", "mech": "NaTs2_t", "mech_param": "gNaTs2_tbar",
     "type": "range", "sectionlist": "apical", "dist_type": "exp", "value": 0.02,
     "dist": "{value}/(1 + math.exp(({distance} - 300)/50.0)) + "
             "min(0.001, max(0.0, math.sqrt({distance})*1e-5)) + 0*abs(-{distance})"},
    {"param_name": "gNaTs2_tbar_NaTs2_t", "mech": "NaTs2_t", "mech_param": "gNaTs2_tbar",
     "type": "range", "sectionlist": "somatic", "dist_type": "uniform", "value": 0.9,
     "multiplier": 0.5},
]
RANGE_NAMES = ("g_pas", "gIhbar_Ih", "gImbar_Im", "gSKv3_1bar_SKv3_1", "gNaTs2_tbar_NaTs2_t",
               "cm", "Ra")


def compile_mods() -> None:
    folder = Path(tempfile.mkdtemp(prefix="jaxlean_bluepyopt_"))
    for path in (FOLDER / "mechanisms").glob("*.mod"):
        shutil.copy(path, folder / path.name)
    nrnivmodl_and_load(folder)


def crossings(v: np.ndarray, dt: float) -> np.ndarray:
    """Upward crossings of 0 mV (ms), linearly interpolated between steps."""
    k = np.flatnonzero((v[:-1] < 0) & (v[1:] >= 0))
    return (k + v[k] / (v[k] - v[k + 1])) * dt


def _versions() -> dict[str, np.ndarray]:
    import bluepyopt
    import neuron

    return {"bluepyopt_version": np.asarray(bluepyopt.__version__),
            "neuron_version": np.asarray(neuron.__version__)}


def _sections(icell) -> dict[str, np.ndarray]:
    from neuron import h

    sections = list(icell.all)
    soma = icell.soma[0]
    segments = [seg for sec in sections for seg in sec]
    return {"names": np.asarray([short_name(s) for s in sections]),
            "nseg": np.asarray([s.nseg for s in sections], dtype=np.int64),
            "distance": np.asarray([h.distance(soma(0.5), seg) for seg in segments]),
            "diam": np.asarray([seg.diam for seg in segments])}


def _values(icell, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Each segment's value of each range variable (NaN where the variable is absent)."""
    segments = [seg for sec in icell.all for seg in sec]
    out = {}
    for name in names:
        if name == "Ra":
            out["value_Ra"] = np.asarray([seg.sec.Ra for seg in segments])
        else:
            out[f"value_{name}"] = np.asarray([getattr(seg, name) if hasattr(seg, name)
                                               else np.nan for seg in segments])
    return out


def _run(model, case: dict, params: dict) -> dict[str, np.ndarray]:
    """BluePyOpt's step protocol on ``model``: an ``NrnSquarePulse`` on ``soma[0](0.5)``,
    ``CompRecording`` s at ``case["sites"]``, its ``NrnSimulator`` at a fixed ``dt``."""
    import bluepyopt.ephys as ephys

    sim = simulator(case["dt"])
    soma = ephys.locations.NrnSeclistCompLocation("soma", seclist_name="somatic", sec_index=0,
                                                  comp_x=0.5)
    stimulus = ephys.stimuli.NrnSquarePulse(step_amplitude=case["amp"],
                                            step_delay=case["delay"],
                                            step_duration=case["dur"], location=soma,
                                            total_duration=case["t_max"])
    recordings = [ephys.recordings.CompRecording(
        name=f"site{k}", location=ephys.locations.NrnSeclistCompLocation(
            f"site{k}", seclist_name=seclist, sec_index=index, comp_x=x), variable="v")
        for k, (seclist, index, x) in enumerate(case["sites"])]
    model.freeze(params)
    model.instantiate(sim=sim)
    stimulus.instantiate(sim=sim, icell=model.icell)
    for recording in recordings:
        recording.instantiate(sim=sim, icell=model.icell)
    start = time.perf_counter()
    sim.run(case["t_max"], cvode_active=False)
    seconds = time.perf_counter() - start
    steps = round(case["t_max"] / case["dt"])
    v = np.stack([np.asarray(r.response["voltage"])[: steps + 1] for r in recordings], axis=1)
    sites = [r.location.instantiate(sim=sim, icell=model.icell) for r in recordings]
    return {
        "v": v[:: case["every"]],
        **{f"spikes_{k}": crossings(v[:, k], case["dt"]) for k in range(v.shape[1])},
        "site_names": np.asarray([short_name(seg.sec) for seg in sites]),
        "site_x": np.asarray([seg.x for seg in sites]),
        **_sections(model.icell),
        "seconds": np.asarray(seconds), "case": np.asarray(json.dumps(case)),
        "params": np.asarray(json.dumps(params)), **_versions(),
    }


def run_l5pc(case: dict) -> dict[str, np.ndarray]:
    compile_mods()
    params = json.loads((FOLDER / "release_params.json").read_text())
    model = cell_model("l5pc", MORPHOLOGY, FOLDER / "mechanisms.json",
                       FOLDER / "parameters.json")
    result = _run(model, case, params)
    return {**result, **_values(model.icell, ("gIhbar_Ih", "gNaTs2_tbar_NaTs2_t", "cm",
                                              "e_pas"))}


def run_stub(case: dict) -> dict[str, np.ndarray]:
    model = cell_model("stubcell", MORPHOLOGY, None, None)
    sim = simulator()
    model.instantiate(sim=sim)
    out = {f"python_{k}": v for k, v in _sections(model.icell).items()}
    template = hoc_template_cell(cell_model("stubhoc", MORPHOLOGY, None, None), {},
                                 MORPHOLOGY)
    out.update({f"hoc_{k}": v for k, v in _sections(template).items()})
    return {**out, "case": np.asarray(json.dumps(case)), **_versions()}


def run_taper(case: dict) -> dict[str, np.ndarray]:
    from importlib.metadata import version

    import bluepyopt.ephys as ephys
    from bluepyemodel.evaluation import modifiers

    out = {}
    for prefix, name, morph in (
            ("python", "taperpy", ephys.morphologies.NrnFileMorphology(
                str(MORPHOLOGY), do_replace_axon=False,
                morph_modifiers=[modifiers.replace_axon_legacy])),
            ("hoc", "taperhoc", ephys.morphologies.NrnFileMorphology(
                str(MORPHOLOGY), do_replace_axon=True,
                replace_axon_hoc=modifiers.replace_axon_legacy_hoc))):
        model = ephys.models.CellModel(name, morph=morph, mechs=[], params=[])
        if prefix == "python":
            model.instantiate(sim=simulator())
            icell = model.icell
        else:
            icell = hoc_template_cell(model, {}, MORPHOLOGY)
        out.update({f"{prefix}_{k}": v for k, v in _sections(icell).items()})
    return {**out, "case": np.asarray(json.dumps(case)), **_versions(),
            "bluepyemodel_version": np.asarray(version("bluepyemodel"))}


def run_taper_cell(case: dict) -> dict[str, np.ndarray]:
    from importlib.metadata import version

    import bluepyopt.ephys as ephys
    from bluepyemodel.evaluation import modifiers

    morph = ephys.morphologies.NrnFileMorphology(
        str(MORPHOLOGY), do_replace_axon=False, morph_modifiers=[modifiers.replace_axon_legacy])
    model = ephys.models.CellModel("taperrun", morph=morph, mechs=mechanisms({"all": ["pas"]}),
                                   params=parameters(TAPER_PARAMETERS))
    result = _run(model, case, {})
    return {**result, "parameters": np.asarray(json.dumps(TAPER_PARAMETERS)),
            "bluepyemodel_version": np.asarray(version("bluepyemodel"))}


def run_scalers(case: dict) -> dict[str, np.ndarray]:
    compile_mods()
    model = cell_model("scalers", MORPHOLOGY, FOLDER / "mechanisms.json", None,
                       parameter_entries=SCALER_PARAMETERS)
    result = _run(model, case, {})
    return {**result, **_values(model.icell, RANGE_NAMES),
            "parameters": np.asarray(json.dumps(SCALER_PARAMETERS))}


def run_locations(case: dict) -> dict[str, np.ndarray]:
    """BluePyOpt's ``NrnSomaDistanceCompLocation`` on the stub cell: each region's section
    and ``x`` at each distance from ``soma(0.5)``."""
    import bluepyopt.ephys as ephys

    model = cell_model("locations", MORPHOLOGY, None, None)
    sim = simulator()
    model.instantiate(sim=sim)
    out = {}
    for region, distances in case.items():
        found = [ephys.locations.NrnSomaDistanceCompLocation(
            f"{region}{k}", soma_distance=d, seclist_name=region).instantiate(
                sim=sim, icell=model.icell) for k, d in enumerate(distances)]
        out[f"{region}_names"] = np.asarray([short_name(seg.sec) for seg in found])
        out[f"{region}_x"] = np.asarray([seg.x for seg in found])
    return {**out, "case": np.asarray(json.dumps(case)), **_versions()}


RUNS = {"bluepyopt_l5pc": run_l5pc, "bluepyopt_stub": run_stub,
        "bluepyopt_scalers": run_scalers, "bluepyemodel_taper": run_taper,
        "bluepyopt_locations": run_locations, "bluepyemodel_taper_run": run_taper_cell}


def main(names: list[str], out: Path = OUT) -> None:
    """Write every case (or those named) to ``out``, one process per case so cells never mix."""

    def write_one(name: str, out: Path) -> None:
        result = RUNS[name](CASES[name])
        np.savez_compressed(out / f"{name}.npz", **result)
        spikes = [result[k].size for k in sorted(result) if k.startswith("spikes_")]
        print(f"{name}: BluePyOpt {result['bluepyopt_version']}, NEURON "
              f"{result['neuron_version']}, spikes per site {spikes}")

    run_cases(__file__, names, out, CASES, write_one)


if __name__ == "__main__":
    command_line(main, OUT)
