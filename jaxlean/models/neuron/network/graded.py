"""Graded (voltage-driven) chemical synapses between the compartments of a network.

:data:`ionotropic` is jaxley's ``IonotropicSynapse`` (Abbott and Marder 1998), with the
same parameters and update: the postsynaptic current is ``gS s (v_post - e_syn)`` (nA,
``gS`` in uS); the open fraction ``s`` relaxes to ``s_inf = 1 / (1 + exp((v_th - v_pre) /
delta))`` with ``tau = (1 - s_inf) / k_minus`` (ms), one exponential-Euler step per time
step at the presynaptic voltage. The current enters the backward-Euler step as an ohmic
conductance at the postsynaptic compartment, as every membrane current does.

jaxley advances the states at the start of a step, jaxlean (as NEURON) after the voltage
solve; started at rest (``s = s_inf(v_init)`` of the presynaptic compartment, where jaxlean
starts every state), the two orders give the same trajectory.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

__all__ = ["GradedSynapse", "ionotropic"]

_EXP_LIMIT = 20.0
"""jaxley's ``save_exp`` caps the exponent here (``s_inf`` then stays above 2e-9)."""


def _exp(x: jax.Array) -> jax.Array:
    return jnp.exp(jnp.minimum(x, _EXP_LIMIT))


@dataclasses.dataclass(frozen=True)
class GradedSynapse:
    """A synapse whose conductance follows the presynaptic voltage (no spikes).

    Attributes:
      name: the key of its connections' parameters and states (``params["synapses"][name]``).
      parameters: ``{name: (default, unit)}``; each connection has its own value.
    """

    name: str = "ionotropic"
    parameters: tuple[tuple[str, float, str], ...] = (
        ("gS", 1e-4, "uS"), ("e_syn", 0.0, "mV"), ("k_minus", 0.025, "1/ms"),
        ("v_th", -35.0, "mV"), ("delta", 10.0, "mV"))
    states: tuple[str, ...] = ("s",)

    def defaults(self) -> dict[str, float]:
        """``{parameter: default}``."""
        return {name: value for name, value, _ in self.parameters}

    def s_inf(self, v_pre: jax.Array, p: dict) -> jax.Array:
        """The steady open fraction at presynaptic voltage ``v_pre`` (mV)."""
        return 1.0 / (1.0 + _exp((p["v_th"] - v_pre) / p["delta"]))

    def rest(self, v_pre: jax.Array, p: dict) -> dict[str, jax.Array]:
        """States at rest at ``v_pre``: ``{"s": s_inf(v_pre)}``."""
        return {"s": self.s_inf(v_pre, p)}

    def step(self, states: dict, v_pre: jax.Array, dt: float, p: dict) -> dict[str, jax.Array]:
        """The states after a step of ``dt`` ms at presynaptic voltage ``v_pre``."""
        s_inf = self.s_inf(v_pre, p)
        tau = (1.0 - s_inf) / p["k_minus"]  # jaxley's expressions, in its order
        decay = _exp(-1.0 / tau * dt)
        return {"s": states["s"] * decay + s_inf * (1.0 - decay)}

    def conductance(self, states: dict, p: dict) -> tuple[jax.Array, jax.Array]:
        """Conductance (uS) and reversal (mV) of each connection."""
        return p["gS"] * states["s"], p["e_syn"]


ionotropic = GradedSynapse()
"""jaxley's ``IonotropicSynapse`` with its defaults (``gS = 1e-4`` uS, ``e_syn = 0`` mV,
``k_minus = 0.025`` 1/ms, ``v_th = -35`` mV, ``delta = 10`` mV)."""
