"""Optional check that a solve produced finite numbers, eager or under ``jit``."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import NonFiniteError


def check_finite(x: jax.Array, solver: str, node_axis: int) -> jax.Array:
    """Return ``x`` unchanged, or fail if it holds NaN or infinity.

    Outside ``jit`` this raises :class:`NonFiniteError` naming the first bad node;
    under a transformation it attaches an ``equinox.error_if`` runtime check.

    Args:
      x: the solution.
      solver: the solver's name, for the message.
      node_axis: which axis of ``x`` indexes the unknowns (nodes).
    """
    hint = "the solvers do not pivot; is the matrix diagonally dominant?"
    if isinstance(x, jax.core.Tracer):
        return eqx.error_if(x, ~jnp.all(jnp.isfinite(x)), f"{solver} produced NaN/inf; {hint}")
    bad = ~np.isfinite(np.moveaxis(np.asarray(x), node_axis, 0))
    if bad.any():
        node = int(np.argmax(bad.reshape(bad.shape[0], -1).any(axis=1)))
        raise NonFiniteError(f"{solver} produced NaN/inf at node {node}; {hint}")
    return x
