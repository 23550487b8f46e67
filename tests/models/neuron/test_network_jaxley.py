"""A network of HH cells joined by graded synapses against jaxley 0.14's ``IonotropicSynapse``.

The fixture was written by ``scripts/make_jaxley_network_fixtures.py`` with jaxley 0.14
(float64); where jaxley is importable the test also runs it live. The network is the
script's: three cells of different branchings, four synapses (a recurrent loop).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.neuron.mechanisms.channels import hh
from jaxlean.models.neuron.network.network import Network
from jaxlean.models.neuron.network.network_sim import simulate_network
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, step_current

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests/models/neuron/fixtures/jaxley_network.npz"
TOLERANCE_MV = 1e-3


def _script():
    spec = importlib.util.spec_from_file_location(
        "make_jaxley_network_fixtures", ROOT / "scripts/make_jaxley_network_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()


def network() -> Network:
    """The script's network in jaxlean: jaxley's branches of NCOMP compartments, each
    branch's first compartment at the end of its parent branch's last."""
    per, cells = SCRIPT.NCOMP, []
    for branches in SCRIPT.CELLS:
        branches = np.asarray(branches)
        parents = np.arange(branches.size * per) - 1
        parents[::per] = np.where(branches < 0, -1, branches * per + per - 1)
        cells.append(Cell.from_parents(parents, 10.0, 1.0).insert(hh))
    net = Network(cells)
    for pc, pb, pk, qc, qb, qk, g, v_th in SCRIPT.EDGES:
        net = net.connect((pc, pb * per + pk), (qc, qb * per + qk), gS=g, v_th=v_th)
    return net


def script_params(net: Network) -> dict:
    """``net.params()`` with the script's axial resistivity (jaxlean's default is NEURON's)."""
    params = net.params()
    for cell in params["cells"]:
        cell["Ra"] = jnp.asarray(SCRIPT.RA, dtype=float)
    return params


def run(net: Network, params: dict, t_max: float = SCRIPT.T_MAX) -> dict:
    amplitude, start, duration = SCRIPT.STIMULUS
    stimulus = Stimulus(net.index(0, 0), step_current(amplitude, start, duration, SCRIPT.DT,
                                                      t_max))
    record = [(0, 0), (1, 0), (2, 0), (1, 2 * SCRIPT.NCOMP + 1)]
    return simulate_network(net, params, [stimulus], SCRIPT.DT, t_max, record=record,
                            progress=False)


def ours() -> tuple[np.ndarray, float]:
    """Our voltages, and ``s`` of edge 0 after one step less: jaxley advances a synapse at
    the start of a step, jaxlean after the solve, so jaxley's ``s`` after step ``n`` is
    jaxlean's after step ``n - 1`` (the voltages are the same at every step)."""
    net = network()
    out = run(net, script_params(net))
    shorter = run(net, script_params(net), SCRIPT.T_MAX - SCRIPT.DT)
    return np.asarray(out["v"]).T, float(shorter["final"]["synapses"]["ionotropic"]["s"][0])


def test_matches_jaxley_fixture():
    fixture = np.load(FIXTURE)
    with jax.enable_x64():
        v, s0 = ours()
    assert v.shape == fixture["v"].shape
    assert (v.max(axis=1)[:3] > 0).all()   # every cell spikes: the synapses carry the spike
    np.testing.assert_allclose(v, fixture["v"], rtol=0, atol=TOLERANCE_MV)
    assert abs(s0 - fixture["s0"][-1]) < 1e-9


def test_matches_jaxley_live():
    pytest.importorskip("jaxley")
    with jax.enable_x64():
        theirs = SCRIPT.jaxley_traces()
        v, _ = ours()
    np.testing.assert_allclose(v, theirs[:-1], rtol=0, atol=TOLERANCE_MV)


def test_gradient_of_a_synaptic_weight_matches_finite_differences():
    net = network()
    with jax.enable_x64():
        base = script_params(net)

        def loss(g):
            params = {**base, "synapses": {"ionotropic": {**base["synapses"]["ionotropic"],
                                                          "gS": g}}}
            return jnp.mean(run(net, params)["v"][:, 2])

        g = base["synapses"]["ionotropic"]["gS"]
        value_and_grad = jax.jit(jax.value_and_grad(loss))  # one program for every bump
        grad = np.asarray(value_and_grad(g)[1])
        eps = 1e-6
        for k in range(g.size):
            bump = jnp.zeros_like(g).at[k].set(eps)
            numeric = (float(value_and_grad(g + bump)[0])
                       - float(value_and_grad(g - bump)[0])) / (2 * eps)
            np.testing.assert_allclose(grad[k], numeric, rtol=1e-4, atol=1e-6)
        assert np.abs(grad).max() > 0
