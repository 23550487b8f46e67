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

The config lives in :mod:`jaxlean.models.lm.config`, the layer itself in
:mod:`jaxlean.models.lm.layers` and :func:`loss` / :func:`logprobs` in
:mod:`jaxlean.models.lm.causal_loss`; their names are importable from here too.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any, TypedDict, Unpack

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean._args import reject_renamed
from jaxlean._random import normal_blocks
from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.attention import layer_mask
from jaxlean.models.lm.causal_loss import logprobs, loss
from jaxlean.models.lm.config import STRUCTURE_OPTIONS, HFSource, TransformerConfig
from jaxlean.models.lm.layers import (
    MLP,
    Attention,
    DecoderLayer,
    RMSNorm,
    attend,
    init_layers,
    window_mask,
)
from jaxlean.models.lm.lora import Linear, LoRA, check_adapter_ids
from jaxlean.nn.attention_mask import AttentionMask
from jaxlean.nn.layers import scan_layers, unstack
from jaxlean.nn.remat import remat_body

__all__ = [
    "MLP", "STRUCTURE_OPTIONS", "Attention", "DecoderLayer", "ModelInputs", "RMSNorm",
    "Transformer", "TransformerConfig", "attend", "check_attention_mask", "check_segment_ids",
    "check_tokens", "logprobs", "loss", "positions_from_mask", "positions_from_segments",
    "window_mask",
]


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


def check_attention_mask(attention_mask: Array | None, shape: tuple[int, ...],
                         argument: str = "attention_mask") -> None:
    """Raise :class:`DataError` unless ``attention_mask`` is ``None`` or has ``shape``."""
    if attention_mask is not None and tuple(jnp.shape(attention_mask)) != tuple(shape):
        raise DataError(f"{argument} must have the input ids' shape {tuple(shape)} "
                        f"([batch, length], False or 0 at padding), got "
                        f"{tuple(jnp.shape(attention_mask))}")


def check_segment_ids(segment_ids: Array | None, shape: tuple[int, ...]) -> None:
    """Raise :class:`DataError` unless ``segment_ids`` is ``None`` or integers of ``shape``."""
    if segment_ids is None:
        return
    if tuple(jnp.shape(segment_ids)) != tuple(shape):
        raise DataError(f"segment_ids must have the input ids' shape {tuple(shape)} "
                        f"([batch, length], 1, 2, ... per packed sequence, 0 at padding), got "
                        f"{tuple(jnp.shape(segment_ids))}")
    if not jnp.issubdtype(jnp.result_type(segment_ids), jnp.integer):
        raise DataError(f"segment_ids must be integers, got dtype "
                        f"{jnp.result_type(segment_ids)}")


def positions_from_segments(segment_ids: Array) -> Array:
    """Rotary positions of packed rows: ``0, 1, ...`` restarting where the segment id changes."""
    segment_ids = jnp.asarray(segment_ids)
    index = jnp.broadcast_to(jnp.arange(segment_ids.shape[-1]), segment_ids.shape)
    starts = jnp.concatenate([jnp.ones_like(segment_ids[..., :1], bool),
                              segment_ids[..., 1:] != segment_ids[..., :-1]], axis=-1)
    return index - jax.lax.cummax(jnp.where(starts, index, 0), axis=segment_ids.ndim - 1)


class ModelInputs(TypedDict, total=False):
    """The keyword inputs every forward method of :class:`Transformer` takes, each
    defaulting to None (see :meth:`Transformer.last_hidden_state`)."""

    attention_mask: Array | None
    positions: Array | None
    adapter_ids: Array | None
    segment_ids: Array | None


