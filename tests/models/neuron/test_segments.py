"""The default backward pass in segments (``scan_in_segments``) against JAX's own gradient of
the plain loop: the same values, the same derivatives (reverse, forward, batched), less memory."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.ad_checkpoint import checkpoint_name

from jaxlean.models.neuron.mechanisms.channels import hh, pas
from jaxlean.models.neuron.mechanisms.synapses import expsyn
from jaxlean.models.neuron.simulation import _program, _time
from jaxlean.models.neuron.simulation._time import _even_length, scan_in_segments
from jaxlean.models.neuron.simulation.cable import (
    Cell,
    Stimulus,
    VoltageClamp,
    simulate,
    step_current,
)

HH_LEAK = {"g_pas": hh.parameters["gl_hh"][0], "e_pas": hh.parameters["el_hh"][0]}
"""``pas`` set to ``hh``'s leak: the membrane these tests were written for."""


def _keep_named(primitive, *_, **params) -> bool:
    return primitive.name == "name" and params.get("name") == "kept"


def _toy(weights):
    """A nonlinear recurrence whose step closes over ``weights`` (as simulate's step closes
    over its parameters) and names one intermediate ``kept``."""

    def step(carry, x):
        h, total = carry
        pre = checkpoint_name(jnp.tanh(weights * h + x), "kept")
        h = pre + 0.1 * jnp.sin(h)
        return (h, total + jnp.sum(h)), h[:2] * x[0]

    return step


def _run_toy(scan, weights, h0, xs):
    (h, total), ys = scan(_toy(weights), (h0, jnp.zeros((), h0.dtype)), xs)
    return jnp.sum(h ** 2) + total + jnp.sum(ys ** 3)


def _toy_derivatives(scan, weights, h0, xs, tangents, batch):
    """The toy's value, gradient, directional derivative and gradient batched over
    ``batch`` weights: one program per scan."""
    args = (weights, h0, xs)

    def run(*a):
        return _run_toy(scan, *a)

    return (run(*args), jax.grad(run, argnums=(0, 1, 2))(*args),
            jax.jvp(run, args, tangents)[1],
            jax.vmap(jax.grad(run), (0, None, None))(batch, h0, xs))


_plain_toy = jax.jit(functools.partial(_toy_derivatives, jax.lax.scan))
"""The plain scan's derivatives: compiled once for every segment length (same shapes)."""


@pytest.mark.parametrize("length", [1, 4, 7, 30, 64])
def test_segments_give_the_plain_scans_values_and_derivatives(length):
    """31 steps (a prime) asked in segments of 1, 4 (8 of them, one step of padding), 7 (5,
    four steps of padding), and 30 or 64 (one segment of 31 steps)."""
    with jax.enable_x64():
        rng = np.random.default_rng(length)
        weights, h0 = (jnp.asarray(rng.normal(size=5)) for _ in range(2))
        xs = jnp.asarray(rng.normal(size=(31, 5)))

        def segmented(step, carry, xs):
            return scan_in_segments(step, carry, xs, _keep_named, length)

        args = (weights, h0, xs)
        tangents = tuple(jnp.asarray(rng.normal(size=a.shape)) for a in args)
        batch = jnp.stack([weights, 0.5 * weights])
        ours = jax.jit(functools.partial(_toy_derivatives, segmented))(*args, tangents, batch)
        plain = _plain_toy(*args, tangents, batch)
        assert float(ours[0]) == float(plain[0])
        for got, want in zip(ours[1], plain[1], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ours[2], plain[2], rtol=1e-12)
        np.testing.assert_allclose(ours[3], plain[3], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("steps", "target", "length", "padding"),
                         [(10_000, 16, 16, 0), (100, 16, 20, 0), (203, 16, 29, 0), (31, 4, 4, 1),
                          (31, 7, 7, 4), (9973, 16, 16, 11), (12, 16, 12, 0)])
