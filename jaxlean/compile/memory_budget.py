"""Fit a compiled program into a memory budget by compiling few of many candidate options.

The generic half of a memory planner, independent of what the options mean:
each :class:`Candidate` carries a predicted relative run time (``cost``) and a
predicted footprint (an exactly known ``fixed_bytes`` plus a modelled
``variable_bytes``). :func:`search_budget` drops the candidates another one
beats on both counts (the Pareto front), then compiles, fastest first, the
first one predicted to fit; the footprint XLA reports for it
(:class:`StepMemory`, from ``compiled.memory_analysis()``, compiled ahead of
time and never run) rescales the modelled part of every other prediction, so
a model that is off by a constant factor costs one compile, not a wrong
answer. When a candidate fits, faster ones that the corrected model now
predicts to fit are tried too. Nothing fitting raises
:class:`~jaxlean.errors.MemoryBudgetError` with the smallest footprint compiled.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import jax

from jaxlean._units import format_bytes
from jaxlean.errors import ConfigError, MemoryBudgetError

__all__ = ["BudgetSearch", "Candidate", "Measured", "StepMemory", "device_memory",
           "pareto_front", "search_budget"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class StepMemory:
    """The device memory of one compiled program, from XLA's ``memory_analysis()``.

    ``total`` is what it needs at its peak: its arguments, its outputs (less those
    written into donated arguments) and its temporary buffers.
    """

    arguments: int
    outputs: int
    aliased: int
    temp: int

    @classmethod
    def of(cls, compiled: Any) -> StepMemory:
        """The memory of a ``jax.stages.Compiled`` (``jax.jit(f).lower(...).compile()``)."""
        analysis = compiled.memory_analysis()
        return cls(int(analysis.argument_size_in_bytes), int(analysis.output_size_in_bytes),
                   int(analysis.alias_size_in_bytes), int(analysis.temp_size_in_bytes))

    @property
    def total(self) -> int:
        return self.arguments + self.outputs - self.aliased + self.temp

    def __str__(self) -> str:
        return (f"{format_bytes(self.total)} (arguments {format_bytes(self.arguments)}, "
                f"outputs {format_bytes(self.outputs)}, temp {format_bytes(self.temp)})")


def device_memory(device: jax.Device | None = None) -> int | None:
    """Bytes of memory the device lets programs use (``memory_stats()["bytes_limit"]``);
    None where the backend does not say (the CPU)."""
    device = jax.devices()[0] if device is None else device
    try:
        stats = device.memory_stats()
    except (AttributeError, NotImplementedError, RuntimeError):
        return None
    limit = (stats or {}).get("bytes_limit")
    return int(limit) if limit else None


@dataclasses.dataclass(frozen=True)
class Candidate(Generic[T]):
    """One option with its predictions: ``cost`` (relative run time; lower is faster),
    ``fixed_bytes`` (known exactly) and ``variable_bytes`` (modelled, rescaled by what
    compiles measure)."""

    option: T
    cost: float
    fixed_bytes: int
    variable_bytes: int

    def predicted(self, scale: float = 1.0) -> int:
        """Predicted footprint in bytes, the modelled part multiplied by ``scale``."""
        return int(self.fixed_bytes + scale * self.variable_bytes)


@dataclasses.dataclass(frozen=True)
class Measured(Generic[T]):
    """A compiled candidate: its prediction when it was chosen, and what XLA reports."""

    candidate: Candidate[T]
    predicted: int
    memory: StepMemory

    @property
    def scale(self) -> float:
        """The factor that makes the candidate's modelled bytes match the compiled ones."""
        modelled = self.candidate.variable_bytes
        measured = self.memory.total - self.candidate.fixed_bytes
        return max(measured, 1) / modelled if modelled > 0 else 1.0


@dataclasses.dataclass(frozen=True)
class BudgetSearch(Generic[T]):
    """What :func:`search_budget` found: the ``chosen`` candidate (the fastest predicted
    among those compiled that fit), every compile in order, and the front searched."""

    budget: int
    chosen: Measured[T]
    tried: tuple[Measured[T], ...]
    front: tuple[Candidate[T], ...]
    candidates: int


