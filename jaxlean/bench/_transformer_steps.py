"""Transformer gradient steps shared by the benchmarks: the model's own structure modes.

Every variant is the model's own :func:`~jaxlean.models.lm.transformer.loss`;
only the config's structure options differ. The baseline is the unrolled step
(``scan=False``: a Python loop over the layers, no remat, the same chunked
loss), so only the layer handling differs between the compared steps. Models
are abstract (``eqx.filter_eval_shape``) so big configurations compile
without allocating weights.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxlean.models.lm.transformer import Transformer, TransformerConfig, loss

UNROLLED = dict(scan=False, remat=None, nested=None)
"""Structure options of the baseline: unrolled Python loop, no remat."""


def grad_step(model: Transformer, tokens: jax.Array, targets: jax.Array):
    """Gradients of the model's loss; its config says how the layers run."""
    return jax.grad(loss)(model, tokens, targets=targets)


def abstract_model(config: TransformerConfig, shape: tuple[int, int]):
    """A weightless model (shapes only) and abstract token ids of ``shape``."""
    model = eqx.filter_eval_shape(lambda: Transformer(config, key=jax.random.key(0)))
    tokens = jax.ShapeDtypeStruct(shape, jnp.int32)
    return model, tokens
