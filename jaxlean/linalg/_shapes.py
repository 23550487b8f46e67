"""Right-hand-side layout shared by the solvers: one vector or ``k`` columns."""

from __future__ import annotations

import jax

from jaxlean.errors import StructureError


def as_columns(b: jax.Array, m: int) -> tuple[jax.Array, bool]:
    """View ``b`` as ``batch + (m, k)``; say whether it was a single vector.

    A trailing ``(m, k)`` is read as ``k`` right-hand sides, a trailing ``(m,)``
    (with anything but ``m`` before it) as one.
    """
    if b.ndim >= 2 and b.shape[-2] == m:
        return b, False
    if b.ndim >= 1 and b.shape[-1] == m:
        return b[..., None], True
    raise StructureError(f"b must have shape (..., {m}) or (..., {m}, k); got {b.shape}")
