"""What a benchmark is and how it reports: comparisons, targets and plots.

A benchmark is a function ``run(ctx) -> BenchResult`` registered under a name
with :func:`register`. It measures a baseline and jaxlean side by side in one
process and records each pair as a :class:`Comparison`; the goals of its issue
are :class:`Target` rows whose verdict is computed from measured values.

A target carries a noise band: ``noise``, stated where the target is written
(the run-to-run spread of that kind of measurement; :data:`EXACT` for a
deterministic quantity such as XLA's temp bytes; NaN, the default, where no
band was stated), widened to the spread of the measurement itself where one
was taken (the half range of per-round ratios of alternating samples). A
value inside the band around the goal is "within noise", neither met nor
missed.

``jaxlean bench --quick`` runs smaller sizes. A target says whether its goal
means something at those sizes (``quick=False`` for a goal stated for a size
quick mode does not reach, such as a ratio that grows with depth); quick mode
reports only the targets that do, so a quick run never claims or misses a goal
it did not measure.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable
from typing import Literal

from jaxlean._machine import load_average, this_machine
from jaxlean.bench._measure import Timing

__all__ = ["EXACT", "REGISTRY", "BenchContext", "BenchResult", "Benchmark", "Comparison", "Plot",
           "Target", "Verdict", "register"]

_OPS = {"<=": operator.le, ">=": operator.ge}
Verdict = Literal["met", "within noise", "missed"]
EXACT = 0.0
"""The noise band of a deterministic quantity (XLA's byte counts, differences of results)."""


def _median_spread(measured: float | Timing) -> tuple[float, float]:
    if isinstance(measured, Timing):
        return measured.median, measured.spread
    return float(measured), float("nan")


@dataclasses.dataclass(frozen=True)
class Comparison:
    """One measured quantity for a baseline and one jaxlean variant, on one case.

    A side that was not measured (a baseline too slow at this size, a peer not
    installed) is NaN; its ratio is NaN too and reports show ``-``. Timed sides
    carry the spread of their samples (see :class:`~jaxlean.bench._measure.Timing`).
    """

    case: str
    metric: str
    unit: str
    baseline: float
    value: float
    variant: str = "jaxlean"
    baseline_name: str = "baseline"
    baseline_spread: float = float("nan")
    spread: float = float("nan")

    @property
    def ratio(self) -> float:
        """``value / baseline``: below 1 means jaxlean costs less; NaN if either is missing."""
        if not (math.isfinite(self.baseline) and math.isfinite(self.value)) or not self.baseline:
            return float("nan")
        return self.value / self.baseline


@dataclasses.dataclass(frozen=True)
class Target:
    """A goal, checked against a measured value (``value op limit``).

    ``quick`` says whether the goal holds at ``--quick`` sizes by its nature
    (decided when the target is written, never from its result). ``noise`` is
    the stated relative noise band of the measurement; ``spread`` the measured
    one (half the range of the per-round ratios, NaN if not measured); the
    band used is the larger of the two.
    """

    description: str
    value: float
    limit: float
    op: Literal["<=", ">="] = "<="
    quick: bool = True
    noise: float = float("nan")
    spread: float = float("nan")

    @property
    def passed(self) -> bool:
        """``value op limit``, without the noise band."""
        return bool(_OPS[self.op](self.value, self.limit))

    @property
    def band(self) -> float:
        """The relative band around the goal inside which the result is "within noise";
        NaN if none was stated or measured (then the goal alone decides)."""
        known = [b for b in (self.noise, self.spread) if math.isfinite(b)]
        return max(known) if known else float("nan")

    @property
    def verdict(self) -> Verdict:
        """"met" or "missed" outside the band around the goal, "within noise" inside it."""
        if not math.isfinite(self.value):
            return "missed"
        band = self.band if math.isfinite(self.band) else 0.0
        if band and self.limit * (1 - band) <= self.value <= self.limit * (1 + band):
            return "within noise"
        return "met" if self.passed else "missed"


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
    quick: bool = False
    headline: str = ""
    """One sentence, built from this run's measurements, of what the user just saw."""
    load: float = float("nan")
    """The machine's 1-minute load average when the benchmark ended (NaN where unknown)."""
    load_start: float = float("nan")
    """The 1-minute load average when the benchmark started (NaN where unknown)."""
    machine: dict = dataclasses.field(default_factory=dict)
    """The CPU it ran on (:meth:`jaxlean._machine.Machine.to_dict`): a wall-time figure
    holds on that CPU."""

    @property
    def claimed_targets(self) -> list[Target]:
        """The targets this run reports: all of them, or in quick mode those that hold there."""
        return [t for t in self.targets if t.quick or not self.quick]

    @property
    def full_size_targets(self) -> list[Target]:
        """Targets left unreported because this quick run did not reach their sizes."""
        return [t for t in self.targets if self.quick and not t.quick]

    def compare(self, case: str, metric: str, unit: str, baseline: float | Timing,
                value: float | Timing, variant: str = "jaxlean",
                baseline_name: str = "baseline") -> Comparison:
        """Record one metric of both sides; a :class:`Timing` gives its median and spread."""
        (base, base_spread), (ours, spread) = _median_spread(baseline), _median_spread(value)
        row = Comparison(case, metric, unit, base, ours, variant, baseline_name, base_spread,
                         spread)
        self.comparisons.append(row)
        return row

    def target(self, description: str, value: float, limit: float,
               op: Literal["<=", ">="] = "<=", *, quick: bool = True,
               noise: float = float("nan"), spread: float = float("nan")) -> Target:
        """Record a goal; ``quick=False`` if it does not hold at ``--quick`` sizes by nature;
        ``noise`` the stated band, ``spread`` the measured one (see :class:`Target`)."""
        row = Target(description, float(value), float(limit), op, quick, float(noise),
                     float(spread))
        self.targets.append(row)
        return row

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        for row, comparison in zip(out["comparisons"], self.comparisons, strict=True):
            row["ratio"] = comparison.ratio
        for row, target in zip(out["targets"], self.targets, strict=True):
            row["passed"] = target.passed
            row["band"] = target.band
            row["verdict"] = target.verdict
            row["claimed"] = target.quick or not self.quick
        return out


@dataclasses.dataclass
class BenchContext:
    """What a running benchmark is given: the size setting and a progress reporter."""

    quick: bool = False
    step: Callable[[str], None] = lambda message: None


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """A registered benchmark; :meth:`measure` runs it and records the size setting."""

    name: str
    description: str
    run: Callable[[BenchContext], BenchResult]

    def measure(self, ctx: BenchContext) -> BenchResult:
        """Run the benchmark; the result knows whether it ran at quick sizes, on which CPU
        and under what load (1-minute load average at its start and end)."""
        before = load_average()
        result = self.run(ctx)
        result.quick = ctx.quick
        result.machine = this_machine().to_dict()
        after = load_average()
        if before is not None and after is not None:
            result.load_start, result.load = before[0], after[0]
        return result


REGISTRY: dict[str, Benchmark] = {}


def register(name: str, description: str) -> Callable:
    """Decorator: register ``run(ctx) -> BenchResult`` as ``jaxlean bench NAME``."""

    def decorate(run: Callable[[BenchContext], BenchResult]) -> Callable:
        REGISTRY[name] = Benchmark(name, description, run)
        return run

    return decorate