def pareto_front(candidates: Sequence[Candidate[T]]) -> list[Candidate[T]]:
    """The candidates no other beats on both cost and predicted bytes, fastest first
    (each one after the first predicts fewer bytes than every faster one)."""
    ordered = sorted(candidates, key=lambda c: (c.cost, c.predicted()))
    front: list[Candidate[T]] = []
    for candidate in ordered:
        if not front or candidate.predicted() < front[-1].predicted():
            front.append(candidate)
    return front


def _printer(progress: bool | Callable[[str], None]) -> Callable[[str], None]:
    if callable(progress):
        return progress
    if progress:
        return lambda line: print(line, file=sys.stderr, flush=True)
    return lambda line: None


def search_budget(candidates: Sequence[Candidate[T]], measure: Callable[[T], StepMemory],
                  budget: int, *, max_compiles: int = 6, slack: float = 0.1,
                  describe: Callable[[T], str] = str,
                  progress: bool | Callable[[str], None] = True,
                  label: str = "memory plan") -> BudgetSearch[T]:
    """The fastest candidate whose compiled footprint fits ``budget`` bytes.

    Args:
        candidates: the options and their predictions.
        measure: compiles an option and returns its :class:`StepMemory` (never runs it).
        budget: bytes the program may use.
        max_compiles: compiles allowed in the search (one more may run, when nothing
            fits, to find the smallest footprint).
        slack: before the first compile, a candidate is compiled if its prediction is at
            most ``budget * (1 + slack)`` (the model's error margin); after it, the
            rescaled prediction must be within the budget.
        describe: an option in words, for progress lines and errors.
        progress: print a line per compile to stderr (True), call this with each
            line, or stay silent (False).
        label: what starts each progress line.

    Raises:
        MemoryBudgetError: no candidate compiled within the budget; names the smallest
            footprint compiled and its option.
        ConfigError: no candidates, or a budget or ``max_compiles`` below 1.
    """
    if not candidates:
        raise ConfigError(f"{label}: no candidate options to search")
    if budget < 1 or max_compiles < 1:
        raise ConfigError(f"{label}: budget and max_compiles must be positive, got "
                          f"budget={budget!r}, max_compiles={max_compiles!r}")
    say = _printer(progress)
    front = pareto_front(candidates)
    tried: list[Measured[T]] = []
    scale = 1.0

    def compile_one(candidate: Candidate[T]) -> Measured[T]:
        predicted = candidate.predicted(scale)
        say(f"{label}: [{len(tried) + 1}/{max_compiles}] compiling {describe(candidate.option)}"
            f" (predicted {format_bytes(predicted)})")
        done = Measured(candidate, predicted, measure(candidate.option))
        verdict = "fits" if done.memory.total <= budget else "over the budget"
        say(f"{label}:     compiled {format_bytes(done.memory.total)}: {verdict}")
        tried.append(done)
        return done

    def next_to_try(faster_than: float) -> Candidate[T] | None:
        compiled = {id(m.candidate) for m in tried}
        limit = budget if tried else budget * (1 + slack)  # measured: the model is calibrated
        for candidate in front:
            if candidate.cost >= faster_than:
                return None
            if id(candidate) not in compiled and candidate.predicted(scale) <= limit:
                return candidate
        return None

    best: Measured[T] | None = None
    while len(tried) < max_compiles:
        candidate = next_to_try(math.inf if best is None else best.candidate.cost)
        if candidate is None:
            break
        done = compile_one(candidate)
        nearest = min(tried, key=lambda m: abs(math.log(max(m.memory.total, 1) / budget)))
        scale = nearest.scale
        if done.memory.total <= budget:
            best = done
    if best is None:
        smallest = min(front, key=lambda c: c.predicted(scale))
        if all(m.candidate is not smallest for m in tried):
            compile_one(smallest)
        least = min(tried, key=lambda m: m.memory.total)
        raise MemoryBudgetError(
            f"{label}: nothing searched fits the budget of {format_bytes(budget)} "
            f"({budget} bytes); the smallest footprint compiled is "
            f"{format_bytes(least.memory.total)} ({least.memory.total} bytes) with "
            f"{describe(least.candidate.option)}. Raise the budget to at least that, or "
            f"shrink the batch or the model.",
            budget=budget, smallest=least.memory.total, option=least.candidate.option)
    return BudgetSearch(budget, best, tuple(tried), tuple(front), len(candidates))
