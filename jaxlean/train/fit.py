"""fit(): a whole training run (epochs x minibatches) inside one jitted ``lax.while_loop``.

A Python loop of jitted steps pays a dispatch per step and, when the step is
written with a loop over modules and a per-leaf optimizer, a trace and
compile that grow with the model. :func:`fit` traces the step once, runs
every epoch (shuffling by key, validation, early stopping with best-params
restore) in one ``lax.while_loop`` and carries the parameters and the optimizer
state packed by :func:`jaxlean.train.packed`, so the state is a few arrays.
Progress reaches the host every ``log_every`` steps through ``jax.debug.callback``.

The loop runs from a carry to a traced stop epoch, so with ``checkpoint=``
:func:`fit` runs it in segments of ``checkpoint_every`` epochs, saves the
carry after each (:class:`~jaxlean.train.checkpoint.Checkpointer`) and, when
started again, goes on from the latest one with the same compiled program:
a requeued job ends with the result of an uninterrupted run.

:func:`make_train_fn` returns the jitted-to-be training function and its
arguments, for ahead-of-time compilation and benchmarks; ``pack=False``
builds the unpacked reference (plain optax state, one array per leaf and moment).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from concurrent import futures
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxlean.compile.quick import quick_compile_options
from jaxlean.errors import ConfigError, DataError, NonFiniteError
from jaxlean.train._adapters import adapter_mask
from jaxlean.train._groups import Trainable
from jaxlean.train._progress import ProgressBar
from jaxlean.train._resume import check_same_run, describe_run, resize_history, resumable_epochs
from jaxlean.train.checkpoint import Checkpointer
from jaxlean.train.packed import Layout, packed, update_buffers

LossFn = Callable[[Any, Any], jax.Array]

QUICK_COMPILE_MAX_STEPS = 32
"""``fit(quick_compile=None)`` compiles with :func:`quick_compile_options` when the run has
at most this many steps (``epochs`` x minibatches), no checkpoint and runs on XLA:CPU (where
the rule was measured; elsewhere it stays off unless asked). On the PMM chain at depth 16
quick compiling saves 1.46 s of compile and costs 13.7 ms per step, so it pays off for runs
of up to about 100 steps (``jaxlean bench first_epoch``, idle 2-core machine); in general,
for a run of this many steps, it pays off while a step takes less than about 1/30 of the
optimised compile."""


def resolve_quick_compile(quick_compile: bool | None, steps: int, checkpointed: bool,
                          platform: str) -> bool:
    """Whether ``fit`` compiles its loop with :func:`quick_compile_options`.

    ``None`` decides by the run's length (:data:`QUICK_COMPILE_MAX_STEPS`) on the ``"cpu"``
    platform, except with a checkpoint: a checkpointed run is off unless asked, so one
    extended by more epochs resumes with the same compiled loop.

    Raises:
        ConfigError: ``quick_compile`` is not True, False or None.
    """
    if quick_compile is None:
        return platform == "cpu" and not checkpointed and steps <= QUICK_COMPILE_MAX_STEPS
    if not isinstance(quick_compile, bool):
        raise ConfigError(f"quick_compile must be True, False or None, got {quick_compile!r}")
    return quick_compile


class TrainOutput(NamedTuple):
    """What the function of :func:`make_train_fn` returns (all device arrays).

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


@dataclasses.dataclass(frozen=True)
class History:
    """Per-epoch losses of a :func:`fit` run, trimmed to the epochs actually run.

    Attributes:
        train_loss: mean minibatch loss of each epoch (losses before each update).
        val_loss: validation loss after each epoch, or None without ``val_data``.
        best_epoch: epoch whose params were returned when ``patience`` is set.
        stopped_early: whether early stopping ended the run before ``epochs``.
        steps_per_epoch: minibatches per epoch (the last partial batch is dropped).
        resumed_epoch: the epoch a checkpointed run resumed at, or None when it
            started from ``params``.
    """

    train_loss: np.ndarray
    val_loss: np.ndarray | None
    best_epoch: int
    stopped_early: bool
    steps_per_epoch: int
    resumed_epoch: int | None = None


