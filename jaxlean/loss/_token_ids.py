"""The ids a loss predicts: ``labels=`` (unshifted) or ``targets=`` (shifted), by keyword only.

The losses of :mod:`jaxlean.loss` take hidden states ``[..., T, H]``, one per position. Two
arrays ``[..., T]`` of token ids can describe what those positions predict, and they differ
by one position:

- ``targets`` (jaxlean's): already shifted, position ``t`` predicts ``targets[..., t]``;
- ``labels`` (Hugging Face's): aligned with the input ids, position ``t`` predicts
  ``labels[..., t + 1]``; they are shifted here, and the last position (which has no next
  token) predicts nothing (``ignore_index``, Hugging Face's ``-100``).

An array passed positionally could be either, and one for the other gives a plausible
wrong number with no error, so a third positional argument is refused, as
:func:`jaxlean.models.lm.causal_loss.loss` refuses one (a loss called with ``targets``
positionally before now raises a :class:`~jaxlean.errors.ConfigError` naming both
keywords: nothing changes meaning silently).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from jaxlean.errors import ConfigError, StructureError

__all__ = ["ids_to_predict", "shift_labels"]

_KEYWORDS = ("labels=... (unshifted, as Hugging Face's: position t predicts labels[..., t + 1]; "
             "shifted here) or targets=... (already shifted: position t predicts "
             "targets[..., t])")


def shift_labels(labels: Any, fill: Any) -> jax.Array:
    """``labels[..., 1:]`` followed by ``fill``: the ids each position predicts."""
    labels = jnp.asarray(labels)
    end = jnp.full((*labels.shape[:-1], 1), fill, labels.dtype)
    return jnp.concatenate([labels[..., 1:], end], axis=-1)


def ids_to_predict(where: str, positional: tuple, labels: Any, targets: Any, *,
                   ignore_index: int | None, keywords: Sequence[str] = (),
                   per_token: Mapping[str, Any] | None = None,
                   per_sequence: Collection[str] = (), required: bool = True
                   ) -> tuple[Any, dict[str, Any]]:
    """The shifted targets a loss predicts, and its per-token arrays aligned with them.

    Args:
        where: the loss's name, for messages.
        positional: what the loss got positionally after ``(hidden, head)``; refused.
        labels: unshifted ids (``[..., T]``), shifted here.
        targets: shifted ids (``[..., T]``), returned as given.
        ignore_index: the "no loss" id; with ``labels`` it fills the last position.
        keywords: the loss's other array arguments, named in the positional message.
        per_token: arrays of the call that are per position (a mask, old log-probs):
            with ``labels`` they must have the labels' shape and shift with them (0 at the
            end). One that would merely broadcast against the labels (a ``[T]`` mask with
            ``[B, T]`` labels) is refused: shifting it is a guess, and not shifting it is
            one position off.
        per_sequence: the keys of ``per_token`` that may instead be one value per
            sequence (``labels.shape[:-1]``, e.g. a ``[B]`` advantage); those pass
            unchanged.
        required: whether one of ``labels`` and ``targets`` must be given.

    Raises:
        ConfigError: a positional array, both ``labels`` and ``targets`` (or neither,
            when ``required``), ``labels`` with ``ignore_index=None``.
        StructureError: with ``labels``, a per-token array of another shape.
    """
    per_token = dict(per_token or {})
    if positional:
        others = "".join(f", {k}=" for k in keywords)
        raise ConfigError(
            f"{where} takes the ids to predict by keyword, not as positional argument 3 "
            f"(it got {len(positional)} array(s) after hidden and head): {_KEYWORDS}"
            + (f"; likewise{others[1:]}" if keywords else ""))
    if labels is not None and targets is not None:
        raise ConfigError(f"{where} needs one of labels= (unshifted) and targets= (shifted), "
                          f"got both")
    if labels is None:
        if targets is None and required:
            raise ConfigError(f"{where} needs the ids to predict, got neither labels= nor "
                              f"targets=: {_KEYWORDS}")
        return targets, per_token
    if ignore_index is None:
        raise ConfigError(f"{where}: labels= need an ignore_index (Hugging Face's -100) for the "
                          f"last position, which has no next token; use targets= with "
                          f"ignore_index=None")
    if not hasattr(labels, "shape") or jnp.ndim(labels) < 1:
        raise StructureError(f"{where}: labels must be an array [..., T] of token ids, got "
                             f"{getattr(labels, 'shape', type(labels).__name__)}")
    shape = tuple(jnp.shape(labels))
    for key, value in per_token.items():
        if value is None:
            continue
        got = tuple(jnp.shape(value))
        if got == shape:
            per_token[key] = shift_labels(value, 0)
        elif not (key in per_sequence and got == shape[:-1]):
            allowed = f"{list(shape)}" + (f" or one per sequence {list(shape[:-1])}"
                                          if key in per_sequence else "")
            raise StructureError(
                f"{where}: with labels= {list(shape)}, {key} must be {allowed} so that it "
                f"shifts with the labels; got {list(got)}. A {key} that only broadcasts "
                f"against the labels would be one position off; give it the labels' shape, "
                f"or pass targets= (already shifted) instead")
    return shift_labels(labels, ignore_index), per_token
