"""Guard the headline figures: this run's results against committed ones, figure by figure.

``jaxlean bench NAME ... --compare [BASELINE]`` (or ``--results RUN.json`` to compare a
run already written) reads two ``results.json`` files and reports every figure that
moved beyond its noise band. A figure is a target's measured value or a comparison's
ratio (jaxlean / baseline), keyed by benchmark, description and sides, and carries a
direction (a ratio is better lower; a target as its goal says) and a relative band:

- a target's own band (its stated noise, widened to the spread it measured);
- a byte count's ratio is exact (XLA's memory analysis is deterministic);
- a timed ratio's band is the sum of its two sides' spreads, and at least
  :data:`DEFAULT_BAND`, since the spread inside one run understates the
  run-to-run one;
- a figure with no band stated or measured gets :data:`DEFAULT_BAND`.

The band used is the wider of the two runs'. Only benchmarks present in both files
are compared, and only at the same size setting (quick or full); a figure of the
baseline that this run of its benchmark no longer reports is flagged as missing.
Runs on different CPUs are compared too, with a warning: a wall-time ratio holds
on the CPU it was measured on.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Literal

from jaxlean.errors import ConfigError

__all__ = ["DEFAULT_BAND", "Figure", "Move", "Report", "compare_results", "figures",
           "load_results"]

DEFAULT_BAND = 0.10
"""Relative band of a figure that states none, and the least band of a timed ratio."""

Status = Literal["worse", "better", "within band", "missing", "new"]


@dataclasses.dataclass(frozen=True)
class Figure:
    """One headline number of a benchmark run."""

    benchmark: str
    name: str
    value: float
    band: float
    lower_is_better: bool

    @property
    def key(self) -> tuple[str, str]:
        return self.benchmark, self.name


@dataclasses.dataclass(frozen=True)
class Move:
    """How one figure compares between the baseline and this run."""

    benchmark: str
    name: str
    status: Status
    old: float = float("nan")
    new: float = float("nan")
    band: float = float("nan")

    @property
    def change(self) -> float:
        """``new / old - 1`` (NaN where either is missing or ``old`` is 0)."""
        if not (math.isfinite(self.old) and math.isfinite(self.new)) or not self.old:
            return float("nan")
        return self.new / self.old - 1

    @property
    def flagged(self) -> bool:
        """Worse beyond its band, or no longer reported."""
        return self.status in ("worse", "missing")

    def describe(self) -> str:
        if self.status == "missing":
            return f"{self.benchmark}: {self.name}: missing (was {self.old:.4g})"
        if self.status == "new":
            return f"{self.benchmark}: {self.name}: new, {self.new:.4g}"
        return (f"{self.benchmark}: {self.name}: {self.old:.4g} -> {self.new:.4g} "
                f"({self.change:+.1%}, band ±{self.band:.0%}): {self.status}")


@dataclasses.dataclass(frozen=True)
class Report:
    """Every compared figure, and what could not be compared."""

    moves: tuple[Move, ...]
    warnings: tuple[str, ...] = ()

    @property
    def flagged(self) -> list[Move]:
        return [m for m in self.moves if m.flagged]

    @property
    def moved(self) -> list[Move]:
        """Figures beyond their band either way, missing ones, in the order compared."""
        return [m for m in self.moves if m.status in ("worse", "better", "missing")]

    def lines(self) -> list[str]:
        counts = {s: sum(m.status == s for m in self.moves)
                  for s in ("within band", "better", "worse", "missing", "new")}
        head = (f"compared {len(self.moves)} figure(s): {counts['within band']} within their "
                f"band, {counts['better']} better, {counts['worse']} worse, "
                f"{counts['missing']} missing, {counts['new']} new")
        return [*self.warnings, head, *(m.describe() for m in self.moved)]


def _band(*bands: float) -> float:
    known = [b for b in bands if math.isfinite(b)]
    return max(known) if known else DEFAULT_BAND


def _comparison_band(row: dict) -> float:
    if row.get("unit") == "bytes":
        return 0.0
    spreads = [row.get("baseline_spread", math.nan), row.get("spread", math.nan)]
    measured = sum(spreads) if all(math.isfinite(s) for s in spreads) else math.nan
    return _band(measured, DEFAULT_BAND) if row.get("unit") == "s" else _band(measured)


def figures(benchmark: dict) -> list[Figure]:
    """The figures of one benchmark of a ``results.json`` (its ``benchmarks`` entry)."""
    name, out = benchmark["name"], []
    for row in benchmark.get("targets", []):
        if row.get("claimed", True):
            out.append(Figure(name, f"target: {row['description']}", float(row["value"]),
                              _band(row.get("band", math.nan)), row.get("op", "<=") == "<="))
    for row in benchmark.get("comparisons", []):
        ratio = float(row.get("ratio", math.nan))
        if math.isfinite(ratio):
            label = (f"{row['case']}, {row['metric']}: {row.get('variant', 'jaxlean')} / "
                     f"{row.get('baseline_name', 'baseline')}")
            out.append(Figure(name, label, ratio, _comparison_band(row), True))
    return out


def _status(old: Figure, new: Figure, band: float) -> Status:
    if not math.isfinite(new.value):
        return "within band" if not math.isfinite(old.value) else "missing"
    if not math.isfinite(old.value):
        return "new"
    if old.value == new.value:
        return "within band"
    change = new.value / old.value - 1 if old.value else math.copysign(math.inf, new.value)
    if abs(change) <= band:
        return "within band"
    return "better" if (change < 0) == old.lower_is_better else "worse"


def _machine_warning(name: str, old: dict, new: dict) -> str | None:
    before, now = old.get("machine") or {}, new.get("machine") or {}
    if not before or not now or (before.get("cpu"), before.get("cores")) == (
            now.get("cpu"), now.get("cores")):
        return None
    return (f"{name}: the baseline was measured on {before.get('cpu')} "
            f"({before.get('cores')} cores), this run on {now.get('cpu')} "
            f"({now.get('cores')} cores): wall-time figures depend on the CPU")


def compare_results(baseline: dict, current: dict) -> Report:
    """Compare two ``results.json`` payloads (see the module docstring)."""
    old_by_name = {b["name"]: b for b in baseline.get("benchmarks", [])}
    moves: list[Move] = []
    warnings: list[str] = []
    for bench in current.get("benchmarks", []):
        name = bench["name"]
        old_bench = old_by_name.get(name)
        if old_bench is None:
            warnings.append(f"{name}: not in the baseline, not compared")
            continue
        if bool(old_bench.get("quick")) != bool(bench.get("quick")):
            sizes = {True: "quick", False: "full"}
            warnings.append(f"{name}: the baseline ran at {sizes[bool(old_bench.get('quick'))]} "
                            f"sizes, this run at {sizes[bool(bench.get('quick'))]}: not compared")
            continue
        warning = _machine_warning(name, old_bench, bench)
        if warning:
            warnings.append(warning)
        new = {f.key: f for f in figures(bench)}
        for old in figures(old_bench):
            if old.key not in new:
                moves.append(Move(name, old.name, "missing", old=old.value))
                continue
            fig = new.pop(old.key)
            band = _band(old.band, fig.band)
            moves.append(Move(name, old.name, _status(old, fig, band), old.value, fig.value,
                              band))
        moves += [Move(name, f.name, "new", new=f.value) for f in new.values()]
    return Report(tuple(moves), tuple(warnings))


def load_results(path: str | Path) -> dict[str, Any]:
    """A ``results.json`` written by ``jaxlean bench --out``; ConfigError naming the file
    if it cannot be read or is not one."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"cannot read benchmark results {path}: {error}") from error
    if not isinstance(payload, dict) or not isinstance(payload.get("benchmarks"), list):
        raise ConfigError(f"{path} is not a results.json of `jaxlean bench --out` (no "
                          "'benchmarks' list)")
    return payload
