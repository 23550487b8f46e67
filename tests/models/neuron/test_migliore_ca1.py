"""Migliore et al.'s (2018) CA1 pyramidal cell CA1_PC_cAC_sig6 (``migliore_ca1.build``)
against NEURON running the published files.

The fixture was written by ``scripts/make_migliore_cell_fixture.py``: NEURON 9.0.2 runs
the published cell template (``fixtures/migliore_ca1/cell_seed3_0-pyr-08.hoc``, unedited)
on the paper's morphology (``mpg141209_A_idA.asc``, unedited) with the twelve published
``.mod`` files (``nmodl/migliore``): Import3d, ``nseg = 1 + 2 int(L / 40)``, the
template's own tapered axon stub, the channels per section list and the distance rules
(hd, kad, e_pas) of its ``biophys()``; 500 ms of a 0.8 nA step at dt 0.025 ms. Required
(float64): the same sections and ``nseg``, distances, stub diameters and distributed
values; the voltage at the soma, an apical dendrite and the stub within 1e-3 mV (every
10th step stored), every spike time within 1e-3 ms. Also: the gradient of a loss on the
soma voltage with respect to five conductances against central differences (a spiking
8 ms run). Live against NEURON when it is installed.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron import distribution
from jaxlean.models.neuron.published import migliore_ca1
from jaxlean.models.neuron.simulation.cable import Stimulus, simulate, step_current
from tests.conftest import needs_nrnivmodl
from tests.models.neuron.neuron_reference import run_fixture_script

HERE = Path(__file__).parent
FILES, MODS = HERE / "fixtures" / "migliore_ca1", HERE / "nmodl" / "migliore"
ASC, FIXTURE = FILES / "mpg141209_A_idA.asc", FILES / "migliore_ca1.npz"
SCRIPT = HERE.parents[2] / "scripts" / "make_migliore_cell_fixture.py"
V_TOL, SPIKE_TOL = 1e-3, 1e-3
VALUES = ("ghdbar_hd", "gkabar_kad", "e_pas", "gbar_nax", "Ra")  # per segment, as NEURON's
needs_morphio = pytest.mark.skipif(
    __import__("importlib").util.find_spec("morphio") is None,
    reason="morphio not installed (jaxlean[morphology])")


@functools.lru_cache(maxsize=1)
def model():
    return migliore_ca1.build(ASC, MODS)


def crossings(v: np.ndarray, dt: float) -> np.ndarray:
    """Upward crossings of 0 mV (ms), linearly interpolated, as the fixture script's."""
    k = np.flatnonzero((v[:-1] < 0) & (v[1:] >= 0))
    return (k + v[k] / (v[k] - v[k + 1])) * dt


def check_against(path: Path) -> None:
    fx = np.load(path)
    case = json.loads(str(fx["case"]))
    built = model()
    cell = built.cell
    assert cell.section_names == tuple(str(n) for n in fx["names"])
    np.testing.assert_array_equal([cell.compartments_of(n).size for n in cell.section_names],
                                  fx["nseg"])
    np.testing.assert_allclose(distribution.path_distance(cell), fx["distance"], atol=1e-9)
    stub = np.concatenate([built.tree.cylinders[-2], built.tree.cylinders[-1]])
    np.testing.assert_allclose(stub, fx["stub_diam"], rtol=1e-12)
    with jax.enable_x64():
        params = built.params()
        for name in VALUES:
            theirs = fx[f"value_{name}"]
            has = ~np.isnan(theirs)
            assert has.sum() > 100, name
            np.testing.assert_allclose(np.asarray(params[name])[has], theirs[has],
                                       rtol=1e-12, err_msg=name)
        sites = [cell.location(name, x) for name, x in case["sites"]]
        current = step_current(case["amp"], case["delay"], case["dur"], case["dt"],
                               case["t_max"])
        out = simulate(cell, params, [Stimulus(cell.location(0, 0.5), current)], case["dt"],
                       case["t_max"], record=sites, states=("v", "cai"), progress=False)
    v = np.asarray(out["v"])
    every = case["every"]
    np.testing.assert_array_less(np.abs(v[::every] - fx["v"]).max(), V_TOL)
    np.testing.assert_allclose(np.asarray(out["cai"])[::every, 0], fx["cai"], rtol=1e-6)
    assert fx["spikes_0"].size >= 5            # the soma fires repeatedly
    for k in range(v.shape[1]):
        ours, theirs = crossings(v[:, k], case["dt"]), fx[f"spikes_{k}"]
        assert ours.size == theirs.size, k
        np.testing.assert_allclose(ours, theirs, atol=SPIKE_TOL)


@pytest.mark.slow
@needs_morphio
def test_matches_committed_neuron_fixture_over_500_ms():
    check_against(FIXTURE)


