"""Translated .mod files against NEURON running the same files.

The fixtures were written by ``scripts/make_nmodl_fixtures.py`` (NEURON 9, the
``.mod`` files of ``mods/`` compiled by ``nrnivmodl``, ``hh.mod`` being NEURON's
built-in ``hh``, rate tables off); the test builds the same ball-and-stick cell
from the case stored in each fixture, with every mechanism loaded by
``load_mod``, inserted in ``load_mod_dir``'s order (NEURON's: a concentration written by
one mechanism is read by those after it). Float64. Live against NEURON when it is installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxlean.models.neuron.mechanisms.mechanisms import ion_parameters
from jaxlean.models.neuron.nmodl import load_mod_dir
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current
from tests.conftest import needs_nrnivmodl
from tests.models.neuron.neuron_reference import run_fixture_script
from tests.models.neuron.nmodl.loaded import loaded_mod_dir

HERE = Path(__file__).parent
MODS, FIXTURES = HERE / "mods", HERE / "fixtures"
SCRIPT = HERE.parents[3] / "scripts" / "make_nmodl_fixtures.py"
CASES = ["hh", "hay", "custom"]
SITES = [0, 3, 5]  # the soma, dendrite segments 2 and 4
VOLTAGE_TOLERANCE = 1e-7  # mV (measured: at most 1e-9)


def jaxlean_run(case: dict, mechanisms: dict | None = None) -> dict:
    """The case simulated by jaxlean with the translated mechanisms (``load_mod_dir``'s
    unless given)."""
    mechanisms = loaded_mod_dir(MODS) if mechanisms is None else mechanisms
    n = case["dend_nseg"]
    cell = Cell.from_parents(np.arange(n + 1) - 1, [case["soma_L"]] + [case["dend_L"] / n] * n,
                             [case["soma_diam"] / 2] + [case["dend_diam"] / 2] * n,
                             kind=[1] + [3] * n)
    used = {*case["soma"], *case["dend"]}
    names = [name for name in mechanisms if name in used]  # NEURON's order
    for name in names:
        where = {} if name in case["soma"] and name in case["dend"] else {
            "types": 1 if name in case["soma"] else 3}
        cell = cell.insert(mechanisms[name], **where)
    spikes = {}
    if "expsyn" in case:
        cell = cell.insert(mechanisms["ExpSynM"], compartments=[1 + case["expsyn"]["segment"]])
        spikes["ExpSynM"] = [case["expsyn"]["times"]]
    params = {**cell.params(), "celsius": case["celsius"], "v_init": case["v_init"],
              "Ra": case["Ra"], "cm": case["cm"]}
    for region, index in (("soma", np.array([0])), ("dend", np.arange(1, n + 1))):
        for name, values in case[region].items():
            for key, value in values.items():
                full = f"{key}_{name}"
                per_compartment = np.broadcast_to(np.asarray(params[full]), (cell.n,)).copy()
                per_compartment[index] = value  # NEURON's value: never rescaled
                params[full] = per_compartment
    for key in ("tau", "e", "weight"):
        if "expsyn" in case:
            params[f"{key}_ExpSynM"] = case["expsyn"][key]
    params.update(case["ions"])  # ena, ek: the ions' parameters, NEURON's names
    dt, t_max = case["dt"], case["t_max"]
    spec = case["iclamp"]
    stimuli = [Stimulus(0, step_current(spec["amp"], spec["delay"], spec["dur"], dt, t_max))]
    where = {"soma": [0], "dend": [SITES[1]], "synapse": [0]}
    states = {"v": SITES, **{state: where[site] for state, site in case["record"].items()}}
    return simulate(cell, params, stimuli, dt, t_max, states=states, spikes=spikes)


def assert_matches(fixture, mechanisms: dict | None = None) -> dict:
    case = json.loads(str(fixture["case"]))
    out = jaxlean_run(case, mechanisms)
    reference = fixture["v"]
    assert np.ptp(reference[:, 0]) > 20.0  # the cell responds (hh, hay: it spikes)
    np.testing.assert_array_less(np.abs(np.asarray(out["v"]) - reference).max(),
                                 VOLTAGE_TOLERANCE)
    for state in case["record"]:
        np.testing.assert_allclose(np.asarray(out[state]), fixture[state], rtol=1e-6,
                                   atol=1e-9, err_msg=state)
    return out


@pytest.mark.parametrize("name", CASES)
def test_matches_committed_neuron_recordings(name):
    with jax.enable_x64():
        assert_matches(np.load(FIXTURES / f"nmodl_{name}.npz"))


def test_default_calcium_reversal_is_neurons():
    """Where no mechanism uses a calcium concentration (the dendrite), ``eca`` is NEURON's
    default; on the soma (a shell writes ``cai``) it follows Nernst (the recorded trace)."""
    fixture = np.load(FIXTURES / "nmodl_hay.npz")
    dend, soma = (json.loads(str(fixture[key])) for key in ("dend_reversals", "reversals"))
    assert ion_parameters(load_mod_dir(MODS)["Ca_HVA"])["eca"][0] == dend["eca"]
    assert soma["eca"] != dend["eca"] and soma["eca"] == fixture["eca"][-1, 0]


def test_load_mod_dir_returns_neurons_mechanism_order():
    """nrnivmodl registers the files by name (C byte order): ``CaDynamics_E2`` before
    ``Ca_HVA``, ``SK_E2`` before ``SKv3_1``, upper case before lower case (``hh`` is
    NEURON's built-in, registered before them)."""
    neuron_order = json.loads(str(np.load(FIXTURES / "nmodl_hay.npz")["order"]))
    ours = [m.name for m in load_mod_dir(MODS).values() if not m.point and m.name != "hh"]
    assert [name for name in neuron_order if name in ours] == ours


@needs_nrnivmodl
@pytest.mark.parametrize("name", CASES)
def test_matches_neuron_live(name, tmp_path):
    run_fixture_script(SCRIPT, tmp_path, name)
    with jax.enable_x64():
        assert_matches(np.load(tmp_path / f"nmodl_{name}.npz"))
