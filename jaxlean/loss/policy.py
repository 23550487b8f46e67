"""PPO / GRPO clipped policy-gradient objective, in one chunked pass over the head.

The objective needs the policy's log-prob of each sampled token (and its
entropy for a bonus); both come from one :func:`jaxlean.loss.chunked.token_stats`
-style pass, so no ``[tokens, vocab]`` logits exist. Everything else (ratios
against the sampling policy's log-probs, clipping, the KL estimate against a
reference policy, masking and normalisation) is per-token arithmetic.
"""

from __future__ import annotations

import math
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp

from jaxlean._args import reject_renamed
from jaxlean.errors import ConfigError, StructureError
from jaxlean.loss._checks import (
    IGNORE_INDEX,
    Head,
    check_ignore_index,
    check_temperature,
    head_vocab,
    keep_mask,
    masked_targets,
    split_targets,
)
from jaxlean.loss._kernel import Want
from jaxlean.loss._per_token import target_outs
from jaxlean.loss.chunked import one_pass_applies
from jaxlean.loss.onepass import onepass_sum
from jaxlean.loss.vocab_parallel import VocabParallel

__all__ = [
    "KL_ESTIMATORS",
    "KLEstimator",
    "Normalization",
    "PolicyLoss",
    "PolicyOptions",
    "kl_estimate",
    "policy_gradient_loss",
]

KLEstimator = Literal["k1", "k2", "k3"]
KL_ESTIMATORS = ("k1", "k2", "k3")
Normalization = Literal["token", "sequence"]


class PolicyLoss(NamedTuple):
    """The objective and per-batch diagnostics (all masked means over tokens).

    Only ``loss`` carries a gradient (computed in its forward pass where the chunks
    span the vocabulary, see :mod:`jaxlean.loss.onepass`); the rest are diagnostics.

    Attributes:
        loss: the scalar to minimise.
        policy_loss: its clipped policy-gradient part.
        kl: mean estimated KL to the reference policy (0 without one).
        entropy: mean entropy of the policy.
        clip_fraction: fraction of tokens whose ratio was clipped.
        logprobs: per-token ``log pi(token)`` ``[B, T]`` (e.g. to log or reuse).
    """

    loss: jax.Array
    policy_loss: jax.Array
    kl: jax.Array
    entropy: jax.Array
    clip_fraction: jax.Array
    logprobs: jax.Array


def kl_estimate(logprobs: jax.Array, ref_logprobs: jax.Array,
                estimator: KLEstimator = "k3") -> jax.Array:
    """Per-token estimate of ``KL(pi || pi_ref)`` from samples of ``pi`` (Schulman's k1/k2/k3).

    With ``r = pi_ref / pi`` at the sampled token: ``k1 = -log r``,
    ``k2 = (log r)² / 2``, ``k3 = r - 1 - log r`` (unbiased and non-negative).
    """
    log_r = ref_logprobs - logprobs
    if estimator == "k1":
        return -log_r
    if estimator == "k2":
        return 0.5 * jnp.square(log_r)
    if estimator == "k3":
        return jnp.exp(log_r) - 1 - log_r
    raise ConfigError(f"unknown kl_estimator {estimator!r}: use 'k1', 'k2' or 'k3'")


def _normalize(per_token: jax.Array, weights: jax.Array, how: Normalization) -> jax.Array:
    """Masked mean: over all tokens (``"token"``) or per sequence then over sequences."""
    tiny = jnp.finfo(per_token.dtype).tiny
    total = jnp.where(weights != 0, per_token * weights, 0)
    if how == "token":
        return jnp.sum(total) / jnp.maximum(jnp.sum(weights), tiny)
    per_sequence = jnp.sum(total, -1) / jnp.maximum(jnp.sum(weights, -1), tiny)
    return jnp.mean(per_sequence)


