"""Render benchmark results: tables for the terminal, Markdown, JSON and PNG plots.

Comparisons are shown one table per jaxlean variant: its baselines side by
side, then the variant, then one ratio per baseline, with each case as a
heading row. Names are never cut: long headers and cases wrap, values do not,
so the tables read in an 80-column terminal and in a log. A side that was not
measured shows ``-``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import platform
import textwrap
import warnings
from pathlib import Path

import jax
from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from jaxlean._machine import this_machine
from jaxlean._units import format_bytes
from jaxlean.bench._registry import BenchResult, Comparison, Plot

__all__ = [
    "ComparisonRow",
    "ComparisonTable",
    "closing_lines",
    "comparison_tables",
    "format_band",
    "format_number",
    "format_value",
    "machine_description",
    "markdown",
    "measured_on",
    "results_payload",
    "rich_report",
    "verdict_counts",
    "write_outputs",
]

MISSING = "-"
RATIO_NOTE = ("ratio = jaxlean / baseline (below 1: jaxlean costs less); times are medians "
              "of alternating runs, ±N% is half the range of the samples")
_HEADER_WIDTH = 12


def format_value(value: float, unit: str) -> str:
    """Human units: bytes as KiB/MiB/GiB, seconds as µs/ms/s; ``-`` where not measured."""
    if not math.isfinite(value):
        return MISSING
    if unit == "bytes":
        return format_bytes(value)
    if unit == "s":
        if abs(value) >= 1:
            return f"{value:.2f} s"
        if abs(value) >= 1e-3:
            return f"{value * 1e3:.2f} ms"
        return f"{value * 1e6:.1f} µs"
    return f"{value:.4g} {unit}".strip()


def format_number(value: float) -> str:
    """A ratio or target value to three significant digits; ``-`` where not measured."""
    return f"{value:.3g}" if math.isfinite(value) else MISSING


def _cell(value: float, spread: float, unit: str) -> str:
    """A value, with ``±N%`` (half the range of its samples) when it was timed repeatedly."""
    text = format_value(value, unit)
    if math.isfinite(value) and math.isfinite(spread):
        text += f" ±{spread * 100:.0f}%"
    return text


@dataclasses.dataclass(frozen=True)
class ComparisonRow:
    """One metric of one case: a value per baseline, the variant's value, a ratio per baseline."""

    case: str
    metric: str
    values: tuple[str, ...]
    ratios: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class ComparisonTable:
    """The comparisons of one jaxlean variant against its baselines, in measured order."""

    variant: str
    baselines: tuple[str, ...]
    rows: tuple[ComparisonRow, ...]

    @property
    def sides(self) -> list[str]:
        """The value columns: the baselines, then the variant."""
        return [*self.baselines, self.variant]

    @property
    def ratio_names(self) -> list[str]:
        return (["ratio"] if len(self.baselines) == 1
                else [f"ratio to {name}" for name in self.baselines])


def comparison_tables(result: BenchResult) -> list[ComparisonTable]:
    """Group a result's comparisons by variant; rows keep the order they were measured in."""
    by_variant: dict[str, dict[tuple[str, str], dict[str, Comparison]]] = {}
    for c in result.comparisons:
        by_variant.setdefault(c.variant, {}).setdefault((c.case, c.metric), {})[
            c.baseline_name] = c
    tables = []
    for variant, rows in by_variant.items():
        baselines = tuple(dict.fromkeys(name for row in rows.values() for name in row))
        out = []
        for (case, metric), row in rows.items():
            first = next(iter(row.values()))
            values = [_cell(row[name].baseline, row[name].baseline_spread, row[name].unit)
                      if name in row else MISSING for name in baselines]
            ratios = [format_number(row[name].ratio) if name in row else MISSING
                      for name in baselines]
            ours = _cell(first.value, first.spread, first.unit)
            out.append(ComparisonRow(case, metric, (*values, ours), tuple(ratios)))
        tables.append(ComparisonTable(variant, baselines, tuple(out)))
    return tables


_RESULT_WORDS = {"met": "pass", "within noise": "within noise", "missed": "FAIL"}
_RESULT_STYLES = {"pass": "green", "within noise": "yellow", "FAIL": "bold red"}


