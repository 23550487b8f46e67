"""Membrane mechanisms as data: channels and synapses written as a few plain functions.

A :class:`Mechanism` is what a NEURON ``.mod`` file declares, restricted to what
backward Euler with ``cnexp`` needs:

* ``parameters``: ``{name: (default, unit)}``. Names are global, as in a
  parameter dict given to ``simulate``: use a suffix (``gbar_ka``) for a new
  mechanism. A name declared by two mechanisms is one parameter; both must
  declare the same default and unit (density mechanisms only). An ion's reversal
  is not a mechanism's parameter: a mechanism reads the ion's (``ek``, one per
  compartment, shared by every mechanism that reads it, as in NEURON) through
  ``ions`` (below).
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

Ions, general state equations and voltage-dependent currents (what ``.mod`` files
with ``USEION`` need, see :mod:`~jaxlean.models.neuron.mechanisms.ions`):

* ``ions``: :class:`~jaxlean.models.neuron.mechanisms.ions.UseIon` declarations, NEURON's
  ``USEION ca READ eca WRITE ica``. A current whose reversal is an ion's (``"eca"``)
  is carried by that ion and adds to its total ``ica``; so does a current function
  given with the ion's current as its "reversal" (``(current, "ica")``). The ion
  variables read (``eca``, ``cai``, ``ica``, ...) are entries of the states mapping
  every function of the mechanism receives.
* ``dstate(v, s, p) -> {state: (a, b)}``: each state obeys ``x' = a + b x``
  (``b`` constant over the step, ``a`` and ``b`` may read the states, read ion
  variables and ``s["celsius"]``), advanced as NEURON's ``cnexp`` does
  (``x + (1 - exp(b dt)) (-a / b - x)``, exact for a linear equation; ``b = 0``,
  a Python zero: ``x + a dt``). This covers gates (``a = inf / tau``,
  ``b = -1 / tau``) and calcium shells, whose state is the ion's concentration
  (``states=("cai",)``, written: ``UseIon("ca", read=("ica",), write=("cai",))``).
  States start at ``init(v, s, p)`` if given, else at ``-a / b``; a concentration
  at the ion's ``cai0``.
* ``voltage_dependent=True``: the currents read ``s["v"]`` (an NMDA Mg block) and
  ``s["celsius"]``, and a current may be a function (``(current, None)``, or
  ``(current, "ica")`` carried by an ion, e.g. ``P m**2 ghk(v, cai, cao, 2, celsius)``).
  The membrane is then linearised as NEURON does for every current: the slope
  ``(i(v + 0.001) - i(v)) / 0.001``.

Every step, in NEURON's order: currents at the start of the step (reversals from
the concentrations then), the voltage solve, then each mechanism's states at the
new voltage in insertion order (a concentration written by one mechanism is read
by the mechanisms after it in that order, as NEURON's mechanism order does).
Ion currents are not available to point mechanisms.

The definitions of ``hh``, ``pas`` (:mod:`~jaxlean.models.neuron.mechanisms.channels`),
``expsyn`` and ``exp2syn`` (:mod:`~jaxlean.models.neuron.mechanisms.synapses`) are
examples; an A-type K channel (q10 3 at 22 degC) is::

    def ka_gates(v, p):
        tau = 1 / (jnp.exp((v + 46) / 5) + jnp.exp(-(v + 238) / 37.5))
        return {"a_ka": (1 / (1 + jnp.exp(-(v + 60) / 8.5)), 0.37 + tau),
                "b_ka": (1 / (1 + jnp.exp((v + 78) / 6)), 19 + tau)}

    ka = Mechanism("ka", parameters={"gbar_ka": (0.01, "S/cm2")},
                   states=("a_ka", "b_ka"), steady=ka_gates, q10=3.0, q10_celsius=22.0,
                   ions=(UseIon("k", read=("ek",), write=("ik",)),),
                   currents={"i_ka": (lambda s, p: p["gbar_ka"] * s["a_ka"]**3 * s["b_ka"],
                                      "ek")})

Insert it with :meth:`Cell.insert <jaxlean.models.neuron.cell.cell.Cell.insert>`.
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
from jaxlean.models.neuron.mechanisms.ions import UseIon, variables

__all__ = ["Insertion", "Mechanism", "ion_parameters", "parameter_table"]

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
      ions: ``USEION`` declarations (:class:`~jaxlean.models.neuron.mechanisms.ions.UseIon`).
      dstate: ``(v, states, params) -> {state: (a, b)}`` for ``x' = a + b x`` (instead of
        rates or steady).
      init: optional ``(v, states, params) -> {state: value}``: initial values.
      voltage_dependent: the currents read ``states["v"]``; linearised as NEURON does.
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
    ions: tuple[UseIon, ...] = ()
    dstate: Callable | None = None
    init: Callable | None = None
    voltage_dependent: bool = False

    def __post_init__(self):
        where = f"mechanism {self.name!r}"
        object.__setattr__(self, "states", as_names(self.states, f"{where}: states"))
        if not self.name.isidentifier():
            raise ConfigError(f"{where}: name must be an identifier")
        if self.states and sum(f is not None for f in (self.rates, self.steady,
                                                        self.dstate)) != 1:
            raise ConfigError(f"{where}: give exactly one of rates (alpha, beta), steady "
                              f"(inf, tau) or dstate (a, b) for its states {list(self.states)}")
        _check_ions(self, where)
        if not self.currents and not self.ion_writes() and not self.states:
            raise ConfigError(f"{where}: declares no current, and no state")
        for current, (_, reversal) in self.currents.items():
            carried = self.ion_of(reversal)
            if carried is not None and variables(carried)["current"] not in self.ion_writes():
                raise ConfigError(f"{where}: current {current!r} is carried by {carried!r} "
                                  f"(reversal {reversal!r}); declare UseIon({carried!r}, "
                                  f"write=('i{carried}',))")
            if reversal is None or reversal in self.ion_currents():
                if not self.voltage_dependent:
                    raise ConfigError(f"{where}: current {current!r} is given as a function "
                                      f"of the voltage (reversal {reversal!r}); set "
                                      f"voltage_dependent=True")
            elif reversal not in self.parameters and reversal not in self.ion_reads():
                raise ConfigError(f"{where}: current {current!r} uses reversal {reversal!r}, "
                                  f"which is not one of its parameters {list(self.parameters)}"
                                  f" nor an ion reversal it reads")
        if self.ions and self.point:
            raise ConfigError(f"{where}: ions are not supported in point mechanisms")
        if self.on_spike is not None and not self.point:
            raise ConfigError(f"{where}: on_spike needs point=True (a synapse)")
        if len(set(self.states)) != len(self.states):
            raise ConfigError(f"{where}: repeated state names {list(self.states)}")

    def speed(self, celsius: Array) -> Array | float:
        """The factor of every rate at ``celsius``: ``q10 ** ((celsius - q10_celsius) / 10)``."""
        if self.q10 == 1.0:
            return 1.0
        return self.q10 ** ((celsius - self.q10_celsius) / 10.0)

    def ion_reads(self) -> tuple[str, ...]:
        """The ion variables this mechanism reads (``"eca"``, ``"cai"``, ...)."""
        return tuple(name for use in self.ions for name in use.read)

    def ion_writes(self) -> tuple[str, ...]:
        """The ion variables this mechanism writes (``"ica"``, ``"cai"``, ...)."""
        return tuple(name for use in self.ions for name in use.write)

    def ion_currents(self) -> tuple[str, ...]:
        """The ion currents it writes (``"ica"``)."""
        return tuple(variables(use.ion)["current"] for use in self.ions
                     if variables(use.ion)["current"] in use.write)

    def ion_of(self, name: str | None) -> str | None:
        """The ion whose reversal or current ``name`` is, among the ions it uses."""
        for use in self.ions:
            names = variables(use.ion)
            if name in (names["e"], names["current"]):
                return use.ion
        return None

    def own_states(self) -> tuple[str, ...]:
        """Its states other than the ion concentrations it writes (those the ion keeps)."""
        written = set(self.ion_writes())
        return tuple(s for s in self.states if s not in written)

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

    def _linear(self, v: Array, s: Values, p: Values) -> dict[str, tuple[Array, Array]]:
        """``dstate(v, s, p)``: ``{state: (a, b)}`` of ``x' = a + b x``."""
        with _reads(self, "dstate(v, states, params)", self._given(s)):
            raw = self.dstate(v, s, p)
        return dict(_checked(self, raw))

    def _given(self, s: Values) -> dict[str, object]:
        return {"states": list(s), "params": self.parameters}

    def initial(self, v: Array, p: Values, ions: Values | None = None) -> dict[str, Array]:
        """States at rest at ``v``: ``init(v, s, p)`` if given, else ``inf(v)`` (rates,
        steady) or ``-a / b`` (dstate); a written concentration keeps the ion's value
        (in ``ions``, the ion variables it reads or writes)."""
        ions = dict(ions or {})
        if self.init is not None:
            with _reads(self, "init(v, states, params)", self._given(ions)):
                raw = dict(self.init(v, ions, p))
            out = {s: raw[s] if s in raw else ions[s] for s in self.states}
        elif self.dstate is not None:
            linear = self._linear(v, {**ions, **{s: ions.get(s, 0.0) for s in self.states}},
                                  p)
            out = {s: ions[s] if s in ions else -a / b for s, (a, b) in linear.items()}
        else:
            out = {s: inf for s, (inf, _) in self._kinetics(v, p).items()}
        shape = jnp.shape(v)
        return {s: jnp.broadcast_to(jnp.asarray(x, jnp.result_type(v)), shape)
                for s, x in out.items()}

    def step(self, states: Values, v: Array, dt: float, speed: Array | float,
             p: Values) -> dict[str, Array]:
        """One exponential-Euler (``cnexp``) step of every state, the voltage held at ``v``;
        ``states`` holds the ion variables it reads and writes too (and ``"celsius"`` for
        ``dstate``)."""
        if not self.states:
            return {}
        if self.advance is not None:
            with _reads(self, "advance(states, v, dt, speed, params)",
                        {"states": self.states, "params": self.parameters}):
                return self.advance(states, v, dt, speed, p)
        if self.dstate is not None:
            out = {}
            for s, (a, b) in self._linear(v, states, p).items():
                if isinstance(b, int | float) and b == 0:
                    out[s] = states[s] + dt * speed * a
                else:
                    out[s] = states[s] + (1.0 - jnp.exp(dt * speed * b)) * (-a / b - states[s])
            return out
        return {s: inf + (states[s] - inf) * jnp.exp(-dt * speed * rate)
                for s, (inf, rate) in self._kinetics(v, p).items()}

    def conductances(self, states: Values, p: Values,
                     reversals: Values | None = None) -> dict[str, tuple[Array, Array]]:
        """``{current: (conductance, reversal)}`` of the present states; an ion reversal from
        ``reversals`` (``{"eca": ...}``), others from ``p``."""
        out = {}
        for name, (g, reversal) in self.currents.items():
            with _reads(self, f"the conductance of {name!r} (states, params)",
                        {"states": list(states) if self.ions else self.states,
                         "params": self.parameters}):
                e = (reversals or {}).get(reversal) if self.ion_of(reversal) else p[reversal]
                out[name] = (g(states, p), e)
        return out

    def currents_at(self, v: Array, states: Values, p: Values,
                    reversals: Values | None = None) -> dict[str, Array]:
        """``{current: i(v)}`` of a ``voltage_dependent`` mechanism: ohmic currents
        ``g(v) (v - e)``, function currents as given; ``states`` without ``"v"``."""
        out = {}
        view = {**states, "v": v}
        for name, (f, reversal) in self.currents.items():
            with _reads(self, f"the current {name!r} (states, params)",
                        {"states": list(view), "params": self.parameters}):
                value = f(view, p)
                if reversal is not None and reversal not in self.ion_currents():
                    e = (reversals or {}).get(reversal) if self.ion_of(reversal) else p[reversal]
                    value = value * (v - e)
            out[name] = value
        return out

    def currents_kept(self, v: Array, states: Values, p: Values) -> dict[str, Array]:
        """States a ``voltage_dependent`` mechanism's current code sets at ``v``, at the
        start of a step (an NMODL BREAKPOINT's ASSIGNED values, which NEURON keeps: see
        :mod:`~jaxlean.models.neuron.nmodl.generated`); none for a mechanism of functions."""
        return {}

    def spike_increments(self, p: Values) -> Mapping[str, Array]:
        """``on_spike(params)``: what one input spike adds to each state."""
        with _reads(self, "on_spike(params)", {"params": self.parameters}):
            return self.on_spike(p)