class _Carry(NamedTuple):
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


def _data_size(data: Any, name: str) -> int:
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


@dataclasses.dataclass(frozen=True)
class _Program:
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

    init: Callable[[Any, Any], _Carry]
    run: Callable[..., tuple[_Carry, TrainOutput]]
    layout: Layout
    theta: Any
    frozen: Any
    opt_state: Any
    steps_per_epoch: int


def _build(
    loss_fn: LossFn, params: Any, data: Any, tx: optax.GradientTransformation, *, epochs: int,
    batch_size: int, val_data: Any, patience: int | None, log_every: int | None,
    trainable: Trainable, pack: bool, on_step: Callable[[int, int, float], None] | None,
    on_epoch: Callable[[int, float, float], None] | None,
) -> _Program:
    """The pieces of :func:`make_train_fn`'s function (arguments as there)."""
    _check_options(epochs, batch_size, patience, log_every)
    size = _data_size(data, "data")
    if val_data is not None:
        _data_size(val_data, "val_data")
    if batch_size > size:
        raise DataError(f"batch_size {batch_size} is larger than the data ({size} examples)")
    steps_per_epoch = size // batch_size
    log_every = log_every or max(1, math.ceil(epochs * steps_per_epoch / 50))

    layout = Layout.plan(params, adapter_mask(params) if trainable is None else trainable)
    frozen = layout.frozen(params)
    theta = layout.select(params)
    to_params = layout.merge
    plain_tx = tx
    if pack:
        tx = packed(tx)
    # One small program (eagerly, packing and every state leaf's zeros would each compile),
    # run once: not worth XLA's optimisation.
    opt_state = jax.jit(tx.init, compiler_options=quick_compile_options())(theta)

    def init(theta, opt_state) -> _Carry:
        nan_hist = np.full((epochs,), np.nan, np.float32)
        carry = (np.int32(0), nan_hist, nan_hist, np.float32(np.inf), np.int32(0), np.int32(0),
                 np.int32(-1), np.bool_(False))
        return _Carry(theta, opt_state, theta if patience is not None else None,
                      *jax.device_put(carry))

    def run(carry: _Carry, stop_epoch, frozen, data, val_data, key
            ) -> tuple[_Carry, TrainOutput]:
        def loss_and_grad(theta, batch):
            return jax.value_and_grad(lambda t: loss_fn(to_params(t, frozen), batch))(theta)

        def run_epoch(carry: _Carry) -> _Carry:
            order = jax.random.permutation(jax.random.fold_in(key, carry.epoch), size)
            # With ``pack``, the epoch's loop carries the trainable params as the optimizer
            # state's buffers too: a handful of arrays, unpacked only where the loss reads them.
            packing = carry.opt_state.layout if pack else None

            def step(inner):
                weights, opt_state, i, loss_sum, bad_step = inner
                index = jax.lax.dynamic_slice_in_dim(order, i * batch_size, batch_size)
                # Indices are in bounds: "clip" gathers without the masking of "fill".
                batch = jax.tree.map(lambda x: jnp.take(x, index, axis=0, mode="clip"), data)
                if pack:
                    loss, grads = loss_and_grad(packing.unpack(weights), batch)
                    updates, opt_state = update_buffers(plain_tx, opt_state,
                                                        packing.pack(grads), weights)
                else:
                    loss, grads = loss_and_grad(weights, batch)
                    updates, opt_state = tx.update(grads, opt_state, weights)
                weights = optax.apply_updates(weights, updates)
                global_step = carry.epoch * steps_per_epoch + i
                if on_step is not None:
                    report = lambda: jax.debug.callback(on_step, global_step, carry.epoch, loss)
                    jax.lax.cond((global_step + 1) % log_every == 0, report, lambda: None)
                bad_step = jnp.where(jnp.isfinite(loss), bad_step, global_step)
                return weights, opt_state, i + 1, loss_sum + loss.astype(jnp.float32), bad_step

            weights = packing.pack(carry.theta) if pack else carry.theta
            weights, opt_state, _, loss_sum, bad_step = jax.lax.while_loop(
                lambda inner: (inner[2] < steps_per_epoch) & (inner[4] < 0),
                step,
                (weights, carry.opt_state, jnp.int32(0), jnp.float32(0), carry.bad_step),
            )
            theta = packing.unpack(weights) if pack else weights
            train_loss = loss_sum / steps_per_epoch
            val_loss = jnp.float32(jnp.nan)
            monitored = train_loss
            bad_in_validation = carry.bad_in_validation
            if val_data is not None:
                val_loss = loss_fn(to_params(theta, frozen), val_data).astype(jnp.float32)
                monitored = val_loss
                val_bad = (bad_step < 0) & ~jnp.isfinite(val_loss)
                bad_in_validation = val_bad
                last_step = (carry.epoch + 1) * steps_per_epoch - 1
                bad_step = jnp.where(val_bad, last_step, bad_step)
            if on_epoch is not None:
                jax.debug.callback(on_epoch, carry.epoch, train_loss, val_loss)
            improved = monitored < carry.best_loss
            best_theta = carry.best_theta
            if patience is not None:
                best_theta = jax.tree.map(lambda new, old: jnp.where(improved, new, old),
                                          theta, best_theta)
            return _Carry(
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

        def keep_going(carry: _Carry) -> jax.Array:
            go = (carry.epoch < stop_epoch) & (carry.bad_step < 0)
            if patience is not None:
                go &= carry.since_best < patience
            return go

        final = jax.lax.while_loop(keep_going, run_epoch, carry)
        return final, _output(final, layout, frozen, patience)

    return _Program(init, run, layout, theta, frozen, opt_state, steps_per_epoch)


def _output(carry: _Carry, layout: Layout, frozen: Any, patience: int | None) -> TrainOutput:
    """The :class:`TrainOutput` of a finished carry: the best params with ``patience``, else
    the last (no arithmetic: also outside a program, for a run resumed at its end)."""
    result = carry.best_theta if patience is not None else carry.theta
    trained = layout.strip_static(layout.merge(result, frozen))
    return TrainOutput(trained, carry.train_hist, carry.val_hist, carry.epoch,
                       carry.best_epoch, carry.bad_step, carry.bad_in_validation)


def _finished(carry: _Carry, epochs: int, patience: int | None) -> bool:
    """Whether the loop of ``carry`` has ended (all epochs, early stop, non-finite loss)."""
    return (int(carry.epoch) >= epochs or int(carry.bad_step) >= 0
            or (patience is not None and int(carry.since_best) >= patience))


def _as_restored(leaf: Any) -> Any:
    """The shape and placement a restored carry array has (restored arrays are committed);
    other leaves come back as they are."""
    if not isinstance(leaf, jax.Array):
        return leaf
    return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=leaf.sharding)


