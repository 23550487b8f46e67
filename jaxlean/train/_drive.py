"""The host side of :func:`~jaxlean.train.fit.fit`: run the compiled loop to the end, resuming
from and saving checkpoints and reporting progress between its calls.

The compiled loop (:func:`jaxlean.train._loop.run`) stops at a traced global
step, so one executable serves every call: without progress, one call per
run (or per ``checkpoint_every`` epochs, each followed by a save); with
progress, calls of about :data:`~jaxlean.train._progress.REPORT_SECONDS` each
(:class:`~jaxlean.train._progress.Chunks`), the host reporting after each. The
program itself has no host callback, so JAX's persistent cache stores it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections import deque
from collections.abc import Iterator
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from jaxlean.errors import ConfigError
from jaxlean.train._gc import paused as paused_gc
from jaxlean.train._loop import Carry, Position, Program, TrainOutput, finished
from jaxlean.train._progress import Chunks, ProgressBar
from jaxlean.train._resume import describe_run, restore
from jaxlean.train.checkpoint import Checkpointer

__all__ = ["Run", "check_checkpoint_every", "checkpointing", "describe", "train"]


@dataclasses.dataclass(frozen=True)
class Run:
    """One ``fit`` call's compiled loop and the arguments every call of it takes."""

    program: Program
    run: Any  # the jitted :func:`jaxlean.train._loop.run`
    epochs: int
    patience: int | None
    data: Any
    val_data: Any
    key: jax.Array
    quick_compile: bool  # compiled with :func:`~jaxlean.compile.quick.quick_compile_options`

    def _arguments(self, carry: Carry, position: Position, order: jax.Array,
                   stop_step: int) -> tuple:
        """Every argument of one call of the loop, as each call passes them."""
        return (carry, position, order, np.int32(stop_step), self.program.frozen, self.data,
                self.val_data, self.key)

    def __call__(self, carry: Carry, position: Position, order: jax.Array, stop_step: int
                 ) -> tuple[Carry, Position, jax.Array]:
        """Dispatch one call of the loop (the first traces and compiles it: without
        automatic garbage collection, :mod:`jaxlean.train._gc`)."""
        with paused_gc():
            return self.run(*self._arguments(carry, position, order, stop_step))

    def begin(self, carry: Carry) -> tuple[Carry, Position, jax.Array]:
        """``carry`` with the position and order of an epoch's start, placed as the first
        call takes them (:meth:`settle`)."""
        return self.settle(carry, *self.program.start())

    def lower_first(self) -> Any:
        """The loop lowered (traced and lowered, not compiled) for the first call of a run
        from its start, as :func:`train` makes that call (:meth:`begin`), so compiling it is
        that call's compile."""
        carry = self.program.init(self.program.theta, self.program.opt_state)
        with paused_gc():
            return self.run.lower(*self._arguments(*self.begin(carry), 0))

    def compile(self, carry: Carry) -> None:
        """Compile the loop for ``carry``'s shapes and placements (no run; ``carry`` is a
        restored one's, committed to ``carry.train_hist``'s device, as :meth:`settle` puts
        the position then)."""
        position, order = jax.device_put(self.program.start(), carry.train_hist.sharding)
        with paused_gc():
            self.run.lower(*self._arguments(carry, position, order, 0)).compile()

    def settle(self, carry: Carry, position: Position, order: jax.Array
               ) -> tuple[Carry, Position, jax.Array]:
        """The loop's state placed as the loop returns it, so that every call has the
        first one's signature (one compile): ``jit`` commits its outputs to the device of
        its committed arguments, and over a mesh returns them on the mesh; so with an
        argument committed to one device, the state is committed there too, and with
        arguments on one mesh, the state's other leaves go there replicated."""
        arguments = (carry, position, order, self.program.frozen, self.data, self.val_data,
                     self.key)
        committed = [leaf for leaf in jax.tree.leaves(arguments)
                     if isinstance(leaf, jax.Array) and leaf.committed]
        devices = {device for leaf in committed for device in leaf.devices()}
        meshes = {leaf.sharding.mesh for leaf in committed
                  if isinstance(leaf.sharding, NamedSharding)}
        if len(devices) == 1:
            return jax.device_put((carry, position, order), devices.pop())
        if len(meshes) != 1:
            return carry, position, order
        replicated = NamedSharding(meshes.pop(), PartitionSpec())
        on_mesh = lambda leaf: (isinstance(leaf.sharding, NamedSharding)
                                and leaf.sharding.mesh == replicated.mesh)
        return jax.tree.map(lambda leaf: leaf if on_mesh(leaf) else
                            jax.device_put(leaf, replicated), (carry, position, order))


def check_checkpoint_every(checkpoint_every: Any) -> None:
    """ConfigError unless ``checkpoint_every`` is a positive integer."""
    if not isinstance(checkpoint_every, (int, np.integer)) or checkpoint_every < 1:
        raise ConfigError(f"checkpoint_every must be a positive integer, got {checkpoint_every!r}")


