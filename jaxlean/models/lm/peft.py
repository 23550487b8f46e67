"""LoRA adapters in the PEFT layout, and folding an adapter into the base weights.

PEFT (and vLLM, which reads PEFT's files) stores one adapter as
``adapter_config.json`` (``r``, ``lora_alpha``, ``target_modules``; the update
is ``lora_alpha / r * x @ A.T @ B.T``) and ``adapter_model.safetensors`` with
one ``lora_A.weight`` ``[r, in]`` and ``lora_B.weight`` ``[out, r]`` per layer
and projection, named after the base model's tensors
(``base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight``). The
:class:`~jaxlean.models.lm.transformer.Transformer` keeps several adapters
stacked over layers (``a[L, adapters, in, r]``, ``b[L, adapters, r, out]``);
:func:`save_lora` writes one of them, :func:`load_lora` reads one back as
adapter 0. PEFT options that change the math and are not implemented here
(``use_rslora``, ``use_dora``, per-module ranks, biases) are refused by name.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.models.lm.hf_config import read_json
from jaxlean.models.lm.lora import Linear, add_lora
from jaxlean.models.lm.transformer import Transformer

_PREFIX = "base_model.model."
# module name -> (Hugging Face path inside a layer, or None for the head; getter)
_MODULES: dict[str, tuple[str | None, Callable[[Transformer], Linear]]] = {
    "q_proj": ("self_attn.q_proj", lambda m: m.layers.attn.q_proj),
    "k_proj": ("self_attn.k_proj", lambda m: m.layers.attn.k_proj),
    "v_proj": ("self_attn.v_proj", lambda m: m.layers.attn.v_proj),
    "o_proj": ("self_attn.o_proj", lambda m: m.layers.attn.o_proj),
    "gate_proj": ("mlp.gate_proj", lambda m: m.layers.mlp.gate_proj),
    "up_proj": ("mlp.up_proj", lambda m: m.layers.mlp.up_proj),
    "down_proj": ("mlp.down_proj", lambda m: m.layers.mlp.down_proj),
    "lm_head": (None, lambda m: m.lm_head),
}


def _adapted(model: Transformer) -> list[str]:
    return [name for name, (_, get) in _MODULES.items() if get(model).lora is not None]


def _names(model: Transformer, module: str) -> list[str]:
    """The PEFT tensor prefix of ``module`` in each layer (one entry for the head)."""
    inner, _ = _MODULES[module]
    if inner is None:
        return [_PREFIX + "lm_head"]
    return [f"{_PREFIX}model.layers.{i}.{inner}" for i in range(model.config.num_layers)]


def save_lora(model: Transformer, directory: str | Path, *, adapter: int = 0,
              base_model: str | None = None) -> None:
    """Write adapter ``adapter`` of ``model`` as a PEFT LoRA directory.

    Args:
        model: a transformer with adapters (:func:`~jaxlean.models.lm.lora.add_lora`).
        directory: created if needed; gets ``adapter_config.json`` and
            ``adapter_model.safetensors``.
        adapter: which of the stacked adapters to write.
        base_model: recorded as ``base_model_name_or_path`` (a hub id or a path).
    """
    modules = _adapted(model)
    if not modules:
        raise ConfigError("save_lora: the model has no LoRA adapters (see add_lora)")
    loras = [_MODULES[name][1](model).lora for name in modules]
    ranks = {lora.a.shape[-1] for lora in loras}
    scales = {lora.scale for lora in loras}
    if len(ranks) != 1 or len(scales) != 1:
        raise ConfigError(f"save_lora: PEFT's layout has one rank and alpha, got ranks "
                          f"{sorted(ranks)} and scales {sorted(scales)}")
    if not 0 <= adapter < loras[0].num_adapters:
        raise ConfigError(f"adapter={adapter} is outside [0, {loras[0].num_adapters})")
    rank, scale = ranks.pop(), scales.pop()
    tensors: dict[str, np.ndarray] = {}
    for name, lora in zip(modules, loras, strict=True):
        a = np.asarray(lora.a[..., adapter, :, :])
        b = np.asarray(lora.b[..., adapter, :, :])
        a, b = (a, b) if a.ndim == 3 else (a[None], b[None])
        for i, prefix in enumerate(_names(model, name)):
            tensors[prefix + ".lora_A.weight"] = np.ascontiguousarray(a[i].T)
            tensors[prefix + ".lora_B.weight"] = np.ascontiguousarray(b[i].T)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": rank,
              "lora_alpha": scale * rank, "target_modules": modules, "lora_dropout": 0.0,
              "bias": "none", "fan_in_fan_out": False, "use_rslora": False,
              "use_dora": False, "inference_mode": True, "base_model_name_or_path": base_model}
    (directory / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(tensors, str(directory / "adapter_model.safetensors"), metadata={"format": "pt"})


def _check_peft_config(config: dict) -> tuple[int, float, list[str]]:
    """``(r, lora_alpha, target_modules)``; refuses, by name, what would compute differently."""
    refused = {"peft_type": ("LORA",), "bias": ("none",), "use_rslora": (False, None),
               "use_dora": (False, None), "fan_in_fan_out": (False, None),
               "rank_pattern": ({}, None), "alpha_pattern": ({}, None),
               "layers_to_transform": (None,), "modules_to_save": (None, [])}
    for field, allowed in refused.items():
        if config.get(field, allowed[0]) not in allowed:
            raise ConfigError(f"adapter_config.json: {field}={config[field]!r} is not supported "
                              f"(supported: {list(allowed)})")
    targets = config.get("target_modules")
    if not isinstance(targets, list) or not set(targets) <= set(_MODULES):
        raise ConfigError(f"adapter_config.json: target_modules={targets!r} is not supported "
                          f"(supported: a list of {list(_MODULES)})")
    return int(config["r"]), float(config["lora_alpha"]), targets


def load_lora(model: Transformer, directory: str | Path) -> Transformer:
    """``model`` (without adapters) with the PEFT adapter in ``directory`` as adapter 0."""
    if _adapted(model):
        raise ConfigError("load_lora: the model already has adapters; load into the base model")
    directory = Path(directory)
    rank, alpha, targets = _check_peft_config(read_json(directory, "adapter_config.json"))
    model = add_lora(model, rank=rank, alpha=alpha, targets=targets, key=jax.random.key(0))
    file = directory / "adapter_model.safetensors"
    if not file.is_file():
        raise CheckpointError(f"no adapter_model.safetensors in {directory}")
    with safe_open(file, framework="np") as handle:
        stored = set(handle.keys())
        wheres, arrays = [], []
        for name in targets:
            lora = _MODULES[name][1](model).lora
            for part, where in (("A", lambda m, n=name: _MODULES[n][1](m).lora.a),
                                ("B", lambda m, n=name: _MODULES[n][1](m).lora.b)):
                rows = []
                for prefix in _names(model, name):
                    key = f"{prefix}.lora_{part}.weight"
                    if key not in stored:
                        raise CheckpointError(f"adapter is missing tensor {key!r}")
                    stored.discard(key)
                    rows.append(handle.get_tensor(key).T)
                target = where(model)
                value = np.stack(rows) if target.ndim == 4 else rows[0]
                expected = target.shape[:-3] + target.shape[-2:]
                if value.shape != expected:
                    raise CheckpointError(f"adapter tensor {key!r} has shape "
                                          f"{list(value.T.shape)}, expected {list(expected)[::-1]}")
                wheres.append(where)
                arrays.append(jnp.asarray(value, lora.a.dtype)[..., None, :, :])
    if stored:
        raise CheckpointError(f"adapter has unexpected tensor(s): {sorted(stored)[:5]}")
    return eqx.tree_at(lambda m: [w(m) for w in wheres], model, arrays)


def merge_lora(model: Transformer, adapter: int = 0) -> Transformer:
    """The base model with adapter ``adapter`` folded in: ``W + scale * a @ b``, no LoRA left.

    The result computes what ``model`` computes with ``adapter_ids`` all equal to
    ``adapter``; it saves with :func:`~jaxlean.models.lm.hf.save_pretrained`.
    """
    def fold(node: Any) -> Any:
        if not isinstance(node, Linear) or node.lora is None:
            return node
        if node.weight is None:
            raise ConfigError("merge_lora: an adapter on a head tied to the embedding cannot be "
                              "folded in without untying them")
        lora = node.lora
        a, b = lora.a[..., adapter, :, :], lora.b[..., adapter, :, :]
        update = lora.scale * jnp.matmul(a.astype(jnp.float32), b.astype(jnp.float32))
        return Linear((node.weight + update).astype(node.weight.dtype), None, node.tied_shape)

    return jax.tree.map(fold, model, is_leaf=lambda n: isinstance(n, Linear))
