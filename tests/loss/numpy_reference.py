"""What the loss tests share: references computed in NumPy (float64), so building a test's
inputs compiles nothing."""

from __future__ import annotations

import numpy as np

__all__ = ["numpy_logprobs"]


def numpy_logprobs(hidden, head, tokens, temperature=1.0):
    """log_softmax(hidden @ head / temperature) at ``tokens``, in NumPy (float64)."""
    z = np.asarray(hidden, np.float64) @ np.asarray(head, np.float64) / temperature
    z -= z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return np.take_along_axis(logp, tokens[..., None], -1)[..., 0]
