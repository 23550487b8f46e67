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
adapter 0. Every ``adapter_config.json`` field is on an allow-list: rsLoRA,
per-projection ranks and alphas, regex targets and the head weight of an
``lm_head`` adapter are read as PEFT reads them; what would compute differently
(DoRA, activated LoRA, biases, per-layer ranks, unknown fields) is refused by name.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.models.lm.hf_config import read_json
from jaxlean.models.lm.lora import Linear, add_lora
from jaxlean.models.lm.transformer import Transformer

__all__ = ["load_lora", "merge_lora", "save_lora"]

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

    Projections whose rank or scale differs from the first adapted one's are
    recorded in PEFT's ``rank_pattern`` / ``alpha_pattern``.

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
    if not 0 <= adapter < loras[0].num_adapters:
        raise ConfigError(f"adapter={adapter} is outside [0, {loras[0].num_adapters})")
    rank, scale = loras[0].a.shape[-1], loras[0].scale
    # Projections whose rank or scale differs from the first's: PEFT's per-module patterns.
    rank_pattern = {name: lora.a.shape[-1] for name, lora in zip(modules, loras, strict=True)
                    if lora.a.shape[-1] != rank}
    alpha_pattern = {name: lora.scale * lora.a.shape[-1]
                     for name, lora in zip(modules, loras, strict=True)
                     if lora.scale * lora.a.shape[-1] != scale * rank}
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
              "use_dora": False, "inference_mode": True, "base_model_name_or_path": base_model,
              "rank_pattern": rank_pattern, "alpha_pattern": alpha_pattern}
    (directory / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(tensors, str(directory / "adapter_model.safetensors"), metadata={"format": "pt"})


# adapter_config.json fields that do not change the computed model (metadata, training-only
# dropout, initialisation settings whose result is in the saved tensors).
_INERT = {"task_type", "auto_mapping", "peft_version", "base_model_name_or_path", "revision",
          "inference_mode", "lora_dropout", "megatron_core", "runtime_config", "qalora_group_size"}
# Fields read below (their values are supported).
_READ = {"peft_type", "r", "lora_alpha", "target_modules", "exclude_modules", "use_rslora",
         "rank_pattern", "alpha_pattern"}
# Fields that change the model; only these values (PEFT's defaults) are supported.
_DEFAULT_ONLY: dict[str, tuple] = {
    "bias": ("none",), "fan_in_fan_out": (False,), "use_dora": (False,),
    "alora_invocation_tokens": (None, []), "modules_to_save": (None, []),
    "init_lora_weights": (True, False, "gaussian"), "layers_to_transform": (None, []),
    "layers_pattern": (None, [], ""), "megatron_config": (None,),
    "trainable_token_indices": (None, [], {}), "loftq_config": (None, {}),
    "eva_config": (None,), "corda_config": (None,), "lora_ga_config": (None,),
    "velora_config": (None,), "use_qalora": (False,), "monteclora_config": (None,),
    "layer_replication": (None, []), "lora_bias": (False,), "target_parameters": (None, []),
    "use_bdlora": (None,), "arrow_config": (None,), "kasa_config": (None,),
    "ensure_weight_tying": (False,),
}
_EMBED_KEY = "model.embed_tokens"


def _refuse(field: str, value: Any, supported: Any) -> ConfigError:
    return ConfigError(f"adapter_config.json: {field}={value!r} is not supported "
                       f"(supported: {supported})")


def _matches(spec: Any, key: str) -> bool:
    """Whether a PEFT ``target_modules`` / ``exclude_modules`` value selects module ``key``.

    A string is a regular expression matched against the whole name; a list names
    modules by their full name or by a dotted suffix.
    """
    if not spec:
        return False
    if isinstance(spec, str):
        return re.fullmatch(spec, key) is not None
    return key in spec or any(key.endswith(f".{name}") for name in spec)


def _pattern(patterns: dict, key: str, default: float) -> float:
    """PEFT's ``rank_pattern`` / ``alpha_pattern`` lookup: the first key matching ``key``'s end."""
    for pattern, value in patterns.items():
        if re.match(rf"(.*\.)?({pattern})$", key):
            return value
    return default


def _module_keys(module: str, num_layers: int) -> list[str]:
    """The Hugging Face module name of ``module`` in each layer (one name for the head)."""
    inner, _ = _MODULES[module]
    return ["lm_head"] if inner is None else [f"model.layers.{i}.{inner}"
                                               for i in range(num_layers)]


def _adapter_plan(config: dict, num_layers: int) -> dict[str, tuple[int, float]]:
    """``{module: (rank, scale)}`` of a PEFT ``adapter_config.json``, PEFT's scale included.

    Every field is on an allow-list: one that would make PEFT compute a different
    model (DoRA, activated LoRA, biases, a rank that differs between layers, ...)
    raises :class:`ConfigError` naming it, and so does a field this code does not know.
    """
    unknown = sorted(set(config) - _INERT - _READ - set(_DEFAULT_ONLY))
    if unknown:
        known = sorted(_INERT | _READ | set(_DEFAULT_ONLY))
        raise ConfigError(f"adapter_config.json: unknown field(s) {unknown} (they may change "
                          f"the model; known fields: {known})")
    if config.get("peft_type") != "LORA":
        raise _refuse("peft_type", config.get("peft_type"), ["LORA"])
    for field, allowed in _DEFAULT_ONLY.items():
        if field in config and config[field] not in allowed:
            raise _refuse(field, config[field], list(allowed))
    targets = config.get("target_modules")
    if targets == "all-linear":  # PEFT: every linear layer but the output head
        targets = [name for name in _MODULES if name != "lm_head"]
    if not targets or not isinstance(targets, str | list):
        raise _refuse("target_modules", targets, "a list of module names or a regular expression")
    exclude = config.get("exclude_modules")
    if "r" not in config or "lora_alpha" not in config:
        raise CheckpointError("adapter_config.json lacks r or lora_alpha")
    rank, alpha = int(config["r"]), float(config["lora_alpha"])
    ranks, alphas = config.get("rank_pattern") or {}, config.get("alpha_pattern") or {}

    def adapted(key: str) -> bool:
        return _matches(targets, key) and not _matches(exclude, key)

    if adapted(_EMBED_KEY):
        raise _refuse("target_modules", targets, f"projections among {list(_MODULES)}; an "
                                                 f"adapter on embed_tokens is not supported")
    plan = {}
    for module in _MODULES:
        keys = _module_keys(module, num_layers)
        hits = [key for key in keys if adapted(key)]
        if not hits:
            continue
        if len(hits) != len(keys):
            raise _refuse("target_modules", targets, f"a projection adapted in every layer or "
                                                     f"none ({module} is adapted in {hits} only)")
        settings = {(int(_pattern(ranks, key, rank)), float(_pattern(alphas, key, alpha)))
                    for key in keys}
        if len(settings) != 1:
            field = "rank_pattern" if len({r for r, _ in settings}) > 1 else "alpha_pattern"
            raise _refuse(field, config[field], f"one rank and alpha per projection in every "
                                                f"layer ({module} gets {sorted(settings)})")
        r, a = settings.pop()
        plan[module] = (r, a / math.sqrt(r) if config.get("use_rslora") else a / r)
    if not plan:
        raise _refuse("target_modules", targets, f"names among {list(_MODULES)}")
    return plan


_HEAD_BASE = _PREFIX + "lm_head.base_layer.weight"


def _with_head_base(model: Transformer, stored: np.ndarray) -> Transformer:
    """The head weight PEFT's default save of an ``lm_head`` adapter stores, applied as PEFT does.

    PEFT loads it into an untied head, and ignores it for a head tied to the
    embedding: there it must equal the embedding, or the adapter is refused.
    """
    head = model.lm_head
    shape = head.tied_shape if head.weight is None else head.weight.shape
    if stored.shape != shape[::-1]:
        raise CheckpointError(f"adapter tensor {_HEAD_BASE!r} has shape {list(stored.shape)}, "
                              f"expected {list(shape[::-1])}")
    if head.weight is not None:
        return eqx.tree_at(lambda m: m.lm_head.weight, model,
                           jnp.asarray(stored.T, head.weight.dtype))
    if not np.array_equal(np.asarray(jnp.asarray(stored, model.embed.dtype)),
                          np.asarray(model.embed)):  # compared in the dtype the model holds
        raise CheckpointError(f"adapter tensor {_HEAD_BASE!r} differs from the tied embedding; "
                              f"PEFT ignores it for a tied head, so this adapter was trained on "
                              f"another head and is refused")
    return model


def load_lora(model: Transformer, directory: str | Path) -> Transformer:
    """``model`` (without adapters) with the PEFT adapter in ``directory`` as adapter 0.

    Reads what PEFT computes: ``lora_alpha / r`` scaling (``lora_alpha / sqrt(r)``
    with ``use_rslora``), ranks and alphas from ``rank_pattern`` / ``alpha_pattern``
    (one per projection, the same in every layer), ``target_modules`` as names,
    suffixes or a regular expression (``exclude_modules`` too), and the head weight
    that PEFT's default save of an ``lm_head`` adapter stores
    (``lm_head.base_layer.weight``). Everything else that would change the model
    (DoRA, activated LoRA, biases, ...) raises :class:`ConfigError` naming the field.
    """
    if _adapted(model):
        raise ConfigError("load_lora: the model already has adapters; load into the base model")
    directory = Path(directory)
    plan = _adapter_plan(read_json(directory, "adapter_config.json"), model.config.num_layers)
    file = directory / "adapter_model.safetensors"
    if not file.is_file():
        raise CheckpointError(f"no adapter_model.safetensors in {str(directory)!r}")
    shapes = model  # add_lora's adapters as shapes only: their arrays come from the file
    for rank in sorted({r for r, _ in plan.values()}):
        shapes = eqx.filter_eval_shape(
            partial(add_lora, rank=rank, targets=[m for m, (r, _) in plan.items() if r == rank]),
            shapes, key=jax.random.key(0))
    try:
        handle = safe_open(file, framework="np")
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{file} is not a readable safetensors file: {error}") from None
    with handle:
        stored = set(handle.keys())
        if _HEAD_BASE in stored:
            stored.discard(_HEAD_BASE)
            model = _with_head_base(model, handle.get_tensor(_HEAD_BASE))
        getters, linears = [], []
        for name, (_, scale) in plan.items():
            get = _MODULES[name][1]
            lora = get(shapes).lora
            parts = []
            for part, target in (("A", lora.a), ("B", lora.b)):
                rows = []
                for prefix in _names(model, name):
                    key = f"{prefix}.lora_{part}.weight"
                    if key not in stored:
                        raise CheckpointError(f"adapter is missing tensor {key!r}")
                    stored.discard(key)
                    rows.append(handle.get_tensor(key).T)
                value = np.stack(rows) if target.ndim == 4 else rows[0]
                expected = target.shape[:-3] + target.shape[-2:]
                if value.shape != expected:
                    raise CheckpointError(f"adapter tensor {key!r} has shape "
                                          f"{list(value.T.shape)}, expected {list(expected)[::-1]}")
                parts.append(jnp.asarray(value[..., None, :, :], target.dtype))
            getters.append(get)
            linears.append(dataclasses.replace(
                get(model), lora=dataclasses.replace(lora, a=parts[0], b=parts[1], scale=scale)))
    if stored:
        raise CheckpointError(f"adapter has unexpected tensor(s): {sorted(stored)[:5]}")
    return eqx.tree_at(lambda m: [get(m) for get in getters], model, linears)


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
