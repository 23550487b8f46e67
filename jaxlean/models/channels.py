"""Hodgkin-Huxley sodium and potassium channels (NEURON's ``hh.mod`` at 6.3 degC).

Units are NEURON's: mV, ms, S/cm2. Gates advance by exponential Euler, which is
exact for a fixed voltage over the step and stable for any ``dt``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

GATES = ("m", "h", "n")


def _vtrap(x: jax.Array, y: float) -> jax.Array:
    """``x / (exp(x / y) - 1)`` with its limit ``y (1 - x / 2y)`` near ``x = 0`` (grad-safe)."""
    u = x / y
    small = jnp.abs(u) < 1e-6
    safe = jnp.where(small, 1.0, u)
    return y * jnp.where(small, 1.0 - u / 2.0, safe / jnp.expm1(safe))


def rates(v: jax.Array) -> dict[str, tuple[jax.Array, jax.Array]]:
    """Opening and closing rates (1/ms) of each gate at membrane voltage ``v`` (mV)."""
    return {
        "m": (0.1 * _vtrap(-(v + 40.0), 10.0), 4.0 * jnp.exp(-(v + 65.0) / 18.0)),
        "h": (0.07 * jnp.exp(-(v + 65.0) / 20.0), 1.0 / (jnp.exp(-(v + 35.0) / 10.0) + 1.0)),
        "n": (0.01 * _vtrap(-(v + 55.0), 10.0), 0.125 * jnp.exp(-(v + 65.0) / 80.0)),
    }


def steady_state(v: jax.Array) -> dict[str, jax.Array]:
    """Gate values at rest at voltage ``v``: ``alpha / (alpha + beta)``."""
    return {gate: a / (a + b) for gate, (a, b) in rates(v).items()}


def advance(gates: dict[str, jax.Array], v: jax.Array, dt: float) -> dict[str, jax.Array]:
    """One exponential-Euler step of every gate with the voltage held at ``v``."""
    out = {}
    for gate, (a, b) in rates(v).items():
        total = a + b
        out[gate] = a / total + (gates[gate] - a / total) * jnp.exp(-dt * total)
    return out


def conductances(gates: dict[str, jax.Array], g_na: jax.Array, g_k: jax.Array):
    """Open sodium and potassium conductances (S/cm2): ``g_na m^3 h`` and ``g_k n^4``."""
    return g_na * gates["m"] ** 3 * gates["h"], g_k * gates["n"] ** 4
