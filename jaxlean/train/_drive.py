"""The host side of :func:`~jaxlean.train.fit.fit`: run the compiled loop to the end, resuming
from and saving checkpoints between its calls.

The compiled loop (:func:`jaxlean.train._loop.run`) stops at a traced epoch,
so one executable serves every call: with a checkpoint, one call per
``checkpoint_every`` epochs, each followed by a save.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

import jax
import numpy as np

from jaxlean.errors import ConfigError
from jaxlean.train._loop import Carry, Program, TrainOutput, finished, output
from jaxlean.train._progress import ProgressBar
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

    def __call__(self, carry: Carry, stop_epoch: int) -> tuple[Carry, TrainOutput]:
        return self.run(carry, np.int32(stop_epoch), self.program.frozen, self.data,
                        self.val_data, self.key)

    def compile(self, carry: Carry) -> None:
        """Compile the loop for ``carry``'s shapes and placements (no run)."""
        self.run.lower(carry, np.int32(self.epochs), self.program.frozen, self.data,
                       self.val_data, self.key).compile()


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


def train(loop: Run, bar: ProgressBar, checkpointer: Checkpointer | None,
          checkpoint_every: int, run_info: dict | None) -> tuple[TrainOutput, int | None]:
    """Run ``loop`` from its start or the latest checkpoint to the end of the run.

    Returns:
        The run's :class:`TrainOutput` (on the host's time: ready) and the epoch it
        resumed at, or None.
    """
    program, epochs = loop.program, loop.epochs
    carry = program.init(program.theta, program.opt_state)
    resumed_epoch, out = None, None
    if checkpointer is not None:
        carry = restore(checkpointer, carry, run_info, epochs, loop.compile)
        resumed_epoch = None if checkpointer.latest_step() is None else int(carry.epoch)
    if resumed_epoch is not None:
        bar.resume(resumed_epoch * program.steps_per_epoch,
                   f"resumed from {checkpointer.directory} at epoch {resumed_epoch}")
    while not finished(carry, epochs, loop.patience):
        stop = epochs if checkpointer is None else min(
            epochs, (int(carry.epoch) // checkpoint_every + 1) * checkpoint_every)
        carry, out = loop(carry, stop)
        if checkpointer is not None and int(carry.bad_step) < 0:
            checkpointer.save(int(carry.epoch), carry, run_info)
    if out is None:  # resumed at the end: the run's result from its carry, no loop
        out = output(carry, program.layout, program.frozen, loop.patience)
    out = jax.block_until_ready(out)
    bar.finish(int(out.epochs_run) * program.steps_per_epoch)
    return out, resumed_epoch


def describe(loop: Run, params: Any, tx: Any, batch_size: int, pack: bool,
             quick_compile: bool) -> dict:
    """:func:`~jaxlean.train._resume.describe_run` of this call (the checkpoints' metadata)."""
    return describe_run(params=params, data=loop.data, val_data=loop.val_data, tx=tx,
                        epochs=loop.epochs, batch_size=batch_size, patience=loop.patience,
                        key=loop.key, pack=pack, layout=loop.program.layout,
                        quick_compile=quick_compile)