def policy_gradient_loss(hidden: jax.Array, head: Head, targets: jax.Array | None = None,
                         old_logprobs: jax.Array | None = None,
                         advantages: jax.Array | None = None, *,
                         mask: jax.Array | None = None, clip_eps: float = 0.2,
                         clip_eps_high: float | None = None,
                         ref_logprobs: jax.Array | None = None, kl_coef: float = 0.0,
                         kl_estimator: KLEstimator = "k3", entropy_coef: float = 0.0,
                         normalization: Normalization = "token", temperature: float = 1.0,
                         chunk_size: int = 1024, vocab_chunk: int | None = None,
                         vocab_parallel: VocabParallel | None = None,
                         ignore_index: int | None = IGNORE_INDEX,
                         **renamed: Any) -> PolicyLoss:
    """Clipped surrogate objective of PPO / GRPO over the sampled ``targets``, chunked.

    Per token, with ``ratio = exp(log pi - old_logprobs)`` and advantage ``A``:
    ``-min(ratio * A, clip(ratio, 1 - clip_eps, 1 + clip_eps_high) * A)
    + kl_coef * KL_est(pi, pi_ref) - entropy_coef * entropy``, then a masked mean.

    Args:
        hidden: the policy's final hidden states ``[B, T, H]``.
        head: ``[H, V]`` matrix or callable head, as in :func:`token_logprobs`.
        targets: the sampled token ids ``[B, T]`` whose log-probs are optimised
            (called ``tokens`` before; that keyword now raises a :class:`ConfigError`).
        old_logprobs: ``[B, T]`` log-probs of ``targets`` under the sampling policy.
        advantages: ``[B]`` (one per sequence, as in GRPO) or ``[B, T]``.
            ``targets``, ``old_logprobs`` and ``advantages`` are required (their
            ``None`` defaults only let the old keyword be refused by name).
        mask: ``[B, T]`` weights (0 on prompts and padding); ``None`` for all ones.
        clip_eps, clip_eps_high: the ratio's clip range ``[1 - clip_eps, 1 + clip_eps_high]``
            (``clip_eps_high`` defaults to ``clip_eps``; DAPO raises it).
        ref_logprobs: ``[B, T]`` log-probs under a reference policy for the KL term.
        kl_coef: weight of the KL term (needs ``ref_logprobs`` when non-zero).
        kl_estimator: ``"k1"``, ``"k2"`` or ``"k3"`` (see :func:`kl_estimate`).
        entropy_coef: weight of an entropy bonus.
        normalization: ``"token"`` (mean over all unmasked tokens of the batch) or
            ``"sequence"`` (mean over each sequence's tokens, then over sequences).
        temperature: the sampling temperature (logits are divided by it).
        chunk_size, vocab_chunk, vocab_parallel: as in :func:`token_logprobs`.
        ignore_index: targets equal to it count for nothing, as if masked out (their
            log-prob is 0). Any other target outside ``[0, V)`` raises
            :class:`DataError` when concrete and makes the loss NaN under ``jit``.

    Returns:
        A :class:`PolicyLoss`.
    """
    reject_renamed(renamed, {"tokens": "targets"}, "policy_gradient_loss")
    missing = [name for name, x in (("targets", targets), ("old_logprobs", old_logprobs),
                                    ("advantages", advantages)) if x is None]
    if missing:
        raise TypeError(f"policy_gradient_loss() missing required argument(s) {missing}")
    temperature = check_temperature(temperature)
    if normalization not in ("token", "sequence"):
        raise ConfigError(f"unknown normalization {normalization!r}: use 'token' or 'sequence'")
    if kl_estimator not in KL_ESTIMATORS:
        raise ConfigError(f"unknown kl_estimator {kl_estimator!r}: use 'k1', 'k2' or 'k3'")
    if kl_coef and ref_logprobs is None:
        raise ConfigError("kl_coef is non-zero but no ref_logprobs were given")
    if not hasattr(targets, "shape") or targets.ndim != 2:
        raise StructureError(f"targets must be [B, T], got {getattr(targets, 'shape', targets)}")
    shape = tuple(targets.shape)
    for name, x in (("old_logprobs", old_logprobs), ("ref_logprobs", ref_logprobs),
                    ("mask", mask)):
        if x is not None and tuple(jnp.shape(x)) != shape:
            raise StructureError(f"{name} shape {list(jnp.shape(x))} must equal targets shape "
                                 f"{list(shape)}")
    if jnp.shape(advantages) not in (shape, shape[:1]):
        raise StructureError(f"advantages must be [B] or [B, T] = {list(shape)}, got "
                             f"{list(jnp.shape(advantages))}")
    high = clip_eps if clip_eps_high is None else clip_eps_high

    want = Want(entropy=True, temperature=temperature)  # entropy: a bonus or a diagnostic
    targets = masked_targets(targets, mask)
    if one_pass_applies(hidden, head, chunk_size, vocab_chunk, vocab_parallel):
        return _one_pass(hidden, head, targets, old_logprobs, advantages, mask, ref_logprobs,
                         PolicyOptions(clip_eps, high, kl_coef, kl_estimator, entropy_coef,
                                       normalization), want, chunk_size, ignore_index)
    outs, t = target_outs(hidden, head, targets, chunk_size, vocab_chunk, want, vocab_parallel,
                          ignore_index)
    logprobs, entropy = outs.target - outs.lse, outs.entropy
    weights = _weights(keep_mask(mask, t), shape, logprobs.dtype)
    terms = _terms(logprobs, entropy, old_logprobs, advantages, ref_logprobs, weights,
                   PolicyOptions(clip_eps, high, kl_coef, kl_estimator, entropy_coef,
                                 normalization))
    mean = lambda x: _normalize(x, weights, normalization)
    stop = jax.lax.stop_gradient
    return PolicyLoss(mean(terms.per_token), stop(mean(terms.surrogate)), stop(mean(terms.kl)),
                      stop(mean(entropy)), stop(mean(terms.clipped)), stop(logprobs))


