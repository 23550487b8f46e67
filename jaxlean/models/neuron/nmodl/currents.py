"""BREAKPOINT currents as ``g * (v - e)``: the conductance expression and the reversal."""

from __future__ import annotations

from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.model import Model

__all__ = ["conductance_form", "ohmic_form"]


def _factors(expr: s.Expr) -> list[tuple[str, s.Expr]]:
    if isinstance(expr, s.Binary) and expr.op in ("*", "/"):
        left = _factors(expr.left)
        if expr.op == "*":
            return left + _factors(expr.right)
        return [*left, ("/", expr.right)]
    return [("*", expr)]


def _is_drive(expr: s.Expr) -> str | None:
    if (isinstance(expr, s.Binary) and expr.op == "-" and isinstance(expr.left, s.Name)
            and expr.left.id == "v" and isinstance(expr.right, s.Name)):
        return expr.right.id
    return None


def ohmic_form(statement: s.Assign) -> tuple[s.Expr, str] | None:
    """``(g, e)`` of ``current = g * (v - e)``, or ``None`` if not of that form."""
    factors = _factors(statement.value)
    drives = [(k, _is_drive(f)) for k, (op, f) in enumerate(factors)
              if op == "*" and _is_drive(f) is not None]
    if len(drives) != 1:
        return None
    (index, reversal), = drives
    rest = [f for k, f in enumerate(factors) if k != index]
    g: s.Expr = s.Number(1.0, statement.line)
    for k, (op, factor) in enumerate(rest):
        g = factor if k == 0 and op == "*" else s.Binary(op, g, factor, statement.line)
    return g, reversal


def conductance_form(model: Model, current: str, statement: s.Assign) -> tuple[s.Expr, str]:
    """``(g, e)`` of ``current = g * (v - e)`` (the product in any order, divisions
    allowed in ``g``).

    Raises:
      ConfigError: the assignment is not of that form (a GHK current, a current
        linear in ``v`` written otherwise), naming the file and line.
    """
    form = ohmic_form(statement)
    if form is None:
        raise model.error(statement.line, f"current {current} is not written as "
                          f"g * (v - e) with e a name")
    return form
