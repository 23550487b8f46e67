"""The transformer's training loss and per-token log-probs, from its final hidden states.

Both run the model's layers as its config says and hand the final hidden
states and the (possibly LoRA, possibly tied) head to the chunked functions of
:mod:`jaxlean.loss.chunked`, so ``[tokens, vocab]`` logits never exist. The loss
takes Hugging Face's unshifted ``labels`` (shifted here, ``-100`` ignored) or
jaxlean's already-shifted ``targets``, by keyword only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
from jax import Array

from jaxlean._args import as_int, reject_renamed
from jaxlean.errors import DataError
from jaxlean.loss.chunked import IGNORE_INDEX, VocabParallel, cross_entropy, token_logprobs
from jaxlean.models.lm.token_args import packed_inputs, prediction_targets
from jaxlean.train.accumulate import join_micro_batches, split_micro_batches

if TYPE_CHECKING:  # transformer.py re-exports these functions, so it imports this module
    from jaxlean.models.lm.transformer import Transformer

__all__ = ["logprobs", "loss", "loss_tokens"]


def loss(
    model: Transformer,
    input_ids: Array | None = None,
    *positional: Any,
    labels: Array | None = None,
    targets: Array | None = None,
    weights: Array | None = None,
    attention_mask: Array | None = None,
    adapter_ids: Array | None = None,
    segment_ids: Array | None = None,
    positions: Array | None = None,
    position_ids: Array | None = None,
    z_loss: float = 0.0,
    chunk_size: int = 1024,
    vocab_parallel: VocabParallel | None = None,
    ignore_index: int | None = IGNORE_INDEX,
    **renamed: Any,
) -> Array:
    """Mean next-token cross-entropy, never building ``[tokens, vocab]`` logits.

    What to predict is given by keyword, in one of two conventions (a third
    positional argument is refused, since it could mean either; see
    :mod:`jaxlean.models.lm.token_args`):

    - ``labels`` as in Hugging Face: ``[B, T]`` aligned with ``input_ids`` (usually
      the ids themselves, ``-100`` where there is no loss) and shifted here, so
      position ``t`` predicts ``labels[:, t + 1]``. ``loss(model, input_ids=ids,
      labels=labels, attention_mask=am)`` equals ``transformers``' causal-LM loss.
    - ``targets``: ``[B, T]`` the id to predict at each position, already shifted.

    A batch of :class:`~jaxlean.models.lm.data.batches.Batches`, packed or not, is
    passed whole: ``loss(model, **batch)``. The layers run as ``model.config`` says
    (``remat``, ``nested``, ``scan``). The old keywords ``mask=`` (now ``weights=``) and
    ``tokens=`` (now ``input_ids=``) raise an error naming the new ones.

    Args:
        model: the transformer.
        input_ids: ``[B, T]`` input ids.
        labels: ``[B, T]`` unshifted ids to predict (Hugging Face's ``labels``).
        targets: ``[B, T]`` shifted ids to predict; give ``labels`` or ``targets``.
            Positions whose label or target is ``ignore_index`` count for nothing.
        weights: ``[B, T]`` weights of the loss per position (padding and prompts at
            0): per position of ``targets``, or, with ``labels``, per label (shifted
            with them). The loss is the weighted mean.
        attention_mask: ``[B, T]`` False (or 0) at padding tokens, which are not
            attended to; as in Hugging Face it does not remove their labels (the
            collator sets those to ``-100``).
        adapter_ids: ``[B]`` LoRA adapter per example.
        segment_ids: ``[B, T]`` for packed rows (1, 2, ... per sequence, 0 at padding):
            attention stays within each segment and positions restart in each (see
            :meth:`~jaxlean.models.lm.transformer.Transformer.last_hidden_state`); with
            ``labels``, no position predicts a label of the next segment, so the loss
            equals that of the sequences unpacked.
        positions: ``[B, T]`` rotary positions; without ``segment_ids``, a restart at 0
            starts a new packed sequence (Hugging Face's padding-free ``position_ids``).
        position_ids: Hugging Face's name for ``positions`` (give one of the two).
        z_loss: weight of the ``logsumexp**2`` auxiliary loss.
        chunk_size: tokens per loss chunk.
        vocab_parallel: the head is split over a mesh axis's vocabulary; each
            device computes its part of the logsumexp (:class:`jaxlean.loss.chunked.VocabParallel`).
        ignore_index: the "no loss here" target (Hugging Face's ``-100`` labels; ``None``:
            none, only with ``targets``). Any other target outside the vocabulary raises
            when concrete and makes the loss NaN under ``jit``.

    Raises:
        ConfigError: a third positional argument, both or neither of ``labels`` and
            ``targets``, ``labels`` with ``ignore_index=None``, both ``positions`` and
            ``position_ids``, or an old keyword.
        DataError: ``labels``, ``weights`` or ``attention_mask`` whose shape is not
            ``input_ids``'s, or ids outside the vocabulary (when concrete).
    """
    reject_renamed(renamed, {"mask": "weights", "tokens": "input_ids"}, "loss")
    positions, segment_ids = packed_inputs("loss", input_ids, positions, position_ids,
                                           segment_ids)
    targets, weights = _targets("loss", input_ids, positional, labels, targets, weights,
                                segment_ids, ignore_index)
    hidden = model.last_hidden_state(input_ids, attention_mask=attention_mask,
                                     adapter_ids=adapter_ids, segment_ids=segment_ids,
                                     positions=positions)
    inputs, head = model.head(hidden, adapter_ids)
    return cross_entropy(inputs, head, targets=targets, mask=weights, z_loss=z_loss,
                         chunk_size=chunk_size, vocab_parallel=vocab_parallel,
                         ignore_index=ignore_index)


def _targets(where: str, input_ids: Array | None, positional: tuple, labels: Array | None,
             targets: Array | None, weights: Array | None, segment_ids: Array | None,
             ignore_index: int | None) -> tuple[Array, Array | None]:
    """The shifted targets and their weights that :func:`loss` averages over."""
    if weights is not None and input_ids is not None and (
            tuple(jnp.shape(weights)) != tuple(jnp.shape(input_ids))):
        name = "input_ids" if labels is not None else "targets"
        raise DataError(f"weights must have the shape of {name} {tuple(jnp.shape(input_ids))}, "
                        f"got {tuple(jnp.shape(weights))}")
    targets, extra = prediction_targets(where, input_ids, positional, labels, targets,
                                        segment_ids=segment_ids, ignore_index=ignore_index,
                                        per_token={"weights": weights})
    return targets, extra["weights"]


def loss_tokens(input_ids: Array | None = None, *positional: Any, labels: Array | None = None,
                targets: Array | None = None, weights: Array | None = None,
                segment_ids: Array | None = None, positions: Array | None = None,
                position_ids: Array | None = None, ignore_index: int | None = IGNORE_INDEX,
                **_: Any) -> Array:
    """What :func:`loss`'s mean divides by: the number of positions with a target
    (``labels`` shifted, ``-100`` and segment ends left out), or their total ``weights``.

    Called like :func:`loss` without the model (other keywords such as
    ``attention_mask`` are ignored), it is the ``loss_weight`` that makes
    ``make_train_step(loss, tx, micro_batches=k, loss_weight=loss_tokens)`` give exactly
    the full batch's loss and gradient however the padding falls across micro-batches.
    """
    if input_ids is not None:
        _, segment_ids = packed_inputs("loss_tokens", input_ids, positions, position_ids,
                                       segment_ids)
    targets, weights = _targets("loss_tokens", input_ids, positional, labels, targets, weights,
                                segment_ids, ignore_index)
    targets = jnp.asarray(targets)
    kept = (jnp.ones(targets.shape, bool) if ignore_index is None
            else targets != ignore_index)
    if weights is None:
        return jnp.sum(kept.astype(jnp.int32))
    weights = jnp.asarray(weights)
    return jnp.sum(jnp.where(kept, weights, jnp.zeros((), weights.dtype)).astype(jnp.float32))


def logprobs(
    model: Transformer,
    input_ids: Array | None = None,
    *positional: Any,
    labels: Array | None = None,
    targets: Array | None = None,
    attention_mask: Array | None = None,
    adapter_ids: Array | None = None,
    segment_ids: Array | None = None,
    chunk_size: int = 1024,
    vocab_parallel: VocabParallel | None = None,
    ignore_index: int | None = IGNORE_INDEX,
    micro_batches: int = 1,
) -> Array:
    """Per-position ``log p(targets)`` ``[B, T]`` (for RL objectives), computed in chunks; 0
    where the target is ``ignore_index``; ``segment_ids`` as for :func:`loss`.

    The ids to predict are given as in :func:`loss`, by keyword: ``labels=`` (unshifted,
    Hugging Face's; position ``t`` gets ``log p(labels[:, t + 1])``, the last position 0)
    or ``targets=`` (already shifted); a third positional array raises ``ConfigError``.

    ``micro_batches=k`` runs the model on ``B / k`` rows at a time (rows ``i::k``, in a
    ``lax.map``: compiled once), so scoring a large rollout batch needs one micro-batch's
    activations; the result is the same. ``k`` must divide ``B``.
    """
    targets, _ = prediction_targets("logprobs", input_ids, positional, labels, targets,
                                    segment_ids=segment_ids, ignore_index=ignore_index)
    micro_batches = as_int(micro_batches, "logprobs: micro_batches", minimum=1)
    options = dict(chunk_size=chunk_size, vocab_parallel=vocab_parallel,
                   ignore_index=ignore_index)
    rows = dict(tokens=input_ids, targets=targets, attention_mask=attention_mask,
                adapter_ids=adapter_ids, segment_ids=segment_ids)
    if micro_batches == 1:
        return _logprobs(model, **rows, **options)
    micro = split_micro_batches(rows, micro_batches, where="logprobs")
    return join_micro_batches(jax.lax.map(lambda r: _logprobs(model, **r, **options), micro))


def _logprobs(model: Transformer, tokens: Array, targets: Array, *,
              attention_mask: Array | None, adapter_ids: Array | None,
              segment_ids: Array | None, **options: Any) -> Array:
    hidden = model.last_hidden_state(tokens, attention_mask=attention_mask,
                                     adapter_ids=adapter_ids, segment_ids=segment_ids)
    inputs, head = model.head(hidden, adapter_ids)
    return token_logprobs(inputs, head, targets=targets, **options)
