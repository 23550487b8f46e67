"""Random draws that compile fast on XLA:CPU.

``jax.random.normal(key, shape)`` with a 3- or 4-dimensional ``shape``
compiles many times longer on XLA:CPU than a flat draw of the same size (jax
0.10 and 0.12); every new shape compiles again. A flat draw reshaped is the same draw:
the same random bits and uniforms, mapped through the same ``erf_inv``. XLA's
``erf_inv`` may round one value one ulp differently in a kernel of another
shape (jax 0.12, XLA:CPU), so the values equal ``jax.random.normal``'s to one
ulp. Building a model (LoRA adapters, stacked PMMs) pays the fast compile and
stays reproducible.
:func:`normal_blocks` goes further: several shapes from one draw, one compile.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

__all__ = ["normal", "normal_blocks"]


def normal(key: Array, shape: tuple[int, ...], dtype: Any = float) -> Array:
    """``jax.random.normal(key, shape, dtype)``'s draw, drawn flat and reshaped (to one ulp)."""
    return jax.random.normal(key, (math.prod(shape),), dtype).reshape(shape)


def normal_blocks(key: Array, shapes: list[tuple[int, ...]], dtype: Any = float) -> list[Array]:
    """Standard-normal arrays of the given shapes from ONE random draw.

    One draw compiles one random kernel instead of one per shape, which keeps
    building small models (tests, benchmarks) cheap.
    """
    sizes = [math.prod(shape) for shape in shapes]
    flat = jax.random.normal(key, (sum(sizes),), dtype)
    offsets = list(itertools.accumulate(sizes))[:-1]
    return [block.reshape(shape)
            for block, shape in zip(jnp.split(flat, offsets), shapes, strict=True)]
