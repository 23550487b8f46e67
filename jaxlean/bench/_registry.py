"""What a benchmark is and how it reports: comparisons, targets and plots.

A benchmark is a function ``run(ctx) -> BenchResult`` registered under a name
with :func:`register`. It measures a baseline and jaxlean side by side in one
process and records each pair as a :class:`Comparison`; the goals of its issue
are :class:`Target` rows whose pass/fail is computed from measured values.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Literal

_OPS = {"<=": operator.le, ">=": operator.ge}


@dataclasses.dataclass(frozen=True)
class Comparison:
    """One measured quantity for a baseline and one jaxlean variant, on one case."""

    case: str
    metric: str
    unit: str
    baseline: float
    value: float
    variant: str = "jaxlean"
    baseline_name: str = "baseline"

    @property
    def ratio(self) -> float:
        """``value / baseline``: below 1 means jaxlean costs less."""
        return self.value / self.baseline if self.baseline else float("nan")


@dataclasses.dataclass(frozen=True)
class Target:
    """A goal of the issue, checked against a measured value (``value op limit``)."""

    description: str
    value: float
    limit: float
    op: Literal["<=", ">="] = "<="

    @property
    def passed(self) -> bool:
        return bool(_OPS[self.op](self.value, self.limit))


@dataclasses.dataclass(frozen=True)
class Plot:
    """A plot: ``series`` maps a label to ``(xs, ys)``; string ``xs`` give grouped bars."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    series: dict[str, tuple[list, list[float]]]
    logx: bool = False
    logy: bool = False


@dataclasses.dataclass
class BenchResult:
    """Everything one benchmark measured, ready for the terminal, Markdown and JSON."""

    name: str
    title: str
    comparisons: list[Comparison] = dataclasses.field(default_factory=list)
    targets: list[Target] = dataclasses.field(default_factory=list)
    plots: list[Plot] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def compare(self, case: str, metric: str, unit: str, baseline: float, value: float,
                variant: str = "jaxlean", baseline_name: str = "baseline") -> Comparison:
        row = Comparison(case, metric, unit, float(baseline), float(value), variant, baseline_name)
        self.comparisons.append(row)
        return row

    def target(self, description: str, value: float, limit: float,
               op: Literal["<=", ">="] = "<=") -> Target:
        row = Target(description, float(value), float(limit), op)
        self.targets.append(row)
        return row

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        for row, comparison in zip(out["comparisons"], self.comparisons, strict=True):
            row["ratio"] = comparison.ratio
        for row, target in zip(out["targets"], self.targets, strict=True):
            row["passed"] = target.passed
        return out


@dataclasses.dataclass
class BenchContext:
    """What a running benchmark is given: the size setting and a progress reporter."""

    quick: bool = False
    step: Callable[[str], None] = lambda message: None


@dataclasses.dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    run: Callable[[BenchContext], BenchResult]


REGISTRY: dict[str, Benchmark] = {}


def register(name: str, description: str) -> Callable:
    """Decorator: register ``run(ctx) -> BenchResult`` as ``jaxlean bench NAME``."""

    def decorate(run: Callable[[BenchContext], BenchResult]) -> Callable:
        REGISTRY[name] = Benchmark(name, description, run)
        return run

    return decorate
