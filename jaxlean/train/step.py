"""One jitted training step for any loss over any pytree model, placement kept, arrays safe.

:func:`make_train_step` compiles loss, gradient and optimizer update once per
placement of its inputs. It never mentions devices: place the model (e.g. with
:func:`jaxlean.parallel.mesh.shard_model`) and the batch, and XLA partitions
the step to match; the outputs come back laid out as the inputs went in, so
the next call reuses the same executable.

Only the trainable leaves are differentiated and updated (a model holding
adapters trains only them by default); frozen leaves go in read-only and come
back as the very same arrays. By default only the optimizer state is donated:
no array of the model passed in is deleted, whatever else holds it (a reference
model sharing it, an earlier model kept by the caller). A step whose loss,
gradient or update is not finite changes nothing and says so.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxlean._args import as_int
from jaxlean.errors import ConfigError
from jaxlean.train._adapters import adapter_mask
from jaxlean.train._donation import Donate, aliased, copy_where, donated_args
from jaxlean.train._groups import Trainable, trainable_flags
from jaxlean.train._nonfinite import finite_flags, keep_if, why_skipped
from jaxlean.train.accumulate import accumulated_value_and_grad
from jaxlean.train.checkpoint import unplaced_sharding
from jaxlean.train.packed import PackedState

__all__ = ["Donate", "StepMetrics", "TrainStep", "count_integer_elements", "make_train_step"]


class StepMetrics(NamedTuple):
    """What one step reports with ``metrics=True`` (scalars, computed inside the step).

    Attributes:
        loss: the loss value.
        grad_norm: global L2 norm of the trainable leaves' gradients, before the optimizer.
        learning_rate: the learning rate this step used, read from an
            ``optax.inject_hyperparams`` state (anywhere in the optimizer state, also
            inside ``packed``); None when the optimizer injects none.
        tokens: tokens in the batch: see ``count_tokens`` of :func:`make_train_step`.
        skipped: True when the loss, a gradient or an update was not finite, so the
            step kept the model and the optimizer state as they were.
    """

    loss: jax.Array
    grad_norm: jax.Array
    learning_rate: jax.Array | None
    tokens: jax.Array | None
    skipped: jax.Array


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


def _packed_trainable(opt_state: Any) -> set[str] | None:
    """Key paths (``keystr``) of the leaves a :func:`packed` optimizer trains, or None if the
    state holds no packed state."""
    states = [x for x in jax.tree.leaves(opt_state, is_leaf=lambda x: isinstance(x, PackedState))
              if isinstance(x, PackedState)]
    if not states:
        return None
    return {leaf.path for state in states for leaf in state.layout.leaves
            if leaf is not None and leaf.buffer >= 0}


def _learning_rate(opt_state: Any) -> jax.Array | None:
    """The first ``learning_rate`` an ``optax.inject_hyperparams`` state holds, else None."""
    kinds = (optax.InjectHyperparamsState, optax.InjectStatefulHyperparamsState)
    for x in jax.tree.leaves(opt_state, is_leaf=lambda x: isinstance(x, kinds)):
        if isinstance(x, kinds) and "learning_rate" in x.hyperparams:
            return jnp.asarray(x.hyperparams["learning_rate"])
    return None


def count_integer_elements(*batch: Any, **_: Any) -> jax.Array | None:
    """The element count of the first integer positional batch argument (token ids), else
    None: the default ``count_tokens`` of :func:`make_train_step`. Padding counts too: pass
    a function that knows the batch's mask to count only real tokens (for a language model,
    :func:`jaxlean.models.lm.tokens.count_tokens` sums ``attention_mask``)."""
    for x in batch:
        if _is_array_like(x) and jnp.issubdtype(x.dtype, jnp.integer):
            return jnp.asarray(x.size, jnp.int32)
    return None


class TrainStep:
    """A jitted train step whose outputs keep the placement of its inputs.

    Left to itself XLA may hand back the new parameters and optimizer state
    laid out differently from how they came in, and the next call would then
    compile again. Here the step is compiled with ``out_shardings`` equal to
    the shardings of the trainable leaves and optimizer state it is called with
    (one compiled step per distinct placement); the state's unplaced scalars are
    replicated, so the second call reuses the first call's executable. On a
    mesh the gradients are constrained to the parameters' shardings, so FSDP
    reduces them straight into each device's block (a reduce-scatter) instead
    of leaving a whole gradient on every device.
    """

    def __init__(self, loss_fn: Callable, tx: optax.GradientTransformation, *, has_aux: bool,
                 donate: Donate | bool, trainable: Trainable, metrics: bool,
                 count_tokens: Callable[..., Any], micro_batches: int = 1,
                 loss_weight: Callable[..., Any] | None = None):
        self._loss_fn = loss_fn
        self._micro_batches = micro_batches
        self._loss_weight = loss_weight
        self._tx = tx
        self._has_aux = has_aux
        self._donate = donated_args(donate)
        self._trainable = trainable
        self._metrics = metrics
        self._count_tokens = count_tokens
        self._jitted: dict[tuple, Callable] = {}
        self._calls = 0
        self._pending: tuple[int, jax.Array, Any] | None = None

    def _flags(self, arrays: Any, opt_state: Any) -> list[bool]:
        """Per array leaf: is it trained (inexact, and selected by ``trainable``, or by
        default: the adapters if the model holds any, within a packed optimizer's selection)."""
        with_paths = jax.tree_util.tree_flatten_with_path(arrays)[0]
        paths = [path for path, _ in with_paths]
        adapters = None
        if self._trainable is not None:
            flags = trainable_flags(paths, self._trainable)
        else:
            chosen = _packed_trainable(opt_state)
            flags = [True] * len(paths) if chosen is None else [
                jax.tree_util.keystr(path) in chosen for path in paths]
            adapters = adapter_mask(arrays)
            if adapters is not None:
                flags = [f and a for f, a in zip(flags, jax.tree.leaves(adapters), strict=True)]
        flags = [flag and jnp.issubdtype(x.dtype, jnp.inexact)
                 for flag, (_, x) in zip(flags, with_paths, strict=True)]
        if with_paths and not any(flags):
            raise ConfigError(
                "make_train_step: no leaf of the model is trainable (trainable= or the packed "
                "optimizer's trainable= selects no floating-point array"
                + ("; the model holds adapters, so by default only they train: pass "
                   "trainable= to make_train_step to train other leaves" if adapters is not None
                   else "") + "), so a step would change nothing")
        return flags

    def _step(self, trainable: Any, opt_state: Any, frozen: Any, static: Any, mask: Any,
              batch: tuple, kwargs: dict, grad_shardings: Any) -> tuple:
        def loss_of(trainable, *batch, **kwargs):
            return self._loss_fn(eqx.combine(trainable, frozen, static), *batch, **kwargs)

        if self._micro_batches > 1:
            value, grads = accumulated_value_and_grad(
                loss_of, self._micro_batches, self._loss_weight, has_aux=self._has_aux,
                grad_shardings=grad_shardings)(trainable, batch, kwargs)
        else:
            value, grads = jax.value_and_grad(loss_of, has_aux=self._has_aux)(
                trainable, *batch, **kwargs)
        if grad_shardings is not None:
            grads = jax.lax.with_sharding_constraint(grads, grad_shardings)
        # the optimizer sees the whole params tree; frozen leaves get zero gradients
        # and their updates are dropped (both vanish from the compiled step)
        full_grads = eqx.combine(grads, jax.tree.map(jnp.zeros_like, frozen))
        params = eqx.combine(trainable, frozen)
        updates, new_state = self._tx.update(full_grads, opt_state, params)
        updates = eqx.filter(updates, mask)
        loss, aux = value if self._has_aux else (value, None)
        finite = finite_flags(loss, grads, updates)
        ok = jnp.all(finite)
        # a non-finite step keeps the model and the optimizer state as they came in
        trainable = keep_if(ok, eqx.apply_updates(trainable, updates), trainable)
        opt_state = keep_if(ok, new_state, opt_state)
        if not self._metrics:
            return trainable, opt_state, value, finite
        metrics = StepMetrics(loss, optax.tree.norm(grads), _learning_rate(opt_state),
                              self._count_tokens(*batch, **kwargs), ~ok)
        return trainable, opt_state, (metrics, aux) if self._has_aux else metrics, finite

    def prepare(self, model: Any, opt_state: Any, copy: list[bool] | None = None
                ) -> tuple[Callable, tuple]:
        """The jitted step for this model structure and placement, and its arguments
        ``(trainable, opt_state, frozen, static)`` (unplaced leaves placed): call it as
        ``step(trainable, opt_state, frozen, batch, kwargs)``; it returns ``(trainable,
        opt_state, out, finite)``. Trainable leaves flagged in ``copy`` (one flag per array
        leaf of ``model``) are copied."""
        arrays, static = eqx.partition(model, _is_array_like)
        flags = self._flags(arrays, opt_state)
        if copy is not None:
            arrays = copy_where(arrays, [f and c for f, c in zip(flags, copy, strict=True)])
        flag_iter = iter(flags)
        mask = jax.tree.map(lambda _: next(flag_iter), arrays)
        trainable, frozen = eqx.partition(arrays, mask)
        shardings = _placements((trainable, opt_state, frozen))
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

            def step(trainable, opt_state, frozen, batch, kwargs):
                return self._step(trainable, opt_state, frozen, static, mask, batch, kwargs,
                                  grad_shardings)

            self._jitted[key] = jax.jit(step, donate_argnums=self._donate,
                                        out_shardings=(*shardings[:2], None, None))
        # frozen leaves go in as they are: they are not outputs, and the caller's model
        # must get the very same arrays back
        placed = jax.tree.map(_place, (trainable, opt_state), shardings[:2])
        frozen = jax.tree.map(lambda x, s: _place(x, s) if isinstance(x, jax.ShapeDtypeStruct)
                              else x, frozen, shardings[2])
        return self._jitted[key], (*placed, frozen, static)

    def __call__(self, model: Any, opt_state: optax.OptState, *batch: Any, **kwargs: Any
                 ) -> tuple:
        """One step: ``(model, opt_state, out)``, where ``out`` is

        - ``loss`` (``metrics=False``, ``has_aux=False``),
        - ``(loss, aux)`` (``has_aux=True``),
        - a :class:`StepMetrics` (``metrics=True``), or ``(StepMetrics, aux)`` with both.

        ``batch`` and ``kwargs`` go to ``loss_fn(model, *batch, **kwargs)`` (arrays or
        pytrees of arrays). The returned model holds the new trainable leaves and the
        very same frozen arrays that came in. A step whose loss, gradient or update is
        not finite returns the model and optimizer state unchanged (``StepMetrics.skipped``);
        the next call, once that step is done, warns naming it and what was not finite.
        """
        copy = None
        if self._donate:  # a donated buffer must back nothing else among the arguments
            opt_state = copy_where(opt_state, aliased(opt_state, model, batch, kwargs))
            if 0 in self._donate:
                copy = [c for c, x in zip(aliased(model, opt_state, batch, kwargs),
                                          jax.tree.leaves(model), strict=True)
                        if _is_array_like(x)]
        step, (trainable, opt_state, frozen, static) = self.prepare(model, opt_state, copy)
        structure = jax.tree.structure(trainable)
        trainable, opt_state, out, finite = step(trainable, opt_state, frozen, batch, kwargs)
        self._calls += 1
        self._report()  # the previous step's, while this one runs
        self._pending = (self._calls, finite, structure)
        return eqx.combine(trainable, frozen, static), opt_state, out

    def _report(self) -> None:
        """Warn if the previous call's step was skipped (waits for that step only)."""
        if self._pending is None:
            return
        call, finite, structure = self._pending
        self._pending = None
        finite = np.asarray(finite)
        if not finite.all():
            warnings.warn(f"make_train_step: step {call} (counting this step function's "
                          f"calls from 1) was skipped, the model and optimizer state kept as "
                          f"they were: {why_skipped(finite, structure)}", RuntimeWarning,
                          stacklevel=3)

    def lower(self, model: Any, opt_state: optax.OptState, *batch: Any, **kwargs: Any
              ) -> jax.stages.Lowered:
        """The lowered step for these arguments (``.compile()``, ``.as_text()``); any
        argument may be given by its shape (``jax.ShapeDtypeStruct``, ``jax.eval_shape``)."""
        step, (trainable, opt_state, frozen, _) = self.prepare(model, opt_state)
        return step.lower(trainable, opt_state, frozen, batch, kwargs)

    def compile(self, model: Any, opt_state: optax.OptState, *batch: Any, **kwargs: Any
                ) -> jax.stages.Compiled:
        """Compile the step for arguments of these shapes and placements, ahead of the call.

        The first call with arguments like these then runs at once (JAX's jit cache
        holds the executable). The arguments may be shapes only (``jax.eval_shape`` of
        the state), so a restarted job compiles, or loads from the persistent cache,
        while its checkpoint is still being read
        (:meth:`jaxlean.train.checkpoint.Checkpointer.restore_in_background`).
        """
        return self.lower(model, opt_state, *batch, **kwargs).compile()


def make_train_step(loss_fn: Callable[..., Any], tx: optax.GradientTransformation, *,
                    has_aux: bool = False, donate: Donate | bool = "state",
                    trainable: Trainable = None, metrics: bool = False,
                    count_tokens: Callable[..., Any] = count_integer_elements,
                    micro_batches: int = 1, loss_weight: Callable[..., Any] | None = None
                    ) -> TrainStep:
    """``step(model, opt_state, *batch, **kwargs) -> (model, opt_state, out)``, jitted.

    ``loss_fn(model, *batch, **kwargs)`` returns a scalar (or ``(scalar, aux)``
    with ``has_aux=True``); the model is any pytree: its trainable array leaves
    are differentiated and updated, its frozen ones are passed through untouched
    and its other leaves (activation functions, static fields) are compiled in.
    ``out`` is the loss, ``(loss, aux)``, a :class:`StepMetrics` or
    ``(StepMetrics, aux)`` (see :meth:`TrainStep.__call__`). The step compiles
    once per structure and placement of the model and optimizer state (see
    :class:`TrainStep`); ``step.lower(...)`` gives its HLO.

    A step whose loss, gradient or optimizer update holds a NaN or infinity (an
    out-of-range token id, a NaN learning rate) is not applied: the model and the
    optimizer state come back as they went in (new arrays under donation), the
    loss is returned as computed, ``StepMetrics.skipped`` is True, and the next
    call warns (``RuntimeWarning``) naming the step and the pytree paths that
    were not finite.

    Args:
        loss_fn: the loss; bind options with ``functools.partial`` or pass batch
            arrays by keyword (``step(m, s, x, y, attention_mask=am)``).
        tx: the optimizer, e.g. ``packed(optax.adamw(3e-4), trainable=is_lora_path)``;
            its state comes from ``tx.init`` of the model's arrays.
        has_aux: ``loss_fn`` returns ``(loss, aux)``; the step returns both.
        donate: which inputs' buffers the step reuses for its outputs (a donated
            array is deleted: using it afterwards raises "Array has been deleted").
            ``"state"`` (default): the optimizer state passed in, so rebind it
            (``model, state, out = step(model, state, ...)``) and copy it first
            (``jax.tree.map(jnp.copy, state)``) to keep it; no array of the model
            is ever deleted, whoever else holds it. ``"all"``: also the trainable
            leaves of the model passed in, saving their memory in a full
            fine-tune; every holder of those arrays loses them (the model passed
            in, a reference model sharing them, e.g. one built by ``add_lora``
            when its base trains), so use it only when nothing else needs them.
            ``"none"`` (or False): nothing. Frozen leaves are never donated, and
            a donated buffer that also backs another argument of the call (the
            same array twice, a ``jax.device_put`` alias) is copied first.
        trainable: which leaves train, as in :func:`jaxlean.train.packed.packed`
            (pytree of bools, predicate on the key path). None: the arrays inside
            adapters when the model holds any (a pytree node whose type sets
            ``jaxlean_adapter = True``, as :class:`jaxlean.models.lm.lora.LoRA`
            does: PEFT's frozen base), else every floating-point leaf; either way
            only those a ``packed`` optimizer in the state selects. Pass
            ``trainable=`` to train the base of a model with adapters too.
        metrics: return a :class:`StepMetrics` (loss, gradient norm, learning rate
            of an ``optax.inject_hyperparams`` schedule, tokens, skipped) instead of
            the loss.
        count_tokens: ``count_tokens(*batch, **kwargs)`` gives ``StepMetrics.tokens``
            (default :func:`count_integer_elements`: the element count of the first
            integer batch argument, padding included; a language model's counts
            ``attention_mask``: :func:`jaxlean.models.lm.tokens.count_tokens`).
        micro_batches: gradient accumulation: split every batch array's leading axis
            into this many micro-batches (micro-batch ``i`` holds rows ``i::k``) and
            run the loss and gradient on one at a time in a ``lax.scan`` (compiled once
            whatever the count; one micro-batch's activations alive at a time). Their
            gradients combine to the full batch's and there is one optimizer update
            (see :func:`jaxlean.train.accumulate.accumulated_value_and_grad`; scalars
            in ``batch``/``kwargs`` go to every micro-batch). 1: no split.
        loss_weight: with ``micro_batches > 1``, required: ``loss_weight(*batch,
            **kwargs)`` on a micro-batch gives the normaliser its mean loss divides by
            (for a language model's :func:`~jaxlean.models.lm.causal_loss.loss`, its
            :func:`~jaxlean.models.lm.causal_loss.loss_tokens`: the tokens with a
            label). Micro-batches are weighted by it, so the loss and gradient equal
            the full batch's even when padding or ``-100`` labels fall unevenly; for a
            loss averaged over examples none of which is masked, ``lambda *a, **k: 1``.
            With ``has_aux``, scalar aux leaves are weighted likewise and aux leaves
            with a leading axis come back as the full batch's rows.

    Raises:
        ConfigError: ``donate`` is not one of the values above; ``micro_batches`` is not
            a positive integer, or is above 1 without ``loss_weight``; (at the first call)
            no leaf is trainable; a non-array leaf of the model is not hashable.
        DataError: (at the first call) ``micro_batches`` does not divide a batch array's
            leading axis, or the batch arrays' leading axes differ.
    """
    micro_batches = as_int(micro_batches, "make_train_step: micro_batches", minimum=1)
    if micro_batches > 1 and loss_weight is None:
        raise ConfigError(
            f"make_train_step: micro_batches={micro_batches} needs loss_weight=, the function "
            f"giving a micro-batch's loss normaliser (called like loss_fn without the model), "
            f"so that the micro-batches' mean losses combine to the full batch's: "
            f"jaxlean.models.lm.causal_loss.loss_tokens for the language-model loss, "
            f"lambda *a, **k: 1 for a mean over examples none of which is masked")
    if loss_weight is not None and not callable(loss_weight):
        raise ConfigError(f"make_train_step: loss_weight must be a function of the batch, "
                          f"got {type(loss_weight).__name__}")
    return TrainStep(loss_fn, tx, has_aux=has_aux, donate=donate, trainable=trainable,
                     metrics=metrics, count_tokens=count_tokens, micro_batches=micro_batches,
                     loss_weight=loss_weight)
