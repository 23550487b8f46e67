"""Hugging Face safetensors (Llama / Qwen3 names) <-> the stacked ``Transformer`` layout.

Hugging Face stores one tensor per layer and projection, as ``[out, in]``
(``model.layers.3.self_attn.q_proj.weight``); the :class:`Transformer` keeps
each projection once, as ``[layers, in, out]``. Loading reads every tensor with
the ``safetensors`` NumPy API (no torch), checks names and shapes against the
config, transposes and stacks. A missing, unexpected or mis-shaped tensor
raises :class:`CheckpointError` naming it. LoRA adapters are not part of the
Hugging Face base checkpoint and are not saved.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

from jaxlean.errors import CheckpointError
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

_LAYER = "model.layers.{i}."

# (Hugging Face name, where the array lives in the model, stored transposed?)
_PER_LAYER: list[tuple[str, Callable[[Transformer], Any], bool]] = [
    ("input_layernorm.weight", lambda m: m.layers.input_norm.weight, False),
    ("self_attn.q_proj.weight", lambda m: m.layers.attn.q_proj.weight, True),
    ("self_attn.k_proj.weight", lambda m: m.layers.attn.k_proj.weight, True),
    ("self_attn.v_proj.weight", lambda m: m.layers.attn.v_proj.weight, True),
    ("self_attn.o_proj.weight", lambda m: m.layers.attn.o_proj.weight, True),
    ("post_attention_layernorm.weight", lambda m: m.layers.post_attn_norm.weight, False),
    ("mlp.gate_proj.weight", lambda m: m.layers.mlp.gate_proj.weight, True),
    ("mlp.up_proj.weight", lambda m: m.layers.mlp.up_proj.weight, True),
    ("mlp.down_proj.weight", lambda m: m.layers.mlp.down_proj.weight, True),
]
_QK_NORM = [
    ("self_attn.q_norm.weight", lambda m: m.layers.attn.q_norm.weight, False),
    ("self_attn.k_norm.weight", lambda m: m.layers.attn.k_norm.weight, False),
]


def _table(config: TransformerConfig) -> tuple[list, list]:
    """(global entries, per-layer entries) for ``config``."""
    top = [("model.embed_tokens.weight", lambda m: m.embed, False),
           ("model.norm.weight", lambda m: m.norm.weight, False)]
    if not config.tie_embeddings:
        top.append(("lm_head.weight", lambda m: m.lm_head.weight, True))
    return top, _PER_LAYER + (_QK_NORM if config.qk_norm else [])


def config_from_hf(hf_config: dict | str | Path) -> TransformerConfig:
    """A :class:`TransformerConfig` from a Hugging Face ``config.json`` (dict or path)."""
    if not isinstance(hf_config, dict):
        hf_config = json.loads(Path(hf_config).read_text())
    for field in ("rope_scaling", "attention_bias", "mlp_bias"):
        if hf_config.get(field):
            raise CheckpointError(f"config.json sets {field}={hf_config[field]!r}, which this "
                                  "Transformer does not implement")
    try:
        return TransformerConfig(
            vocab_size=hf_config["vocab_size"],
            hidden_size=hf_config["hidden_size"],
            intermediate_size=hf_config["intermediate_size"],
            num_layers=hf_config["num_hidden_layers"],
            num_heads=hf_config["num_attention_heads"],
            num_kv_heads=hf_config.get("num_key_value_heads"),
            head_dim=hf_config.get("head_dim"),
            rope_theta=float(hf_config.get("rope_theta", 10000.0)),
            rms_norm_eps=float(hf_config.get("rms_norm_eps", 1e-6)),
            qk_norm=hf_config.get("model_type") == "qwen3",
            tie_embeddings=bool(hf_config.get("tie_word_embeddings", False)),
        )
    except KeyError as missing:
        raise CheckpointError(f"config.json lacks the field {missing}") from None


def _files(path: str | Path | Iterable[str | Path]) -> list[Path]:
    if isinstance(path, str | Path):
        path = Path(path)
        files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    else:
        files = [Path(p) for p in path]
    if not files:
        raise CheckpointError(f"no .safetensors files in {path}")
    return files


def _read(files: list[Path]) -> dict[str, np.ndarray]:
    tensors: dict[str, np.ndarray] = {}
    for file in files:
        with safe_open(file, framework="np") as handle:
            for name in handle.keys():  # noqa: SIM118 - safe_open handles are not iterable
                if name in tensors:
                    raise CheckpointError(f"tensor {name!r} appears twice (again in {file})")
                tensors[name] = handle.get_tensor(name)
    return tensors


def _take(tensors: dict, name: str, expected: tuple, transpose: bool) -> np.ndarray:
    """Remove ``name`` from ``tensors``, check its (Hugging Face) shape, return it in our layout."""
    stored = tuple(expected[::-1]) if transpose else tuple(expected)
    if name not in tensors:
        raise CheckpointError(f"checkpoint is missing tensor {name!r} (expected shape "
                              f"{list(stored)})")
    array = tensors.pop(name)
    if tuple(array.shape) != stored:
        raise CheckpointError(f"tensor {name!r} has shape {list(array.shape)}, "
                              f"expected {list(stored)}")
    return array.T if transpose else array


def load_safetensors(
    path: str | Path | Iterable[str | Path],
    config: TransformerConfig,
    *,
    dtype: Any = None,
) -> Transformer:
    """Load Hugging Face Llama / Qwen3 weights into a stacked :class:`Transformer`.

    Args:
        path: a ``.safetensors`` file, a directory of (sharded) files, or a list of files.
        config: the model sizes (see :func:`config_from_hf`).
        dtype: cast every tensor to this dtype (default: keep the file's dtype).

    Returns:
        The model.

    Raises:
        CheckpointError: naming a missing, unexpected or mis-shaped tensor.
    """
    tensors = _read(_files(path))
    template = eqx.filter_eval_shape(lambda: Transformer(config, key=jax.random.key(0)))
    top, per_layer = _table(config)
    wheres, values = [], []
    for name, where, transpose in top:
        values.append(_take(tensors, name, where(template).shape, transpose))
        wheres.append(where)
    for suffix, where, transpose in per_layer:
        expected = where(template).shape[1:]
        values.append(np.stack([
            _take(tensors, _LAYER.format(i=i) + suffix, expected, transpose)
            for i in range(config.num_layers)
        ]))
        wheres.append(where)
    if tensors:
        names = sorted(tensors)
        listing = ", ".join(repr(n) for n in names[:5]) + (" ..." if len(names) > 5 else "")
        raise CheckpointError(f"checkpoint has {len(names)} unexpected tensor(s) for this "
                              f"config: {listing}")
    arrays = [jnp.asarray(v, dtype=dtype) for v in values]
    return eqx.tree_at(lambda m: [w(m) for w in wheres], template, arrays)


def save_safetensors(model: Transformer, path: str | Path) -> None:
    """Write the base weights of ``model`` with Hugging Face names (one file)."""
    top, per_layer = _table(model.config)
    tensors: dict[str, np.ndarray] = {}
    for name, where, transpose in top:
        array = np.asarray(where(model))
        tensors[name] = np.ascontiguousarray(array.T if transpose else array)
    for suffix, where, transpose in per_layer:
        stacked = np.asarray(where(model))
        for i in range(model.config.num_layers):
            array = stacked[i].T if transpose else stacked[i]
            tensors[_LAYER.format(i=i) + suffix] = np.ascontiguousarray(array)
    save_file(tensors, str(path))
