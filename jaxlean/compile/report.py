"""One function's compile, stage by stage: trace, lower, compile, memory, and the cache's answer.

:func:`compile_report` times each stage ahead of time and says whether the
persistent cache served the compile, so a slow start can be attributed. Its
flops and bytes accessed are XLA's estimate with every loop multiplied by its
trip count (:mod:`jaxlean.compile.program_cost`), or "unknown" with the reason.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from typing import Any

import jax
from rich.table import Table

from jaxlean._units import format_bytes
from jaxlean.compile.program_cost import LoopCost, program_cost
from jaxlean.compile.stats import install_listeners, snapshot

__all__ = ["CompileReport", "compile_report"]

_HLO_INSTRUCTION = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?%[\w.\-]+[ \t]*=[ \t]", re.MULTILINE)
_STABLEHLO_OP = re.compile(r'^[ \t]*(?:%[^=\n]*=[ \t]*)?"?(?:stablehlo|chlo|mhlo)\.', re.MULTILINE)
_LOOP_ROWS = 8


@dataclasses.dataclass(frozen=True)
class CompileReport:
    """Where one function's compile time and memory go; see :func:`compile_report`.

    ``flops`` and ``bytes_accessed`` count one call with every loop run its trip
    count; they are ``None`` when that cannot be known, ``cost_unknown`` saying why
    (a loop whose trip count XLA does not know, a backend without cost analysis).
    ``loops`` gives each loop's trips and per-trip cost.
    """

    name: str
    trace_s: float
    lower_s: float
    compile_s: float
    stablehlo_ops: int
    hlo_instructions: int
    flops: float | None
    bytes_accessed: float | None
    cost_unknown: str | None
    loops: tuple[LoopCost, ...]
    argument_bytes: int | None
    output_bytes: int | None
    temp_bytes: int | None
    persistent_cache: str
    saved_s: float

    @property
    def total_s(self) -> float:
        return self.trace_s + self.lower_s + self.compile_s

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "total_s": self.total_s}

    def _rows(self) -> list[tuple[str, str]]:
        def size(value: int | None) -> str:
            return "n/a" if value is None else format_bytes(value)

        return [
            ("trace", f"{self.trace_s:.3f} s"), ("lower", f"{self.lower_s:.3f} s"),
            ("compile", f"{self.compile_s:.3f} s"), ("total", f"{self.total_s:.3f} s"),
            ("StableHLO ops (lowered)", str(self.stablehlo_ops)),
            ("HLO instructions (optimized)", str(self.hlo_instructions)),
            *self._cost_rows(),
            ("argument bytes", size(self.argument_bytes)),
            ("output bytes", size(self.output_bytes)),
            ("temp bytes", size(self.temp_bytes)),
            ("persistent cache", self.persistent_cache
             + (f" (saved {self.saved_s:.1f} s)" if self.persistent_cache == "hit" else "")),
        ]

    def _cost_rows(self) -> list[tuple[str, str]]:
        """Flops and bytes accessed (loops multiplied out) or "unknown" with the reason,
        then each loop's trips and per-trip cost."""
        if self.flops is None or self.bytes_accessed is None:
            rows = [("flops", "unknown"), ("bytes accessed", "unknown"),
                    ("  unknown because", str(self.cost_unknown))]
        else:
            rows = [("flops" + (" (loops x trips)" if self.loops else ""), f"{self.flops:.4g}"),
                    ("bytes accessed", format_bytes(self.bytes_accessed))]
        for loop in self.loops[:_LOOP_ROWS]:
            per_trip = "?" if loop.flops_per_trip is None else f"{loop.flops_per_trip:.4g}"
            trips = "unknown" if loop.trips is None else str(loop.trips)
            rows.append((f"  loop {loop.name}", f"{trips} trips x {per_trip} flops"))
        if len(self.loops) > _LOOP_ROWS:
            rows.append(("  loops not shown", str(len(self.loops) - _LOOP_ROWS)))
        return rows

    def __rich__(self) -> Table:
        table = Table(title=f"compile report: {self.name}", title_justify="left")
        table.add_column("stage / quantity")
        table.add_column("value", justify="right")
        for row in self._rows():
            table.add_row(*row)
        return table

    def __str__(self) -> str:
        return "\n".join([f"compile report: {self.name}"]
                         + [f"  {key:<30}{value}" for key, value in self._rows()])


def _memory(compiled: Any) -> Any:
    try:
        return compiled.memory_analysis()
    except Exception:  # not every backend implements it
        return None


def _cache_outcome(compiles: int, requests: int, hits: int) -> str:
    if compiles == 0:
        return "in-memory"
    if requests == 0:
        return "off"
    return "hit" if hits == requests else "miss"


def compile_report(fn: Callable, *args: Any, **kwargs: Any) -> CompileReport:
    """Trace, lower and compile ``fn(*args, **kwargs)`` ahead of time and report each stage.

    ``fn`` may be a plain function (wrapped in a fresh ``jax.jit``) or an already
    jitted one (to pass ``static_argnums`` and the like). The persistent cache
    column is ``hit``/``miss`` when the persistent cache was asked, ``off`` when
    the compile did not use it (cache disabled), and ``in-memory`` when JAX's
    in-process caches answered without a backend compile (the same function
    reported twice; ``jax.clear_caches()`` first to measure a real compile).

    Returns:
        A :class:`CompileReport`; print it (rich renders a table) or ``.to_dict()`` it.
    """
    install_listeners()
    jitted = fn if hasattr(fn, "trace") else jax.jit(fn)
    start = time.perf_counter()
    traced = jitted.trace(*args, **kwargs)
    traced_at = time.perf_counter()
    lowered = traced.lower()
    lowered_at = time.perf_counter()
    before = snapshot()
    compiled = lowered.compile()
    compiled_at = time.perf_counter()
    after = snapshot()
    requests, hits = after.requests - before.requests, after.hits - before.hits
    memory = _memory(compiled)
    cost = program_cost(compiled)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return CompileReport(
        name=name,
        trace_s=traced_at - start,
        lower_s=lowered_at - traced_at,
        compile_s=compiled_at - lowered_at,
        stablehlo_ops=len(_STABLEHLO_OP.findall(lowered.as_text())),
        hlo_instructions=len(_HLO_INSTRUCTION.findall(compiled.as_text() or "")),
        flops=cost.flops,
        bytes_accessed=cost.bytes_accessed,
        cost_unknown=cost.unknown,
        loops=cost.loops,
        argument_bytes=getattr(memory, "argument_size_in_bytes", None),
        output_bytes=getattr(memory, "output_size_in_bytes", None),
        temp_bytes=getattr(memory, "temp_size_in_bytes", None),
        persistent_cache=_cache_outcome(after.compiles - before.compiles, requests, hits),
        saved_s=after.saved_s - before.saved_s,
    )
