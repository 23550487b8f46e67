"""PPO / GRPO clipped policy-gradient objective, in one chunked pass over the head.

The objective needs the policy's log-prob of each sampled token (and its
entropy for a bonus); both come from one :func:`jaxlean.loss.chunked.token_stats`
-style pass, so no ``[tokens, vocab]`` logits exist. Everything else (ratios
against the sampling policy's log-probs, clipping, the KL estimate against a
reference policy, masking and normalisation) is per-token arithmetic.

The normalisations are those of TRL's ``GRPOTrainer`` ``loss_type`` (``"grpo"``,
``"bnpo"``, ``"dr_grpo"``, ``"dapo"``), and ``importance_sampling_level="sequence"``
is GSPO's sequence-level ratio (TRL's option of that name).
"""

from __future__ import annotations

import math
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp

from jaxlean._args import as_int, reject_renamed
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
from jaxlean.loss._token_ids import ids_to_predict
from jaxlean.loss.chunked import one_pass_applies
from jaxlean.loss.onepass import onepass_sum
from jaxlean.loss.vocab_parallel import VocabParallel

__all__ = [
    "IMPORTANCE_SAMPLING_LEVELS",
    "KL_ESTIMATORS",
    "NORMALIZATIONS",
    "ImportanceSamplingLevel",
    "KLEstimator",
    "Normalization",
    "PolicyLoss",
    "PolicyOptions",
    "kl_estimate",
    "policy_gradient_loss",
    "policy_objective",
]

KLEstimator = Literal["k1", "k2", "k3"]
KL_ESTIMATORS = ("k1", "k2", "k3")
Normalization = Literal["token", "sequence", "grpo", "bnpo", "dr_grpo", "dapo"]
#: ``"token"`` = TRL's ``"bnpo"``, ``"sequence"`` = ``"grpo"``; ``"dr_grpo"`` and ``"dapo"``
#: divide the masked sum by a constant (see :func:`policy_gradient_loss`).
NORMALIZATIONS = ("token", "sequence", "grpo", "bnpo", "dr_grpo", "dapo")
ImportanceSamplingLevel = Literal["token", "sequence"]
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")


