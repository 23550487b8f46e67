"""A sharded network's synapses, as one device's time loop runs them (:mod:`.sharded`).

Each device holds its cells and the connections *into* them (padded to one count per
device). A connection's presynaptic compartment may be on another device:

* :class:`GradedAcross` (graded synapses): the conductance follows the presynaptic voltage
  at every step, so every step gathers the voltages of the sources (the compartments some
  connection starts at: a few per cell, never a cell's whole state) from every device
  (``all_gather`` over the mesh axis).
* :class:`SpikesAcross` (``NetCon`` s): NEURON's ``ParallelContext`` scheme. Each device
  checks its own sources' thresholds every step and keeps the crossings of the last ``M``
  steps (``M``: the shortest delay in whole steps); every ``M`` steps (and only then, a
  ``lax.cond``) the devices exchange those blocks of spikes (one ``all_gather``) and each
  puts the events of its incoming connections in their ring buffers. An event is never due
  before the exchange that carries it (its delay is at least ``M`` steps), so the run is the
  single-device run: the same steps of delivery, NEURON's float64 times included
  (:mod:`._event_clock`, here from a table of NEURON's times instead of a ring).

Both are ``couplings`` of :class:`~jaxlean.models.neuron.simulation._program.Plan`: ``pre``
the device's sources (the same local compartments on every device), the postsynaptic
compartments traced per device (:meth:`post_of`), ``params`` ``{"p": the synapse's own
values per incoming connection, "source": each one's source in the gathered vector,
"post": its local compartment, "real": 1, or 0 for a padding connection}``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.models.neuron.network._event_clock import MARGIN, _kept, rounded_offset
from jaxlean.models.neuron.network.graded import GradedSynapse
from jaxlean.models.neuron.network.network_events import SpikingSynapse

__all__ = ["GradedAcross", "SpikesAcross"]


def _everyone(x: jax.Array, axis: str) -> jax.Array:
    """``x`` of every device along ``axis``, devices' blocks in order (axis 0)."""
    return jax.lax.all_gather(x, axis, axis=0, tiled=True)


@dataclasses.dataclass(frozen=True, eq=False)
class GradedAcross:
    """A graded synapse whose sources' voltages are gathered from every device each step."""

    inner: GradedSynapse
    axis: str

    @property
    def name(self) -> str:
        return self.inner.name

    def post_of(self, cp: dict) -> jax.Array:
        """Each incoming connection's local postsynaptic compartment."""
        return cp["post"]

    def _v(self, v_sources: jax.Array, cp: dict) -> jax.Array:
        return _everyone(v_sources, self.axis)[cp["source"]]

    def rest(self, v_sources: jax.Array, cp: dict) -> dict:
        return self.inner.rest(self._v(v_sources, cp), cp["p"])

    def step(self, states: dict, v_sources: jax.Array, dt: float, cp: dict) -> dict:
        return self.inner.step(states, self._v(v_sources, cp), dt, cp["p"])

    def conductance(self, states: dict, cp: dict) -> tuple[jax.Array, jax.Array]:
        """The synapse's conductance (none from a padding connection) and reversal."""
        g, e = self.inner.conductance(states, cp["p"])
        return g * cp["real"], e