class PolicyOptions(NamedTuple):
    """The settings of :func:`policy_gradient_loss` that shape its per-token objective."""

    clip_eps: float
    clip_eps_high: float
    kl_coef: float
    kl_estimator: str
    entropy_coef: float
    normalization: str


class _Terms(NamedTuple):
    per_token: jax.Array
    surrogate: jax.Array
    kl: jax.Array
    clipped: jax.Array


def _weights(mask, shape, dtype) -> jax.Array:
    return jnp.ones(shape, dtype) if mask is None else jnp.asarray(mask).astype(dtype)


def _terms(logprobs, entropy, old_logprobs, advantages, ref_logprobs, weights,
           opt: PolicyOptions) -> _Terms:
    """The per-token objective and its parts (``advantages`` ``[B]`` or like the targets)."""
    adv = jnp.asarray(advantages, logprobs.dtype)
    adv = adv[..., None] if adv.ndim == logprobs.ndim - 1 else adv
    log_ratio = jnp.where(weights != 0, logprobs - old_logprobs, 0)
    ratio = jnp.exp(log_ratio)
    clipped = jnp.clip(ratio, 1 - opt.clip_eps, 1 + opt.clip_eps_high)
    surrogate = -jnp.minimum(ratio * adv, clipped * adv)
    kl = jnp.zeros_like(logprobs) if ref_logprobs is None else jnp.where(
        weights != 0, kl_estimate(logprobs, ref_logprobs, opt.kl_estimator), 0)
    per_token = surrogate + opt.kl_coef * kl - opt.entropy_coef * entropy
    was_clipped = clipped * adv < ratio * adv  # the min took the clipped term
    return _Terms(per_token, surrogate, kl, was_clipped.astype(ratio.dtype))


def _one_pass(hidden, head, targets, old_logprobs, advantages, mask, ref_logprobs,
              opt: PolicyOptions, want: Want, chunk_size: int, ignore_index) -> PolicyLoss:
    """:func:`policy_gradient_loss` with the gradient of ``loss`` computed in the forward
    pass (:func:`jaxlean.loss.onepass.onepass_sum`): the normalisation becomes per-token
    coefficients (they depend on the weights only), so ``loss`` is a sum over tokens."""
    shape = targets.shape
    vocab, logits_dtype = head_vocab(head, hidden, min(chunk_size, math.prod(shape)))
    dtype = jnp.promote_types(jnp.float32, logits_dtype)
    t = split_targets(targets, vocab, check_ignore_index(ignore_index))
    weights = _weights(keep_mask(mask, t), shape, dtype)
    tiny = jnp.finfo(dtype).tiny
    if opt.normalization == "token":
        coef = weights / jnp.maximum(jnp.sum(weights), tiny)
    else:
        coef = weights / jnp.maximum(jnp.sum(weights, -1, keepdims=True), tiny) / shape[0]
    adv = jnp.broadcast_to(jnp.asarray(advantages, dtype)[:, None]
                           if jnp.ndim(advantages) == 1 else advantages, shape)
    ref = jnp.zeros(shape, dtype) if ref_logprobs is None else ref_logprobs
    ignored = jnp.zeros(shape, bool) if t.ignored is None else t.ignored

    def per_token(s, data, fixed):
        invalid, ignored = fixed
        w, c, old, a, r = data
        target = jnp.where(ignored, s.lse, jnp.where(invalid, jnp.nan, s.target))
        terms = _terms(target - s.lse, s.entropy, old, a, None if ref_logprobs is None else r,
                       w, opt)
        return jnp.where(w != 0, terms.per_token * c, 0)

    data = (weights, coef, jnp.asarray(old_logprobs), adv, jnp.asarray(ref))
    loss, stats = onepass_sum(hidden, head, t.ids, per_token, data, (t.invalid, ignored),
                              want, chunk_size, vocab, dtype)
    target = jnp.where(t.ignored if t.ignored is not None else False, stats.lse,
                       jnp.where(t.invalid, jnp.nan, stats.target))
    logprobs = target - stats.lse
    stop = jax.lax.stop_gradient
    terms = _terms(logprobs, stats.entropy, stop(old_logprobs), stop(advantages),
                   None if ref_logprobs is None else stop(ref_logprobs), stop(weights), opt)
    mean = lambda x: _normalize(x, stop(weights), opt.normalization)
    return PolicyLoss(loss, mean(terms.surrogate), mean(terms.kl), mean(stats.entropy),
                      mean(terms.clipped), logprobs)
