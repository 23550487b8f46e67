"""fit(): a whole training run (epochs x minibatches) inside one jitted ``lax.while_loop``.

A Python loop of jitted steps pays a dispatch per step and, when the step is
written with a loop over modules and a per-leaf optimizer, a trace and
compile that grow with the model. :func:`fit` traces the step once, runs
every epoch (shuffling by key, validation, early stopping with best-params
restore) in one ``lax.while_loop`` (:mod:`jaxlean.train._loop`) and carries the
parameters and the optimizer state packed by :func:`jaxlean.train.packed`, so
the state is a few arrays.

The loop runs from a carry to a traced stop step, so one compiled program
serves every call of it (:mod:`jaxlean.train._drive`): with ``checkpoint=``,
:func:`fit` runs it in segments of ``checkpoint_every`` epochs, saves the carry
after each (:class:`~jaxlean.train.checkpoint.Checkpointer`) and, when started
again, goes on from the latest one (:mod:`jaxlean.train._resume`): a requeued
job ends with the result of an uninterrupted run. Progress is shown the same
way: the loop is called in chunks of about a quarter of a second and the host
reports between calls, so the program has no host callback and JAX's
persistent compilation cache stores it, progress or not.

:func:`make_train_fn` returns the jitted-to-be training function and its
arguments, for ahead-of-time compilation and benchmarks; ``pack=False``
builds the unpacked reference (plain optax state, one array per leaf and moment).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import optax

from jaxlean.compile.quick import (
    QUICK_COMPILE_MAX_STEPS,
    quick_compile_options,
    resolve_quick_compile,
)
from jaxlean.errors import NonFiniteError
from jaxlean.train._drive import Run, check_checkpoint_every, checkpointing, describe, train
from jaxlean.train._first_compile import build_first
from jaxlean.train._gc import paused as paused_gc
from jaxlean.train._groups import Trainable
from jaxlean.train._layout import PackedLayout
from jaxlean.train._loop import LossFn, TrainOutput, build, data_size, output
from jaxlean.train._progress import ProgressBar
from jaxlean.train.checkpoint import Checkpointer

__all__ = ["QUICK_COMPILE_MAX_STEPS", "History", "LossFn", "TrainOutput", "fit",
           "make_train_fn", "resolve_quick_compile"]

TrainOutput.__module__ = __name__  # its public home (defined with the loop in _loop)


@dataclasses.dataclass(frozen=True)
class History:
    """Per-epoch losses of a :func:`fit` run, trimmed to the epochs actually run.

    Attributes:
        train_loss: mean minibatch loss of each epoch (losses before each update),
            float32 whatever the loss's dtype (float64 under ``jax_enable_x64`` too;
            the params train in their own dtypes).
        val_loss: validation loss after each epoch (float32, as ``patience`` compares it),
            or None without ``val_data``.
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
        on_step: host callback ``(step, epoch, loss)``; on_epoch: ``(epoch, train, val)``
            (``jax.debug.callback``: JAX's persistent cache does not store a program with
            one; :func:`fit` shows progress without them).

    Returns:
        ``(fn, args)``; ``fn(*args)`` returns a :class:`TrainOutput`.

    Raises:
        DataError: mismatched leading sizes (naming the paths), batch larger than data.
        ConfigError: non-positive sizes.
    """
    program = build(loss_fn, params, data, tx, epochs=epochs, batch_size=batch_size,
                    val_data=val_data, patience=patience, log_every=log_every,
                    trainable=trainable, pack=pack, on_step=on_step, on_epoch=on_epoch)

    def train(theta, frozen, opt_state, data, val_data, key) -> TrainOutput:
        carry = program.init(theta, opt_state)
        final, _, _ = program.run(carry, *program.start(), epochs * program.steps_per_epoch,
                                  frozen, data, val_data, key)
        return output(final, program.layout, frozen, patience)

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

    Minibatches are drawn without replacement from a fresh permutation each epoch
    (see :func:`make_train_fn`); the last partial batch is dropped. The loop carries
    the params and the optimizer state of ``packed(tx)``; ``loss_fn`` sees ordinary
    params. With ``patience``, training stops after that many epochs without
    improvement of the validation loss (the train loss without ``val_data``) and the
    best epoch's params are returned.

    With ``checkpoint``, the loop's whole state is saved every ``checkpoint_every``
    epochs and at the end; the same call again (a requeue) continues from the latest
    checkpoint to the params and :class:`History` of an uninterrupted run, bit for
    bit, and a larger ``epochs`` to those of a run started with it. A call that
    differs from the checkpointed run in ``tx`` (settings, schedules), ``data``,
    ``val_data``, ``batch_size``, ``key``, ``patience``, ``pack``, ``quick_compile``
    or the params' structure and trained leaves raises, naming it and both values
    (``loss_fn`` is not compared). A run is not saved past a non-finite loss.

    Without ``checkpoint``, the loop compiles in a thread while packed's probe runs: built
    as if the probe decided the buffers, kept only if it does, built again on its decisions
    if not (:mod:`jaxlean.train._first_compile`). Under a JAX context manager (it configures
    the calling thread only) the loop compiles in the calling thread, after the probe.

    Python's automatic garbage collection is paused while ``fit`` traces and compiles
    (its passes over the objects tracing leaves cost a small model's first epoch several
    percent; :mod:`jaxlean.train._gc`) and runs again after.

    Args:
        loss_fn: ``loss_fn(params, batch) -> scalar`` loss.
        params: initial parameters (pytree; non-array leaves stay static).
        data: pytree of arrays sharing a leading example axis.
        tx: optax transformation (adam, adamw, chains with clipping and schedules).
        epochs, batch_size: passes over the data (at most), examples per step.
        key: PRNG key for shuffling.
        val_data: optional pytree; ``loss_fn(params, val_data)`` after each epoch.
        patience: epochs without improvement before stopping, or None.
        log_every: progress is updated at multiples of this many steps (default: ~50
            per run), about every quarter of a second, or less often if a step is slow.
        progress: report steps and loss, "compiling" until the loop runs, and where a
            run resumed: a rich bar on a terminal, plain lines on stderr every
            ``$JAXLEAN_PROGRESS_INTERVAL`` seconds (default 10) otherwise; False: silent.
            Either way the same compiled loop runs, with the same result.
        trainable: pytree of bools or predicate on the key path; frozen leaves do not change.
            None: only the adapters (``add_lora``) if ``params`` holds any, else every leaf.
        pack: optimizer state and, inside each epoch, the trained params in a few
            buffers (``packed(tx)``, default); ``False``: plain optax on the pytree.
        checkpoint: a directory (a :class:`Checkpointer` keeping the last 3 steps,
            written in the background) or a :class:`Checkpointer`; None: no checkpoints.
        checkpoint_every: epochs between checkpoints.
        quick_compile: compile the loop with :func:`quick_compile_options`: faster
            compile, slower steps, results may differ in the last bits. ``None``
            (default): on for runs of at most :data:`QUICK_COMPILE_MAX_STEPS` steps
            on XLA:CPU without ``checkpoint``.

    Returns:
        ``(params, history)``: trained params (same structure and dtypes) and a
        :class:`History` of every epoch, before and after a resume.

    Raises:
        DataError: mismatched leading sizes in ``data`` (naming the paths), or
            ``batch_size`` larger than the data.
        ConfigError: non-positive ``epochs``, ``batch_size``, ``patience``,
            ``log_every`` or ``checkpoint_every``.
        CheckpointError: the checkpoint is another run's (names what differs), is
            past ``epochs``, or cannot be read.
        NonFiniteError: the loss became NaN or infinite; names the step and epoch.
    """
    size = data_size(data, "data")
    check_checkpoint_every(checkpoint_every)
    bar = ProgressBar(progress, epochs * (size // batch_size)
                      if isinstance(batch_size, int) and batch_size > 0 else 0)

    def build_loop() -> Run:
        program = build(loss_fn, params, data, tx, epochs=epochs, batch_size=batch_size,
                        val_data=val_data, patience=patience, log_every=log_every,
                        trainable=trainable, pack=pack, on_step=None, on_epoch=None)
        quick = resolve_quick_compile(quick_compile, epochs * program.steps_per_epoch,
                                      checkpoint is not None, jax.default_backend())
        return Run(program, jax.jit(program.run, donate_argnums=2, compiler_options=
                                    quick_compile_options() if quick else None),
                   epochs, patience, data, val_data, key, quick)

    with bar:
        # The optimizer's init and packed's probe trace and compile here; without a
        # checkpoint to resume, the loop compiles here too, while the probe runs.
        with paused_gc():
            loop = build_loop() if checkpoint is not None else build_first(build_loop)
        with checkpointing(checkpoint) as checkpointer:
            run_info = None if checkpointer is None else describe(loop, params, tx, batch_size,
                                                                  pack)
            out, resumed_epoch = train(loop, bar, checkpointer, checkpoint_every, run_info,
                                       report=bool(progress))
    history = _history(out, epochs, loop.program.steps_per_epoch, val_data is not None,
                       resumed_epoch)
    return PackedLayout.plan(params).restore_static(out.params), history


def _history(out: TrainOutput, epochs: int, steps_per_epoch: int, validated: bool,
             resumed_epoch: int | None) -> History:
    """The :class:`History` of a finished run; NonFiniteError where its loss was not finite."""
    bad_step = int(out.bad_step)
    if bad_step >= 0:
        epoch, batch = divmod(bad_step, steps_per_epoch)
        where = "validation loss after" if bool(out.bad_in_validation) else "loss at"
        raise NonFiniteError(
            f"{where} step {bad_step} (epoch {epoch}, batch {batch}) is not finite; "
            "training stopped there"
        )
    ran = int(out.epochs_run)
    return History(
        train_loss=np.asarray(out.train_loss)[:ran],
        val_loss=np.asarray(out.val_loss)[:ran] if validated else None,
        best_epoch=int(out.best_epoch),
        stopped_early=ran < epochs,
        steps_per_epoch=steps_per_epoch,
        resumed_epoch=resumed_epoch,
    )
