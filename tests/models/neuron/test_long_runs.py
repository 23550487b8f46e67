"""Long runs: pieces continued from the final state equal one run bit for bit, recording every
k steps equals subsampling, gradients go through the pieces, and a second call compiles nothing."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.compile import stats
from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.synapses import expsyn
from jaxlean.models.neuron.simulation.cable import (
    Cell,
    Stimulus,
    VoltageClamp,
    rest_state,
    simulate,
    step_current,
)

HH_LEAK = {"g_pas": hh.parameters["gl_hh"][0], "e_pas": hh.parameters["el_hh"][0]}
"""``pas`` set to ``hh``'s leak: the membrane these tests were written for."""

DT, STEPS, PIECES = 0.05, 200, 10


class _Runs:
    """A soma with hh, a dendrite with synapses and a clamp, run whole and in pieces."""

    def __init__(self):
        self.cell = self.build()
        self.params = {**self.cell.params(), **HH_LEAK,
                       "weight_expsyn": jnp.asarray([0.01, 0.004]),
                       "tau_expsyn": 1.0}
        t_max = DT * STEPS
        self.current = step_current(0.6, 0.5, 3.0, DT, t_max) + step_current(1.0, 6.0, 2.0, DT,
                                                                               t_max)
        # arrivals and clamp levels that change inside pieces and on their boundaries
        self.spikes = {"expsyn": [[0.3, 1.0, 4.97, 7.5], [2.525, 9.9]]}
        self.clamps = [VoltageClamp(1, [-65.0, -60.0], [5.0, 2.5], rs=50.0)]
        self.states = {"v": [0, 3], "m": [0], "i_na": [0], "g_expsyn": [0], "i_clamp": [0]}
        self.whole = self.run(self.params, self.current, STEPS)

    @staticmethod
    def build() -> Cell:
        base = Cell.from_parents([-1, 0, 1, 2], [20.0, 30.0, 30.0, 30.0], [8.0, 1.0, 1.0, 1.0],
                                 kind=[1, 3, 3, 3])
        return base.insert(hh, types=1).insert(pas, types=3).insert(
            expsyn, compartments=[3, 2])

    def run(self, params, current, steps, initial=None, cell=None, **options):
        return simulate(cell or self.cell, params, [Stimulus(0, current)], DT, DT * steps,
                        states=self.states, spikes=self.spikes, clamps=self.clamps,
                        detect=[0, 3], threshold=-20.0, max_spikes=8, initial=initial,
                        **options)

    def pieces(self, params, options=None, pieces=PIECES):
        steps = STEPS // pieces
        outs, state = [], rest_state(self.cell, params)  # one program for every piece
        for k in range(pieces):
            outs.append(self.run(params, self.current[k * steps:(k + 1) * steps], steps, state,
                                 **(options or {})))
            state = outs[-1]["final"]
        return outs


@pytest.fixture(scope="module")
def runs():
    with jax.enable_x64():
        return _Runs()