class PolicyLoss(NamedTuple):
    """The objective and per-batch diagnostics (masked means over tokens, normalised as
    the loss is: for ``"dr_grpo"`` and ``"dapo"`` a masked sum over their constant).

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


def _normalize(per_token: jax.Array, weights: jax.Array, how: Normalization,
               denominator: jax.Array | None = None) -> jax.Array:
    """Masked mean over all tokens (``"token"``, ``"bnpo"``), per sequence then over
    sequences (``"sequence"``, ``"grpo"``), or the masked sum over ``denominator``
    (``"dr_grpo"``, ``"dapo"``: see :func:`_denominator`)."""
    tiny = jnp.finfo(per_token.dtype).tiny
    total = jnp.where(weights != 0, per_token * weights, 0)
    if how in ("token", "bnpo"):
        return jnp.sum(total) / jnp.maximum(jnp.sum(weights), tiny)
    if how in ("sequence", "grpo"):
        per_sequence = jnp.sum(total, -1) / jnp.maximum(jnp.sum(weights, -1), tiny)
        return jnp.mean(per_sequence)
    return jnp.sum(total) / denominator


def _denominator(weights: jax.Array, how: Normalization, max_completion_length: int | None,
                 num_items_in_batch: Any) -> jax.Array | None:
    """The constant that ``"dr_grpo"`` (``B * max_completion_length``) and ``"dapo"``
    (``num_items_in_batch``, default the batch's token weight) divide the masked sum by."""
    if how == "dr_grpo":
        length = weights.shape[-1] if max_completion_length is None else max_completion_length
        return jnp.asarray(weights.shape[0] * length, weights.dtype)
    if how == "dapo":
        items = jnp.sum(weights) if num_items_in_batch is None else num_items_in_batch
        return jnp.maximum(jnp.asarray(items, weights.dtype), jnp.finfo(weights.dtype).tiny)
    return None


def _check_normalization(normalization, max_completion_length, num_items_in_batch):
    if normalization not in NORMALIZATIONS:
        raise ConfigError(f"unknown normalization {normalization!r}: use one of "
                          f"{', '.join(map(repr, NORMALIZATIONS))}")
    if max_completion_length is not None:
        if normalization != "dr_grpo":
            raise ConfigError(f"max_completion_length is used by normalization='dr_grpo' only, "
                              f"got normalization={normalization!r}")
        as_int(max_completion_length, "max_completion_length", minimum=1)
    if num_items_in_batch is not None and normalization != "dapo":
        raise ConfigError(f"num_items_in_batch is used by normalization='dapo' only, got "
                          f"normalization={normalization!r}")


def policy_gradient_loss(hidden: jax.Array, head: Head, *positional: Any,
                         labels: jax.Array | None = None, targets: jax.Array | None = None,
                         old_logprobs: jax.Array | None = None,
                         advantages: jax.Array | None = None,
                         mask: jax.Array | None = None, clip_eps: float = 0.2,
                         clip_eps_high: float | None = None,
                         ref_logprobs: jax.Array | None = None, kl_coef: float = 0.0,
                         kl_estimator: KLEstimator = "k3", entropy_coef: float = 0.0,
                         normalization: Normalization = "token",
                         importance_sampling_level: ImportanceSamplingLevel = "token",
                         max_completion_length: int | None = None,
                         num_items_in_batch: float | jax.Array | None = None,
                         temperature: float = 1.0,
                         chunk_size: int = 1024, vocab_chunk: int | None = None,
                         vocab_parallel: VocabParallel | None = None,
                         ignore_index: int | None = IGNORE_INDEX,
                         **renamed: Any) -> PolicyLoss:
    """Clipped surrogate objective of PPO / GRPO over the sampled ``targets``, chunked.

    Per token, with ``ratio = exp(log pi - old_logprobs)`` and advantage ``A``:
    ``-min(ratio * A, clip(ratio, 1 - clip_eps, 1 + clip_eps_high) * A)
    + kl_coef * KL_est(pi, pi_ref) - entropy_coef * entropy``, then a masked mean.
    With ``importance_sampling_level="sequence"`` (GSPO) the ratio is one per sequence,
    ``exp`` of the masked mean of ``log pi - old_logprobs`` over the sequence's tokens.

    Args:
        hidden: the policy's final hidden states ``[B, T, H]``.
        head: ``[H, V]`` matrix or callable head, as in :func:`token_logprobs`.
        labels: the sequences' token ids ``[B, T]`` unshifted, as Hugging Face's
            ``labels`` (``-100`` on prompts and padding): shifted here, and with them every
            ``[B, T]`` array of the call (``old_logprobs``, ``advantages``, ``mask``,
            ``ref_logprobs``), which are then per label.
        targets: the sampled token ids ``[B, T]`` whose log-probs are optimised, already
            shifted (called ``tokens`` before; that keyword now raises a
            :class:`ConfigError`). Give ``labels`` or ``targets``, by keyword: a positional
            array raises :class:`ConfigError` (it could be either).
        old_logprobs: ``[B, T]`` log-probs of ``targets`` under the sampling policy.
        advantages: ``[B]`` (one per sequence, as in GRPO) or ``[B, T]``.
            ``old_logprobs`` and ``advantages`` are required, by keyword.
        mask: ``[B, T]`` weights (0 on prompts and padding); ``None`` for all ones.
        clip_eps, clip_eps_high: the ratio's clip range ``[1 - clip_eps, 1 + clip_eps_high]``
            (``clip_eps_high`` defaults to ``clip_eps``; DAPO raises it).
        ref_logprobs: ``[B, T]`` log-probs under a reference policy for the KL term.
        kl_coef: weight of the KL term (needs ``ref_logprobs`` when non-zero).
        kl_estimator: ``"k1"``, ``"k2"`` or ``"k3"`` (see :func:`kl_estimate`).
        entropy_coef: weight of an entropy bonus.
        normalization: how the masked per-token terms become one number, with TRL's
            ``loss_type`` names: ``"token"`` or ``"bnpo"`` (mean over all unmasked tokens
            of the batch), ``"sequence"`` or ``"grpo"`` (mean over each sequence's
            tokens, then over sequences), ``"dr_grpo"`` (sum over
            ``B * max_completion_length``) or ``"dapo"`` (sum over
            ``num_items_in_batch``).
        importance_sampling_level: ``"token"`` (a ratio per token) or ``"sequence"``
            (GSPO: one ratio per sequence, the exp of its tokens' mean log-ratio, TRL's
            ``importance_sampling_level="sequence"``; pair it with ``"grpo"``). The
            sequence level takes the path that recomputes logits in the backward pass.
        max_completion_length: ``"dr_grpo"``'s constant length (default ``T``).
        num_items_in_batch: ``"dapo"``'s divisor: the loss tokens of the whole batch a
            gradient is accumulated over (default this batch's total mask weight), so
            that micro-batch losses add up to a mean over the whole batch.
        temperature: the sampling temperature (logits are divided by it).
        chunk_size, vocab_chunk, vocab_parallel: as in :func:`token_logprobs`.
        ignore_index: targets equal to it count for nothing, as if masked out (their
            log-prob is 0). Any other target outside ``[0, V)`` raises
            :class:`DataError` when concrete and makes the loss NaN under ``jit``.

    Returns:
        A :class:`PolicyLoss`.
    """
    reject_renamed(renamed, {"tokens": "targets"}, "policy_gradient_loss")
    targets, shifted = ids_to_predict(
        "policy_gradient_loss", positional, labels, targets, ignore_index=ignore_index,
        keywords=("old_logprobs", "advantages"), required=False,
        per_token={"old_logprobs": old_logprobs, "advantages": advantages, "mask": mask,
                   "ref_logprobs": ref_logprobs},
        per_sequence=("advantages",))
    old_logprobs, advantages = shifted["old_logprobs"], shifted["advantages"]
    mask, ref_logprobs = shifted["mask"], shifted["ref_logprobs"]
    missing = [name for name, x in (("labels or targets", targets),
                                    ("old_logprobs", old_logprobs),
                                    ("advantages", advantages)) if x is None]
    if missing:
        raise TypeError(f"policy_gradient_loss() missing required argument(s) {missing}")
    temperature = check_temperature(temperature)
    if not hasattr(targets, "shape") or targets.ndim != 2:
        raise StructureError(f"targets must be [B, T], got {getattr(targets, 'shape', targets)}")
    shape = tuple(targets.shape)
    opt = _options(shape, "targets", old_logprobs, advantages, mask, ref_logprobs, clip_eps,
                   clip_eps_high, kl_coef, kl_estimator, entropy_coef, normalization,
                   importance_sampling_level, max_completion_length, num_items_in_batch)
    sizes = (max_completion_length, num_items_in_batch)

    want = Want(entropy=True, temperature=temperature)  # entropy: a bonus or a diagnostic
    targets = masked_targets(targets, mask)
    if importance_sampling_level == "token" and one_pass_applies(
            hidden, head, chunk_size, vocab_chunk, vocab_parallel):
        return _one_pass(hidden, head, targets, old_logprobs, advantages, mask, ref_logprobs,
                         opt, sizes, want, chunk_size, ignore_index)
    outs, t = target_outs(hidden, head, targets, chunk_size, vocab_chunk, want, vocab_parallel,
                          ignore_index)
    logprobs, entropy = outs.target - outs.lse, outs.entropy
    weights = _weights(keep_mask(mask, t), shape, logprobs.dtype)
    terms = _terms(logprobs, entropy, old_logprobs, advantages, ref_logprobs, weights, opt)
    denominator = _denominator(weights, normalization, *sizes)
    mean = lambda x: _normalize(x, weights, normalization, denominator)
    stop = jax.lax.stop_gradient
    return PolicyLoss(mean(terms.per_token), stop(mean(terms.surrogate)), stop(mean(terms.kl)),
                      stop(mean(entropy)), stop(mean(terms.clipped)), stop(logprobs))


def policy_objective(logprobs: jax.Array, old_logprobs: jax.Array, advantages: jax.Array, *,
                     mask: jax.Array | None = None, clip_eps: float = 0.2,
                     clip_eps_high: float | None = None,
                     ref_logprobs: jax.Array | None = None, kl_coef: float = 0.0,
                     kl_estimator: KLEstimator = "k3", entropy: jax.Array | None = None,
                     entropy_coef: float = 0.0, normalization: Normalization = "token",
                     importance_sampling_level: ImportanceSamplingLevel = "token",
                     max_completion_length: int | None = None,
                     num_items_in_batch: float | jax.Array | None = None) -> PolicyLoss:
    """:func:`policy_gradient_loss`'s objective on given per-token log-probs ``[B, T]``.

    For log-probs from elsewhere (another model's head, a cache); the arguments are
    those of :func:`policy_gradient_loss`, with ``entropy`` ``[B, T]`` (optional) for
    the bonus. The gradient reaches ``logprobs`` (and ``entropy``) only.
    """
    logprobs = jnp.asarray(logprobs)
    if logprobs.ndim != 2:
        raise StructureError(f"logprobs must be [B, T], got {list(logprobs.shape)}")
    shape = tuple(logprobs.shape)
    if entropy is not None and tuple(jnp.shape(entropy)) != shape:
        raise StructureError(f"entropy shape {list(jnp.shape(entropy))} must equal logprobs "
                             f"shape {list(shape)}")
    opt = _options(shape, "logprobs", old_logprobs, advantages, mask, ref_logprobs, clip_eps,
                   clip_eps_high, kl_coef, kl_estimator, entropy_coef, normalization,
                   importance_sampling_level, max_completion_length, num_items_in_batch)
    entropy = jnp.zeros_like(logprobs) if entropy is None else jnp.asarray(entropy)
    weights = _weights(mask, shape, logprobs.dtype)
    stop = jax.lax.stop_gradient
    terms = _terms(logprobs, entropy, stop(old_logprobs), stop(advantages),
                   None if ref_logprobs is None else stop(ref_logprobs), weights, opt)
    denominator = _denominator(weights, normalization, max_completion_length,
                               num_items_in_batch)
    mean = lambda x: _normalize(x, weights, normalization, denominator)
    return PolicyLoss(mean(terms.per_token), stop(mean(terms.surrogate)), stop(mean(terms.kl)),
                      stop(mean(entropy)), stop(mean(terms.clipped)), stop(logprobs))


def _options(shape, like, old_logprobs, advantages, mask, ref_logprobs, clip_eps, clip_eps_high,
             kl_coef, kl_estimator, entropy_coef, normalization, importance_sampling_level,
             max_completion_length, num_items_in_batch) -> PolicyOptions:
    """Check the objective's settings and per-token inputs against ``shape``."""
    _check_normalization(normalization, max_completion_length, num_items_in_batch)
    if importance_sampling_level not in IMPORTANCE_SAMPLING_LEVELS:
        raise ConfigError(f"unknown importance_sampling_level {importance_sampling_level!r}: "
                          "use 'token' or 'sequence'")
    if kl_estimator not in KL_ESTIMATORS:
        raise ConfigError(f"unknown kl_estimator {kl_estimator!r}: use 'k1', 'k2' or 'k3'")
    if kl_coef and ref_logprobs is None:
        raise ConfigError("kl_coef is non-zero but no ref_logprobs were given")
    for name, x in (("old_logprobs", old_logprobs), ("ref_logprobs", ref_logprobs),
                    ("mask", mask)):
        if x is not None and tuple(jnp.shape(x)) != shape:
            raise StructureError(f"{name} shape {list(jnp.shape(x))} must equal {like} shape "
                                 f"{list(shape)}")
    if jnp.shape(advantages) not in (shape, shape[:1]):
        raise StructureError(f"advantages must be [B] or [B, T] = {list(shape)}, got "
                             f"{list(jnp.shape(advantages))}")
    high = clip_eps if clip_eps_high is None else clip_eps_high
    return PolicyOptions(clip_eps, high, kl_coef, kl_estimator, entropy_coef, normalization,
                         importance_sampling_level)


class PolicyOptions(NamedTuple):
    """The settings of :func:`policy_gradient_loss` that shape its per-token objective."""

    clip_eps: float
    clip_eps_high: float
    kl_coef: float
    kl_estimator: str
    entropy_coef: float
    normalization: str
    importance_sampling_level: str = "token"


class _Terms(NamedTuple):
    per_token: jax.Array
    surrogate: jax.Array
    kl: jax.Array
    clipped: jax.Array


def _weights(mask, shape, dtype) -> jax.Array:
    return jnp.ones(shape, dtype) if mask is None else jnp.asarray(mask).astype(dtype)


def _terms(logprobs, entropy, old_logprobs, advantages, ref_logprobs, weights,
           opt: PolicyOptions) -> _Terms:
    """The per-token objective and its parts (``advantages`` ``[B]`` or like the targets).

    At the sequence level (GSPO) the log-ratio is each sequence's weighted mean, as in
    TRL (its token count clamped to at least 1), broadcast over the sequence's tokens.
    """
    adv = jnp.asarray(advantages, logprobs.dtype)
    adv = adv[..., None] if adv.ndim == logprobs.ndim - 1 else adv
    log_ratio = jnp.where(weights != 0, logprobs - old_logprobs, 0)
    if opt.importance_sampling_level == "sequence":
        log_ratio = (jnp.sum(log_ratio * weights, -1, keepdims=True)
                     / jnp.maximum(jnp.sum(weights, -1, keepdims=True), 1))
    ratio = jnp.exp(log_ratio)
    clipped = jnp.clip(ratio, 1 - opt.clip_eps, 1 + opt.clip_eps_high)
    surrogate = jnp.broadcast_to(-jnp.minimum(ratio * adv, clipped * adv), logprobs.shape)
    kl = jnp.zeros_like(logprobs) if ref_logprobs is None else jnp.where(
        weights != 0, kl_estimate(logprobs, ref_logprobs, opt.kl_estimator), 0)
    per_token = surrogate + opt.kl_coef * kl - opt.entropy_coef * entropy
    was_clipped = jnp.broadcast_to(clipped * adv < ratio * adv,  # the min took the clipped term
                                   logprobs.shape)
    return _Terms(per_token, surrogate, kl, was_clipped.astype(ratio.dtype))


def _one_pass(hidden, head, targets, old_logprobs, advantages, mask, ref_logprobs,
              opt: PolicyOptions, sizes: tuple, want: Want, chunk_size: int,
              ignore_index) -> PolicyLoss:
    """:func:`policy_gradient_loss` with the gradient of ``loss`` computed in the forward
    pass (:func:`jaxlean.loss.onepass.onepass_sum`): the normalisation becomes per-token
    coefficients (they depend on the weights only), so ``loss`` is a sum over tokens."""
    shape = targets.shape
    vocab, logits_dtype = head_vocab(head, hidden, min(chunk_size, math.prod(shape)))
    dtype = jnp.promote_types(jnp.float32, logits_dtype)
    t = split_targets(targets, vocab, check_ignore_index(ignore_index))
    weights = _weights(keep_mask(mask, t), shape, dtype)
    tiny = jnp.finfo(dtype).tiny
    denominator = _denominator(weights, opt.normalization, *sizes)
    if opt.normalization in ("token", "bnpo"):
        coef = weights / jnp.maximum(jnp.sum(weights), tiny)
    elif opt.normalization in ("sequence", "grpo"):
        coef = weights / jnp.maximum(jnp.sum(weights, -1, keepdims=True), tiny) / shape[0]
    else:
        coef = weights / denominator
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
    mean = lambda x: _normalize(x, stop(weights), opt.normalization, stop(denominator))
    return PolicyLoss(loss, mean(terms.surrogate), mean(terms.kl), mean(stats.entropy),
                      mean(terms.clipped), logprobs)