def _model_inputs(input_ids: Array | None, inputs: dict[str, Any], where: str) -> Array:
    """``input_ids``, after refusing the old keywords (``tokens``, ``mask``) by their new names
    and any other keyword that is not a :class:`ModelInputs` field."""
    other = {name: value for name, value in inputs.items()
             if name not in ModelInputs.__annotations__}
    reject_renamed(other, {"tokens": "input_ids", "mask": "attention_mask"}, where)
    if input_ids is None:
        raise TypeError(f"{where}() missing the argument 'input_ids'")
    return input_ids


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
        hf_source: the checkpoint files a load read this model from (None: built here).
            It computes nothing, but it is static structure: a model carries its own
            origin through ``add_lora``, training and ``jit`` (a trace per origin, never
            another checkpoint's), and ``save_pretrained`` writes its fields back.
    """

    embed: Array
    layers: DecoderLayer
    norm: RMSNorm
    lm_head: Linear
    config: TransformerConfig = eqx.field(static=True)
    hf_source: HFSource | None = eqx.field(static=True, default=None)

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
        self.hf_source = None
        self.embed = embed
        self.layers = init_layers(c, layer_weights, dtype)
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

    def __call__(self, input_ids: Array | None = None, **inputs: Unpack[ModelInputs]) -> Array:
        """Full logits ``[B, T, vocab]`` of ``input_ids[B, T]``, as Hugging Face's causal LM.

        This builds the ``[tokens, vocab]`` matrix: for inspection, tests and short
        inputs. Training and RL use :func:`loss` and :mod:`jaxlean.models.lm.heads`,
        which start from :meth:`last_hidden_state` and never build it.

        Arguments as for :meth:`last_hidden_state`.
        """
        input_ids = _model_inputs(input_ids, inputs, "Transformer.__call__")
        hidden = self.last_hidden_state(input_ids, **inputs)
        return self.project(hidden, inputs.get("adapter_ids"))

    def last_hidden_state(self, input_ids: Array | None = None,
                          **inputs: Unpack[ModelInputs]) -> Array:
        """Final (normed) hidden states ``[B, T, hidden]`` of ``input_ids`` (the head's input).

        With ``config.compute_dtype`` set, every floating array is first cast to it.
        The old keywords ``tokens=`` and ``mask=`` raise an error naming these.

        Args:
            input_ids: int token ids ``[batch, length]``.
            attention_mask: ``[batch, length]`` bool or 0/1, False at padding (left or
                right, as Hugging Face's); padded keys are never attended to.
            positions: rotary positions; default ``0..T-1``, or with ``attention_mask``
                the count of real tokens before each one (so left padding does not
                shift them; with right padding this is ``0..T-1`` as in Hugging Face).
            adapter_ids: ``[batch]`` int, the LoRA adapter of each example (checked
                against the adapters' count when concrete).
            segment_ids: ``[batch, length]`` int for packed rows (several sequences in
                one row): a token attends only to earlier tokens of its own segment, and
                the default positions restart at 0 in each segment
                (:func:`positions_from_segments`), so each sequence is computed as if
                alone. Number the segments 1, 2, ... and the padding 0.
        """
        input_ids = _model_inputs(input_ids, inputs, "Transformer.last_hidden_state")
        model = self.in_compute_dtype()
        h, _ = model._forward(input_ids, inputs, collect=False)
        return model.norm(h)

    def hidden_states(self, input_ids: Array | None = None,
                      **inputs: Unpack[ModelInputs]) -> Array:
        """Every layer's output ``[layers, B, T, hidden]`` (before the final norm).

        Arguments as for :meth:`last_hidden_state`.
        """
        input_ids = _model_inputs(input_ids, inputs, "Transformer.hidden_states")
        _, per_layer = self.in_compute_dtype()._forward(input_ids, inputs, collect=True)
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

    def _forward(self, tokens: Array, inputs: ModelInputs, collect: bool) -> tuple[Array, Any]:
        """``(h, per_layer)``: the last layer's output and, with ``collect``, every layer's."""
        mask, positions = inputs.get("attention_mask"), inputs.get("positions")
        adapter_ids, segment_ids = inputs.get("adapter_ids"), inputs.get("segment_ids")
        if jnp.ndim(tokens) != 2:
            raise DataError(f"input_ids must have shape [batch, length], got "
                            f"{jnp.shape(tokens)}")
        check_attention_mask(mask, tokens.shape)
        check_segment_ids(segment_ids, tokens.shape)
        check_adapter_ids(self, adapter_ids, tokens.shape[0])
        length = tokens.shape[1]
        h = self.embed_tokens(tokens)
        if segment_ids is not None:  # packed rows: each segment attends to itself only
            segment_ids = jnp.asarray(segment_ids)
            positions = (positions_from_segments(segment_ids) if positions is None
                         else positions)
        if mask is None:
            positions = jnp.arange(length)[None] if positions is None else positions
        else:
            positions = positions_from_mask(mask) if positions is None else positions
        # causal, windowed, padded keys hidden; built blockwise or whole per config.attention
        c = self.config
        attn_mask = AttentionMask(None if mask is None else jnp.asarray(mask).astype(bool),
                                  segment_ids, segment_ids, causal=True,
                                  window=c.sliding_window)
        batch, dtype = tokens.shape[0], h.dtype
        attn_mask = layer_mask(
            c.attention, c.attention_tile, attn_mask,
            jax.ShapeDtypeStruct((batch, length, c.num_heads, c.head_dim), dtype),
            jax.ShapeDtypeStruct((batch, length, c.num_kv_heads, c.head_dim), dtype))
        positions = jnp.broadcast_to(positions, tokens.shape)

        def body(layer, h, _):
            h, _ = layer(h, positions, attn_mask, adapter_ids)
            return h, (h if collect else None)

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
        check_adapter_ids(self, adapter_ids, hidden.shape[0] if hidden.ndim > 1 else None)
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
