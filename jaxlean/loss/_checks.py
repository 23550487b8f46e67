"""Input checks and target handling shared by every loss of :mod:`jaxlean.loss`.

Each check raises a typed error (:class:`ConfigError` for a setting,
:class:`StructureError` for a shape or dtype, :class:`DataError` for a value)
naming the argument. Targets are split into ids that are safe to gather and
the positions that are ignored (``ignore_index``) or invalid (outside the
vocabulary under ``jit``), and loss weights are combined with the ignored
positions, so every loss treats ``-100`` and a bad id alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxlean.errors import ConfigError, DataError, StructureError

__all__ = [
    "IGNORE_INDEX",
    "Head",
    "Reduction",
    "Targets",
    "check_chunk",
    "check_ignore_index",
    "check_inputs",
    "check_temperature",
    "check_top_k",
    "head_vocab",
    "keep_mask",
    "masked_targets",
    "reduce_tokens",
    "split_targets",
]


Head = jax.Array | Callable[[jax.Array], jax.Array]
Reduction = Literal["mean", "sum", "none"]


def check_chunk(name: str, value: Any) -> None:
    """A :class:`ConfigError` unless ``value`` is a positive integer."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name} must be a positive integer (number of tokens/columns per "
                          f"chunk), got {value!r}")


def check_inputs(hidden: Any, targets: Any) -> None:
    """A :class:`StructureError` unless ``hidden [..., T, H]`` is floating and
    ``targets [..., T]`` are integer ids of its leading shape."""
    if not isinstance(hidden, (jax.Array, np.ndarray)) or hidden.ndim < 2:
        raise StructureError(f"hidden must be an array [..., T, H], got "
                             f"{getattr(hidden, 'shape', type(hidden).__name__)}")
    if not jnp.issubdtype(hidden.dtype, jnp.floating):
        raise StructureError(f"hidden must be floating point, got dtype {hidden.dtype}")
    if not hasattr(targets, "shape") or not jnp.issubdtype(targets.dtype, jnp.integer):
        raise StructureError("targets must be an integer array of token ids, got "
                             f"{getattr(targets, 'dtype', type(targets).__name__)}")
    if tuple(targets.shape) != tuple(hidden.shape[:-1]):
        raise StructureError(f"targets shape {list(targets.shape)} must equal hidden's leading "
                             f"shape {list(hidden.shape[:-1])} (hidden is {list(hidden.shape)})")


IGNORE_INDEX = -100
"""Hugging Face's label for "no loss here" (prompts, padding): every loss skips it by default."""


def check_ignore_index(ignore_index: Any) -> int | None:
    """``ignore_index`` as an int (or None: nothing ignored), else a :class:`ConfigError`."""
    if ignore_index is None:
        return None
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)):
        raise ConfigError(f"ignore_index must be an int (e.g. -100) or None, got "
                          f"{ignore_index!r}")
    return int(ignore_index)


class Targets(NamedTuple):
    """Target ids made safe to gather, and where they are ignored or invalid.

    Attributes:
        ids: the targets with every id outside ``[0, V)`` replaced by 0.
        ignored: True where the target equals ``ignore_index`` (None if nothing can be).
        invalid: True where the target is outside ``[0, V)`` and not ignored; only
            under ``jit`` (eagerly such an id raises), where its loss becomes NaN.
    """

    ids: jax.Array
    ignored: jax.Array | None
    invalid: jax.Array


def split_targets(targets: Any, vocab: int, ignore_index: int | None,
                  what: str = "target id") -> Targets:
    """Split ``targets`` into ids to gather, ignored and invalid positions.

    Concrete targets are checked here: an id outside ``[0, vocab)`` that is not
    ``ignore_index`` raises :class:`DataError` naming the first one. Traced ones
    cannot be, so their invalid positions are returned to be made NaN: a wrong
    id never yields a plausible finite loss.
    """
    ignored = None if ignore_index is None else targets == ignore_index
    valid = (targets >= 0) & (targets < vocab)
    if not isinstance(targets, jax.core.Tracer):
        values = np.asarray(targets)
        bad = (values < 0) | (values >= vocab)
        if ignore_index is not None:
            bad &= values != ignore_index
        bad = np.flatnonzero(bad)
        if bad.size:
            where = np.unravel_index(bad[0], values.shape)
            skip = "" if ignore_index is None else f" and is not ignore_index={ignore_index}"
            raise DataError(f"{what} {values[where]} at index {tuple(int(i) for i in where)} "
                            f"is outside the vocabulary [0, {vocab}){skip} ({bad.size} such ids)")
    invalid = ~valid if ignored is None else ~valid & ~ignored
    return Targets(jnp.where(valid, targets, 0), ignored, invalid)


