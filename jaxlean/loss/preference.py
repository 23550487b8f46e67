"""DPO and its IPO and hinge variants, on per-sequence log-probs from the chunked head.

Direct preference optimisation compares the policy's log-probability of a chosen
and a rejected completion with a frozen reference's: with the log-ratios
``c = log pi(chosen) - log ref(chosen)`` and ``r = log pi(rejected) - log ref(rejected)``
(sums over each completion's tokens), TRL's ``DPOTrainer`` ``loss_type``:

- ``"sigmoid"`` (DPO): ``-log sigmoid(beta * (c - r))``;
- ``"hinge"`` (SLiC): ``relu(1 - beta * (c - r))``;
- ``"ipo"``: ``(c / n_c - r / n_r - 1 / (2 beta))²`` with ``n`` the completions'
  token counts (TRL's length normalisation, confirmed with IPO's authors);
- ``"robust"`` (rDPO, with ``label_smoothing`` ``e`` the chance a label is flipped):
  ``(-(1 - e) log σ(βΔ) + e log σ(-βΔ)) / (1 - 2e)``;
- ``"exo_pair"``, ``"nca_pair"``, ``"bco_pair"``, ``"sppo_hard"``, ``"aot"``,
  ``"aot_unpaired"``, ``"apo_zero"``, ``"apo_down"``, ``"sigmoid_norm"``: as TRL 1.16
  defines them (``label_smoothing`` also for ``exo_pair``, ``aot`` and ``aot_unpaired``).

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
from jaxlean.loss._token_ids import ids_to_predict
from jaxlean.loss.vocab_parallel import VocabParallel

__all__ = ["DPO_LOSS_TYPES", "DPOLoss", "DPOLossType", "dpo_loss", "dpo_objective",
           "sequence_logprobs"]

DPOLossType = Literal["sigmoid", "hinge", "ipo", "robust", "exo_pair", "nca_pair", "bco_pair",
                      "sppo_hard", "aot", "aot_unpaired", "apo_zero", "apo_down",
                      "sigmoid_norm"]
DPO_LOSS_TYPES = ("sigmoid", "hinge", "ipo", "robust", "exo_pair", "nca_pair", "bco_pair",
                  "sppo_hard", "aot", "aot_unpaired", "apo_zero", "apo_down", "sigmoid_norm")
#: The loss types that read ``label_smoothing`` (TRL ignores it for the others; here it is
#: refused there, so a value that would change nothing is never given silently).
SMOOTHED_LOSS_TYPES = ("robust", "exo_pair", "aot", "aot_unpaired")
_LENGTH_NORMALISED = ("ipo", "sigmoid_norm")


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
                  label_smoothing: float = 0.0,
                  chosen_lengths: jax.Array | None = None,
                  rejected_lengths: jax.Array | None = None) -> DPOLoss:
    """The DPO family's loss on per-sequence summed log-probs ``[B]`` (see the module).

    Args:
        chosen_logps, rejected_logps: the policy's summed completion log-probs ``[B]``.
        ref_chosen_logps, ref_rejected_logps: the frozen reference's ``[B]`` (no
            gradient flows into them).
        beta: the KL strength (TRL's ``beta``, default 0.1); IPO's ``tau``.
        loss_type: one of :data:`DPO_LOSS_TYPES` (TRL's names).
        label_smoothing: TRL's ``label_smoothing``: the flip probability of ``"robust"``
            (in ``[0, 0.5)``), the ``epsilon`` of ``"exo_pair"`` (in ``(0, 1)``), the
            smoothing of ``"aot"``/``"aot_unpaired"``; refused (non-zero) for the others.
        chosen_lengths, rejected_lengths: completion token counts ``[B]``, needed by
            ``"ipo"`` and ``"sigmoid_norm"`` (counts below 1 count as 1, as in TRL).

    Returns:
        A :class:`DPOLoss`.
    """
    beta = _check_beta(beta)
    if loss_type not in DPO_LOSS_TYPES:
        raise ConfigError(f"unknown loss_type {loss_type!r}: use one of {list(DPO_LOSS_TYPES)}")
    smoothing = _check_smoothing(label_smoothing, loss_type)
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
    lengths = None
    if loss_type in _LENGTH_NORMALISED:
        if chosen_lengths is None or rejected_lengths is None:
            raise ConfigError(f"loss_type={loss_type!r} needs chosen_lengths and "
                              f"rejected_lengths (completion token counts)")
        lengths = (jnp.maximum(jnp.asarray(chosen_lengths, chosen.dtype), 1),
                   jnp.maximum(jnp.asarray(rejected_lengths, rejected.dtype), 1))
    ref_delta = (stop(jnp.asarray(ref_chosen_logps, chosen.dtype))
                 - stop(jnp.asarray(ref_rejected_logps, chosen.dtype)))
    losses = _pair_losses(loss_type, chosen, rejected, chosen_logps - rejected_logps,
                          ref_delta, beta, smoothing, lengths)
    chosen_rewards, rejected_rewards = stop(beta * chosen), stop(beta * rejected)
    return DPOLoss(jnp.mean(losses), chosen_rewards, rejected_rewards,
                   jnp.mean((chosen_rewards > rejected_rewards).astype(chosen.dtype)),
                   jnp.mean(chosen_rewards - rejected_rewards), chosen_logps, rejected_logps)


def _check_smoothing(label_smoothing: Any, loss_type: str) -> float:
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, int | float):
        raise ConfigError(f"label_smoothing must be a number, got {label_smoothing!r}")
    e = float(label_smoothing)
    if loss_type not in SMOOTHED_LOSS_TYPES:
        if e != 0.0:
            raise ConfigError(f"label_smoothing={e} has no effect with loss_type={loss_type!r} "
                              f"(TRL reads it only for {list(SMOOTHED_LOSS_TYPES)})")
    elif loss_type == "robust" and not 0.0 <= e < 0.5:
        raise ConfigError(f"loss_type='robust' needs label_smoothing in [0, 0.5), got {e}")
    elif loss_type == "exo_pair" and not 0.0 < e < 1.0:
        raise ConfigError(f"loss_type='exo_pair' needs label_smoothing in (0, 1) (EXO's "
                          f"epsilon, e.g. 1e-3), got {e}")
    elif not 0.0 <= e < 1.0:
        raise ConfigError(f"label_smoothing must be in [0, 1), got {e}")
    return e


def _pair_losses(loss_type: str, chosen: jax.Array, rejected: jax.Array,
                 logratios: jax.Array, ref_logratios: jax.Array, beta: float, e: float,
                 lengths: tuple[jax.Array, jax.Array] | None) -> jax.Array:
    """Per-pair losses ``[B]`` of ``loss_type`` from the log-ratios to the reference
    (``chosen``, ``rejected``) and the policy's and reference's chosen-minus-rejected
    log-probs (for the ``aot`` kinds)."""
    log_sigmoid, sigmoid = jax.nn.log_sigmoid, jax.nn.sigmoid
    delta = chosen - rejected
    smoothed = lambda d: -log_sigmoid(beta * d) * (1 - e) - log_sigmoid(-beta * d) * e
    if loss_type == "sigmoid":
        return -log_sigmoid(beta * delta)
    if loss_type == "hinge":
        return jax.nn.relu(1 - beta * delta)
    if loss_type in _LENGTH_NORMALISED:
        normalised = chosen / lengths[0] - rejected / lengths[1]
        if loss_type == "ipo":
            return jnp.square(normalised - 1 / (2 * beta))
        return -log_sigmoid(beta * normalised)
    if loss_type == "robust":
        return (-(1 - e) * log_sigmoid(beta * delta) + e * log_sigmoid(-beta * delta)) / (1 - 2 * e)
    if loss_type == "exo_pair":
        z = beta * delta
        return (sigmoid(z) * (log_sigmoid(z) - jnp.log1p(-e))
                + sigmoid(-z) * (log_sigmoid(-z) - jnp.log(e)))
    if loss_type == "nca_pair":
        c, r = beta * chosen, beta * rejected
        return -log_sigmoid(c) - 0.5 * log_sigmoid(-c) - 0.5 * log_sigmoid(-r)
    if loss_type == "bco_pair":
        return -log_sigmoid(beta * chosen) - log_sigmoid(-beta * rejected)
    if loss_type == "sppo_hard":
        return jnp.square(chosen - 0.5 / beta) + jnp.square(rejected + 0.5 / beta)
    if loss_type == "aot":
        return smoothed(jnp.sort(logratios) - jnp.sort(ref_logratios))
    if loss_type == "aot_unpaired":
        return smoothed(jnp.sort(chosen) - jnp.sort(rejected))
    if loss_type == "apo_zero":
        return 1 - sigmoid(beta * chosen) + sigmoid(beta * rejected)
    return sigmoid(beta * chosen) + 1 - sigmoid(beta * delta)  # apo_down


def sequence_logprobs(hidden: jax.Array, head: Head, *positional: Any,
                      labels: jax.Array | None = None, targets: jax.Array | None = None,
                      mask: jax.Array | None = None, temperature: float = 1.0,
                      chunk_size: int = 1024, vocab_chunk: int | None = None,
                      vocab_parallel: VocabParallel | None = None,
                      ignore_index: int | None = IGNORE_INDEX
                      ) -> tuple[jax.Array, jax.Array]:
    """Each sequence's weighted sum of target log-probs ``[B]`` and its weight ``[B]``.

    Chunked like :func:`jaxlean.loss.chunked.token_logprobs` (same arguments: ``labels=``
    unshifted or ``targets=`` shifted, by keyword); ``mask`` ``[B, T]`` weights the tokens
    (0: prompt, padding; per label with ``labels``), and ignored targets count for
    nothing. The second result is the token count (mask sum) per sequence.
    """
    targets, shifted = ids_to_predict("sequence_logprobs", positional, labels, targets,
                                      ignore_index=ignore_index, per_token={"mask": mask})
    mask = shifted["mask"]
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


def dpo_loss(hidden: jax.Array, head: Head, *positional: Any, labels: jax.Array | None = None,
             targets: jax.Array | None = None, ref_logprobs: jax.Array | None = None,
             mask: jax.Array | None = None, beta: float = 0.1,
             loss_type: DPOLossType = "sigmoid", label_smoothing: float = 0.0,
             chunk_size: int = 1024,
             vocab_chunk: int | None = None, vocab_parallel: VocabParallel | None = None,
             ignore_index: int | None = IGNORE_INDEX) -> DPOLoss:
    """DPO (sigmoid, hinge or IPO) of a batch of preference pairs, chunked over the head.

    The batch is TRL's concatenation: rows ``[0, B)`` are the chosen completions and
    rows ``[B, 2B)`` the rejected ones, each with its prompt (``mask`` 0 on the prompt
    and padding, or ``targets`` ``-100`` there).

    Args:
        hidden: the policy's final hidden states ``[2B, T, H]``.
        head: ``[H, V]`` matrix or callable head, as in :func:`token_logprobs`.
        labels: ``[2B, T]`` the rows' token ids unshifted, as Hugging Face's ``labels``
            (``-100`` on the prompt and padding): shifted here, with ``mask`` and a per
            token ``ref_logprobs``, which are then per label.
        targets: ``[2B, T]`` the completions' token ids predicted at each position
            (already shifted). Give ``labels`` or ``targets``, by keyword: a positional
            array raises :class:`ConfigError` (it could be either).
        ref_logprobs: the frozen reference's log-probs of ``targets``: per token
            ``[2B, T]`` (weighted and summed here with ``mask``) or already summed per
            sequence ``[2B]`` (TRL's ``ref_chosen_logps`` then ``ref_rejected_logps``).
            Required, by keyword.
        mask: ``[2B, T]`` token weights (0 on prompts and padding); ``None``: all ones.
        beta, loss_type, label_smoothing: as in :func:`dpo_objective`.
        chunk_size, vocab_chunk, vocab_parallel, ignore_index: as in :func:`token_logprobs`.

    Returns:
        A :class:`DPOLoss`.
    """
    targets, shifted = ids_to_predict("dpo_loss", positional, labels, targets,
                                      ignore_index=ignore_index, keywords=("ref_logprobs",),
                                      per_token={"mask": mask, "ref_logprobs": ref_logprobs},
                                      per_sequence=("ref_logprobs",))
    mask, ref_logprobs = shifted["mask"], shifted["ref_logprobs"]
    if ref_logprobs is None:
        raise TypeError("dpo_loss() missing the required argument 'ref_logprobs' (by keyword)")
    if not hasattr(targets, "shape") or targets.ndim != 2 or targets.shape[0] % 2:
        raise StructureError("targets must be [2B, T] (chosen rows, then rejected rows), got "
                             f"{list(getattr(targets, 'shape', [targets]))}")
    ref = jnp.asarray(ref_logprobs)
    if ref.shape not in (targets.shape, targets.shape[:1]):
        raise StructureError(f"ref_logprobs must be [2B, T] = {list(targets.shape)} or [2B], "
                             f"got {list(ref.shape)}")
    logps, lengths = sequence_logprobs(hidden, head, targets=targets, mask=mask,
                                       chunk_size=chunk_size,
                                       vocab_chunk=vocab_chunk, vocab_parallel=vocab_parallel,
                                       ignore_index=ignore_index)
    if ref.ndim == 2:
        weights = jnp.ones(ref.shape, ref.dtype) if mask is None else jnp.asarray(mask, ref.dtype)
        ignored = (jnp.zeros(ref.shape, bool) if ignore_index is None
                   else jnp.asarray(targets) == ignore_index)
        ref = jnp.sum(jnp.where((weights != 0) & ~ignored, ref * weights, 0), -1)
    half = targets.shape[0] // 2
    return dpo_objective(logps[:half], logps[half:], ref[:half], ref[half:], beta=beta,
                         loss_type=loss_type, label_smoothing=label_smoothing,
                         chosen_lengths=lengths[:half],
                         rejected_lengths=lengths[half:])
