"""Per-token statistics of a head at target ids: the entry into the chunked kernel.

:func:`token_outs` checks the inputs, plans the chunks, pads and reshapes the
tokens and runs the kernel's custom VJP on one device; :func:`target_outs` also
splits the targets (ignored, invalid) and, for a head split over the vocabulary
on a mesh, runs the kernel per shard (:mod:`jaxlean.loss.vocab_parallel`).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.loss._checks import (
    Targets,
    check_chunk,
    check_ignore_index,
    check_inputs,
    head_vocab,
    split_targets,
)
from jaxlean.loss._kernel import (
    Outs,
    Want,
    callable_head_stats,
    callable_operands,
    make_plan,
    matrix_head_stats,
)
from jaxlean.loss.vocab_parallel import VocabParallel, sharded_token_stats

__all__ = ["apply_targets", "target_outs", "token_outs"]


def token_outs(hidden, head, targets, chunk_size, vocab_chunk, want: Want) -> Outs:
    """Per-token :class:`Outs` in the accumulation dtype, on one device."""
    check_inputs(hidden, targets)
    check_chunk("chunk_size", chunk_size)
    if vocab_chunk is not None:
        check_chunk("vocab_chunk", vocab_chunk)
    is_matrix = isinstance(head, (jax.Array, np.ndarray))
    if vocab_chunk is not None and not is_matrix:
        raise ConfigError("vocab_chunk needs an [H, V] matrix head: a callable head always "
                          "returns the whole vocabulary (lower chunk_size to save memory)")
    batch, width = hidden.shape[:-1], hidden.shape[-1]
    n_tokens = math.prod(batch)
    vocab, logits_dtype = head_vocab(head, hidden, min(chunk_size, max(n_tokens, 1)))
    dtype = jnp.promote_types(jnp.float32, logits_dtype)
    plan = make_plan(n_tokens, vocab, width, is_matrix, chunk_size, vocab_chunk, want, dtype)
    if n_tokens == 0:
        zeros = jnp.zeros(batch, dtype)
        top = jnp.zeros((*batch, want.top_k), dtype)
        return Outs(zeros, zeros, zeros, zeros, top, top.astype(jnp.int32))

    padded = plan.chunk * plan.n_chunks
    flat_h = jnp.reshape(hidden, (n_tokens, width))
    flat_t = jnp.reshape(targets, (n_tokens,)).astype(jnp.int32)
    if padded != n_tokens:  # zero rows, target 0: finite values, zero cotangents
        flat_h = jnp.pad(flat_h, ((0, padded - n_tokens), (0, 0)))
        flat_t = jnp.pad(flat_t, (0, padded - n_tokens))
    chunks_h = flat_h.reshape(plan.n_chunks, plan.chunk, width)
    chunks_t = flat_t.reshape(plan.n_chunks, plan.chunk)

    if is_matrix:
        outs = matrix_head_stats(plan)(jnp.asarray(head), chunks_h, chunks_t)
    else:
        operands, apply = callable_operands(head, plan.chunk, width, hidden.dtype)
        outs = callable_head_stats(apply, plan)(operands, chunks_h, chunks_t)
    return Outs(*(o.reshape(padded, *o.shape[2:])[:n_tokens].reshape(*batch, *o.shape[2:])
                  for o in outs))


def target_outs(hidden, head, targets, chunk_size, vocab_chunk, want: Want,
                vocab_parallel: VocabParallel | None, ignore_index: int | None
                ) -> tuple[Outs, Targets]:
    """:func:`token_outs` (per vocabulary shard when the head is split over a mesh) of the
    safe target ids, with ignored and invalid targets applied (see :func:`apply_targets`)."""
    check_inputs(hidden, targets)
    vocab, _ = head_vocab(head, hidden, min(chunk_size, max(math.prod(hidden.shape[:-1]), 1)))
    t = split_targets(targets, vocab, check_ignore_index(ignore_index))
    outs = functools.partial(token_outs, chunk_size=chunk_size, vocab_chunk=vocab_chunk,
                             want=want)
    if vocab_parallel is None:
        return apply_targets(outs(hidden, head, t.ids), t), t
    if not isinstance(head, (jax.Array, np.ndarray)):
        raise ConfigError("vocab_parallel needs an [H, V] matrix head split over the "
                          f"vocabulary, got a callable head {type(head).__name__}")
    sharded = Outs(*sharded_token_stats(vocab_parallel, outs, hidden, jnp.asarray(head), t.ids))
    return apply_targets(sharded, t), t


def apply_targets(outs: Outs, t: Targets) -> Outs:
    """``outs`` with the target logit set so that ``target - lse`` is 0 where ignored (no
    gradient reaches it) and NaN where the target was invalid."""
    target = jnp.where(t.invalid, jnp.nan, outs.target)
    if t.ignored is not None:
        target = jnp.where(t.ignored, outs.lse, target)
    return outs._replace(target=target)