def _check_ions(mechanism: Mechanism, where: str) -> None:
    """Declared ions are :class:`UseIon`, each once; a state that is an ion variable is a
    concentration the mechanism writes; a written concentration is one of its states."""
    ions = [use.ion for use in mechanism.ions]
    if any(not isinstance(use, UseIon) for use in mechanism.ions):
        raise ConfigError(f"{where}: ions must be UseIon declarations; got {mechanism.ions!r}")
    if len(set(ions)) != len(ions):
        raise ConfigError(f"{where}: ion declared twice in {ions}")
    names = {v for ion in ions for v in variables(ion).values()}
    for state in mechanism.states:
        if state in names and state not in mechanism.ion_writes():
            raise ConfigError(f"{where}: state {state!r} is an ion variable it does not write")
    for use in mechanism.ions:
        for kind in ("i", "o"):
            written = variables(use.ion)[kind]
            if written in use.write and written not in mechanism.states:
                raise ConfigError(f"{where}: it writes {written!r}; list it in its states "
                                  f"(the concentration is a state of the mechanism)")
    taken = sorted(names & set(mechanism.currents))
    if taken:
        raise ConfigError(f"{where}: current names {taken} are ion variables; name its own "
                          f"currents otherwise (the ion's total is recorded by that name)")
    concentrations = [name for use in mechanism.ions for name in use.write
                      if name != variables(use.ion)["current"]]
    if mechanism.advance is not None and concentrations:
        raise ConfigError(f"{where}: advance cannot be combined with writing a concentration "
                          f"({concentrations}); it may read ion variables and write currents")


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
            hint = (" The temperature reaches rates, steady and a conductance only through its "
                    "q10 and q10_celsius; dstate and the currents of a voltage_dependent "
                    "mechanism read states['celsius'].")
        elif key == "v":
            hint = (" The voltage is an argument of rates or steady, not of a conductance: "
                    "the current is conductance * (v - reversal); a conductance that depends "
                    "on the voltage (a Mg block) needs voltage_dependent=True.")
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


def ion_parameters(mechanism: Mechanism) -> dict[str, tuple[float, str]]:
    """The ion parameters a mechanism's ``USEION`` brings: ``e<ion>`` (mV) if it reads the
    reversal, ``<ion>i0`` and ``<ion>o0`` (mM) if it reads or writes a concentration."""
    out = {}
    for use in mechanism.ions:
        names, species = variables(use.ion), use.species
        if names["e"] in use.read:
            out[names["e"]] = (species.reversal, "mV")
        if {names["i"], names["o"]} & set(use.variables):
            out[names["i"] + "0"] = (species.inside, "mM")
            out[names["o"] + "0"] = (species.outside, "mM")
    return out


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
        for name, (default, unit) in {**mechanism.parameters,
                                      **ion_parameters(mechanism)}.items():
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
