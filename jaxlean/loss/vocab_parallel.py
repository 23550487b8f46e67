"""Vocabulary-parallel heads for the chunked loss: the ``[H, V]`` head split over a mesh axis.

Each device on the vocabulary axis holds ``V / n`` columns of the head and runs the
chunked per-token statistics on its shard, with target ids shifted by the shard's
first column (ids outside the shard hit no column and contribute 0). The per-token
statistics (target logit, logsumexp, entropy, top-k) are then combined across the
vocabulary axis with a few per-token collectives (one float per token, ``k`` per
shard for the top-k), so the head is never gathered.
Gradients flow back through the collectives into the per-shard custom VJP.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

from jaxlean.errors import ConfigError
from jaxlean.parallel.mesh import axis_names

__all__ = ["Axes", "VocabParallel", "sharded_token_stats"]

Axes = str | tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class VocabParallel:
    """The head's vocabulary is split over `vocab_axis` of `mesh`; tokens over `batch_axes`.

    As in a ``PartitionSpec``, a tuple of axes splits with its first axis major, and
    the tokens are split on hidden's (and targets') axis 0.
    """

    mesh: jax.sharding.Mesh
    vocab_axis: Axes
    batch_axes: Axes | None = None


def _check_mesh(vp: VocabParallel, hidden: jax.Array, head: jax.Array) -> None:
    if not isinstance(vp, VocabParallel):
        raise ConfigError(f"vocab_parallel must be a VocabParallel, got {type(vp).__name__}")
    mesh_axes = tuple(vp.mesh.axis_names)
    vocab_axes, batch_axes = axis_names(vp.vocab_axis), axis_names(vp.batch_axes)
    if not vocab_axes:
        raise ConfigError("VocabParallel.vocab_axis names no mesh axis")
    for kind, axes in (("vocab", vocab_axes), ("batch", batch_axes)):
        for axis in axes:
            if axis not in mesh_axes:
                raise ConfigError(f"{kind} axis {axis!r} is not an axis of the mesh "
                                  f"(mesh axes: {', '.join(map(repr, mesh_axes))})")
    if len(set(vocab_axes + batch_axes)) < len(vocab_axes + batch_axes):
        raise ConfigError(f"vocab axes {vocab_axes} and batch axes {batch_axes} must be "
                          f"distinct mesh axes, each named once")
    n_vocab = math.prod(vp.mesh.shape[a] for a in vocab_axes)
    if head.shape[1] % n_vocab:
        raise ConfigError(f"vocabulary size V={head.shape[1]} is not divisible by the size "
                          f"{n_vocab} of the vocab axis {vp.vocab_axis!r}")
    n_batch = math.prod(vp.mesh.shape[a] for a in batch_axes)
    if hidden.shape[0] % n_batch:
        raise ConfigError(f"hidden's leading dim {hidden.shape[0]} is not divisible by the size "
                          f"{n_batch} of the batch axes {vp.batch_axes!r}")


def _match_explicit(mesh: jax.sharding.Mesh, x: jax.Array, spec: P) -> jax.Array:
    """``x`` resharded to ``spec`` on the mesh's Explicit axes (a no-op if it already is).

    shard_map requires inputs typed with Explicit-axis shardings to match ``in_specs``;
    Auto axes it reshards itself (and ``reshard`` refuses them).
    """
    types = zip(mesh.axis_names, mesh.axis_types, strict=True)
    explicit = {a for a, t in types if t == AxisType.Explicit}
    if not explicit:
        return x
    entries = [tuple(a for a in axis_names(e) if a in explicit) or None for e in spec]
    return jax.reshard(x, jax.NamedSharding(mesh, P(*entries)))


def _gather_last(x: jax.Array, shard: jax.Array, n: int, axes: tuple[str, ...]) -> jax.Array:
    """Every shard's ``x [..., k]`` side by side ``[..., n * k]``, the same on all shards.

    Written as a ``psum`` of zero-padded slots (exact: one non-zero per slot) so that
    the result is typed as replicated over ``axes``.
    """
    k = x.shape[-1]
    slots = jnp.zeros((*x.shape[:-1], n * k), x.dtype)
    return lax.psum(lax.dynamic_update_slice_in_dim(slots, x, shard * k, x.ndim - 1), axes)


def _combine(outs: tuple[jax.Array, ...], axes: tuple[str, ...], shard: jax.Array,
             n: int) -> tuple[jax.Array, ...]:
    """Global per-token statistics from each vocabulary shard's local ones.

    ``outs`` is (target logit, logsumexp, entropy, sum of logits, top-k logits,
    top-k global ids), each computed over the columns of shard ``shard`` of ``n``.
    """
    target, lse_local, ent_local, total, top, top_ids = outs
    shift = lax.pmax(lax.stop_gradient(lse_local), axes)  # a constant: exact, no gradient
    lse = shift + jnp.log(lax.psum(jnp.exp(lse_local - shift), axes))
    # entropy = lse - E_p[logit]; shard d holds mass exp(lse_d - lse) with mean lse_d - ent_d
    mean_logit = lax.psum(jnp.exp(lse_local - lse) * (lse_local - ent_local), axes)
    k = top.shape[-1]
    if k:  # each shard's top k, gathered (k floats per token per shard) and merged
        all_top = _gather_last(top, shard, n, axes)
        all_ids = _gather_last(top_ids, shard, n, axes)
        top, where = lax.top_k(all_top, k)
        top_ids = jnp.take_along_axis(all_ids, where, axis=-1)
    else:  # empty: psum only types them as replicated
        top, top_ids = lax.psum(top, axes), lax.psum(top_ids, axes)
    return (lax.psum(target, axes), lse, lse - mean_logit, lax.psum(total, axes), top, top_ids)


def sharded_token_stats(vp: VocabParallel, stats: Callable, hidden: jax.Array, head: jax.Array,
                        targets: jax.Array) -> tuple[jax.Array, ...]:
    """``stats(hidden, head, targets)`` per vocabulary shard under ``shard_map``, combined.

    ``hidden`` is ``[N, ..., H]`` with the batch on axis 0; ``targets`` are global ids.
    """
    _check_mesh(vp, hidden, head)
    vocab_axes, batch_axes = axis_names(vp.vocab_axis), axis_names(vp.batch_axes)
    n_shards = math.prod(vp.mesh.shape[a] for a in vocab_axes)
    local = head.shape[1] // n_shards

    def body(h, w, t):
        # The head's gradient sums over batch shards and hidden's over vocabulary
        # shards: marking them varying makes the transposes these psums.
        if batch_axes:
            w = lax.pcast(w, batch_axes, to="varying")
        h = lax.pcast(h, vocab_axes, to="varying")
        shard = 0
        for axis in vocab_axes:  # linear index, first named axis major (as in the spec)
            shard = shard * vp.mesh.shape[axis] + lax.axis_index(axis)
        outs = tuple(stats(h, w, t - shard * local))
        outs = (*outs[:5], outs[5] + (shard * local).astype(outs[5].dtype))  # global ids
        return _combine(outs, vocab_axes, shard, n_shards)

    batch = P(batch_axes or None)
    specs = (batch, P(None, vocab_axes), batch)
    inputs = (hidden, head, targets.astype(jnp.int32))
    args = [_match_explicit(vp.mesh, x, spec) for x, spec in zip(inputs, specs, strict=True)]
    return jax.shard_map(body, mesh=vp.mesh, in_specs=specs, out_specs=batch)(*args)
