"""The JAX functions of a translated mechanism: kinetics, conductances, initial states,
spike increments, each running the file's own statements
(:class:`~jaxlean.models.neuron.nmodl.interpret.Interpreter` over JAX arrays)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism
from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.interpret import Interpreter, JaxBackend
from jaxlean.models.neuron.nmodl.model import Model
from jaxlean.models.neuron.nmodl.names import Naming

__all__ = ["Plan", "build", "check_initial"]


@dataclasses.dataclass(frozen=True)
class Plan:
    """What translation found: the pieces the mechanism's functions run."""

    model: Model
    naming: Naming
    derivative: s.Block | None
    method: str
    conductances: tuple[s.Statement, ...]  # BREAKPOINT with each current replaced by its g
    reversals: dict[str, str | None]  # current -> the Mechanism's reversal (see translate)
    unity: frozenset[int]  # ids of the temperature-factor nodes, evaluated as 1
    voltage_dependent: bool = False  # currents read v, celsius, or are not ohmic


def _coefficients(plan: Plan, v, p, given=None) -> dict[str, tuple[jax.Array, jax.Array]]:
    """``{jaxlean state: (a, b)}`` of ``x' = a + b x`` at ``v`` (``given``: the ion
    variables the file reads)."""
    model, naming = plan.model, plan.naming
    shape, dtype = jnp.shape(v), jnp.result_type(v)

    def derivatives(xs):
        out: dict[str, object] = {}
        names = naming.values(p, v, {**(given or {}), **xs})
        Interpreter(model, JaxBackend(plan.unity),
                    lambda state, value, line: out.__setitem__(state, value)
                    ).run_block(plan.derivative, names)
        return {naming.states[x]: jnp.broadcast_to(jnp.asarray(value, dtype), shape)
                for x, value in out.items()}

    zeros = {x: jnp.zeros(shape, dtype) for x in naming.states.values()}
    ones = {x: jnp.ones(shape, dtype) for x in naming.states.values()}
    a, b = jax.jvp(derivatives, (zeros,), (ones,))
    return {x: (a[x], b[x]) for x in a}


def _steady(plan: Plan):
    def steady(v, p):
        return {x: (-a / b, -1.0 / b) for x, (a, b) in _coefficients(plan, v, p).items()}
    return steady


def _dstate(plan: Plan):
    """``dstate(v, s, p)``: the coefficients with the ion variables read from ``s``."""
    def dstate(v, s, p):
        return _coefficients(plan, v, p, s)
    return dstate


def _backward_euler(plan: Plan):
    """``derivimplicit``: ``x_new = x + dt f(x_new)``, for ``f = a + b x``."""
    def advance(states, v, dt, speed, p):
        return {x: (states[x] + dt * speed * a) / (1.0 - dt * speed * b)
                for x, (a, b) in _coefficients(plan, v, p).items()}
    return advance


def _conductance(plan: Plan, current: str):
    model, naming = plan.model, plan.naming
    block = s.Block("BREAKPOINT", "BREAKPOINT", (), model.breakpoint.locals,
                    plan.conductances, model.breakpoint.line)

    def g(states, p):
        if plan.voltage_dependent:  # states holds "v" and "celsius" (currents_at)
            names = naming.values(p, states["v"], states, states.get("celsius", jnp.nan))
        else:
            names = naming.values(p, jnp.nan, states)
        Interpreter(model, JaxBackend(plan.unity)).run_block(block, names)
        return names[current]
    return g


def _initial(plan: Plan):
    model, naming = plan.model, plan.naming

    def initial(v, p, given=None):
        names = naming.values(p, v)
        names.update({x: given[x] for x in naming.ions.read if given and x in given})
        Interpreter(model, JaxBackend(plan.unity)).run_block(model.initial, names)
        return {jax_name: jnp.broadcast_to(names[x], jnp.shape(v))
                for x, jax_name in naming.states.items() if x in names}
    return initial


def _on_spike(plan: Plan):
    """``NET_RECEIVE(weight) { x = x + expr ... }`` as ``p -> {state: expr}``."""
    model, naming, block = plan.model, plan.naming, plan.model.net_receive
    increments = []
    for statement in block.body:
        value = statement.value if isinstance(statement, s.Assign) else None
        if not (isinstance(value, s.Binary) and value.op == "+"
                and statement.target in model.states
                and (_is_name(value.left, statement.target)
                     or _is_name(value.right, statement.target))):
            raise model.error(statement.line, "NET_RECEIVE supports only statements "
                              "state = state + increment")
        other = value.right if _is_name(value.left, statement.target) else value.left
        increments.append((statement.target, other))

    def on_spike(p):
        names = naming.values(p, jnp.nan)
        interpreter = Interpreter(model, JaxBackend(plan.unity))
        return {naming.states[x]: interpreter.eval(expr, {}, names) for x, expr in increments}
    return on_spike


def _is_name(expr: s.Expr, name: str) -> bool:
    return isinstance(expr, s.Name) and expr.id == name


def build(plan: Plan, q10: float, q10_celsius: float) -> Mechanism:
    """The :class:`Mechanism` of ``plan``, its INITIAL block checked against the steady
    state (:func:`check_initial`)."""
    model, naming = plan.model, plan.naming
    if model.net_receive is not None and not model.point:
        raise model.error(model.net_receive.line, "NET_RECEIVE in a density mechanism")
    if model.net_receive is not None and len(model.net_receive.args) != 1:
        raise model.error(model.net_receive.line, "NET_RECEIVE must take one argument, "
                          "the weight")
    states = tuple(naming.states.values())
    dynamic = naming.ions.dynamic
    init = None
    if dynamic and model.initial is not None:
        initial = _initial(plan)

        def init(v, s, p):
            return initial(v, p, s)
    mechanism = Mechanism(
        model.suffix, parameters=naming.mechanism_parameters(),
        currents={f"{current}_{model.suffix}": (_conductance(plan, current), reversal)
                  for current, reversal in plan.reversals.items()},
        states=states, steady=_steady(plan) if states and not dynamic else None,
        dstate=_dstate(plan) if states and dynamic else None, init=init, q10=q10,
        q10_celsius=q10_celsius, point=model.point,
        on_spike=_on_spike(plan) if model.net_receive is not None else None,
        advance=_backward_euler(plan) if plan.method == "derivimplicit" else None,
        ions=naming.ions.uses, voltage_dependent=plan.voltage_dependent)
    if states and not dynamic:
        check_initial(mechanism, _initial(plan), model)
    return mechanism


def check_initial(mechanism: Mechanism, initial, model: Model) -> None:
    """Raise if ``initial(v, p)`` (the INITIAL block) differs from the steady state at
    81 voltages in [-100, 60] mV with the default parameters (float64)."""
    with jax.enable_x64(True):
        v = jnp.linspace(-100.0, 60.0, 81)
        p = {k: jnp.asarray(d, jnp.float64) for k, (d, _) in mechanism.parameters.items()}
        steady, given = mechanism.initial(v, p), initial(v, p)
        for name in mechanism.states:
            a, b = np.asarray(given[name]), np.asarray(steady[name])
            bad = ~np.isclose(a, b, rtol=1e-9, atol=1e-12)
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise model.error(model.initial.line, f"INITIAL sets {name} to {float(a[k])!r} at "
                                  f"v = {float(v[k])} mV, not its steady state {float(b[k])!r}; "
                                  f"jaxlean starts states at steady state")
