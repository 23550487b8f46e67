"""The progress of :func:`jaxlean.fit`, fed by the training loop's host callbacks.

"compiling" shows from the start until the first step reports (the jitted
loop compiles before it runs); see :mod:`jaxlean._progress` for how it looks
on a terminal and in logs.
"""

from __future__ import annotations

import math
from typing import Any

from jaxlean._progress import Progress


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
