"""One jitted training step for any loss over any pytree model, placement kept.

:func:`make_train_step` compiles loss, gradient and optimizer update once per
placement of its inputs. It never mentions devices: place the model (e.g. with
:func:`jaxlean.parallel.mesh.shard_model`) and the batch, and XLA partitions
the step to match; the outputs come back laid out as the inputs went in, so
the next call reuses the same executable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxlean.errors import ConfigError
from jaxlean.train.checkpoint import unplaced_sharding

__all__ = ["TrainStep", "make_train_step"]


def _is_array_like(x: Any) -> bool:
    """An array, or the shape of one (``jax.ShapeDtypeStruct``, e.g. from ``jax.eval_shape``)."""
    return eqx.is_array(x) or isinstance(x, jax.ShapeDtypeStruct)


def _placements(tree: Any) -> Any:
    """The sharding of each array leaf; arrays not yet placed (``committed`` False,
    e.g. an optimizer's step count, or a ``ShapeDtypeStruct`` without a sharding)
    are replicated over the mesh the others use, or put on the first local device."""
    named = [x.sharding for x in jax.tree.leaves(tree)
             if _is_array_like(x) and isinstance(x.sharding, NamedSharding)]
    replicated = NamedSharding(named[0].mesh, P()) if named else None

    def placement(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct):
            if x.sharding is not None:
                return x.sharding
            return replicated or unplaced_sharding()
        if not isinstance(x, jax.Array):
            return None
        return x.sharding if x.committed or replicated is None else replicated

    return jax.tree.map(placement, tree)


def _place(x: Any, sharding: Any) -> Any:
    """``x`` on ``sharding``: arrays are moved once, shapes are given the sharding."""
    if isinstance(x, jax.ShapeDtypeStruct):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding, weak_type=x.weak_type)
    return x if sharding is None or x.committed else jax.device_put(x, sharding)


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

    def __init__(self, loss_fn: Callable, tx: optax.GradientTransformation, has_aux: bool,
                 donate: bool):
        self._loss_fn = loss_fn
        self._tx = tx
        self._has_aux = has_aux
        self._donate = (0, 1) if donate else ()
        self._jitted: dict[tuple, Callable] = {}

    def _step(self, arrays: Any, static: Any, opt_state: Any, batch: tuple,
              grad_shardings: Any) -> tuple:
        def loss_of_arrays(arrays):
            return self._loss_fn(eqx.combine(arrays, static), *batch)

        value, grads = jax.value_and_grad(loss_of_arrays, has_aux=self._has_aux)(arrays)
        if grad_shardings is not None:
            grads = jax.lax.with_sharding_constraint(grads, grad_shardings)
        updates, opt_state = self._tx.update(grads, opt_state, arrays)
        return eqx.apply_updates(arrays, updates), opt_state, value

    def prepare(self, model: Any, opt_state: Any) -> tuple[Callable, tuple]:
        """The jitted step for this model structure and placement, and its arguments
        (the model's arrays and the optimizer state, unplaced leaves placed)."""
        arrays, static = eqx.partition(model, _is_array_like)
        shardings = _placements((arrays, opt_state))
        leaves, treedef = jax.tree.flatten(shardings)
        static_leaves, static_def = jax.tree.flatten(static)
        try:
            key = (treedef, tuple(leaves), static_def, tuple(static_leaves))
            hash(key)
        except TypeError as error:
            raise ConfigError(f"make_train_step: the model's non-array leaves must be hashable "
                              f"(they are compiled in as constants): {error}") from None
        if key not in self._jitted:
            meshed = any(isinstance(s, NamedSharding) for s in leaves)
            grad_shardings = shardings[0] if meshed else None

            def step(arrays, opt_state, *batch):
                return self._step(arrays, static, opt_state, batch, grad_shardings)

            self._jitted[key] = jax.jit(step, donate_argnums=self._donate,
                                        out_shardings=(*shardings, None))
        placed = jax.tree.map(_place, (arrays, opt_state), shardings)
        return self._jitted[key], (*placed, static)

    def __call__(self, model: Any, opt_state: optax.OptState, *batch: Any) -> tuple:
        """``(model, opt_state, loss)`` after one step on ``batch``; ``loss`` is
        ``(value, aux)`` when the step was made with ``has_aux=True``."""
        step, (arrays, opt_state, static) = self.prepare(model, opt_state)
        arrays, opt_state, value = step(arrays, opt_state, *batch)
        return eqx.combine(arrays, static), opt_state, value

    def lower(self, model: Any, opt_state: optax.OptState, *batch: Any) -> jax.stages.Lowered:
        """The lowered step for these arguments (``.compile()``, ``.as_text()``); any
        argument may be given by its shape (``jax.ShapeDtypeStruct``, ``jax.eval_shape``)."""
        step, (arrays, opt_state, _) = self.prepare(model, opt_state)
        return step.lower(arrays, opt_state, *batch)

    def compile(self, model: Any, opt_state: optax.OptState, *batch: Any) -> jax.stages.Compiled:
        """Compile the step for arguments of these shapes and placements, ahead of the call.

        The first call with arguments like these then runs at once (JAX's jit cache
        holds the executable). The arguments may be shapes only (``jax.eval_shape`` of
        the state), so a restarted job compiles, or loads from the persistent cache,
        while its checkpoint is still being read
        (:meth:`jaxlean.train.checkpoint.Checkpointer.restore_in_background`).
        """
        return self.lower(model, opt_state, *batch).compile()


def make_train_step(loss_fn: Callable[..., Any], tx: optax.GradientTransformation, *,
                    has_aux: bool = False, donate: bool = True) -> TrainStep:
    """``step(model, opt_state, *batch) -> (model, opt_state, loss)``, jitted.

    ``loss_fn(model, *batch)`` returns a scalar (or ``(scalar, aux)`` with
    ``has_aux=True``); the model is any pytree: its array leaves are trained,
    its other leaves (activation functions, static fields) are compiled in.
    The step compiles once per structure and placement of the model and
    optimizer state (see :class:`TrainStep`); ``step.lower(...)`` gives its HLO.

    Args:
        loss_fn: the loss; bind options with ``functools.partial``.
        tx: the optimizer, e.g. ``packed(optax.adamw(3e-4))``; its state comes
            from ``tx.init(model)`` (or of the model's arrays).
        has_aux: ``loss_fn`` returns ``(loss, aux)``; the step returns both.
        donate: reuse the model's and optimizer state's buffers for the outputs.
    """
    return TrainStep(loss_fn, tx, has_aux, donate)
