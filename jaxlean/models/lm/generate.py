"""Generation with a per-layer KV cache, using the same stacked layers as training.

The cache holds every layer's keys and values with a leading layer axis, so a
step is one ``scan_layers`` over ``(layer, cache[layer])`` whose outputs are the
updated cache slices: depth costs no extra tracing here either. Batches are
left-padded (every prompt ends at the same slot), so the batch writes one slot
per step; padded slots are never attended to and rotary positions count real
tokens only, which makes step-by-step decoding equal to one full forward pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import Array

from jaxlean.errors import ConfigError
from jaxlean.models.lm.transformer import (
    Transformer,
    check_tokens,
    positions_from_mask,
    window_mask,
)
from jaxlean.nn.layers import scan_layers


class KVCache(NamedTuple):
    """Keys/values of all layers and which slots hold real tokens.

    Attributes:
        keys, values: ``[layers, B, slots, kv_heads, head_dim]``.
        valid: ``[B, slots]`` bool, True at slots holding a real (non-pad) token.
        next_position: ``[B]`` rotary position of the next token of each row.
        index: scalar int, the next slot to write.
    """

    keys: Array
    values: Array
    valid: Array
    next_position: Array
    index: Array


def _run(model, tokens, cache: KVCache, positions, attn_mask, adapter_ids):
    h = model.embed_tokens(tokens)

    def body(layer, h, kv):
        return layer(h, positions, attn_mask, adapter_ids, kv, cache.index)

    h, (keys, values) = scan_layers(body, model.layers, h, (cache.keys, cache.values))
    return h, keys, values


def prefill(
    model: Transformer,
    prompt: Array,
    prompt_mask: Array | None = None,
    *,
    max_length: int,
    adapter_ids: Array | None = None,
) -> tuple[Array, KVCache]:
    """Run the (left-padded) prompt and fill a cache of ``max_length`` slots.

    Args:
        model: the transformer.
        prompt: ``[B, P]`` ids, left-padded.
        prompt_mask: ``[B, P]`` bool, False at the left padding (default: all True).
        max_length: total slots: prompt plus tokens to generate.
        adapter_ids: ``[B]`` LoRA adapter per example.

    Returns:
        ``(logits[B, vocab], cache)``: next-token logits after the prompt, and the cache.
    """
    batch, length = prompt.shape
    if max_length < length:
        raise ConfigError(f"max_length={max_length} is shorter than the prompt ({length})")
    c = model.config
    if prompt_mask is None:
        prompt_mask = jnp.ones(prompt.shape, bool)
    dtype = model.embed.dtype
    shape = (c.num_layers, batch, max_length, c.num_kv_heads, c.head_dim)
    valid = jnp.zeros((batch, max_length), bool).at[:, :length].set(prompt_mask.astype(bool))
    cache = KVCache(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype), valid,
                    jnp.sum(prompt_mask, axis=1).astype(jnp.int32), jnp.asarray(0, jnp.int32))
    slots = jnp.arange(max_length)
    queries = jnp.arange(length)
    attn_mask = (valid[:, None, :] & (slots[None, None, :] <= queries[None, :, None])
                 & window_mask(queries, slots, c.sliding_window)[None])
    h, keys, values = _run(model, prompt, cache, positions_from_mask(prompt_mask), attn_mask,
                           adapter_ids)
    cache = cache._replace(keys=keys, values=values, index=jnp.asarray(length, jnp.int32))
    return model.project(model.norm(h[:, -1]), adapter_ids), cache


def decode_step(
    model: Transformer, cache: KVCache, tokens: Array, adapter_ids: Array | None = None
) -> tuple[Array, KVCache]:
    """Feed one token per row (``tokens[B]``); return next-token logits ``[B, vocab]`` and cache."""
    valid = jax.lax.dynamic_update_slice_in_dim(
        cache.valid, jnp.ones((tokens.shape[0], 1), bool), cache.index, axis=1)
    slots = jnp.arange(valid.shape[1])
    near = window_mask(cache.index[None], slots, model.config.sliding_window)
    attn_mask = (valid & (slots[None, :] <= cache.index) & near)[:, None, :]
    cache = cache._replace(valid=valid)
    h, keys, values = _run(model, tokens[:, None], cache, cache.next_position[:, None],
                           attn_mask, adapter_ids)
    cache = KVCache(keys, values, valid, cache.next_position + 1, cache.index + 1)
    return model.project(model.norm(h[:, 0]), adapter_ids), cache


def sample(logits: Array, key: Array | None, temperature: float = 0.0,
           top_k: int | None = None) -> Array:
    """Next tokens ``[B]``: argmax at ``temperature == 0``, else sampled from the top k."""
    if temperature == 0.0:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    if key is None:
        raise ConfigError("sampling with temperature > 0 needs a PRNG key")
    logits = logits.astype(jnp.float32) / temperature
    if top_k is not None:
        kth = jax.lax.top_k(logits, top_k)[0][..., -1:]
        logits = jnp.where(logits < kth, -jnp.inf, logits)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


@eqx.filter_jit
def _generate(model, prompt, prompt_mask, adapter_ids, key, max_new_tokens, temperature, top_k,
              eos_ids):
    logits, cache = prefill(model, prompt, prompt_mask,
                            max_length=prompt.shape[1] + max_new_tokens, adapter_ids=adapter_ids)
    keys = jax.random.split(key, max_new_tokens)
    first = sample(logits, keys[0], temperature, top_k)
    eos = jnp.asarray(eos_ids, jnp.int32)

    def is_eos(token):
        return jnp.isin(token, eos) if eos_ids else jnp.zeros(token.shape, bool)

    done = is_eos(first)

    def step(state, step_key):
        cache, token, done = state
        logits, cache = decode_step(model, cache, token, adapter_ids)
        nxt = sample(logits, step_key, temperature, top_k)
        if eos_ids:
            nxt = jnp.where(done, eos_ids[0], nxt)
            done = done | is_eos(nxt)
        return (cache, nxt, done), nxt

    _, rest = jax.lax.scan(step, (cache, first, done), keys[1:])
    return jnp.concatenate([first[:, None], rest.T], axis=1)


def generate(
    model: Transformer,
    prompt: Array,
    prompt_mask: Array | None = None,
    *,
    max_new_tokens: int,
    key: Array | None = None,
    temperature: float = 0.0,
    top_k: int | None = None,
    adapter_ids: Array | None = None,
    eos_id: int | Sequence[int] | None = None,
) -> Array:
    """Generate ``max_new_tokens`` per row after a left-padded prompt (jitted; ids checked first).

    Args:
        model: the transformer.
        prompt: ``[B, P]`` ids, left-padded; prompt_mask: False at the padding.
        max_new_tokens: tokens to generate.
        key: PRNG key (needed when ``temperature > 0``).
        temperature: 0 for greedy decoding.
        top_k: sample among the k most likely tokens only.
        adapter_ids: ``[B]`` LoRA adapter per example.
        eos_id: an end-of-sequence id, or several (Llama 3 lists three, see
            :class:`~jaxlean.models.lm.hf_config.GenerationSettings`); once a row
            emits one, the row emits the first of them from then on.

    Returns:
        ``[B, max_new_tokens]`` int32 ids.
    """
    check_tokens(prompt, model.config.vocab_size)
    eos_ids = () if eos_id is None else tuple(
        int(i) for i in ((eos_id,) if isinstance(eos_id, int) else eos_id))
    if max_new_tokens < 1:
        raise ConfigError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if temperature < 0:
        raise ConfigError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and not 1 <= top_k <= model.config.vocab_size:
        raise ConfigError(f"top_k must be in [1, vocab_size], got {top_k}")
    if temperature > 0 and key is None:
        raise ConfigError("sampling with temperature > 0 needs a PRNG key")
    if prompt_mask is None:
        prompt_mask = jnp.ones(prompt.shape, bool)
    key = jax.random.key(0) if key is None else key
    return _generate(model, jnp.asarray(prompt), jnp.asarray(prompt_mask, bool), adapter_ids, key,
                     max_new_tokens, float(temperature), top_k, eos_ids)
