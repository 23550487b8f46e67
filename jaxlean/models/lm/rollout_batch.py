"""A GRPO training batch from a rollout: next-token layout, masks and the sampler's log-probs.

:func:`~jaxlean.models.lm.generate.generate` returns left-padded prompts and right-padded
completions with each token's log-prob under the sampling policy (TRL's "old" log-probs,
so no second forward pass is needed). :func:`rollout_batch` lays them out for
:func:`~jaxlean.models.lm.heads.policy_loss`: position ``t`` predicts token ``t + 1``,
the loss mask covers the completion tokens only, and with ``mask_truncated_completions``
(TRL's option) completions cut by the length limit count for nothing. The result is a
dict passed whole: ``policy_loss(model, **batch, advantages=advantages, ...)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

__all__ = ["rollout_batch"]


@jax.jit
def _layout(tokens: Array, logprobs: Array, lengths: Array, finish_reason: Array,
            prompt: Array, prompt_mask: Array, mask_truncated: Array) -> dict[str, Array]:
    completion = jnp.arange(tokens.shape[1])[None, :] < lengths[:, None]
    ids = jnp.concatenate([prompt, tokens], axis=1)
    attention = jnp.concatenate([prompt_mask, completion], axis=1)
    before = jnp.zeros((ids.shape[0], prompt.shape[1] - 1), jnp.float32)
    keep = jnp.where(mask_truncated, finish_reason != 0, True)  # 0: "length"
    mask = jnp.concatenate([before, completion.astype(jnp.float32)], axis=1)
    mask = mask * keep[:, None].astype(jnp.float32)
    old = jnp.concatenate([before, logprobs.astype(jnp.float32)], axis=1)
    return {"input_ids": ids[:, :-1], "targets": ids[:, 1:],
            "attention_mask": attention[:, :-1], "mask": mask, "old_logprobs": old}


def rollout_batch(rollout, *, mask_truncated_completions: bool = False) -> dict[str, Array]:
    """The policy-loss inputs of a :class:`~jaxlean.models.lm.generate.Rollout`.

    Args:
        rollout: what ``generate`` returned (``[B, P]`` prompts, ``[B, N]`` completions).
        mask_truncated_completions: completions that stopped at the length limit (no eos,
            no stop sequence) get a zero loss mask (TRL's ``mask_truncated_completions``).

    Returns:
        ``input_ids``, ``targets`` (shifted: ``input_ids``' next token), ``attention_mask``
        ``[B, P + N - 1]``; ``mask`` (float, 1 on completion tokens) and ``old_logprobs``
        (the sampler's log-probs of ``targets``, 0 elsewhere), both per target position.
        Compiled once per shape.
    """
    truncated = jnp.asarray(bool(mask_truncated_completions))
    return _layout(rollout.tokens, rollout.logprobs, rollout.lengths, rollout.finish_reason,
                   rollout.prompt, rollout.prompt_mask, truncated)