def _restore(checkpointer: Checkpointer, carry: _Carry, run_info: dict, epochs: int,
             while_reading: Callable[[_Carry], Any]) -> _Carry:
    """The latest checkpoint's carry, histories resized to ``epochs``, or ``carry`` if none.

    The arrays are read in the background while ``while_reading`` runs on the
    carry's shapes and placements (``fit`` compiles its loop for them meanwhile),
    unless the checkpoint is at the last epoch, where no loop is left to run.

    Raises:
        CheckpointError: the checkpoint belongs to another run (see :func:`check_same_run`),
            is past ``epochs``, or its leaves do not fit ``carry`` (names the pytree path).
    """
    step = checkpointer.latest_step()
    if step is None:
        return carry
    where, directory = f"{checkpointer.directory} step {step}", str(checkpointer.directory)
    saved = checkpointer.metadata(step)
    check_same_run(saved, run_info, where, directory)
    saved_epochs = resumable_epochs(saved, epochs, step, where, directory)
    nan_hist = np.full((saved_epochs,), np.nan, np.float32)
    pending = checkpointer.restore_in_background(
        carry._replace(train_hist=nan_hist, val_hist=nan_hist), step)
    try:
        if step < epochs:  # steps are epochs: a checkpoint at the last one has no loop left
            while_reading(jax.tree.map(_as_restored, carry))
    finally:
        futures.wait([pending])  # never leave a read running into the checkpointer's close
    restored = pending.result()
    sharding = carry.train_hist.sharding  # as the restored arrays: committed
    placed = lambda history: jax.device_put(resize_history(history, epochs), sharding)
    return restored._replace(train_hist=placed(restored.train_hist),
                             val_hist=placed(restored.val_hist))


