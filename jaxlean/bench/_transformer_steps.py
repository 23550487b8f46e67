"""Transformer training steps shared by the benchmarks: unrolled baseline and scanned jaxlean.

The baseline is seed 002's: a Python loop over separate layers without remat
(with the same chunked loss, so only the layer handling differs). Models are
abstract (``eqx.filter_eval_shape``) so big configurations compile without
allocating weights.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxlean.loss.chunked import cross_entropy
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss


def unrolled_loss(model: Transformer, layers: list, tokens: jax.Array, targets: jax.Array):
    """The seed's baseline: a Python loop over separate layers, no remat (same chunked loss)."""
    length = tokens.shape[1]
    h = model.embed[tokens]
    mask = jnp.tril(jnp.ones((length, length), bool))[None]
    positions = jnp.broadcast_to(jnp.arange(length), tokens.shape)
    for layer in layers:
        h, _ = layer(h, positions, mask)
    inputs, head = model.head(model.norm(h))
    return cross_entropy(inputs, head, targets)


def scanned_step(remat, nested):
    """``jax.grad`` of the model's own (scanned) loss with the given remat options."""

    def step(model, tokens, targets):
        return jax.grad(loss)(model, tokens, targets, remat=remat, nested=nested)
    return step


def unrolled_step(model, layers, tokens, targets):
    """Gradients of :func:`unrolled_loss` w.r.t. the model and its separate layers."""
    return jax.grad(unrolled_loss, argnums=(0, 1))(model, layers, tokens, targets)


def abstract_model(config: TransformerConfig, shape: tuple[int, int]):
    """A weightless model (shapes only) and abstract token ids of ``shape``."""
    model = eqx.filter_eval_shape(lambda: Transformer(config, key=jax.random.key(0)))
    tokens = jax.ShapeDtypeStruct(shape, jnp.int32)
    return model, tokens


def split_layers(model: Transformer, depth: int):
    """(model without its stacked layers, list of per-layer modules) for the baseline."""
    layers = [jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape[1:], s.dtype), model.layers)
              for _ in range(depth)]
    return eqx.tree_at(lambda m: m.layers, model, None), layers
