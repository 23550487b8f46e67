"""Muon's matrix step on stacks: momentum, then one batched Newton-Schulz over ``[..., m, n]``.

``optax.contrib.scale_by_muon`` orthogonalises each 2-D leaf; here every leaf of
two or more axes is a stack of matrices (last two axes), orthogonalised in one
batched iteration (``vmap`` over the leading axes), with per-matrix results equal
to optax's on each matrix. The momentum, its bias correction and the state
(``optax.contrib.MuonState``) follow optax step for step, so values agree to
float rounding.

Sharding: a leaf whose matrix axes are split over Explicit mesh axes (FSDP) is
resplit for the iteration so that every device holds whole matrices (those mesh
axes move to a leading axis they divide, else the matrix is gathered), and the
result is put back in the leaf's own layout. Auto axes are left to XLA.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from optax.contrib import MuonState

from jaxlean.parallel.mesh import axis_names

__all__ = ["PRECONDITIONINGS", "scale_by_batched_muon", "scale_by_matrix_shape"]

PRECONDITIONINGS = ("frobenius", "spectral", "aol", "schatten")


def _newton_schulz_step(x: jax.Array, c: jax.Array, a: jax.Array | None = None) -> jax.Array:
    """One quintic step ``c0 X + (c1 A + c2 A^2) X`` with ``A = X X^H`` (given or computed)."""
    if a is None:
        a = x @ x.T.conj()
    b = c[1] * a + c[2] * a @ a
    return c[0] * x + b @ x


def _aol_step(x: jax.Array, c: jax.Array, eps: float) -> jax.Array:
    """First step with AOL rescaling: rows scaled by ``1/sqrt(sum_j |A_ij|)``."""
    a = x @ x.T.conj()
    s = jnp.expand_dims(jax.lax.rsqrt(jnp.clip(jnp.abs(a).sum(axis=-1), min=eps)), -1)
    return _newton_schulz_step(x * s, c, a * s * s.T)


def _schatten_step(x: jax.Array, c: jax.Array, eps: float) -> jax.Array:
    """First step with Schatten-4 rescaling: ``X / ||X X^T||_F^(1/2)``."""
    a = x @ x.T
    s = jax.lax.rsqrt(jnp.clip(jnp.linalg.norm(a, ord="fro"), min=eps))
    return _newton_schulz_step(x * s, c, a * s ** 2)


def _orthogonalise(x: jax.Array, coeffs: jax.Array, ns_steps: int, preconditioning: str,
                   eps: float) -> jax.Array:
    """Newton-Schulz orthogonalisation of one ``[m, n]`` matrix (the wide side kept last)."""
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T
    if preconditioning == "frobenius":
        x = x / (jnp.linalg.norm(x, ord="fro") + eps)
    elif preconditioning == "spectral":
        x = x / (jnp.linalg.norm(x, ord=2) + eps)
    coeffs = coeffs.astype(x.dtype)
    rows = [coeffs] * ns_steps if coeffs.ndim == 1 else list(coeffs)
    for step, c in enumerate(rows):
        if step == 0 and preconditioning == "aol":
            x = _aol_step(x, c, eps)
        elif step == 0 and preconditioning == "schatten":
            x = _schatten_step(x, c, eps)
        else:
            x = _newton_schulz_step(x, c)
    return x.T if transposed else x


def _batch_layout(x: jax.Array) -> tuple[NamedSharding, NamedSharding] | None:
    """(own, batched) shardings when Explicit mesh axes split the matrix axes, else None.

    The batched layout moves those mesh axes onto the first leading axis that
    they divide together with the axes it already has; with none, they are dropped.
    """
    sharding = jax.typeof(x).sharding
    if not isinstance(sharding, NamedSharding):
        return None
    spec = tuple(sharding.spec) + (None,) * (x.ndim - len(sharding.spec))
    moved = axis_names(spec[-2]) + axis_names(spec[-1])
    if not moved:
        return None
    mesh = sharding.mesh
    new = [*spec[:-2], None, None]
    for dim in range(x.ndim - 2):
        held = axis_names(new[dim])
        parts = int(np.prod([mesh.shape[name] for name in held + moved], dtype=np.int64))
        if x.shape[dim] % parts == 0:
            new[dim] = held + moved
            break
    return NamedSharding(mesh, P(*spec)), NamedSharding(mesh, P(*new))


def _per_matrix(f: Callable[..., jax.Array], *stacks: jax.Array) -> jax.Array:
    """``f`` on every matrix of ``[..., m, n]`` stacks, as one batched computation."""
    if stacks[0].ndim == 2:
        return jax.vmap(f)(*(s[None] for s in stacks))[0]
    batched = f
    for _ in range(stacks[0].ndim - 2):
        batched = jax.vmap(batched)
    return batched(*stacks)


def scale_by_batched_muon(
    ns_coeffs: Any,
    ns_steps: int,
    beta: float,
    eps: float,
    mu_dtype: Any,
    *,
    nesterov: bool,
    adaptive: bool,
    preconditioning: str,
) -> optax.GradientTransformation:
    """``optax.contrib.scale_by_muon`` on stacks of matrices (arguments as there).

    ``adaptive`` scales each matrix (not each leaf) by ``<mu_hat, O>``, which is
    optax's scale on a 2-D leaf.
    """
    mu_dtype = None if mu_dtype is None else jax.dtypes.canonicalize_dtype(mu_dtype)

    def stack_update(m: jax.Array, coeffs: jax.Array) -> jax.Array:
        orthogonalise = lambda x: _orthogonalise(x, coeffs, ns_steps, preconditioning, eps)
        layout = _batch_layout(m)
        if layout is None:
            o = _per_matrix(orthogonalise, m)
        else:
            own, batched = layout
            o = jax.sharding.reshard(_per_matrix(orthogonalise, jax.sharding.reshard(m, batched)),
                                     own)
        return jnp.sum(m.conj() * o, axis=(-2, -1), keepdims=True) * o if adaptive else o

    def init_fn(params: Any) -> MuonState:
        coeffs = jnp.asarray(ns_coeffs)
        if coeffs.ndim == 2:
            coeffs = coeffs[-ns_steps:]
        return MuonState(count=jnp.zeros([], jnp.int32),
                         mu=optax.tree.zeros_like(params, dtype=mu_dtype), ns_coeffs=coeffs)

    def update_fn(updates: Any, state: MuonState, params: Any = None) -> tuple[Any, MuonState]:
        del params
        mu = optax.tree.update_moment(updates, state.mu, beta, 1)
        count = optax.safe_increment(state.count)
        if nesterov:
            mu_hat = jax.tree.map(lambda m, g: beta * m + (1 - beta) * g,
                                  optax.tree.bias_correction(mu, beta, optax.safe_increment(count)),
                                  optax.tree.bias_correction(updates, beta, count))
        else:
            mu_hat = optax.tree.bias_correction(mu, beta, count)
        out = jax.tree.map(lambda m: stack_update(m, state.ns_coeffs), mu_hat)
        return out, MuonState(count=count, mu=optax.tree.cast(mu, mu_dtype),
                              ns_coeffs=state.ns_coeffs)

    return optax.GradientTransformation(init_fn, update_fn)


def scale_by_matrix_shape(consistent_rms: float | None) -> optax.GradientTransformation:
    """Scale each ``[..., m, n]`` update as ``optax.contrib.scale_by_shape`` scales an ``[m, n]``.

    ``sqrt(max(1, n / m))`` (width transfer), or with ``consistent_rms``
    ``sqrt(max(m, n)) * consistent_rms`` (an RMS like AdamW's).
    """

    def scale(u: jax.Array) -> jax.Array:
        fan_in, fan_out = u.shape[-2], u.shape[-1]
        if consistent_rms is None:
            return jnp.sqrt(jnp.maximum(1, fan_out / fan_in)) * u
        return jnp.sqrt(jnp.maximum(fan_in, fan_out)) * consistent_rms * u

    def update_fn(updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        del params
        return jax.tree.map(scale, updates), state

    return optax.GradientTransformation(optax.init_empty_state, update_fn)
