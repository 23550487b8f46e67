"""Hay et al.'s L5 pyramidal cell (``l5pc.build``) against NEURON running the same files;
BluePyOpt's l5pc example (``l5pc.bluepyopt_example``) is another model, refused by ``build``.

The fixture was written by ``scripts/make_l5pc_fixtures.py``: ``fixtures/pyramid.asc``
through Import3d, ``nseg = 1 + 2 int(L / 40)``, BluePyOpt's axon stub, Hay's ``.mod`` files
(``nmodl/mods``) compiled by ``nrnivmodl`` and set per region as ``L5PCbiophys3.hoc``,
apical Ih exponential in the path distance, a calcium hot zone; 500 ms of a step current
at dt 0.025 ms. Required (float64): the same sections and ``nseg``, the distributed
conductances, the voltage at the soma and two dendrites within 1e-3 mV (every 10th step
stored), every spike time within 1e-3 ms (from the full traces). Also: the gradient
with respect to twenty region parameters against central differences, and a second
simulation with new values compiles nothing. Live against NEURON when it is installed.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.compile import stats
from jaxlean.errors import ConfigError
from jaxlean.models.neuron import distribution, l5pc
from jaxlean.models.neuron.morphology.swc import fixture
from jaxlean.models.neuron.simulation.cable import Stimulus, simulate, step_current
from tests.conftest import needs_nrnivmodl

HERE = Path(__file__).parent
ASC, MODS = HERE / "fixtures" / "pyramid.asc", HERE / "nmodl" / "mods"
FIXTURE = HERE / "fixtures" / "l5pc.npz"
SCRIPT = HERE.parents[2] / "scripts" / "make_l5pc_fixtures.py"
V_TOL, SPIKE_TOL = 1e-3, 1e-3
needs_morphio = pytest.mark.skipif(
    __import__("importlib").util.find_spec("morphio") is None,
    reason="morphio not installed (jaxlean[morphology])")


@functools.lru_cache(maxsize=2)
def model(hot_zone: tuple[float, float]) -> l5pc.L5PC:
    return l5pc.build(ASC, MODS, hot_zone=hot_zone)


def crossings(v: np.ndarray, dt: float) -> np.ndarray:
    """Upward crossings of 0 mV (ms), linearly interpolated, as the fixture script's."""
    k = np.flatnonzero((v[:-1] < 0) & (v[1:] >= 0))
    return (k + v[k] / (v[k] - v[k + 1])) * dt


def run(built: l5pc.L5PC, params: dict, case: dict, t_max: float, states=("v",)) -> dict:
    cell = built.cell
    sites = [cell.location(name, x) for name, x in case["sites"]]
    current = step_current(case["amp"], case["delay"], case["dur"], case["dt"], t_max)
    return simulate(cell, params, [Stimulus(cell.location(0, 0.5), current)], case["dt"],
                    t_max, record=sites, states=states, progress=False)


def check_against(path: Path) -> None:
    fx = np.load(path)
    case = json.loads(str(fx["case"]))
    built = model(tuple(case["hot_zone"]))
    cell = built.cell
    assert cell.section_names == tuple(str(n) for n in fx["names"])
    np.testing.assert_array_equal([cell.compartments_of(n).size for n in cell.section_names],
                                  fx["nseg"])
    np.testing.assert_allclose(distribution.path_distance(cell), fx["distance"], atol=1e-9)
    with jax.enable_x64():
        params = built.params()
        apical = np.asarray(cell.kind) == 4
        for name in ("gIhbar_Ih", "gCa_LVAstbar_Ca_LVAst", "gCa_HVAbar_Ca_HVA"):
            np.testing.assert_allclose(np.asarray(params[name])[apical],
                                       fx[f"value_{name}"][apical], rtol=1e-12, err_msg=name)
        assert np.unique(fx["value_gCa_LVAstbar_Ca_LVAst"][apical]).size == 2  # the hot zone
        out = run(built, params, case, case["t_max"], states=("v", "cai"))
    v = np.asarray(out["v"])
    every = case["every"]
    np.testing.assert_array_less(np.abs(v[::every] - fx["v"]).max(), V_TOL)
    np.testing.assert_allclose(np.asarray(out["cai"])[::every, 0], fx["cai"], rtol=1e-6)
    assert fx["spikes_0"].size >= 5            # the soma fires, and adapts
    for k in range(v.shape[1]):
        ours, theirs = crossings(v[:, k], case["dt"]), fx[f"spikes_{k}"]
        assert ours.size == theirs.size, k
        np.testing.assert_allclose(ours, theirs, atol=SPIKE_TOL)


@needs_morphio
def test_matches_committed_neuron_fixture_over_500_ms():
    check_against(FIXTURE)


@needs_morphio
@needs_nrnivmodl
@pytest.mark.skipif(__import__("importlib").util.find_spec("bluepyopt") is None,
                    reason="bluepyopt not installed (the fixture script loads the cell with it)")
def test_matches_neuron_live(tmp_path):
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    check_against(tmp_path / "l5pc.npz")


