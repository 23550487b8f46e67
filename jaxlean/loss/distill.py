"""Distillation losses between a student and a teacher head, chunked: no ``[T, V]`` logits.

A student ``(hidden_s [..., T, Hs], head_s)`` is trained towards a teacher
``(hidden_t [..., T, Ht], head_t)`` (the hidden sizes may differ; the vocabularies
must match) by a divergence between their next-token distributions at a
temperature. The divergence is a sum over the vocabulary of an elementwise
function ``f(log p_s, log p_t)``, so it is computed in the chunked machinery of
:mod:`jaxlean.loss.chunked`, and neither ``[T, V]`` logit matrix ever exists.

``reduction="none"``, explicit vocabulary blocks and vocabulary-parallel heads take
the recomputing path of :mod:`jaxlean.loss._divergence` (the backward pass
recomputes each block's logits). The scalar losses (``"mean"``, ``"sum"``) otherwise take
the one-pass path of :mod:`jaxlean.loss.onepass`: chunks over the whole vocabulary
whose gradients are computed in the forward pass (3 student and 1 teacher head
products, as for full logits).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean._args import reject_renamed
from jaxlean.errors import ConfigError, StructureError
from jaxlean.loss._checks import (
    IGNORE_INDEX,
    Head,
    Reduction,
    check_chunk,
    check_ignore_index,
    check_temperature,
    check_top_k,
    head_vocab,
    keep_mask,
    reduce_tokens,
    split_targets,
)
from jaxlean.loss._divergence import (
    DivergenceOptions,
    as_constant,
    divergence_per_token,
    sharded_divergence_per_token,
)
from jaxlean.loss.onepass import onepass_divergence_sum
from jaxlean.loss.vocab_parallel import VocabParallel

__all__ = ["DIVERGENCES", "Divergence", "distill_loss"]

Divergence = Literal["forward_kl", "reverse_kl", "jsd", "top_k_kl"]
DIVERGENCES = ("forward_kl", "reverse_kl", "jsd", "top_k_kl")


def _pointwise(divergence: str, beta: float) -> Callable:
    """``f(a, b, selected)`` whose sum over the vocabulary is the divergence, where
    ``a = log p_student``, ``b = log p_teacher`` and ``selected`` marks the teacher's top k."""
    if divergence == "forward_kl":  # KL(teacher || student)
        return lambda a, b, sel: jnp.exp(b) * (b - a)
    if divergence == "reverse_kl":  # KL(student || teacher)
        return lambda a, b, sel: jnp.exp(a) * (a - b)
    if divergence == "top_k_kl":  # KL(teacher || student) over the teacher's top k
        return lambda a, b, sel: jnp.where(sel, jnp.exp(b) * (b - a), 0)
    log_beta, log_rest = math.log(beta), math.log1p(-beta)

    def jsd(a, b, sel):
        mix = jnp.logaddexp(b + log_beta, a + log_rest)
        return beta * jnp.exp(b) * (b - mix) + (1 - beta) * jnp.exp(a) * (a - mix)

    return jsd


def _check(hidden_s, hidden_t, divergence, beta, top_k):
    for name, h in (("hidden_s", hidden_s), ("hidden_t", hidden_t)):
        if not isinstance(h, (jax.Array, np.ndarray)) or h.ndim < 2 \
                or not jnp.issubdtype(h.dtype, jnp.floating):
            raise StructureError(f"{name} must be a floating array [..., T, H], got "
                                 f"{getattr(h, 'shape', type(h).__name__)}")
    if tuple(hidden_s.shape[:-1]) != tuple(hidden_t.shape[:-1]):
        raise StructureError(f"student and teacher must see the same tokens: hidden_s "
                             f"{list(hidden_s.shape)} and hidden_t {list(hidden_t.shape)} differ "
                             f"before the hidden size")
    if divergence not in DIVERGENCES:
        raise ConfigError(f"unknown divergence {divergence!r}: use one of "
                          f"{', '.join(map(repr, DIVERGENCES))}")
    if divergence == "jsd" and (isinstance(beta, bool) or not isinstance(beta, (int, float))
                                or not 0 < beta < 1):
        raise ConfigError(f"beta must be a number in (0, 1) for divergence='jsd', got {beta!r}")
    if divergence == "top_k_kl" and top_k is None:
        raise ConfigError("divergence='top_k_kl' needs top_k (how many of the teacher's most "
                          "likely tokens to compare)")


