"""Differentiable tridiagonal solve: LAPACK/cuSPARSE forward, implicit derivatives.

The forward calls ``lax.linalg.tridiagonal_solve``; derivatives come from the
shared rule in :mod:`jaxlean.linalg._implicit` (one transposed tridiagonal solve
for the backward pass). Works under ``jit``, ``vmap``, ``grad`` and ``jvp``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from jaxlean.errors import StructureError
from jaxlean.linalg._finite import check_finite
from jaxlean.linalg._implicit import implicit_linear_solve
from jaxlean.linalg._shapes import as_columns

__all__ = ["tridiagonal_solve"]


def _matvec(operator: tuple[jax.Array, jax.Array, jax.Array], x: jax.Array) -> jax.Array:
    dl, d, du = operator
    below = jnp.pad(x[..., :-1, :], [(0, 0)] * (x.ndim - 2) + [(1, 0), (0, 0)])
    above = jnp.pad(x[..., 1:, :], [(0, 0)] * (x.ndim - 2) + [(0, 1), (0, 0)])
    return d[..., None] * x + dl[..., None] * below + du[..., None] * above


def _solve(operator: tuple[jax.Array, jax.Array, jax.Array], b: jax.Array) -> jax.Array:
    return lax.linalg.tridiagonal_solve(*operator, b)


def _transpose_solve(operator: tuple[jax.Array, jax.Array, jax.Array], b: jax.Array) -> jax.Array:
    dl, d, du = operator
    pad = [(0, 0)] * (d.ndim - 1)
    dl_t = jnp.pad(du[..., :-1], [*pad, (1, 0)])
    du_t = jnp.pad(dl[..., 1:], [*pad, (0, 1)])
    return lax.linalg.tridiagonal_solve(dl_t, d, du_t, b)


def tridiagonal_solve(dl: jax.Array, d: jax.Array, du: jax.Array, b: jax.Array,
                      *, check: bool = False) -> jax.Array:
    """Solve ``A x = b`` for tridiagonal ``A``, batched, with implicit derivatives.

    ``A[i, i] = d[i]``, ``A[i, i-1] = dl[i]``, ``A[i, i+1] = du[i]`` (``dl[0]`` and
    ``du[-1]`` are ignored and get zero gradient). No pivoting: stable for
    diagonally dominant matrices.

    Args:
      dl, d, du: sub-, main and super-diagonal, shape ``batch + (m,)``; leading axes
        broadcast against each other and against ``b``.
      b: right-hand side, ``batch + (m,)``, or ``batch + (m, k)`` for ``k`` of them (a
        trailing ``(m, k)`` is always read as ``k`` right-hand sides).
      check: raise :class:`~jaxlean.errors.NonFiniteError` (or attach a runtime check
        under ``jit``) when the solution holds NaN or infinity.

    Returns:
      ``x`` with the broadcast batch shape and ``b``'s trailing shape.
    """
    dl, d, du, b = (jnp.asarray(a) for a in (dl, d, du, b))
    if not (dl.shape[-1:] == d.shape[-1:] == du.shape[-1:]) or d.ndim == 0:
        raise StructureError(
            f"dl, d, du must share their last axis; got shapes {dl.shape}, {d.shape}, {du.shape}")
    m = d.shape[-1]
    rhs, vector_rhs = as_columns(b, m)
    batch = jnp.broadcast_shapes(dl.shape[:-1], d.shape[:-1], du.shape[:-1], rhs.shape[:-2])
    dtype = jnp.result_type(dl, d, du, b)
    dl, d, du = (jnp.broadcast_to(a.astype(dtype), (*batch, m)) for a in (dl, d, du))
    dl = dl.at[..., 0].set(0)
    du = du.at[..., -1].set(0)
    rhs = jnp.broadcast_to(rhs.astype(dtype), (*batch, m, rhs.shape[-1]))
    x = implicit_linear_solve(_matvec, _solve, _transpose_solve, (dl, d, du), rhs)
    x = check_finite(x, "tridiagonal_solve", x.ndim - 2) if check else x
    return x[..., 0] if vector_rhs else x
