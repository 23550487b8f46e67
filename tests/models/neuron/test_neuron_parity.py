"""Cells, areas and traces against NEURON's: committed fixtures, and NEURON itself if installed.

The fixtures were written by ``scripts/make_neuron_fixtures.py`` with NEURON
building the cells as its users do (Import3d, ``hh``/``pas``, backward Euler,
``nseg`` by the case's rule), among them the SWC corpus of shapes Import3d
treats specially. Agreement required: the same sections (NEURON's names, in its
order, as the cell's branches) and ``nseg`` per section, segment and total membrane
areas within 1e-9 (the 3-D points are rounded as NEURON stores them), voltages
within 1e-3 mV and spike times within 1e-4 ms at the root and the tips, found by
``cell.location(name, x)`` from the ``sec(x)`` NEURON recorded (float64; the
simulators agree to about 1e-9 mV and 1e-12 ms). Traces start at ``t = 0`` with
``v_init``, as NEURON's ``Vector.record``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.neuron import discretize, swc
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current
from tests.models.neuron.neuron_reference import run_fixture_script, spike_times

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "make_neuron_fixtures.py"
CORPUS = ["fork_first_point", "repeated_points", "line_order", "soma_multi_point",
          "soma_branched", "soma_three_point", "soma_contour", "no_soma"]
CASES = ["passive_cable", "y_hh", "y_hh_16c", "pyramidal_hh", "pyramidal_soma_hh",
         *(f"corpus_{c}" for c in CORPUS)]
V_TOL, SPIKE_TOL, AREA_RTOL = 1e-3, 1e-4, 1e-9
pytestmark = pytest.mark.filterwarnings("ignore:.*section of zero length")  # as NEURON drops it


def swc_cell(case: dict) -> tuple[Cell, np.ndarray]:
    """The case's SWC cell discretised by its rule, and each section's first compartment."""
    name = case["swc"]
    path = FIXTURES / f"{name}.swc" if name.startswith("corpus/") else swc.fixture(name)
    rule = case["nseg"]
    options = ({"ncomp": rule[1]} if rule[0] == "ncomp" else
               {"nseg": discretize.Fixed(rule[1])} if rule[0] == "fixed" else
               {"nseg": discretize.MaxLength(rule[1])} if rule[0] == "max_length" else
               {"nseg": discretize.DLambda(case["Ra"], d_lambda=rule[1], freq=rule[2])})
    cell = Cell.from_swc(path, **options)
    sections = swc.sections(swc.read_swc(path))
    counts = discretize.section_nseg(sections, **options)
    return cell, counts


def jaxlean_trace(fixture) -> tuple[np.ndarray, Cell | None, np.ndarray | None]:
    """Simulate the case a fixture describes, recording the same sites."""
    case = json.loads(str(fixture["case"]))
    cell, counts = None, None
    if case["kind"] == "cable":
        cable = Cell.from_parents(np.arange(case["n"]) - 1, case["length"] / case["n"],
                                  case["diam"] / 2)
        params = {**cable.params("passive"), "g_pas": case["g_pas"], "e_pas": case["e_pas"],
                  "Ra": jnp.asarray(case["Ra"])}
        sites, stimulated = fixture["sites"][:, 1], 0   # compartment k: segment k of cable
    else:
        cell, counts = swc_cell(case)
        if case.get("channels") == "soma_hh":   # soma.insert(hh), dend.insert(pas): defaults
            others = sorted(set(cell.kind.tolist()) - {1})
            cell = cell.insert(hh, types=1).insert(pas, types=others)
        sites = [cell.location(str(name), float(x))
                 for name, x in zip(fixture["site_names"], fixture["site_x"], strict=True)]
        stimulated = cell.location(0, 0.5)   # the IClamp at root(0.5)
        params = cell.params()
        if case.get("channels") != "soma_hh":   # the NEURON habit sets nothing: the defaults
            params["Ra"] = jnp.asarray(case["Ra"])
        cable = cell
    params["celsius"] = jnp.asarray(case["celsius"])
    current = step_current(case["amp"], case["delay"], case["dur"], case["dt"], case["t_max"])
    trace = simulate(cable, params, [Stimulus(stimulated, current)], case["dt"], case["t_max"],
                     record=sites)
    np.testing.assert_allclose(trace["t"], fixture["t"], rtol=1e-12, atol=1e-12)
    return np.asarray(trace["v"]), cell, counts


def assert_matches(fixture, v: np.ndarray, cell: Cell | None, counts: np.ndarray | None) -> None:
    if cell is not None:
        np.testing.assert_array_equal(counts, fixture["nseg"])
        assert cell.section_names == tuple(str(name) for name in fixture["names"])
        assert cell.n_branches == fixture["names"].size   # a branch is a section
        np.testing.assert_array_equal([cell.compartments_of(str(name)).size
                                       for name in fixture["names"]], fixture["nseg"])
        area = 2 * np.pi * cell.radius * cell.length
        np.testing.assert_allclose(area, fixture["area"], rtol=AREA_RTOL)
        np.testing.assert_allclose(area.sum(), fixture["area"].sum(), rtol=AREA_RTOL)
    reference = fixture["v"]
    dt = json.loads(str(fixture["case"]))["dt"]
    assert v.shape == reference.shape
    np.testing.assert_array_less(np.abs(v - reference).max(), V_TOL)
    for ours, theirs in zip(spike_times(v, dt), spike_times(reference, dt), strict=True):
        assert ours.size == theirs.size
        np.testing.assert_allclose(ours, theirs, atol=SPIKE_TOL)


@pytest.mark.parametrize("name", CASES)
def test_matches_committed_neuron_traces(name):
    with jax.enable_x64():
        fixture = np.load(FIXTURES / f"{name}.npz")
        assert_matches(fixture, *jaxlean_trace(fixture))
        if name != "passive_cable":
            assert sum(t.size for t in spike_times(fixture["v"], 0.025)) > 0  # it does spike


@pytest.mark.skipif(importlib.util.find_spec("neuron") is None, reason="neuron not installed")
@pytest.mark.parametrize("name", CASES)
def test_matches_neuron_live(name, tmp_path):
    run_fixture_script(SCRIPT, tmp_path, name)
    with jax.enable_x64():
        fixture = np.load(tmp_path / f"{name}.npz")
        assert_matches(fixture, *jaxlean_trace(fixture))