def format_band(band: float) -> str:
    """A target's noise band: ``±N%`` of the goal, ``exact`` for a deterministic quantity,
    ``-`` where none was stated."""
    if not math.isfinite(band):
        return MISSING
    return f"±{band * 100:.0f}%" if band else "exact"


def _target_rows(result: BenchResult) -> list[list[str]]:
    return [[t.description, format_number(t.value), f"{t.op} {t.limit:.3g}",
             format_band(t.band), _RESULT_WORDS[t.verdict]] for t in result.claimed_targets]


_TARGET_HEADER = ["target", "measured", "goal", "noise band", "result"]
TARGET_NOTE = ("noise band: a result within it of the goal is reported as within noise (the "
               "stated band of the measurement, or the spread of its alternating samples "
               "if wider); exact: a deterministic quantity; -: no band stated")


def _full_size_note(result: BenchResult) -> str | None:
    skipped = result.full_size_targets
    if not skipped:
        return None
    listed = "; ".join(t.description for t in skipped)
    return (f"{len(skipped)} target(s) hold at full sizes only and are not checked by --quick "
            f"(run `jaxlean bench {result.name}`): {listed}")


def verdict_counts(results: list[BenchResult]) -> dict[str, int]:
    """How many claimed targets were met, within noise and missed, over ``results``."""
    counts = {"met": 0, "within noise": 0, "missed": 0}
    for result in results:
        for target in result.claimed_targets:
            counts[target.verdict] += 1
    return counts


def closing_lines(results: list[BenchResult]) -> list[str]:
    """One sentence per benchmark (its headline, from its measurements), then, after a quick
    run, the command that runs the same benchmarks at full size."""
    lines = [f"{r.headline}" for r in results if r.headline]
    loads = [r.load for r in results if math.isfinite(r.load)]
    cores = this_machine().cores
    if loads and max(loads) > cores:
        lines.append(f"The machine was busy: load average up to {max(loads):.1f} on {cores} "
                     "cores while benchmarks ran, so timed figures carry other jobs' noise; "
                     "rerun on an idle machine to compare.")
    quick = [r.name for r in results if r.quick]
    if quick:
        lines.append(f"full sizes, every target: jaxlean bench {' '.join(quick)}")
    return lines


def _wrap_header(name: str) -> str:
    return "\n".join(textwrap.wrap(name, _HEADER_WIDTH, break_long_words=False)) or name


def _rich_comparisons(table: ComparisonTable) -> Table:
    """One column per side; with one baseline a ratio column, else a ratio row under each value.

    Value cells never wrap and headers wrap at word boundaries, so the table
    stays narrow; the case/metric column takes the remaining width.
    """
    single = len(table.baselines) == 1
    out = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=True)
    out.add_column("case / metric", overflow="fold", ratio=1, min_width=16)
    for header in table.sides + (["ratio"] if single else []):
        out.add_column(_wrap_header(header), justify="right", no_wrap=True)
    blank = [""] * (len(table.sides) + single)
    case = None
    for row in table.rows:
        if row.case != case:
            case = row.case
            out.add_row(Text(case, style="bold"), *blank)
        metric = Padding(Text(row.metric), (0, 0, 0, 2))
        if single:
            out.add_row(metric, *row.values, *row.ratios)
        else:
            out.add_row(metric, *row.values)
            out.add_row(Padding(Text("ratio"), (0, 0, 0, 4)), *row.ratios, "", style="dim")
    return out


def rich_report(result: BenchResult) -> Group:
    """What the terminal shows for one benchmark: title, comparison tables, targets, notes."""
    parts: list[RenderableType] = [Text(f"{result.name}: {result.title}", style="bold")]
    parts += [_rich_comparisons(table) for table in comparison_tables(result)]
    if result.comparisons:
        parts.append(Text(RATIO_NOTE, style="dim"))
    rows = _target_rows(result)
    if rows:
        targets = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        targets.add_column("target", overflow="fold", ratio=1)
        for header in _TARGET_HEADER[1:]:
            targets.add_column(header, no_wrap=True, justify="right")
        for row in rows:
            targets.add_row(Text(row[0]), *row[1:-1],
                            Text(row[-1], style=_RESULT_STYLES[row[-1]]))
        parts.append(targets)
        parts.append(Text(TARGET_NOTE, style="dim"))
    notes = [*result.notes, *filter(None, [_full_size_note(result), measured_on(result)])]
    if notes:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold", ratio=1)
        for note in notes:
            grid.add_row(" -", Text(note))
        parts.append(grid)
    return Group(*parts)


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_description() -> str:
    """The CPU (model, usable cores, caches), JAX's backend and versions: what a timed
    figure depends on."""
    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    return (f"{this_machine().describe()}; backend {jax.default_backend()} "
            f"({', '.join(kinds)} x{len(devices)}), python {platform.python_version()}, "
            f"jax {jax.__version__}")