def test_segment_lengths_divide_the_steps_or_pad_less_than_one_step_per_segment(
        steps, target, length, padding):
    chosen = _even_length(steps, target)
    assert chosen == length and -(-steps // chosen) * chosen - steps == padding


def test_segments_keep_only_what_the_policy_selects():
    """2,000 steps of a 4,096-vector: the plain scan's gradient keeps several vectors per step,
    segments of 16 keep the one named ``kept`` (and each segment's first carry)."""
    weights, h0 = jnp.full(4096, 0.5), jnp.zeros(4096)
    xs = jnp.ones((2000, 4096))

    def temp_bytes(scan):
        compiled = jax.jit(jax.grad(lambda w: _run_toy(scan, w, h0, xs))).lower(weights).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    segmented = temp_bytes(lambda step, carry, xs: scan_in_segments(step, carry, xs,
                                                                    _keep_named, 16))
    per_step = 2000 * 4096 * 4
    assert segmented < 1.3 * per_step < temp_bytes(jax.lax.scan)


class _Cell:
    """A soma with hh, a dendrite with synapses and a clamp (test_long_runs' cell)."""

    dt, steps = 0.05, 211  # a prime: in segments of 16 steps, the last one is padded

    def __init__(self):
        base = Cell.from_parents([-1, 0, 1, 2], [20.0, 30.0, 30.0, 30.0], [8.0, 1.0, 1.0, 1.0],
                                 kind=[1, 3, 3, 3])
        self.cell = base.insert(hh, types=1).insert(pas, types=3).insert(
            expsyn, compartments=[3, 2])
        self.params = {**self.cell.params(), **HH_LEAK,
                       "weight_expsyn": jnp.asarray([0.01, 0.004]),
                       "tau_expsyn": 1.0}
        t_max = self.dt * self.steps
        self.current = step_current(0.6, 0.5, 3.0, self.dt, t_max) + step_current(
            1.0, 6.0, 2.0, self.dt, t_max)

    def run(self, params, current, every, checkpoint):
        out = simulate(self.cell, params, [Stimulus(0, current)], self.dt,
                       self.dt * self.steps, states={"v": [0, 3], "m": [0], "i_clamp": [0],
                                                     "g_expsyn": [0]},
                       spikes={"expsyn": [[0.3, 1.0, 4.97, 7.5], [2.525, 9.9]]},
                       clamps=[VoltageClamp(1, [-65.0, -60.0], [5.0, 2.5], rs=50.0)],
                       detect=[0, 3], threshold=-20.0, max_spikes=8, every=every,
                       remat=checkpoint, progress=False)
        weights = jnp.linspace(0.5, 1.5, out["v"].shape[0])[:, None]
        loss = (jnp.mean(weights * out["v"]) + jnp.mean(out["m"]) + jnp.mean(out["i_clamp"])
                + jnp.mean(out["final"]["v"]))
        return loss, out


@pytest.fixture(scope="module")
def cell():
    with jax.enable_x64():
        return _Cell()


class _Programs:
    """The value and gradient (parameters and stimulus) of ``cell.run``, compiled once per
    distinct program: ``get`` lowers the run once per set of options and compiles only HLO
    not seen before in this module, so the tests below share their compiled programs."""

    def __init__(self, cell: _Cell):
        self.cell, self.hlo, self.compiled = cell, {}, {}

    def get(self, every: int, checkpoint, keep: int = _time.KEEP_STATES_BYTES):
        """``(hlo, compiled)`` for recording ``every`` steps with ``remat=checkpoint``,
        traced with ``_time.KEEP_STATES_BYTES = keep`` (on the first request of these
        options: a test that watches the tracing asks for options no test asked before)."""
        key = (every, checkpoint, keep)
        if key not in self.hlo:
            run = jax.value_and_grad(self.cell.run, argnums=(0, 1), has_aux=True)
            with jax.enable_x64(), pytest.MonkeyPatch.context() as patch:
                patch.setattr(_time, "KEEP_STATES_BYTES", keep)
                lowered = jax.jit(run, static_argnums=(2, 3)).lower(
                    self.cell.params, self.cell.current, every, checkpoint)
            self.hlo[key] = hlo = lowered.as_text()
            if hlo not in self.compiled:
                self.compiled[hlo] = lowered.compile()
        hlo = self.hlo[key]
        return hlo, self.compiled[hlo]

    def value_and_grad(self, every: int, checkpoint, keep: int = _time.KEEP_STATES_BYTES):
        with jax.enable_x64():
            return self.get(every, checkpoint, keep)[1](self.cell.params, self.cell.current)


@pytest.fixture(scope="module")
def programs(cell):
    return _Programs(cell)


SEGMENTS = 0
"""``KEEP_STATES_BYTES`` for ``remat=None`` in segments even on this small cell (whose every
step's state fits the default budget)."""


def test_default_keeps_every_state_below_the_budget_and_segments_above(cell, programs,
                                                                         monkeypatch):
    """Below ``KEEP_STATES_BYTES`` the default's gradient is ``remat=(T,)``'s program (the
    same HLO, so the same temp memory), one byte under the run's kept states it is in
    segments (less), as it always is with ``remat="segments"``."""
    seen = []
    measure = _time.kept_state_bytes
    monkeypatch.setattr(_time, "kept_state_bytes", lambda *a: seen.append(measure(*a))
                        or seen[-1])

    def temp_bytes(program):
        return program[1].memory_analysis().temp_size_in_bytes

    whole = programs.get(1, (cell.steps,))
    default = programs.get(1, None)
    assert default[0] == whole[0]
    assert temp_bytes(default) == temp_bytes(whole)
    assert 0 < seen[-1] <= _time.KEEP_STATES_BYTES
    below = programs.get(1, None, seen[-1] - 1)
    assert below[0] != whole[0] and temp_bytes(below) < temp_bytes(whole)
    segments = programs.get(1, "segments")  # segments whatever the size
    assert temp_bytes(segments) < temp_bytes(whole)


@pytest.mark.parametrize("every", [1, 3, 2 * _program.SEGMENT_STEPS + 1])
def test_default_gradient_equals_jaxs_gradient_of_the_plain_loop(cell, programs, every):
    """211 steps recorded every 1 (14 segments of 16 steps, 13 padding steps), 3 (70 blocks
    in segments of 5, 1 step left over) and 33 (longer than a segment): values, spikes and the
    gradient of every parameter as with ``remat=(blocks,)``, JAX's gradient of the
    unsegmented loop with each step's solve kept."""
    blocks = cell.steps // every
    with jax.enable_x64():  # the checks below read float64 values
        (_, ours), grads = programs.value_and_grad(every, None, SEGMENTS)
        (_, plain), plain_grads = programs.value_and_grad(every, (blocks,))
        for name in ("v", "m", "i_clamp", "g_expsyn", "spikes", "spike_count"):
            np.testing.assert_allclose(ours[name], plain[name], rtol=1e-13, atol=1e-12,
                                       err_msg=name)
        assert int(ours["spike_count"][0]) >= 1  # the gradient goes through a spike
        for got, want in zip(jax.tree.leaves_with_path(grads), jax.tree.leaves(plain_grads),
                             strict=True):
            path, got = got
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-13,
                                       err_msg=jax.tree_util.keystr(path))
        assert float(jnp.abs(grads[0]["gnabar_hh"])) > 0 and float(jnp.abs(grads[1]).max()) > 0


def test_forward_mode_through_the_default_loop(cell, programs, monkeypatch):
    """``jax.jvp`` of a run (forward mode, which a custom VJP would refuse) equals the plain
    loop's, and the directional derivative its gradient's projection."""
    monkeypatch.setattr(_time, "KEEP_STATES_BYTES", SEGMENTS)
    with jax.enable_x64():
        direction = {name: 0.01 * jnp.ones_like(jnp.asarray(value))
                     for name, value in cell.params.items()}

        def loss(params, checkpoint):
            return cell.run(params, cell.current, 1, checkpoint)[0]

        @jax.jit
        def both(params, direction):
            return (jax.jvp(lambda p: loss(p, None), (params,), (direction,))[1],
                    jax.jvp(lambda p: loss(p, (cell.steps,)), (params,), (direction,))[1])

        ours, plain = both(cell.params, direction)
        grads = programs.value_and_grad(1, None, SEGMENTS)[1][0]
        projected = sum(jnp.sum(grads[name] * direction[name]) for name in grads)
        np.testing.assert_allclose(ours, plain, rtol=1e-10)
        np.testing.assert_allclose(ours, projected, rtol=1e-10)
