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

The config lives in :mod:`jaxlean.models.lm.config` and the layer itself in
:mod:`jaxlean.models.lm.layers`; their names are importable from here too.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from jaxlean._random import normal_blocks
from jaxlean.errors import ConfigError, DataError
from jaxlean.loss.chunked import IGNORE_INDEX, VocabParallel, cross_entropy, token_logprobs
from jaxlean.models.lm.config import STRUCTURE_OPTIONS, TransformerConfig
from jaxlean.models.lm.layers import (
    MLP,
    Attention,
    DecoderLayer,
    RMSNorm,
    attend,
    init_layers,
    window_mask,
)
from jaxlean.models.lm.lora import Linear, LoRA
from jaxlean.nn.layers import scan_layers, unstack
from jaxlean.nn.remat import remat_body

__all__ = [
    "MLP", "STRUCTURE_OPTIONS", "Attention", "DecoderLayer", "RMSNorm", "Transformer",
    "TransformerConfig", "attend", "check_tokens", "logprobs", "loss", "positions_from_mask",
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