def measured_on(result: BenchResult) -> str | None:
    """``"measured on AMD EPYC (2 cores), 1-min load average 0.4 at start, 1.2 at end"``:
    the CPU and load of one benchmark's run; None where neither was recorded."""
    where = result.machine.get("cpu")
    if where and result.machine.get("cores"):
        where += f" ({result.machine['cores']} cores)"
    loads = [f"{value:.1f} at {when}" for value, when in ((result.load_start, "start"),
                                                          (result.load, "end"))
             if math.isfinite(value)]
    parts = ([f"measured on {where}"] if where else []) + (
        [f"1-min load average {', '.join(loads)}"] if loads else [])
    return ", ".join(parts) or None


def markdown(results: list[BenchResult], command: str) -> str:
    """One Markdown document with every benchmark's tables and plot links."""
    parts = [f"Command: `{command}`\n\nMachine: {machine_description()}\n"]
    for result in results:
        parts.append(f"## {result.name}: {result.title}\n")
        where = measured_on(result)
        if where:
            parts.append(f"{where[0].upper()}{where[1:]}.\n")
        for table in comparison_tables(result):
            rows = [[r.case, r.metric, *r.values, *r.ratios] for r in table.rows]
            header = ["case", "metric", *table.sides, *table.ratio_names]
            parts.append(_markdown_table(header, rows) + "\n")
        if result.comparisons:
            parts.append(RATIO_NOTE + "\n")
        if result.claimed_targets:
            parts.append(_markdown_table(_TARGET_HEADER, _target_rows(result)) + "\n")
            parts.append(TARGET_NOTE + "\n")
        notes = [*result.notes, *filter(None, [_full_size_note(result)])]
        parts += [f"- {note}" for note in notes]
        parts += [f"\n![{plot.title}]({result.name}_{plot.name}.png)\n" for plot in result.plots]
    return "\n".join(parts)


def _draw(ax, plot: Plot) -> None:
    """Lines over numeric x values; grouped bars over categories (string x values)."""
    series = list(plot.series.items())
    if not any(isinstance(x, str) for _, (xs, _) in series for x in xs):
        for label, (xs, ys) in series:
            ax.plot(xs, ys, marker="o", label=label)
        return
    categories = list(dict.fromkeys(x for _, (xs, _) in series for x in xs))
    width = 0.8 / len(series)
    for i, (label, (xs, ys)) in enumerate(series):
        positions = [categories.index(x) + (i - (len(series) - 1) / 2) * width for x in xs]
        ax.bar(positions, ys, width, label=label)
    ax.set_xticks(range(len(categories)), categories, rotation=15)


def results_payload(results: list[BenchResult], command: str) -> dict:
    """What ``results.json`` holds: the command, the machine and every benchmark's result."""
    return {"command": command, "machine": machine_description(),
            "cpu": this_machine().to_dict(), "benchmarks": [r.to_dict() for r in results]}


def write_outputs(results: list[BenchResult], out_dir: Path, command: str) -> list[Path]:
    """Write ``results.json``, ``results.md`` and one PNG per plot into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "results.json", out_dir / "results.md"]
    written[0].write_text(json.dumps(results_payload(results, command), indent=2))
    written[1].write_text(markdown(results, command))
    try:
        import matplotlib
    except ImportError:
        warnings.warn("matplotlib is not installed (pip install 'jaxlean[plot]'): no PNG plots "
                      "written", stacklevel=2)
        return written
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for result in results:
        for plot in result.plots:
            fig, ax = plt.subplots(figsize=(6, 4))
            _draw(ax, plot)
            ax.set(title=plot.title, xlabel=plot.xlabel, ylabel=plot.ylabel)
            if plot.logx:
                ax.set_xscale("log")
            if plot.logy:
                ax.set_yscale("log")
            ax.grid(alpha=0.3)
            ax.legend()
            fig.tight_layout()
            path = out_dir / f"{result.name}_{plot.name}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written
