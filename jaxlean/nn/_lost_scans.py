"""Neighbouring modules that would be scanned together but for a new function object each.

A recipe that builds one function per layer (a ``lambda`` in a list comprehension
giving ``(fn, params)`` pairs, an activation closure created per layer) makes
every layer's static structure different, since functions compare by identity:
the planner of :mod:`jaxlean.nn._runs` then runs each layer alone and traces it
again, silently. Two functions are taken to be the same recipe when they share
their code, closure values (by identity), defaults and globals: calling either
computes the same thing, so the layers could share one function and be scanned.
"""

from __future__ import annotations

import dataclasses
import os
import types
from collections.abc import Sequence
from typing import Any

import equinox as eqx

from jaxlean._pytree import first_difference

__all__ = ["LostScan", "lost_scans"]


@dataclasses.dataclass(frozen=True)
class LostScan:
    """Modules ``start .. stop - 1`` of a chain differ only by the function ``path`` holds."""

    start: int
    stop: int
    path: str
    function: str


def _same_recipe(a: types.FunctionType, b: types.FunctionType) -> bool:
    cells = [(x.cell_contents, y.cell_contents)
             for x, y in zip(a.__closure__ or (), b.__closure__ or (), strict=False)]
    return (a.__code__ is b.__code__ and a.__globals__ is b.__globals__
            and len(a.__closure__ or ()) == len(b.__closure__ or ())
            and all(x is y for x, y in cells)
            and a.__defaults__ == b.__defaults__ and a.__kwdefaults__ == b.__kwdefaults__)


def _function_paths(a: Any, b: Any, path: str = "") -> list[str] | None:
    """Where ``a`` and ``b`` hold distinct but equivalent functions, when that is all that
    differs between them (``[]``: nothing differs); ``None`` when anything else differs."""
    if first_difference(a, b) is None:
        return []
    if isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType):
        return [path or "<root>"] if _same_recipe(a, b) else None
    if type(a) is not type(b):
        return None
    if isinstance(a, list | tuple) and len(a) == len(b):
        children = [(f"{path}[{i}]", x, y) for i, (x, y) in enumerate(zip(a, b, strict=True))]
    elif isinstance(a, eqx.Module):
        children = [(f"{path}.{f.name}", getattr(a, f.name, None), getattr(b, f.name, None))
                    for f in dataclasses.fields(a)]
    else:
        return None
    found: list[str] = []
    for where, x, y in children:
        sub = _function_paths(x, y, where)
        if sub is None:
            return None
        found += sub
    return found


def _describe(module: Any, path: str) -> str:
    value = module
    for part in path.replace("[", ".").replace("]", "").strip(".").split("."):
        if part and part != "<root>":
            value = value[int(part)] if part.isdigit() else getattr(value, part)
    code = value.__code__
    return f"{value.__qualname__} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


def lost_scans(modules: Sequence[Any], kinds: Sequence[int]) -> list[LostScan]:
    """Maximal stretches of neighbours of different kinds that differ only by equivalent
    but distinct function objects (see the module docstring)."""
    found: list[LostScan] = []
    for i in range(len(modules) - 1):
        if kinds[i] == kinds[i + 1]:
            continue
        paths = _function_paths(modules[i], modules[i + 1])
        if not paths:
            continue
        if found and found[-1].stop == i + 1:
            found[-1] = dataclasses.replace(found[-1], stop=i + 2)
        else:
            found.append(LostScan(i, i + 2, paths[0], _describe(modules[i], paths[0])))
    return found
