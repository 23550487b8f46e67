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
  there: the module has the function's name) and :class:`Rollout`;
  :mod:`~jaxlean.models.lm.generation_config`: :func:`generation_defaults`, what a
  checkpoint's ``generation_config.json`` tells ``generate``; :mod:`~jaxlean.models.lm.kv_cache`:
  the prompt pass and decoding steps.
- :mod:`~jaxlean.models.lm.heads`: :func:`token_stats`, :func:`policy_loss` (PPO/GRPO) and
  :func:`distill` on the model's head.
- :mod:`~jaxlean.models.lm.memory_plan`: :func:`plan_memory`, the remat, nesting, loss
  chunk and attention tile that fit a training step into a memory budget.
- :mod:`~jaxlean.models.lm.rules`: :func:`transformer_rules`, the model's partition rules;
  :mod:`~jaxlean.models.lm.hf_hub`: :func:`resolve_model`, a Hub checkpoint's local snapshot.

The names above and the submodules are imported on first use (PEP 562):
``import jaxlean.models.lm`` imports neither JAX nor safetensors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxlean._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean.models.lm import causal_loss as causal_loss
    from jaxlean.models.lm import config as config
    from jaxlean.models.lm import data as data
    from jaxlean.models.lm import generate as generate
    from jaxlean.models.lm import generation_config as generation_config
    from jaxlean.models.lm import heads as heads
    from jaxlean.models.lm import hf as hf
    from jaxlean.models.lm import hf_config as hf_config
    from jaxlean.models.lm import hf_hub as hf_hub
    from jaxlean.models.lm import hf_names as hf_names
    from jaxlean.models.lm import hf_tokenizer as hf_tokenizer
    from jaxlean.models.lm import kv_cache as kv_cache
    from jaxlean.models.lm import layers as layers
    from jaxlean.models.lm import lora as lora
    from jaxlean.models.lm import memory_plan as memory_plan
    from jaxlean.models.lm import peft as peft
    from jaxlean.models.lm import rope as rope
    from jaxlean.models.lm import rules as rules
    from jaxlean.models.lm import sampling as sampling
    from jaxlean.models.lm import tokens as tokens
    from jaxlean.models.lm import transformer as transformer
    from jaxlean.models.lm.generate import Rollout as Rollout
    from jaxlean.models.lm.generation_config import generation_defaults as generation_defaults
    from jaxlean.models.lm.heads import distill as distill
    from jaxlean.models.lm.heads import policy_loss as policy_loss
    from jaxlean.models.lm.heads import token_stats as token_stats
    from jaxlean.models.lm.hf import load_pretrained as load_pretrained
    from jaxlean.models.lm.hf import load_safetensors as load_safetensors
    from jaxlean.models.lm.hf import save_pretrained as save_pretrained
    from jaxlean.models.lm.hf import save_safetensors as save_safetensors
    from jaxlean.models.lm.hf_config import GenerationSettings as GenerationSettings
    from jaxlean.models.lm.hf_config import config_from_hf as config_from_hf
    from jaxlean.models.lm.hf_config import config_to_hf as config_to_hf
    from jaxlean.models.lm.hf_hub import resolve_model as resolve_model
    from jaxlean.models.lm.lora import add_lora as add_lora
    from jaxlean.models.lm.lora import is_lora_path as is_lora_path
    from jaxlean.models.lm.memory_plan import MemoryPlan as MemoryPlan
    from jaxlean.models.lm.memory_plan import plan_memory as plan_memory
    from jaxlean.models.lm.peft import load_lora as load_lora
    from jaxlean.models.lm.peft import merge_lora as merge_lora
    from jaxlean.models.lm.peft import save_lora as save_lora
    from jaxlean.models.lm.rules import transformer_rules as transformer_rules
    from jaxlean.models.lm.transformer import Transformer as Transformer
    from jaxlean.models.lm.transformer import TransformerConfig as TransformerConfig
    from jaxlean.models.lm.transformer import logprobs as logprobs
    from jaxlean.models.lm.transformer import loss as loss

_SUBMODULES = ("causal_loss", "config", "data", "generate", "generation_config", "heads", "hf",
               "hf_config", "hf_hub", "hf_names", "hf_tokenizer", "kv_cache", "layers", "lora",
               "memory_plan", "peft", "rope", "rules", "sampling", "tokens", "transformer")

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Rollout": "jaxlean.models.lm.generate",
    "generation_defaults": "jaxlean.models.lm.generation_config",
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
    "resolve_model": "jaxlean.models.lm.hf_hub",
    "add_lora": "jaxlean.models.lm.lora",
    "is_lora_path": "jaxlean.models.lm.lora",
    "MemoryPlan": "jaxlean.models.lm.memory_plan",
    "plan_memory": "jaxlean.models.lm.memory_plan",
    "load_lora": "jaxlean.models.lm.peft",
    "merge_lora": "jaxlean.models.lm.peft",
    "save_lora": "jaxlean.models.lm.peft",
    "transformer_rules": "jaxlean.models.lm.rules",
    "Transformer": "jaxlean.models.lm.transformer",
    "TransformerConfig": "jaxlean.models.lm.transformer",
    "logprobs": "jaxlean.models.lm.transformer",
    "loss": "jaxlean.models.lm.transformer",
}

__all__ = ["GenerationSettings", "MemoryPlan", "Rollout", "Transformer", "TransformerConfig",
           "add_lora", "causal_loss", "config", "config_from_hf", "config_to_hf", "data",
           "distill", "generate", "generation_config", "generation_defaults", "heads", "hf",
           "hf_config", "hf_hub", "hf_names", "hf_tokenizer", "is_lora_path", "kv_cache", "layers",
           "load_lora", "load_pretrained", "load_safetensors", "logprobs", "lora", "loss",
           "memory_plan", "merge_lora", "peft", "plan_memory", "policy_loss", "resolve_model",
           "rope", "rules", "sampling", "save_lora", "save_pretrained", "save_safetensors",
           "token_stats", "tokens", "transformer", "transformer_rules"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)
