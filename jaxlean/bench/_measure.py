"""Measurements shared by the benchmarks: AOT compile stages, XLA memory, wall time.

Before each compile JAX's in-memory caches are cleared so a measurement never
reuses an earlier trace or executable; ``jaxlean bench`` also turns the
persistent cache off while it measures (except in the cache benchmark, which
runs its own processes).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax


@dataclasses.dataclass(frozen=True)
class Compiled:
    """An AOT-compiled function with the seconds each stage took."""

    executable: Any
    trace_lower_s: float
    compile_s: float

    @property
    def temp_bytes(self) -> int:
        """XLA's temporary buffer bytes (activations, workspace), from ``memory_analysis``."""
        return int(self.executable.memory_analysis().temp_size_in_bytes)

    @property
    def argument_bytes(self) -> int:
        return int(self.executable.memory_analysis().argument_size_in_bytes)


def aot_compile(fn: Callable, *args: Any, **jit_kwargs: Any) -> Compiled:
    """Trace+lower then compile ``jax.jit(fn, **jit_kwargs)`` for ``args``, timing both stages."""
    jax.clear_caches()
    start = time.perf_counter()
    lowered = jax.jit(fn, **jit_kwargs).trace(*args).lower()
    lowered_at = time.perf_counter()
    executable = lowered.compile()
    return Compiled(executable, lowered_at - start, time.perf_counter() - lowered_at)


def _calls_per_sample(fn: Callable, args: tuple, min_seconds: float) -> int:
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return max(1, int(min_seconds / max(time.perf_counter() - start, 1e-7)))


def wall_times(*calls: tuple[Callable, tuple], repeats: int = 7,
               min_seconds: float = 0.2) -> list[float]:
    """Median seconds per call of each ``(fn, args)``, sampled in alternation.

    Samples of the different calls are interleaved so that a change in machine load
    affects all of them alike; each sample repeats the call until it lasts about
    ``min_seconds`` so that short calls are not dominated by timer noise.
    """
    inner = [_calls_per_sample(fn, args, min_seconds) for fn, args in calls]
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(repeats):
        for (fn, args), count, out in zip(calls, inner, samples, strict=True):
            start = time.perf_counter()
            for _ in range(count):
                result = fn(*args)
            jax.block_until_ready(result)
            out.append((time.perf_counter() - start) / count)
    return [statistics.median(times) for times in samples]


def wall_time(fn: Callable, *args: Any, repeats: int = 7, min_seconds: float = 0.2) -> float:
    """Median seconds per call of an already-compiled ``fn(*args)``."""
    return wall_times((fn, args), repeats=repeats, min_seconds=min_seconds)[0]