def make_train_fn(
    loss_fn: LossFn,
    params: Any,
    data: Any,
    tx: optax.GradientTransformation,
    *,
    epochs: int,
    batch_size: int,
    key: jax.Array,
    val_data: Any = None,
    patience: int | None = None,
    log_every: int | None = None,
    trainable: Trainable = None,
    pack: bool = True,
    on_step: Callable[[int, int, float], None] | None = None,
    on_epoch: Callable[[int, float, float], None] | None = None,
) -> tuple[Callable[..., TrainOutput], tuple]:
    """The whole training run as one function ``fn(*args) -> TrainOutput``, not yet jitted.

    Non-array leaves of ``params`` (functions, Python scalars) come back as None
    in ``TrainOutput.params``, since a jitted function can only return arrays;
    :func:`fit` puts them back.

    ``jax.jit(fn)(*args)`` is what :func:`fit` runs; benchmarks AOT-compile it
    (``jax.jit(fn).trace(*args).lower().compile()``). With ``pack=True`` the
    loop runs ``packed(tx)`` (its state a few buffers; ``packed`` refuses a
    ``tx`` it cannot run exactly); with ``pack=False`` it is the unpacked
    reference: the same loop, same
    shuffling and the same losses, with ``tx`` on the pytree of trainable
    leaves (plain optax state, one array per leaf and moment).

    Shuffling: epoch ``e`` visits ``jax.random.permutation(jax.random.fold_in(key, e), n)``
    in consecutive slices of ``batch_size``; the last partial batch is dropped.

    Args:
        loss_fn: ``loss_fn(params, batch) -> scalar``; sees ordinary params and a
            batch shaped like ``data`` with leading size ``batch_size``.
        params: initial parameters (pytree; non-array leaves stay static).
        data: pytree of arrays sharing a leading example axis.
        tx: optax transformation.
        epochs, batch_size: loop sizes.
        key: PRNG key for shuffling.
        val_data: optional pytree evaluated as ``loss_fn(params, val_data)`` after each epoch.
        patience: stop after this many epochs without improvement of the
            validation loss (train loss without ``val_data``) and return the best params.
        log_every: steps between ``on_step`` calls (default: ~50 calls per run).
        trainable: which leaves train (pytree of bools or predicate on key path;
            None: only the adapters if ``params`` holds any, else every leaf).
        pack: ``packed(tx)`` (True) or plain ``tx``, the unpacked reference (False).
        on_step: host callback ``(step, epoch, loss)``; on_epoch: ``(epoch, train, val)``.

    Returns:
        ``(fn, args)``; ``fn(*args)`` returns a :class:`TrainOutput`.

    Raises:
        DataError: mismatched leading sizes (naming the paths), batch larger than data.
        ConfigError: non-positive sizes.
    """
    program = _build(loss_fn, params, data, tx, epochs=epochs, batch_size=batch_size,
                     val_data=val_data, patience=patience, log_every=log_every,
                     trainable=trainable, pack=pack, on_step=on_step, on_epoch=on_epoch)

    def train(theta, frozen, opt_state, data, val_data, key) -> TrainOutput:
        carry = program.init(theta, opt_state)
        return program.run(carry, epochs, frozen, data, val_data, key)[1]

    return train, (program.theta, program.frozen, program.opt_state, data, val_data, key)


