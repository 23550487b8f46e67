"""The KV cache of generation: prompt pass (prefill) and decoding steps, memory linear in length.

The cache holds every layer's keys and values heads-first, ``[layers, B, kv_heads,
slots, head_dim]``, in the model's compute dtype. Every pass over it is one
:func:`extend`: a block of ``T`` new tokens per row is run through the stacked
layers (one ``scan_layers``, the cache carried and written in place), each layer
writing its keys/values at the cache's next slot and attending over the cache.
Decoding is ``T = 1``; the prompt pass runs the prompt in chunks of
``prefill_chunk`` tokens, so the prompt's activations never exceed one chunk's.

Attention over the cache is blockwise (:func:`~jaxlean.nn.flash.flash_attention_cached`:
the flash kernel of training, reading the cache in place) unless the model's
``config.attention`` is ``"dense"``, which builds the ``[T, slots]`` scores (the
reference the tests and ``jaxlean bench rollout_memory`` compare against). Batches are
left-padded (every prompt ends at the same slot); padded slots are never attended to
and rotary positions count real tokens only, so step-by-step decoding equals one full
forward pass.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from jaxlean.errors import ConfigError
from jaxlean.models.lm.attention import Blockwise
from jaxlean.models.lm.transformer import Transformer
from jaxlean.nn.attention_mask import AttentionMask
from jaxlean.nn.layers import scan_layers

__all__ = ["PREFILL_CHUNK", "KVCache", "decode_step", "empty_cache", "extend", "prefill"]

PREFILL_CHUNK = 512
"""Prompt tokens per chunk of the prompt pass: the MLP's ``[B, chunk, intermediate]``
activations are the largest arrays besides the cache."""


class KVCache(NamedTuple):
    """Keys/values of all layers and which slots hold real tokens.

    Attributes:
        keys, values: ``[layers, B, kv_heads, slots, head_dim]`` (heads first: the
            layout blockwise attention reads), in the model's compute dtype.
        valid: ``[B, slots]`` bool, True at slots holding a real (non-pad) token.
        next_position: ``[B]`` rotary position of the next token of each row.
        index: scalar int, the next slot to write.
    """

    keys: Array
    values: Array
    valid: Array
    next_position: Array
    index: Array


def empty_cache(model: Transformer, batch: int, slots: int) -> KVCache:
    """A cache of ``slots`` slots per row, nothing written (``model`` in its compute dtype)."""
    c = model.config
    shape = (c.num_layers, batch, c.num_kv_heads, slots, c.head_dim)
    dtype = model.embed.dtype
    zeros = jnp.zeros((batch,), jnp.int32)
    return KVCache(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype),
                   jnp.zeros((batch, slots), bool), zeros, jnp.asarray(0, jnp.int32))


def extend(model: Transformer, cache: KVCache, tokens: Array, token_mask: Array,
           adapter_ids: Array | None = None) -> tuple[Array, KVCache]:
    """Run ``tokens[B, T]`` (``token_mask`` False at left padding) at the cache's next slots.

    Returns the last layer's hidden states ``[B, T, hidden]`` (before the final norm)
    and the cache with the tokens' keys/values written and ``index`` advanced by ``T``.
    ``model`` must already be in its compute dtype (:meth:`Transformer.in_compute_dtype`).
    """
    c = model.config
    length = tokens.shape[1]
    token_mask = token_mask.astype(bool)
    valid = jax.lax.dynamic_update_slice_in_dim(cache.valid, token_mask, cache.index, axis=1)
    counts = jnp.cumsum(token_mask.astype(jnp.int32), axis=1)
    positions = jnp.maximum(cache.next_position[:, None] + counts - 1, 0)
    mask = AttentionMask(valid, causal=True, window=c.sliding_window, q_shift=cache.index)
    attn_mask = (mask.dense(length, valid.shape[1]) if c.attention == "dense"
                 else Blockwise(mask, "flash", c.attention_tile))
    h = model.embed_tokens(tokens)

    def body(layer, carry, index):
        h, keys, values = carry
        h, (keys, values) = layer(h, positions, attn_mask, adapter_ids, (keys, values, index),
                                  cache.index)
        return (h, keys, values), None

    (h, keys, values), _ = scan_layers(body, model.layers, (h, cache.keys, cache.values),
                                       jnp.arange(c.num_layers, dtype=jnp.int32))
    return h, KVCache(keys, values, valid, cache.next_position + counts[:, -1],
                      cache.index + length)


def _chunked(model: Transformer, cache: KVCache, prompt: Array, prompt_mask: Array,
             adapter_ids: Array | None, chunk: int) -> tuple[Array, KVCache]:
    """:func:`extend` over the prompt in chunks of ``chunk`` tokens (the remainder first:
    it holds the left padding); returns the last token's hidden state ``[B, hidden]``."""
    length = prompt.shape[1]
    first = length % chunk
    if first:
        _, cache = extend(model, cache, prompt[:, :first], prompt_mask[:, :first], adapter_ids)

    def step(i, carry):
        cache, _ = carry
        start = first + i * chunk
        ids, keep = (jax.lax.dynamic_slice_in_dim(x, start, chunk, axis=1)
                     for x in (prompt, prompt_mask))
        h, cache = extend(model, cache, ids, keep, adapter_ids)
        return cache, h[:, -1]

    hidden = jnp.zeros((prompt.shape[0], model.config.hidden_size), model.embed.dtype)
    cache, last = jax.lax.fori_loop(0, length // chunk, step, (cache, hidden))
    return last, cache


def prefill(
    model: Transformer,
    prompt: Array,
    prompt_mask: Array | None = None,
    *,
    max_length: int,
    adapter_ids: Array | None = None,
    prefill_chunk: int | None = PREFILL_CHUNK,
) -> tuple[Array, KVCache]:
    """Run the (left-padded) prompt and fill a cache of ``max_length`` slots.

    Args:
        model: the transformer.
        prompt: ``[B, P]`` ids, left-padded.
        prompt_mask: ``[B, P]`` bool, False at the left padding (default: all True).
        max_length: total slots: prompt plus tokens to generate.
        adapter_ids: ``[B]`` LoRA adapter per example.
        prefill_chunk: prompt tokens per pass (None: the whole prompt in one pass).

    Returns:
        ``(logits[B, vocab], cache)``: next-token logits after the prompt, and the cache.
    """
    batch, length = prompt.shape
    if max_length < length:
        raise ConfigError(f"max_length={max_length} is shorter than the prompt ({length})")
    if prefill_chunk is not None and (not isinstance(prefill_chunk, int) or prefill_chunk < 1):
        raise ConfigError(f"prefill_chunk must be a positive int or None, got {prefill_chunk!r}")
    model = model.in_compute_dtype()
    if prompt_mask is None:
        prompt_mask = jnp.ones(prompt.shape, bool)
    cache = empty_cache(model, batch, max_length)
    last, cache = _chunked(model, cache, prompt, prompt_mask, adapter_ids,
                           length if prefill_chunk is None else min(prefill_chunk, length))
    return model.project(model.norm(last), adapter_ids), cache


def decode_step(
    model: Transformer, cache: KVCache, tokens: Array, adapter_ids: Array | None = None
) -> tuple[Array, KVCache]:
    """Feed one token per row (``tokens[B]``); return next-token logits ``[B, vocab]`` and cache."""
    model = model.in_compute_dtype()
    h, cache = extend(model, cache, tokens[:, None], jnp.ones((tokens.shape[0], 1), bool),
                      adapter_ids)
    return model.project(model.norm(h[:, 0]), adapter_ids), cache
