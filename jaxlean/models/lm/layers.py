"""One decoder layer: RMSNorm, rotary grouped-query attention, SwiGLU MLP.

The layer is stored once with a leading layer axis (see
:class:`~jaxlean.models.lm.transformer.Transformer`); here it computes one
layer's step, with or without a KV cache.

Traced under a mesh with a ``tensor`` axis (``jax.set_mesh``), the layer keeps the
Megatron layout (:mod:`jaxlean.parallel.tensor`): heads and MLP features split over
the axis, the attention and MLP outputs whole, so the forward pass adds the
row-split partial sums once after ``o_proj`` and once after ``down_proj``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean.models.lm.attention import Blockwise, cudnn_attention
from jaxlean.models.lm.config import TransformerConfig
from jaxlean.models.lm.lora import Linear
from jaxlean.models.lm.rope import apply_rotary
from jaxlean.nn.flash import flash_attention, flash_attention_cached
from jaxlean.parallel.context import (
    context_parallel_attention,
    sequence_mesh,
    splittable_batch_axes,
)
from jaxlean.parallel.mesh import TENSOR
from jaxlean.parallel.tensor import (
    check_divisible,
    split_over_tensor,
    tensor_size,
    whole_over_tensor,
)

__all__ = ["MLP", "Attention", "DecoderLayer", "RMSNorm", "attend", "attend_cached", "attend_with",
           "init_layers", "window_mask"]


def window_mask(query_slots: Array, key_slots: Array, window: int | None) -> Array:
    """``[..., T, S]`` True where key ``s`` is within ``window`` of query ``t`` (causality aside).

    Slots are positions in the sequence (or the KV cache), so padding counts as
    distance, as in Hugging Face's sliding-window attention.
    """
    distance = query_slots[..., :, None] - key_slots[..., None, :]
    return jnp.ones(distance.shape, bool) if window is None else distance < window


class RMSNorm(eqx.Module):
    """``x / rms(x) * weight`` over the last axis, computed in float32."""

    weight: Array
    eps: float = eqx.field(static=True)

    def __call__(self, x: Array) -> Array:
        x32 = x.astype(jnp.float32)
        normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
        return self.weight * normed.astype(x.dtype)


def attend(q: Array, k: Array, v: Array, mask: Array) -> Array:
    """Grouped-query softmax attention.

    Args:
        q: ``[B, T, heads, d]``; k, v: ``[B, S, kv_heads, d]``.
        mask: ``[B, T, S]`` bool, True where query ``t`` may see key ``s``.

    Returns:
        ``[B, T, heads, d]``. A query that may see nothing (a left pad) gets a
        uniform average instead of NaN.
    """
    batch, length, heads, dim = q.shape
    groups = heads // k.shape[2]
    q = q.reshape(batch, length, k.shape[2], groups, dim)
    scores = jnp.einsum("btkgd,bskd->bkgts", q, k, preferred_element_type=jnp.float32)
    scores = scores / float(np.sqrt(dim))  # a Python float: float32 scores under x64 too
    scores = jnp.where(mask[:, None, None], scores, jnp.finfo(jnp.float32).min)
    probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    out = jnp.einsum("bkgts,bskd->btkgd", probs, v)
    return out.reshape(batch, length, heads, dim)


def attend_with(q: Array, k: Array, v: Array, mask: Array | Blockwise) -> Array:
    """:func:`attend`, or blockwise attention where the transformer chose it
    (see :func:`jaxlean.models.lm.attention.layer_mask`)."""
    if not isinstance(mask, Blockwise):
        return attend(q, k, v, mask)
    if mask.kind == "cudnn":
        return cudnn_attention(q, k, v, mask.mask)
    mesh = sequence_mesh()
    if mesh is not None:  # under jax.set_mesh with a seq axis: the sequence is split
        return context_parallel_attention(
            q, k, v, mask.mask, mesh, batch_axes=splittable_batch_axes(mesh, q.shape[0]),
            head_axes=[TENSOR] if TENSOR in mesh.shape else None, q_tile=mask.tile,
            k_tile=mask.tile)
    return flash_attention(q, k, v, mask.mask, q_tile=mask.tile, k_tile=mask.tile)


def attend_cached(q: Array, keys: Array, values: Array, layer: Array,
                  mask: Array | Blockwise) -> Array:
    """Attention of ``q[B, T, heads, d]`` over layer ``layer`` of a heads-first KV cache
    ``[L, B, Kh, S, d]``: blockwise, reading the cache in place, for a :class:`Blockwise`
    mask; else :func:`attend` on that layer (the dense ``[T, S]`` scores) with ``mask[B, T, S]``.
    """
    if isinstance(mask, Blockwise):
        return flash_attention_cached(q, keys, values, layer, mask.mask, tile=mask.tile)
    k, v = (x[layer].transpose(0, 2, 1, 3) for x in (keys, values))
    return attend(q, k, v, mask)


class Attention(eqx.Module):
    """Rotary grouped-query self-attention with optional q/k RMSNorm (Qwen3)."""

    q_proj: Linear
    k_proj: Linear
    v_proj: Linear
    o_proj: Linear
    q_norm: RMSNorm | None
    k_norm: RMSNorm | None
    q_bias: Array | None
    k_bias: Array | None
    v_bias: Array | None
    config: TransformerConfig = eqx.field(static=True)

    def __call__(self, x, positions, mask, adapter_ids=None, cache=None, cache_index=None):
        """Attend over ``x`` (and, with a cache, the cached slots).

        ``cache=(keys, values, layer)``: every layer's heads-first cache
        ``[L, B, Kh, S, d]`` and this layer's index; this step's keys/values are
        written into layer ``layer`` at slot ``cache_index`` (in place) and the
        updated ``(keys, values)`` are returned. Without a cache, this step's
        keys/values ``[B, T, Kh, d]``.
        """
        c = self.config
        if (tensor := tensor_size()) > 1:
            check_divisible({"num_heads": c.num_heads, "num_kv_heads": c.num_kv_heads},
                            tensor, "tensor parallel attention")
        batch, length, _ = x.shape
        q, k, v = (self.q_proj(x, adapter_ids), self.k_proj(x, adapter_ids),
                   self.v_proj(x, adapter_ids))
        if self.q_bias is not None:
            q, k, v = q + self.q_bias, k + self.k_bias, v + self.v_bias
        q = split_over_tensor(q.reshape(batch, length, c.num_heads, c.head_dim), 2)
        k = split_over_tensor(k.reshape(batch, length, c.num_kv_heads, c.head_dim), 2)
        v = split_over_tensor(v.reshape(batch, length, c.num_kv_heads, c.head_dim), 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q = apply_rotary(q, positions, c.inv_freq)
        k = apply_rotary(k, positions, c.inv_freq)
        if cache is None:
            out = attend_with(q, k, v, mask)
        else:
            keys, values, layer = cache
            zero = jnp.zeros((), jnp.int32)
            where = (layer, zero, zero, cache_index, zero)
            k, v = (jax.lax.dynamic_update_slice(
                full, new.astype(full.dtype).transpose(0, 2, 1, 3)[None], where)
                for full, new in ((keys, k), (values, v)))
            out = attend_cached(q, k, v, layer, mask)
        out = split_over_tensor(out, 2).reshape(batch, length, c.num_heads * c.head_dim)
        return whole_over_tensor(self.o_proj(out, adapter_ids)), (k, v)


class MLP(eqx.Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""

    gate_proj: Linear
    up_proj: Linear
    down_proj: Linear

    def __call__(self, x: Array, adapter_ids: Array | None = None) -> Array:
        if (tensor := tensor_size()) > 1:
            check_divisible({"intermediate_size": self.up_proj.weight.shape[-1]}, tensor,
                            "tensor parallel MLP")
        gate = split_over_tensor(self.gate_proj(x, adapter_ids), -1)
        hidden = jax.nn.silu(gate) * split_over_tensor(self.up_proj(x, adapter_ids), -1)
        return whole_over_tensor(self.down_proj(hidden, adapter_ids))


class DecoderLayer(eqx.Module):
    """Pre-norm residual block: attention then SwiGLU MLP."""

    input_norm: RMSNorm
    attn: Attention
    post_attn_norm: RMSNorm
    mlp: MLP

    def __call__(self, h, positions, mask, adapter_ids=None, cache=None, cache_index=None):
        """``(h, kv)``: the new hidden state and this layer's keys/values (or updated cache)."""
        attn_out, kv = self.attn(self.input_norm(h), positions, mask, adapter_ids,
                                 cache, cache_index)
        h = h + attn_out
        h = h + self.mlp(self.post_attn_norm(h), adapter_ids)
        return h, kv


def init_layers(config: TransformerConfig, weights: list[Array], dtype) -> DecoderLayer:
    """Stacked layers from stacked ``[layers, in, out]`` normal weights (scaled by 1/sqrt(in))."""
    c = config
    q, k, v, o, gate, up, down = (Linear(w / np.sqrt(w.shape[-2]).astype(dtype)) for w in weights)

    def norm(size: int) -> RMSNorm:
        return RMSNorm(jnp.ones((c.num_layers, size), dtype), c.rms_norm_eps)

    def bias(size: int) -> Array | None:
        return jnp.zeros((c.num_layers, size), dtype) if c.qkv_bias else None

    q_norm = norm(c.head_dim) if c.qk_norm else None
    k_norm = norm(c.head_dim) if c.qk_norm else None
    q_size, kv_size = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
    attn = Attention(q, k, v, o, q_norm, k_norm, bias(q_size), bias(kv_size), bias(kv_size), c)
    return DecoderLayer(norm(c.hidden_size), attn, norm(c.hidden_size), MLP(gate, up, down))
