"""Generation with a per-layer KV cache, using the same stacked layers as training.

The cache holds every layer's keys and values with a leading layer axis, so a
step is one ``scan_layers`` over ``(layer, cache[layer])`` whose outputs are the
updated cache slices: depth costs no extra tracing here either. Batches are
left-padded (every prompt ends at the same slot), so the batch writes one slot
per step; padded slots are never attended to and rotary positions count real
tokens only, which makes step-by-step decoding equal to one full forward pass.

:func:`generate` pads prompts to a few bucket sizes and passes each row's
length and token limit as data, so a stream of prompts of every length
compiles once per bucket (an RL loop would otherwise compile at almost every
step), and returns what a policy-gradient loss needs besides the tokens: each
token's log-prob, the lengths and why each row ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.lora import check_adapter_ids
from jaxlean.models.lm.sampling import Sampling, choose
from jaxlean.models.lm.transformer import (
    Transformer,
    check_tokens,
    positions_from_mask,
    window_mask,
)
from jaxlean.nn.layers import scan_layers

__all__ = ["FINISH_REASONS", "Buckets", "KVCache", "Rollout", "bucket", "decode_step", "generate",
           "prefill"]


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



# ----------------------------------------------------------------------------- rollouts

FINISH_REASONS = ("length", "stop", "stop_sequence")
"""``Rollout.finish_reason`` indexes this: the length limit, an eos id, a stop sequence."""

Buckets = Sequence[int] | Literal["pow2", "exact"]
"""Padded sizes: ``"pow2"`` (powers of two, at least 8), ``"exact"`` (no padding: one
compile per size), or an increasing sequence of allowed sizes."""

_SMALLEST_POW2 = 8
_STOP_SLOTS = 4  # eos ids and stop sequences are padded to multiples of this (data, not shapes)


class Rollout(NamedTuple):
    """What :func:`generate` returns: completions, their log-probs, lengths and why they ended.

    ``N`` is the new-token bucket (at least the ``max_new_tokens`` asked for) and
    ``P`` the prompt bucket; shapes depend on the buckets only, so a training
    step on rollouts compiles once per bucket too.

    Attributes:
        tokens: ``[B, N]`` int32 ids; from ``lengths`` on, ``pad_id``.
        logprobs: ``[B, N]`` float32 ``log softmax(logits / temperature)`` of each
            token (temperature 1 when greedy; filters not applied), 0 past the end.
            The same values as :func:`~jaxlean.models.lm.heads.token_stats` on
            :meth:`sequences`.
        lengths: ``[B]`` int32 tokens generated, the stop token or sequence included.
        finish_reason: ``[B]`` int32 index into :data:`FINISH_REASONS`.
        prompt: ``[B, P]`` the prompts, left-padded to the bucket.
        prompt_mask: ``[B, P]`` bool, False at the padding.
    """

    tokens: Array
    logprobs: Array
    lengths: Array
    finish_reason: Array
    prompt: Array
    prompt_mask: Array

    @property
    def completion_mask(self) -> Array:
        """``[B, N]`` bool, True at generated tokens (before ``lengths``)."""
        return jnp.arange(self.tokens.shape[1])[None, :] < self.lengths[:, None]

    def sequences(self) -> tuple[Array, Array]:
        """``(ids, attention_mask)`` ``[B, P + N]``: prompt and completion, padding masked."""
        ids = jnp.concatenate([self.prompt, self.tokens], axis=1)
        return ids, jnp.concatenate([self.prompt_mask, self.completion_mask], axis=1)

    def finish_reasons(self) -> list[str]:
        """Each row's reason by name (``"length"``, ``"stop"``, ``"stop_sequence"``)."""
        return [FINISH_REASONS[int(i)] for i in np.asarray(self.finish_reason)]


