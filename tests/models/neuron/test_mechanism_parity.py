"""Mechanisms against NEURON: a user-defined A-type K channel, ExpSyn/Exp2Syn, SEClamp, NetCon.

The fixtures were written by ``scripts/make_neuron_mechanism_fixtures.py`` (NEURON
9, its ``hh``, ``pas``, ``ExpSyn``, ``Exp2Syn``, ``SEClamp``, and ``ka.mod``
compiled by ``nrnivmodl``); the test builds the same ball-and-stick cell from the
case description stored in each fixture. Float64; voltages within 1e-3 mV,
spike times within 1e-4 ms. Live against NEURON when it is installed.

``defaults`` is the NEURON habit, ``soma.insert("hh")``, ``dend.insert("pas")`` with nothing
set: jaxlean's ``hh`` and ``pas`` with their own defaults give NEURON's traces. Recordings
start at ``t = 0`` with the initial state, as ``Vector.record`` does.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.ions import UseIon
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.mechanisms.synapses import exp2syn, expsyn
from jaxlean.models.neuron.simulation.cable import (
    Cell,
    Stimulus,
    VoltageClamp,
    simulate,
    step_current,
)
from tests.conftest import needs_nrnivmodl
from tests.models.neuron.neuron_reference import run_fixture_script

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "make_neuron_mechanism_fixtures.py"
CASES = ["ka_ball_stick", "synapses", "seclamp", "defaults"]
NAMES = {"hh": {"gnabar": "gnabar_hh", "gkbar": "gkbar_hh", "gl": "gl_hh", "el": "el_hh",
                "ena": "ena", "ek": "ek"},
         "pas": {"g": "g_pas", "e": "e_pas"}}
"""NEURON's names of the values a case sets -> jaxlean's."""
TOLERANCE = {"v": 1e-3, "i_clamp": 1e-3}  # mV, nA; states and densities: 1e-5 of their range


def _ka_rates(v, p):
    tau = 1.0 / (jnp.exp((v + 46.0) / 5.0) + jnp.exp(-(v + 238.0) / 37.5))
    return {"a_ka": (1.0 / (1.0 + jnp.exp(-(v + 60.0) / 8.5)), 0.37 + tau),
            "b_ka": (1.0 / (1.0 + jnp.exp((v + 78.0) / 6.0)), 19.0 + tau)}


KA = Mechanism("ka", parameters={"gbar_ka": (0.01, "S/cm2")},
               states=("a_ka", "b_ka"), steady=_ka_rates, q10=3.0, q10_celsius=22.0,
               ions=(UseIon("k", read=("ek",), write=("ik",)),),
               currents={"i_ka": (lambda s, p: p["gbar_ka"] * s["a_ka"] ** 3 * s["b_ka"],
                                  "ek")})
"""The script's ``ka.mod``, written as data."""


def _site(case: dict, segment: int) -> int:
    return 0 if segment < 0 else 1 + segment


