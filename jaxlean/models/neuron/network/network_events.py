"""Spike-triggered connections: NEURON's ``NetCon`` into a point synapse, inside the scan.

A :class:`SpikingSynapse` wraps a point mechanism whose input spike adds to its states
(``on_spike``, a ``NET_RECEIVE`` that adds a weight:
:data:`~jaxlean.models.neuron.mechanisms.synapses.expsyn`,
:data:`~jaxlean.models.neuron.mechanisms.synapses.exp2syn`). Each connection has its own
instance of that mechanism at its postsynaptic compartment and three values of NEURON's
``NetCon``, each one per connection in ``params["synapses"][name]``:

* ``threshold`` (mV): a spike is an upward crossing at the presynaptic compartment: the
  voltage after a step is above ``threshold`` and the voltage NEURON last checked was not
  (NEURON's ``PreSyn`` flag, which starts down: a voltage that starts above ``threshold``
  is a spike at ``t = 0``). Its time is the end of that step, as NEURON's fixed step
  reports it (no interpolation; NEURON's recorded time adds its ``1e-10`` ms margin).
  Connections from one compartment share one threshold, as NEURON's ``NetCon`` s on one
  source share its ``PreSyn``: different ones are refused (``_presyn.py``).
* ``delay`` (ms, at least ``dt``): the event's time is the spike's plus ``delay``; it is
  delivered at the start of the first step ``[t, t + dt]`` with ``event <= t + dt/2``,
  NEURON's fixed-step rule, with NEURON's own times and arithmetic in float64: the spike at
  ``t + 1e-10`` and ``t`` accumulated by adding ``dt/2`` twice per step, so a delay of an odd
  number of half steps (1.2125 ms at dt 0.025) is delivered at the later step, as in NEURON
  (:mod:`~jaxlean.models.neuron.network._event_clock`; float32 runs apply the rule to the
  delay alone).
* ``weight`` (uS for the synapses here): what ``on_spike`` adds, as the ``NetCon``'s
  ``weight[0]``.

The events in flight live in the scan's carry, no host callback: each connection has a ring
buffer of ``slots`` steps, counting the events due at the start of each coming step.
``simulate_network`` sizes it from ``dt`` and the longest delay of ``params`` (checked:
every delay at least ``dt``, errors naming the connection); where the delays are traced
(``simulate_network`` inside ``jax.jit``), from the delays the network was built with, and
a traced delay shorter than ``dt`` or longer than the buffer holds is a runtime error
(``equinox.error_if``), never an event delivered at another step.

Gradients flow through ``weight`` and the mechanism's parameters into the conductance after
each delivery; spike times are comparisons, so ``threshold`` and ``delay`` (and the timing
of presynaptic spikes) get no gradient: a gradient is that of the synaptic conductances
with every spike kept at its step. Keep ``threshold`` and ``delay`` out of weight decay
(``optax.masked``), which would move them with a zero gradient.

Several ``NetCon`` s into one NEURON ``ExpSyn`` equal one instance per connection here, as
those synapses are linear in their states (the conductances add).
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.network._event_clock import (
    advance_clock,
    exact_offset,
    neuron_times,
    rounded_offset,
)

__all__ = ["NETCON_DEFAULTS", "SpikingSynapse", "spiking"]

NETCON_DEFAULTS = (("weight", 0.0, "uS"), ("delay", 1.0, "ms"), ("threshold", 10.0, "mV"))
"""NEURON's ``NetCon`` defaults: weight 0, delay 1 ms, threshold 10 mV."""


def _reads_voltage(m: Mechanism) -> bool:
    """Whether a step of ``m``'s states (its defaults, states off rest) depends on the voltage:
    a network synapse advances its states without the postsynaptic voltage."""
    with jax.ensure_compile_time_eval():
        probe = {k: jnp.asarray(v) for k, (v, _) in m.parameters.items()}
        start = {s: x + 0.5 for s, x in m.initial(jnp.zeros(1), probe).items()}
        at = {v: m.step(start, jnp.full(1, v), 0.1, 1.0, probe) for v in (-80.0, 0.0, 40.0)}
        return any(not bool(jnp.allclose(at[v][s], at[0.0][s])) for v in (-80.0, 40.0)
                   for s in start)


