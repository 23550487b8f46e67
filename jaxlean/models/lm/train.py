"""One language-model training step and a synthetic corpus, the same on 1 device or many.

:func:`make_train_step` jit-compiles loss, gradient and optimizer update of a
:class:`~jaxlean.models.lm.transformer.Transformer`. It never mentions devices:
place the model with :func:`jaxlean.parallel.mesh.shard_model` and the batch with
:func:`jaxlean.parallel.mesh.shard_batch`, and XLA partitions the step to match.
:func:`synthetic_batch` gives every process the same learnable batches
(arithmetic sequences), so a run's losses can be compared across layouts.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import equinox as eqx
import jax
import numpy as np
import optax
from jax import Array
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxlean.loss.chunked import VocabParallel
from jaxlean.models.lm.transformer import Transformer, loss
from jaxlean.nn.layers import Nested
from jaxlean.nn.remat import RematOption


def _placements(tree: Any) -> Any:
    """The sharding of each array leaf; arrays not yet placed (``committed`` False,
    e.g. an optimizer's step count) are replicated over the mesh the others use."""
    named = [x.sharding for x in jax.tree.leaves(tree)
             if isinstance(x, jax.Array) and isinstance(x.sharding, NamedSharding)]
    replicated = NamedSharding(named[0].mesh, P()) if named else None

    def placement(x: Any) -> Any:
        if not isinstance(x, jax.Array):
            return None
        return x.sharding if x.committed or replicated is None else replicated

    return jax.tree.map(placement, tree)


class TrainStep:
    """A jitted train step whose outputs keep the placement of its inputs.

    Left to itself XLA may hand back the new parameters and optimizer state
    laid out differently from how they came in, and the next call would then
    compile again. Here the step is compiled with ``out_shardings`` equal to
    the shardings of the model and optimizer state it is called with (one
    compiled step per distinct placement); the state's unplaced scalars are
    replicated, so the second call reuses the first call's executable. On a
    mesh the gradients are constrained to the parameters' shardings, so FSDP
    reduces them straight into each device's block (a reduce-scatter) instead
    of leaving a whole gradient on every device.
    """

    def __init__(self, step: Callable, donate: bool):
        self._step = step
        self._donate = (0, 1) if donate else ()
        self._jitted: dict[tuple, Callable] = {}

    def _for(self, model: Transformer, opt_state: optax.OptState) -> tuple[Callable, tuple]:
        """The jitted step for this placement, and the arguments with unplaced leaves placed."""
        shardings = _placements((model, opt_state))
        leaves, treedef = jax.tree.flatten(shardings)
        key = (treedef, tuple(leaves))
        if key not in self._jitted:
            meshed = any(isinstance(s, NamedSharding) for s in leaves)
            step = partial(self._step, grad_shardings=shardings[0] if meshed else None)
            self._jitted[key] = jax.jit(step, donate_argnums=self._donate,
                                        out_shardings=(*shardings, None))
        placed = jax.tree.map(lambda x, s: x if s is None or x.committed else jax.device_put(x, s),
                              (model, opt_state), shardings)
        return self._jitted[key], placed

    def __call__(self, model: Transformer, opt_state: optax.OptState, tokens: Array,
                 targets: Array) -> tuple[Transformer, optax.OptState, Array]:
        step, (model, opt_state) = self._for(model, opt_state)
        return step(model, opt_state, tokens, targets)

    def lower(self, model: Transformer, opt_state: optax.OptState, tokens: Array,
              targets: Array) -> jax.stages.Lowered:
        """The lowered step for these arguments (``.compile()``, ``.as_text()``)."""
        step, (model, opt_state) = self._for(model, opt_state)
        return step.lower(model, opt_state, tokens, targets)


def make_train_step(tx: optax.GradientTransformation, *, remat: RematOption = None,
                    nested: Nested = None, vocab_parallel: VocabParallel | None = None,
                    chunk_size: int = 1024, donate: bool = True) -> TrainStep:
    """``step(model, opt_state, tokens, targets) -> (model, opt_state, loss)``, jitted.

    The step compiles once per placement of the model and optimizer state (see
    :class:`TrainStep`), and ``step.lower(...)`` gives its HLO for inspection.

    Args:
        tx: the optimizer, e.g. ``packed(optax.adamw(3e-4))``; its state comes
            from ``tx.init(model)``.
        remat, nested: per-layer rematerialisation of the layer scan.
        vocab_parallel: compute the loss with the head split over the vocabulary
            (see :class:`jaxlean.loss.chunked.VocabParallel`).
        chunk_size: tokens per loss chunk.
        donate: reuse the model's and optimizer state's buffers for the outputs.
    """

    def step(model, opt_state, tokens, targets, grad_shardings):
        value, grads = eqx.filter_value_and_grad(loss)(
            model, tokens, targets, remat=remat, nested=nested, vocab_parallel=vocab_parallel,
            chunk_size=chunk_size)
        if grad_shardings is not None:
            grads = jax.lax.with_sharding_constraint(grads, grad_shardings)
        updates, opt_state = tx.update(grads, opt_state, model)
        return eqx.apply_updates(model, updates), opt_state, value

    return TrainStep(step, donate)


def synthetic_batch(step: int, batch: int, length: int, vocab: int,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens, targets)`` ``[batch, length]`` int32: arithmetic sequences modulo ``vocab``.

    Each row starts at a random token and adds a random stride, so the next
    token is predictable from the previous two and the loss falls as the
    model learns. The same ``(step, seed)`` gives the same batch in every process.
    """
    rng = np.random.default_rng([seed, step])
    start = rng.integers(0, vocab, (batch, 1))
    stride = rng.integers(1, max(2, vocab // 8), (batch, 1))
    sequence = (start + stride * np.arange(length + 1)) % vocab
    return sequence[:, :-1].astype(np.int32), sequence[:, 1:].astype(np.int32)
