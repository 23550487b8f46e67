"""BluePyOpt's distribution strings as JAX functions of the distance and the parameters.

BluePyOpt's distance scalers hold a Python expression with placeholders, such as
``"(-0.8696 + 2.087*math.exp(({distance})*0.0031))*{value}"``; for every segment BluePyOpt
formats the numbers in (``%.17g``, exact) and calls ``eval``. Here the expression is parsed
once (``ast``) and compiled to a JAX function of ``distance`` (an array) and the
placeholders' values, differentiable in both, that gives what ``eval`` gives.

Only an allow-list of Python is accepted: numbers, the placeholders, ``+ - * / // % **``,
comparisons (chained ones too), ``and``/``or``/``not`` and ``x if c else y`` (on arrays:
``jnp.where``), ``abs``, ``min``, ``max``, ``float``, and ``math.``'s ``exp``, ``log``,
``log10``, ``sqrt``, ``pow``, ``fabs``, ``sin``, ``cos``, ``tan``, ``sinh``, ``cosh``,
``tanh``, ``floor``, ``ceil``, ``pi`` and ``e``. Anything else is refused by name.
"""

from __future__ import annotations

import ast
import math
import operator
import string
from collections.abc import Callable, Mapping

import jax.numpy as jnp

from jaxlean.errors import ConfigError

__all__ = ["compile_distribution", "placeholders"]

_MATH = {"exp": jnp.exp, "log": jnp.log, "log10": jnp.log10, "sqrt": jnp.sqrt,
         "pow": jnp.power, "fabs": jnp.abs, "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan,
         "sinh": jnp.sinh, "cosh": jnp.cosh, "tanh": jnp.tanh, "floor": jnp.floor,
         "ceil": jnp.ceil}
_MATH_CONSTANTS = {"pi": math.pi, "e": math.e}
_BUILTINS = {"abs": jnp.abs, "float": lambda x: x}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: jnp.floor_divide, ast.Mod: jnp.mod,
           ast.Pow: jnp.power}
_COMPARE = {ast.Lt: jnp.less, ast.LtE: jnp.less_equal, ast.Gt: jnp.greater,
            ast.GtE: jnp.greater_equal, ast.Eq: jnp.equal, ast.NotEq: jnp.not_equal}


def placeholders(text: str) -> tuple[str, ...]:
    """The ``{name}`` placeholders of a distribution string, in order of first use."""
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(text) if field]
    except ValueError as error:
        raise ConfigError(f"distribution {text!r}: {error}") from None
    return tuple(dict.fromkeys(fields))


def compile_distribution(text: str, known: tuple[str, ...],
                         where: str) -> Callable[[Mapping[str, object]], object]:
    """A function of ``{placeholder: value}`` (``distance`` an array of um) computing ``text``.

    Raises:
      ConfigError: a placeholder not in ``known``, a syntax error, or Python outside the
        allow-list (named, with ``where``: the parameter the string belongs to).
    """
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where}: 'dist' must be a non-empty string; got {text!r}")
    names = placeholders(text)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ConfigError(f"{where}: the distribution {text!r} uses {unknown}; its "
                          f"placeholders can be {{{'}, {'.join(known)}}}")
    source = text.format(**{name: f"__{name}__" for name in names})
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as error:
        raise ConfigError(f"{where}: the distribution {text!r} is not a Python expression "
                          f"({error.msg})") from None
    node = _checked(tree.body, text, where)

    def evaluate(values: Mapping[str, object]):
        return _eval(node, {f"__{name}__": values[name] for name in names})

    return evaluate


def _refuse(node: ast.AST, text: str, where: str) -> ConfigError:
    what = ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__
    return ConfigError(f"{where}: the distribution {text!r} uses {what!r}, which jaxlean does "
                       "not evaluate (allowed: numbers, the placeholders, arithmetic, "
                       "comparisons, and/or/not, x if c else y, abs/min/max/float and "
                       f"math.{'/'.join(sorted(_MATH))}, math.pi, math.e)")


def _checked(node: ast.AST, text: str, where: str) -> ast.AST:
    """``node`` when every part of it is on the allow-list."""
    ok = True
    for part in ast.walk(node):
        if isinstance(part, ast.Constant):
            ok = isinstance(part.value, int | float) and not isinstance(part.value, bool)
        elif isinstance(part, ast.Name):
            ok = (part.id.startswith("__") and part.id.endswith("__")) or part.id in (
                *_BUILTINS, "min", "max", "math")
        elif isinstance(part, ast.Attribute):
            ok = (isinstance(part.value, ast.Name) and part.value.id == "math"
                  and part.attr in {*_MATH, *_MATH_CONSTANTS})
        elif isinstance(part, ast.Call):
            ok = not part.keywords and (
                (isinstance(part.func, ast.Attribute) and part.func.attr in _MATH)
                or (isinstance(part.func, ast.Name) and part.func.id in (*_BUILTINS, "min",
                                                                          "max")))
        elif isinstance(part, ast.BinOp):
            ok = type(part.op) in _BINARY
        elif isinstance(part, ast.Compare):
            ok = all(type(op) in _COMPARE for op in part.ops)
        else:
            ok = isinstance(part, ast.UnaryOp | ast.BoolOp | ast.IfExp | ast.Load | ast.USub
                            | ast.UAdd | ast.Not | ast.And | ast.Or | ast.operator | ast.cmpop)
        if not ok:
            raise _refuse(part, text, where)
    return node


def _eval(node: ast.AST, scope: Mapping[str, object]):
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return scope[node.id]
    if isinstance(node, ast.Attribute):
        return _MATH_CONSTANTS[node.attr]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_eval(node.left, scope), _eval(node.right, scope))
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, scope)
        return {ast.USub: operator.neg, ast.UAdd: operator.pos,
                ast.Not: jnp.logical_not}[type(node.op)](value)
    if isinstance(node, ast.Compare):
        left, result = _eval(node.left, scope), True
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, scope)
            result = jnp.logical_and(result, _COMPARE[type(op)](left, right))
            left = right
        return result
    if isinstance(node, ast.BoolOp):
        combine = jnp.logical_and if isinstance(node.op, ast.And) else jnp.logical_or
        values = [_eval(v, scope) for v in node.values]
        result = values[0]
        for value in values[1:]:
            result = combine(result, value)
        return result
    if isinstance(node, ast.IfExp):
        return jnp.where(_eval(node.test, scope), _eval(node.body, scope),
                         _eval(node.orelse, scope))
    args = [_eval(a, scope) for a in node.args]                  # ast.Call
    if isinstance(node.func, ast.Attribute):
        return _MATH[node.func.attr](*args)
    name = node.func.id
    if name in ("min", "max"):
        pick = jnp.minimum if name == "min" else jnp.maximum
        result = args[0]
        for value in args[1:]:
            result = pick(result, value)
        return result
    return _BUILTINS[name](*args)