def distill_loss(hidden_s: jax.Array, head_s: Head, hidden_t: jax.Array, head_t: Head, *,
                 divergence: Divergence = "forward_kl", beta: float = 0.5,
                 top_k: int | None = None, temperature: float = 1.0,
                 mask: jax.Array | None = None, targets: jax.Array | None = None,
                 ignore_index: int | None = IGNORE_INDEX, reduction: Reduction = "mean",
                 teacher_grad: bool = False, chunk_size: int = 1024,
                 vocab_chunk: int | None = None,
                 vocab_parallel: VocabParallel | None = None, **renamed: Any) -> jax.Array:
    """Divergence between a student's and a teacher's next-token distributions, per token.

    With ``p_s = softmax(hidden_s @ head_s / temperature)`` and ``p_t`` likewise:

    - ``"forward_kl"``: ``KL(p_t || p_s) = sum_j p_t (log p_t - log p_s)``;
    - ``"reverse_kl"``: ``KL(p_s || p_t)``;
    - ``"jsd"``: ``beta * KL(p_t || m) + (1 - beta) * KL(p_s || m)`` with
      ``m = beta * p_t + (1 - beta) * p_s`` (the generalised JSD of GKD);
    - ``"top_k_kl"``: the forward-KL terms over the teacher's ``top_k`` most likely
      tokens only (probabilities normalised over the whole vocabulary).

    Neither ``[T, V]`` logit matrix is built; memory depends on the chunk sizes.
    Multiply by ``temperature**2`` yourself if you follow Hinton et al.'s scaling.

    Args:
        hidden_s, hidden_t: hidden states ``[..., T, Hs]`` and ``[..., T, Ht]``.
        head_s, head_t: ``[H, V]`` matrices or callables ``chunk [C, H] -> [C, V]``
            (LoRA, tied embeddings...), with the same vocabulary size ``V``.
        divergence: one of the above.
        beta: the JSD mixing weight, in ``(0, 1)``.
        top_k: teacher tokens compared by ``"top_k_kl"`` (``1 <= top_k <= V``).
        temperature: both heads' logits are divided by it (> 0).
        mask, reduction: per-token weights and reduction as in
            :func:`jaxlean.loss.chunked.cross_entropy`.
        targets: optional ``[..., T]`` target ids as a Hugging Face collator writes its
            labels (as in TRL's GKD): positions whose target is ``ignore_index`` count
            for nothing (prompts, padding); the ids themselves are not used. A target
            outside ``[0, V)`` that is not ``ignore_index`` raises :class:`DataError`
            when concrete and makes the loss NaN under ``jit``. Already shifted, by
            keyword (called ``labels`` before; that keyword raises a
            :class:`ConfigError` rather than being read as Hugging Face's unshifted
            labels, which the other losses take as ``labels=``).
        ignore_index: the target meaning "no loss here" (``None``: nothing ignored).
        teacher_grad: also differentiate with respect to the teacher (by default
            it is a constant: no teacher gradient is computed or stored).
        chunk_size: tokens per chunk.
        vocab_chunk: vocabulary columns per block when both heads are matrices
            (``None`` picks blocks of bounded size).
        vocab_parallel: both ``[H, V]`` heads split over the vocabulary on a mesh axis,
            tokens over other axes on axis 0 (as in :func:`token_logprobs`): only
            per-token floats (and the teacher's top-k) cross devices, never a head.

    Returns:
        A scalar, or ``[..., T]`` for ``reduction="none"``; float32 (float64 for float64 inputs).
    """
    if "labels" in renamed:  # its old name for shifted targets: never read as unshifted
        raise ConfigError("distill_loss: the argument 'labels' is now called 'targets': ids "
                          "already shifted (position t predicts targets[..., t]), as TRL's "
                          "generalized_jsd_loss takes its labels; this loss does not take "
                          "Hugging Face's unshifted labels (it was given shifted ones under "
                          "that name before)")
    reject_renamed(renamed, {}, "distill_loss")
    temperature = check_temperature(temperature)
    _check(hidden_s, hidden_t, divergence, beta, top_k)
    check_chunk("chunk_size", chunk_size)
    if vocab_chunk is not None:
        check_chunk("vocab_chunk", vocab_chunk)
    if mask is not None and tuple(jnp.shape(mask)) != tuple(hidden_s.shape[:-1]):
        raise StructureError(f"mask shape {list(jnp.shape(mask))} must equal the token shape "
                             f"{list(hidden_s.shape[:-1])}")
    ignore_index = check_ignore_index(ignore_index)
    if targets is not None and (not hasattr(targets, "shape") or tuple(targets.shape) != tuple(
            hidden_s.shape[:-1]) or not jnp.issubdtype(targets.dtype, jnp.integer)):
        raise StructureError(f"targets must be integer ids of the token shape "
                             f"{list(hidden_s.shape[:-1])}, got "
                             f"{getattr(targets, 'dtype', type(targets).__name__)} "
                             f"{list(getattr(targets, 'shape', []))}")
    if not teacher_grad:
        hidden_t, head_t = as_constant((hidden_t, head_t))
    batch = hidden_s.shape[:-1]
    n_tokens = math.prod(batch)
    chunk = min(chunk_size, max(n_tokens, 1))
    vocab_s, dtype_s = head_vocab(head_s, hidden_s, chunk)
    vocab_t, dtype_t = head_vocab(head_t, hidden_t, chunk)
    if vocab_s != vocab_t:
        raise ConfigError(f"the student's vocabulary (V={vocab_s}) and the teacher's "
                          f"(V={vocab_t}) differ: distillation compares distributions over "
                          f"the same tokens")
    k = check_top_k(top_k, vocab_s) if divergence == "top_k_kl" else 0
    dtype = jnp.promote_types(jnp.float32, jnp.promote_types(dtype_s, dtype_t))
    both_matrix = all(isinstance(h, (jax.Array, np.ndarray)) for h in (head_s, head_t))
    if vocab_chunk is not None and not both_matrix:
        raise ConfigError("vocab_chunk needs [H, V] matrix heads for both student and teacher")
    t = None if targets is None else split_targets(targets, vocab_s, ignore_index)
    if t is not None:
        mask = keep_mask(mask, t)
    if n_tokens == 0:
        return reduce_tokens(jnp.zeros(batch, dtype), mask, reduction)
    if reduction != "none" and vocab_parallel is None and (
            vocab_chunk is None or (both_matrix and vocab_chunk >= vocab_s)):
        return _one_pass(hidden_s, head_s, hidden_t, head_t, _pointwise(divergence, beta), k,
                         temperature, mask, t, reduction, chunk_size, vocab_s, dtype)
    options = DivergenceOptions(_pointwise(divergence, beta), k, temperature, teacher_grad,
                                chunk_size, vocab_chunk, dtype)
    if vocab_parallel is None:
        per_token = divergence_per_token(options, hidden_s, head_s, hidden_t, head_t)
    else:
        if not both_matrix:
            raise ConfigError("vocab_parallel needs [H, V] matrix heads for both student and "
                              "teacher, split over the vocabulary")
        per_token = sharded_divergence_per_token(options, vocab_parallel, hidden_s,
                                                 jnp.asarray(head_s), hidden_t,
                                                 jnp.asarray(head_t))
    if t is not None:
        per_token = jnp.where(t.invalid, jnp.nan, per_token)
    return reduce_tokens(per_token, mask, reduction)


def _one_pass(hidden_s, head_s, hidden_t, head_t, pointwise, top_k, temperature, mask, t,
              reduction, chunk_size, vocab, dtype) -> jax.Array:
    """The ``"mean"`` / ``"sum"`` loss with its gradient computed in the forward pass
    (:func:`jaxlean.loss.onepass.onepass_divergence_sum`)."""
    batch = hidden_s.shape[:-1]
    weights = jnp.ones(batch, dtype) if mask is None else jnp.asarray(mask).astype(dtype)
    invalid = jnp.zeros(batch, bool) if t is None else t.invalid

    def per_token(div, w, invalid):
        return jnp.where(w != 0, jnp.where(invalid, jnp.nan, div) * w, 0)

    total = onepass_divergence_sum(hidden_s, head_s, hidden_t, head_t, pointwise, top_k,
                                   per_token, weights, invalid, temperature, chunk_size, vocab,
                                   dtype)
    if reduction == "sum":
        return total
    return total / jnp.maximum(jnp.sum(weights), jnp.finfo(dtype).tiny)
