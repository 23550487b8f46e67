"""NEURON's ``ExpSyn`` and ``Exp2Syn`` conductance synapses, driven by input spike times.

Both are point mechanisms (conductance in uS, current ``g (v - e)`` in nA); a
spike adds the synapse's weight (uS), as a ``NetCon`` of that weight does.
Insert them with ``cell.insert(expsyn, compartments=[...])`` (one synapse per
entry) and give ``simulate`` their spike times: ``spikes={"expsyn": times}``.
A spike at time ``ts`` arrives at the start of the step ``[t, t + dt]`` with
``t - dt/2 < ts <= t + dt/2``, where NEURON's fixed step delivers it. Spike
times select a step, so they have no gradient; weights and time constants do.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxlean.models.neuron.mechanisms.mechanisms import Mechanism

__all__ = ["exp2syn", "expsyn"]

expsyn = Mechanism(
    "expsyn", point=True,
    parameters={"tau_expsyn": (0.1, "ms"), "e_expsyn": (0.0, "mV"),
                "weight_expsyn": (0.0, "uS")},
    states=("g_expsyn",),
    steady=lambda v, p: {"g_expsyn": (0.0, p["tau_expsyn"])},
    currents={"i_expsyn": (lambda s, p: s["g_expsyn"], "e_expsyn")},
    on_spike=lambda p: {"g_expsyn": p["weight_expsyn"]})
"""``ExpSyn``: ``g`` jumps by the weight at a spike and decays with ``tau``. NEURON's
defaults (``tau = 0.1`` ms, ``e = 0`` mV, a ``NetCon``'s weight 0)."""


def _tau1(p) -> jnp.ndarray:
    """``tau1`` kept in ``[1e-9, 0.9999] * tau2``, as ``Exp2Syn``'s INITIAL block does."""
    tau2 = p["tau2_exp2syn"]
    return jnp.clip(p["tau1_exp2syn"], 1e-9 * tau2, 0.9999 * tau2)


def _exp2syn_factor(p) -> jnp.ndarray:
    """Normalisation making the peak of ``b - a`` after one spike equal the weight."""
    tau1, tau2 = _tau1(p), p["tau2_exp2syn"]
    peak = tau1 * tau2 / (tau2 - tau1) * jnp.log(tau2 / tau1)
    return 1.0 / (jnp.exp(-peak / tau2) - jnp.exp(-peak / tau1))


exp2syn = Mechanism(
    "exp2syn", point=True,
    parameters={"tau1_exp2syn": (0.1, "ms"), "tau2_exp2syn": (10.0, "ms"),
                "e_exp2syn": (0.0, "mV"), "weight_exp2syn": (0.0, "uS")},
    states=("a_exp2syn", "b_exp2syn"),
    steady=lambda v, p: {"a_exp2syn": (0.0, _tau1(p)),
                         "b_exp2syn": (0.0, p["tau2_exp2syn"])},
    currents={"i_exp2syn": (lambda s, p: s["b_exp2syn"] - s["a_exp2syn"], "e_exp2syn")},
    on_spike=lambda p: {state: p["weight_exp2syn"] * _exp2syn_factor(p)
                        for state in ("a_exp2syn", "b_exp2syn")})
"""``Exp2Syn``: ``g = b - a``, rising with ``tau1`` and decaying with ``tau2``."""
