"""A synthetic language-model corpus, the same in every process.

:func:`synthetic_batch` gives every process the same learnable batches
(arithmetic sequences), so a run's losses can be compared across layouts.
"""

from __future__ import annotations

import numpy as np

__all__ = ["synthetic_batch"]


def synthetic_batch(step: int, batch: int, length: int, vocab: int,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens, targets)`` ``[batch, length]`` int32: arithmetic sequences modulo ``vocab``.

    Each row starts at a random token and adds a random stride, so the next
    token is predictable from the previous two and the loss falls as the
    model learns. The same ``(step, seed)`` gives the same batch in every process.
    """
    rng = np.random.default_rng([seed, step])
    start = rng.integers(0, vocab, (batch, 1))
    stride = rng.integers(1, max(2, vocab // 8), (batch, 1))
    sequence = (start + stride * np.arange(length + 1)) % vocab
    return sequence[:, :-1].astype(np.int32), sequence[:, 1:].astype(np.int32)
