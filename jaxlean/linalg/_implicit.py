"""The one implicit-differentiation rule shared by every linear solver in jaxlean.

For ``A x = b`` the tangent is ``x' = A^-1 (b' - A' x)`` and the cotangents are
``b_bar = A^-T x_bar`` and ``A_bar[i, j] = -b_bar[i] x[j]`` on the sparsity
pattern. A solver supplies only ``matvec`` (how its entries act on a vector),
``solve`` and ``transpose_solve``; this rule does the rest through
``lax.custom_linear_solve``, whose JVP is the formula above and whose transpose
calls ``transpose_solve`` explicitly. JAX never differentiates the solver's own
elimination loop, so a backward pass costs one more solve, not O(n^2) copies.
``jax.grad``, ``jax.jvp``, ``jax.vmap`` and ``jax.jit`` all work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
from jax import lax

Operator = Any
"""The matrix entries of a solver, as a pytree of arrays (e.g. ``(lower, diag, upper)``)."""


def implicit_linear_solve(
    matvec: Callable[[Operator, jax.Array], jax.Array],
    solve: Callable[[Operator, jax.Array], jax.Array],
    transpose_solve: Callable[[Operator, jax.Array], jax.Array],
    operator: Operator,
    b: jax.Array,
) -> jax.Array:
    """Solve ``A x = b`` with derivatives from the implicit function theorem.

    Args:
      matvec: ``matvec(operator, x) -> A x``; must be linear in both arguments and
        written with vectorised ops (JAX transposes it to get the matrix cotangent).
      solve: ``solve(operator, b) -> A^-1 b`` (any algorithm; never differentiated).
      transpose_solve: ``transpose_solve(operator, b) -> A^-T b``.
      operator: the matrix entries, a pytree of arrays.
      b: the right-hand side, in the layout ``matvec`` and ``solve`` expect.

    Returns:
      ``x`` with the same shape and dtype as ``b``.
    """
    return lax.custom_linear_solve(
        lambda x: matvec(operator, x),
        b,
        solve=lambda _, rhs: solve(operator, rhs),
        transpose_solve=lambda _, rhs: transpose_solve(operator, rhs),
    )