def bucket(size: int, buckets: Buckets, what: str = "length") -> int:
    """The padded size for ``size``: the smallest bucket that holds it.

    Raises:
        ConfigError: ``size`` exceeds the largest of explicit ``buckets``, or bad buckets.
    """
    if buckets == "exact":
        return size
    if buckets == "pow2":
        return max(_SMALLEST_POW2, 1 << max(size - 1, 0).bit_length())
    if isinstance(buckets, str):
        raise ConfigError(f"{what} buckets must be 'pow2', 'exact' or a sequence of sizes, "
                          f"got {buckets!r}")
    sizes = [int(b) for b in buckets]
    if not sizes or sizes != sorted(set(sizes)) or sizes[0] < 1:
        raise ConfigError(f"{what} buckets must be increasing positive sizes, got {buckets!r}")
    for b in sizes:
        if size <= b:
            return b
    raise ConfigError(f"{what} {size} exceeds the largest {what} bucket {sizes[-1]}")


def _rows(prompt: Any, prompt_mask: Any, pad_id: int | None) -> list[np.ndarray]:
    """Each prompt's real ids, in order, from a ragged list or a padded array and mask.

    A mask-less array with a row ending in ``pad_id`` (when known) is refused as
    right-padded: those pads would be read as prompt and generated after.
    """
    if isinstance(prompt, (jax.Array, np.ndarray)):
        ids = np.asarray(prompt)
        if ids.ndim != 2:
            raise DataError(f"prompt must be [batch, length] or a list of sequences, got shape "
                            f"{ids.shape}")
        if prompt_mask is None:
            _refuse_right_padding(ids, pad_id)
            return list(ids)
        mask = np.asarray(prompt_mask)
        if mask.shape != ids.shape:
            raise DataError(f"attention_mask (prompt_mask) must have the prompt's shape "
                            f"{ids.shape} ([batch, length], False or 0 at padding), got "
                            f"{mask.shape}")
        return [row[keep] for row, keep in zip(ids, mask.astype(bool), strict=True)]
    if prompt_mask is not None:
        raise ConfigError("attention_mask (prompt_mask) is for a padded [batch, length] array; "
                          "a list of sequences has no padding")
    rows = [np.asarray(row) for row in prompt]
    for i, row in enumerate(rows):
        if row.ndim != 1:
            raise DataError(f"prompt {i} must be a sequence of ids, got shape {row.shape}")
    return rows


def _refuse_right_padding(ids: np.ndarray, pad_id: int | None) -> None:
    """Raise when a row of a mask-less prompt array ends with ``pad_id`` (Hugging Face warns
    on the same sign of right padding); ``None``: no pad id is known, nothing to check."""
    if pad_id is None or not ids.shape[1]:
        return
    ends = np.flatnonzero(ids[:, -1] == pad_id)
    if ends.size:
        raise DataError(
            f"prompt row {int(ends[0])} ends with pad_id {pad_id}: a right-padded batch "
            "without a mask would generate after the pads. Pass attention_mask (False or 0 "
            "at padding, either side) or a list of sequences; if those ids are real tokens, "
            "pass an all-True attention_mask")


