"""Losses on a language model's head that never build the ``[tokens, vocab]`` logits.

- ``chunked``: :func:`cross_entropy`, :func:`token_logprobs`, :func:`token_stats`
  (the public API of the chunked kernel);
- ``distill``: :func:`distill_loss`, a divergence between a student and a teacher head;
- ``policy``: :func:`policy_gradient_loss`, the PPO / GRPO clipped objective (TRL's
  ``grpo``, ``bnpo``, ``dr_grpo``, ``dapo`` normalisations; GSPO's sequence-level ratio);
- ``advantages``: GRPO group-normalised and RLOO advantages, DAPO's dynamic sampling
  and overlong reward shaping (plain ``jnp`` on rewards);
- ``preference``: :func:`dpo_loss`, DPO with TRL's sigmoid, hinge and IPO losses;
- ``onepass``: scalar losses whose gradient is computed in the forward pass;
- ``vocab_parallel``: :class:`VocabParallel`, a head split over the vocabulary on a mesh.

Every loss here that takes token ids takes them by keyword: ``targets=`` (already shifted:
position ``t`` predicts ``targets[..., t]``) or ``labels=`` (Hugging Face's, unshifted, shifted
inside with the call's per-token arrays); a positional one could be either and raises a
``ConfigError`` (``_token_ids``). ``distill_loss`` takes ``targets=`` only.

Private modules hold the shared machinery: ``_kernel`` (plan, block statistics,
custom VJPs), ``_checks`` (input checks, targets, loss weights), ``_per_token``
(the kernel's entry) and ``_divergence`` (distillation's recomputing path).
Importing :mod:`jaxlean` alone does not import this package (its names load on
first use).
"""

from jaxlean.loss.advantages import (
    SCALE_REWARDS,
    ScaleRewards,
    group_advantages,
    overlong_penalty,
    rloo_advantages,
    varied_groups,
)
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
    IMPORTANCE_SAMPLING_LEVELS,
    KL_ESTIMATORS,
    NORMALIZATIONS,
    ImportanceSamplingLevel,
    KLEstimator,
    Normalization,
    PolicyLoss,
    PolicyOptions,
    kl_estimate,
    policy_gradient_loss,
    policy_objective,
)
from jaxlean.loss.preference import (
    DPO_LOSS_TYPES,
    DPOLoss,
    DPOLossType,
    dpo_loss,
    dpo_objective,
    sequence_logprobs,
)
from jaxlean.loss.vocab_parallel import VocabParallel

__all__ = [
    "AUTO_BLOCK_BYTES",
    "DIVERGENCES",
    "DPO_LOSS_TYPES",
    "IGNORE_INDEX",
    "IMPORTANCE_SAMPLING_LEVELS",
    "KL_ESTIMATORS",
    "NORMALIZATIONS",
    "SCALE_REWARDS",
    "DPOLoss",
    "DPOLossType",
    "Divergence",
    "Head",
    "ImportanceSamplingLevel",
    "KLEstimator",
    "Normalization",
    "PolicyLoss",
    "PolicyOptions",
    "Reduction",
    "ScaleRewards",
    "TokenStats",
    "VocabParallel",
    "cross_entropy",
    "distill_loss",
    "dpo_loss",
    "dpo_objective",
    "group_advantages",
    "kl_estimate",
    "overlong_penalty",
    "policy_gradient_loss",
    "policy_objective",
    "reduce_tokens",
    "rloo_advantages",
    "sequence_logprobs",
    "token_logprobs",
    "token_stats",
    "varied_groups",
]
