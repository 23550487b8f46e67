"""NEURON's ``hh`` (``hh.mod``, its leak included) and ``pas``, as :class:`Mechanism` data.

Units are NEURON's: mV, ms, S/cm2, degC. Temperature scales every rate by
``q10 = 3 ** ((celsius - 6.3) / 10)``, as ``hh.mod`` does (steady states do not
change, time constants shrink). Gates advance by exponential Euler, which is
exact for a fixed voltage over the step and stable for any ``dt``. The step has
a hand-written derivative (see :func:`advance`) because reverse-mode autodiff
through the rate expressions dominated the cost of a cable gradient.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxlean.models.neuron.mechanisms.ions import UseIon
from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism

__all__ = ["GATES", "advance", "hh", "pas", "rates", "steady_state"]

GATES = ("m", "h", "n")
_SERIES_BELOW = 0.05


def _vtrap_and_slope(x: jax.Array, y: float) -> tuple[jax.Array, jax.Array]:
    """``x / (exp(x / y) - 1)`` and its derivative in ``x``, sharing one ``expm1``.

    The value takes its limit ``y (1 - u / 2)`` for ``|u| < 1e-6`` (``u = x / y``),
    the slope ``(1 - u - q) / expm1(u)`` (``q = u / expm1(u)``) a Taylor series
    for ``|u| < 0.05``, where the formula would cancel. Both are grad-safe.
    """
    u = x / y
    small = jnp.abs(u) < 1e-6
    safe = jnp.where(small, 1.0, u)
    inverse = 1.0 / jnp.expm1(safe)
    q = safe * inverse
    value = y * jnp.where(small, 1.0 - u / 2.0, q)
    slope = jnp.where(jnp.abs(u) < _SERIES_BELOW, -0.5 + u / 6.0 - u**3 / 180.0,
                      (1.0 - safe - q) * inverse)
    return value, slope


def _rates_and_slopes(v: jax.Array) -> dict[str, tuple[jax.Array, jax.Array, jax.Array,
                                                        jax.Array]]:
    """``(alpha, beta, d alpha / dv, d beta / dv)`` of each gate at ``v`` (mV); the slopes
    are dead code (removed by XLA) where only the rates are used."""
    m_alpha, m_slope = _vtrap_and_slope(-(v + 40.0), 10.0)
    n_alpha, n_slope = _vtrap_and_slope(-(v + 55.0), 10.0)
    m_beta = 4.0 * jnp.exp(-(v + 65.0) / 18.0)
    h_alpha = 0.07 * jnp.exp(-(v + 65.0) / 20.0)
    h_beta = 1.0 / (jnp.exp(-(v + 35.0) / 10.0) + 1.0)
    n_beta = 0.125 * jnp.exp(-(v + 65.0) / 80.0)
    return {
        "m": (0.1 * m_alpha, m_beta, -0.1 * m_slope, -m_beta / 18.0),
        "h": (h_alpha, h_beta, -h_alpha / 20.0, h_beta * (1.0 - h_beta) / 10.0),
        "n": (0.01 * n_alpha, n_beta, -0.01 * n_slope, -n_beta / 80.0),
    }


def rates(v: jax.Array) -> dict[str, tuple[jax.Array, jax.Array]]:
    """Opening and closing rates (1/ms) of each gate at membrane voltage ``v`` (mV)."""
    return {gate: (a, b) for gate, (a, b, _, _) in _rates_and_slopes(v).items()}


def steady_state(v: jax.Array) -> dict[str, jax.Array]:
    """Gate values at rest at voltage ``v``: ``alpha / (alpha + beta)``."""
    return {gate: a / (a + b) for gate, (a, b) in rates(v).items()}


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def advance(gates: dict[str, jax.Array], v: jax.Array, dt: float,
            speed: jax.Array = 1.0) -> dict[str, jax.Array]:
    """One exponential-Euler step of every gate with the voltage held at ``v``.

    ``speed`` multiplies every rate (the temperature factor, :meth:`Mechanism.speed`). Each new
    gate value depends only on its own old value, the voltage of the same
    compartment and ``speed``, so its derivative is three per-element factors:
    the decay ``exp(-dt q (alpha + beta))``, ``d gate / d v`` (from the analytic
    rate slopes) and ``d gate / d q``: a gradient costs a few multiplies per gate.
    """
    out = {}
    for gate, (a, b) in rates(v).items():
        total = a + b
        out[gate] = a / total + (gates[gate] - a / total) * jnp.exp(-dt * speed * total)
    return out


@advance.defjvp
def _advance_jvp(dt, primals, tangents):
    gates, v, speed = primals
    gates_dot, v_dot, speed_dot = tangents
    new, tangent = {}, {}
    for gate, (a, b, a_slope, b_slope) in _rates_and_slopes(v).items():
        total, total_slope = a + b, a_slope + b_slope
        inverse = 1.0 / total  # one divide per gate: divides weigh most in the backward pass
        steady = a * inverse
        steady_slope = (a_slope - steady * total_slope) * inverse
        decay = jnp.exp(-dt * speed * total)
        offset = gates[gate] - steady
        new[gate] = steady + offset * decay
        per_volt = steady_slope * (1.0 - decay) - dt * speed * total_slope * offset * decay
        per_speed = -dt * total * offset * decay
        tangent[gate] = decay * gates_dot[gate] + per_volt * v_dot + per_speed * speed_dot
    return new, tangent


def _hh_advance(states, v, dt, speed, p):
    del p
    return advance({gate: states[gate] for gate in GATES}, v, dt, speed)


hh = Mechanism(
    "hh", parameters={"gnabar_hh": (0.12, "S/cm2"), "gkbar_hh": (0.036, "S/cm2"),
                      "gl_hh": (3e-4, "S/cm2"), "el_hh": (-54.3, "mV")},
    states=GATES, rates=lambda v, p: rates(v), q10=3.0, q10_celsius=6.3, advance=_hh_advance,
    ions=(UseIon("na", read=("ena",), write=("ina",)), UseIon("k", read=("ek",), write=("ik",))),
    currents={"i_na": (lambda s, p: p["gnabar_hh"] * s["m"] ** 3 * s["h"], "ena"),
              "i_k": (lambda s, p: p["gkbar_hh"] * s["n"] ** 4, "ek"),
              "il_hh": (lambda s, p: p["gl_hh"], "el_hh")})
"""NEURON's ``hh.mod`` with NEURON's names: sodium (``gnabar_hh``), potassium (``gkbar_hh``)
and its leak ``il_hh = gl_hh (v - el_hh)`` (3e-4 S/cm2, -54.3 mV), so ``soma.insert(hh)``
rests near -65 mV as in NEURON. Its reversals are the ions' (``USEION na READ ena WRITE
ina``, ``USEION k READ ek WRITE ik``):
the cell's parameters ``ena`` and ``ek`` (50 and -77 mV), shared with every mechanism that
reads them, its currents adding to ``ina`` and ``ik``."""

pas = Mechanism("pas", parameters={"g_pas": (1e-3, "S/cm2"), "e_pas": (-70.0, "mV")},
                currents={"i_pas": (lambda s, p: p["g_pas"], "e_pas")})
"""A leak ``g_pas (v - e_pas)``: NEURON's ``pas`` with its defaults (``g_pas`` 1e-3 S/cm2,
``e_pas`` -70 mV)."""
