"""What an expression depends on, how, and where temperature enters: the checks that
decide whether a ``.mod`` file maps exactly onto a :class:`Mechanism`.

Each value is an :class:`Abstract`: the inputs it depends on, its polynomial
degree in each state and in ``v`` (``inf``: not a polynomial), and its degree
of homogeneity in the temperature factor (``None``: not homogeneous). A
temperature factor is a power ``K ^ (a (celsius - T0))`` of a constant ``K``
(:class:`Factor`): ``q10 = K ^ (10 a)`` at ``T0``. A mechanism's kinetics map
onto :class:`Mechanism`'s ``q10`` exactly when every ``x' = f`` is homogeneous of
degree 1 in that factor (every rate multiplied by it) and its steady state of
degree 0; evaluating the file with the factor set to 1 then gives the rates at
``T0``.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

from jaxlean.models.neuron.nmodl import syntax as s

__all__ = ["Abstract", "AbstractBackend", "Factor"]

INF = math.inf


@dataclasses.dataclass(frozen=True)
class Abstract:
    """An abstract value (see the module docstring). ``const``: its value when it is a
    constant (literals, and parameters at their defaults for folding temperature
    factors); ``affine``: ``(slope, T0)`` when it is ``slope * (celsius - T0)``."""

    deps: frozenset[str] = frozenset()
    degree: tuple[tuple[str, float], ...] = ()
    hom: Fraction | None = Fraction(0)
    const: float | None = None
    affine: tuple[float, float] | None = None

    def deg(self, name: str) -> float:
        return dict(self.degree).get(name, 0)


@dataclasses.dataclass(frozen=True)
class Factor:
    """A temperature factor ``q10 ** ((celsius - t0) / 10)``; ``frozen``: the parameters
    folded into it (fixed at their defaults)."""

    q10: float
    t0: float
    frozen: frozenset[str]
    line: int


def _degrees(*items: dict) -> tuple[tuple[str, float], ...]:
    merged: dict[str, float] = {}
    for item in items:
        merged.update(item)
    return tuple(sorted((k, v) for k, v in merged.items() if v))


def _combine(a: Abstract, b: Abstract, rule) -> tuple[tuple[str, float], ...]:
    names = {k for k, _ in a.degree} | {k for k, _ in b.degree}
    return _degrees({k: rule(a.deg(k), b.deg(k)) for k in names})


def _nonpoly(*values: Abstract) -> tuple[tuple[str, float], ...]:
    return _degrees({k: INF for v in values for k, d in v.degree if d})


def _same(a: Fraction | None, b: Fraction | None) -> Fraction | None:
    return a if a is not None and a == b else None


class AbstractBackend:
    """The interpreter's arithmetic over :class:`Abstract` values; records the temperature
    factors it meets in ``factors`` (``{id(node): Factor}``)."""

    def __init__(self):
        self.factors: dict[int, Factor] = {}

    def number(self, node: s.Number) -> Abstract:
        return Abstract(const=float(node.value))

    def unary(self, node: s.Unary, a: Abstract) -> Abstract:
        if node.op == "!":
            return Abstract(a.deps, _nonpoly(a), Fraction(0) if a.hom is not None else None)
        return dataclasses.replace(
            a, const=None if a.const is None else -a.const,
            affine=None if a.affine is None else (-a.affine[0], a.affine[1]))

    def binary(self, node: s.Binary, a: Abstract, b: Abstract) -> Abstract:
        op, deps = node.op, a.deps | b.deps
        const = _fold(op, a.const, b.const)
        if op in ("+", "-"):
            sign = 1.0 if op == "+" else -1.0
            return Abstract(deps, _combine(a, b, max), _same(a.hom, b.hom), const,
                            _affine_sum(a, b, sign))
        if op == "*":
            hom = None if a.hom is None or b.hom is None else a.hom + b.hom
            return Abstract(deps, _combine(a, b, lambda x, y: x + y), hom, const,
                            _affine_scale(a, b.const) or _affine_scale(b, a.const))
        if op == "/":
            hom = None if a.hom is None or b.hom is None else a.hom - b.hom
            degree = _degrees(dict(a.degree), {k: INF for k, d in b.degree if d})
            scale = None if not b.const else 1.0 / b.const
            return Abstract(deps, degree, hom, const, _affine_scale(a, scale))
        if op == "^":
            return self.power(node, a, b, deps, const)
        # comparisons and logic: invariant under a common positive factor
        return Abstract(deps, _nonpoly(a, b), Fraction(0) if _same(a.hom, b.hom) is not None
                        else None, const)

    def power(self, node: s.Binary, a: Abstract, b: Abstract, deps, const) -> Abstract:
        if b.const is not None and not b.deps:
            n = b.const
            if n >= 0 and float(n).is_integer():
                degree = _degrees({k: d * n for k, d in a.degree})
            else:
                degree = _nonpoly(a)
            hom = None if a.hom is None else a.hom * Fraction(n).limit_denominator(10**6)
            return Abstract(deps, degree, hom, const)
        if a.const is not None and b.affine is not None and "celsius" in b.deps:
            slope, t0 = b.affine
            factor = Factor(a.const ** (10.0 * slope), t0,
                            frozenset(deps - {"celsius"}), node.line)
            self.factors[id(node)] = factor
            return Abstract(deps, (), Fraction(1))
        return Abstract(deps, _nonpoly(a, b), Fraction(0) if a.hom == 0 == b.hom else None)

    def builtin(self, node: s.Call, args: list[Abstract]) -> Abstract:
        deps = frozenset().union(*(a.deps for a in args))
        homs = [a.hom for a in args]
        if node.name == "fabs":
            hom = homs[0]
        elif node.name in ("fmin", "fmax"):
            hom = _same(homs[0], homs[1])
        elif node.name == "sqrt":
            hom = None if homs[0] is None else homs[0] / 2
        elif node.name == "pow":
            return self.binary(s.Binary("^", s.Number(0, node.line), s.Number(0, node.line),
                                        node.line), *args)
        else:
            hom = Fraction(0) if all(h == 0 for h in homs) else None
        const = None
        if all(a.const is not None for a in args) and node.name in ("exp", "log", "sqrt",
                                                                      "fabs"):
            const = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt,
                     "fabs": abs}[node.name](args[0].const)
        return Abstract(deps, _nonpoly(*args), hom, const)

    def decide(self, condition: Abstract) -> bool | None:
        if condition.const is not None and not condition.deps:
            return bool(condition.const)
        return None

    def select(self, condition: Abstract, a: Abstract, b: Abstract) -> Abstract:
        deps = condition.deps | a.deps | b.deps
        degree = _degrees(dict(_combine(a, b, max)), dict(_nonpoly(condition)))
        hom = _same(a.hom, b.hom) if condition.hom == 0 else None
        return Abstract(deps, degree, hom)


def _fold(op: str, a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b
        if op == "^":
            return float(a ** b)
    except (OverflowError, ZeroDivisionError, TypeError):
        return None
    return None


def _affine_sum(a: Abstract, b: Abstract, sign: float) -> tuple[float, float] | None:
    """``slope (celsius - T0) + c`` is ``slope (celsius - (T0 - c / slope))``."""
    if a.affine is not None and b.const is not None:
        slope, t0 = a.affine
        return slope, t0 - sign * b.const / slope
    if b.affine is not None and a.const is not None:
        slope, t0 = b.affine
        return sign * slope, t0 - a.const / (sign * slope)
    return None


def _affine_scale(a: Abstract, factor: float | None) -> tuple[float, float] | None:
    if a.affine is None or not factor:
        return None
    return a.affine[0] * factor, a.affine[1]
