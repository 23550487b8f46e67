"""The training loop of :func:`~jaxlean.train.fit.fit`: epochs x minibatches in one ``while_loop``.

:func:`build` checks the options, plans the packing and initialises the
optimizer; :func:`run` is the whole run as one function of a :class:`Carry`
and a :class:`Position` (an outer ``while_loop`` over epochs, :func:`run_epoch`,
around an inner one over minibatches, :func:`train_step`). It stops at a traced
global step, also inside an epoch, and goes on from there when called again, so
one compiled program serves a whole run in one call, in checkpointed segments,
or in short chunks between which the host reports progress: the program has no
host callback of its own (JAX's persistent cache refuses programs with one).
Every option that shapes the program is in a :class:`LoopSpec`, bound with
``functools.partial``, so the traced function is ``run`` itself and ``jit`` names
it ``jit(run)``.
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
from jaxlean.train._adapters import adapter_mask
from jaxlean.train._groups import Trainable
from jaxlean.train._layout import PackedLayout
from jaxlean.train.packed import packed, update_buffers

__all__ = ["Carry", "LoopSpec", "LossFn", "Position", "Program", "TrainOutput", "build",
           "data_size", "finished", "init_carry", "output", "run", "run_epoch", "start",
           "train_step"]

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


class Position(NamedTuple):
    """Where inside ``carry.epoch`` a call of :func:`run` stopped (not checkpointed: checkpoints
    are taken between epochs, where it is :func:`start`).

    Attributes:
        step: minibatches of the epoch already run.
        loss_sum: the sum of their losses (float32).
        loss: the loss of the last step run (NaN before the first), for progress.
    """

    step: jax.Array
    loss_sum: jax.Array
    loss: jax.Array


def start(size: int) -> tuple[Position, jax.Array]:
    """The position at the start of an epoch and a placeholder for the epoch's order of
    ``size`` examples (the loop draws it there), on the device (committed, as :func:`run`'s
    outputs are), made without compiling anything."""
    values = (np.int32(0), np.float32(0), np.float32(np.nan), np.zeros((size,), np.int32))
    *position, order = jax.device_put(values)
    return Position(*position), order


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
    """The training run as one function of a carry, so it can stop at any step and go on later.

    ``run(carry, position, order, stop_step, frozen, data, val_data, key)`` runs steps
    from ``carry`` and ``position`` until the global step (``epoch x
    steps_per_epoch + position.step``) reaches the traced ``stop_step`` (or early
    stopping or a non-finite loss ends the run) and returns the new carry,
    position and order (:func:`run`): one compiled program serves a whole run, every segment of a
    checkpointed one and every chunk of a run that reports progress, so all
    execute the same loop body on the same values. ``init`` builds the first
    carry on the host (NumPy), so nothing compiles on the way to the loop but
    the optimizer's ``init``.
    """

    init: Callable[[Any, Any], Carry]
    run: Callable[..., tuple[Carry, Position, jax.Array]]
    layout: PackedLayout
    theta: Any
    frozen: Any
    opt_state: Any
    steps_per_epoch: int
    patience: int | None
    log_every: int
    size: int

    def start(self) -> tuple[Position, jax.Array]:
        """:func:`start` for this program's data."""
        return start(self.size)

    def output(self, carry: Carry) -> TrainOutput:
        """:func:`output` of a finished carry of this program."""
        return output(carry, self.layout, self.frozen, self.patience)


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

    layout = PackedLayout.plan(params, adapter_mask(params) if trainable is None else trainable)
    frozen = layout.frozen(params)
    theta = layout.select(params)
    # One small program (eagerly, packing and every state leaf's zeros would each compile),
    # run once: not worth XLA's optimisation.
    opt_state, theta = _settled_init(tx, pack, theta)
    spec = LoopSpec(loss_fn, tx, layout, pack, epochs, size, batch_size, steps_per_epoch,
                    log_every, patience, on_step, on_epoch)
    return Program(functools.partial(init_carry, spec), functools.partial(run, spec), layout,
                   theta, frozen, opt_state, steps_per_epoch, patience, log_every, size)


def _settled_init(tx: optax.GradientTransformation, pack: bool, theta: Any) -> tuple[Any, Any]:
    """The optimizer's initial state, and ``theta``, typed as the loop gives them back.

    The loop returns its carry strongly typed where a step makes it so (every trained
    leaf, and state leaves an update computes), so a weakly typed leaf going in
    (``jnp.array(0.5)``) would give the second call of the loop another signature,
    and a second compile. Those leaves are made strong here, in the one jitted ``init``
    program; the loop computes the same either way (``while_loop`` makes them strong).
    """
    init = packed(tx).init if pack else tx.init
    leaves, treedef = jax.tree_util.tree_flatten(theta)
    weak = [_weak(x) for x in leaves]

    def init_fn(theta):
        state = init(theta)
        strong = jax.tree.map(lambda x: x.astype(x.dtype) if _weak(x) else x, theta)
        if any(_weak(x) for x in jax.tree.leaves(state)):
            if pack:
                step = lambda s, t: update_buffers(tx, s, s.layout.pack(t), s.layout.pack(t))
            else:
                step = lambda s, t: tx.update(t, s, t)
            after = jax.eval_shape(step, state, strong)[1]
            state = jax.tree.map(lambda x, a: x.astype(x.dtype) if _weak(x) and not a.weak_type
                                 else x, state, after)
        return state, [x for x, w in zip(jax.tree.leaves(strong), weak, strict=True) if w]

    state, made_strong = jax.jit(init_fn, compiler_options=quick_compile_options())(theta)
    made_strong = iter(made_strong)
    leaves = [next(made_strong) if w else x for x, w in zip(leaves, weak, strict=True)]
    return state, jax.tree_util.tree_unflatten(treedef, leaves)