SHORT = {"dt": 0.025, "amp": 0.5, "delay": 2.0, "dur": 20.0,
         "sites": [["soma[0]", 0.5], ["dend[2]", 0.5], ["apic[2]", 0.5]]}


def _loss(built: l5pc.L5PC, t_max: float):
    def loss(scale):
        values = {key: scale[i] * l5pc.HAY[key] for i, key in enumerate(l5pc.FITTED)}
        v = run(built, built.params(values), SHORT, t_max)["v"]
        return jnp.mean((v + 60.0) ** 2)
    return loss


@needs_morphio
def test_gradient_of_twenty_region_parameters_matches_central_differences():
    """d loss / d s at s = 1, each of the 20 values of FITTED scaled by s (float64)."""
    built = model(l5pc.HOT_ZONE)
    with jax.enable_x64():
        loss = jax.jit(_loss(built, 15.0))
        ones = np.ones(len(l5pc.FITTED))  # NumPy inputs: no eager operation to compile
        grad = np.asarray(jax.jit(jax.grad(_loss(built, 15.0)))(ones))
        step = 1e-5
        shifts = step * np.eye(ones.size)
        fd = np.array([(float(loss(ones + shifts[i])) - float(loss(ones - shifts[i])))
                       / (2 * step) for i in range(ones.size)])
    assert np.all(np.abs(fd) > 0)
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6 * np.abs(fd).max())


@needs_morphio
def test_a_second_simulation_with_new_values_compiles_nothing():
    built = model(l5pc.HOT_ZONE)
    with jax.enable_x64():
        first = run(built, built.params(), SHORT, 10.0)["v"]
        values = {key: 1.2 * l5pc.HAY[key] for key in l5pc.FITTED}
        before = stats.snapshot().compiles
        second = run(built, built.params(values), SHORT, 10.0)["v"]
        assert stats.snapshot().compiles == before
        assert np.abs(np.asarray(second) - np.asarray(first)).max() > 1e-3


def test_unknown_parameter_and_missing_mechanism_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"gNaTa_tbar_NaTa_t\.basal"):
        l5pc.L5PC(cell=None).params({"gNaTa_tbar_NaTa_t.basal": 1.0})
    (tmp_path / "NaTa_t.mod").write_text((MODS / "NaTa_t.mod").read_text())
    with pytest.raises(ConfigError, match=r"Ca_HVA"):
        l5pc.build(fixture("pyramidal"), tmp_path)


def test_a_morphology_without_a_region_is_refused_naming_it():
    with pytest.raises(ConfigError, match=r"no \['apical'\] section"):
        l5pc.build(fixture("y"), MODS)


def test_per_length_rule_is_hays():
    from types import SimpleNamespace

    from jaxlean.models.neuron.morphology.discretize import PerLength

    def section(length):
        return SimpleNamespace(xyz=np.array([[0.0, 0, 0], [length, 0, 0]]))

    assert [PerLength().nseg(section(L)) for L in (10.0, 39.5, 40.0, 95.0, 120.0)] == \
        [1, 1, 3, 5, 7]
    with pytest.raises(ConfigError, match="um must be positive"):
        PerLength(0.0)


BLUEPYOPT_FOLDER = HERE / "fixtures" / "bluepyopt_l5pc"


def test_build_refuses_bluepyopts_example_folder_instead_of_building_hays_layout():
    """Issue 49 item 6: given BluePyOpt's folder, build() used to build Hay's layout silently."""
    with pytest.raises(ConfigError, match=r"BluePyOpt's l5pc example.*bluepyopt_example"):
        l5pc.build(fixture("pyramidal"), BLUEPYOPT_FOLDER / "mechanisms")
    with pytest.raises(ConfigError, match=r"gNaTs2_tbar_NaTs2_t\.apical'\] are keys of "
                                          r"BluePyOpt's l5pc example"):
        l5pc.L5PC(cell=None).params({"gNaTs2_tbar_NaTs2_t.apical": 0.02})


@needs_morphio
def test_bluepyopt_example_is_built_from_bluepyopts_own_files():
    assert json.loads(
        (BLUEPYOPT_FOLDER / "release_params.json").read_text()) == l5pc.BLUEPYOPT_RELEASE
    example = l5pc.bluepyopt_example(BLUEPYOPT_FOLDER)
    assert set(example.free) == set(l5pc.BLUEPYOPT_RELEASE)
    fx = np.load(BLUEPYOPT_FOLDER / "bluepyopt_l5pc.npz")   # BluePyOpt's own cell
    with jax.enable_x64():
        params = example.params(l5pc.BLUEPYOPT_RELEASE)
    theirs = fx["value_gNaTs2_tbar_NaTs2_t"]
    has = ~np.isnan(theirs)
    np.testing.assert_array_equal(np.asarray(params["gNaTs2_tbar_NaTs2_t"])[has], theirs[has])
    assert float(params["v_init"]) == -65.0 and np.all(np.asarray(params["e_pas"]) == -75.0)
    with pytest.raises(ConfigError, match="does not hold BluePyOpt's l5pc example"):
        l5pc.bluepyopt_example(HERE / "fixtures")
