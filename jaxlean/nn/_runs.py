"""Runs of identical modules in a chain: planned once, each traced once.

A chain is a sequence of modules where each one's whole output is the next
one's only input: a :class:`~jaxlean.nn.sequential.Sequential`, or a linear
stretch of a :class:`~jaxlean.nn.graph.Graph`. Planning groups it, once at
construction and in plain Python, into :class:`Run` s: a maximal stretch of
modules of identical structure (same types, parameter shapes and dtypes, equal
static fields), or a repeating pattern of them (A, B, A, B, ...), becomes one
``scan_layers`` over the stacked pattern; whatever does not repeat runs alone.
Executing a run is also here, so that every user of the planner gives the
options the same meaning:

- ``remat``: each step of a run is rematerialised (see :mod:`jaxlean.nn.remat`):
  one scanned block, or one module run alone, so no module escapes the option.
- ``nested``: two-level checkpointing of every scanned run (see ``scan_layers``).
- ``scan``: ``False`` runs every module alone, an unrolled reference with the
  same values.

A run whose first block changes the structure of its input (a fan-in tuple
reduced to one array, say) runs that block alone and scans the rest; a run
whose every block changes it runs unrolled. That is decided from shapes when
the run is traced, since the input's shapes are not known at construction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax

from jaxlean._pytree import first_difference, is_array
from jaxlean.errors import ConfigError
from jaxlean.nn.layers import Nested, check_nested, depth_of, scan_layers, stack, take_layers
from jaxlean.nn.remat import RematOption, remat_body, resolve_policy


@dataclasses.dataclass(frozen=True)
class Run:
    """Modules ``start .. stop - 1`` of a chain: a block of ``period`` modules, ``repeats`` times.

    A run with ``repeats > 1`` is scanned; a run of one module is applied alone.
    """

    start: int
    period: int
    repeats: int

    @property
    def stop(self) -> int:
        return self.start + self.period * self.repeats

    @property
    def scanned(self) -> bool:
        return self.repeats > 1

    def __str__(self) -> str:
        if not self.scanned:
            return f"module {self.start} alone"
        return (f"modules {self.start}..{self.stop - 1}: a block of {self.period} scanned "
                f"{self.repeats} times")


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How runs execute: ``remat``, ``nested`` and ``scan``, checked once at construction.

    Raises:
        ConfigError: an unknown remat name, a bad ``nested`` or a non-bool ``scan``,
            naming the option.
    """

    remat: RematOption = None
    nested: Nested = None
    scan: bool = True

    def __post_init__(self) -> None:
        resolve_policy(self.remat)
        check_nested(self.nested)
        if not isinstance(self.scan, bool):
            raise ConfigError(f"scan must be True or False, got {self.scan!r}")

    def __str__(self) -> str:
        return f"remat={self.remat!r}, nested={self.nested!r}, scan={self.scan}"


def module_kinds(modules: Sequence[Any]) -> list[int]:
    """Label each module with the index of its structure class (first occurrence order)."""
    representatives: list[Any] = []
    kinds = []
    for module in modules:
        for kind, representative in enumerate(representatives):
            if first_difference(representative, module) is None:
                kinds.append(kind)
                break
        else:
            kinds.append(len(representatives))
            representatives.append(module)
    return kinds


def _repeats(kinds: Sequence[int], start: int, period: int) -> int:
    pattern = kinds[start:start + period]
    repeats = 1
    while kinds[start + repeats * period:start + (repeats + 1) * period] == pattern:
        repeats += 1
    return repeats


def plan_runs(kinds: Sequence[int], has_params: Sequence[bool] | None = None) -> list[Run]:
    """Split a sequence of module kinds into runs, greedily covering the most modules per scan.

    At each position every period ``p`` is tried; the one whose repetitions cover the
    most modules wins (the shortest period on ties). A block without any parameter
    array (``has_params`` false for all its modules) is never scanned: there would be
    no layer axis to scan over. A position where nothing repeats is a run of one module.
    """
    has_params = [True] * len(kinds) if has_params is None else list(has_params)
    runs, start = [], 0
    while start < len(kinds):
        best = Run(start, 1, 1)
        for period in range(1, (len(kinds) - start) // 2 + 1):
            if not any(has_params[start:start + period]):
                continue
            repeats = _repeats(kinds, start, period)
            if repeats > 1 and period * repeats > best.period * best.repeats:
                best = Run(start, period, repeats)
        runs.append(best)
        start = best.stop
    return runs


def chain_runs(modules: Sequence[Any], *, scan: bool = True,
               kinds: Sequence[int] | None = None) -> tuple[Run, ...]:
    """The runs of a chain of modules; with ``scan=False`` every module runs alone.

    ``kinds``: the modules' :func:`module_kinds`, when the caller has them already.
    """
    if not scan:
        return tuple(Run(i, 1, 1) for i in range(len(modules)))
    has_params = [any(is_array(leaf) for leaf in jax.tree.leaves(m)) for m in modules]
    return tuple(plan_runs(module_kinds(modules) if kinds is None else kinds, has_params))


def block_kind(modules: Sequence[Any]) -> str:
    """The type names of one block of a run, for printing plans (``"Linear, MLP"``)."""
    return ", ".join(type(module).__name__ for module in modules)


def stack_run(modules: Sequence[Any], period: int) -> Any:
    """The stacked parameters of a scanned run of ``modules``.

    With period 1 this is ``stack(modules)`` (one module with a leading axis); with a
    longer period, the stack of the blocks, each a tuple of ``period`` modules.
    """
    if period == 1:
        return stack(modules)
    return stack([tuple(modules[i:i + period]) for i in range(0, len(modules), period)])


def module_of_run(stacked: Any, period: int, position: int) -> Any:
    """Module ``position`` (counted along the run) sliced out of a stacked run."""
    repeat, offset = divmod(position, period)
    block = take_layers(stacked, repeat)
    return block if period == 1 else block[offset]


def _call_block(block: Any, x: Any) -> Any:
    if isinstance(block, tuple):
        for module in block:
            x = module(x)
        return x
    return block(x)


def apply_alone(block: Any, x: Any, options: RunOptions) -> Any:
    """Apply one module (or one block, a tuple of modules) outside a scan, with ``remat``."""
    if options.remat is None:
        return _call_block(block, x)
    params, static = eqx.partition(block, is_array)
    body = remat_body(lambda carry, p: (_call_block(eqx.combine(p, static), carry), None),
                      options.remat)
    return body(x, params)[0]


def _keeps_structure(block: Any, x: Any) -> bool:
    before = eqx.filter_eval_shape(lambda tree: tree, x)
    after = eqx.filter_eval_shape(_call_block, block, x)
    return first_difference(before, after) is None


def _scan_step(block: Any, carry: Any, _: Any) -> tuple[Any, None]:
    return _call_block(block, carry), None


def apply_scanned(stacked: Any, x: Any, options: RunOptions) -> Any:
    """Apply a stacked run to ``x`` as one ``scan_layers`` with ``remat`` and ``nested``.

    A first block whose output differs in structure from its input runs alone
    before the scan; if the next block still changes it, the run is unrolled.
    """
    for peeled in (False, True):
        if _keeps_structure(take_layers(stacked, 0), x):
            return scan_layers(_scan_step, stacked, x, remat=options.remat,
                               nested=options.nested)[0]
        if peeled or depth_of(stacked) == 1:
            break
        x = apply_alone(take_layers(stacked, 0), x, options)
        stacked = take_layers(stacked, slice(1, None))
    for i in range(depth_of(stacked)):
        x = apply_alone(take_layers(stacked, i), x, options)
    return x
