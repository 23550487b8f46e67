"""The syntax tree of an NMODL file: expressions, statements, blocks (plain data)."""

from __future__ import annotations

import dataclasses

__all__ = ["Assign", "Binary", "Block", "Call", "CallStatement", "Compartment", "Conserve",
           "Derivative", "Expr", "If", "Index", "Loop", "Name", "Number", "Reaction", "Solve",
           "Statement", "Unary", "Variable"]


@dataclasses.dataclass(frozen=True)
class Number:
    """A numeric literal."""

    value: float
    line: int


@dataclasses.dataclass(frozen=True)
class Name:
    """A variable or parameter name."""

    id: str
    line: int


@dataclasses.dataclass(frozen=True)
class Unary:
    """A unary operation (``-x``, ``!x``)."""

    op: str  # "-" or "!"
    operand: Expr
    line: int


@dataclasses.dataclass(frozen=True)
class Binary:
    """A binary operation or comparison."""

    op: str  # + - * / ^ < > <= >= == != && ||
    left: Expr
    right: Expr
    line: int


@dataclasses.dataclass(frozen=True)
class Call:
    """A function call in an expression."""

    name: str
    args: tuple[Expr, ...]
    line: int


@dataclasses.dataclass(frozen=True)
class Index:
    """An element of an array variable, ``inf[i]`` (the index known when the code runs:
    a literal or a ``FROM`` loop's variable)."""

    id: str
    index: Expr
    line: int


Expr = Number | Name | Unary | Binary | Call | Index


@dataclasses.dataclass(frozen=True)
class Assign:
    """``target = value``."""

    target: str
    value: Expr
    line: int
    index: Expr | None = None  # target[index] = value


@dataclasses.dataclass(frozen=True)
class Derivative:
    """``state' = value``."""

    state: str
    value: Expr
    line: int
    index: Expr | None = None  # state[index]' = value


@dataclasses.dataclass(frozen=True)
class If:
    """``IF (condition) { then } ELSE { otherwise }``."""

    condition: Expr
    then: tuple[Statement, ...]
    otherwise: tuple[Statement, ...]
    line: int


@dataclasses.dataclass(frozen=True)
class CallStatement:
    """A procedure or function called as a statement."""

    call: Call
    line: int


@dataclasses.dataclass(frozen=True)
class Solve:
    """``SOLVE block METHOD method``."""

    block: str
    method: str
    line: int


@dataclasses.dataclass(frozen=True)
class Loop:
    """``FROM i = start TO stop { body }`` (the bounds known when the code runs)."""

    var: str
    start: Expr
    stop: Expr
    body: tuple[Statement, ...]
    line: int


@dataclasses.dataclass(frozen=True)
class Reaction:
    """``~ 2A + B <-> C (kf, kb)`` (``kind`` ``"<->"``; ``left``/``right``: ``((state,
    coefficient), ...)``), or ``~ A << (flux)`` (``kind`` ``"<<"``, ``backward`` None)."""

    kind: str
    left: tuple[tuple[str, int], ...]
    right: tuple[tuple[str, int], ...]
    forward: Expr
    backward: Expr | None
    line: int


@dataclasses.dataclass(frozen=True)
class Conserve:
    """``CONSERVE a A + b B = total``."""

    terms: tuple[tuple[str, float], ...]
    total: Expr
    line: int


@dataclasses.dataclass(frozen=True)
class Compartment:
    """``COMPARTMENT volume {A B}``: ``d(volume A)/dt`` is the reactions' flux."""

    volume: Expr
    states: tuple[str, ...]
    line: int


Statement = (Assign | Derivative | If | CallStatement | Solve | Loop | Reaction | Conserve
             | Compartment)


@dataclasses.dataclass(frozen=True)
class Block:
    """A statement block: ``DERIVATIVE``, ``INITIAL``, ``BREAKPOINT``, ``PROCEDURE``,
    ``FUNCTION`` or ``NET_RECEIVE``; ``args`` for the last three, ``locals`` from ``LOCAL``."""

    kind: str
    name: str
    args: tuple[str, ...]
    locals: tuple[str, ...]
    body: tuple[Statement, ...]
    line: int


@dataclasses.dataclass(frozen=True)
class Variable:
    """A declared ``PARAMETER``, ``ASSIGNED`` or ``STATE`` name."""

    name: str
    default: float | None
    unit: str
    line: int