def jaxlean_run(fixture) -> dict:
    """The fixture's case simulated by jaxlean, recording what NEURON recorded."""
    case = json.loads(str(fixture["case"]))
    n = case["dend_nseg"]
    cell = Cell.from_parents(np.arange(n + 1) - 1, [case["soma_L"]] + [case["dend_L"] / n] * n,
                             [case["soma_diam"] / 2] + [case["dend_diam"] / 2] * n,
                             kind=[1] + [3] * n)
    cell = cell.insert(hh, types=1).insert(pas, types=3)
    if "gbar_ka" in case:
        cell = cell.insert(KA, types=3)
    spikes = {}
    for name, mechanism in (("expsyn", expsyn), ("exp2syn", exp2syn)):
        if name in case:
            cell = cell.insert(mechanism, compartments=[_site(case, case[name]["segment"])])
            spikes[name] = [case[name]["times"]]
    params = {**cell.params(), "celsius": case["celsius"], "v_init": case["v_init"],
              "Ra": case["Ra"], "cm": case["cm"]}
    for mechanism, names in NAMES.items():  # absent: NEURON's defaults, which are jaxlean's
        params.update({names[k]: value for k, value in case.get(mechanism, {}).items()})
    if "gbar_ka" in case:
        params["gbar_ka"] = case["gbar_ka"]
    for name in ("expsyn", "exp2syn"):
        for key in ("tau", "tau1", "tau2", "e", "weight"):
            if key in case.get(name, {}):
                params[f"{key}_{name}"] = case[name][key]
    dt, t_max = case["dt"], case["t_max"]
    stimuli = []
    if "iclamp" in case:
        spec = case["iclamp"]
        stimuli = [Stimulus(0, step_current(spec["amp"], spec["delay"], spec["dur"], dt, t_max))]
    clamps = []
    if "seclamp" in case:
        clamps = [VoltageClamp(0, **case["seclamp"])]
    dend = [_site(case, s) for s in (4, 9)]
    where = {"v": [0, *dend], "m": [0], "n": [0], "i_na": [0], "a_ka": dend, "b_ka": dend,
             "i_ka": dend, "i_pas": dend}
    states = {name: where.get(name, [0]) for name in case["record"]}
    detect = case["detect"]
    return simulate(cell, params, stimuli, dt, t_max, states=states, spikes=spikes,
                    clamps=clamps, detect=[_site(case, s) for s in detect["sites"]],
                    threshold=detect["threshold"], max_spikes=20)


def assert_matches(fixture, out: dict) -> None:
    case = json.loads(str(fixture["case"]))
    for name in case["record"]:
        reference = fixture[name]
        ours = np.asarray(out[name])
        assert ours.shape == reference.shape, name
        tolerance = TOLERANCE.get(name, 1e-5 * np.ptp(reference))
        np.testing.assert_array_less(np.abs(ours - reference).max(), tolerance, err_msg=name)
    for k in range(len(case["detect"]["sites"])):
        theirs = fixture[f"spikes_{k}"]
        count = int(out["spike_count"][k])
        assert count == theirs.size
        np.testing.assert_allclose(out["spikes"][k, :count], theirs, atol=1e-4)


def test_neuron_habit_runs_neurons_hh_and_pas():
    """hh on the soma and pas on the dendrite with their defaults rest where NEURON's do (the
    soma at -65 mV at first, not hh without its leak), and the defaults are NEURON's."""
    assert {k: hh.parameters[k][0] for k in ("gl_hh", "el_hh")} == {"gl_hh": 3e-4, "el_hh": -54.3}
    assert {k: v for k, (v, _) in pas.parameters.items()} == {"g_pas": 1e-3, "e_pas": -70.0}
    with jax.enable_x64():
        fixture = np.load(FIXTURES / "mechanism_defaults.npz")
        assert "hh" not in json.loads(str(fixture["case"]))  # nothing set in NEURON
        out = jaxlean_run(fixture)
        np.testing.assert_allclose(out["v"][0], -65.0)
        np.testing.assert_allclose(out["t"][:2], [0.0, 0.025])
        assert abs(float(out["il_hh"][1, 0]) - 3e-4 * (-65.0 + 54.3)) < 1e-9   # hh's own leak


@pytest.mark.parametrize("name", CASES)
def test_matches_committed_neuron_recordings(name):
    with jax.enable_x64():
        fixture = np.load(FIXTURES / f"mechanism_{name}.npz")
        out = jaxlean_run(fixture)
        assert_matches(fixture, out)
        assert sum(fixture[k].size for k in fixture if k.startswith("spikes_")) > 0


@needs_nrnivmodl
@pytest.mark.parametrize("name", CASES)
def test_matches_neuron_live(name, tmp_path):
    run_fixture_script(SCRIPT, tmp_path, name)
    with jax.enable_x64():
        fixture = np.load(tmp_path / f"mechanism_{name}.npz")
        assert_matches(fixture, jaxlean_run(fixture))