@contextlib.contextmanager
def checkpointing(checkpoint: str | os.PathLike | Checkpointer | None
                  ) -> Iterator[Checkpointer | None]:
    """``fit``'s ``checkpoint=`` as a :class:`Checkpointer` (None: no checkpoints), closed at
    the end if made here, else waited for (its saves done)."""
    checkpointer = checkpoint if isinstance(checkpoint, Checkpointer) or checkpoint is None \
        else Checkpointer(checkpoint)
    try:
        yield checkpointer
    finally:
        if checkpointer is not None and checkpointer is not checkpoint:
            checkpointer.close()
        elif checkpointer is not None:
            checkpointer.wait()


class _Call(NamedTuple):
    """One call of the loop, dispatched: its outputs (maybe not computed yet) and its plan."""

    carry: Carry
    position: Position
    order: jax.Array
    segment: int  # the epoch its checkpoint segment ends at
    start: int  # the global step it starts at (if the run has not ended before)
    stop: int  # the global step it stops at (if the run does not end before)


class _Reading(NamedTuple):
    """The scalars of a call's outputs the host needs, read back at once."""

    epoch: int
    step: int
    loss: float
    bad_step: int
    since_best: int
    train_hist: Any
    val_hist: Any

    def finished(self, epochs: int, patience: int | None) -> bool:
        return (self.epoch >= epochs or self.bad_step >= 0
                or (patience is not None and self.since_best >= patience))


def _read(call: _Call, histories: bool) -> _Reading:
    carry, position = call.carry, call.position
    hists = (carry.train_hist, carry.val_hist) if histories else (None, None)
    values = jax.device_get((carry.epoch, position.step, position.loss, carry.bad_step,
                             carry.since_best, *hists))
    return _Reading(*(int(v) for v in values[:2]), float(values[2]),
                    *(int(v) for v in values[3:5]), *values[5:])


def train(loop: Run, bar: ProgressBar, checkpointer: Checkpointer | None,
          checkpoint_every: int, run_info: dict | None,
          report: bool) -> tuple[TrainOutput, int | None]:
    """Run ``loop`` from its start or the latest checkpoint to the end of the run.

    Without ``report``, one call per checkpoint segment (the whole run without a
    checkpoint); with it, calls of about a :class:`~jaxlean.train._progress.Chunks`
    each, ``bar`` showing each one's end. The next call is dispatched before the
    last one's results are read, so the loop runs on while the host reports and saves.

    Returns:
        The run's :class:`TrainOutput` (ready) and the epoch it resumed at, or None.
    """
    program, epochs = loop.program, loop.epochs
    steps_per_epoch = program.steps_per_epoch
    carry = program.init(program.theta, program.opt_state)
    resumed_epoch = None
    if checkpointer is not None:
        carry = restore(checkpointer, carry, run_info, epochs, loop.compile)
        resumed_epoch = None if checkpointer.latest_step() is None else int(carry.epoch)
    if resumed_epoch is not None:
        bar.resume(resumed_epoch * steps_per_epoch,
                   f"resumed from {checkpointer.directory} at epoch {resumed_epoch}")
    carry, position, order = loop.begin(carry)
    chunks = Chunks(program.log_every) if report else None
    calls: deque[_Call] = deque()
    step, total = int(carry.epoch) * steps_per_epoch, epochs * steps_per_epoch
    ended = finished(carry, epochs, loop.patience)
    last_read = time.perf_counter()
    while not ended:
        while len(calls) < 2 and step < total:  # one call runs while the last is read
            head = calls[-1] if calls else _Call(carry, position, order, 0, step, step)
            segment = epochs if checkpointer is None else min(
                epochs, (step // steps_per_epoch // checkpoint_every + 1) * checkpoint_every)
            stop = segment * steps_per_epoch
            stop = stop if chunks is None else min(stop, chunks.stop(step))
            calls.append(_Call(*loop(head.carry, head.position, head.order, stop), segment,
                               step, stop))
            step = stop
        call = calls.popleft()
        reading = _read(call, histories=chunks is not None)
        carry, position, order = call.carry, call.position, call.order
        ended = reading.finished(epochs, loop.patience)
        if chunks is not None:
            now = time.perf_counter()
            chunks.show(bar, reading, call.start // steps_per_epoch, steps_per_epoch)
            chunks.ran(reading.epoch * steps_per_epoch + reading.step - call.start,
                       now - last_read)
            last_read = now
        if checkpointer is not None and reading.step == 0 and reading.bad_step < 0 and (
                reading.epoch == call.segment or ended):
            checkpointer.save(reading.epoch, carry, run_info)
        ended = ended or not calls
    out = jax.block_until_ready(program.output(carry))
    bar.finish(int(out.epochs_run) * steps_per_epoch)
    return out, resumed_epoch


def describe(loop: Run, params: Any, tx: Any, batch_size: int, pack: bool) -> dict:
    """:func:`~jaxlean.train._resume.describe_run` of this call (the checkpoints' metadata)."""
    return describe_run(params=params, data=loop.data, val_data=loop.val_data, tx=tx,
                        epochs=loop.epochs, batch_size=batch_size, patience=loop.patience,
                        key=loop.key, pack=pack, layout=loop.program.layout,
                        quick_compile=loop.quick_compile)
