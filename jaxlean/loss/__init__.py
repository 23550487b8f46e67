"""Losses on a language model's head that never build the ``[tokens, vocab]`` logits.

- ``chunked``: :func:`cross_entropy`, :func:`token_logprobs`, :func:`token_stats`
  (the public API of the chunked kernel);
- ``distill``: :func:`distill_loss`, a divergence between a student and a teacher head;
- ``policy``: :func:`policy_gradient_loss`, the PPO / GRPO clipped objective;
- ``onepass``: scalar losses whose gradient is computed in the forward pass;
- ``vocab_parallel``: :class:`VocabParallel`, a head split over the vocabulary on a mesh.

Private modules hold the shared machinery: ``_kernel`` (plan, block statistics,
custom VJPs), ``_checks`` (input checks, targets, loss weights), ``_per_token``
(the kernel's entry) and ``_divergence`` (distillation's recomputing path).
Importing :mod:`jaxlean` alone does not import this package (its names load on
first use).
"""

from jaxlean.loss.chunked import (
    AUTO_BLOCK_BYTES,
    IGNORE_INDEX,
    Head,
    Reduction,
    TokenStats,
    cross_entropy,
    reduce_tokens,
    token_logprobs,
    token_stats,
)
from jaxlean.loss.distill import DIVERGENCES, Divergence, distill_loss
from jaxlean.loss.policy import (
    KL_ESTIMATORS,
    KLEstimator,
    Normalization,
    PolicyLoss,
    PolicyOptions,
    kl_estimate,
    policy_gradient_loss,
)
from jaxlean.loss.vocab_parallel import VocabParallel

__all__ = [
    "AUTO_BLOCK_BYTES",
    "DIVERGENCES",
    "IGNORE_INDEX",
    "KL_ESTIMATORS",
    "Divergence",
    "Head",
    "KLEstimator",
    "Normalization",
    "PolicyLoss",
    "PolicyOptions",
    "Reduction",
    "TokenStats",
    "VocabParallel",
    "cross_entropy",
    "distill_loss",
    "kl_estimate",
    "policy_gradient_loss",
    "reduce_tokens",
    "token_logprobs",
    "token_stats",
]
