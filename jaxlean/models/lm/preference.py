"""DPO on the transformer: preference pairs scored by the policy and a frozen reference.

The policy's log-probs come from the chunked head (no ``[tokens, vocab]`` logits);
the reference's are computed the same way under ``stop_gradient``, or passed in
precomputed (TRL's ``precompute_ref_log_probs``). For a LoRA policy the usual
reference is the base model it adapts (TRL disables the adapters for it):
``reference="base"`` runs the policy with its adapters removed, on the same arrays,
so no second copy of the weights exists.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import jax
import jax.numpy as jnp
from jax import Array

from jaxlean.errors import ConfigError
from jaxlean.loss.chunked import token_logprobs
from jaxlean.loss.preference import DPOLoss
from jaxlean.loss.preference import dpo_loss as _dpo_loss
from jaxlean.models.lm.lora import Linear
from jaxlean.models.lm.token_args import prediction_targets
from jaxlean.models.lm.transformer import Transformer

__all__ = ["dpo_loss", "reference_logprobs", "without_adapters"]

#: Options of :func:`jaxlean.loss.preference.dpo_loss` that the reference's pass shares.
_SHARED = ("chunk_size", "vocab_parallel", "ignore_index")


def without_adapters(model: Transformer) -> Transformer:
    """``model`` with every LoRA adapter removed: its base model, sharing the arrays."""
    def strip(node: Any) -> Any:
        if isinstance(node, Linear) and node.lora is not None:
            return dataclasses.replace(node, lora=None)
        return node

    return jax.tree.map(strip, model, is_leaf=lambda node: isinstance(node, Linear))


def reference_logprobs(reference: Transformer, input_ids: Array | None = None,
                       *positional: Any, labels: Array | None = None,
                       targets: Array | None = None, attention_mask: Array | None = None,
                       adapter_ids: Array | None = None, **options: Any) -> Array:
    """Per-token ``log ref(targets)`` ``[B, T]``, a constant (no gradient), computed in
    chunks; the ids to predict by keyword, ``labels=`` (unshifted) or ``targets=`` (shifted),
    as in :func:`dpo_loss`; ``options``: ``chunk_size``, ``vocab_parallel``,
    ``ignore_index`` of :func:`jaxlean.loss.chunked.token_logprobs`."""
    targets, _ = prediction_targets("reference_logprobs", input_ids, positional, labels,
                                    targets, ignore_index=options.get("ignore_index", -100))
    hidden = reference.last_hidden_state(input_ids, attention_mask=attention_mask,
                                         adapter_ids=adapter_ids)
    inputs, head = reference.head(hidden, adapter_ids)
    return jax.lax.stop_gradient(token_logprobs(inputs, head, targets=targets, **options))


def dpo_loss(model: Transformer, input_ids: Array | None = None, *positional: Any,
             labels: Array | None = None, targets: Array | None = None,
             reference: Transformer | Literal["base"] | None = None,
             ref_logprobs: Array | None = None, attention_mask: Array | None = None,
             adapter_ids: Array | None = None, **options: Any) -> DPOLoss:
    """The DPO loss (TRL's ``loss_type``s) of a batch of preference pairs.

    Rows ``[0, B)`` of the batch are the chosen completions and rows ``[B, 2B)`` the
    rejected ones (TRL's concatenated batch), each after its prompt: what
    :func:`~jaxlean.models.lm.data.preferences.collate_preferences` makes, passed whole as
    ``dpo_loss(model, **batch, reference=...)``. What to predict is given by keyword, as for
    every token loss (:mod:`jaxlean.models.lm.token_args`): a positional third argument is
    refused.

    Args:
        model: the policy.
        input_ids: ``[2B, T]`` input ids (prompt and completion).
        labels: ``[2B, T]`` unshifted ids (Hugging Face's: ``-100`` on the prompt and
            padding), shifted here; a per-token ``mask`` or ``ref_logprobs`` is then per
            label and shifts with them.
        targets: ``[2B, T]`` the ids predicted at each position, already shifted (``-100``
            on the prompt and padding); give ``labels`` or ``targets``.
        reference: the frozen reference model, or ``"base"``: the policy without its
            LoRA adapters (same arrays). Give it or ``ref_logprobs``, not both.
        ref_logprobs: the reference's log-probs of the targets, precomputed: ``[2B, T]``
            per token or ``[2B]`` summed per sequence.
        attention_mask: ``[2B, T]`` False at padding tokens (both models).
        adapter_ids: ``[2B]`` the policy's LoRA adapter per example (the reference
            runs without).
        **options: ``mask``, ``beta``, ``loss_type``, ``label_smoothing``, ``chunk_size``,
            ``vocab_chunk``, ``vocab_parallel``, ``ignore_index`` of
            :func:`jaxlean.loss.preference.dpo_loss`.

    Returns:
        A :class:`jaxlean.loss.preference.DPOLoss`.
    """
    if (reference is None) == (ref_logprobs is None):
        raise ConfigError("dpo_loss needs exactly one of reference= (a model, or 'base' for "
                          "the policy without its adapters) and ref_logprobs=")
    targets, per_token = prediction_targets(
        "dpo_loss", input_ids, positional, labels, targets,
        ignore_index=options.get("ignore_index", -100),
        per_token={"mask": options.get("mask"), "ref_logprobs": ref_logprobs})
    if options.get("mask") is not None:
        options["mask"] = per_token["mask"]
    ref_logprobs = per_token["ref_logprobs"]
    if isinstance(reference, str):
        if reference != "base":
            raise ConfigError(f"reference must be a model or 'base', got {reference!r}")
        reference = without_adapters(model)
    if reference is not None:
        shared = {name: options[name] for name in _SHARED if name in options}
        ignore = shared.get("ignore_index", -100)
        ref_targets = targets
        if options.get("mask") is not None and ignore is not None:  # masked ids may be any
            ref_targets = jnp.where(jnp.asarray(options["mask"]) != 0, targets, ignore)
        ref_logprobs = reference_logprobs(reference, input_ids, targets=ref_targets,
                                          attention_mask=attention_mask, **shared)
    hidden = model.last_hidden_state(input_ids, attention_mask=attention_mask,
                                     adapter_ids=adapter_ids)
    inputs, head = model.head(hidden, adapter_ids)
    return _dpo_loss(inputs, head, targets=targets, ref_logprobs=ref_logprobs, **options)
