"""The progress of :func:`jaxlean.fit`, reported by the host between calls of the compiled loop.

The loop has no host callback (JAX's persistent cache refuses programs with
one); :func:`~jaxlean.train._drive.train` instead calls it in chunks that stop
at multiples of ``log_every`` steps, sized to run about :data:`REPORT_SECONDS`
each (:class:`Chunks`), and shows each chunk's end. "compiling" shows from the
start until the first chunk ends (the jitted loop compiles before it runs); see
:mod:`jaxlean._progress` for how it looks on a terminal and in logs.
"""

from __future__ import annotations

import math
from typing import Any

from jaxlean._progress import Progress

__all__ = ["REPORT_SECONDS", "Chunks", "ProgressBar"]

REPORT_SECONDS = 0.25
"""About how long one call of the loop runs when progress is shown: often enough for a
live bar, long enough that the calls' own cost (a dispatch and a few scalars read
back) stays small next to the steps."""


class ProgressBar:
    """Steps, epoch and loss of a :func:`fit` run; does nothing when disabled."""

    def __init__(self, enabled: bool, total: int):
        self.progress = Progress("fit", total, enabled=enabled, unit="steps")

    def on_step(self, step: Any, epoch: Any, loss: Any) -> None:
        self.progress.update(int(step) + 1, description=f"epoch {int(epoch) + 1}",
                             status=f"loss {float(loss):.4g}")

    def on_epoch(self, epoch: Any, train: Any, val: Any) -> None:
        val_text = "" if math.isnan(float(val)) else f", val {float(val):.4g}"
        self.progress.update(description=f"epoch {int(epoch) + 1}",
                             status=f"loss {float(train):.4g}{val_text}")

    def resume(self, steps: int, message: str) -> None:
        """Start the count at ``steps`` done and print ``message`` (where the run resumed)."""
        self.progress.update(steps, compiling=True)
        self.progress.print(message)

    def finish(self, steps: int) -> None:
        """Show the steps actually run (fewer than planned after early stopping)."""
        self.progress.update(steps, total=steps)

    def __enter__(self) -> ProgressBar:
        self.progress.update(compiling=True)
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)


class Chunks:
    """Where each call of the loop stops when progress is shown, and what it shows after.

    A call stops at a multiple of ``log_every`` steps, ``count`` multiples on; the first
    call runs one (it also compiles), and each later one is sized from the measured speed
    of the one before to run about :data:`REPORT_SECONDS` (growing at most 8x per call).
    """

    def __init__(self, log_every: int):
        self.every, self.count, self.calls = log_every, 1, 0

    def stop(self, done: int) -> int:
        """The global step the next call stops at, ``done`` steps being run."""
        return (done // self.every + self.count) * self.every

    def ran(self, steps: int, seconds: float) -> None:
        """Record that a call ran ``steps`` steps in ``seconds``; size the next one."""
        self.calls += 1
        if self.calls == 1 or steps <= 0:  # the first call compiles: its time says nothing
            return
        wanted = REPORT_SECONDS * steps / max(seconds, 1e-9) / self.every
        self.count = max(1, min(8 * self.count, int(wanted)))

    def show(self, bar: ProgressBar, reading: Any, epoch: int, steps_per_epoch: int) -> None:
        """Show the end of a call that started in ``epoch`` (``reading``: its scalars and
        histories): the epochs it completed, and its last step (before them when it ended
        an epoch, as the loop ran them)."""
        done = reading.epoch * steps_per_epoch + reading.step
        completed = range(epoch, reading.epoch)
        ended_epoch = reading.step == 0 and bool(completed)
        if ended_epoch:
            bar.on_step(done - 1, reading.epoch - 1, reading.loss)
        for e in completed:
            bar.on_epoch(e, reading.train_hist[e], reading.val_hist[e])
        if not ended_epoch:
            bar.on_step(done - 1, reading.epoch, reading.loss)
