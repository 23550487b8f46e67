"""A single-electrode voltage clamp, as NEURON's ``SEClamp``.

The electrode holds its compartment at a command voltage through a series
resistance ``rs`` (MOhm): it injects ``(vc - v) / rs`` nA, implicit in ``v``
like every membrane current. The command is up to three levels
``amplitudes[k]`` (mV) held for ``durations[k]`` (ms) one after the other from
t = 0; after the last, the clamp is off. As in NEURON's fixed step, the level of a
step is the one at its midpoint. Its current is recorded as ``"i_clamp"``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError

__all__ = ["VoltageClamp", "check", "command", "values"]


@dataclasses.dataclass(frozen=True)
class VoltageClamp:
    """``SEClamp`` on one compartment.

    Attributes:
      compartment: the clamped compartment.
      amplitudes: command levels (mV), one to three, differentiable.
      durations: how long each level is held (ms), one per amplitude.
      rs: series resistance (MOhm), differentiable; NEURON's default is 1.
    """

    compartment: int
    amplitudes: Sequence[float] | jax.Array
    durations: Sequence[float] | jax.Array
    rs: float | jax.Array = 1.0


def check(clamps: Sequence[VoltageClamp], n: int) -> np.ndarray:
    """The clamped compartments; raise ConfigError for a bad clamp, naming it."""
    where = []
    for index, clamp in enumerate(clamps):
        name = f"clamp {index}"
        if not isinstance(clamp, VoltageClamp):
            raise ConfigError(f"{name}: expected a VoltageClamp; got {type(clamp).__name__}")
        if not isinstance(clamp.compartment, int | np.integer) or not 0 <= clamp.compartment < n:
            raise ConfigError(f"{name}: compartment must be an index in [0, {n - 1}]; "
                              f"got {clamp.compartment!r}")
        levels = np.shape(clamp.amplitudes)
        if len(levels) != 1 or not 1 <= levels[0] <= 3 or np.shape(clamp.durations) != levels:
            raise ConfigError(f"{name}: give one to three amplitudes and as many durations; got "
                              f"shapes {levels} and {np.shape(clamp.durations)}")
        for field in ("amplitudes", "durations", "rs"):
            value = getattr(clamp, field)
            if isinstance(value, jax.core.Tracer):
                continue
            value = np.asarray(value, dtype=float)
            need, bad = "finite", ~np.isfinite(value)
            if field == "rs":
                need, bad = "finite and positive", bad | ~(value > 0)
            elif field == "durations":
                need, bad = "finite and non-negative", bad | (value < 0)
            if bad.any():
                raise ConfigError(f"{name} (compartment {clamp.compartment}): {field} must be "
                                  f"{need}; got {value.tolist()}")
        where.append(int(clamp.compartment))
    return np.asarray(where, dtype=np.int64)


def values(clamps: Sequence[VoltageClamp]) -> dict[str, jax.Array]:
    """The clamps' levels as arrays ``(clamps, 3)`` (padded by zero durations) and ``rs``."""
    def padded(field):
        return jnp.stack([jnp.pad(jnp.asarray(getattr(c, field), dtype=float),
                                  (0, 3 - np.shape(getattr(c, field))[0])) for c in clamps])

    return {"amplitudes": padded("amplitudes"), "durations": padded("durations"),
            "rs": jnp.stack([jnp.asarray(c.rs, dtype=float) for c in clamps])}


def command(clamp_values: dict[str, jax.Array], dt: float, first_step: jax.Array,
            steps: int) -> tuple[jax.Array, jax.Array]:
    """Command voltage and on/off (1/0) of every clamp at each step, ``(steps, clamps)``."""
    t_mid = ((first_step + jnp.arange(steps)) + 0.5) * dt
    ends = jnp.cumsum(clamp_values["durations"], axis=1)                     # (clamps, 3)
    level = jnp.sum(t_mid[:, None, None] >= ends[None], axis=2)               # (steps, clamps)
    amplitudes = jnp.broadcast_to(clamp_values["amplitudes"], (steps, *ends.shape))
    vc = jnp.take_along_axis(amplitudes, jnp.minimum(level, 2)[..., None], axis=2)[..., 0]
    on = (level < 3).astype(vc.dtype)
    return vc * on, on
