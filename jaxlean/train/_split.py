"""Split a packed buffer into its leaves with one compiled kernel per leaf shape, not per leaf.

Slicing leaf ``i`` out of a buffer at a constant offset puts the offset into
the kernel XLA compiles for that slice (and for whatever elementwise work is
fused with it), so every leaf costs a kernel of its own: at 192 leaves XLA:CPU
spent 2.2 s compiling the slices of one buffer, more than the whole per-leaf
optax step. With the offsets as runtime scalars, the slices of same-shaped
leaves are one kernel that XLA compiles once. The scalars come out of a
``lax.cond`` whose two branches are the same constants: whichever branch runs,
the offsets are exact, and XLA cannot fold them into the consumers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def split(buffer: jax.Array, starts: Sequence[int], shapes: Sequence[tuple[int, ...]]
          ) -> tuple[jax.Array, ...]:
    """The blocks ``buffer[start:start + n]`` reshaped to ``shape``, one per (start, shape).

    ``buffer`` is flat (``n`` counts elements) or a stack of matrices ``[count, m, n]``
    (``n`` counts matrices). Blocks must lie inside the buffer. Only shapes that occur
    more than once get runtime offsets: a shape of its own is a kernel of its own anyway.
    """
    per = 1 if buffer.ndim == 1 else buffer.shape[1] * buffer.shape[2]
    counts = [math.prod(shape) // per for shape in shapes]
    offsets: list[Any] = [np.int32(start) for start in starts]  # int32 under x64 too
    repeats = Counter(shapes)
    shared = [i for i, shape in enumerate(shapes) if repeats[shape] > 1]
    if shared and buffer.size:
        first = buffer.reshape(-1)[0]
        constants = lambda: tuple(jnp.int32(starts[i]) for i in shared)
        for i, offset in zip(shared, lax.cond(first != first, constants, constants), strict=True):
            offsets[i] = offset
    zeros = (np.int32(0),) * (buffer.ndim - 1)  # one index type (Python ints are int64 under x64)
    return tuple(lax.dynamic_slice(buffer, (offset, *zeros), (count, *buffer.shape[1:]))
                 .reshape(shape)
                 for offset, count, shape in zip(offsets, counts, shapes, strict=True))
