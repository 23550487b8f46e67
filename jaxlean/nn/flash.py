"""Blockwise (flash) attention: memory linear in sequence length, forward and backward.

Dense attention builds ``[heads, T, S]`` float32 scores, and its gradient keeps
them (or the probabilities) for the backward pass: quadratic in the sequence
length. Here the queries are cut into ``q_tile`` blocks and the keys into
``k_tile`` blocks; the forward pass runs an online softmax over the key blocks
(running maximum, running sum, rescaled accumulator), so no score block is
larger than ``[q_tile, k_tile]`` per head, and keeps only the output and each
row's log-sum-exp. The backward pass (a custom VJP, as FlashAttention-2)
recomputes each block's probabilities from those two. Key blocks that causality
or a sliding window hide entirely are skipped (loops with dynamic bounds), so
causal attention costs about half of the full product.

A query that may see no key at all (a padded row) gets the plain average of
all values, as a softmax over equal ``finfo.min`` scores gives in dense
attention; its gradient reaches the values only.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean.errors import ConfigError
from jaxlean.nn.attention_mask import AttentionMask

__all__ = ["DEFAULT_TILE", "dividing_tile", "flash_attention", "flash_attention_cached"]

DEFAULT_TILE = 128
"""Default query and key tile: score blocks of ``128 x 128`` float32 per head (64 KiB).
On CPU smaller tiles ran faster than 256 or 512 (the blocks stay in cache)."""

_F32 = jnp.float32


def _blocks(length: int, tile: int) -> tuple[int, int]:
    """``(tile, blocks)``: the tile clipped to ``length`` and how many cover it."""
    tile = min(tile, length)
    return tile, -(-length // tile)


def _pad(x: Array, axis: int, length: int) -> Array:
    if x.shape[axis] == length:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, length - x.shape[axis])
    return jnp.pad(x, widths)


def _scores(q_i: Array, k_j: Array, visible: Array) -> Array:
    """``[B, Kh, G, q_tile, k_tile]`` float32 scores, ``-inf`` where not visible."""
    s = jnp.einsum("bkgqd,bksd->bkgqs", q_i, k_j, preferred_element_type=_F32)
    s = s / float(np.sqrt(q_i.shape[-1]))  # a Python float: float32 under x64 too
    return jnp.where(visible[:, None, None], s, -jnp.inf)


def _key_block(x: Array, start: Array, tile: int, layer: Array | None) -> Array:
    """Keys/values ``start .. start + tile - 1`` of ``x[B, Kh, S, d]``, or of layer ``layer``
    of ``x[L, B, Kh, S, d]`` (read in place: the layer is never copied out whole)."""
    if layer is None:
        return jax.lax.dynamic_slice_in_dim(x, start, tile, axis=2)
    zero = jnp.zeros((), jnp.int32)
    layer, start = (i if getattr(i, "dtype", None) == jnp.int32 else jnp.asarray(i, jnp.int32)
                    for i in (layer, start))  # one index type (int64 under x64 otherwise)
    block = jax.lax.dynamic_slice(x, (layer, zero, zero, start, zero),
                                  (1, x.shape[1], x.shape[2], tile, x.shape[4]))
    return block[0]


def _forward(q, k, v, mask: AttentionMask, q_tile: int, k_tile: int, layer=None):
    """``(out, lse)`` of ``q[B, Kh, G, Tp, d]`` over ``k, v[B, Kh, Sp, d]`` (or over layer
    ``layer`` of ``[L, B, Kh, Sp, d]``); rows that see nothing get ``out = 0``, ``lse = -inf``."""
    batch, kv_heads, groups, length, dim = q.shape
    k_blocks = k.shape[-2] // k_tile

    def query_block(i):
        q_start = i * q_tile
        q_i = jax.lax.dynamic_slice_in_dim(q, q_start, q_tile, axis=3)

        def key_block(j, carry):
            row_max, row_sum, acc = carry
            k_start = j * k_tile
            k_j, v_j = (_key_block(x, k_start, k_tile, layer) for x in (k, v))
            s = _scores(q_i, k_j, mask.block(q_start, q_tile, k_start, k_tile))
            new_max = jnp.maximum(row_max, jnp.max(s, axis=-1))
            safe_max = jnp.where(jnp.isneginf(new_max), 0.0, new_max)
            p = jnp.exp(s - safe_max[..., None])
            rescale = jnp.exp(row_max - safe_max)
            row_sum = rescale * row_sum + jnp.sum(p, axis=-1)
            acc = rescale[..., None] * acc + jnp.einsum(
                "bkgqs,bksd->bkgqd", p.astype(v.dtype), v_j, preferred_element_type=_F32)
            return new_max, row_sum, acc

        shape = (batch, kv_heads, groups, q_tile)
        init = (jnp.full(shape, -jnp.inf, _F32), jnp.zeros(shape, _F32),
                jnp.zeros((*shape, dim), _F32))
        lo, hi = mask.key_block_range(q_start, q_tile, k_tile, k_blocks)
        row_max, row_sum, acc = jax.lax.fori_loop(lo, hi, key_block, init)
        empty = row_sum == 0
        out = acc / jnp.where(empty, 1.0, row_sum)[..., None]
        lse = jnp.where(empty, -jnp.inf, row_max + jnp.log(jnp.where(empty, 1.0, row_sum)))
        return out.astype(q.dtype), lse

    out, lse = jax.lax.map(query_block, jnp.arange(length // q_tile))
    out = jnp.moveaxis(out, 0, 3).reshape(q.shape)
    lse = jnp.moveaxis(lse, 0, 3).reshape(q.shape[:-1])
    return out, lse


def _backward(q, k, v, mask: AttentionMask, out, lse, d_out, q_tile: int, k_tile: int):
    """``(dq, dk, dv)``: key blocks outside, the query blocks that see them inside."""
    q_blocks, k_blocks = q.shape[3] // q_tile, k.shape[2] // k_tile
    delta = jnp.sum(d_out.astype(_F32) * out.astype(_F32), axis=-1)
    lse = jnp.where(jnp.isneginf(lse), 0.0, lse)  # such rows' scores are all -inf: p = 0
    scale = float(1.0 / np.sqrt(q.shape[-1]))

    def key_block(j, grads):
        dq, dk, dv = grads
        k_start = j * k_tile
        k_j = jax.lax.dynamic_slice_in_dim(k, k_start, k_tile, axis=2)
        v_j = jax.lax.dynamic_slice_in_dim(v, k_start, k_tile, axis=2)

        def query_block(i, carry):
            dq, dk_j, dv_j = carry
            q_start = i * q_tile

            def rows(x):
                return jax.lax.dynamic_slice_in_dim(x, q_start, q_tile, axis=3)

            q_i, do_i, lse_i, delta_i = rows(q), rows(d_out), rows(lse), rows(delta)
            s = _scores(q_i, k_j, mask.block(q_start, q_tile, k_start, k_tile))
            p = jnp.exp(s - lse_i[..., None])
            dv_j += jnp.einsum("bkgqs,bkgqd->bksd", p.astype(v.dtype), do_i,
                               preferred_element_type=_F32)
            dp = jnp.einsum("bkgqd,bksd->bkgqs", do_i, v_j, preferred_element_type=_F32)
            ds = (p * (dp - delta_i[..., None]) * scale).astype(q.dtype)
            dk_j += jnp.einsum("bkgqs,bkgqd->bksd", ds, q_i, preferred_element_type=_F32)
            dq_i = jnp.einsum("bkgqs,bksd->bkgqd", ds, k_j, preferred_element_type=_F32)
            dq = jax.lax.dynamic_update_slice_in_dim(dq, rows(dq) + dq_i, q_start, axis=3)
            return dq, dk_j, dv_j

        zeros = jnp.zeros(k_j.shape, _F32)
        lo, hi = mask.query_block_range(k_start, k_tile, q_tile, q_blocks)
        dq, dk_j, dv_j = jax.lax.fori_loop(lo, hi, query_block, (dq, zeros, zeros))
        dk = jax.lax.dynamic_update_slice_in_dim(dk, dk_j, k_start, axis=2)
        dv = jax.lax.dynamic_update_slice_in_dim(dv, dv_j, k_start, axis=2)
        return dq, dk, dv

    init = (jnp.zeros(q.shape, _F32), jnp.zeros(k.shape, _F32), jnp.zeros(v.shape, _F32))
    dq, dk, dv = jax.lax.fori_loop(0, k_blocks, key_block, init)
    return dq.astype(q.dtype), dk.astype(k.dtype), dv.astype(v.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def _flash(q, k, v, mask, q_tile, k_tile):
    return _forward(q, k, v, mask, q_tile, k_tile)


def _flash_fwd(q, k, v, mask, q_tile, k_tile):
    out, lse = _forward(q, k, v, mask, q_tile, k_tile)
    return (out, lse), (q, k, v, mask, out, lse)


def _flash_bwd(q_tile, k_tile, residuals, cotangents):
    q, k, v, mask, out, lse = residuals
    dq, dk, dv = _backward(q, k, v, mask, out, lse, cotangents[0], q_tile, k_tile)
    return dq, dk, dv, jax.tree.map(lambda _: None, mask)


_flash.defvjp(_flash_fwd, _flash_bwd)


def flash_attention(q: Array, k: Array, v: Array, mask: AttentionMask, *,
                    q_tile: int = DEFAULT_TILE, k_tile: int = DEFAULT_TILE) -> Array:
    """Grouped-query softmax attention computed in ``[q_tile, k_tile]`` blocks.

    Equals dense softmax attention (scores ``q.k / sqrt(d)``, float32 softmax)
    with ``mask.dense(T, S)``, values and gradients, without its ``[T, S]`` arrays.

    Args:
        q: ``[B, T, heads, d]``; k, v: ``[B, S, kv_heads, d]`` (``heads`` a multiple
            of ``kv_heads``: each key/value head serves a group of query heads).
        mask: what each query may see; lengths need not be multiples of the tiles.
        q_tile, k_tile: block sizes along the queries and the keys.

    Returns:
        ``[B, T, heads, d]`` in ``q``'s dtype.
    """
    batch, length, heads, dim = q.shape
    kv_length, kv_heads = k.shape[1], k.shape[2]
    if heads % kv_heads:
        raise ConfigError(f"flash_attention: q's heads ({heads}) must be a multiple of "
                          f"k's heads ({kv_heads})")
    for name, tile in (("q_tile", q_tile), ("k_tile", k_tile)):
        if not isinstance(tile, int) or tile < 1:
            raise ConfigError(f"flash_attention: {name} must be a positive int, got {tile!r}")
    q_tile, q_blocks = _blocks(length, q_tile)
    k_tile, k_blocks = _blocks(kv_length, k_tile)
    padded_q, padded_k = q_tile * q_blocks, k_tile * k_blocks
    grouped = q.reshape(batch, length, kv_heads, heads // kv_heads, dim).transpose(0, 2, 3, 1, 4)
    grouped = _pad(grouped, 3, padded_q)
    k_t, v_t = (_pad(x.transpose(0, 2, 1, 3), 2, padded_k) for x in (k, v))
    out, lse = _flash(grouped, k_t, v_t, mask.padded(padded_q, padded_k, kv_length),
                      q_tile, k_tile)
    empty = jnp.isneginf(jax.lax.stop_gradient(lse))[..., None]
    mean_v = jnp.mean(v.astype(_F32), axis=1).transpose(0, 1, 2)[:, :, None, None, :]
    out = jnp.where(empty, mean_v.astype(out.dtype), out)
    return out[:, :, :, :length].transpose(0, 3, 1, 2, 4).reshape(batch, length, heads, dim)


def dividing_tile(length: int, tile: int) -> int:
    """The largest tile of at most ``tile`` that divides ``length`` (1 at worst)."""
    return next(t for t in range(min(tile, length), 0, -1) if length % t == 0)


def flash_attention_cached(q: Array, keys: Array, values: Array, layer: Array,
                           mask: AttentionMask, *, tile: int = DEFAULT_TILE) -> Array:
    """Blockwise attention of new queries over one layer of a KV cache (forward only).

    The cache is heads-first, ``keys, values[L, B, Kh, S, d]``, the layout the
    blocks are read in, so neither a layer nor a transposed copy of it is ever
    made: memory beyond the cache is one ``[q_tile, k_tile]`` score block per
    head. Key blocks past the queries' last slot (by ``mask``'s causality) are
    skipped, so a short prompt in a long cache costs only its own length.

    Args:
        q: ``[B, T, heads, d]`` queries (``heads`` a multiple of ``Kh``).
        keys, values: the cache, this step's keys and values already written.
        layer: the layer to read (traced int).
        mask: what each query may see, its slots shifted to the queries' place
            in the cache (``q_shift``).
        tile: the largest query and key tile; the key tile is the largest divisor of
            ``S`` not above it (:func:`dividing_tile`), so the cache is never padded.

    Returns:
        ``[B, T, heads, d]`` in ``q``'s dtype; a query that sees no key (a left pad) gets 0.
    """
    batch, length, heads, dim = q.shape
    kv_heads, slots = keys.shape[2], keys.shape[3]
    if heads % kv_heads:
        raise ConfigError(f"flash_attention_cached: q's heads ({heads}) must be a multiple "
                          f"of the cache's heads ({kv_heads})")
    q_tile, q_blocks = _blocks(length, tile)
    k_tile = dividing_tile(slots, tile)
    padded_q = q_tile * q_blocks
    grouped = q.reshape(batch, length, kv_heads, heads // kv_heads, dim).transpose(0, 2, 3, 1, 4)
    out, _ = _forward(_pad(grouped, 3, padded_q), keys, values,
                      mask.padded(padded_q, slots, slots), q_tile, k_tile, layer)
    return out[:, :, :, :length].transpose(0, 3, 1, 2, 4).reshape(batch, length, heads, dim)
