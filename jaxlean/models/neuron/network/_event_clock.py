"""When a ``NetCon``'s event is delivered: NEURON's fixed-step event queue, step by step.

NEURON (``fadvance.cpp``, ``netcvode.cpp``) at the start of each fixed step, with ``t`` the
end of the step before: checks every threshold (a crossing is a spike at ``t + 1e-10``, the
time its ``NetCon.record`` keeps), queues each connection's event at ``spike + delay``, then
delivers every queued event with ``event <= t + dt/2``. Its ``t`` is not ``k dt``: each step
adds ``dt/2`` twice, in float64. So an event delivered at the start of step ``k + j`` after a
spike at the end of step ``k`` has the first ``j`` with

    ``(T[k] + 1e-10) + delay <= T[k + j] + dt/2``,   ``T[0] = 0``, ``T[m+1] = (T[m] + dt/2) + dt/2``

in float64, the very operations NEURON does. A delay of an odd number of half steps
(1.2125 ms at dt 0.025) is therefore delivered at the later step (the 1e-10 tips it), and a
long delay late in a run can be decided by NEURON's own round-off, differently from spike to
spike: :func:`exact_offset` reproduces both, reading ``T`` from a ring of the coming steps'
times carried in the run (:func:`neuron_times`, :func:`advance_clock`).

In float32 (``jax_enable_x64`` off) neither the times nor the delay are NEURON's float64
values; :func:`rounded_offset` then applies NEURON's rule to the delay alone, ``j`` the first
with ``delay + 1e-10 <= (j + 1/2) dt``, a delay within float32 round-off of a half step taken
as exactly it (the later step).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["MARGIN", "advance_clock", "exact_offset", "neuron_times", "rounded_offset"]

MARGIN = 1e-10
"""ms NEURON adds to a threshold crossing's time (``check_thresh``'s ``teps``)."""


def neuron_times(dt: float, count: int) -> np.ndarray:
    """NEURON's ``t`` (float64) at the ends of steps ``0 .. count - 1`` of a fixed-step run
    from ``t = 0``: ``dt/2`` added twice per step."""
    half, t = 0.5 * float(dt), 0.0
    out = np.empty(count)
    for m in range(count):
        out[m] = t
        t = (t + half) + half
    return out


def _kept(x: jax.Array) -> jax.Array:
    """``x`` as computed: XLA would otherwise fold ``(t + a) + b`` with constants ``a, b`` into
    ``t + (a + b)``, which rounds differently from NEURON's two additions."""
    return jax.lax.optimization_barrier(x)


def advance_clock(clock: jax.Array, k: jax.Array, dt: float) -> jax.Array:
    """The ring ``clock[m % L] = T[m]`` for ``m`` in ``[k - 1, k - 1 + L)`` moved on one step,
    to ``[k, k + L)``: the slot of ``T[k - 1]`` takes ``T[k - 1 + L]``."""
    size = clock.shape[-1]
    half = 0.5 * dt
    last = clock[(k + size - 2) % size]
    return clock.at[(k - 1) % size].set(_kept(last + half) + half)


def exact_offset(clock: jax.Array, k: jax.Array, delay: jax.Array, dt: float) -> jax.Array:
    """Steps after a spike at the end of step ``k`` at whose start its event is delivered, as
    NEURON's float64 queue decides it (module docstring); ``clock`` holds ``T[k .. k + L)``,
    ``L`` at least the offset plus 2 (an int32 per connection of ``delay``)."""
    size = clock.shape[-1]
    half = 0.5 * dt
    event = _kept(clock[k % size] + MARGIN) + delay
    guess = jnp.ceil((delay + MARGIN) / dt - 0.5).astype(jnp.int32)

    def due(j):
        return event <= clock[(k + jnp.maximum(j, 0)) % size] + half

    return jnp.where(due(guess - 1), guess - 1, jnp.where(due(guess), guess, guess + 1))


def rounded_offset(delay: jax.Array, dt: float) -> jax.Array:
    """NEURON's rule on the delay alone, for float32 runs: the first ``j`` with ``delay +
    1e-10 <= (j + 1/2) dt``, a delay within round-off of a half step taking the later one."""
    steps = delay / dt
    slack = 64 * jnp.finfo(jnp.result_type(delay)).eps * (1.0 + jnp.abs(steps))
    return jnp.floor(steps + 0.5 + jnp.maximum(slack, MARGIN / dt)).astype(jnp.int32)
