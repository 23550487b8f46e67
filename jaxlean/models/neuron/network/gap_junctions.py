"""Gap junctions: ohmic coupling between two compartments (of different cells, or one).

A junction of conductance ``g`` (uS) between compartments ``a`` and ``b`` puts the current
``g (v_a - v_b)`` (nA) out of ``a`` and into ``b``. It is folded into each step's implicit
system as NEURON's gap junctions are (``ParallelContext.source_var``/``target_var``, or the
"half-gap" point process with a ``POINTER`` to the other side's voltage): at each side a
conductance ``g`` on the diagonal (implicit in its own voltage) with the other side's
voltage at the start of the step as its reversal (explicit in the other voltage). The
forest's tree solve stays a tree solve. NEURON's ``LinearMechanism`` (which couples both
voltages implicitly, through its sparse solver) is not what this reproduces; for junction
conductances small against the membrane's ``C/dt`` the two differ by ``O(dt)``.

``g`` is one value per junction, shared by its two directions (trainable).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["GapJunction", "gap_junction"]


@dataclasses.dataclass(frozen=True)
class GapJunction:
    """Ohmic coupling between two compartments (see the module's docstring).

    Attributes:
      name: the key of its junctions' parameters (``params["synapses"][name]["g"]``).
      g: default conductance (uS).
    """

    name: str = "gap"
    g: float = 1e-3

    @property
    def parameters(self) -> tuple[tuple[str, float, str], ...]:
        return (("g", float(self.g), "uS"),)

    @property
    def strength(self) -> str:
        """The parameter a weighted connectivity matrix sets: ``"g"``."""
        return "g"

    def defaults(self) -> dict[str, float]:
        """``{"g": default}``."""
        return {"g": float(self.g)}

    def directed(self, pre: np.ndarray, post: np.ndarray, p: dict):
        """Each junction as its two directions: ``a -> b`` then ``b -> a``, ``g`` shared."""
        twice = {name: jnp.concatenate([jnp.broadcast_to(v, pre.shape),
                                        jnp.broadcast_to(v, pre.shape)])
                 for name, v in p.items()}
        return np.concatenate([pre, post]), np.concatenate([post, pre]), twice

    def rest(self, v_pre: jax.Array, p: dict) -> dict[str, jax.Array]:
        """``{"v_other": the other side's voltage}``, at the start."""
        return {"v_other": v_pre}

    def step(self, states: dict, v_pre: jax.Array, dt: float, p: dict) -> dict[str, jax.Array]:
        """The other side's voltage after the step (the next step's reversal)."""
        return {"v_other": v_pre}

    def conductance(self, states: dict, p: dict) -> tuple[jax.Array, jax.Array]:
        """Conductance ``g`` (uS) toward the other side's voltage (mV)."""
        return p["g"], states["v_other"]


gap_junction = GapJunction()
"""A gap junction named ``"gap"``, 1e-3 uS by default."""
