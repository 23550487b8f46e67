"""The transformer's RL and distillation entry points: per-token statistics, PPO/GRPO, distillation.

Each runs the model's layers as its config says, then hands the final hidden
states and the (possibly LoRA, possibly tied) head to the chunked functions of
:mod:`jaxlean.loss`, so no ``[tokens, vocab]`` logit matrix is ever built,
for the policy and for a teacher alike. Arguments the model takes
(``attention_mask``, ``adapter_ids``) are named here; every other keyword goes
to the loss function unchanged, whose documentation lists them. Targets and
labels follow Hugging Face: ``-100`` (``ignore_index``) marks positions without
a loss, eager or jitted; any other id outside the vocabulary raises eagerly and
makes the result NaN under ``jit``.
"""

from __future__ import annotations

from typing import Any

from jax import Array

from jaxlean.loss.chunked import TokenStats
from jaxlean.loss.chunked import token_stats as _token_stats
from jaxlean.loss.distill import distill_loss
from jaxlean.loss.policy import PolicyLoss, policy_gradient_loss
from jaxlean.models.lm.transformer import Transformer

__all__ = ["distill", "policy_loss", "token_stats"]


def _hidden_and_head(model: Transformer, tokens: Array, attention_mask: Array | None,
                     adapter_ids: Array | None) -> tuple[Array, Any]:
    hidden = model.last_hidden_state(tokens, attention_mask=attention_mask,
                                     adapter_ids=adapter_ids)
    return model.head(hidden, adapter_ids)


def token_stats(model: Transformer, tokens: Array, targets: Array, *,
                attention_mask: Array | None = None, adapter_ids: Array | None = None,
                **options: Any) -> TokenStats:
    """Log-prob of ``targets``, entropy, logsumexp, argmax and top-k at every position ``[B, T]``.

    Args:
        model: the transformer.
        tokens: ``[B, T]`` input ids.
        targets: ``[B, T]`` ids whose log-probs are wanted (usually ``tokens`` shifted);
            the log-prob is 0 where the target is ``ignore_index`` (-100).
        attention_mask: ``[B, T]`` False at padding tokens.
        adapter_ids: ``[B]`` LoRA adapter per example.
        **options: ``top_k``, ``temperature``, ``chunk_size``, ``vocab_chunk``,
            ``vocab_parallel``, ``ignore_index`` of :func:`jaxlean.loss.chunked.token_stats`.
    """
    inputs, head = _hidden_and_head(model, tokens, attention_mask, adapter_ids)
    return _token_stats(inputs, head, targets, **options)


def policy_loss(model: Transformer, tokens: Array, targets: Array, old_logprobs: Array,
                advantages: Array, *, attention_mask: Array | None = None,
                adapter_ids: Array | None = None, **options: Any) -> PolicyLoss:
    """The clipped PPO / GRPO objective of the sampled ``targets``, in one pass over the head.

    Args:
        model: the policy.
        tokens: ``[B, T]`` input ids (prompt and completion).
        targets: ``[B, T]`` the sampled ids predicted at each position (``ignore_index``,
            -100, where there is none: prompts, padding).
        old_logprobs: ``[B, T]`` their log-probs under the sampling policy.
        advantages: ``[B]`` or ``[B, T]``.
        attention_mask: ``[B, T]`` False at padding tokens.
        adapter_ids: ``[B]`` LoRA adapter per example.
        **options: ``mask`` (0 on prompts and padding), ``clip_eps``, ``ref_logprobs``,
            ``kl_coef``, ``kl_estimator``, ``entropy_coef``, ``normalization``,
            ``temperature``, ``ignore_index``, ... of
            :func:`jaxlean.loss.policy.policy_gradient_loss`.
    """
    inputs, head = _hidden_and_head(model, tokens, attention_mask, adapter_ids)
    return policy_gradient_loss(inputs, head, targets, old_logprobs, advantages, **options)


def distill(student: Transformer, teacher: Transformer, tokens: Array, *,
            attention_mask: Array | None = None, adapter_ids: Array | None = None,
            teacher_adapter_ids: Array | None = None, **options: Any) -> Array:
    """Divergence between the teacher's and the student's next-token distributions on ``tokens``.

    The two models may differ in width and depth but must share the vocabulary.
    The teacher is a constant unless ``teacher_grad=True``.

    Args:
        student, teacher: the transformers.
        tokens: ``[B, T]`` input ids, fed to both.
        attention_mask: ``[B, T]`` False at padding tokens (both models).
        adapter_ids, teacher_adapter_ids: ``[B]`` LoRA adapters per example, per model.
        **options: ``divergence``, ``beta``, ``top_k``, ``temperature``, ``mask``,
            ``targets`` (-100 where there is no loss), ``ignore_index``, ``reduction``,
            ``teacher_grad``, ... of :func:`jaxlean.loss.distill.distill_loss`.
    """
    inputs_s, head_s = _hidden_and_head(student, tokens, attention_mask, adapter_ids)
    inputs_t, head_t = _hidden_and_head(teacher, tokens, attention_mask, teacher_adapter_ids)
    return distill_loss(inputs_s, head_s, inputs_t, head_t, **options)
