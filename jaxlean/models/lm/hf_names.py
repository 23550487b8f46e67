"""The Hugging Face tensor names of a :class:`~jaxlean.models.lm.transformer.Transformer`.

Hugging Face stores one tensor per layer and projection, as ``[out, in]``
(``model.layers.3.self_attn.q_proj.weight``); the :class:`Transformer` keeps
each projection once, as ``[layers, in, out]``. :func:`name_table` says, for a
config, which name fills which array and whether it is stored transposed;
loading (:mod:`jaxlean.models.lm.hf`) and the ``load`` benchmark's naive reader
both follow it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from jaxlean.models.lm.transformer import Transformer, TransformerConfig

__all__ = ["LAYER", "Entry", "hf_tensors", "name_table"]

# The prefix of layer ``i``'s tensors: ``LAYER.format(i=i) + suffix``.
LAYER = "model.layers.{i}."

# (Hugging Face name, where the array lives in the model, stored transposed?)
Entry = tuple[str, Callable[[Transformer], Any], bool]

_PER_LAYER: list[Entry] = [
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
_QKV_BIAS: list[Entry] = [
    ("self_attn.q_proj.bias", lambda m: m.layers.attn.q_bias, False),
    ("self_attn.k_proj.bias", lambda m: m.layers.attn.k_bias, False),
    ("self_attn.v_proj.bias", lambda m: m.layers.attn.v_bias, False),
]
_QK_NORM: list[Entry] = [
    ("self_attn.q_norm.weight", lambda m: m.layers.attn.q_norm.weight, False),
    ("self_attn.k_norm.weight", lambda m: m.layers.attn.k_norm.weight, False),
]


def name_table(config: TransformerConfig) -> tuple[list[Entry], list[Entry]]:
    """(global entries, per-layer entries) for ``config``; a per-layer entry's name is the
    suffix after :data:`LAYER`, and its array is stacked over the layers."""
    top: list[Entry] = [("model.embed_tokens.weight", lambda m: m.embed, False),
                        ("model.norm.weight", lambda m: m.norm.weight, False)]
    if not config.tie_embeddings:
        top.append(("lm_head.weight", lambda m: m.lm_head.weight, True))
    per_layer = (_PER_LAYER + (_QK_NORM if config.qk_norm else [])
                 + (_QKV_BIAS if config.qkv_bias else []))
    return top, per_layer


def hf_tensors(model: Transformer) -> Iterator[tuple[str, np.ndarray]]:
    """``(name, array)`` of every base weight in Hugging Face layout, one at a time."""
    top, per_layer = name_table(model.config)
    for name, where, transpose in top:
        array = np.asarray(where(model))
        yield name, np.ascontiguousarray(array.T if transpose else array)
    for i in range(model.config.num_layers):
        for suffix, where, transpose in per_layer:
            array = np.asarray(where(model)[i])
            yield (LAYER.format(i=i) + suffix,
                   np.ascontiguousarray(array.T if transpose else array))
