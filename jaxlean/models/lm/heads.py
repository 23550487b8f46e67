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

from jaxlean.errors import ConfigError
from jaxlean.loss.chunked import TokenStats
from jaxlean.loss.chunked import token_stats as _token_stats
from jaxlean.loss.distill import distill_loss
from jaxlean.loss.policy import PolicyLoss, policy_gradient_loss
from jaxlean.models.lm.token_args import packed_inputs, prediction_targets
from jaxlean.models.lm.transformer import Transformer

__all__ = ["distill", "policy_loss", "token_stats"]


def _hidden_and_head(model: Transformer, tokens: Array, attention_mask: Array | None,
                     adapter_ids: Array | None) -> tuple[Array, Any]:
    hidden = model.last_hidden_state(tokens, attention_mask=attention_mask,
                                     adapter_ids=adapter_ids)
    return model.head(hidden, adapter_ids)


def token_stats(model: Transformer, input_ids: Array | None = None, *positional: Any,
                labels: Array | None = None, targets: Array | None = None,
                attention_mask: Array | None = None, adapter_ids: Array | None = None,
                **options: Any) -> TokenStats:
    """Log-prob of ``targets``, entropy, logsumexp, argmax and top-k at every position ``[B, T]``.

    Args:
        model: the transformer.
        input_ids: ``[B, T]`` input ids.
        labels: ``[B, T]`` unshifted ids (Hugging Face's ``labels``, usually ``input_ids``):
            position ``t`` gets the statistics of ``labels[:, t + 1]`` (shifted here).
        targets: ``[B, T]`` ids whose log-probs are wanted, already shifted; give
            ``labels`` or ``targets``, by keyword (a third positional array raises
            ``ConfigError``). The log-prob is 0 where the target is ``ignore_index`` (-100).
        attention_mask: ``[B, T]`` False at padding tokens.
        adapter_ids: ``[B]`` LoRA adapter per example.
        **options: ``top_k``, ``temperature``, ``chunk_size``, ``vocab_chunk``,
            ``vocab_parallel``, ``ignore_index`` of :func:`jaxlean.loss.chunked.token_stats`.
    """
    targets, _ = prediction_targets("token_stats", input_ids, positional, labels, targets,
                                    ignore_index=options.get("ignore_index", -100))
    inputs, head = _hidden_and_head(model, input_ids, attention_mask, adapter_ids)
    return _token_stats(inputs, head, targets=targets, **options)


def policy_loss(model: Transformer, input_ids: Array | None = None, *positional: Any,
                labels: Array | None = None, targets: Array | None = None,
                old_logprobs: Array | None = None, advantages: Array | None = None,
                attention_mask: Array | None = None, adapter_ids: Array | None = None,
                segment_ids: Array | None = None, positions: Array | None = None,
                position_ids: Array | None = None, **options: Any) -> PolicyLoss:
    """The clipped PPO / GRPO objective of the sampled tokens, in one pass over the head.

    Every array is passed by keyword (see :mod:`jaxlean.models.lm.token_args`); a batch of
    :func:`~jaxlean.models.lm.rollout_batch.rollout_batch` is passed whole:
    ``policy_loss(model, **batch, advantages=adv)``.

    Args:
        model: the policy.
        input_ids: ``[B, T]`` input ids (prompt and completion).
        labels: ``[B, T]`` unshifted ids (Hugging Face's; ``-100`` on prompts and padding),
            shifted here; then ``old_logprobs``, ``mask`` and ``ref_logprobs`` are per label
            and shift with them (``advantages`` too when ``[B, T]``).
        targets: ``[B, T]`` the sampled ids predicted at each position, already shifted
            (``ignore_index``, -100, where there is none); give ``labels`` or ``targets``.
        old_logprobs: ``[B, T]`` their log-probs under the sampling policy.
        advantages: ``[B]`` or ``[B, T]``.
        attention_mask: ``[B, T]`` False at padding tokens.
        adapter_ids: ``[B]`` LoRA adapter per example.
        segment_ids, positions, position_ids: packed rows, as for
            :func:`~jaxlean.models.lm.causal_loss.loss`.
        **options: ``mask`` (0 on prompts and padding), ``clip_eps``, ``ref_logprobs``,
            ``kl_coef``, ``kl_estimator``, ``entropy_coef``, ``normalization``,
            ``temperature``, ``ignore_index``, ... of
            :func:`jaxlean.loss.policy.policy_gradient_loss`.
    """
    if old_logprobs is None or advantages is None:
        raise ConfigError("policy_loss needs old_logprobs= and advantages= (by keyword)")
    positions, segment_ids = packed_inputs("policy_loss", input_ids, positions, position_ids,
                                           segment_ids)
    per_token = {"old_logprobs": old_logprobs, "advantages": advantages,
                 "mask": options.get("mask"),
                 "ref_logprobs": options.get("ref_logprobs")}
    targets, per_token = prediction_targets(
        "policy_loss", input_ids, positional, labels, targets, segment_ids=segment_ids,
        ignore_index=options.get("ignore_index", -100), per_token=per_token)
    old_logprobs, advantages = per_token.pop("old_logprobs"), per_token.pop("advantages")
    options.update({k: v for k, v in per_token.items() if v is not None})
    hidden = model.last_hidden_state(input_ids, attention_mask=attention_mask,
                                     adapter_ids=adapter_ids, segment_ids=segment_ids,
                                     positions=positions)
    inputs, head = model.head(hidden, adapter_ids)
    return policy_gradient_loss(inputs, head, targets=targets, old_logprobs=old_logprobs,
                                advantages=advantages, **options)


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
