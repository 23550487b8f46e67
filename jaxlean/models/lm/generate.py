"""Rollouts: complete prompts with the KV cache, stopping where the checkpoint says.

:func:`generate` pads prompts to a few bucket sizes and passes each row's
length and token limit as data, so a stream of prompts of every length
compiles once per bucket (an RL loop would otherwise compile at almost every
step), and returns what a policy-gradient loss needs besides the tokens: each
token's log-prob, the lengths and why each row ended.

Like ``transformers``' ``generate``, it takes what the call does not say from the
checkpoint's generation config (:mod:`jaxlean.models.lm.generation_config`): the
end-of-sequence ids (one or several), the pad id, ``do_sample`` and the sampling
filters, the length limits. A row ends at (and includes) its first end-of-sequence
id; what follows is ``pad_id``, masked, with log-prob 0. The prompt pass and the
decoding steps are those of :mod:`jaxlean.models.lm.kv_cache` (blockwise attention,
the prompt in chunks: memory linear in the prompt's length).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm._prompts import left_padded, prompt_rows, stop_table
from jaxlean.models.lm.generation_config import generation_defaults
from jaxlean.models.lm.kv_cache import PREFILL_CHUNK, KVCache, decode_step, prefill
from jaxlean.models.lm.lora import check_adapter_ids
from jaxlean.models.lm.sampling import Sampling, choose, resolve_sampling
from jaxlean.models.lm.transformer import Transformer, check_tokens

__all__ = ["FINISH_REASONS", "Buckets", "KVCache", "Rollout", "bucket", "decode_step", "generate",
           "greedy_program", "prefill"]

FINISH_REASONS = ("length", "stop", "stop_sequence")
"""``Rollout.finish_reason`` indexes this: the length limit, an eos id, a stop sequence."""

Buckets = Sequence[int] | Literal["pow2", "exact"]
"""Padded sizes: ``"pow2"`` (powers of two, at least 8), ``"exact"`` (no padding: one
compile per size), or an increasing sequence of allowed sizes."""

_SMALLEST_POW2 = 8
_SLOT_MULTIPLE = 8  # cache slots: blockwise attention's key tile divides them (>= 8)


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


def _rollout(model, prompt, prompt_mask, adapter_ids, key, limits, eos, stops, pad_id, values,
             new_tokens: int, greedy: bool, slots: int, prefill_chunk: int | None) -> Rollout:
    batch = prompt.shape[0]
    model = model.in_compute_dtype()
    logits, cache = prefill(model, prompt, prompt_mask, max_length=slots,
                            adapter_ids=adapter_ids, prefill_chunk=prefill_chunk)
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


_compiled_rollout = eqx.filter_jit(_rollout)  # named jit(_rollout) in compile stats


def _slots(width: int, new_tokens: int) -> int:
    return -(-(width + new_tokens) // _SLOT_MULTIPLE) * _SLOT_MULTIPLE


def greedy_program(batch: int, prompt_length: int, max_new_tokens: int, *,
                   prompt_buckets: Buckets = "pow2", length_buckets: Buckets = "pow2",
                   prefill_chunk: int | None = PREFILL_CHUNK
                   ) -> tuple[Callable, tuple[jax.ShapeDtypeStruct, ...]]:
    """The program :func:`generate` runs for ``batch`` greedy rows whose longest prompt has
    ``prompt_length`` tokens, without eos ids or stop sequences, to compile ahead of time.

    Returns ``(fn, shapes)``: ``fn(model, prompt, prompt_mask, limits) -> Rollout`` and the
    shapes of its last three arguments, so that
    ``jax.jit(fn).trace(model, *shapes).lower().compile().memory_analysis()`` tells the
    memory a rollout takes without running it (``model`` may be abstract,
    ``eqx.filter_eval_shape``).
    """
    width = bucket(prompt_length, prompt_buckets, "prompt length")
    new_tokens = bucket(max_new_tokens, length_buckets, "max_new_tokens")
    eos, stops = stop_table((), (), 1)
    values = Sampling(0.0).values()

    def fn(model, prompt, prompt_mask, limits):
        return _rollout(model, prompt, prompt_mask, None, None, limits, eos, stops,
                             np.asarray(0, np.int32), values, new_tokens, True,
                             _slots(width, new_tokens), prefill_chunk)

    return fn, (jax.ShapeDtypeStruct((batch, width), jnp.int32),
                jax.ShapeDtypeStruct((batch, width), jnp.bool_),
                jax.ShapeDtypeStruct((batch,), jnp.int32))


def _token_limits(max_new_tokens, defaults, rows: list[np.ndarray]) -> np.ndarray:
    """Each row's new-token limit: the call's, else the checkpoint's ``max_new_tokens``, else
    its ``max_length`` less the row's prompt (``transformers``' total length)."""
    if max_new_tokens is None:
        if defaults.max_new_tokens is not None:
            max_new_tokens = defaults.max_new_tokens
        elif defaults.max_length is not None:
            limits = np.asarray([defaults.max_length - len(row) for row in rows])
            short = np.flatnonzero(limits < 1)
            if short.size:
                i = int(short[0])
                raise ConfigError(f"prompt {i} has {len(rows[i])} tokens, not fewer than the "
                                  f"generation config's max_length={defaults.max_length}; "
                                  "pass max_new_tokens")
            return limits.astype(np.int32)
        else:
            raise ConfigError("generate needs max_new_tokens: the model's generation config "
                              "sets neither max_new_tokens nor max_length")
    limits = np.asarray(max_new_tokens)
    if limits.shape not in ((), (len(rows),)) or not np.issubdtype(limits.dtype, np.integer) \
            or limits.min() < 1:
        raise ConfigError(f"max_new_tokens must be integers >= 1, one for every row or one per "
                          f"row ({len(rows)}), got {max_new_tokens}")
    return np.broadcast_to(limits.astype(np.int32), (len(rows),))


def _check_positions(rows: list[np.ndarray], limits: np.ndarray, most: int | None) -> None:
    """Refuse a row whose prompt and token limit exceed the model's positions, naming both."""
    if most is None:
        return
    for i, (row, limit) in enumerate(zip(rows, limits, strict=True)):
        if len(row) + int(limit) > most:
            raise ConfigError(
                f"prompt {i} has {len(row)} tokens and max_new_tokens is {int(limit)}: "
                f"{len(row) + int(limit)} positions, more than the model's "
                f"max_position_embeddings={most}; shorten the prompt or max_new_tokens")


