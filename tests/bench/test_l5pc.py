"""The ``l5pc`` benchmark: registered, NEURON and jaxley optional, and no time compared with
a NEURON or jaxley run whose voltages differ from jaxlean's; jaxley (where installed) runs
the same cylinder-variant cell within the tolerance."""

import importlib.util

import numpy as np
import pytest

from jaxlean.bench import BenchContext, BenchResult, _l5pc_jaxley, available
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


def test_a_neuron_run_that_disagrees_is_not_timed(monkeypatch):
    monkeypatch.setattr(_l5pc_jaxley, "available", lambda: False)
    case = {**bench.CASE, "t_max": 2.0, "delay": 0.5, "dur": 1.0}
    steps = round(case["t_max"] / case["dt"])
    wrong = {"v": np.full((steps // case["every"] + 1, 3), -70.0), "seconds": np.asarray(0.1)}
    result = bench.measure(BenchContext(), BenchResult("l5pc", ""), case, wrong)
    assert "disagree" in result.headline
    assert [t.description for t in result.targets] == [  # jaxlean's own, none against NEURON
        "jaxlean gradient's first call (trace, lower, compile, run) / a later call"]
    first = next(c for c in result.comparisons if c.metric == "gradient first call / later call")
    assert first.value > 1.0
    cpu = next(c for c in result.comparisons
               if c.metric == "gradient first call / later call (CPU time)")
    assert cpu.value > 1.0
    assert any("in CPU time" in note and "load average" in note for note in result.notes)
    assert [c.metric for c in result.comparisons if c.baseline_name == "NEURON"] == [
        "max |v - NEURON's|"]
    assert any("jaxley not installed" in note and "jaxlean[peers]" in note
               for note in result.notes)


def _tiny_model():
    case = {**bench.CASE, "t_max": 2.0, "delay": 0.5, "dur": 1.0}
    return case, bench._model(case)[3]


def test_cylinder_variant_keeps_compartments_and_mechanisms():
    _, (model, _, _, _) = _tiny_model()
    cylinders = _l5pc_jaxley.cylinder_cell(model.cell)
    cell = model.cell
    assert cylinders.n == cell.n and cylinders.mechanisms == cell.mechanisms
    np.testing.assert_array_equal(cylinders.kind, cell.kind)
    np.testing.assert_array_equal(cylinders.length, cell.length)
    assert np.all(cylinders.taper == 1.0) and np.all(cylinders.attach == 1.0)
    assert np.any(cell.taper != 1.0) and np.any(cell.attach == 0.5)  # the variant differs


def test_nernst_ca_is_neurons_at_34_degrees():
    import jax

    from jaxlean.models.neuron.mechanisms.ions import nernst

    with jax.enable_x64(True):
        expected = float(nernst(5e-5, 2.0, 2, 34.0))
    assert abs(_l5pc_jaxley.nernst_ca(5e-5, 2.0) - expected) < 1e-9
    assert abs(expected - 140.2366) < 1e-3  # not jaxley-mech's 279.45 K (about 127.6 mV)


@pytest.mark.skipif(not _l5pc_jaxley.available(),
                    reason="jaxley and jaxley-mech not installed (jaxlean[peers])")
def test_jaxley_runs_the_same_cell():
    import jax

    case, (model, _, regions, sites) = _tiny_model()
    case = {**case, "delay": 5.0, "dur": 20.0}
    with jax.enable_x64(True):
        error, text = _l5pc_jaxley.check_same_model(model, regions, case, sites, t_max=15.0)
    assert error <= _l5pc_jaxley.SAME_TOLERANCE_MV, text


def test_a_jaxley_run_that_disagrees_is_not_timed(monkeypatch):
    monkeypatch.setattr(_l5pc_jaxley, "check_same_model",
                        lambda *args, **kwargs: (0.5, "same model: 0.5 mV"))
    case, (model, values, regions, sites) = _tiny_model()
    result = BenchResult("l5pc", "")
    _l5pc_jaxley.compare(BenchContext(), result, case, model, values, regions, sites, 0.1)
    assert not result.comparisons and not result.targets
    assert result.notes == ["same model: 0.5 mV",
                            "jaxley and jaxlean disagree: no jaxley time compared."]
