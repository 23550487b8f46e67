"""Benchmarks run by ``jaxlean bench``: each module here registers one.

Every benchmark measures a baseline and jaxlean side by side in one process and
reports ratios; see :mod:`jaxlean.bench._registry`. :func:`rich_report` and
:func:`write_outputs` render the results (terminal; JSON, Markdown and plots).
"""

from __future__ import annotations

import importlib
import pkgutil

from jaxlean.bench._compare import compare_results, load_results
from jaxlean.bench._registry import (
    REGISTRY,
    BenchContext,
    Benchmark,
    BenchResult,
    Comparison,
    Plot,
    Target,
    register,
)
from jaxlean.bench._report import (
    closing_lines,
    results_payload,
    rich_report,
    verdict_counts,
    write_outputs,
)

__all__ = [
    "BenchContext",
    "BenchResult",
    "Benchmark",
    "Comparison",
    "Plot",
    "Target",
    "available",
    "closing_lines",
    "compare_results",
    "load_results",
    "register",
    "results_payload",
    "rich_report",
    "verdict_counts",
    "write_outputs",
]


def available() -> dict[str, Benchmark]:
    """Import every benchmark module of this package and return the registry, by name."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return dict(sorted(REGISTRY.items()))
