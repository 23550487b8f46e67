"""A Llama-3 / Qwen3-style decoder whose layers are stacked and run by ``scan_layers``.

The decoder layers (RMSNorm, rotary grouped-query attention with optional
Qwen3 q/k-norm, SwiGLU MLP) are stored once with a leading layer axis, so the
layer is traced and compiled once whatever the depth. How the layers run is
chosen once, on the config: ``remat`` / ``nested`` bound the activation memory
of the backward pass, ``scan=False`` runs them as an unrolled Python loop (the
reference that benchmarks compare against). Calling the model gives full
logits, as in Hugging Face; :meth:`Transformer.last_hidden_state` gives the
head's input. The training :func:`loss` feeds that to the chunked
:func:`jaxlean.loss.chunked.cross_entropy`, so ``[tokens, vocab]`` logits never exist.

Token ids are checked eagerly: calling the model (or :func:`check_tokens`) on
concrete arrays raises :class:`DataError` naming the first id outside the
vocabulary (targets are checked by the loss itself). Inside ``jit`` the ids are tracers and cannot
be checked; there an out-of-range id embeds as NaN, so the loss comes out NaN
rather than silently using another token. Call :func:`check_tokens` on each
batch before a jitted step to get the clear error.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean._random import normal_blocks
from jaxlean.errors import ConfigError, DataError
from jaxlean.loss.chunked import IGNORE_INDEX, VocabParallel, cross_entropy, token_logprobs
from jaxlean.models.lm.lora import Linear, LoRA
from jaxlean.models.lm.rope import RopeScaling, apply_rotary, inv_frequencies, rope_scaling
from jaxlean.nn.layers import Nested, scan_layers, unstack
from jaxlean.nn.remat import REMAT_NAMES, RematOption, remat_body

STRUCTURE_OPTIONS = ("remat", "nested", "scan", "compute_dtype")


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Sizes of a decoder, named as in Hugging Face ``config.json`` (Llama / Qwen3).

    ``head_dim`` defaults to ``hidden_size // num_heads`` (Qwen3 sets it explicitly);
    ``num_kv_heads`` defaults to ``num_heads`` (no grouping); ``qk_norm`` is Qwen3's
    RMSNorm of queries and keys per head; ``qkv_bias`` adds Qwen2's biases to the
    query, key and value projections; ``rope_scaling`` is a :data:`~jaxlean.models.lm.rope.
    RopeScaling` (see :func:`~jaxlean.models.lm.rope.rope_scaling`); ``sliding_window``
    (Mistral) lets each query see only the last ``sliding_window`` keys, itself included.

    The last four fields choose how the layers run, not what they compute:
    ``remat`` is the per-layer rematerialisation (see :func:`jaxlean.nn.layers.scan_layers`),
    ``nested`` the block size of two-level (sqrt-N) remat, ``scan=False``
    runs the layers as an unrolled Python loop (one trace per layer) instead of
    one ``scan_layers``, and ``compute_dtype`` (e.g. ``jnp.bfloat16``) is the dtype
    the forward pass and the head run in whatever the weights are stored in:
    float32 weights (full fine-tuning, or float32 adapters) are cast to it where
    used, so they are differentiated and updated in float32 while the products
    run in bfloat16 (the chunked loss still accumulates in float32). Change
    them on a built model with :meth:`Transformer.with_options`.
    """

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int | None = None
    head_dim: int | None = None
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling = None
    rms_norm_eps: float = 1e-6
    qk_norm: bool = False
    qkv_bias: bool = False
    sliding_window: int | None = None
    tie_embeddings: bool = False
    remat: RematOption = None
    nested: Nested = None
    scan: bool = True
    compute_dtype: Any = None

    def __post_init__(self) -> None:
        if self.compute_dtype is not None:
            if not jnp.issubdtype(self.compute_dtype, jnp.floating):
                raise ConfigError(f"TransformerConfig.compute_dtype must be a floating-point "
                                  f"dtype or None, got {self.compute_dtype!r}")
            object.__setattr__(self, "compute_dtype", jnp.dtype(self.compute_dtype))
        if not (self.remat is None or callable(self.remat) or self.remat in REMAT_NAMES):
            raise ConfigError(f"TransformerConfig.remat={self.remat!r} is not one of None, "
                              f"{list(REMAT_NAMES)} or a jax.checkpoint policy")
        if self.nested is not None and not self.scan:
            raise ConfigError(f"nested={self.nested!r} needs scan=True (nested remat groups "
                              "the scanned layers into blocks)")
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"TransformerConfig.{name} must be a positive int, got {value!r}")
        if self.num_kv_heads is None:
            object.__setattr__(self, "num_kv_heads", self.num_heads)
        if self.num_kv_heads < 1 or self.num_heads % self.num_kv_heads:
            raise ConfigError(
                f"num_heads={self.num_heads} must be a multiple of num_kv_heads="
                f"{self.num_kv_heads} (each key/value head serves a group of query heads)"
            )
        if self.head_dim is None:
            if self.hidden_size % self.num_heads:
                raise ConfigError(
                    f"hidden_size={self.hidden_size} is not divisible by num_heads="
                    f"{self.num_heads}; pass head_dim explicitly or change the sizes"
                )
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_heads)
        if self.head_dim < 2 or self.head_dim % 2:
            raise ConfigError(f"head_dim={self.head_dim} must be even for rotary embeddings")
        if self.rope_scaling is not None:
            kind, values = self.rope_scaling
            rope_scaling(kind, **dict(values))
        if self.sliding_window is not None and (not isinstance(self.sliding_window, int)
                                                or self.sliding_window < 1):
            raise ConfigError(f"sliding_window must be a positive int or None, got "
                              f"{self.sliding_window!r}")

    @property
    def group_size(self) -> int:
        return self.num_heads // self.num_kv_heads

    @property
    def inv_freq(self):
        """The rotary frequencies (NumPy, computed from the config)."""
        return inv_frequencies(self.head_dim, self.rope_theta, self.rope_scaling)


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
    scores = scores / np.sqrt(dim)
    scores = jnp.where(mask[:, None, None], scores, jnp.finfo(jnp.float32).min)
    probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    out = jnp.einsum("bkgts,bskd->btkgd", probs, v)
    return out.reshape(batch, length, heads, dim)


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
        """Attend over ``x`` (and, with ``cache=(keys, values)``, the cached slots).

        With a cache, this step's keys/values are written at slot ``cache_index``
        and the updated cache is returned; without one, this step's keys/values.
        """
        c = self.config
        batch, length, _ = x.shape
        q, k, v = (self.q_proj(x, adapter_ids), self.k_proj(x, adapter_ids),
                   self.v_proj(x, adapter_ids))
        if self.q_bias is not None:
            q, k, v = q + self.q_bias, k + self.k_bias, v + self.v_bias
        q = q.reshape(batch, length, c.num_heads, c.head_dim)
        k = k.reshape(batch, length, c.num_kv_heads, c.head_dim)
        v = v.reshape(batch, length, c.num_kv_heads, c.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q = apply_rotary(q, positions, c.inv_freq)
        k = apply_rotary(k, positions, c.inv_freq)
        if cache is not None:
            k = jax.lax.dynamic_update_slice_in_dim(cache[0], k.astype(cache[0].dtype),
                                                    cache_index, axis=1)
            v = jax.lax.dynamic_update_slice_in_dim(cache[1], v.astype(cache[1].dtype),
                                                    cache_index, axis=1)
        out = attend(q, k, v, mask).reshape(batch, length, c.num_heads * c.head_dim)
        return self.o_proj(out, adapter_ids), (k, v)


class MLP(eqx.Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""

    gate_proj: Linear
    up_proj: Linear
    down_proj: Linear

    def __call__(self, x: Array, adapter_ids: Array | None = None) -> Array:
        hidden = jax.nn.silu(self.gate_proj(x, adapter_ids)) * self.up_proj(x, adapter_ids)
        return self.down_proj(hidden, adapter_ids)


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


def _init_layers(config: TransformerConfig, weights: list[Array], dtype) -> DecoderLayer:
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


def check_tokens(tokens: Array | np.ndarray, vocab_size: int, mask: Array | None = None,
                 *, what: str = "token id") -> None:
    """Raise :class:`DataError` naming the first id outside ``[0, vocab_size)``.

    Needs concrete ids: call it on each batch before a jitted step.

    Args:
        tokens: integer ids of any shape.
        vocab_size: the number of embeddings.
        mask: positions where it is 0/False are not checked (e.g. ``-100`` targets).
        what: how the ids are called in the message ("token id", "target id").
    """
    ids = np.asarray(tokens)
    if not np.issubdtype(ids.dtype, np.integer):
        raise DataError(f"{what}s must be integers, got dtype {ids.dtype}")
    outside = (ids < 0) | (ids >= vocab_size)
    if mask is not None:
        outside &= np.broadcast_to(np.asarray(mask) != 0, ids.shape)
    bad = np.argwhere(outside)
    if bad.size:
        where = tuple(int(i) for i in bad[0])
        raise DataError(
            f"{what} {int(ids[where])} at index {where} is outside the vocabulary "
            f"[0, {vocab_size}) ({len(bad)} id(s) out of range)"
        )


def positions_from_mask(mask: Array) -> Array:
    """Rotary positions for (left-)padded rows: ``0, 1, ...`` counting real tokens only."""
    return jnp.maximum(jnp.cumsum(mask.astype(jnp.int32), axis=-1) - 1, 0)


class Transformer(eqx.Module):
    """Decoder-only language model with stacked layers.

    Attributes:
        embed: ``[vocab, hidden]`` token embedding.
        layers: one :class:`DecoderLayer` whose arrays have a leading layer axis.
        norm: final RMSNorm.
        lm_head: ``[hidden, vocab]`` head; its weight is ``None`` when tied to ``embed``.
        config: the sizes.
    """

    embed: Array
    layers: DecoderLayer
    norm: RMSNorm
    lm_head: Linear
    config: TransformerConfig = eqx.field(static=True)

    def __init__(self, config: TransformerConfig, *, key: Array, dtype=jnp.float32):
        """Random weights (normal, scaled by ``1/sqrt(fan_in)``) for ``config``."""
        c = config
        hidden, inner = c.hidden_size, c.intermediate_size
        q_size, kv_size = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim
        layer_shapes = [(hidden, q_size), (hidden, kv_size), (hidden, kv_size), (q_size, hidden),
                        (hidden, inner), (hidden, inner), (inner, hidden)]
        shapes = [(c.vocab_size, hidden), (hidden, c.vocab_size)]
        shapes += [(c.num_layers, *shape) for shape in layer_shapes]
        embed, head, *layer_weights = normal_blocks(key, shapes, dtype)
        self.config = c
        self.embed = embed
        self.layers = _init_layers(c, layer_weights, dtype)
        self.norm = RMSNorm(jnp.ones((hidden,), dtype), c.rms_norm_eps)
        if c.tie_embeddings:
            self.lm_head = Linear(None, tied_shape=(hidden, c.vocab_size))
        else:
            self.lm_head = Linear(head / np.sqrt(hidden).astype(dtype))

    def embed_tokens(self, tokens: Array) -> Array:
        """Embedding rows of ``tokens``; out-of-range ids give NaN rows (see module doc)."""
        if not isinstance(tokens, jax.core.Tracer):
            check_tokens(tokens, self.config.vocab_size)
        return jnp.take(self.embed, tokens, axis=0, mode="fill", fill_value=jnp.nan)

    def __call__(
        self,
        tokens: Array,
        *,
        mask: Array | None = None,
        positions: Array | None = None,
        adapter_ids: Array | None = None,
    ) -> Array:
        """Full logits ``[B, T, vocab]`` of ``tokens[B, T]``, as a Hugging Face causal LM returns.

        This builds the ``[tokens, vocab]`` matrix: for inspection, tests and short
        inputs. Training and RL use :func:`loss` and :mod:`jaxlean.models.lm.heads`,
        which start from :meth:`last_hidden_state` and never build it.

        Arguments as for :meth:`last_hidden_state`.
        """
        hidden = self.last_hidden_state(tokens, mask=mask, positions=positions,
                                        adapter_ids=adapter_ids)
        return self.project(hidden, adapter_ids)

    def last_hidden_state(
        self,
        tokens: Array,
        *,
        mask: Array | None = None,
        positions: Array | None = None,
        adapter_ids: Array | None = None,
    ) -> Array:
        """Final (normed) hidden states ``[B, T, hidden]`` of ``tokens[B, T]`` (the head's input).

        With ``config.compute_dtype`` set, every floating array is first cast to it.

        Args:
            tokens: int token ids ``[batch, length]``.
            mask: ``[batch, length]`` bool, False at padding (left padding for
                generation); padded keys are never attended to.
            positions: rotary positions; default ``0..T-1``, or with ``mask`` the
                count of real tokens before each one (so left padding does not shift them).
            adapter_ids: ``[batch]`` int, the LoRA adapter of each example.
        """
        model = self.in_compute_dtype()
        h, _ = model._forward(tokens, mask, positions, adapter_ids, collect=False)
        return model.norm(h)

    def hidden_states(
        self,
        tokens: Array,
        *,
        mask: Array | None = None,
        positions: Array | None = None,
        adapter_ids: Array | None = None,
    ) -> Array:
        """Every layer's output ``[layers, B, T, hidden]`` (before the final norm).

        Arguments as for :meth:`last_hidden_state`.
        """
        _, per_layer = self.in_compute_dtype()._forward(tokens, mask, positions, adapter_ids,
                                                        collect=True)
        return per_layer

    def in_compute_dtype(self) -> Transformer:
        """The model with its floating arrays cast to ``config.compute_dtype`` (itself when
        that is None); gradients flow back to the stored arrays in their own dtype."""
        dtype = self.config.compute_dtype
        if dtype is None:
            return self
        return jax.tree.map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, self)

    def with_options(self, **options) -> Transformer:
        """The same model with other structure options (``remat``, ``nested``, ``scan``).

        The weights are shared, only how the layers run changes; any other
        config field is refused, since it would change what the model computes.
        """
        unknown = sorted(set(options) - set(STRUCTURE_OPTIONS))
        if unknown:
            raise ConfigError(f"with_options changes only {list(STRUCTURE_OPTIONS)}, got "
                              f"{unknown}")
        model = copy.copy(self)
        object.__setattr__(model, "config", dataclasses.replace(self.config, **options))
        return model

    def _forward(self, tokens, mask, positions, adapter_ids, collect: bool):
        """``(h, per_layer)``: the last layer's output and, with ``collect``, every layer's."""
        if jnp.ndim(tokens) != 2:
            raise DataError(f"tokens must have shape [batch, length], got {jnp.shape(tokens)}")
        length = tokens.shape[1]
        h = self.embed_tokens(tokens)
        slots = jnp.arange(length)
        causal = (jnp.tril(jnp.ones((length, length), bool))
                  & window_mask(slots, slots, self.config.sliding_window))[None]
        if mask is None:
            attn_mask = causal
            positions = jnp.arange(length)[None] if positions is None else positions
        else:
            attn_mask = causal & mask[:, None, :].astype(bool)
            positions = positions_from_mask(mask) if positions is None else positions
        positions = jnp.broadcast_to(positions, tokens.shape)

        def body(layer, h, _):
            h, _ = layer(h, positions, attn_mask, adapter_ids)
            return h, (h if collect else None)

        c = self.config
        if c.scan:
            return scan_layers(body, self.layers, h, remat=c.remat, nested=c.nested)
        step = remat_body(lambda h, layer: body(layer, h, None), c.remat)
        outputs = []
        for layer in unstack(self.layers):
            h, out = step(h, layer)
            outputs.append(out)
        return h, (jnp.stack(outputs) if collect else None)

    def head(
        self, hidden: Array, adapter_ids: Array | None = None
    ) -> tuple[Array, Array | Callable]:
        """``(inputs, head)`` such that ``logits = head(inputs)`` (or ``inputs @ head``).

        Without a head adapter this is ``(hidden, matrix)``. With one, a mixed batch
        needs each token's own adapter inside every loss chunk, so the rank-sized
        down-projections of all adapters are appended to ``hidden`` (zero except
        the example's own) and the callable head adds ``... @ b`` for them.
        """
        model = self.in_compute_dtype()
        if model.config.compute_dtype is not None:
            hidden = hidden.astype(model.config.compute_dtype)
        weight = model.embed.T if model.lm_head.weight is None else model.lm_head.weight
        lora: LoRA | None = model.lm_head.lora
        if lora is None:
            return hidden, weight
        down = lora.down(hidden, adapter_ids)
        ids = jnp.zeros(hidden.shape[:1], jnp.int32) if adapter_ids is None else adapter_ids
        onehot = jax.nn.one_hot(ids, lora.num_adapters, dtype=hidden.dtype)
        expanded = onehot.reshape(-1, *([1] * (hidden.ndim - 2)), lora.num_adapters, 1)
        extra = (expanded * down[..., None, :]).reshape(*hidden.shape[:-1], -1)
        size = hidden.shape[-1]
        b = lora.b.reshape(-1, lora.b.shape[-1])

        def head(chunk: Array) -> Array:
            logits = chunk[..., :size] @ weight.astype(chunk.dtype)
            return logits + chunk[..., size:] @ b.astype(chunk.dtype)

        return jnp.concatenate([hidden, extra.astype(hidden.dtype)], axis=-1), head

    def project(self, hidden: Array, adapter_ids: Array | None = None) -> Array:
        """Full logits ``[..., vocab]`` of final (normed) hidden states, LoRA head included."""
        inputs, head = self.head(hidden, adapter_ids)
        return head(inputs) if callable(head) else inputs @ head


def loss(
    model: Transformer,
    tokens: Array,
    targets: Array,
    mask: Array | None = None,
    *,
    attention_mask: Array | None = None,
    adapter_ids: Array | None = None,
    z_loss: float = 0.0,
    chunk_size: int = 1024,
    vocab_parallel: VocabParallel | None = None,
    ignore_index: int | None = IGNORE_INDEX,
) -> Array:
    """Mean next-token cross-entropy over ``mask``, never building ``[tokens, vocab]`` logits.

    The layers run as ``model.config`` says (``remat``, ``nested``, ``scan``).

    Args:
        model: the transformer.
        tokens: ``[B, T]`` input ids.
        targets: ``[B, T]`` ids to predict at each position (usually ``tokens`` shifted);
            positions whose target is ``ignore_index`` count for nothing.
        mask: ``[B, T]`` weights of the loss per position (padding and prompts at 0).
        attention_mask: ``[B, T]`` False at padding tokens (not attended to).
        adapter_ids: ``[B]`` LoRA adapter per example.
        z_loss: weight of the ``logsumexp**2`` auxiliary loss.
        chunk_size: tokens per loss chunk.
        vocab_parallel: the head is split over a mesh axis's vocabulary; each
            device computes its part of the logsumexp (:class:`jaxlean.loss.chunked.VocabParallel`).
        ignore_index: the "no loss here" target (Hugging Face's ``-100`` labels; ``None``:
            none). Any other target outside the vocabulary raises when concrete and
            makes the loss NaN under ``jit``.
    """
    hidden = model.last_hidden_state(tokens, mask=attention_mask, adapter_ids=adapter_ids)
    inputs, head = model.head(hidden, adapter_ids)
    return cross_entropy(inputs, head, targets, mask=mask, z_loss=z_loss, chunk_size=chunk_size,
                         vocab_parallel=vocab_parallel, ignore_index=ignore_index)


def logprobs(
    model: Transformer,
    tokens: Array,
    targets: Array,
    *,
    attention_mask: Array | None = None,
    adapter_ids: Array | None = None,
    chunk_size: int = 1024,
    vocab_parallel: VocabParallel | None = None,
    ignore_index: int | None = IGNORE_INDEX,
) -> Array:
    """Per-position ``log p(targets)`` ``[B, T]`` (for RL objectives), computed in chunks; 0
    where the target is ``ignore_index``."""
    hidden = model.last_hidden_state(tokens, mask=attention_mask, adapter_ids=adapter_ids)
    inputs, head = model.head(hidden, adapter_ids)
    return token_logprobs(inputs, head, targets, chunk_size=chunk_size,
                          vocab_parallel=vocab_parallel, ignore_index=ignore_index)
