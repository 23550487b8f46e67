"""Traces against NEURON's: committed fixtures always, NEURON itself when it is installed.

The fixtures were written by ``scripts/make_neuron_fixtures.py`` with NEURON
building the cells as its users do (Import3d, ``hh``/``pas``, backward Euler).
Agreement required: spike times within 0.01 ms and voltages within 0.5 mV.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.neuron import swc
from jaxlean.models.neuron.cable import Cell, Stimulus, simulate, step_current

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "make_neuron_fixtures.py"
CASES = ["passive_cable", "y_hh", "y_hh_16c", "pyramidal_hh"]


def spike_times(v: np.ndarray, dt: float) -> list[np.ndarray]:
    """Upward crossings of 0 mV in each column, linearly interpolated (ms)."""
    times = []
    for column in v.T:
        k = np.flatnonzero((column[:-1] < 0) & (column[1:] >= 0))
        times.append((k + 1 + column[k] / (column[k] - column[k + 1])) * dt)
    return times


def jaxlean_trace(fixture) -> np.ndarray:
    """Simulate the case a fixture describes, recording the same sites."""
    case = json.loads(str(fixture["case"]))
    if case["kind"] == "cable":
        cell = Cell.from_parents(np.arange(case["n"]) - 1, case["length"] / case["n"],
                                 case["diam"] / 2)
        params, sites = cell.params("passive"), fixture["sites"][:, 1]
    else:
        path = swc.fixture(case["swc"])
        cell = Cell.from_swc(path, ncomp=case["ncomp"])
        branch_ending_at = {s.last_id: i for i, s in enumerate(swc.sections(swc.read_swc(path)))}
        sites = [cell.compartments_of(branch_ending_at[ident])[k]
                 for ident, k in fixture["sites"]]
        params = cell.params()
    params["celsius"] = jnp.asarray(case["celsius"])
    current = step_current(case["amp"], case["delay"], case["dur"], case["dt"], case["t_max"])
    trace = simulate(cell, params, [Stimulus(cell.soma, current)], case["dt"], case["t_max"],
                     record=sites)
    return np.asarray(trace["v"])


def assert_matches(fixture, v: np.ndarray) -> None:
    reference = fixture["v"]
    dt = json.loads(str(fixture["case"]))["dt"]
    assert v.shape == reference.shape
    np.testing.assert_array_less(np.abs(v - reference).max(), 0.5)
    for ours, theirs in zip(spike_times(v, dt), spike_times(reference, dt), strict=True):
        assert ours.size == theirs.size
        np.testing.assert_allclose(ours, theirs, atol=0.01)


@pytest.mark.parametrize("name", CASES)
def test_matches_committed_neuron_traces(name):
    with jax.enable_x64():
        fixture = np.load(FIXTURES / f"{name}.npz")
        v = jaxlean_trace(fixture)
        assert_matches(fixture, v)
        if name != "passive_cable":
            assert sum(t.size for t in spike_times(fixture["v"], 0.025)) > 0  # it does spike


@pytest.mark.skipif(importlib.util.find_spec("neuron") is None, reason="neuron not installed")
@pytest.mark.parametrize("name", CASES)
def test_matches_neuron_live(name, tmp_path):
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), name], check=True,
                   capture_output=True)
    with jax.enable_x64():
        fixture = np.load(tmp_path / f"{name}.npz")
        assert_matches(fixture, jaxlean_trace(fixture))