def _weak(x: Any) -> bool:
    return bool(getattr(x, "weak_type", False))


def init_carry(spec: LoopSpec, theta: Any, opt_state: Any) -> Carry:
    """The first carry, built on the host (NumPy): nothing compiles for it."""
    nan_hist = np.full((spec.epochs,), np.nan, np.float32)
    carry = (np.int32(0), nan_hist, nan_hist, np.float32(np.inf), np.int32(0), np.int32(0),
             np.int32(-1), np.bool_(False))
    return Carry(theta, opt_state, theta if spec.patience is not None else None,
                 *jax.device_put(carry))


def run(spec: LoopSpec, carry: Carry, position: Position, order: jax.Array, stop_step: Any,
        frozen: Any, data: Any, val_data: Any, key: jax.Array
        ) -> tuple[Carry, Position, jax.Array]:
    """Steps from ``carry`` and ``position`` until the global step reaches ``stop_step``
    (traced), early stopping or a non-finite loss.

    ``order`` is the current epoch's order of the examples when ``position`` is inside an
    epoch (the loop draws it at an epoch's start; carried, a call that starts inside an
    epoch does not draw it again); fit donates it.
    """

    def keep_going(state: tuple[Carry, Position, jax.Array]) -> jax.Array:
        carry, position, _ = state
        done = carry.epoch * spec.steps_per_epoch + position.step
        go = (done < stop_step) & (carry.bad_step < 0)
        if spec.patience is not None:
            go &= carry.since_best < spec.patience
        return go

    epoch = functools.partial(run_epoch, spec, stop_step, frozen, data, val_data, key)
    return jax.lax.while_loop(keep_going, epoch, (carry, position, order))


def run_epoch(spec: LoopSpec, stop_step: Any, frozen: Any, data: Any, val_data: Any,
              key: jax.Array, state: tuple[Carry, Position, jax.Array]
              ) -> tuple[Carry, Position, jax.Array]:
    """The minibatches of ``carry.epoch`` from ``position`` up to ``stop_step``; at the epoch's
    end (or a non-finite loss), validation and best tracking (:func:`_end_epoch`)."""
    carry, position, order = state
    order = jax.lax.cond(
        position.step == 0,
        lambda: jax.random.permutation(jax.random.fold_in(key, carry.epoch), spec.size)
        .astype(order.dtype),
        lambda: order)
    # With ``pack``, the epoch's loop carries the trainable params as the optimizer
    # state's buffers too: a handful of arrays, unpacked only where the loss reads them.
    packing = carry.opt_state.layout if spec.pack else None
    step = functools.partial(train_step, spec, packing, frozen, data, order, carry.epoch)
    end = jnp.minimum(spec.steps_per_epoch, stop_step - carry.epoch * spec.steps_per_epoch)
    weights = packing.pack(carry.theta) if spec.pack else carry.theta
    weights, opt_state, i, loss_sum, bad_step, loss = jax.lax.while_loop(
        lambda inner: (inner[2] < end) & (inner[4] < 0),
        step,
        (weights, carry.opt_state, position.step, position.loss_sum, carry.bad_step,
         position.loss),
    )
    theta = packing.unpack(weights) if spec.pack else weights
    carry = carry._replace(theta=theta, opt_state=opt_state, bad_step=bad_step)
    ended = (i >= spec.steps_per_epoch) | (bad_step >= 0)
    return jax.lax.cond(
        ended,
        lambda: (_end_epoch(spec, frozen, val_data, carry, loss_sum),
                 Position(jnp.int32(0), jnp.float32(0), loss), order),
        lambda: (carry, Position(i, loss_sum, loss), order),
    )


def _end_epoch(spec: LoopSpec, frozen: Any, val_data: Any, carry: Carry,
               loss_sum: jax.Array) -> Carry:
    """The carry after its epoch's last step: mean loss, validation, best params, counters."""
    theta, bad_step = carry.theta, carry.bad_step
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
        opt_state=carry.opt_state,
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
    weights, opt_state, i, loss_sum, bad_step, _ = inner
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
    loss = loss.astype(jnp.float32)
    return weights, opt_state, i + 1, loss_sum + loss, bad_step, loss


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
