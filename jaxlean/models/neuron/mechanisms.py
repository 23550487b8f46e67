"""Membrane mechanisms as data: channels and synapses written as a few plain functions.

A :class:`Mechanism` is what a NEURON ``.mod`` file declares, restricted to what
backward Euler with ``cnexp`` needs:

* ``parameters``: ``{name: (default, unit)}``. Names are global, as in a
  parameter dict given to ``simulate``: use a suffix (``gbar_ka``) for a new
  mechanism. A name declared by two mechanisms (``e_k`` of ``hh`` and of an
  A-type K channel) is one parameter, like NEURON's ion reversal ``ek``; both
  must declare the same default and unit (density mechanisms only).
* ``states``: gate or synapse variables, each obeying ``x' = (inf(v) - x) / tau(v)``,
  given as ``rates(v, p) -> {state: (alpha, beta)}`` (1/ms) or
  ``steady(v, p) -> {state: (inf, tau)}`` (tau in ms). Every rate is multiplied
  by ``q10 ** ((celsius - q10_celsius) / 10)``. A step is exponential Euler
  (NEURON's ``cnexp``), exact for the voltage at the end of the step; states
  start at ``inf(v_init)``.
* ``currents``: ``{name: (conductance(states, p), reversal parameter)}``: each an
  ohmic current ``g (v - e)``, ``g`` in S/cm2 (density) or uS (``point=True``).
* ``on_spike(p) -> {state: increment}`` (point mechanisms): what one input spike
  adds (``NET_RECEIVE``), e.g. the synaptic weight.

The definitions of ``hh``, ``pas`` (:mod:`~jaxlean.models.neuron.channels`),
``expsyn`` and ``exp2syn`` (:mod:`~jaxlean.models.neuron.synapses`) are
examples; an A-type K channel (q10 3 at 22 degC) is::

    def ka_gates(v, p):
        tau = 1 / (jnp.exp((v + 46) / 5) + jnp.exp(-(v + 238) / 37.5))
        return {"a_ka": (1 / (1 + jnp.exp(-(v + 60) / 8.5)), 0.37 + tau),
                "b_ka": (1 / (1 + jnp.exp((v + 78) / 6)), 19 + tau)}

    ka = Mechanism("ka", parameters={"gbar_ka": (0.01, "S/cm2"), "e_k": (-77.0, "mV")},
                   states=("a_ka", "b_ka"), steady=ka_gates, q10=3.0, q10_celsius=22.0,
                   currents={"i_ka": (lambda s, p: p["gbar_ka"] * s["a_ka"]**3 * s["b_ka"],
                                      "e_k")})

Insert it with :meth:`Cell.insert <jaxlean.models.neuron.cell.Cell.insert>`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean._args import as_names
from jaxlean.errors import ConfigError

__all__ = ["Insertion", "Mechanism", "parameter_table"]

Array = jax.Array
Values = Mapping[str, Array]
Kinetics = Callable[[Array, Values], Mapping[str, tuple[Array, Array]]]
Conductance = Callable[[Values, Values], Array]


@dataclasses.dataclass(frozen=True, eq=False)
class Mechanism:
    """A channel (density, per cm2 of membrane) or a point process (a synapse).

    Attributes:
      name: identifier, unique among the mechanisms of a cell.
      parameters: ``{name: (default, unit)}``; differentiable in ``simulate``.
      currents: ``{name: (conductance(states, params), reversal parameter name)}``.
      states: names of the state variables (unique among the cell's mechanisms).
      rates: ``(v, params) -> {state: (alpha, beta)}`` in 1/ms; or
      steady: ``(v, params) -> {state: (inf, tau)}``, tau in ms (give one of them).
      q10, q10_celsius: temperature factor of every rate.
      point: a point process (conductance in uS, one instance per listed compartment).
      on_spike: ``params -> {state: increment}`` of one input spike (point only).
      advance: optional exact replacement of the exponential-Euler step,
        ``(states, v, dt, speed, params) -> states`` (``hh`` uses it for its
        hand-written derivative).
    """

    name: str
    parameters: Mapping[str, tuple[float, str]]
    currents: Mapping[str, tuple[Conductance, str]]
    states: tuple[str, ...] = ()
    rates: Kinetics | None = None
    steady: Kinetics | None = None
    q10: float = 1.0
    q10_celsius: float = 6.3
    point: bool = False
    on_spike: Callable[[Values], Mapping[str, Array]] | None = None
    advance: Callable | None = None

    def __post_init__(self):
        where = f"mechanism {self.name!r}"
        object.__setattr__(self, "states", as_names(self.states, f"{where}: states"))
        if not self.name.isidentifier():
            raise ConfigError(f"{where}: name must be an identifier")
        if self.states and (self.rates is None) == (self.steady is None):
            raise ConfigError(f"{where}: give exactly one of rates (alpha, beta) or steady "
                              f"(inf, tau) for its states {list(self.states)}")
        if not self.currents:
            raise ConfigError(f"{where}: declares no current")
        for current, (_, reversal) in self.currents.items():
            if reversal not in self.parameters:
                raise ConfigError(f"{where}: current {current!r} uses reversal {reversal!r}, "
                                  f"which is not one of its parameters {list(self.parameters)}")
        if self.on_spike is not None and not self.point:
            raise ConfigError(f"{where}: on_spike needs point=True (a synapse)")
        if len(set(self.states)) != len(self.states):
            raise ConfigError(f"{where}: repeated state names {list(self.states)}")

    def speed(self, celsius: Array) -> Array | float:
        """The factor of every rate at ``celsius``: ``q10 ** ((celsius - q10_celsius) / 10)``."""
        if self.q10 == 1.0:
            return 1.0
        return self.q10 ** ((celsius - self.q10_celsius) / 10.0)

    def _kinetics(self, v: Array, p: Values) -> dict[str, tuple[Array, Array]]:
        """``{state: (inf, total rate)}`` at ``v``, before the temperature factor."""
        if not self.states:
            return {}
        if self.rates is not None:
            with _reads(self, "rates(v, params)", {"params": self.parameters}):
                raw = self.rates(v, p)
            out = {s: (a / (a + b), a + b) for s, (a, b) in _checked(self, raw).items()}
        else:
            with _reads(self, "steady(v, params)", {"params": self.parameters}):
                raw = self.steady(v, p)
            out = {s: (inf, 1.0 / tau) for s, (inf, tau) in _checked(self, raw).items()}
        dtype = jnp.result_type(v)
        return {s: tuple(jnp.broadcast_to(jnp.asarray(x).astype(dtype), jnp.shape(v))
                         for x in pair) for s, pair in out.items()}

    def initial(self, v: Array, p: Values) -> dict[str, Array]:
        """States at rest at ``v``: ``inf(v)``."""
        return {s: inf for s, (inf, _) in self._kinetics(v, p).items()}

    def step(self, states: Values, v: Array, dt: float, speed: Array | float,
             p: Values) -> dict[str, Array]:
        """One exponential-Euler step of every state, the voltage held at ``v``."""
        if not self.states:
            return {}
        if self.advance is not None:
            with _reads(self, "advance(states, v, dt, speed, params)",
                        {"states": self.states, "params": self.parameters}):
                return self.advance(states, v, dt, speed, p)
        return {s: inf + (states[s] - inf) * jnp.exp(-dt * speed * rate)
                for s, (inf, rate) in self._kinetics(v, p).items()}

    def conductances(self, states: Values, p: Values) -> dict[str, tuple[Array, Array]]:
        """``{current: (conductance, reversal)}`` of the present states."""
        out = {}
        for name, (g, reversal) in self.currents.items():
            with _reads(self, f"the conductance of {name!r} (states, params)",
                        {"states": self.states, "params": self.parameters}):
                out[name] = (g(states, p), p[reversal])
        return out

    def spike_increments(self, p: Values) -> Mapping[str, Array]:
        """``on_spike(params)``: what one input spike adds to each state."""
        with _reads(self, "on_spike(params)", {"params": self.parameters}):
            return self.on_spike(p)


@contextlib.contextmanager
def _reads(mechanism: Mechanism, what: str, given: Mapping[str, object]):
    """Turn a ``KeyError`` from a mechanism's own function into an error that names the
    mechanism, the function, the missing name and the names it may read."""
    try:
        yield
    except KeyError as error:
        key = error.args[0] if error.args else None
        accepted = "; ".join(f"{arg}: {sorted(names)}" for arg, names in given.items())
        hint = ""
        if key == "celsius":
            hint = (" The temperature reaches a mechanism only through its q10 and "
                    "q10_celsius; declare a parameter for any other use of it.")
        elif key == "v":
            hint = (" The voltage is an argument of rates or steady, not of a conductance: "
                    "the current is conductance * (v - reversal).")
        raise ConfigError(f"mechanism {mechanism.name!r}: {what} reads {key!r}, which it is "
                          f"not given; it may read {accepted}.{hint}") from None


def _checked(mechanism: Mechanism, kinetics: Mapping) -> Mapping:
    if set(kinetics) != set(mechanism.states):
        raise ConfigError(f"mechanism {mechanism.name!r}: its kinetics return states "
                          f"{sorted(kinetics)}, it declares {sorted(mechanism.states)}")
    return kinetics


@dataclasses.dataclass(frozen=True, eq=False)
class Insertion:
    """A mechanism on some compartments: every one for a density mechanism inserted
    everywhere (``compartments is None``), else the listed ones (one point-process
    instance per entry, in order)."""

    mechanism: Mechanism
    compartments: np.ndarray | None

    def size(self, n: int) -> int:
        """Number of compartments (density) or instances (point)."""
        return n if self.compartments is None else int(self.compartments.size)

    def gather(self, x: Array) -> Array:
        """``x`` (one value per compartment) at this insertion's compartments."""
        return x if self.compartments is None else x[self.compartments]


def parameter_table(insertions: tuple[Insertion, ...],
                    reserved: Mapping[str, str]) -> dict[str, tuple[float, str, Mechanism]]:
    """``{name: (default, unit, first mechanism declaring it)}`` over ``insertions``.

    Raises:
      ConfigError: a name declared twice with different defaults or units or by a
        point mechanism, or one of the ``reserved`` names
        (``{name: what}``) taken by a mechanism.
    """
    table: dict[str, tuple[float, str, Mechanism]] = {}
    for insertion in insertions:
        mechanism = insertion.mechanism
        for name, (default, unit) in mechanism.parameters.items():
            if name in reserved:
                raise ConfigError(f"mechanism {mechanism.name!r}: parameter {name!r} is the "
                                  f"{reserved[name]}; choose another name")
            if name in table:
                first_default, first_unit, first = table[name]
                if ((first_default, first_unit) != (float(default), unit)
                        or first.point or mechanism.point):
                    raise ConfigError(
                        f"parameter {name!r} is declared by {first.name!r} "
                        f"({first_default} {first_unit}) and by {mechanism.name!r} "
                        f"({default} {unit}); only density mechanisms may share a name, with "
                        f"the same default and unit")
                continue
            table[name] = (float(default), unit, mechanism)
    return table