def _check_key(key: Array | None, greedy: bool, rows: int) -> Array | None:
    if greedy:
        return None
    if key is None:
        raise ConfigError("sampling (do_sample=True, or temperature > 0) needs a PRNG key")
    typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    if (key.ndim - (0 if typed else 1)) not in (0, 1) or (
            key.ndim == (1 if typed else 2) and key.shape[0] != rows):
        raise ConfigError(f"key must be one PRNG key or one per returned row ({rows}), got "
                          f"shape {key.shape}")
    return key


def generate(
    model: Transformer,
    prompt: Array | np.ndarray | Sequence[Sequence[int]],
    prompt_mask: Array | np.ndarray | None = None,
    *,
    attention_mask: Array | np.ndarray | None = None,
    max_new_tokens: int | Sequence[int] | None = None,
    key: Array | None = None,
    do_sample: bool | None = None,
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
    min_p: float | None = None,
    num_return_sequences: int | None = None,
    eos_id: int | Sequence[int] | None = None,
    stop_sequences: Sequence[Sequence[int]] = (),
    pad_id: int | None = None,
    adapter_ids: Array | None = None,
    generation_config: dict | None = None,
    prompt_buckets: Buckets = "pow2",
    length_buckets: Buckets = "pow2",
    prefill_chunk: int | None = PREFILL_CHUNK,
) -> Rollout:
    """Complete each prompt, compiling once per (batch, prompt bucket, new-token bucket).

    Prompts are left-aligned into the smallest prompt bucket that holds the
    longest one, and the cache gets the new-token bucket of the largest
    ``max_new_tokens``; each row's own prompt length and token limit are data, so
    other lengths within the same buckets reuse the compiled program, as do
    other filter values, eos ids and stop sequences (up to 4 of each, 4 tokens
    long, before the padded table grows). Decoding stops early once every row
    is done. Ids are checked before anything runs.

    An argument left at None takes the model's generation config
    (:func:`~jaxlean.models.lm.generation_config.generation_defaults`: a loaded
    checkpoint's ``generation_config.json`` and ``config.json``), as ``transformers``
    does; a model built here has none.

    Args:
        model: the transformer.
        prompt: a list of id sequences (any lengths, at least 1), or a padded
            ``[B, P]`` array with ``attention_mask``; the padding may be on either side
            (the real ids of a row are taken in order). An array without a mask
            whose row ends with ``pad_id`` (given, or the config's, or the first eos id)
            is refused as right-padded.
        prompt_mask: ``[B, P]`` bool or 0/1, False at padding (default: no padding).
        attention_mask: Hugging Face's name for ``prompt_mask`` (give one of them).
        max_new_tokens: a limit for every row, or one per prompt (default: the config's
            ``max_new_tokens``, else its ``max_length`` less each prompt).
        key: PRNG key, or one per returned row, when sampling.
        do_sample: sample (True) or take the argmax (False); default: True when
            ``temperature`` is given above 0, False when it is 0, else the config's.
        temperature, top_k, top_p, min_p: see :class:`~jaxlean.models.lm.sampling.Sampling`
            and :func:`~jaxlean.models.lm.sampling.resolve_sampling` (Hugging Face's
            semantics and, for a checkpoint, defaults: ``top_k=50`` unless set).
        num_return_sequences: completions per prompt (sampling only, as in
            ``transformers``): returned rows ``i * n .. i * n + n - 1`` are prompt ``i``'s.
        eos_id: ids that end a row (reason ``"stop"``; default: the config's, e.g.
            Llama 3's and Qwen's several); ``()`` for none.
        stop_sequences: id sequences that end a row once its completion ends
            with one (reason ``"stop_sequence"``); matched within the completion.
        pad_id: the id after a row's end (default: the config's, else the first eos
            id, else 0).
        adapter_ids: ``[B]`` LoRA adapter per prompt (checked against the adapters' count).
        generation_config: generation_config.json fields to use instead of the
            checkpoint's (``{}``: none of them).
        prompt_buckets, length_buckets: the padded prompt and new-token sizes
            (see :data:`Buckets`).
        prefill_chunk: prompt tokens per pass of the prompt (None: all at once).

    Returns:
        A :class:`Rollout` of ``B * num_return_sequences`` rows.

    Raises:
        ConfigError: a prompt plus its ``max_new_tokens`` beyond the model's
            ``max_position_embeddings`` (both numbers named), an unknown or unsupported
            generation-config field (named), bad sampling values.
    """
    vocab = model.config.vocab_size
    defaults = generation_defaults(model, generation_config)
    sampling = resolve_sampling(defaults, vocab, do_sample, temperature, top_k, top_p, min_p)
    copies = (num_return_sequences if num_return_sequences is not None
              else defaults.num_return_sequences or 1)
    if not isinstance(copies, int) or isinstance(copies, bool) or copies < 1:
        raise ConfigError(f"num_return_sequences must be a positive int, got {copies!r}")
    if copies > 1 and sampling.greedy:
        raise ConfigError(f"num_return_sequences={copies} needs sampling (do_sample=True): "
                          f"greedy decoding returns the same completion {copies} times "
                          "(transformers refuses it too)")
    if attention_mask is not None:
        if prompt_mask is not None:
            raise ConfigError("generate: give attention_mask or prompt_mask (the same mask "
                              "under Hugging Face's and jaxlean's names), not both")
        prompt_mask = attention_mask
    eos_ids = defaults.eos_ids if eos_id is None else tuple(
        int(i) for i in ((eos_id,) if isinstance(eos_id, (int, np.integer)) else eos_id))
    known_pad = (int(pad_id) if pad_id is not None else defaults.pad_id
                 if defaults.pad_id is not None else eos_ids[0] if eos_ids else None)
    pad_id = 0 if known_pad is None else known_pad
    rows = prompt_rows(prompt, prompt_mask, known_pad)
    if not rows:
        raise DataError("generate: no prompts")
    check_adapter_ids(model, adapter_ids, len(rows))
    for i, row in enumerate(rows):
        if not len(row):
            raise DataError(f"prompt {i} is empty (generation needs at least one token)")
        check_tokens(row, vocab, what=f"prompt {i}: token id")
    limits = _token_limits(max_new_tokens, defaults, rows)
    _check_positions(rows, limits, defaults.max_positions)
    eos, stops = stop_table(eos_ids, stop_sequences, vocab)
    if not 0 <= pad_id < vocab:
        raise ConfigError(f"pad_id {pad_id} is outside the vocabulary [0, {vocab})")
    key = _check_key(key, sampling.greedy, len(rows) * copies)
    width = bucket(max(len(row) for row in rows), prompt_buckets, "prompt length")
    ids, mask = left_padded(rows, width, pad_id)
    new_tokens = bucket(int(limits.max()), length_buckets, "max_new_tokens")
    if copies > 1:  # each prompt's copies consecutive, as transformers' repeat_interleave
        ids, mask, limits = (np.repeat(x, copies, axis=0) for x in (ids, mask, limits))
        if adapter_ids is not None:
            adapter_ids = jnp.repeat(jnp.asarray(adapter_ids), copies, axis=0)
    return _compiled_rollout(model, ids, mask, adapter_ids, key, limits, eos, stops,
                             np.asarray(pad_id, np.int32), sampling.values(), new_tokens,
                             sampling.greedy, _slots(width, new_tokens), prefill_chunk)
