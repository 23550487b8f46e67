"""Measurements shared by the benchmarks: AOT compile stages, XLA memory, wall time.

Every wall-time comparison goes through :func:`time_alternating` or
:func:`compile_alternating`: the sides are sampled in turn, round after round,
so a change in machine load hits all of them alike, and each side reports a
:class:`Timing` (median and spread of its samples), never a best case.

Before each compile JAX's in-memory caches are cleared so a measurement never
reuses an earlier trace or executable; ``jaxlean bench`` also turns the
persistent cache off while it measures (except in the cache benchmark, which
runs its own processes). A comparison first checks that its sides compute the
same thing and raises :class:`SidesDisagreeError` when they do not.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax


class SidesDisagreeError(RuntimeError):
    """Two sides of a comparison do not compute the same thing, so no speed-up is reported."""


@dataclasses.dataclass(frozen=True)
class Compiled:
    """An AOT-compiled function with the seconds each stage took: wall time, and this process's
    CPU time over all its threads (``*_cpu_s``: on a loaded machine wall-clock compile time
    carries the other jobs, CPU time much less)."""

    executable: Any
    trace_lower_s: float
    compile_s: float
    trace_lower_cpu_s: float = float("nan")
    compile_cpu_s: float = float("nan")

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
    start, start_cpu = time.perf_counter(), time.process_time()
    lowered = jax.jit(fn, **jit_kwargs).trace(*args).lower()
    lowered_at, lowered_cpu = time.perf_counter(), time.process_time()
    executable = lowered.compile()
    return Compiled(executable, lowered_at - start, time.perf_counter() - lowered_at,
                    lowered_cpu - start_cpu, time.process_time() - lowered_cpu)


def cpu_seconds(fn: Callable, *args: Any, repeats: int = 3) -> Timing:
    """This process's CPU seconds (all threads) per call of an already-compiled ``fn(*args)``,
    one sample per call."""
    samples = []
    for _ in range(repeats):
        start = time.process_time()
        jax.block_until_ready(fn(*args))
        samples.append(time.process_time() - start)
    return Timing(tuple(samples))


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds measured several times: the median is reported, the spread says how far to trust it.

    ``spread`` is half the range of the samples relative to the median (0.05:
    the samples lie within about ±5 % of the median); NaN with a single sample.
    """

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        if len(self.samples) < 2 or not self.median:
            return float("nan")
        return (max(self.samples) - min(self.samples)) / (2 * self.median)

    def __truediv__(self, other: Timing) -> float:
        """Ratio of the medians."""
        return self.median / other.median

    def ratio_spread(self, other: Timing) -> float:
        """The spread of the per-round ratios ``self / other`` of samples taken in alternation.

        Round ``i`` of :func:`time_alternating` or :func:`compile_alternating` sampled
        both sides under the same load, so this is the noise of the ratio itself. With five
        rounds or more the highest and lowest ratio are left out (one sample preempted by
        another job is an outlier, not the spread of the measurement).
        """
        ratios = sorted(a / b for a, b in zip(self.samples, other.samples, strict=True))
        if len(ratios) >= 5:
            ratios = ratios[1:-1]
        return Timing(tuple(ratios)).spread


def _calls_per_sample(fn: Callable, args: tuple, min_seconds: float) -> int:
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return max(1, int(min_seconds / max(time.perf_counter() - start, 1e-7)))


def time_alternating(*calls: tuple[Callable, tuple], repeats: int = 7,
                     min_seconds: float = 0.2) -> list[Timing]:
    """Seconds per call of each already-compiled ``(fn, args)``, sampled in alternation.

    Each round times every call once, in order; each sample repeats its call
    until it lasts about ``min_seconds`` so that short calls are not dominated
    by timer noise.
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
    return [Timing(tuple(times)) for times in samples]


def wall_times(*calls: tuple[Callable, tuple], repeats: int = 7,
               min_seconds: float = 0.2) -> list[float]:
    """Median seconds per call of each ``(fn, args)``, sampled in alternation."""
    return [t.median for t in time_alternating(*calls, repeats=repeats, min_seconds=min_seconds)]


def wall_time(fn: Callable, *args: Any, repeats: int = 7, min_seconds: float = 0.2) -> float:
    """Median seconds per call of an already-compiled ``fn(*args)``."""
    return wall_times((fn, args), repeats=repeats, min_seconds=min_seconds)[0]


@dataclasses.dataclass(frozen=True)
class CompileTimings:
    """One side's fresh compiles: the stage timings and the last executable."""

    runs: tuple[Compiled, ...]

    @property
    def trace_lower(self) -> Timing:
        return Timing(tuple(c.trace_lower_s for c in self.runs))

    @property
    def compile(self) -> Timing:
        return Timing(tuple(c.compile_s for c in self.runs))

    @property
    def total(self) -> Timing:
        return Timing(tuple(c.trace_lower_s + c.compile_s for c in self.runs))

    @property
    def executable(self) -> Any:
        return self.runs[-1].executable


def compile_alternating(builds: dict[str, tuple[Callable, tuple]], repeats: int,
                        step: Callable[[str], None] = lambda message: None
                        ) -> dict[str, CompileTimings]:
    """AOT-compile each side ``repeats`` times from scratch, the sides in turn each round."""
    runs: dict[str, list[Compiled]] = {side: [] for side in builds}
    for round_ in range(repeats):
        for side, (fn, args) in builds.items():
            step(f"{side}: trace+lower and compile ({round_ + 1}/{repeats})")
            runs[side].append(aot_compile(fn, *args))
    return {side: CompileTimings(tuple(done)) for side, done in runs.items()}
