"""One convention for every loss that takes token ids: ``labels=`` or ``targets=``, by keyword.

Hugging Face's ``labels`` are aligned with ``input_ids`` and shifted by the loss (position
``t`` predicts ``labels[:, t + 1]``); jaxlean's ``targets`` are already shifted. A third
positional array could mean either, and passing one for the other gives a plausible wrong
number, so every token loss (:func:`~jaxlean.models.lm.causal_loss.loss`,
:func:`~jaxlean.models.lm.preference.dpo_loss`, :func:`~jaxlean.models.lm.heads.policy_loss`,
...) takes them by keyword only and refuses a positional one.

Packed rows (several sequences in one row) are described by ``segment_ids`` (1, 2, ... per
sequence, 0 at padding) or, as in Hugging Face's padding-free batches, by ``position_ids``
restarting at 0 where each sequence starts; either keeps each sequence's attention to
itself, and no position predicts a label of the next sequence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
from jax import Array

from jaxlean.errors import ConfigError, DataError

__all__ = ["packed_inputs", "prediction_targets", "segments_from_positions"]


def segments_from_positions(positions: Array) -> Array:
    """Segment ids ``[B, T]`` of rows whose positions restart at 0 where a sequence starts:
    ``cumsum(positions == 0)``, so each run from a 0 to the next is one segment."""
    positions = jnp.asarray(positions)
    return jnp.cumsum((positions == 0).astype(jnp.int32), axis=-1)


def packed_inputs(where: str, input_ids: Array, positions: Array | None,
                  position_ids: Array | None, segment_ids: Array | None
                  ) -> tuple[Array | None, Array | None]:
    """``(positions, segment_ids)`` from what a caller gave: ``positions`` (jaxlean's name) or
    ``position_ids`` (Hugging Face's), not both; positions without ``segment_ids`` give the
    segments (:func:`segments_from_positions`), as Hugging Face's padding-free batches do."""
    if positions is not None and position_ids is not None:
        raise ConfigError(f"{where}: give positions= or position_ids= (the same thing, "
                          f"Hugging Face's name), not both")
    positions = position_ids if positions is None else positions
    if positions is None:
        return None, segment_ids
    if tuple(jnp.shape(positions)) != tuple(jnp.shape(input_ids)):
        raise DataError(f"{where}: positions must have the shape of input_ids "
                        f"{tuple(jnp.shape(input_ids))}, got {tuple(jnp.shape(positions))}")
    if segment_ids is None:
        segment_ids = segments_from_positions(positions)
    return jnp.asarray(positions), segment_ids


def _shift(x: Array, fill: Any) -> Array:
    x = jnp.asarray(x)
    end = jnp.full((*x.shape[:-1], 1), fill, x.dtype)
    return jnp.concatenate([x[..., 1:], end], axis=-1)


def prediction_targets(where: str, input_ids: Array | None, positional: tuple,
                       labels: Array | None, targets: Array | None, *,
                       segment_ids: Array | None = None, ignore_index: int | None = -100,
                       per_token: Mapping[str, Array | None] | None = None
                       ) -> tuple[Array, dict[str, Array | None]]:
    """The shifted targets ``[B, T]`` a token loss predicts, and its per-token arrays aligned
    with them.

    Args:
        where: the calling function's name, for messages.
        input_ids: ``[B, T]`` the input ids.
        positional: what the caller got beyond ``(model, input_ids)`` positionally; refused.
        labels: Hugging Face's unshifted labels (``-100``: no loss), shifted here.
        targets: already shifted ids to predict.
        segment_ids: packed rows' segments; with ``labels``, a position whose next token
            is in another segment predicts nothing.
        ignore_index: the "no loss" id (needed with ``labels``: the last position has no
            next token).
        per_token: other ``[B, T]`` arrays of the call (weights, masks, old log-probs):
            with ``labels`` they are per label and shift with them (0 at the end); arrays
            of another shape (a ``[B]`` summed log-prob) pass unchanged.

    Raises:
        ConfigError: a positional array, both or neither of ``labels`` and ``targets``,
            ``labels`` with ``ignore_index=None``.
        DataError: ``labels`` or ``targets`` not of the shape of ``input_ids``.
    """
    per_token = dict(per_token or {})
    if positional:
        raise ConfigError(
            f"{where} takes the ids to predict by keyword, not as positional argument "
            f"{len(positional) + 2}: labels=... (unshifted, as Hugging Face's; shifted here) "
            f"or targets=... (already shifted)")
    if input_ids is None:
        raise TypeError(f"{where}() missing the argument 'input_ids'")
    if (labels is None) == (targets is None):
        raise ConfigError(f"{where} needs exactly one of labels= (unshifted, Hugging Face's) "
                          f"and targets= (shifted), got "
                          f"{'both' if labels is not None else 'neither'}")
    shape = tuple(jnp.shape(input_ids))
    given = labels if labels is not None else targets
    name = "labels" if labels is not None else "targets"
    if tuple(jnp.shape(given)) != shape:
        raise DataError(f"{where}: {name} must have the shape of input_ids {shape}, got "
                        f"{tuple(jnp.shape(given))}")
    if labels is None:
        return targets, per_token
    if ignore_index is None:
        raise ConfigError(f"{where}: labels need an ignore_index (Hugging Face's -100) for the "
                          f"last position, which has no next token; use targets= with "
                          f"ignore_index=None")
    shifted = _shift(labels, ignore_index)
    if segment_ids is not None and tuple(jnp.shape(segment_ids)) == shape:
        segment_ids = jnp.asarray(segment_ids)
        crossing = jnp.concatenate([segment_ids[..., 1:] != segment_ids[..., :-1],
                                    jnp.ones_like(segment_ids[..., :1], bool)], axis=-1)
        shifted = jnp.where(crossing, jnp.asarray(ignore_index, shifted.dtype), shifted)
    for key, value in per_token.items():
        if value is not None and tuple(jnp.shape(value)) == shape:
            per_token[key] = _shift(value, 0)
    return shifted, per_token
