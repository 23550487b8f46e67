"""``Sequential``: layers applied in order, with every run of identical layers scanned.

At construction the layers are grouped, once, into a plan: a maximal run of
consecutive layers of identical structure becomes one stacked ``scan_layers``
call, a repeating pattern (A, B, A, B, ...) becomes a scan over the pattern
block, and whatever is left (a different first or last layer) is applied alone.
The result traces each distinct layer kind once, however deep the model is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx

from jaxlean._pytree import first_difference
from jaxlean.nn.layers import Nested, scan_layers, stack, unstack
from jaxlean.nn.remat import RematOption, resolve_policy


@dataclasses.dataclass(frozen=True)
class Run:
    """Layers ``start .. start + period * repeats - 1``: a block of ``period`` layers repeated."""

    start: int
    period: int
    repeats: int

    @property
    def stop(self) -> int:
        return self.start + self.period * self.repeats

    @property
    def scanned(self) -> bool:
        return self.repeats > 1


def layer_kinds(layers: Sequence[Any]) -> list[int]:
    """Label each layer with the index of its structure class (first occurrence order)."""
    representatives: list[Any] = []
    kinds = []
    for layer in layers:
        for kind, representative in enumerate(representatives):
            if first_difference(representative, layer) is None:
                kinds.append(kind)
                break
        else:
            kinds.append(len(representatives))
            representatives.append(layer)
    return kinds


def _repeats(kinds: Sequence[int], start: int, period: int) -> int:
    pattern = kinds[start:start + period]
    repeats = 1
    while kinds[start + repeats * period:start + (repeats + 1) * period] == pattern:
        repeats += 1
    return repeats


def plan_runs(kinds: Sequence[int]) -> list[Run]:
    """Split a sequence of layer kinds into runs, greedily covering the most layers per scan.

    At each position every period ``p`` is tried; the one whose repetitions cover the
    most layers wins (the shortest period on ties). A position where nothing repeats
    is a run of one layer, applied alone.
    """
    runs, start = [], 0
    while start < len(kinds):
        best = Run(start, 1, 1)
        for period in range(1, (len(kinds) - start) // 2 + 1):
            repeats = _repeats(kinds, start, period)
            if repeats > 1 and period * repeats > best.period * best.repeats:
                best = Run(start, period, repeats)
        runs.append(best)
        start = best.stop
    return runs


def _apply_block(block: tuple, x: Any) -> Any:
    for layer in block:
        x = layer(x)
    return x


class Sequential(eqx.Module):
    """Apply ``layers`` in order (``x = layer(x)``), scanning each run of identical layers.

    Args:
        layers: callables that are pytrees (Equinox modules, or anything callable as
            ``layer(x)``).
        remat: remat option for each scanned layer block (see :mod:`jaxlean.nn.remat`).
        nested: two-level checkpointing block size for scanned runs (see ``scan_layers``).
    """

    parts: tuple
    runs: tuple[Run, ...] = eqx.field(static=True)
    remat: Any = eqx.field(static=True)
    nested: Nested = eqx.field(static=True)

    def __init__(self, layers: Sequence[Callable], *, remat: RematOption = None,
                 nested: Nested = None):
        layers = list(layers)
        resolve_policy(remat)
        self.runs = tuple(plan_runs(layer_kinds(layers)))
        self.parts = tuple(
            stack([tuple(layers[run.start + i * run.period:run.start + (i + 1) * run.period])
                   for i in range(run.repeats)])
            if run.scanned else tuple(layers[run.start:run.stop])
            for run in self.runs
        )
        self.remat = remat
        self.nested = nested

    def __call__(self, x: Any) -> Any:
        for run, part in zip(self.runs, self.parts, strict=True):
            if run.scanned:
                x, _ = scan_layers(lambda block, h, _: (_apply_block(block, h), None), part, x,
                                   remat=self.remat, nested=self.nested)
            else:
                x = _apply_block(part, x)
        return x

    @property
    def layers(self) -> list[Any]:
        """The layers as a flat list, in order (scanned runs unstacked)."""
        out: list[Any] = []
        for run, part in zip(self.runs, self.parts, strict=True):
            blocks = unstack(part) if run.scanned else [part]
            for block in blocks:
                out.extend(block)
        return out

    def describe_plan(self) -> str:
        """One line per run: which layers were scanned together and which run alone."""
        lines = []
        for run, part in zip(self.runs, self.parts, strict=True):
            block = unstack(part)[0] if run.scanned else part
            names = ", ".join(type(layer).__name__ for layer in block)
            span = f"layers {run.start}..{run.stop - 1}" if run.stop - run.start > 1 else \
                f"layer {run.start}"
            if run.scanned:
                lines.append(f"{span}: scan {run.repeats} x [{names}]")
            else:
                lines.append(f"{span}: {names} (alone)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        total = sum(run.stop - run.start for run in self.runs)
        body = "\n".join("  " + line for line in self.describe_plan().splitlines())
        return f"Sequential({total} layers, remat={self.remat!r}, nested={self.nested})\n{body}"
