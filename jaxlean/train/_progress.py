"""The progress bar of :func:`jaxlean.fit`, fed by the training loop's host callbacks."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class ProgressBar:
    """A rich progress bar fed by the loop's host callbacks; does nothing when disabled."""

    def __init__(self, enabled: bool, total: int):
        self.progress = None
        if not enabled:
            return
        self.progress = Progress(
            TextColumn("[bold]fit[/] epoch {task.fields[epoch]}"), BarColumn(),
            MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"),
            TextColumn("{task.fields[val]}"), TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        self.task = self.progress.add_task("fit", total=total, epoch=0, loss="-", val="")

    def on_step(self, step: Any, epoch: Any, loss: Any) -> None:
        self.progress.update(self.task, completed=int(step) + 1, epoch=int(epoch) + 1,
                             loss=f"{float(loss):.4g}")

    def on_epoch(self, epoch: Any, train: Any, val: Any) -> None:
        val_text = "" if math.isnan(float(val)) else f"val {float(val):.4g}"
        self.progress.update(self.task, epoch=int(epoch) + 1, loss=f"{float(train):.4g}",
                             val=val_text)

    def resume(self, steps: int, message: str) -> None:
        """Start the bar at ``steps`` done and print ``message`` (where the run resumed)."""
        if self.progress is not None:
            self.progress.update(self.task, completed=steps)
            self.progress.console.print(message, markup=False, highlight=False, soft_wrap=True)

    def finish(self, steps: int) -> None:
        """Show the steps actually run (fewer than planned after early stopping)."""
        if self.progress is not None:
            self.progress.update(self.task, completed=steps, total=steps)

    def __enter__(self) -> ProgressBar:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()
