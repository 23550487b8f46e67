"""Migliore et al. 2018's CA1 pyramidal cell channels (ModelDB 244688), unedited, against
NEURON 9 running the same files.

``migliore/`` holds the twelve ``.mod`` files of the cell CA1_PC_cAC_sig6 (nax, kdr,
kap, kad, kmb, hd, can, cal, cat, kca, cagk, cacum) as published: temperature inside
Boltzmann exponents and time-constant floors, ASSIGNED values set in INITIAL and read
later (kca's tadj, cacum's cmax), PARAMETERs assigned in BREAKPOINT (cal's ggk, kca's
gk), ``derivimplicit`` with a calcium concentration (cacum, kca). The fixture was
written by ``scripts/make_migliore_fixtures.py`` (one compartment with ``pas`` and the
case's mechanisms, a hyperpolarising then a depolarising step, dt 0.025 ms). Float64.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxlean.models.neuron.mechanisms.channels import pas
from jaxlean.models.neuron.nmodl import load_mod_dir
from jaxlean.models.neuron.nmodl.generated import GeneratedMechanism
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current
from tests.conftest import needs_nrnivmodl
from tests.models.neuron.neuron_reference import run_fixture_script
from tests.models.neuron.nmodl.loaded import loaded_mod_dir

HERE = Path(__file__).parent
MODS, FIXTURE = HERE / "migliore", HERE / "fixtures" / "migliore.npz"
SCRIPT = HERE.parents[3] / "scripts" / "make_migliore_fixtures.py"
VOLTAGE_TOLERANCE = 1e-6  # mV
CASES = ["nax", "kap", "kad", "kmb", "hd", "calcium", "all"]


def run_case(case: dict, mechanisms: dict) -> dict:
    """The case simulated by jaxlean, mechanisms inserted in load_mod_dir's (NEURON's) order."""
    cell = Cell.from_parents(np.array([-1]), [case["L"]], [case["diam"] / 2], kind=[1])
    cell = cell.insert(pas)
    for name in mechanisms:
        if name in case["mechanisms"]:
            cell = cell.insert(mechanisms[name])
    params = {**cell.params(), "celsius": case["celsius"], "v_init": case["v_init"],
              "cm": case["cm"], "g_pas": case["pas"]["g"],
              "e_pas": case["pas"]["e"]}
    for name, values in case["mechanisms"].items():
        params.update({f"{key}_{name}": value for key, value in values.items()})
    params.update({ion: value for ion, value in case["ions"].items() if ion in params})
    dt, t_max = case["dt"], case["t_max"]
    current = sum(step_current(amplitude, delay, duration, dt, t_max)
                  for delay, duration, amplitude in case["steps"])
    return simulate(cell, params, [Stimulus(0, current)], dt, t_max,
                    states=("v", *case["record"]))


def compare(fixture, name: str, mods: Path = MODS) -> float:
    case = json.loads(str(fixture["cases"]))[name]
    with jax.enable_x64():
        out = run_case(case, loaded_mod_dir(mods))
    every = int(fixture["every"])
    reference = fixture[f"{name}/v"]
    assert np.ptp(reference) > 15.0  # the steps move the cell
    got = np.asarray(out["v"])[::every, 0]
    error = float(np.abs(got - reference).max())
    assert error < VOLTAGE_TOLERANCE, f"{name}: v differs from NEURON by {error} mV"
    for state in case["record"]:
        np.testing.assert_allclose(np.asarray(out[state])[::every, 0],
                                   fixture[f"{name}/{state}"], rtol=1e-6, atol=1e-12,
                                   err_msg=f"{name}: {state}")
    return error


def test_the_twelve_files_load_unedited():
    mechanisms = load_mod_dir(MODS)
    assert sorted(mechanisms) == sorted(["nax", "kdr", "kap", "kad", "kmb", "hd", "can", "cal",
                                         "cat", "kca", "cagk", "cacum"])
    kca = mechanisms["kca"]  # tadj set in INITIAL is kept; gk assigned in BREAKPOINT
    assert isinstance(kca, GeneratedMechanism) and {"tadj_kca", "gk_kca"} <= set(kca.states)
    assert mechanisms["kad"].parameters["lmin_kad"] == (2.0, "mS")  # never rescaled
    assert "cai" in mechanisms["cacum"].states  # derivimplicit with the concentration


@pytest.mark.parametrize("name", CASES)
def test_matches_committed_neuron_recordings(name):
    compare(np.load(FIXTURE), name)


@needs_nrnivmodl
def test_matches_neuron_live(tmp_path):
    run_fixture_script(SCRIPT, tmp_path)
    fixture = np.load(tmp_path / "migliore.npz")
    for name in CASES:
        compare(fixture, name)
