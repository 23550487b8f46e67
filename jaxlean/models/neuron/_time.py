"""Time loops whose backward pass keeps O(sqrt(T)) states: nested, checkpointed scans.

A plain ``lax.scan`` over T steps keeps every step's residuals for the backward
pass. Cutting the steps into segments, each a ``jax.checkpoint``-ed inner scan,
keeps only the state at each segment's start; the backward pass recomputes one
segment at a time. Two levels of ``sqrt(T)`` steps keep about ``2 sqrt(T)``
states for one extra forward pass; more levels keep fewer still.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import jax
import jax.numpy as jnp
from jax import lax

from jaxlean.errors import ConfigError

Checkpoint = Literal["sqrt"] | Sequence[int] | None


def segment_lengths(checkpoint: Checkpoint, steps: int) -> tuple[int, ...]:
    """The segment lengths, outermost first, of a ``checkpoint`` option for ``steps`` steps.

    Raises:
      ConfigError: an unknown option, a length below 1, or lengths whose
        product is smaller than ``steps``.
    """
    if checkpoint is None:
        return (steps,)
    if checkpoint == "sqrt":
        inner = max(1, math.isqrt(steps - 1) + 1) if steps > 1 else 1
        return (-(-steps // inner), inner)
    if isinstance(checkpoint, str) or not all(isinstance(k, int) for k in checkpoint):
        raise ConfigError(f"checkpoint must be None, 'sqrt' or a sequence of segment lengths; "
                          f"got {checkpoint!r}")
    lengths = tuple(checkpoint)
    if not lengths or min(lengths) < 1 or math.prod(lengths) < steps:
        raise ConfigError(f"checkpoint lengths must be >= 1 with a product of at least {steps} "
                          f"(the number of steps); got {lengths}")
    return lengths


def _nested(step: Callable, lengths: tuple[int, ...]) -> Callable:
    if len(lengths) == 1:
        return lambda carry, xs: lax.scan(step, carry, xs)
    segment = jax.checkpoint(_nested(step, lengths[1:]), prevent_cse=False)
    return lambda carry, xs: lax.scan(segment, carry, xs)


def scan_steps(step: Callable, carry, xs: jax.Array, checkpoint: Checkpoint):
    """``lax.scan(step, carry, xs)[1]`` with the backward memory set by ``checkpoint``.

    ``xs`` is padded with zeros up to the product of the segment lengths and the
    outputs of the padding steps are dropped.
    """
    steps = xs.shape[0]
    lengths = segment_lengths(checkpoint, steps)
    total = math.prod(lengths)
    if total > steps:
        xs = jnp.concatenate([xs, jnp.zeros((total - steps, *xs.shape[1:]), xs.dtype)])
    _, ys = _nested(step, lengths)(carry, xs.reshape(*lengths, *xs.shape[1:]))
    return jax.tree.map(lambda y: y.reshape(total, *y.shape[len(lengths):])[:steps], ys)