def keep_mask(mask: jax.Array | None, t: Targets) -> jax.Array | None:
    """``mask`` with ignored positions set to 0 (None when neither masks anything)."""
    if t.ignored is None:
        return mask
    if mask is None:
        return ~t.ignored
    mask = jnp.asarray(mask)
    return jnp.where(t.ignored, jnp.zeros((), mask.dtype), mask)


def head_vocab(head: Head, hidden: jax.Array, chunk: int) -> tuple[int, Any]:
    """Vocabulary size and logits dtype of ``head``, checked against ``hidden``."""
    width = hidden.shape[-1]
    if isinstance(head, (jax.Array, np.ndarray)):
        if head.ndim != 2 or head.shape[0] != width:
            raise StructureError(f"head matrix must be [H, V] with H = hidden's last dim "
                                 f"{width}, got {list(head.shape)}")
        if not jnp.issubdtype(head.dtype, jnp.floating):
            raise StructureError(f"head matrix must be floating point, got {head.dtype}")
        return int(head.shape[1]), jnp.result_type(hidden, head)
    if not callable(head):
        raise StructureError(f"head must be an [H, V] array or a callable chunk -> logits, "
                             f"got {type(head).__name__}")
    example = jax.ShapeDtypeStruct((chunk, width), hidden.dtype)
    try:
        out = jax.eval_shape(head, example)
    except (TypeError, ValueError) as error:
        raise StructureError(f"the callable head fails on a chunk of hidden states "
                             f"[{chunk}, {width}] {hidden.dtype}: {error}") from error
    if (not isinstance(out, jax.ShapeDtypeStruct) or len(out.shape) != 2
            or out.shape[0] != chunk or not jnp.issubdtype(out.dtype, jnp.floating)):
        got = out.shape if isinstance(out, jax.ShapeDtypeStruct) else type(out).__name__
        raise StructureError(f"a callable head must map a chunk [{chunk}, {width}] to floating "
                             f"logits [{chunk}, V], got {got}")
    return int(out.shape[1]), out.dtype


def check_temperature(temperature: Any, name: str = "temperature") -> float:
    """``temperature`` as a float, or a :class:`ConfigError` unless it is a number > 0."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.number)) \
            or not temperature > 0 or not math.isfinite(temperature):
        raise ConfigError(f"{name} must be a finite number > 0 (logits are divided by it), "
                          f"got {temperature!r}")
    return float(temperature)


def check_top_k(top_k: Any, vocab: int, minimum: int = 1) -> int:
    """``top_k`` as an int, or a :class:`ConfigError` unless ``minimum <= top_k <= vocab``."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < minimum:
        raise ConfigError(f"top_k must be an integer >= {minimum}, got {top_k!r}")
    if top_k > vocab:
        raise ConfigError(f"top_k={top_k} is larger than the vocabulary size V={vocab}")
    return int(top_k)


def masked_targets(targets: jax.Array, mask: jax.Array | None) -> jax.Array:
    """``targets`` with masked-out positions set to 0 (they may hold any id, e.g. -100)."""
    if mask is None:
        return targets
    if tuple(jnp.shape(mask)) != tuple(targets.shape):
        raise StructureError(f"mask shape {list(jnp.shape(mask))} must equal targets shape "
                             f"{list(targets.shape)}")
    return jnp.where(jnp.asarray(mask) != 0, targets, 0)


def reduce_tokens(losses: jax.Array, mask: jax.Array | None, reduction: Reduction) -> jax.Array:
    """Per-token ``losses`` weighted by ``mask`` and reduced: ``"mean"`` over the mask's
    total weight (0 if it is empty), ``"sum"``, or ``"none"`` (masked tokens 0)."""
    if reduction not in ("mean", "sum", "none"):
        raise ConfigError(f"unknown reduction {reduction!r}: use 'mean', 'sum' or 'none'")
    if mask is not None:
        weights = jnp.asarray(mask).astype(losses.dtype)
        losses = jnp.where(weights != 0, losses * weights, 0)
    if reduction == "none":
        return losses
    total = jnp.sum(losses)
    if reduction == "sum":
        return total
    count = jnp.sum(weights) if mask is not None else losses.size
    return total / jnp.maximum(count, jnp.finfo(losses.dtype).tiny)
