"""Mechanisms as data: a user channel and a synapse against a plain NumPy loop, hh's fast step
against the generic one, per-region insertion against masked conductances, and bad definitions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.mechanisms.synapses import expsyn
from jaxlean.models.neuron.simulation.cable import Cell, Stimulus, simulate, step_current

HH_LEAK = {"g_pas": hh.parameters["gl_hh"][0], "e_pas": hh.parameters["el_hh"][0]}
"""``pas`` set to ``hh``'s leak: the passive membrane these tests were written for."""


def _slow_gate(v, p):
    return {"w_slow": (1.0 / (1.0 + jnp.exp(-(v + 50.0) / 6.0)), p["tau_slow"])}


SLOW = Mechanism("slow", parameters={"gbar_slow": (0.002, "S/cm2"), "tau_slow": (3.0, "ms"),
                                     "e_slow": (-90.0, "mV")},
                 states=("w_slow",), steady=_slow_gate, q10=2.5, q10_celsius=20.0,
                 currents={"i_slow": (lambda s, p: p["gbar_slow"] * s["w_slow"] ** 2, "e_slow")})

HH_GENERIC = Mechanism("hh", parameters=hh.parameters, states=hh.states, rates=hh.rates,
                       q10=hh.q10, q10_celsius=hh.q10_celsius, currents=hh.currents,
                       ions=hh.ions)


def _numpy_reference(cell, p, current, dt, steps, spike_times):
    """Two compartments, NEURON's step order, written out: arrivals, currents, dense solve,
    exponential Euler at the new voltage. ``pas`` on both, ``SLOW`` on 1, ``expsyn`` on 0."""
    area = 2e-8 * np.pi * cell.radius * cell.length
    resistance = p["Ra"] * 0.5e4 * np.sum(cell.length / (np.pi * cell.radius**2))
    axial = 1e3 / resistance / area
    speed = 2.5 ** ((p["celsius"] - 20.0) / 10.0)
    inf = 1.0 / (1.0 + np.exp(-(p["v_init"] + 50.0) / 6.0))
    v, w, g = np.full(2, p["v_init"]), inf, 0.0
    arrive = [next(k for k in range(steps + 1) if t <= k * dt + 0.5 * dt) for t in spike_times]
    trace = [[v[0], v[1], w, g]]  # the first sample: the state at t = 0
    for k in range(steps):
        g += p["weight_expsyn"] * arrive.count(k)
        conductance = np.full(2, p["g_pas"])
        drive = conductance * p["e_pas"]
        g_slow = p["gbar_slow"] * w**2
        conductance[1] += g_slow
        drive[1] += g_slow * p["e_slow"]
        conductance[0] += 1e-6 * g / area[0]
        drive[0] += 1e-6 * g / area[0] * p["e_expsyn"]
        matrix = np.diag(p["cm"] / dt + 1e3 * conductance + axial)
        matrix[0, 1], matrix[1, 0] = -axial[0], -axial[1]
        rhs = p["cm"] / dt * v + 1e3 * drive
        rhs[1] += 1e-3 * current[k] / area[1]
        v = np.linalg.solve(matrix, rhs)
        inf = 1.0 / (1.0 + np.exp(-(v[1] + 50.0) / 6.0))
        w = inf + (w - inf) * np.exp(-dt * speed / p["tau_slow"])
        g *= np.exp(-dt / p["tau_expsyn"])
        trace.append([v[0], v[1], w, g])
    return np.asarray(trace)


