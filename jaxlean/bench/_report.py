"""Render benchmark results: rich tables for the terminal, Markdown, JSON and PNG plots."""

from __future__ import annotations

import json
import math
import platform
import warnings
from pathlib import Path

import jax
from rich.table import Table

from jaxlean._units import format_bytes
from jaxlean.bench._registry import BenchResult, Plot


def format_value(value: float, unit: str) -> str:
    """Human units: bytes as KiB/MiB/GiB, seconds as µs/ms/s."""
    if not math.isfinite(value):
        return str(value)
    if unit == "bytes":
        return format_bytes(value)
    if unit == "s":
        if abs(value) >= 1:
            return f"{value:.2f} s"
        if abs(value) >= 1e-3:
            return f"{value * 1e3:.2f} ms"
        return f"{value * 1e6:.1f} µs"
    return f"{value:.4g} {unit}".strip()


def _comparison_rows(result: BenchResult) -> list[list[str]]:
    return [
        [c.case, c.metric, c.baseline_name, format_value(c.baseline, c.unit), c.variant,
         format_value(c.value, c.unit), f"{c.ratio:.3g}"]
        for c in result.comparisons
    ]


def _target_rows(result: BenchResult) -> list[list[str]]:
    return [
        [t.description, f"{t.value:.3g}", f"{t.op} {t.limit:.3g}", "pass" if t.passed else "FAIL"]
        for t in result.targets
    ]


_COMPARISON_HEADER = ["case", "metric", "baseline", "value", "jaxlean", "value", "ratio"]
_TARGET_HEADER = ["target", "measured", "goal", "result"]


def rich_tables(result: BenchResult) -> list[Table]:
    """The comparison table and the target table of one benchmark."""
    tables = []
    comparisons = Table(title=f"{result.name}: {result.title}", title_justify="left",
                        caption="ratio = jaxlean / baseline (below 1: jaxlean costs less)",
                        caption_justify="left")
    for i, header in enumerate(_COMPARISON_HEADER):
        comparisons.add_column(header, justify="right" if i in (3, 5, 6) else "left")
    for row in _comparison_rows(result):
        comparisons.add_row(*row)
    tables.append(comparisons)
    if result.targets:
        targets = Table(title=f"{result.name}: targets", title_justify="left")
        for header in _TARGET_HEADER:
            targets.add_column(header)
        for row in _target_rows(result):
            style = "green" if row[-1] == "pass" else "bold red"
            targets.add_row(*row[:-1], f"[{style}]{row[-1]}[/{style}]")
        tables.append(targets)
    return tables


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_description() -> str:
    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    return (f"{platform.node() or 'host'}: {platform.processor() or platform.machine()}, "
            f"backend {jax.default_backend()} ({', '.join(kinds)} x{len(devices)}), "
            f"python {platform.python_version()}, jax {jax.__version__}")


def markdown(results: list[BenchResult], command: str) -> str:
    """One Markdown document with every benchmark's tables and plot links."""
    parts = [f"Command: `{command}`\n\nMachine: {machine_description()}\n"]
    for result in results:
        parts.append(f"## {result.name}: {result.title}\n")
        parts.append(_markdown_table(_COMPARISON_HEADER, _comparison_rows(result)))
        parts.append("\nratio = jaxlean / baseline (below 1: jaxlean costs less)\n")
        if result.targets:
            parts.append(_markdown_table(_TARGET_HEADER, _target_rows(result)) + "\n")
        parts += [f"- {note}" for note in result.notes]
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


def write_outputs(results: list[BenchResult], out_dir: Path, command: str) -> list[Path]:
    """Write ``results.json``, ``results.md`` and one PNG per plot into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "results.json", out_dir / "results.md"]
    payload = {"command": command, "machine": machine_description(),
               "benchmarks": [r.to_dict() for r in results]}
    written[0].write_text(json.dumps(payload, indent=2))
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
