"""The training loop of :func:`~jaxlean.train.fit.fit`: epochs x minibatches in one ``while_loop``.

:func:`build` checks the options, plans the packing and initialises the
optimizer; :func:`run` is the whole run as one function of a :class:`Carry`
(an outer ``while_loop`` over epochs, :func:`run_epoch`, around an inner one
over minibatches, :func:`train_step`). Every option that shapes the program is
in a :class:`LoopSpec`, bound with ``functools.partial``, so the traced function
is ``run`` itself and ``jit`` names it ``jit(run)``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlean.compile.quick import quick_compile_options
from jaxlean.errors import ConfigError, DataError
from jaxlean.train._groups import Trainable
from jaxlean.train._layout import PackedLayout
from jaxlean.train.packed import packed, update_buffers

__all__ = ["Carry", "LoopSpec", "LossFn", "Program", "TrainOutput", "build", "data_size",
           "finished", "init_carry", "output", "run", "run_epoch", "train_step"]

LossFn = Callable[[Any, Any], jax.Array]


class TrainOutput(NamedTuple):
    """What the function of :func:`~jaxlean.train.fit.make_train_fn` returns (all device arrays).

    Attributes:
        params: final params (the best epoch's when ``patience`` is set), ordinary pytree.
        train_loss: mean minibatch loss per epoch, ``[epochs]``; NaN after the last epoch run.
        val_loss: validation loss per epoch, ``[epochs]``; NaN where not computed.
        epochs_run: number of epochs run.
        best_epoch: epoch of the lowest monitored loss (val if given, else train).
        bad_step: global step whose loss was not finite, or -1.
        bad_in_validation: whether that non-finite loss was the validation loss.
    """

    params: Any
    train_loss: jax.Array
    val_loss: jax.Array
    epochs_run: jax.Array
    best_epoch: jax.Array
    bad_step: jax.Array
    bad_in_validation: jax.Array


class Carry(NamedTuple):
    """The loop's whole state between epochs (what a checkpoint saves)."""

    theta: Any
    opt_state: Any
    best_theta: Any
    epoch: jax.Array
    train_hist: jax.Array
    val_hist: jax.Array
    best_loss: jax.Array
    best_epoch: jax.Array
    since_best: jax.Array
    bad_step: jax.Array
    bad_in_validation: jax.Array


@dataclasses.dataclass(frozen=True)
class LoopSpec:
    """Everything static the loop is traced with (``tx`` is the plain transformation)."""

    loss_fn: LossFn
    tx: optax.GradientTransformation
    layout: PackedLayout
    pack: bool
    epochs: int
    size: int
    batch_size: int
    steps_per_epoch: int
    log_every: int
    patience: int | None
    on_step: Callable[[int, int, float], None] | None
    on_epoch: Callable[[int, float, float], None] | None

    def loss_and_grad(self, theta: Any, frozen: Any, batch: Any) -> tuple[jax.Array, Any]:
        """The loss of the merged params on ``batch`` and its gradient by the trained leaves."""
        return jax.value_and_grad(
            lambda t: self.loss_fn(self.layout.merge(t, frozen), batch))(theta)


@dataclasses.dataclass(frozen=True)
class Program:
    """The training run as one function of a carry, so it can stop at any epoch and go on later.

    ``run(carry, stop_epoch, frozen, data, val_data, key)`` runs epochs from
    ``carry`` until ``carry.epoch`` reaches the traced ``stop_epoch`` (or
    early stopping or a non-finite loss ends the run) and returns the carry and
    its :class:`TrainOutput`: one compiled program serves a whole run, its
    result included, and every segment of a checkpointed one, so both execute
    the same loop body on the same carry values. ``init`` builds the first
    carry on the host (NumPy), so nothing compiles on the way to the loop but
    the optimizer's ``init``.
    """

    init: Callable[[Any, Any], Carry]
    run: Callable[..., tuple[Carry, TrainOutput]]
    layout: PackedLayout
    theta: Any
    frozen: Any
    opt_state: Any
    steps_per_epoch: int


def data_size(data: Any, name: str) -> int:
    """The common leading size of every leaf of ``data``; DataError naming paths otherwise."""
    leaves = jax.tree_util.tree_flatten_with_path(data)[0]
    if not leaves:
        raise DataError(f"{name} has no array leaves")
    sizes = {}
    for path, leaf in leaves:
        shape = np.shape(leaf)
        if not shape:
            raise DataError(f"{name}{jax.tree_util.keystr(path)} is a scalar; "
                            "every leaf needs a leading example axis")
        sizes[jax.tree_util.keystr(path) or "<root>"] = shape[0]
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{name}{path}: {size}" for path, size in sizes.items())
        raise DataError(f"{name} leaves have different leading sizes ({listed})")
    return next(iter(sizes.values()))


def _check_options(epochs: int, batch_size: int, patience: int | None,
                   log_every: int | None) -> None:
    options = [("epochs", epochs), ("batch_size", batch_size)]
    if log_every is not None:
        options.append(("log_every", log_every))
    for option, value in options:
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ConfigError(f"{option} must be a positive integer, got {value!r}")
    if patience is not None and (not isinstance(patience, (int, np.integer)) or patience < 1):
        raise ConfigError(f"patience must be a positive integer or None, got {patience!r}")


def build(
    loss_fn: LossFn, params: Any, data: Any, tx: optax.GradientTransformation, *, epochs: int,
    batch_size: int, val_data: Any, patience: int | None, log_every: int | None,
    trainable: Trainable, pack: bool, on_step: Callable[[int, int, float], None] | None,
    on_epoch: Callable[[int, float, float], None] | None,
) -> Program:
    """The pieces of :func:`~jaxlean.train.fit.make_train_fn`'s function (arguments as there)."""
    _check_options(epochs, batch_size, patience, log_every)
    size = data_size(data, "data")
    if val_data is not None:
        data_size(val_data, "val_data")
    if batch_size > size:
        raise DataError(f"batch_size {batch_size} is larger than the data ({size} examples)")
    steps_per_epoch = size // batch_size
    log_every = log_every or max(1, math.ceil(epochs * steps_per_epoch / 50))

    layout = PackedLayout.plan(params, trainable)
    frozen = layout.frozen(params)
    theta = layout.select(params)
    # One small program (eagerly, packing and every state leaf's zeros would each compile),
    # run once: not worth XLA's optimisation.
    opt_state = jax.jit((packed(tx) if pack else tx).init,
                        compiler_options=quick_compile_options())(theta)
    spec = LoopSpec(loss_fn, tx, layout, pack, epochs, size, batch_size, steps_per_epoch,
                    log_every, patience, on_step, on_epoch)
    return Program(functools.partial(init_carry, spec), functools.partial(run, spec), layout,
                   theta, frozen, opt_state, steps_per_epoch)


def init_carry(spec: LoopSpec, theta: Any, opt_state: Any) -> Carry:
    """The first carry, built on the host (NumPy): nothing compiles for it."""
    nan_hist = np.full((spec.epochs,), np.nan, np.float32)
    carry = (np.int32(0), nan_hist, nan_hist, np.float32(np.inf), np.int32(0), np.int32(0),
             np.int32(-1), np.bool_(False))
    return Carry(theta, opt_state, theta if spec.patience is not None else None,
                 *jax.device_put(carry))


def run(spec: LoopSpec, carry: Carry, stop_epoch: Any, frozen: Any, data: Any, val_data: Any,
        key: jax.Array) -> tuple[Carry, TrainOutput]:
    """Epochs from ``carry`` until ``stop_epoch`` (traced), early stopping or a non-finite loss."""

    def keep_going(carry: Carry) -> jax.Array:
        go = (carry.epoch < stop_epoch) & (carry.bad_step < 0)
        if spec.patience is not None:
            go &= carry.since_best < spec.patience
        return go

    epoch = functools.partial(run_epoch, spec, frozen, data, val_data, key)
    final = jax.lax.while_loop(keep_going, epoch, carry)
    return final, output(final, spec.layout, frozen, spec.patience)


def run_epoch(spec: LoopSpec, frozen: Any, data: Any, val_data: Any, key: jax.Array,
              carry: Carry) -> Carry:
    """One epoch: every minibatch of a fresh permutation, then validation and best tracking."""
    order = jax.random.permutation(jax.random.fold_in(key, carry.epoch), spec.size)
    # With ``pack``, the epoch's loop carries the trainable params as the optimizer
    # state's buffers too: a handful of arrays, unpacked only where the loss reads them.
    packing = carry.opt_state.layout if spec.pack else None
    step = functools.partial(train_step, spec, packing, frozen, data, order, carry.epoch)
    weights = packing.pack(carry.theta) if spec.pack else carry.theta
    weights, opt_state, _, loss_sum, bad_step = jax.lax.while_loop(
        lambda inner: (inner[2] < spec.steps_per_epoch) & (inner[4] < 0),
        step,
        (weights, carry.opt_state, jnp.int32(0), jnp.float32(0), carry.bad_step),
    )
    theta = packing.unpack(weights) if spec.pack else weights
    train_loss = loss_sum / spec.steps_per_epoch
    val_loss = jnp.float32(jnp.nan)
    monitored = train_loss
    bad_in_validation = carry.bad_in_validation
    if val_data is not None:
        val_loss = spec.loss_fn(spec.layout.merge(theta, frozen), val_data).astype(jnp.float32)
        monitored = val_loss
        val_bad = (bad_step < 0) & ~jnp.isfinite(val_loss)
        bad_in_validation = val_bad
        last_step = (carry.epoch + 1) * spec.steps_per_epoch - 1
        bad_step = jnp.where(val_bad, last_step, bad_step)
    if spec.on_epoch is not None:
        jax.debug.callback(spec.on_epoch, carry.epoch, train_loss, val_loss)
    improved = monitored < carry.best_loss
    best_theta = carry.best_theta
    if spec.patience is not None:
        best_theta = jax.tree.map(lambda new, old: jnp.where(improved, new, old),
                                  theta, best_theta)
    return Carry(
        theta=theta,
        opt_state=opt_state,
        best_theta=best_theta,
        epoch=carry.epoch + 1,
        train_hist=carry.train_hist.at[carry.epoch].set(train_loss),
        val_hist=carry.val_hist.at[carry.epoch].set(val_loss),
        best_loss=jnp.where(improved, monitored, carry.best_loss),
        best_epoch=jnp.where(improved, carry.epoch, carry.best_epoch),
        since_best=jnp.where(improved, 0, carry.since_best + 1),
        bad_step=bad_step,
        bad_in_validation=bad_in_validation,
    )


def train_step(spec: LoopSpec, packing: PackedLayout | None, frozen: Any, data: Any,
               order: jax.Array, epoch: jax.Array, inner: tuple) -> tuple:
    """One minibatch: the loss and gradient, the optimizer's update, a non-finite check."""
    weights, opt_state, i, loss_sum, bad_step = inner
    index = jax.lax.dynamic_slice_in_dim(order, i * spec.batch_size, spec.batch_size)
    # Indices are in bounds: "clip" gathers without the masking of "fill".
    batch = jax.tree.map(lambda x: jnp.take(x, index, axis=0, mode="clip"), data)
    if spec.pack:
        loss, grads = spec.loss_and_grad(packing.unpack(weights), frozen, batch)
        updates, opt_state = update_buffers(spec.tx, opt_state, packing.pack(grads), weights)
    else:
        loss, grads = spec.loss_and_grad(weights, frozen, batch)
        updates, opt_state = spec.tx.update(grads, opt_state, weights)
    weights = optax.apply_updates(weights, updates)
    global_step = epoch * spec.steps_per_epoch + i
    if spec.on_step is not None:
        report = lambda: jax.debug.callback(spec.on_step, global_step, epoch, loss)
        jax.lax.cond((global_step + 1) % spec.log_every == 0, report, lambda: None)
    bad_step = jnp.where(jnp.isfinite(loss), bad_step, global_step)
    return weights, opt_state, i + 1, loss_sum + loss.astype(jnp.float32), bad_step


def output(carry: Carry, layout: PackedLayout, frozen: Any, patience: int | None) -> TrainOutput:
    """The :class:`TrainOutput` of a finished carry: the best params with ``patience``, else
    the last (no arithmetic: also outside a program, for a run resumed at its end)."""
    result = carry.best_theta if patience is not None else carry.theta
    trained = layout.strip_static(layout.merge(result, frozen))
    return TrainOutput(trained, carry.train_hist, carry.val_hist, carry.epoch,
                       carry.best_epoch, carry.bad_step, carry.bad_in_validation)


def finished(carry: Carry, epochs: int, patience: int | None) -> bool:
    """Whether the loop of ``carry`` has ended (all epochs, early stop, non-finite loss)."""
    return (int(carry.epoch) >= epochs or int(carry.bad_step) >= 0
            or (patience is not None and int(carry.since_best) >= patience))
