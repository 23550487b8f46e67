"""A stimulus's current as one value per step, checked: the single-device and the split
network runs take it alike."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError

__all__ = ["checked_current"]


def checked_current(index: int, current, steps: int, at: str = "") -> jax.Array:
    """Stimulus ``index``'s current as ``steps`` values (a scalar is held); its shape and,
    when concrete, its finiteness checked (``at`` names the site in the message)."""
    if np.ndim(current) == 0:
        current = jnp.broadcast_to(jnp.asarray(current, dtype=float), (steps,))
    if np.shape(current) != (steps,):
        raise ConfigError(f"stimulus {index}: current must be a scalar or have {steps} "
                          f"values (t_max / dt); got shape {np.shape(current)}")
    if not isinstance(current, jax.core.Tracer):
        bad = np.flatnonzero(~np.isfinite(np.asarray(current)))
        if bad.size:
            raise ConfigError(f"stimulus {index}{at}: current must be finite; got "
                              f"{np.asarray(current)[bad[0]]} at step {bad[0]}")
    return current
