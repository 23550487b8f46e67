"""``fit``'s loop compiled while packed's probes run: the first epoch waits for one, not both.

Packing an optax transformation is exact only where a probe says so
(:mod:`jaxlean.train._packed_probe`: a small program traced, compiled and run), and the
loop's program depends on the answer. Almost always the answer is "on the buffers", so
:func:`build_first` builds the loop as if it were (:func:`assumed_on_buffers`), lowers
its first call, hands the compile to a thread (XLA compiles without Python's lock) and
runs the probes meanwhile. When every probe decided the buffers, the loop built is the
one the probes' decisions give, its compile is the first call's (JAX finds it), and the
first epoch has saved the probes' time; otherwise that loop is dropped and built again
on the decisions (kept, not probed twice), as without the overlap. A probe's refusal is
raised as at ``init``. Measured in ``jaxlean bench first_epoch`` (BENCHMARKS.md).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import jax

from jaxlean.train._drive import Run
from jaxlean.train._packed_decisions import assumed_on_buffers, confirm

__all__ = ["build_first"]


class _Compiling:
    """``lowered.compile()`` in a daemon thread; :meth:`wait` joins it.

    JAX reads some compile options (optimisation levels, the partitioner) from its
    configuration when it compiles, and a context manager sets those for its own thread
    only: the thread compiles only if it sees the caller's whole configuration
    (``jax.config.values``), else it leaves the compile to the first call. An error stays
    in the thread: the first call compiles the same program again and raises it there."""

    def __init__(self, lowered: Any):
        self._lowered, self._config = lowered, jax.config.values
        self._thread = threading.Thread(target=self._compile, name="fit compile", daemon=True)
        self._thread.start()

    def _compile(self) -> None:
        with contextlib.suppress(Exception):  # raised again by the first call, in the caller
            if jax.config.values == self._config:
                self._lowered.compile()

    def wait(self) -> None:
        self._thread.join()


def build_first(build_loop: Callable[[], Run]) -> Run:
    """``build_loop()``, its first call compiled while packed's probes run (module docstring).

    ``build_loop`` builds the :class:`Run` of a run that starts from its beginning (no
    checkpoint to resume); it is called a second time only when a probe decided other
    than the buffers, or the loop could not be built on them.
    """
    with assumed_on_buffers() as assumed:
        try:
            loop = build_loop()
            lowered = loop.lower_first() if assumed else None
        except Exception:
            if assumed and not confirm(assumed):  # the assumption broke it: build as decided
                return build_loop()
            raise
    if not assumed:  # nothing to probe (decided before, or nothing packed)
        return loop
    compiling = _Compiling(lowered)
    try:
        on_buffers = confirm(assumed)
    finally:
        compiling.wait()
    return loop if on_buffers else build_loop()
