"""Random draws that compile fast on XLA:CPU.

``jax.random.normal(key, shape)`` with a 3- or 4-dimensional ``shape``
compiles for 0.7-2.5 s on XLA:CPU (measured with jax 0.10), against 0.2 s for
a flat draw of the same size; every new shape compiles again. A flat draw
reshaped gives exactly the same values, so building a model (LoRA adapters,
stacked PMMs) pays the fast compile and stays reproducible.
"""

from __future__ import annotations

import math
from typing import Any

import jax
from jax import Array

__all__ = ["normal"]


def normal(key: Array, shape: tuple[int, ...], dtype: Any = float) -> Array:
    """``jax.random.normal(key, shape, dtype)``, the same values, drawn flat and reshaped."""
    return jax.random.normal(key, (math.prod(shape),), dtype).reshape(shape)
