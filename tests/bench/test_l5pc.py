"""The ``l5pc`` benchmark: registered, NEURON optional, and no time compared with a NEURON
run whose voltages differ from jaxlean's."""

import importlib.util

import numpy as np
import pytest

from jaxlean.bench import BenchContext, BenchResult, available
from jaxlean.bench import l5pc as bench

pytestmark = pytest.mark.skipif(importlib.util.find_spec("morphio") is None,
                                reason="morphio not installed (jaxlean[morphology])")


def test_registered():
    assert "l5pc" in available()


def test_neuron_missing_is_reported_as_unavailable(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "neuron" else real(name, *a))
    neuron, why = bench._neuron_run(BenchContext())
    assert neuron is None and "NEURON unavailable" in why and "pip install neuron" in why


def test_a_neuron_run_that_disagrees_is_not_timed():
    case = {**bench.CASE, "t_max": 2.0, "delay": 0.5, "dur": 1.0}
    steps = round(case["t_max"] / case["dt"])
    wrong = {"v": np.full((steps // case["every"] + 1, 3), -70.0), "seconds": np.asarray(0.1)}
    result = bench.measure(BenchContext(), BenchResult("l5pc", ""), case, wrong)
    assert "disagree" in result.headline and not result.targets
    assert [c.metric for c in result.comparisons if c.baseline_name == "NEURON"] == [
        "max |v - NEURON's|"]
    assert any("jaxley not run" in note for note in result.notes)
