"""Progress of long work: a rich bar on a terminal, plain timed lines in logs.

Jobs run with their output in files (SLURM logs, CI, ``| tee``), where a live
bar draws nothing and a buffered stream shows everything at the end. A
:class:`Progress` whose stream is a terminal (or a notebook) shows a rich bar;
otherwise it prints a plain line at the start, one every
``JAXLEAN_PROGRESS_INTERVAL`` seconds (default 10) and one at the end, each
flushed at once. The periodic lines come from a timer thread, so they keep
coming while the main thread is blocked in a compile; ``update(compiling=True)``
names that phase ("compiling" and its elapsed time) until the next report.
rich is imported only when a bar is drawn.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

from jaxlean.errors import ConfigError

INTERVAL_VARIABLE = "JAXLEAN_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 10.0


def interval() -> float:
    """Seconds between plain progress lines: ``$JAXLEAN_PROGRESS_INTERVAL`` or 10.

    Raises:
        ConfigError: the variable is set to something other than a positive number.
    """
    raw = os.environ.get(INTERVAL_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_INTERVAL
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"{INTERVAL_VARIABLE} must be a positive number of seconds, "
                          f"got {raw!r}")
    return value


def _seconds(elapsed: float) -> str:
    return f"{elapsed:.1f} s" if elapsed < 10 else f"{elapsed:.0f} s"


class Progress:
    """Reports long work on ``stream``: a rich bar on a terminal, timed plain lines elsewhere.

    Use as a context manager; feed it with :meth:`update`, print beside it with
    :meth:`print`. ``enabled=False`` prints nothing at all.

    Args:
        label: names the work at the start of every line (``"fit"``, ``"bench compile"``).
        total: units of work, or None when not counted.
        enabled: False for silence.
        unit: what ``total`` counts (``"steps"``, ``"tensors"``).
        stream: where to report (default ``sys.stderr``).
        quiet: for work that is usually short: in logs, no start line, and no
            end line unless a periodic line was printed.
        transient: on a terminal, remove the bar at the end.
        every: seconds between plain lines (default :func:`interval`).
    """

    def __init__(self, label: str, total: int | None = None, *, enabled: bool = True,
                 unit: str = "", stream: TextIO | None = None, quiet: bool = False,
                 transient: bool = False, every: float | None = None):
        self.label, self.total, self.unit = label, total, unit
        self.enabled, self.quiet, self.transient = enabled, quiet, transient
        self.stream = sys.stderr if stream is None else stream
        self.every = interval() if every is None and enabled else every
        self.completed, self.description, self.status = 0, "", ""
        self.compile_start: float | None = None
        self.start = time.perf_counter()
        self.printed = False
        self._lock = threading.RLock()
        self._bar: Any = None
        self._task: Any = None
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    def update(self, completed: int | None = None, *, total: int | None = None,
               description: str | None = None, status: str | None = None,
               compiling: bool = False) -> None:
        """Record progress. ``compiling=True`` starts (or keeps) the compiling phase, which
        shows "compiling" and its elapsed time; any other update ends it."""
        with self._lock:
            for name, value in [("completed", completed), ("total", total),
                                ("description", description), ("status", status)]:
                if value is not None:
                    setattr(self, name, value)
            started = compiling and self.compile_start is None
            if started:
                self.compile_start = time.perf_counter()
            elif not compiling:
                self.compile_start = None
            if self._bar is not None:
                self._bar.update(self._task, completed=self.completed, total=self.total,
                                 description=self._text(), status=self.status)
            elif started and self._timer is not None and not self.quiet:
                self._line(f"{self.label}: compiling...")

    def print(self, message: Any) -> None:
        """Print ``message`` (text or a rich renderable) above the bar, or as lines in logs."""
        if not self.enabled:
            return
        with self._lock:
            if self._bar is not None:
                self._bar.console.print(message, markup=False, highlight=False,
                                        soft_wrap=isinstance(message, str))
            elif isinstance(message, str):
                self._line(message)
            else:
                from rich.console import Console

                Console(file=self.stream, soft_wrap=False).print(message)
                self.stream.flush()

    def _text(self) -> str:
        """The bar's description: "fit compiling", "fit epoch 3"."""
        if self.compile_start is not None:
            return f"{self.label} compiling"
        return f"{self.label} {self.description}".strip()

    def _state(self, head: str = "") -> str:
        """A plain line's body after ``head``: what is happening, counts, status, elapsed."""
        now = time.perf_counter()
        if self.compile_start is not None:
            return f"compiling ({_seconds(now - self.compile_start)})"
        count = "" if self.total is None else f"{self.completed}/{self.total} {self.unit}"
        parts = [head, self.description, count.strip(), self.status]
        body = ", ".join(p for p in parts if p) or "running"
        return f"{body} ({_seconds(now - self.start)})"

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
        self.printed = True

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            with self._lock:
                self._line(f"{self.label}: {self._state()}")

    def _is_terminal(self) -> bool:
        if getattr(self.stream, "isatty", lambda: False)():
            return True
        return "ipykernel" in sys.modules and self.stream in (sys.stdout, sys.stderr)

    def _start_bar(self) -> None:
        from rich import progress as rich_progress
        from rich.console import Console

        counted = [rich_progress.BarColumn(), rich_progress.MofNCompleteColumn()] \
            if self.total is not None else [rich_progress.SpinnerColumn()]
        self._bar = rich_progress.Progress(
            rich_progress.TextColumn("{task.description}", markup=False), *counted,
            rich_progress.TextColumn("{task.fields[status]}", markup=False),
            rich_progress.TimeElapsedColumn(), console=Console(file=self.stream),
            transient=self.transient)
        self._task = self._bar.add_task(self._text(), total=self.total,
                                        completed=self.completed, status=self.status)
        self._bar.start()

    def __enter__(self) -> Progress:
        if not self.enabled:
            return self
        self.start = time.perf_counter()
        if self._is_terminal():
            self._start_bar()
            return self
        if not self.quiet:
            self._line(f"{self.label}: compiling..." if self.compile_start is not None
                       else f"{self.label}: started")
        self._timer = threading.Thread(target=self._tick, name=f"progress {self.label}",
                                       daemon=True)
        self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
        if self._timer is None:
            return
        self._stop.set()
        self._timer.join()
        with self._lock:
            if self.printed or not self.quiet:
                self.compile_start = None
                ended = "failed" if kind is not None else "done"
                self._line(f"{self.label}: {self._state(ended)}")
