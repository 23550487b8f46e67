"""Run NMODL statements over a pluggable arithmetic: JAX arrays (the mechanism's
functions) or abstract values (:mod:`~jaxlean.models.neuron.nmodl.analysis`).

Variables live in a scope: a block's arguments and ``LOCAL`` names, then the
mechanism-wide names (parameters, states, ``ASSIGNED``, ``v``, ``celsius``), then
the file's constants. ``if``/``else`` whose condition is not a Python bool runs
both branches and merges every variable they assign with the backend's
``select`` (``jnp.where`` for arrays), as the compiled C would pick one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import jax.numpy as jnp

from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.loops import read_element, run_loop, write_element
from jaxlean.models.neuron.nmodl.model import Model

__all__ = ["BUILTINS", "Backend", "Interpreter", "JaxBackend"]

BUILTINS = ("exp", "log", "log10", "fabs", "sqrt", "pow", "sin", "cos", "tan", "tanh", "atan",
            "floor", "ceil", "fmin", "fmax", "expm1", "exprelr", "sinh", "cosh", "asin", "acos",
            "atan2", "fmod")


class Backend(Protocol):
    """The arithmetic the interpreter runs on."""

    def number(self, node: s.Number) -> Any: ...
    def unary(self, node: s.Unary, a: Any) -> Any: ...
    def binary(self, node: s.Binary, a: Any, b: Any) -> Any: ...
    def builtin(self, node: s.Call, args: list) -> Any: ...
    def decide(self, condition: Any) -> bool | None: ...
    def select(self, condition: Any, a: Any, b: Any) -> Any: ...


class Interpreter:
    """Executes the blocks of ``model`` with ``backend``; ``on_derivative(state, value)``
    receives each ``x' = value``."""

    def __init__(self, model: Model, backend: Backend,
                 on_derivative: Callable[[str, Any, int], None] | None = None):
        self.model, self.backend, self.on_derivative = model, backend, on_derivative

    def run_block(self, block: s.Block, names: dict[str, Any],
                  args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run ``block`` with mechanism-wide ``names`` (updated in place); its locals are
        returned."""
        local = {name: self.backend_zero() for name in block.locals}
        local.update(args or {})
        self.run(block.body, local, names)
        return local

    def backend_zero(self) -> Any:
        return self.backend.number(s.Number(0.0, 0))

    def run(self, statements: tuple, local: dict, names: dict) -> None:
        for statement in statements:
            if isinstance(statement, s.Assign):
                value = self.eval(statement.value, local, names)
                target = self.element(statement.target, statement.index, local, names,
                                      statement.line)
                if isinstance(target, tuple):  # an index known only during the run
                    write_element(self.model, *target, value, local, names)
                else:
                    (local if target in local else names)[target] = value
            elif isinstance(statement, s.Loop):
                self.loop(statement, local, names)
            elif isinstance(statement, s.Reaction | s.Conserve | s.Compartment):
                self.kinetic(statement, local, names)
            elif isinstance(statement, s.Derivative):
                self.derivative(statement, local, names)
            elif isinstance(statement, s.If):
                self.branch(statement, local, names)
            elif isinstance(statement, s.CallStatement):
                self.call(statement.call, local, names)
            elif isinstance(statement, s.Solve):
                self.solve(statement, local, names)

    def element(self, name: str, index: s.Expr | None, local: dict, names: dict,
                line: int) -> str | tuple[str, Any]:
        """``name``, or ``name[k]`` of an array element with its index evaluated (a number
        known when the code runs: a literal or a FROM loop's variable); ``(name, k)`` for
        an index known only during the run (see :mod:`~.loops`)."""
        if index is None:
            return name
        k = self.eval(index, local, names)
        if self.model.arrays.get(name) is None:
            raise self.model.error(line, f"{name}[...]: not an array of the file")
        if not isinstance(k, int | float) or name in self.model.vectors:
            if not isinstance(self.backend, JaxBackend):
                raise self.model.error(line, f"{name}[...]: an index known only during the "
                                       f"run is not supported here")
            return name, k
        if not 0 <= int(k) < self.model.arrays[name]:
            raise self.model.error(line, f"{name}[{int(k)}]: index out of the array's "
                                   f"{self.model.arrays[name]} elements")
        return f"{name}[{int(k)}]"

    def loop(self, statement: s.Loop, local: dict, names: dict) -> None:
        """``FROM i = a TO b``: the body for each whole ``i`` from ``a`` to ``b``, included
        (C's ``for (i = (int) a; i <= (int) b; i++)``); bounds known only during the run (a
        PARAMETER, an ASSIGNED) run as :func:`~.loops.run_loop`."""
        bounds = [self.eval(bound, local, names) for bound in (statement.start, statement.stop)]
        if not all(isinstance(b, int | float) for b in bounds):
            if not isinstance(self.backend, JaxBackend):
                raise self.model.error(statement.line, "FROM loop bounds must be known "
                                       "before the run here (numbers, DEFINE'd or CONSTANT "
                                       "names)")
            run_loop(self, statement, bounds, local, names)
            return
        for i in range(int(bounds[0]), int(bounds[1]) + 1):
            local[statement.var] = float(i)
            self.run(statement.body, local, names)

    def solve(self, statement: s.Solve, local: dict, names: dict) -> None:
        """``SOLVE`` inside a block: only INITIAL's ``STEADYSTATE`` runs there (generated)."""
        raise self.model.error(statement.line, "SOLVE outside BREAKPOINT (other than SOLVE "
                               "... STEADYSTATE sparse in INITIAL)")

    def kinetic(self, statement, local: dict, names: dict) -> None:
        """A reaction, CONSERVE or COMPARTMENT: only a KINETIC block's solver runs them."""
        raise self.model.error(statement.line, "reactions, CONSERVE and COMPARTMENT belong "
                               "in a KINETIC block that SOLVE runs")

    def derivative(self, statement: s.Derivative, local: dict, names: dict) -> None:
        """``x' = f``: ``on_derivative(x, f, line)`` (a SOLVE method may update ``x`` here)."""
        if self.on_derivative is None:
            raise self.model.error(statement.line, f"{statement.state}' outside a "
                                   f"DERIVATIVE block")
        state = self.element(statement.state, statement.index, local, names, statement.line)
        if isinstance(state, tuple):
            raise self.model.error(statement.line, f"{statement.state}[...]' with an index "
                                   f"known only during the run is not supported")
        self.on_derivative(state, self.eval(statement.value, local, names), statement.line)

    def branch(self, statement: s.If, local: dict, names: dict) -> None:
        condition = self.eval(statement.condition, local, names)
        decided = self.backend.decide(condition)
        if decided is not None:
            self.run(statement.then if decided else statement.otherwise, local, names)
            return
        outcomes = []
        for body in (statement.then, statement.otherwise):
            branch_local, branch_names = dict(local), dict(names)
            self.run(body, branch_local, branch_names)
            outcomes.append((branch_local, branch_names))
        (then_local, then_names), (else_local, else_names) = outcomes
        for target, then_, else_ in ((local, then_local, else_local),
                                     (names, then_names, else_names)):
            for key in set(then_) | set(else_):
                a, b = then_.get(key, else_.get(key)), else_.get(key, then_.get(key))
                if a is not b:
                    target[key] = self.backend.select(condition, a, b)

    def lookup(self, node: s.Name, local: dict, names: dict) -> Any:
        for scope in (local, names):
            if node.id in scope:
                return scope[node.id]
        if node.id in self.model.constants:
            return self.backend.number(s.Number(self.model.constants[node.id], node.line))
        if node.id == "PI":
            return self.backend.number(s.Number(math.pi, node.line))
        if node.id in self.model.assigned:
            raise self.model.error(node.line, f"{node.id} (ASSIGNED) is read before this block "
                                   f"assigns it; values kept between blocks are not supported")
        if node.id in self.model.states:
            raise self.model.error(node.line, f"STATE {node.id} is read before this block "
                                   f"assigns it")
        if node.id == "t":
            raise self.model.error(node.line, "t (time) is read where jaxlean does not give "
                                   "it (a Mechanism of the compact form, a network's "
                                   "synapse, or rest_state)")
        if node.id == "dt":
            raise self.model.error(node.line, "dt is read where jaxlean does not know it "
                                   "(rest_state, or a Mechanism of the compact form)")
        raise self.model.error(node.line, f"unknown name {node.id!r}")

    def eval(self, node: s.Expr, local: dict, names: dict) -> Any:
        backend = self.backend
        if isinstance(node, s.Number):
            return backend.number(node)
        if isinstance(node, s.Name):
            return self.lookup(node, local, names)
        if isinstance(node, s.Index):
            target = self.element(node.id, node.index, local, names, node.line)
            if isinstance(target, tuple):
                return read_element(self.model, *target, local, names)
            return self.lookup(s.Name(target, node.line), local, names)
        if isinstance(node, s.Unary):
            return backend.unary(node, self.eval(node.operand, local, names))
        if isinstance(node, s.Binary):
            return backend.binary(node, self.eval(node.left, local, names),
                                  self.eval(node.right, local, names))
        return self.call(node, local, names)

    def call(self, node: s.Call, local: dict, names: dict) -> Any:
        block = self.model.blocks.get(node.name)
        if node.name == "nrn_random_pick" and block is None:
            raise self.model.error(node.line, "a Random's draw (nrn_random_pick, see "
                                   "random_streams) is supported in NET_RECEIVE only")
        args = [self.eval(arg, local, names) for arg in node.args]
        if block is None or block.kind not in ("FUNCTION", "PROCEDURE"):
            if node.name in BUILTINS:
                return self.backend.builtin(node, args)
            if node.name == "at_time" and len(args) == 1 and {"t", "dt"} <= set(names):
                x = args[0] - 1e-11  # NEURON's fixed step: 1 in the step reaching it, else 0
                return jnp.where((x <= names["t"]) & (x > names["t"] - names["dt"]), 1.0, 0.0)
            raise self.model.error(node.line, f"unknown function or procedure {node.name!r}")
        if len(args) != len(block.args):
            raise self.model.error(node.line, f"{node.name} takes {len(block.args)} "
                                   f"arguments; got {len(args)}")
        extra = {block.name: self.backend_zero()} if block.kind == "FUNCTION" else {}
        inner = self.run_block(block, names, {**extra, **dict(zip(block.args, args, strict=True))})
        return inner.get(block.name)


def _as_array(x):
    return x if not isinstance(x, float | int | bool) else float(x)


class JaxBackend:
    """Concrete arithmetic: Python floats for literals (as the C code folds them), JAX
    arrays otherwise. ``unity`` holds the ``id`` of power nodes evaluated as 1 (the
    temperature factors, applied by the mechanism's ``q10``)."""

    def __init__(self, unity: frozenset[int] = frozenset()):
        self.unity = unity

    def number(self, node: s.Number) -> float:
        return float(node.value)

    def unary(self, node: s.Unary, a):
        return -a if node.op == "-" else jnp.logical_not(a)

    def binary(self, node: s.Binary, a, b):
        op = node.op
        if op == "^":
            if id(node) in self.unity:
                return 1.0
            if isinstance(a, float) and isinstance(b, float):
                try:
                    return math.pow(a, b)  # C's pow: NaN, never complex, for (-2)^0.5
                except ValueError:
                    return math.nan
                except OverflowError:
                    return math.inf
            return jnp.power(a, b)
        if op in ("+", "-", "*", "/"):
            if op == "/" and isinstance(b, float) and b == 0.0 and isinstance(a, float):
                return math.copysign(math.inf, a) if a else math.nan
            return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                    "/": lambda: a / b}[op]()
        both_python = isinstance(a, float | bool) and isinstance(b, float | bool)
        compare = {"<": jnp.less, ">": jnp.greater, "<=": jnp.less_equal,
                   ">=": jnp.greater_equal, "==": jnp.equal, "!=": jnp.not_equal,
                   "&&": jnp.logical_and, "||": jnp.logical_or}[op]
        if both_python:
            return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "==": a == b,
                    "!=": a != b, "&&": bool(a) and bool(b), "||": bool(a) or bool(b)}[op]
        return compare(a, b)

    def builtin(self, node: s.Call, args: list):
        name = node.name
        if name == "exprelr":
            x = args[0]
            small = jnp.abs(x) < 1e-5
            safe = jnp.where(small, 1.0, x)
            return jnp.where(small, 1.0 - x / 2.0, safe / jnp.expm1(safe))
        function = {"fabs": jnp.abs, "pow": jnp.power, "fmin": jnp.minimum,
                    "fmax": jnp.maximum, "asin": jnp.arcsin, "acos": jnp.arccos,
                    "atan2": jnp.arctan2}.get(name) or getattr(jnp, name)
        return function(*[_as_array(a) for a in args])

    def decide(self, condition) -> bool | None:
        return bool(condition) if isinstance(condition, bool | float) else None

    def select(self, condition, a, b):
        extra = max(jnp.ndim(a), jnp.ndim(b)) - jnp.ndim(condition)
        if jnp.ndim(condition) and extra > 0:  # an array kept whole: per instance
            condition = jnp.reshape(condition, jnp.shape(condition) + (1,) * extra)
        return jnp.where(condition, a, b)
