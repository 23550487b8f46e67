"""XLA's cost estimate of a compiled program, with every loop counted as often as it runs.

XLA's cost analysis counts a ``while`` loop's body and condition once, whatever
the trip count, so a scan over 128 layers costs what one layer costs. Here the
optimized HLO is split into its computations; each loop body and condition is
analysed alone (as the entry of a module of its own) and counted ``n`` and
``n + 1`` times, ``n`` being the trip count XLA annotated (``known_trip_count``),
through any nesting of loops, calls and conditionals. A loop without a known
trip count (a ``while_loop`` whose bound is data) makes the total unknown:
:class:`ProgramCost` then says so instead of giving a body counted once.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from jaxlean.compile import _jax_private

__all__ = ["LoopCost", "ProgramCost", "program_cost"]

_KEYS = ("flops", "bytes accessed")
_HEADER = re.compile(r"^(ENTRY )?%?([\w.\-]+) \(")
_OPCODE = re.compile(r" = .*? ([a-z][a-z\-]*)\(")
_NAME = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = ")
_CALLEES = re.compile(r"\b(?:calls|to_apply|condition|body|branch_computations|"
                      r"true_computation|false_computation)=(\{[^}]*\}|%?[\w.\-]+)")
_CONDITION = re.compile(r"\bcondition=%?([\w.\-]+)")
_BODY = re.compile(r"\bbody=%?([\w.\-]+)")
_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')

Cost = dict[str, float]


@dataclasses.dataclass(frozen=True)
class LoopCost:
    """One ``while`` loop: trips each time it is entered (``None``: XLA does not
    know) and the flops and bytes of one trip, inner loops multiplied in
    (``None`` when an inner loop's trip count is unknown)."""

    name: str
    trips: int | None
    flops_per_trip: float | None
    bytes_per_trip: float | None


@dataclasses.dataclass(frozen=True)
class ProgramCost:
    """The flops and bytes accessed of a whole run of the program, or ``None`` with
    ``unknown`` saying why (a loop without a known trip count, no cost analysis)."""

    flops: float | None
    bytes_accessed: float | None
    loops: tuple[LoopCost, ...] = ()
    unknown: str | None = None


class _Unknown(Exception):
    """The cost cannot be multiplied out; the message says what stops it."""


@dataclasses.dataclass(frozen=True)
class _Site:
    """An instruction that calls computations."""

    name: str
    opcode: str
    callees: tuple[str, ...]
    trips: int | None


class _Module:
    """One optimized HLO module split into computations, and their costs."""

    def __init__(self, compiled: Any, text: str):
        self.compiled = compiled
        self.blocks: dict[str, list[str]] = {}
        self.entry = ""
        name = None
        for line in text.splitlines():
            if header := _HEADER.match(line):
                name = header.group(2)
                self.blocks[name] = [line.removeprefix("ENTRY ")]
                self.entry = name if header.group(1) else self.entry
            elif name is not None:
                self.blocks[name].append(line)
                name = None if line == "}" else name
        self.sites = {name: [site for line in lines[1:] if (site := _site(line))]
                      for name, lines in self.blocks.items()}
        self._has_loop: dict[str, bool] = {}
        self._raw: dict[str, Cost] = {}
        self._total: dict[str, Cost | None] = {}
        self.loops: dict[str, LoopCost] = {}

    def has_loop(self, name: str) -> bool:
        """Whether computation ``name`` runs a loop, directly or through what it calls."""
        if name not in self._has_loop:
            self._has_loop[name] = any(
                site.opcode == "while" or any(self.has_loop(c) for c in site.callees)
                for site in self.sites[name])
        return self._has_loop[name]

    def raw(self, name: str) -> Cost:
        """XLA's cost of computation ``name`` run once, each loop in it counted once."""
        if name not in self._raw:
            blocks = [("ENTRY " if other == name else "") + "\n".join(lines)
                      for other, lines in self.blocks.items()]
            cost = _jax_private.hlo_cost(self.compiled, "\n\n".join(["HloModule cost", *blocks]))
            self._raw[name] = {key: float(cost.get(key, 0.0)) for key in _KEYS}
        return self._raw[name]

    def total(self, name: str) -> Cost | None:
        """The cost of computation ``name`` run once, every loop in it multiplied out;
        ``None`` when a loop's trip count is unknown."""
        if name not in self._total:
            self._total[name] = self._total_of(name)
        return self._total[name]

    def _total_of(self, name: str) -> Cost | None:
        cost: Cost | None = dict(self.raw(name))
        for site in self.sites[name]:
            if site.opcode != "while" and not any(self.has_loop(c) for c in site.callees):
                continue  # XLA counted it right
            raw = [self.raw(c) for c in site.callees]
            totals = [self.total(c) for c in site.callees]
            if site.opcode == "while":
                counted = _add(*raw)  # XLA: body and condition once
                ran = self._loop(site, *totals)
            elif site.opcode == "conditional":  # XLA: the costliest branch
                counted, ran = _max(raw), None if None in totals else _max(totals)
            elif site.opcode == "call":
                counted, ran = _add(*raw), None if None in totals else _add(*totals)
            else:
                raise _Unknown(f"a loop inside `{site.opcode}` {site.name}")
            cost = None if cost is None or ran is None else _add(cost, ran, _scale(counted, -1))
        return cost

    def _loop(self, site: _Site, body: Cost | None, condition: Cost | None) -> Cost | None:
        per_trip = None if body is None or condition is None else _add(body, condition)
        self.loops[site.name] = LoopCost(
            site.name, site.trips,
            None if per_trip is None else per_trip["flops"],
            None if per_trip is None else per_trip["bytes accessed"])
        if per_trip is None or site.trips is None:
            return None
        return _add(_scale(per_trip, site.trips), condition)


def _site(line: str) -> _Site | None:
    callees = [name.strip().lstrip("%") for group in _CALLEES.findall(line)
               for name in group.strip("{}").split(",")]
    if not callees:
        return None
    opcode = _OPCODE.search(line).group(1)
    if opcode == "while":  # body first, then condition, whatever the printed order
        callees = [_BODY.search(line).group(1), _CONDITION.search(line).group(1)]
    trips = _TRIPS.search(line)
    return _Site(_NAME.match(line).group(1), opcode, tuple(callees),
                 int(trips.group(1)) if trips else None)


def _add(*costs: Cost) -> Cost:
    return {key: sum(cost[key] for cost in costs) for key in _KEYS}


def _scale(cost: Cost, factor: float) -> Cost:
    return {key: factor * cost[key] for key in _KEYS}


def _max(costs: list[Cost]) -> Cost:
    return {key: max(cost[key] for cost in costs) for key in _KEYS}


def _xla_cost(compiled: Any) -> Cost | None:
    """XLA's own estimate for the whole program (loops counted once); ``None`` when the
    backend has none."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # not every backend implements it
        return None
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else None
    return {key: float(cost.get(key, 0.0)) for key in _KEYS} if cost else None


def program_cost(compiled: Any) -> ProgramCost:
    """The cost of one call of ``compiled`` (a ``jax.stages.Compiled``), loops multiplied
    by their trip counts; see the module docstring."""
    whole = _xla_cost(compiled)
    if whole is None:
        return ProgramCost(None, None, unknown="this backend has no cost analysis")
    try:
        modules = [_Module(compiled, text) for text in _jax_private.optimized_hlo(compiled)]
        if not any(module.has_loop(module.entry) for module in modules):
            return ProgramCost(whole["flops"], whole["bytes accessed"])
        totals = [module.total(module.entry) for module in modules]
    except Exception as error:  # a missing internal, an HLO form not handled: say so, never fail
        return ProgramCost(None, None, unknown=f"loops not multiplied out: {error}")
    loops = tuple(loop for module in modules for loop in module.loops.values())
    if None in totals:
        unknown = [loop.name for loop in loops if loop.trips is None]
        return ProgramCost(None, None, loops, unknown="XLA does not know the trip count of "
                           + ", ".join(unknown))
    total = _add(*totals)
    return ProgramCost(total["flops"], total["bytes accessed"], loops)