@dataclasses.dataclass(frozen=True)
class SpikingSynapse:
    """A point mechanism driven through ``NetCon`` s from presynaptic threshold crossings.

    Attributes:
      mechanism: a point mechanism with ``on_spike``, no ions, its currents ohmic and its
        kinetics independent of the voltage (as ``ExpSyn`` and ``Exp2Syn``).
      name: the key of its connections' parameters (default: the mechanism's name).
      weight_parameter: the mechanism's parameter that ``on_spike`` adds (default
        ``weight_<mechanism name>``); the connection's ``weight`` sets it.
      slots, dt: ring-buffer length in steps and the time step (ms); ``simulate_network``
        sets them (:meth:`for_run`).
    """

    mechanism: Mechanism
    name: str = ""
    weight_parameter: str = ""
    slots: int = 0
    dt: float = 0.0

    def __post_init__(self):
        m = self.mechanism
        if not isinstance(m, Mechanism) or not m.point or m.on_spike is None:
            raise ConfigError(f"SpikingSynapse(mechanism=...) must be a point Mechanism with "
                              f"on_spike (expsyn, exp2syn); got {getattr(m, 'name', m)!r}")
        if m.ions or m.voltage_dependent or m.q10 != 1.0 or len(m.currents) != 1:
            raise ConfigError(f"SpikingSynapse: mechanism {m.name!r} must have one ohmic "
                              f"current, no ions and no q10")
        object.__setattr__(self, "name", self.name or m.name)
        object.__setattr__(self, "weight_parameter", self.weight_parameter or f"weight_{m.name}")
        if self.weight_parameter not in m.parameters:
            raise ConfigError(f"SpikingSynapse: {m.name!r} has no parameter "
                              f"{self.weight_parameter!r} (its weight); give weight_parameter="
                              f"one of {sorted(m.parameters)}")
        if self.slots == 0 and _reads_voltage(m):
            raise ConfigError(f"SpikingSynapse: {m.name!r}'s kinetics depend on the voltage; "
                              f"a network synapse advances them without it")

    @property
    def parameters(self) -> tuple[tuple[str, float, str], ...]:
        """The ``NetCon``'s values, then the mechanism's (its weight parameter left out)."""
        own = tuple((k, float(v), unit) for k, (v, unit) in self.mechanism.parameters.items()
                    if k != self.weight_parameter)
        return NETCON_DEFAULTS + own

    @property
    def strength(self) -> str:
        """The parameter a weighted connectivity matrix sets: ``"weight"``."""
        return "weight"

    def defaults(self) -> dict[str, float]:
        """``{parameter: default}``."""
        return {name: value for name, value, _ in self.parameters}

    def _own(self, p: dict) -> dict:
        own = {k: p[k] for k in self.mechanism.parameters if k != self.weight_parameter}
        return {**own, self.weight_parameter: p["weight"]}

    def _mechanism_states(self, states: dict) -> dict:
        return {s: states[s] for s in self.mechanism.states}

    def rest(self, v_pre: jax.Array, p: dict) -> dict[str, jax.Array]:
        """No conductance; NEURON's first check, at ``t = 0``: a presynaptic voltage that
        starts above ``threshold`` is a spike at 0 (NEURON's flag starts down), its event in
        flight. In float64 the state carries NEURON's times of the coming steps (``clock``)."""
        start = self.mechanism.initial(v_pre, self._own(p))
        above = v_pre > jax.lax.stop_gradient(p["threshold"])
        zero = jnp.zeros((), jnp.int32)
        delay = jnp.broadcast_to(jax.lax.stop_gradient(p["delay"]), v_pre.shape)
        clock = {}
        if v_pre.dtype == jnp.float64:
            clock = {"clock": jnp.asarray(neuron_times(self.dt, self.slots), jnp.float64)}
        return {**start, "above": above.astype(v_pre.dtype),
                "queue": self._sent(jnp.zeros((v_pre.shape[0], self.slots), v_pre.dtype),
                                    above, zero, delay.astype(v_pre.dtype), clock),
                "k": zero, **clock}

    def _sent(self, queue: jax.Array, spike: jax.Array, k: jax.Array, delay: jax.Array,
              clock: dict) -> jax.Array:
        """``queue`` with the events of spikes at the end of step ``k`` in the slots of the
        steps they are delivered at (NEURON's times from ``clock`` when there is one)."""
        offset = (exact_offset(clock["clock"], k, delay, self.dt) if clock
                  else rounded_offset(delay, self.dt))
        slot = (k + jnp.clip(offset, 0, self.slots - 1)) % self.slots
        return queue.at[jnp.arange(queue.shape[0]), slot].add(spike.astype(queue.dtype))

    def for_run(self, dt: float, delays, describe) -> SpikingSynapse:
        """This synapse with a ring buffer long enough for ``delays`` (concrete, one per
        connection) at ``dt``; ``describe(i)`` names connection ``i`` in errors."""
        values = np.asarray(delays, dtype=float).reshape(-1)
        for i, d in enumerate(values):
            if not d >= dt * (1.0 - 1e-9):
                raise ConfigError(f"{describe(i)}: delay {d:.6g} ms is shorter than dt ({dt} ms); "
                                  f"a spike-triggered connection needs delay >= dt")
        longest = float(values.max()) if values.size else dt
        return dataclasses.replace(self, slots=int(np.ceil(longest / dt)) + 2, dt=float(dt))

    def checked_delays(self, delay: jax.Array) -> jax.Array:
        """``delay`` (traced, so not checkable when the run is built) with a runtime check:
        every value at least ``dt`` and at most what the ring buffer holds, else an error
        (``equinox.error_if``) instead of an event delivered at the wrong step."""
        longest = (self.slots - 2) * self.dt
        bad = jnp.any(delay < self.dt * (1.0 - 1e-9)) | jnp.any(delay > longest * (1.0 + 1e-9))
        return eqx.error_if(delay, bad, (
            f"spiking synapse {self.name!r}: a delay is shorter than dt ({self.dt} ms) or "
            f"longer than {longest:.6g} ms, the longest its event buffer holds (sized from "
            f"the delays the network was built with); build the network with the longest "
            f"delay the run will use"))

    def step(self, states: dict, v_pre: jax.Array, dt: float, p: dict) -> dict[str, jax.Array]:
        """A step's end: the mechanism advances, a crossing sends an event into the ring
        buffer, and the events due at the next step's start are added (its conductance)."""
        own = self._own(p)
        new = self.mechanism.step(self._mechanism_states(states), v_pre, dt, 1.0, own)
        threshold = jax.lax.stop_gradient(p["threshold"])
        delay = jax.lax.stop_gradient(p["delay"])
        k = states["k"] + 1                         # the step this one ends at
        clock = ({"clock": advance_clock(states["clock"], k, self.dt)} if "clock" in states
                 else {})
        above = v_pre > threshold
        spike = above & (states["above"] == 0)
        queue = self._sent(states["queue"], spike, k,
                           jnp.broadcast_to(delay, v_pre.shape).astype(v_pre.dtype), clock)
        due = k % self.slots
        arrived = queue[:, due]
        queue = queue.at[:, due].set(0.0)
        for s, jump in self.mechanism.spike_increments(own).items():
            new[s] = new[s] + arrived * jump
        return {**new, "above": above.astype(v_pre.dtype), "queue": queue, "k": k, **clock}

    def conductance(self, states: dict, p: dict) -> tuple[jax.Array, jax.Array]:
        """Conductance (uS) and reversal (mV) of each connection's synapse."""
        ((g, e),) = self.mechanism.conductances(self._mechanism_states(states),
                                                self._own(p)).values()
        return g, e


def spiking(mechanism: Mechanism, name: str = "") -> SpikingSynapse:
    """:class:`SpikingSynapse` of ``mechanism`` (``spiking(expsyn)``)."""
    return SpikingSynapse(mechanism, name)