@pytest.mark.slow
@needs_morphio
@needs_nrnivmodl
def test_matches_neuron_live(tmp_path):
    run_fixture_script(SCRIPT, tmp_path)
    check_against(tmp_path / "migliore_ca1.npz")


#: Five conductances of the gradient check, each array scaled as a whole.
FIVE = ("gbar_nax", "gkdrbar_kdr", "gkabar_kap", "ghdbar_hd", "gbar_kmb")


@pytest.mark.slow
@needs_morphio
def test_gradient_of_five_conductances_matches_central_differences():
    """d loss / d s at s = 1, each of :data:`FIVE` scaled by s (float64), over 5 ms of a
    2 nA step from 1 ms: one spike (peak near 38 mV at 2.4 ms) and its repolarisation.

    Longer runs reach the slow depolarisation before a second spike, where the loss bends
    sharply on the scale of a central difference. Measured over 8 ms, d loss / d s of
    gbar_nax: -653.1663 by reverse and by forward mode; central differences -649.78,
    -649.84, -652.20, -653.1665 with steps 1e-5, 1e-6, 1e-7, 1e-8; one-sided from above
    -649.01, -652.69, -653.14, -653.16 (steps 1e-5 to 1e-8), from below -650.54, -646.98,
    -651.25, -653.17: the gradient is the derivative at s = 1, and the slope changes
    within 1e-7 below it. Replacing the published rate functions' small-argument branches
    (``trap0`` in nax, ``efun`` in cal, can, cat) by their Taylor series changed nothing.
    """
    built = model()
    cell = built.cell
    t_max, step = 5.0, 1e-6
    with jax.enable_x64():
        base = built.params()
        current = step_current(2.0, 1.0, t_max, 0.025, t_max)

        def soma_v(scale):
            params = {**base, **{key: scale[i] * base[key] for i, key in enumerate(FIVE)}}
            return simulate(cell, params, [Stimulus(cell.location(0, 0.5), current)], 0.025,
                            t_max, progress=False)["v"][:, 0]

        def loss(scale):
            v = soma_v(scale)
            return jnp.mean((v + 60.0) ** 2), v

        ones = np.ones(len(FIVE))  # NumPy inputs: no eager operation to compile
        grad, v = jax.jit(jax.grad(loss, has_aux=True))(ones)
        shifts = np.concatenate([ones + step * np.eye(5), ones - step * np.eye(5)])
        forward = jax.jit(lambda s: loss(s)[0])  # one program for the ten runs (a vmap of
        values = np.array([forward(s) for s in shifts])  # it took twice as long to compile)
    v = np.asarray(v)
    assert crossings(v, 0.025).size == 1                    # the run spikes
    fd = (values[:5] - values[5:]) / (2 * step)
    assert np.all(np.abs(fd) > 1.0), dict(zip(FIVE, fd, strict=True))
    np.testing.assert_allclose(np.asarray(grad), fd, rtol=1e-4)


@needs_morphio
def test_a_folder_without_the_channels_is_refused_naming_them(tmp_path):
    (tmp_path / "kdrca1.mod").write_text((MODS / "kdrca1.mod").read_text())
    with pytest.raises(ConfigError, match=r"\['cacum', 'cagk', 'cal'"):
        migliore_ca1.build(model().tree, tmp_path)


def _biophys(text: str) -> dict:
    """``{(name, section list): value}`` of the template's ``biophys()``, read from HOC."""
    body = text[text.index("proc biophys()"):text.index("func sec_count")]
    out = {}
    for where, block in re.findall(r"forsec CellRef\.(\w+) \{(.*?)\}", body, re.S):
        for name, value in re.findall(r"(\w+) = (\S+)", block):
            out[(name, where)] = float(value)
    for where, name, rule in re.findall(
            r'distribute_distance\(CellRef\.(\w+), "(\w+)", "(.*?)"\)', body):
        value = re.search(r"(-?\d+\.\d{6,}(?:e-?\d+)?)", rule).group(1)
        out[(name, where)] = (float(value), rule.replace(value, "{value}")
                              .replace("%.17g", "{distance}").replace("exp(", "math.exp("))
    return out


def test_parameters_are_the_templates():
    """PARAMETERS holds exactly the template's ``biophys()``: values and distributions."""
    theirs = _biophys((FILES / "cell_seed3_0-pyr-08.hoc").read_text())
    ours = {}
    for entry in migliore_ca1.PARAMETERS:
        if entry["type"] == "global":
            continue
        key = (entry["param_name"], entry["sectionlist"])
        ours[key] = entry["value"] if "dist" not in entry else (entry["value"], entry["dist"])
    assert ours == theirs
    assert {e["param_name"]: e["value"] for e in migliore_ca1.PARAMETERS
            if e["type"] == "global"} == {"celsius": 34.0, "v_init": -70.0}