@dataclasses.dataclass(frozen=True, eq=False)
class SpikesAcross:
    """``NetCon`` s whose spikes cross devices once per ``every`` steps (module docstring).

    Attributes:
      inner: the spiking synapse, its ring buffer sized (:meth:`SpikingSynapse.for_run`).
      axis: the mesh axis of the cells.
      every: steps between exchanges, at most the shortest delay in whole steps.
      times: NEURON's times of steps ``0, 1, ...`` past the run's end plus the buffer
        (float64 runs), or ``None`` (float32: the rule on the delay alone).
    """

    inner: SpikingSynapse
    axis: str
    every: int
    times: np.ndarray | None

    @property
    def name(self) -> str:
        return self.inner.name

    def post_of(self, cp: dict) -> jax.Array:
        return cp["post"]

    def _offset(self, k: jax.Array, delay: jax.Array) -> jax.Array:
        """Steps after a spike at the end of step ``k`` to the step whose end delivers it
        (``k`` and ``delay`` broadcast together), as :func:`exact_offset` decides it."""
        dt = self.inner.dt
        if self.times is None or delay.dtype != jnp.float64:
            return rounded_offset(delay, dt)
        times = jnp.asarray(self.times, jnp.float64)
        last = times.shape[0] - 1
        event = _kept(times[jnp.minimum(k, last)] + MARGIN) + delay
        guess = jnp.ceil((delay + MARGIN) / dt - 0.5).astype(jnp.int32)

        def due(j):
            return event <= times[jnp.minimum(k + jnp.maximum(j, 0), last)] + 0.5 * dt

        return jnp.where(due(guess - 1), guess - 1, jnp.where(due(guess), guess, guess + 1))

    def _sent(self, queue: jax.Array, spikes: jax.Array, k: jax.Array,
              delay: jax.Array) -> jax.Array:
        """``queue`` with the events of ``spikes`` (``(rows, connections)``, at the ends of
        steps ``k``, ``(rows, 1)``) in the slots of the steps that deliver them."""
        slots = self.inner.slots
        offset = jnp.clip(self._offset(k, delay[None, :]), 0, slots - 1)
        slot = (k + offset) % slots
        rows = jnp.broadcast_to(jnp.arange(queue.shape[0])[None, :], slot.shape)
        return queue.at[rows, slot].add(spikes.astype(queue.dtype))

    def rest(self, v_sources: jax.Array, cp: dict) -> dict:
        """At rest: a source that starts above its threshold spikes at 0 (NEURON's rule), its
        events sent now (the one exchange outside the loop)."""
        p = cp["p"]
        own = self.inner._own(p)
        width = p["weight"].shape[0]
        dtype = v_sources.dtype
        start = self.inner.mechanism.initial(jnp.zeros(width, dtype), own)
        above = v_sources > cp["threshold"]
        spikes = _everyone(above, self.axis)[cp["source"]]
        delay = jax.lax.stop_gradient(jnp.broadcast_to(p["delay"], (width,))).astype(dtype)
        queue = self._sent(jnp.zeros((width, self.inner.slots), dtype), spikes[None, :],
                           jnp.zeros((1, 1), jnp.int32), delay)
        return {**start, "queue": queue, "k": jnp.zeros((), jnp.int32),
                "above": above.astype(dtype),
                "raster": jnp.zeros((self.every, v_sources.shape[0]), dtype)}

    def step(self, states: dict, v_sources: jax.Array, dt: float, cp: dict) -> dict:
        """A step's end: the synapses advance, the sources' crossings are kept, every
        ``every`` steps the kept blocks are exchanged and queued, and the events due now
        are added."""
        p = cp["p"]
        own = self.inner._own(p)
        width = p["weight"].shape[0]
        mechanism = self.inner.mechanism
        new = mechanism.step({s: states[s] for s in mechanism.states},
                             jnp.zeros(width, v_sources.dtype), dt, 1.0, own)
        k = states["k"] + 1
        above = v_sources > cp["threshold"]
        spike = above & (states["above"] == 0)
        raster = states["raster"].at[(k - 1) % self.every].set(spike.astype(v_sources.dtype))
        delay = jax.lax.stop_gradient(jnp.broadcast_to(p["delay"], (width,))).astype(
            v_sources.dtype)

        def exchange(queue):
            spikes = jax.lax.all_gather(raster, self.axis, axis=1, tiled=True)[:, cp["source"]]
            steps = k - self.every + 1 + jnp.arange(self.every, dtype=jnp.int32)[:, None]
            return self._sent(queue, spikes, steps, delay)

        queue = jax.lax.cond(k % self.every == 0, exchange, lambda q: q, states["queue"])
        due = k % self.inner.slots
        arrived = queue[:, due]
        queue = queue.at[:, due].set(0.0)
        for s, jump in mechanism.spike_increments(own).items():
            new[s] = new[s] + arrived * jump
        return {**new, "queue": queue, "k": k, "above": above.astype(v_sources.dtype),
                "raster": raster}

    def conductance(self, states: dict, cp: dict) -> tuple[jax.Array, jax.Array]:
        """The synapse's conductance (none from a padding connection) and reversal."""
        g, e = self.inner.conductance(states, cp["p"])
        return g * cp["real"], e
