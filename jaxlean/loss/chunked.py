"""Per-token statistics of a language-model head without materialising ``[tokens, vocab]`` logits.

:func:`token_logprobs`, :func:`token_stats` (entropy, logsumexp, argmax, top-k,
temperature) and :func:`cross_entropy` (masks, z-loss, label smoothing) share one
chunked pass over the head.

A language model's head turns ``T`` hidden states into ``[T, V]`` logits; at
``T=8192, V=151936`` that is 5 GB in float32, and autodiff keeps several such
buffers for the backward pass. Here the tokens are processed in chunks (and,
for a matrix head, the vocabulary in blocks with an online logsumexp), under a
``custom_vjp`` whose backward pass recomputes each block's logits. Only the
inputs and one float per token are saved, so the saving does not depend on the
caller using ``jax.checkpoint``. Accumulation is float32 for bf16 inputs.
The top-k is a running merge of each block's top-k, so it needs no ``[T, V]``
array either.

:func:`cross_entropy` with ``"mean"`` or ``"sum"`` (on one device, with the
vocabulary unsplit) instead computes each chunk's gradient in the forward pass and
skips the recomputation (:mod:`jaxlean.loss.onepass`).

The head is an ``[H, V]`` matrix or a callable ``chunk [C, H] -> logits [C, V]``
(LoRA on the head, tied embeddings, a bias, soft-capping). Gradients reach a
callable head's parameters in two ways, both handled inside the custom VJP:
array leaves of the callable itself when it is a pytree (an Equinox module, a
``jax.tree_util.Partial``), and arrays it closes over that are being
differentiated (hoisted with :func:`jax.closure_convert`).

A matrix head split over the vocabulary on a device mesh (:class:`VocabParallel`)
is handled per shard and combined with per-token collectives; see
:mod:`jaxlean.loss.vocab_parallel`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.loss._checks import (
    IGNORE_INDEX,
    Head,
    Reduction,
    check_chunk,
    check_ignore_index,
    check_inputs,
    check_temperature,
    check_top_k,
    head_vocab,
    keep_mask,
    masked_targets,
    reduce_tokens,
    split_targets,
)
from jaxlean.loss._kernel import AUTO_BLOCK_BYTES, Want
from jaxlean.loss._per_token import target_outs
from jaxlean.loss._token_ids import ids_to_predict
from jaxlean.loss.onepass import onepass_sum
from jaxlean.loss.vocab_parallel import VocabParallel

__all__ = [
    "AUTO_BLOCK_BYTES",
    "IGNORE_INDEX",
    "Head",
    "Reduction",
    "TokenStats",
    "VocabParallel",
    "cross_entropy",
    "one_pass_applies",
    "reduce_tokens",
    "token_logprobs",
    "token_stats",
]


class TokenStats(NamedTuple):
    """Per-token statistics of ``softmax(logits / temperature)`` (see :func:`token_stats`).

    Attributes:
        logprobs: ``log p(target)`` ``[..., T]``.
        entropy: entropy of each token's distribution ``[..., T]``.
        logsumexp: ``logsumexp(logits / temperature)`` ``[..., T]`` (for z-loss).
        argmax: the most likely token id ``[..., T]`` (``argmax == targets`` is token accuracy).
        top_logprobs: the ``top_k`` largest log-probs, in decreasing order ``[..., T, k]``.
        top_ids: their token ids ``[..., T, k]``.
    """

    logprobs: jax.Array
    entropy: jax.Array
    logsumexp: jax.Array
    argmax: jax.Array
    top_logprobs: jax.Array
    top_ids: jax.Array


def token_stats(hidden: jax.Array, head: Head, *positional: Any,
                labels: jax.Array | None = None, targets: jax.Array | None = None,
                top_k: int = 1, temperature: float = 1.0, chunk_size: int = 1024,
                vocab_chunk: int | None = None, vocab_parallel: VocabParallel | None = None,
                ignore_index: int | None = IGNORE_INDEX) -> TokenStats:
    """Every per-token quantity of ``softmax(hidden @ head / temperature)`` in one chunked pass.

    The log-prob of the target, the entropy, the logsumexp, the argmax and the
    ``top_k`` largest log-probs with their ids are gathered in one pass over the
    head (the top-k by a running merge across vocabulary blocks), so no
    ``[tokens, vocab]`` array exists. Log-probs, entropy, logsumexp and the top-k
    log-probs are differentiable (the top-k ids are held fixed, as for a gather).

    Args:
        hidden, head, labels, targets, chunk_size, vocab_chunk, vocab_parallel, ignore_index: as
            in :func:`token_logprobs` (an ignored target's log-prob is 0; the other
            statistics do not depend on the target).
        top_k: how many of the largest log-probs to return (``1 <= top_k <= V``).
        temperature: logits are divided by it (> 0) before the softmax.

    Returns:
        A :class:`TokenStats` of float32 arrays (float64 for float64 inputs) and int32 ids.
    """
    targets, _ = ids_to_predict("token_stats", positional, labels, targets,
                                ignore_index=ignore_index)
    temperature = check_temperature(temperature)
    check_inputs(hidden, targets)
    top_k = check_top_k(top_k, head_vocab(head, hidden, 1)[0])
    want = Want(entropy=True, top_k=top_k, temperature=temperature)
    outs, _ = target_outs(hidden, head, targets, chunk_size, vocab_chunk, want, vocab_parallel,
                          ignore_index)
    lse = outs.lse
    return TokenStats(outs.target - lse, outs.entropy, lse, outs.top_ids[..., 0],
                      outs.top - lse[..., None], outs.top_ids)


def token_logprobs(hidden: jax.Array, head: Head, *positional: Any,
                   labels: jax.Array | None = None, targets: jax.Array | None = None,
                   chunk_size: int = 1024, vocab_chunk: int | None = None,
                   temperature: float = 1.0,
                   vocab_parallel: VocabParallel | None = None,
                   ignore_index: int | None = IGNORE_INDEX) -> jax.Array:
    """Per-token ``log p(target)`` without materialising the ``[tokens, vocab]`` logits.

    Equal to ``take(log_softmax(hidden @ head / temperature), targets)`` in value
    and gradient, with memory that depends on the chunk sizes, not on ``T * V``.
    For the entropy, top-k or argmax as well, use :func:`token_stats`.

    Args:
        hidden: final hidden states ``[..., T, H]`` (any leading batch dims).
        head: an ``[H, V]`` matrix, or a callable mapping a chunk ``[C, H]`` of
            hidden states (tokens flattened) to logits ``[C, V]`` (LoRA, tied
            embeddings, a bias, soft-capping; gradients reach its arrays).
        labels: integer token ids ``[..., T]`` aligned with the inputs, as Hugging Face's
            ``labels``: position ``t`` predicts ``labels[..., t + 1]`` (shifted here; the
            last position predicts nothing). Give ``labels`` or ``targets``, by keyword:
            a positional array raises :class:`ConfigError` (it could be either).
        targets: integer token ids ``[..., T]`` in ``[0, V)``, or ``ignore_index``,
            already shifted: position ``t`` predicts ``targets[..., t]``.
        chunk_size: tokens per chunk; token counts that do not divide are split
            into equal chunks and padded, without changing results.
        vocab_chunk: vocabulary columns per block (matrix heads only). ``None``
            picks blocks so each ``[chunk, block]`` logits block stays under
            :data:`AUTO_BLOCK_BYTES`; pass ``V`` for one block.
        temperature: logits are divided by it (> 0) before the softmax.
        vocab_parallel: for an ``[H, V]`` head sharded over the vocabulary on a
            mesh axis (and tokens over other axes, on hidden's axis 0): each
            device works on its own columns and only per-token floats cross
            devices, never the head. Chunk sizes apply per device.
        ignore_index: the target id meaning "no token here" (Hugging Face's ``-100``
            labels); its log-prob is 0 with no gradient. ``None``: nothing ignored.
            Any other id outside ``[0, V)`` raises :class:`DataError` when the
            targets are concrete; under ``jit`` its log-prob is NaN.

    Returns:
        ``logprobs [..., T]`` in float32 (float64 for float64 inputs).
    """
    targets, _ = ids_to_predict("token_logprobs", positional, labels, targets,
                                ignore_index=ignore_index)
    want = Want(temperature=check_temperature(temperature))
    outs, _ = target_outs(hidden, head, targets, chunk_size, vocab_chunk, want, vocab_parallel,
                          ignore_index)
    return outs.target - outs.lse


def cross_entropy(hidden: jax.Array, head: Head, *positional: Any,
                  labels: jax.Array | None = None, targets: jax.Array | None = None,
                  mask: jax.Array | None = None, reduction: Reduction = "mean",
                  z_loss: float = 0.0, label_smoothing: float = 0.0, chunk_size: int = 1024,
                  vocab_chunk: int | None = None, vocab_parallel: VocabParallel | None = None,
                  ignore_index: int | None = IGNORE_INDEX) -> jax.Array:
    """Next-token cross-entropy ``-log p(target) + z_loss * logsumexp²`` computed in chunks.

    With ``label_smoothing=ε`` the target distribution is ``(1 - ε)`` on the target
    plus ``ε / V`` on every token, so the loss is
    ``(1 - ε) * -log p(target) + ε * mean_j(-log p_j)``.

    Args:
        hidden, head, labels, targets, chunk_size, vocab_chunk, vocab_parallel: as in
            :func:`token_logprobs` (``labels=`` unshifted or ``targets=`` shifted, by
            keyword).
        mask: ``[..., T]`` booleans or float weights; masked-out tokens (``False``
            or ``0``) count for nothing and their targets may be any value. Per
            position of ``targets``, or, with ``labels``, per label (shifted with them).
        ignore_index: targets equal to it count for nothing, as if masked out
            (Hugging Face's ``-100``; ``None``: nothing ignored). Any other target
            outside ``[0, V)`` raises :class:`DataError` when concrete and makes
            the loss NaN under ``jit``.
        reduction: ``"mean"`` (weighted mean over unmasked tokens; 0 if none),
            ``"sum"`` or ``"none"`` (per-token losses, masked ones 0).
        z_loss: weight of the ``logsumexp²`` regulariser (PaLM), 0 to disable.
        label_smoothing: ``ε`` in ``[0, 1]``.

    Returns:
        A scalar, or ``[..., T]`` for ``reduction="none"``; float32 (float64 for float64 inputs).
    """
    if reduction not in ("mean", "sum", "none"):
        raise ConfigError(f"unknown reduction {reduction!r}: use 'mean', 'sum' or 'none'")
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float)) \
            or not 0 <= label_smoothing <= 1:
        raise ConfigError(f"label_smoothing must be a number in [0, 1], got {label_smoothing!r}")
    targets, shifted = ids_to_predict("cross_entropy", positional, labels, targets,
                                      ignore_index=ignore_index, per_token={"mask": mask})
    mask = shifted["mask"]
    check_inputs(hidden, targets)
    targets = masked_targets(targets, mask)
    if reduction != "none" and one_pass_applies(hidden, head, chunk_size, vocab_chunk,
                                                vocab_parallel):
        return _one_pass_cross_entropy(hidden, head, targets, mask, reduction, z_loss,
                                       label_smoothing, chunk_size, ignore_index)
    want = Want(logit_sum=bool(label_smoothing))
    outs, t = target_outs(hidden, head, targets, chunk_size, vocab_chunk, want, vocab_parallel,
                          ignore_index)
    losses = outs.lse - outs.target
    if label_smoothing:
        vocab = head_vocab(head, hidden, 1)[0]
        uniform = outs.lse - outs.total / vocab
        losses = (1 - label_smoothing) * losses + label_smoothing * uniform
    if z_loss:
        losses = losses + z_loss * jnp.square(outs.lse)
    return reduce_tokens(jnp.where(t.invalid, jnp.nan, losses), keep_mask(mask, t), reduction)


def one_pass_applies(hidden: jax.Array, head: Head, chunk_size: int, vocab_chunk: int | None,
                     vocab_parallel: VocabParallel | None) -> bool:
    """Whether a scalar loss can take the one-pass path of :mod:`jaxlean.loss.onepass`:
    one device, some tokens, and chunks over the whole vocabulary (no ``vocab_chunk``
    below ``V``). Otherwise the logits are recomputed in the backward pass."""
    check_chunk("chunk_size", chunk_size)
    if vocab_parallel is not None or math.prod(hidden.shape[:-1]) == 0:
        return False
    if vocab_chunk is None:
        return True
    check_chunk("vocab_chunk", vocab_chunk)
    is_matrix = isinstance(head, (jax.Array, np.ndarray))
    return is_matrix and vocab_chunk >= head_vocab(head, hidden, 1)[0]


def _one_pass_cross_entropy(hidden, head, targets, mask, reduction, z_loss, label_smoothing,
                            chunk_size, ignore_index) -> jax.Array:
    """:func:`cross_entropy` (``"mean"`` or ``"sum"``) with its gradient computed in the
    forward pass (:func:`jaxlean.loss.onepass.onepass_sum`)."""
    batch = hidden.shape[:-1]
    vocab, logits_dtype = head_vocab(head, hidden, min(chunk_size, math.prod(batch)))
    dtype = jnp.promote_types(jnp.float32, logits_dtype)
    t = split_targets(targets, vocab, check_ignore_index(ignore_index))
    keep = keep_mask(mask, t)
    weights = jnp.ones(batch, dtype) if keep is None else jnp.asarray(keep).astype(dtype)
    ignored = jnp.zeros(batch, bool) if t.ignored is None else t.ignored

    def per_token(s, w, fixed):
        invalid, ignored = fixed
        losses = s.lse - jnp.where(ignored, s.lse, s.target)
        if label_smoothing:
            losses = (1 - label_smoothing) * losses + label_smoothing * (s.lse - s.total / vocab)
        if z_loss:
            losses = losses + z_loss * jnp.square(s.lse)
        losses = jnp.where(invalid, jnp.nan, losses)
        return jnp.where(w != 0, losses * w, 0)

    want = Want(logit_sum=bool(label_smoothing))
    total, _ = onepass_sum(hidden, head, t.ids, per_token, weights, (t.invalid, ignored), want,
                           chunk_size, vocab, dtype)
    if reduction == "sum":
        return total
    return total / jnp.maximum(jnp.sum(weights), jnp.finfo(dtype).tiny)
