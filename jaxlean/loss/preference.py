"""DPO and its IPO and hinge variants, on per-sequence log-probs from the chunked head.

Direct preference optimisation compares the policy's log-probability of a chosen
and a rejected completion with a frozen reference's: with the log-ratios
``c = log pi(chosen) - log ref(chosen)`` and ``r = log pi(rejected) - log ref(rejected)``
(sums over each completion's tokens), TRL's ``DPOTrainer`` ``loss_type``:

- ``"sigmoid"`` (DPO): ``-log sigmoid(beta * (c - r))``;
- ``"hinge"`` (SLiC): ``relu(1 - beta * (c - r))``;
- ``"ipo"``: ``(c / n_c - r / n_r - 1 / (2 beta))²`` with ``n`` the completions'
  token counts (TRL's length normalisation, confirmed with IPO's authors).

:func:`dpo_objective` is that arithmetic on per-sequence sums;
:func:`dpo_loss` gets the policy's sums from hidden states and a head through the
chunked kernel (:func:`jaxlean.loss.chunked.token_logprobs`'s pass, logits recomputed
in the backward pass), so no ``[tokens, vocab]`` logits exist.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp

from jaxlean.errors import ConfigError, StructureError
from jaxlean.loss._checks import (
    IGNORE_INDEX,
    Head,
    check_temperature,
    keep_mask,
    masked_targets,
)
from jaxlean.loss._kernel import Want
from jaxlean.loss._per_token import target_outs
from jaxlean.loss.vocab_parallel import VocabParallel

__all__ = ["DPO_LOSS_TYPES", "DPOLoss", "DPOLossType", "dpo_loss", "dpo_objective",
           "sequence_logprobs"]

DPOLossType = Literal["sigmoid", "hinge", "ipo"]
DPO_LOSS_TYPES = ("sigmoid", "hinge", "ipo")


class DPOLoss(NamedTuple):
    """The DPO objective and its diagnostics (TRL's logged ``rewards/*``).

    Only ``loss`` (and the policy's log-probs) carry a gradient.

    Attributes:
        loss: the scalar to minimise (mean over pairs).
        chosen_rewards: ``beta * (log pi - log ref)`` of each chosen completion ``[B]``.
        rejected_rewards: the same for the rejected completions ``[B]``.
        accuracy: fraction of pairs whose chosen reward exceeds the rejected one.
        margin: mean of ``chosen_rewards - rejected_rewards``.
        chosen_logps: the policy's summed log-probs of the chosen completions ``[B]``.
        rejected_logps: those of the rejected completions ``[B]``.
    """

    loss: jax.Array
    chosen_rewards: jax.Array
    rejected_rewards: jax.Array
    accuracy: jax.Array
    margin: jax.Array
    chosen_logps: jax.Array
    rejected_logps: jax.Array


def _check_beta(beta: Any) -> float:
    if isinstance(beta, bool) or not isinstance(beta, int | float) or not beta > 0:
        raise ConfigError(f"beta must be a number > 0, got {beta!r}")
    return float(beta)


def dpo_objective(chosen_logps: jax.Array, rejected_logps: jax.Array,
                  ref_chosen_logps: jax.Array, ref_rejected_logps: jax.Array, *,
                  beta: float = 0.1, loss_type: DPOLossType = "sigmoid",
                  chosen_lengths: jax.Array | None = None,
                  rejected_lengths: jax.Array | None = None) -> DPOLoss:
    """The DPO family's loss on per-sequence summed log-probs ``[B]`` (see the module).

    Args:
        chosen_logps, rejected_logps: the policy's summed completion log-probs ``[B]``.
        ref_chosen_logps, ref_rejected_logps: the frozen reference's ``[B]`` (no
            gradient flows into them).
        beta: the KL strength (TRL's ``beta``, default 0.1); IPO's ``tau``.
        loss_type: ``"sigmoid"``, ``"hinge"`` or ``"ipo"``.
        chosen_lengths, rejected_lengths: completion token counts ``[B]``, needed by
            ``"ipo"`` (counts below 1 count as 1, as in TRL).

    Returns:
        A :class:`DPOLoss`.
    """
    beta = _check_beta(beta)
    if loss_type not in DPO_LOSS_TYPES:
        raise ConfigError(f"unknown loss_type {loss_type!r}: use 'sigmoid', 'hinge' or 'ipo'")
    chosen_logps, rejected_logps = jnp.asarray(chosen_logps), jnp.asarray(rejected_logps)
    shape = chosen_logps.shape
    for name, x in (("rejected_logps", rejected_logps), ("ref_chosen_logps", ref_chosen_logps),
                    ("ref_rejected_logps", ref_rejected_logps),
                    ("chosen_lengths", chosen_lengths), ("rejected_lengths", rejected_lengths)):
        if x is not None and jnp.shape(x) != shape:
            raise StructureError(f"{name} shape {list(jnp.shape(x))} must equal chosen_logps "
                                 f"shape {list(shape)}")
    stop = jax.lax.stop_gradient
    chosen = chosen_logps - stop(jnp.asarray(ref_chosen_logps, chosen_logps.dtype))
    rejected = rejected_logps - stop(jnp.asarray(ref_rejected_logps, rejected_logps.dtype))
    delta = chosen - rejected
    if loss_type == "sigmoid":
        losses = -jax.nn.log_sigmoid(beta * delta)
    elif loss_type == "hinge":
        losses = jax.nn.relu(1 - beta * delta)
    else:
        if chosen_lengths is None or rejected_lengths is None:
            raise ConfigError("loss_type='ipo' needs chosen_lengths and rejected_lengths "
                              "(completion token counts)")
        n_c = jnp.maximum(jnp.asarray(chosen_lengths, chosen.dtype), 1)
        n_r = jnp.maximum(jnp.asarray(rejected_lengths, rejected.dtype), 1)
        losses = jnp.square(chosen / n_c - rejected / n_r - 1 / (2 * beta))
    chosen_rewards, rejected_rewards = stop(beta * chosen), stop(beta * rejected)
    return DPOLoss(jnp.mean(losses), chosen_rewards, rejected_rewards,
                   jnp.mean((chosen_rewards > rejected_rewards).astype(chosen.dtype)),
                   jnp.mean(chosen_rewards - rejected_rewards), chosen_logps, rejected_logps)


def sequence_logprobs(hidden: jax.Array, head: Head, targets: jax.Array, *,
                      mask: jax.Array | None = None, temperature: float = 1.0,
                      chunk_size: int = 1024, vocab_chunk: int | None = None,
                      vocab_parallel: VocabParallel | None = None,
                      ignore_index: int | None = IGNORE_INDEX
                      ) -> tuple[jax.Array, jax.Array]:
    """Each sequence's weighted sum of target log-probs ``[B]`` and its weight ``[B]``.

    Chunked like :func:`jaxlean.loss.chunked.token_logprobs` (same arguments);
    ``mask`` ``[B, T]`` weights the tokens (0: prompt, padding), and ignored targets
    count for nothing. The second result is the token count (mask sum) per sequence.
    """
    if not hasattr(targets, "shape") or targets.ndim != 2:
        raise StructureError(f"targets must be [B, T], got {getattr(targets, 'shape', targets)}")
    if mask is not None and jnp.shape(mask) != targets.shape:
        raise StructureError(f"mask shape {list(jnp.shape(mask))} must equal targets shape "
                             f"{list(targets.shape)}")
    want = Want(temperature=check_temperature(temperature))
    outs, t = target_outs(hidden, head, masked_targets(targets, mask), chunk_size, vocab_chunk,
                          want, vocab_parallel, ignore_index)
    logprobs = outs.target - outs.lse
    keep = keep_mask(mask, t)
    weights = (jnp.ones(targets.shape, logprobs.dtype) if keep is None
               else jnp.asarray(keep).astype(logprobs.dtype))
    total = jnp.sum(jnp.where(weights != 0, logprobs * weights, 0), -1)
    return total, jnp.sum(weights, -1)


def dpo_loss(hidden: jax.Array, head: Head, targets: jax.Array, ref_logprobs: jax.Array, *,
             mask: jax.Array | None = None, beta: float = 0.1,
             loss_type: DPOLossType = "sigmoid", chunk_size: int = 1024,
             vocab_chunk: int | None = None, vocab_parallel: VocabParallel | None = None,
             ignore_index: int | None = IGNORE_INDEX) -> DPOLoss:
    """DPO (sigmoid, hinge or IPO) of a batch of preference pairs, chunked over the head.

    The batch is TRL's concatenation: rows ``[0, B)`` are the chosen completions and
    rows ``[B, 2B)`` the rejected ones, each with its prompt (``mask`` 0 on the prompt
    and padding, or ``targets`` ``-100`` there).

    Args:
        hidden: the policy's final hidden states ``[2B, T, H]``.
        head: ``[H, V]`` matrix or callable head, as in :func:`token_logprobs`.
        targets: ``[2B, T]`` the completions' token ids predicted at each position.
        ref_logprobs: the frozen reference's log-probs of ``targets``: per token
            ``[2B, T]`` (weighted and summed here with ``mask``) or already summed per
            sequence ``[2B]`` (TRL's ``ref_chosen_logps`` then ``ref_rejected_logps``).
        mask: ``[2B, T]`` token weights (0 on prompts and padding); ``None``: all ones.
        beta, loss_type: as in :func:`dpo_objective`.
        chunk_size, vocab_chunk, vocab_parallel, ignore_index: as in :func:`token_logprobs`.

    Returns:
        A :class:`DPOLoss`.
    """
    if not hasattr(targets, "shape") or targets.ndim != 2 or targets.shape[0] % 2:
        raise StructureError("targets must be [2B, T] (chosen rows, then rejected rows), got "
                             f"{list(getattr(targets, 'shape', [targets]))}")
    ref = jnp.asarray(ref_logprobs)
    if ref.shape not in (targets.shape, targets.shape[:1]):
        raise StructureError(f"ref_logprobs must be [2B, T] = {list(targets.shape)} or [2B], "
                             f"got {list(ref.shape)}")
    logps, lengths = sequence_logprobs(hidden, head, targets, mask=mask, chunk_size=chunk_size,
                                       vocab_chunk=vocab_chunk, vocab_parallel=vocab_parallel,
                                       ignore_index=ignore_index)
    if ref.ndim == 2:
        weights = jnp.ones(ref.shape, ref.dtype) if mask is None else jnp.asarray(mask, ref.dtype)
        ignored = (jnp.zeros(ref.shape, bool) if ignore_index is None
                   else jnp.asarray(targets) == ignore_index)
        ref = jnp.sum(jnp.where((weights != 0) & ~ignored, ref * weights, 0), -1)
    half = targets.shape[0] // 2
    return dpo_objective(logps[:half], logps[half:], ref[:half], ref[half:], beta=beta,
                         loss_type=loss_type, chosen_lengths=lengths[:half],
                         rejected_lengths=lengths[half:])
