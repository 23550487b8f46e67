"""NEURON's fixed-step event queue (``_event_clock``): the step a ``NetCon``'s event is
delivered at, against a brute-force replay of NEURON's float64 arithmetic (its ``t`` adding
``dt/2`` twice per step, the spike at ``t + 1e-10``, delivery at ``event <= t + dt/2``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.models.neuron.network._event_clock import (
    advance_clock,
    exact_offset,
    neuron_times,
    rounded_offset,
)


def replayed(dt: float, k: int, delay: float) -> int:
    """NEURON's queue, one step at a time: the first ``j`` whose step start delivers the
    event of a spike at the end of step ``k``."""
    t, half = 0.0, 0.5 * dt
    for _ in range(k):
        t = (t + half) + half
    event = (t + 1e-10) + delay
    j = 0
    while not event <= t + half:
        t, j = (t + half) + half, j + 1
    return j


def ring(dt: float, k: int, size: int) -> np.ndarray:
    """``clock[m % size] = T[m]`` for ``m`` in ``[k, k + size)``."""
    times = neuron_times(dt, k + size)
    out = np.empty(size)
    out[np.arange(k, k + size) % size] = times[k:]
    return out


@pytest.mark.parametrize("dt", [0.025, 0.1])
def test_the_exact_offset_replays_neurons_queue(dt):
    rng = np.random.default_rng(0)
    half_steps = [(2 * n + 1) * dt / 2 for n in (2, 20, 48, 81)]
    delays = [*half_steps, 1.0, 2.0, 1.05, 1.01, 100.0125, *list(rng.uniform(dt, 30.0, 6))]
    size = int(np.ceil(max(delays) / dt)) + 2
    with jax.enable_x64():   # jitted, the delays constants XLA could fold
        offsets = jax.jit(lambda clock, k: exact_offset(clock, k, jnp.asarray(delays), dt))
        for k in [0, 1, 253, *list(rng.integers(0, 40000, 4))]:
            got = offsets(jnp.asarray(ring(dt, int(k), size)), jnp.asarray(int(k)))
            want = [replayed(dt, int(k), d) for d in delays]
            assert got.tolist() == want, (k, dt)


def test_half_steps_go_to_the_later_step_and_neurons_round_off_is_kept():
    dt = 0.025
    assert replayed(dt, 253, 1.2125) == 49 and replayed(0.1, 0, 1.05) == 11
    # 100.0125 ms late in a run: NEURON's own round-off decides, differently by spike
    spikes = list(range(17000, 19000, 97))   # NEURON: 4001 steps up to spike 18159, then 4000
    want = {replayed(dt, k, 100.0125) for k in spikes}
    assert want == {4000, 4001}
    size = 4003
    with jax.enable_x64():   # one program for every spike, not eager operations
        offset = jax.jit(exact_offset, static_argnums=3)
        got = {int(offset(ring(dt, k, size), np.asarray(k), np.asarray(100.0125), dt))
               for k in spikes}
    assert got == want


def test_the_clock_advanced_in_the_run_is_neurons_time():
    dt, size = 0.025, 7
    with jax.enable_x64():
        clock = jnp.asarray(neuron_times(dt, size))
        step = jax.jit(advance_clock, static_argnums=2)
        for k in range(1, 2000):
            clock = step(clock, jnp.asarray(k), dt)
        np.testing.assert_array_equal(np.asarray(clock), ring(dt, 1999, size))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_the_rounded_offset_is_neurons_rule_on_the_delay(dtype):
    """float32 runs: ``delay`` alone, a half step (within round-off) to the later step."""
    rng = np.random.default_rng(1)
    for dt in (0.025, 0.1):
        delays = [dt, 1.0, 2.0, 1.01, 1.013] + [(2 * n + 1) * dt / 2 for n in (1, 10, 48, 400)]
        delays += list(rng.uniform(dt, 50.0, 20))
        with jax.enable_x64(dtype == jnp.float64):
            got = rounded_offset(jnp.asarray(delays, dtype), dt).tolist()
        assert got == [replayed(dt, 0, d) for d in delays], dt
