"""Spike-triggered connections and gap junctions: builders, checks naming the connection,
the delivery rule, continuing a run with events in flight, gradients through the weights."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.mechanisms.synapses import exp2syn, expsyn
from jaxlean.models.neuron.network._event_clock import rounded_offset
from jaxlean.models.neuron.network.gap_junctions import GapJunction
from jaxlean.models.neuron.network.network import Network
from jaxlean.models.neuron.network.network_events import SpikingSynapse
from jaxlean.models.neuron.network.network_sim import simulate_network
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, step_current

DT = 0.025


def cells(n: int = 3) -> list[Cell]:
    return [Cell.from_parents([-1, 0], [20.0, 50.0], [10.0, 1.0]).insert(hh, compartments=[0])
            .insert(pas, compartments=[1]) for _ in range(n)]


def test_builders_make_spiking_connections_and_gap_junctions():
    net = Network(cells())
    full = net.fully_connect([0, 1], [1, 2], SpikingSynapse(expsyn), weight=0.01, delay=2.0)
    assert [(c.pre_cell, c.post_cell) for c in full.connections] == [(0, 1), (0, 2), (1, 2)]
    weights = np.array([[0.0, 0.02, 0.0], [0.0, 0.0, 0.03], [0.05, 0.0, 0.0]])
    m = net.connect_matrix(weights, synapse=SpikingSynapse(exp2syn), weights="weight",
                           delay=1.5, threshold=-20.0, post_where=1)
    got = m.params()["synapses"]["exp2syn"]
    assert [(c.pre_cell, c.post_cell, c.post) for c in m.connections] == [
        (0, 1, 1), (1, 2, 1), (2, 0, 1)]
    np.testing.assert_allclose(got["weight"], [0.02, 0.03, 0.05])
    np.testing.assert_allclose(got["delay"], 1.5)
    np.testing.assert_allclose(got["tau2_exp2syn"], 10.0)    # the mechanism's default
    assert "weight_exp2syn" not in got                        # replaced by the NetCon's weight
    r = net.connect_random([0, 1, 2], [0, 1, 2], 0.5, seed=1, synapse=SpikingSynapse(expsyn),
                           weight=0.01)
    assert r.connections == net.connect_random([0, 1, 2], [0, 1, 2], 0.5, seed=1,
                                               synapse=SpikingSynapse(expsyn),
                                               weight=0.01).connections
    gaps = net.connect_matrix([[0, 2e-3], [0, 0]], [0, 1], [1, 2], GapJunction(),
                              weights="g")
    assert [(c.pre_cell, c.post_cell) for c in gaps.connections] == [(0, 2)]
    np.testing.assert_allclose(gaps.params()["synapses"]["gap"]["g"], [2e-3])
    both = net.connect_gap((0, 1), (1, 0), g=1e-3).connect_spiking((0, 0), (1, 0), expsyn,
                                                                    weight=0.01)
    assert both.connections[0].describe(0).startswith(
        "connection 0 (cell 0 compartment 1 <-> cell 1 compartment 0, gap)")


def test_bad_connections_name_the_connection():
    net = Network(cells()).connect_spiking((0, 0), (1, 0), expsyn, weight=0.01)
    with pytest.raises(ConfigError, match=r"connection 1 \(post \(5, 0\)\).*cell 5 does not "
                                          r"exist"):
        net.connect_spiking((0, 0), (5, 0), expsyn, weight=0.01)
    with pytest.raises(ConfigError, match=r"connection 1 \(pre \(2, 7\)\).*no compartment 7"):
        net.connect_spiking((2, 7), (1, 0), expsyn, weight=0.01)
    with pytest.raises(ConfigError, match=r"connection 1 \(cell 2 compartment 0 -> cell 1 "
                                          r"compartment 1, expsyn\): weight must be finite"):
        net.connect_spiking((2, 0), (1, 1), expsyn, weight=float("nan"))
    with pytest.raises(ConfigError, match=r"connection 2 \(cell 1 compartment 0 -> cell 2 "
                                          r"compartment 0, expsyn\): weight must be finite"):
        net.connect_matrix([[0, 0.1, 0], [0, 0, np.nan], [0, 0, 0]],
                           synapse=SpikingSynapse(expsyn), weights="weight")
    with pytest.raises(ConfigError, match=r"connection 1 .*delay must be > 0"):
        net.connect_spiking((2, 0), (1, 1), expsyn, weight=0.01, delay=0.0)
    with pytest.raises(ConfigError, match=r"connection 1 .*<-> cell 2 compartment 0, gap\): "
                                          r"a gap junction joins two different"):
        net.connect_gap((2, 0), (2, 0), g=1e-3)
    with pytest.raises(ConfigError, match=r"connect_spiking"):
        net.connect((0, 0), (1, 0), expsyn, weight=0.01)
    with pytest.raises(ConfigError, match=r"point Mechanism with on_spike"):
        SpikingSynapse(hh)
    gated = Mechanism("gated", point=True, parameters={"e_gated": (0.0, "mV"),
                                                       "weight_gated": (0.0, "uS")},
                      states=("g_gated",), steady=lambda v, p: {"g_gated": (0.0, 1.0 + v * v)},
                      currents={"i_gated": (lambda s, p: s["g_gated"], "e_gated")},
                      on_spike=lambda p: {"g_gated": p["weight_gated"]})
    with pytest.raises(ConfigError, match=r"'gated''s kinetics depend on the voltage"):
        SpikingSynapse(gated)
    short = net.connect_spiking((1, 0), (2, 0), expsyn, weight=0.01, delay=0.01)
    with pytest.raises(ConfigError, match=r"connection 1 \(cell 1 compartment 0 -> cell 2 "
                                          r"compartment 0, expsyn\): delay 0.01 ms is shorter "
                                          r"than dt \(0.025 ms\)"):
        simulate_network(short, short.params(), [], DT, 1.0)
    params = net.params()
    params["synapses"]["expsyn"]["weight"] = jnp.array([np.nan])
    with pytest.raises(ConfigError, match=r"connection 0 \(cell 0 compartment 0 -> cell 1 "
                                          r"compartment 0, expsyn\) must be finite"):
        simulate_network(net, params, [], DT, 1.0)


def test_events_arrive_at_neurons_fixed_step():
    # delivered at the first step start t with spike + 1e-10 + delay <= t + dt/2 (float32:
    # the delay alone; a half step, 1.0125 ms, to the later step as in NEURON)
    got = rounded_offset(jnp.asarray([0.025, 1.0, 1.01, 1.013, 1.0125]), DT).tolist()
    assert got == [1, 40, 40, 41, 41]


def network(t_max: float = 20.0) -> tuple[Network, list[Stimulus]]:
    net = (Network(cells(2))
           .connect_spiking((0, 0), (1, 1), expsyn, weight=0.004, delay=1.5, threshold=-20.0,
                            tau_expsyn=2.0)
           .connect_spiking((1, 1), (0, 0), exp2syn, weight=0.002, delay=2.0, threshold=-60.0,
                            e_exp2syn=-80.0, tau1_exp2syn=0.5, tau2_exp2syn=4.0)
           .connect_gap((0, 1), (1, 0), g=2e-4))
    return net, [Stimulus(0, step_current(0.3, 1.0, 20.0, DT, t_max))]


def test_continuing_a_run_keeps_the_events_in_flight():
    net, stimuli = network()
    current = np.asarray(stimuli[0].current)  # sliced on the host: no eager slice to compile
    with jax.enable_x64():
        whole = simulate_network(net, net.params(), stimuli, DT, 20.0, record=[0, 2, 3],
                                 progress=False)
        v = np.asarray(whole["v"])[:, 0]
        cut = 3.0   # a presynaptic spike less than its delay before the cut: still in flight
        n = round(cut / DT)
        window = v[n - round(1.5 / DT):n]
        assert np.any((window[:-1] <= -20.0) & (window[1:] > -20.0))
        first = simulate_network(net, net.params(), [Stimulus(0, current[:n])], DT, cut,
                                 record=[0, 2, 3], progress=False)
        second = simulate_network(net, net.params(), [Stimulus(0, current[n:])], DT, 20.0 - cut,
                                  record=[0, 2, 3], progress=False, initial=first["final"])
    np.testing.assert_array_equal(np.asarray(whole["v"])[n + 1:], np.asarray(second["v"]))


def test_gradient_through_weights_matches_finite_differences():
    """The gradient flows through the conductances after each delivery (every spike kept at
    its step): central finite differences of the weights agree; threshold and delay get
    none."""
    net, stimuli = network(8.0)

    def loss(p):
        v = simulate_network(net, p, stimuli, DT, 8.0, record=[0, 2], progress=False)["v"]
        return jnp.mean((v[:, 1] + 65.0) ** 2) + jnp.mean(v[:, 0])

    def nudged(p, name, key, h):
        shifted = np.asarray(p["synapses"][name][key]) + h   # NumPy: no eager add
        return {**p, "synapses": {**p["synapses"], name: {**p["synapses"][name],
                                                          key: shifted}}}

    with jax.enable_x64():
        p = net.params()
        value_and_grad = jax.jit(jax.value_and_grad(loss))  # one program for every nudge
        grad = value_and_grad(p)[1]["synapses"]
        for name, key in (("expsyn", "weight"), ("exp2syn", "weight"), ("gap", "g")):
            h = 1e-5 * float(p["synapses"][name][key][0])
            fd = (float(value_and_grad(nudged(p, name, key, h))[0])
                  - float(value_and_grad(nudged(p, name, key, -h))[0]))
            np.testing.assert_allclose(float(grad[name][key][0]), fd / (2 * h), rtol=1e-5)
            assert float(grad[name][key][0]) != 0
    for name in ("delay", "threshold"):   # spike times are comparisons: no gradient
        assert not np.any(np.asarray(grad["expsyn"][name]))
        assert not np.any(np.asarray(grad["exp2syn"][name]))


def test_jit_and_vmap_over_weights():
    """Inside ``jax.jit`` (delays traced: the buffer sized from the network's) and ``vmap``."""
    net, stimuli = network(8.0)
    p = net.params()

    def run(w):
        q = {**p, "synapses": {**p["synapses"], "expsyn": {**p["synapses"]["expsyn"],
                                                           "weight": w}}}
        return simulate_network(net, q, stimuli, DT, 8.0, record=[2], progress=False)["v"][:, 0]

    weights = np.array([[0.0], [0.004]], np.float32)  # NumPy: no eager operation
    batched = np.asarray(jax.jit(jax.vmap(run))(weights))
    one = np.asarray(run(weights[1]))
    np.testing.assert_allclose(batched[1], one, atol=1e-4)
    assert batched[0].max() < -60.0 < 0.0 < one.max()    # no input, no spike


def test_traced_delay_outside_the_event_buffer_is_an_error_not_a_late_event():
    """Under ``jax.jit`` the delays are traced: the buffer is sized from the network's, and a
    longer (or shorter than dt) traced delay raises at run time instead of being cut."""
    net, stimuli = network(8.0)
    p = net.params()
    built = np.asarray(p["synapses"]["expsyn"]["delay"])

    def run(delay):
        q = {**p, "synapses": {**p["synapses"], "expsyn": {**p["synapses"]["expsyn"],
                                                           "delay": delay}}}
        return simulate_network(net, q, stimuli, DT, 8.0, record=[2], progress=False)["v"]

    jax.block_until_ready(jax.jit(run)(jnp.asarray(built)))            # the built delays run
    for wrong in (built + 5.0, np.full_like(built, DT / 2)):
        # equinox's error, surfaced through XLA's runtime error under jax.jit
        with pytest.raises(Exception, match=r"longer than 1\.5 ms, the longest its event buffer"):
            jax.block_until_ready(jax.jit(run)(jnp.asarray(wrong)))