def _left_padded(rows: list[np.ndarray], width: int, pad_id: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    ids = np.full((len(rows), width), pad_id, np.int32)
    mask = np.zeros((len(rows), width), bool)
    for i, row in enumerate(rows):
        ids[i, width - len(row):] = row
        mask[i, width - len(row):] = True
    return ids, mask


def _stop_table(eos_ids: tuple[int, ...], stop_sequences: Sequence[Sequence[int]],
                vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Eos ids ``[K]`` and right-aligned stop sequences ``[S, L]``, padded with -1 to
    multiples of :data:`_STOP_SLOTS` so other stop settings reuse the compiled program."""
    seqs = [tuple(int(t) for t in seq) for seq in stop_sequences]
    for where, ids in [("eos_id", eos_ids), *((f"stop_sequences[{i}]", s)
                                              for i, s in enumerate(seqs))]:
        if not ids and where != "eos_id":
            raise ConfigError(f"{where} is empty")
        bad = [t for t in ids if not 0 <= t < vocab]
        if bad:
            raise ConfigError(f"{where}: token id {bad[0]} is outside the vocabulary [0, {vocab})")
    round_up = lambda n: _STOP_SLOTS * max(1, -(-n // _STOP_SLOTS))
    eos = np.full(round_up(len(eos_ids)), -1, np.int32)
    eos[:len(eos_ids)] = eos_ids
    table = np.full((round_up(len(seqs)), round_up(max(map(len, seqs), default=1))), -1, np.int32)
    for i, seq in enumerate(seqs):
        table[i, table.shape[1] - len(seq):] = seq
    return eos, table


class _Loop(NamedTuple):
    cache: KVCache
    logits: Array
    step: Array
    done: Array
    tokens: Array
    logprobs: Array
    lengths: Array
    reason: Array
    recent: Array


@eqx.filter_jit
def _rollout(model, prompt, prompt_mask, adapter_ids, key, limits, eos, stops, pad_id, values,
             new_tokens: int, greedy: bool) -> Rollout:
    batch, width = prompt.shape
    logits, cache = prefill(model, prompt, prompt_mask, max_length=width + new_tokens,
                            adapter_ids=adapter_ids)
    keys = None
    if not greedy:
        if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.wrap_key_data(key)
        keys = jax.random.split(key, batch) if key.ndim == 0 else key
    stop_used = stops >= 0
    stop_real = jnp.any(stop_used, axis=-1)

    def running(s: _Loop) -> Array:
        return (s.step < new_tokens) & ~jnp.all(s.done)

    def advance(s: _Loop) -> _Loop:
        token, logprob = choose(s.logits, values, greedy, keys, s.step)
        active = ~s.done
        token = jnp.where(active, token, pad_id)
        logprob = jnp.where(active, logprob, 0.0)
        recent = jnp.concatenate([s.recent[:, 1:], token[:, None]], axis=1)
        matched = jnp.all((recent[:, None, :] == stops[None]) | ~stop_used[None], axis=-1)
        hit_eos = active & jnp.isin(token, eos)
        hit_stop = active & jnp.any(matched & stop_real[None], axis=-1)
        hit_length = active & (s.step + 1 >= limits)
        reason = jnp.select([hit_eos, hit_stop, hit_length], [1, 2, 0], s.reason)
        logits, cache = decode_step(model, s.cache, token, adapter_ids)
        return _Loop(cache, logits, s.step + 1, s.done | hit_eos | hit_stop | hit_length,
                     jax.lax.dynamic_update_index_in_dim(s.tokens, token, s.step, axis=1),
                     jax.lax.dynamic_update_index_in_dim(s.logprobs, logprob, s.step, axis=1),
                     jnp.where(active, s.step + 1, s.lengths), reason, recent)

    zeros = jnp.zeros((batch,), jnp.int32)
    start = _Loop(cache, logits, jnp.asarray(0, jnp.int32), jnp.zeros((batch,), bool),
                  jnp.full((batch, new_tokens), pad_id, jnp.int32),
                  jnp.zeros((batch, new_tokens), jnp.float32), zeros, zeros,
                  jnp.full((batch, stops.shape[1]), -1, jnp.int32))
    end = jax.lax.while_loop(running, advance, start)
    return Rollout(end.tokens, end.logprobs, end.lengths, end.reason, prompt, prompt_mask)


def generate(
    model: Transformer,
    prompt: Array | np.ndarray | Sequence[Sequence[int]],
    prompt_mask: Array | np.ndarray | None = None,
    *,
    attention_mask: Array | np.ndarray | None = None,
    max_new_tokens: int | Sequence[int],
    key: Array | None = None,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    eos_id: int | Sequence[int] | None = None,
    stop_sequences: Sequence[Sequence[int]] = (),
    pad_id: int | None = None,
    adapter_ids: Array | None = None,
    prompt_buckets: Buckets = "pow2",
    length_buckets: Buckets = "pow2",
) -> Rollout:
    """Complete each prompt, compiling once per (batch, prompt bucket, new-token bucket).

    Prompts are left-aligned into the smallest prompt bucket that holds the
    longest one, and the cache gets the new-token bucket of the largest
    ``max_new_tokens``; each row's own prompt length and token limit are data, so
    other lengths within the same buckets reuse the compiled program, as do
    other filter values, eos ids and stop sequences (up to 4 of each, 4 tokens
    long, before the padded table grows). Decoding stops early once every row
    is done. Ids are checked before anything runs.

    Args:
        model: the transformer.
        prompt: a list of id sequences (any lengths, at least 1), or a padded
            ``[B, P]`` array with ``attention_mask``; the padding may be on either side
            (the real ids of a row are taken in order). An array without a mask
            whose row ends with ``pad_id`` (given, or the first eos id) is refused
            as right-padded.
        prompt_mask: ``[B, P]`` bool or 0/1, False at padding (default: no padding).
        attention_mask: Hugging Face's name for ``prompt_mask`` (give one of them).
        max_new_tokens: a limit for every row, or one per row.
        key: PRNG key, or ``[B]`` keys (one per row), for ``temperature > 0``.
        temperature, top_k, top_p, min_p: see :class:`~jaxlean.models.lm.sampling.Sampling`
            (Hugging Face's semantics); ``temperature=0`` is greedy.
        eos_id: ids that end a row (reason ``"stop"``); Llama 3 lists several.
        stop_sequences: id sequences that end a row once its completion ends
            with one (reason ``"stop_sequence"``); matched within the completion.
        pad_id: the id after a row's end (default: the first eos id, else 0).
        adapter_ids: ``[B]`` LoRA adapter per row (checked against the adapters' count).
        prompt_buckets, length_buckets: the padded prompt and new-token sizes
            (see :data:`Buckets`).

    Returns:
        A :class:`Rollout`.
    """
    vocab = model.config.vocab_size
    sampling = Sampling(float(temperature), top_k, top_p, min_p).check(vocab)
    if attention_mask is not None:
        if prompt_mask is not None:
            raise ConfigError("generate: give attention_mask or prompt_mask (the same mask "
                              "under Hugging Face's and jaxlean's names), not both")
        prompt_mask = attention_mask
    eos_ids = () if eos_id is None else tuple(
        int(i) for i in ((eos_id,) if isinstance(eos_id, int) else eos_id))
    known_pad = int(pad_id) if pad_id is not None else eos_ids[0] if eos_ids else None
    pad_id = 0 if known_pad is None else known_pad
    rows = _rows(prompt, prompt_mask, known_pad)
    if not rows:
        raise DataError("generate: no prompts")
    check_adapter_ids(model, adapter_ids, len(rows))
    for i, row in enumerate(rows):
        if not len(row):
            raise DataError(f"prompt {i} is empty (generation needs at least one token)")
        check_tokens(row, vocab, what=f"prompt {i}: token id")
    limits = np.asarray(max_new_tokens)
    if limits.shape not in ((), (len(rows),)) or not np.issubdtype(limits.dtype, np.integer) \
            or limits.min() < 1:
        raise ConfigError(f"max_new_tokens must be integers >= 1, one for every row or one per "
                          f"row ({len(rows)}), got {max_new_tokens}")
    limits = np.broadcast_to(limits.astype(np.int32), (len(rows),))
    eos, stops = _stop_table(eos_ids, stop_sequences, vocab)
    if not 0 <= pad_id < vocab:
        raise ConfigError(f"pad_id {pad_id} is outside the vocabulary [0, {vocab})")
    if sampling.greedy:
        key = None
    elif key is None:
        raise ConfigError("sampling with temperature > 0 needs a PRNG key")
    else:
        typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
        if (key.ndim - (0 if typed else 1)) not in (0, 1) or (
                key.ndim == (1 if typed else 2) and key.shape[0] != len(rows)):
            raise ConfigError(f"key must be one PRNG key or one per row ({len(rows)}), got "
                              f"shape {key.shape}")
    width = bucket(max(len(row) for row in rows), prompt_buckets, "prompt length")
    ids, mask = _left_padded(rows, width, pad_id)
    new_tokens = bucket(int(limits.max()), length_buckets, "max_new_tokens")
    return _rollout(model, ids, mask, adapter_ids, key, limits, eos, stops,
                    np.asarray(pad_id, np.int32), sampling.values(), new_tokens, sampling.greedy)