def test_user_channel_and_synapse_match_a_numpy_loop():
    with jax.enable_x64():
        cell = Cell.from_parents([-1, 0], [15.0, 40.0], [4.0, 1.0])
        cell = cell.insert(pas).insert(SLOW, compartments=[1]).insert(expsyn, compartments=[0])
        params = {**cell.params(), **HH_LEAK, "celsius": 26.0, "weight_expsyn": 0.004,
                  "tau_expsyn": 1.5, "gbar_slow": 0.004}
        dt, steps = 0.1, 80
        current = np.asarray(step_current(0.05, 1.0, 4.0, dt, dt * steps))
        times = [0.35, 0.05, 2.0, 2.07, 5.55, 7.85]  # ties at k dt + dt/2 arrive at step k
        out = simulate(cell, params, [Stimulus(1, current)], dt, dt * steps,
                       states={"v": [0, 1], "w_slow": [1], "g_expsyn": [0]},
                       spikes={"expsyn": [times]})
        ours = np.concatenate([out["v"], out["w_slow"], out["g_expsyn"]], axis=1)
        p = {k: float(np.asarray(v).reshape(-1)[0]) for k, v in params.items()}
        reference = _numpy_reference(cell, p, current, dt, steps, times)
        np.testing.assert_allclose(ours, reference, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(out["t"], np.arange(steps + 1) * dt, rtol=1e-15)
        assert np.ptp(reference[:, 1]) > 1.0 and np.ptp(reference[:, 3]) > 0  # things move


def _trace(cell, params, dt=0.05, t_max=3.0):
    stimulus = Stimulus(0, step_current(0.4, 0.5, 2.0, dt, t_max))
    return simulate(cell, params, [stimulus], dt, t_max,
                    states={"v": [0, cell.n - 1], "m": [0], "i_k": [0]})


def test_hh_on_the_soma_equals_generic_hh_everywhere_masked():
    """hh on the soma only (type 1; its hand-derived step) and pas set to hh's leak on the
    dendrites, against hh written only as rates (the generic step) everywhere with zero sodium
    and potassium conductances off the soma. Their gradients: the gate step's in test_cable,
    the generic path's and a subset insertion's in test_long_runs."""
    with jax.enable_x64():
        base = Cell.from_parents([-1, 0, 1, 0], 20.0, [6.0, 1.0, 1.0, 1.0], kind=[1, 3, 3, 4])
        somatic = base.insert(hh, types=1).insert(pas, types=[3, 4])
        params = {**somatic.params(), **HH_LEAK, "celsius": 12.0}
        mask = jnp.asarray([1.0, 0.0, 0.0, 0.0])
        generic = base.insert(HH_GENERIC)
        masked = {**generic.params(), "celsius": 12.0, "gnabar_hh": params["gnabar_hh"] * mask,
                  "gkbar_hh": params["gkbar_hh"] * mask}
        ours = _trace(somatic, params)
        reference = _trace(generic, masked)
        for name in ("v", "m", "i_k"):
            np.testing.assert_allclose(ours[name], reference[name], rtol=1e-12, atol=1e-13,
                                       err_msg=name)
        assert float(np.ptp(ours["v"])) > 50.0  # it spikes


def test_insertion_selections():
    base = Cell.from_parents([-1, 0, 1, 0], 20.0, 1.0, kind=[1, 3, 3, 4])
    np.testing.assert_array_equal(base.insert(hh, types=1).mechanisms[0].compartments, [0])
    np.testing.assert_array_equal(base.insert(hh, branches=[1]).mechanisms[0].compartments,
                                  [1, 2])
    twice = base.insert(pas, types=3).insert(pas, types=4)
    np.testing.assert_array_equal(twice.mechanisms[0].compartments, [1, 2, 3])
    assert base.insert(pas, types=3).insert(pas).mechanisms[0].compartments is None
    synapses = base.insert(expsyn, compartments=[2, 2]).insert(expsyn, compartments=[0])
    np.testing.assert_array_equal(synapses.mechanisms[0].compartments, [2, 2, 0])
    assert base.mechanisms == () and base.params().keys() == base.params("hh").keys()


@pytest.mark.parametrize("make,match", [
    (lambda c: c.insert(hh, types=1, branches=0), "at most one of"),
    (lambda c: c.insert(hh, types=2), r"no compartment has types \[2\]"),
    (lambda c: c.insert(hh, compartments=[4]), r"compartments must be in \[0, 3\]"),
    (lambda c: c.insert(expsyn), "a point mechanism needs compartments"),
    (lambda c: c.insert(hh).insert(HH_GENERIC), "a different mechanism named 'hh'"),
    (lambda c: c.insert(hh).insert(Mechanism("hh2", {"g": (1.0, "S/cm2"), "e": (0.0, "mV")},
                                             {"i_na": (lambda s, p: p["g"], "e")})),
     r"both name the current \['i_na'\]"),
    (lambda c: c.insert(hh).insert(Mechanism("k2", {"ek": (-90.0, "mV")},
                                             {"i_k2": (lambda s, p: 0.0, "ek")})).params(),
     "parameter 'ek' is declared by 'hh'"),
    (lambda c: c.insert(pas).params("hh"), "has inserted mechanisms"),
    (lambda c: Mechanism("x", {"g": (1.0, "S/cm2")}, {"i_x": (lambda s, p: p["g"], "e")}),
     "reversal 'e', which is not one of its parameters"),
    (lambda c: Mechanism("x", {"e": (0.0, "mV")}, {"i_x": (lambda s, p: 1.0, "e")},
                         states=("a",)), "give exactly one of rates"),
])
def test_bad_insertions_and_definitions_are_named(make, match):
    cell = Cell.from_parents([-1, 0, 1, 0], 20.0, 1.0, kind=[1, 3, 3, 4])
    with pytest.raises(ConfigError, match=match):
        make(cell)


def test_bad_recording_and_spike_inputs_are_named():
    cell = Cell.from_parents([-1, 0], 20.0, 1.0, kind=[1, 3])
    cell = cell.insert(pas).insert(hh, types=1).insert(expsyn, compartments=[1, 1])
    params = cell.params()
    spikes = {"expsyn": [[1.0], []]}
    with pytest.raises(ConfigError, match="cannot record 'm' at compartment 1: 'hh' is not"):
        simulate(cell, params, [], 0.1, 1.0, states={"m": [1]}, spikes=spikes)
    with pytest.raises(ConfigError, match=r"no spike times for the synapses \['expsyn'\]"):
        simulate(cell, params, [], 0.1, 1.0)
    with pytest.raises(ConfigError, match=r"spikes for \['exp2syn'\], which is not a synapse"):
        simulate(cell, params, [], 0.1, 1.0, spikes={**spikes, "exp2syn": [[1.0]]})
    with pytest.raises(ConfigError, match=r"one row of spike times per synapse \(2 rows\)"):
        simulate(cell, params, [], 0.1, 1.0, spikes={"expsyn": [[1.0]]})
    with pytest.raises(ConfigError, match="synapse 1 spike 0 is nan"):
        simulate(cell, params, [], 0.1, 1.0, spikes={"expsyn": [[1.0], [np.nan]]})
    with pytest.raises(ConfigError, match=r"'weight_expsyn' of point mechanism 'expsyn' must be "
                                          r"a scalar or one value per instance \(2,\)"):
        simulate(cell, {**params, "weight_expsyn": jnp.ones(3)}, [], 0.1, 1.0, spikes=spikes)


@pytest.mark.parametrize("conductance,key,hint", [
    (lambda s, p: p["g_t"] * (p["celsius"] - 6.3) / 10.0, "celsius", "only through its q10"),
    (lambda s, p: p["g_t"] * s["v"], "v", "not of a conductance"),
])
def test_a_mechanism_reading_a_name_it_is_not_given_is_named(conductance, key, hint):
    warm = Mechanism("warm", parameters={"g_t": (1e-4, "S/cm2"), "e_t": (0.0, "mV")},
                     states=("w",), steady=lambda v, p: {"w": (0.5, 1.0)},
                     currents={"i_t": (conductance, "e_t")})
    cell = Cell.from_parents([-1, 0], 20.0, 1.0).insert(pas).insert(warm)
    with pytest.raises(ConfigError, match=rf"mechanism 'warm': the conductance of 'i_t' "
                                          rf"\(states, params\) reads '{key}', which it is not "
                                          rf"given; it may read states: \['w'\]; params: "
                                          rf"\['e_t', 'g_t'\]\. .*{hint}"):
        simulate(cell, cell.params(), [], 0.1, 1.0)


def test_one_state_name_is_one_state():
    gate = Mechanism("gate", parameters={"g_g": (1e-4, "S/cm2"), "e_g": (0.0, "mV")},
                     states="w_gate", steady=lambda v, p: {"w_gate": (0.5, 1.0)},
                     currents={"i_g": (lambda s, p: p["g_g"] * s["w_gate"], "e_g")})
    assert gate.states == ("w_gate",)