def fit(
    loss_fn: LossFn,
    params: Any,
    data: Any,
    tx: optax.GradientTransformation,
    *,
    epochs: int,
    batch_size: int,
    key: jax.Array,
    val_data: Any = None,
    patience: int | None = None,
    log_every: int | None = None,
    progress: bool = True,
    trainable: Trainable = None,
    pack: bool = True,
    checkpoint: str | os.PathLike | Checkpointer | None = None,
    checkpoint_every: int = 1,
    quick_compile: bool | None = None,
) -> tuple[Any, History]:
    """Train ``params`` on ``data`` with ``tx``: every epoch inside one jitted ``while_loop``.

    Minibatches are drawn without replacement from a fresh permutation each
    epoch (see :func:`make_train_fn`); the last partial batch is dropped. The
    loop carries the params and the optimizer state of ``packed(tx)``;
    ``loss_fn`` sees ordinary params. With ``patience``, training stops after that many epochs
    without improvement of the validation loss (the train loss without
    ``val_data``) and the best epoch's params are returned.

    With ``checkpoint``, the loop's whole state (params, optimizer state, best
    params, epoch, histories, early-stopping counters) is saved there every
    ``checkpoint_every`` epochs and at the end, and a call that finds a
    checkpoint there continues from it: running the same call again after the
    job was killed (a requeue) gives the params and :class:`History` of an
    uninterrupted run, bit for bit; a finished run returns its result at once.
    A larger ``epochs`` continues the run: the result is that of a run started
    with the larger ``epochs`` (also after early stopping); a checkpoint already
    past ``epochs`` is refused. The checkpoint records the run's identity:
    ``tx`` (its transformations and settings, schedules included; values of
    unknown types by type only), shape, dtype and a content hash of every
    array of ``data`` and ``val_data``, ``batch_size``, ``key``, ``patience``,
    ``pack``, ``quick_compile``, the params' structure and trained and frozen leaves. A call that
    differs in any of them raises instead of resuming, naming it and both
    values (``loss_fn`` is not compared). A schedule built from ``epochs``
    changes with it, so extending such a run is refused by name. A run that
    hits a non-finite loss is not saved past its last good checkpoint, so a
    rerun raises the same error. Every run with the same ``quick_compile``,
    checkpointed or not, executes the same compiled loop.

    Args:
        loss_fn: ``loss_fn(params, batch) -> scalar`` loss.
        params: initial parameters (pytree; non-array leaves stay static).
        data: pytree of arrays sharing a leading example axis.
        tx: optax transformation (adam, adamw, chains with clipping and schedules).
        epochs: maximum number of passes over the data.
        batch_size: examples per step.
        key: PRNG key for shuffling.
        val_data: optional pytree; ``loss_fn(params, val_data)`` after each epoch.
        patience: epochs without improvement before stopping, or None.
        log_every: steps between progress updates (default: ~50 per run).
        progress: report steps and loss, "compiling" until the loop runs, and where a
            run resumed: a rich bar on a terminal, plain lines on stderr every
            ``$JAXLEAN_PROGRESS_INTERVAL`` seconds (default 10) otherwise; False: silent.
        trainable: pytree of bools or predicate on the key path; frozen leaves do not change.
            None: only the adapters (``add_lora``) if ``params`` holds any, else every leaf.
        pack: run ``packed(tx)``: optimizer state and, inside each epoch's loop,
            the trainable params in a few buffers (default). ``False`` runs plain
            optax on the pytree (``jaxlean bench optim`` compares both).
        checkpoint: a directory (a :class:`Checkpointer` keeping the last 3
            steps, written in the background) or a :class:`Checkpointer` to
            save to and resume from; None for no checkpoints.
        checkpoint_every: epochs between checkpoints.
        quick_compile: compile the training program with :func:`quick_compile_options`
            (no backend optimisation): for runs whose run time is small next to
            their compile time. Steps run slower, and results may differ from an
            optimised program's in the last bits (a checkpointed run records it
            and resumes only with the same setting). ``None`` (default): on for a
            run of at most :data:`QUICK_COMPILE_MAX_STEPS` steps on XLA:CPU without
            ``checkpoint``.

    Returns:
        ``(params, history)``: trained params (same structure and dtypes) and a
        :class:`History` of every epoch, before and after a resume.

    Raises:
        DataError: mismatched leading sizes in ``data`` (naming the paths), or
            ``batch_size`` larger than the data.
        ConfigError: non-positive ``epochs``, ``batch_size``, ``patience``,
            ``log_every`` or ``checkpoint_every``.
        CheckpointError: the checkpoint was written by another run (names the
            option, optimizer setting or pytree path that differs), is past
            ``epochs``, or cannot be read.
        NonFiniteError: the loss became NaN or infinite; names the step and epoch.
    """
    size = _data_size(data, "data")
    if not isinstance(checkpoint_every, (int, np.integer)) or checkpoint_every < 1:
        raise ConfigError(f"checkpoint_every must be a positive integer, got {checkpoint_every!r}")
    total = epochs * (size // batch_size) if isinstance(batch_size, int) and batch_size > 0 else 0
    bar = ProgressBar(progress, total)
    program = _build(loss_fn, params, data, tx, epochs=epochs, batch_size=batch_size,
                     val_data=val_data, patience=patience, log_every=log_every,
                     trainable=trainable, pack=pack, on_step=bar.on_step if progress else None,
                     on_epoch=bar.on_epoch if progress else None)
    steps_per_epoch = program.steps_per_epoch
    quick_compile = resolve_quick_compile(quick_compile, epochs * steps_per_epoch,
                                          checkpoint is not None, jax.default_backend())
    run = jax.jit(program.run, compiler_options=quick_compile_options() if quick_compile else None)
    carry = program.init(program.theta, program.opt_state)
    out = None
    checkpointer = checkpoint if isinstance(checkpoint, Checkpointer) or checkpoint is None \
        else Checkpointer(checkpoint)
    resumed_epoch = None

    def compile_run(carry: Any) -> None:
        run.lower(carry, np.int32(epochs), program.frozen, data, val_data, key).compile()

    try:
        with bar:
            if checkpointer is not None:
                run_info = describe_run(params=params, data=data, val_data=val_data, tx=tx,
                                        epochs=epochs, batch_size=batch_size, patience=patience,
                                        key=key, pack=pack, layout=program.layout,
                                        quick_compile=quick_compile)
                carry = _restore(checkpointer, carry, run_info, epochs, compile_run)
                resumed_epoch = None if checkpointer.latest_step() is None else int(carry.epoch)
            if resumed_epoch is not None:
                bar.resume(resumed_epoch * steps_per_epoch,
                           f"resumed from {checkpointer.directory} at epoch {resumed_epoch}")
            while not _finished(carry, epochs, patience):
                stop = epochs if checkpointer is None else min(
                    epochs, (int(carry.epoch) // checkpoint_every + 1) * checkpoint_every)
                carry, out = run(carry, np.int32(stop), program.frozen, data, val_data, key)
                if checkpointer is not None and int(carry.bad_step) < 0:
                    checkpointer.save(int(carry.epoch), carry, run_info)
            if out is None:  # resumed at the end: the run's result from its carry, no loop
                out = _output(carry, program.layout, program.frozen, patience)
            out = jax.block_until_ready(out)
            bar.finish(int(out.epochs_run) * steps_per_epoch)
    finally:
        if checkpointer is not None and checkpointer is not checkpoint:
            checkpointer.close()
        elif checkpointer is not None:
            checkpointer.wait()
    bad_step = int(out.bad_step)
    if bad_step >= 0:
        epoch, batch = divmod(bad_step, steps_per_epoch)
        where = "validation loss after" if bool(out.bad_in_validation) else "loss at"
        raise NonFiniteError(
            f"{where} step {bad_step} (epoch {epoch}, batch {batch}) is not finite; "
            "training stopped there"
        )
    ran = int(out.epochs_run)
    history = History(
        train_loss=np.asarray(out.train_loss)[:ran],
        val_loss=None if val_data is None else np.asarray(out.val_loss)[:ran],
        best_epoch=int(out.best_epoch),
        stopped_early=ran < epochs,
        steps_per_epoch=steps_per_epoch,
        resumed_epoch=resumed_epoch,
    )
    return Layout.plan(params).restore_static(out.params), history
