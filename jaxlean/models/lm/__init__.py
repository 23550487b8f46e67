"""A Llama / Mistral / Qwen-style decoder, its Hugging Face checkpoints, LoRA and sampling.

- :mod:`~jaxlean.models.lm.transformer`: :class:`Transformer`, :class:`TransformerConfig`,
  the training :func:`loss` and per-token :func:`logprobs`.
- :mod:`~jaxlean.models.lm.hf`: :func:`load_pretrained` / :func:`save_pretrained` (a
  Hugging Face model directory), :func:`load_safetensors` / :func:`save_safetensors`;
  :mod:`~jaxlean.models.lm.hf_config`: ``config.json`` and :class:`GenerationSettings`.
- :mod:`~jaxlean.models.lm.lora`: :func:`add_lora`, :func:`is_lora_path` (several adapters,
  chosen per example); :mod:`~jaxlean.models.lm.peft`: :func:`save_lora`, :func:`load_lora`,
  :func:`merge_lora` in PEFT's file layout.
- :mod:`~jaxlean.models.lm.generate`: ``generate`` (KV-cache sampling; import it from
  there: the module has the function's name) and :class:`Rollout`.
- :mod:`~jaxlean.models.lm.heads`: :func:`token_stats`, :func:`policy_loss` (PPO/GRPO) and
  :func:`distill` on the model's head.

The names above are imported on first use (PEP 562): ``import jaxlean.models.lm``
imports neither JAX nor safetensors.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean.models.lm.generate import Rollout
    from jaxlean.models.lm.heads import distill, policy_loss, token_stats
    from jaxlean.models.lm.hf import (
        load_pretrained,
        load_safetensors,
        save_pretrained,
        save_safetensors,
    )
    from jaxlean.models.lm.hf_config import GenerationSettings, config_from_hf, config_to_hf
    from jaxlean.models.lm.lora import add_lora, is_lora_path
    from jaxlean.models.lm.peft import load_lora, merge_lora, save_lora
    from jaxlean.models.lm.transformer import Transformer, TransformerConfig, logprobs, loss

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Rollout": "jaxlean.models.lm.generate",
    "distill": "jaxlean.models.lm.heads",
    "policy_loss": "jaxlean.models.lm.heads",
    "token_stats": "jaxlean.models.lm.heads",
    "load_pretrained": "jaxlean.models.lm.hf",
    "load_safetensors": "jaxlean.models.lm.hf",
    "save_pretrained": "jaxlean.models.lm.hf",
    "save_safetensors": "jaxlean.models.lm.hf",
    "GenerationSettings": "jaxlean.models.lm.hf_config",
    "config_from_hf": "jaxlean.models.lm.hf_config",
    "config_to_hf": "jaxlean.models.lm.hf_config",
    "add_lora": "jaxlean.models.lm.lora",
    "is_lora_path": "jaxlean.models.lm.lora",
    "load_lora": "jaxlean.models.lm.peft",
    "merge_lora": "jaxlean.models.lm.peft",
    "save_lora": "jaxlean.models.lm.peft",
    "Transformer": "jaxlean.models.lm.transformer",
    "TransformerConfig": "jaxlean.models.lm.transformer",
    "logprobs": "jaxlean.models.lm.transformer",
    "loss": "jaxlean.models.lm.transformer",
}

__all__ = ["GenerationSettings", "Rollout", "Transformer", "TransformerConfig", "add_lora",
           "config_from_hf", "config_to_hf", "distill", "is_lora_path", "load_lora",
           "load_pretrained", "load_safetensors", "logprobs", "loss", "merge_lora",
           "policy_loss", "save_lora", "save_pretrained", "save_safetensors", "token_stats"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jaxlean.models.lm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
