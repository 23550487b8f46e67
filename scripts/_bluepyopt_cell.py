"""BluePyOpt itself building a cell, for the fixture scripts (needs ``bluepyopt`` and ``neuron``).

Nothing here re-implements BluePyOpt: the morphology is loaded and its axon replaced by
BluePyOpt's ``NrnFileMorphology`` (or by the ``replace_axon`` HOC that BluePyOpt's
``create_hoc`` writes into a cell template), parameters are BluePyOpt's parameter and
scaler objects, and the distributions are evaluated by BluePyOpt's own ``eval``. The only
code here maps one entry of ``parameters.json`` to those objects, as BluePyOpt's
``examples/l5pc/l5pc_model.py`` does (``uniform`` -> ``NrnSegmentLinearScaler``, ``exp``
-> ``NrnSegmentSomaDistanceScaler(distribution=dist)``), extended to the scaler
arguments BluePyOpt's classes take (``multiplier``, ``offset``, ``soma_ref_location``,
``step_begin``/``step_end``, ``ref_section``/``ref_location``).
"""

from __future__ import annotations

import json
from pathlib import Path

SECTION_LISTS = ("all", "somatic", "basal", "apical", "axonal", "myelinated")


def simulator(dt: float = 0.025):
    """BluePyOpt's NEURON simulator, fixed step (backward Euler, NEURON's default)."""
    import bluepyopt.ephys as ephys

    return ephys.simulators.NrnSimulator(dt=dt, cvode_active=False)


def scaler(entry: dict):
    """The BluePyOpt scaler object of one ``parameters.json`` entry."""
    from bluepyopt.ephys import parameterscalers as ps

    kind = entry.get("dist_type", "uniform")
    if kind == "uniform":
        return ps.NrnSegmentLinearScaler(multiplier=entry.get("multiplier", 1.0),
                                         offset=entry.get("offset", 0.0))
    if kind == "step":
        return ps.NrnSegmentSomaDistanceStepScaler(
            distribution=entry["dist"], step_begin=entry["step_begin"],
            step_end=entry["step_end"], soma_ref_location=entry.get("soma_ref_location", 0.5))
    if "ref_section" in entry:
        return ps.NrnSegmentSectionDistanceScaler(
            distribution=entry["dist"], ref_section=entry["ref_section"],
            ref_location=entry.get("ref_location", 0.0))
    return ps.NrnSegmentSomaDistanceScaler(
        distribution=entry["dist"], soma_ref_location=entry.get("soma_ref_location", 0.5))


def parameters(entries: list[dict]) -> list:
    """BluePyOpt's parameter objects, as ``l5pc_model.create_parameters`` makes them."""
    import bluepyopt.ephys as ephys

    out = []
    for entry in entries:
        frozen = "value" in entry
        value, bounds = entry.get("value"), None if frozen else entry.get("bounds")
        if entry["type"] == "global":
            out.append(ephys.parameters.NrnGlobalParameter(
                name=entry["param_name"], param_name=entry["param_name"], frozen=frozen,
                bounds=bounds, value=value))
            continue
        location = ephys.locations.NrnSeclistLocation(entry["sectionlist"],
                                                      seclist_name=entry["sectionlist"])
        kind = (ephys.parameters.NrnSectionParameter if entry["type"] == "section"
                else ephys.parameters.NrnRangeParameter)
        out.append(kind(name=f"{entry['param_name']}.{entry['sectionlist']}",
                        param_name=entry["param_name"], value_scaler=scaler(entry),
                        value=value, frozen=frozen, bounds=bounds, locations=[location]))
    return out


def mechanisms(table: dict) -> list:
    """BluePyOpt's mechanism objects, as ``l5pc_model.create_mechanisms`` makes them."""
    import bluepyopt.ephys as ephys

    out = []
    for section_list, channels in table.items():
        location = ephys.locations.NrnSeclistLocation(section_list, seclist_name=section_list)
        for channel in channels:
            out.append(ephys.mechanisms.NrnMODMechanism(
                name=f"{channel}.{section_list}", mod_path=None, suffix=channel,
                locations=[location], preloaded=True))
    return out


def cell_model(name: str, morphology: Path, mechanisms_json: Path | None,
               parameters_json: Path | None, *, do_replace_axon: bool = True,
               parameter_entries: list[dict] | None = None):
    """BluePyOpt's ``CellModel`` of the files (``create(do_replace_axon)`` of the example)."""
    import bluepyopt.ephys as ephys

    mechs = mechanisms(json.loads(mechanisms_json.read_text())) if mechanisms_json else []
    entries = (parameter_entries if parameter_entries is not None
               else json.loads(parameters_json.read_text()) if parameters_json else [])
    morph = ephys.morphologies.NrnFileMorphology(str(morphology),
                                                 do_replace_axon=do_replace_axon)
    return ephys.models.CellModel(name, morph=morph, mechs=mechs, params=parameters(entries))


def short_name(section) -> str:
    """``soma[0]`` for ``l5pc[0].soma[0]``: the name without the template prefix."""
    return section.name().split(".", 1)[-1]


def hoc_template_cell(model, param_values: dict, morphology: Path):
    """The cell of BluePyOpt's ``create_hoc`` template of ``model`` instantiated in NEURON
    (its HOC ``replace_axon`` included); returns the template object."""
    from neuron import h

    h.load_file("stdrun.hoc")
    h.load_file("import3d.hoc")
    text = model.create_hoc(param_values, disable_banner=True)
    h(text)
    return getattr(h, model.name)(str(morphology.parent), morphology.name)