def test_ten_pieces_equal_the_whole_run_bit_for_bit_and_compile_once(runs):
    with jax.enable_x64():
        first = rest_state(runs.cell, runs.params)
        runs.run(runs.params, runs.current[:STEPS // PIECES], STEPS // PIECES, first)  # compiles
        before = stats.snapshot().compiles
        outs = runs.pieces(runs.params, pieces=PIECES)
        assert stats.snapshot().compiles == before  # new initial states and currents: no compile
        whole = runs.whole
        for name in (*runs.states, "t"):  # continued pieces record from their first step on,
            joined = np.concatenate([o[name] for o in outs])  # as NEURON's continuerun
            np.testing.assert_array_equal(joined, whole[name][1:], err_msg=name)
        jax.tree.map(np.testing.assert_array_equal, outs[-1]["final"], whole["final"])
        def found(out, d):  # read on the host: no eager slice to compile per count
            return np.asarray(out["spikes"])[d, :int(np.asarray(out["spike_count"])[d])]

        spikes = [np.concatenate([found(o, d) for o in outs]) for d in range(2)]
        for d in range(2):
            np.testing.assert_array_equal(spikes[d], found(whole, d))
        assert spikes[0].size >= 2 and np.ptp(whole["i_clamp"]) > 0  # it fires; the clamp acts
        v = np.asarray(whole["v"])[:, 0]   # detection against the trace: first step above -20
        above = np.flatnonzero((v[1:] > -20.0) & (v[:-1] <= -20.0)) + 1
        np.testing.assert_allclose(spikes[0], np.asarray(whole["t"])[above], rtol=1e-15)


def test_a_second_call_with_new_values_compiles_nothing(runs):
    with jax.enable_x64():
        other = {**runs.params, "gnabar_hh": 0.1, "weight_expsyn": np.asarray([0.02, 0.0]),
                 "ek": jnp.asarray(-80.0)}  # Python and NumPy numbers: weak types do not matter
        current = runs.current * 0.5
        before = stats.snapshot().compiles
        again = runs.run(other, current, STEPS)
        assert stats.snapshot().compiles == before
        assert np.abs(np.asarray(again["v"]) - np.asarray(runs.whole["v"])).max() > 1.0
        equal = _Runs.build()  # built again: another object, the same structure
        before = stats.snapshot().compiles
        np.testing.assert_array_equal(runs.run(other, current, STEPS, cell=equal)["v"],
                                      again["v"])
        assert stats.snapshot().compiles == before


def test_gradient_through_checkpointed_pieces_matches_finite_differences():
    """Two checkpointed pieces under one ``jax.grad`` (passive cell, synapse, clamp: cheap),
    the first starting from ``rest_state`` (so its gradient reaches ``v_init`` through it)."""
    with jax.enable_x64():
        cell = Cell.from_parents([-1, 0, 1], 25.0, [3.0, 1.0, 0.5])
        cell = cell.insert(pas, compartments=[0, 1]).insert(expsyn, compartments=[2])
        base = {**cell.params(), **HH_LEAK, "weight_expsyn": 0.01, "tau_expsyn": 2.0}
        steps, spikes = 120, {"expsyn": [[0.4, 2.6]]}
        current = step_current(0.1, 1.0, 2.0, DT, DT * steps)
        clamps = [VoltageClamp(1, [-70.0], [3.1], rs=30.0)]
        weights = np.linspace(0.5, 1.5, steps + 1)[:, None]

        def run(params, first, last, initial=None, **options):
            return simulate(cell, params, [Stimulus(0, current[first:last])], DT,
                            DT * (last - first), record=(0, 2), spikes=spikes, clamps=clamps,
                            initial=initial, **options)

        def loss(params):
            one = run(params, 0, 60, rest_state(cell, params), remat="sqrt",
                      progress=False)  # 8 x 8 steps: 4 padding steps keep the final state
            two = run(params, 60, steps, one["final"], remat="sqrt", progress=False)
            return jnp.mean(weights[1:] * jnp.concatenate([one["v"], two["v"]]))

        grads = jax.jit(jax.grad(loss))(base)
        rng = np.random.default_rng(3)
        host_weights = weights[1:]
        for name in ("g_pas", "weight_expsyn", "tau_expsyn", "radius", "v_init"):
            value = np.asarray(base[name])  # NumPy steps and losses: no eager operation
            step = 1e-6 * rng.uniform(0.5, 1.5, value.shape) * np.abs(value)

            def shifted(sign, name=name, value=value, step=step):
                params = {**base, name: value + sign * step}
                return np.mean(host_weights * np.asarray(run(params, 0, steps)["v"])[1:])

            numeric = (shifted(1) - shifted(-1)) / 2
            analytic = np.sum(np.asarray(grads[name]) * step)
            assert abs(float(analytic)) > 0, name
            np.testing.assert_allclose(analytic, numeric, rtol=1e-6, err_msg=name)


@pytest.mark.slow
def test_100k_steps_in_ten_pieces_equal_the_whole_run_recorded_every_300():
    """The whole run records t = 0 and every 300th step (334 records, 100 steps left over
    unrecorded); the pieces record every step."""
    with jax.enable_x64():
        cell = Cell.from_parents([-1, 0], 20.0, 2.0)
        steps, dt, every = 100_000, 0.025, 300
        current = 0.02 * np.sin(np.arange(steps) * 0.001)
        passive = {**cell.params("passive"), **HH_LEAK}
        whole = simulate(cell, passive, [Stimulus(1, current)], dt, steps * dt,
                         record=(0, 1), every=every)
        state, pieces, times = None, [], []
        for k in range(10):
            out = simulate(cell, passive,
                           [Stimulus(1, current[k * steps // 10:(k + 1) * steps // 10])], dt,
                           steps * dt / 10, record=(0, 1), initial=state)
            pieces.append(out["v"])
            times.append(out["t"])
            state = out["final"]
        assert whole["v"].shape == (steps // every + 1, 2)
        pieces = np.concatenate(pieces)    # the first from rest (t = 0), the others continued
        times = np.concatenate(times)
        np.testing.assert_array_equal(pieces[::every][:334], whole["v"])
        np.testing.assert_array_equal(times[::every][:334], whole["t"])
        jax.tree.map(np.testing.assert_array_equal, state, whole["final"])
        assert int(state["step"]) == steps
        assert float(np.ptp(whole["v"][:, 1])) > 1.0
