"""Statements of NMODL blocks beyond assignments: ``if``/``IF``, ``FROM`` loops, nested
``{ }`` blocks, reactions and ``TABLE`` (a part of :mod:`~jaxlean.models.neuron.nmodl.parser`).

``IF``/``ELSE`` are ``if``/``else`` (nocmodl accepts both spellings, not ``If``). A nested
block ``{ ... }`` among statements runs its statements in place, as the C block nocmodl
writes; a ``LOCAL`` it declares is a name of the enclosing block, so one that reuses a name
the file declares (which inside the C block would hide it only there) is refused.
"""

from __future__ import annotations

from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.expressions import ExpressionParser

__all__ = ["StatementParser"]


class StatementParser(ExpressionParser):
    """Parses the statements above; ``body`` and ``statement`` are the parser's."""

    def file_local(self, line: int) -> None:
        """A file-level ``LOCAL a, b``: one value each, shared (see variables); an array
        ``LOCAL a[2]`` is one such value per element (``a[0]``, ``a[1]``)."""
        while True:
            name = self.name().text
            if self.accept("["):
                size = self.size()
                self.expect("]")
                self.m.arrays[name] = size
                self.m.file_locals.extend(f"{name}[{k}]" for k in range(size))
            else:
                self.m.file_locals.append(name)
            if not self.accept(","):
                return

    def before_after(self, keyword: str, line: int) -> None:
        """``BEFORE STEP { ... }``, ``AFTER SOLVE { ... }``: kept in ``before_after``."""
        kind = f"{keyword} {self.name().text}"
        local_names: list[str] = []
        body = self.body(local_names)
        if kind in self.m.before_after:
            self.m.refuse(line, f"a second {kind} block is not supported")
        self.m.before_after[kind] = s.Block(kind, "", (), tuple(local_names), body, line)

    def nested(self, local_names: list[str]) -> tuple[s.Statement, ...]:
        """A nested ``{ ... }`` block's statements; its LOCALs join ``local_names``."""
        line, before = self.peek().line, set(local_names)
        inner: list[str] = []
        statements = self.body(inner)
        m = self.m
        declared = {*m.parameters, *m.assigned, *m.states, *m.file_locals, *before}
        for name in inner:
            if name in declared:
                m.refuse(line, f"LOCAL {name} in a nested block hides the name {name} of "
                         f"the enclosing block or file; rename it")
        local_names.extend(name for name in inner if name not in before)
        return statements

    def species(self, number=int) -> tuple:
        """``2A + B``: ``(("A", 2), ("B", 1))``."""
        terms = []
        while True:
            coefficient = number(self.next().text) if self.peek().kind == "number" else 1
            name = self.name()
            if self.accept("["):  # recorded, so the file's other problems are named too
                self.m.refuse(name.line, "arrays in reactions are not supported")
                self.expression()
                self.expect("]")
            terms.append((name.text, coefficient))
            if not self.accept("+"):
                return tuple(terms)

    def reaction(self) -> s.Reaction:
        """``~ A + B <-> C (kf, kb)`` or ``~ A << (flux)``."""
        line = self.next().line
        left = self.species()
        if self.accept("<"):
            if self.accept("<"):
                self.expect("(")
                flux = self.expression()
                self.expect(")")
                return s.Reaction("<<", left, (), flux, None, line)
            self.expect("-")
            self.expect(">")
            right = self.species()
            self.expect("(")
            forward = self.expression()
            self.expect(",")
            backward = self.expression()
            self.expect(")")
            return s.Reaction("<->", left, right, forward, backward, line)
        raise self.m.error(line, "a reaction is ~ A <-> B (kf, kb) or ~ A << (flux)")

    def table(self) -> None:
        self.next()
        while not self.accept("WITH"):
            if self.peek().kind == "end":
                raise self.m.error(self.peek().line, "TABLE without WITH")
            self.next()
        self.number()

    def loop(self, local_names: list[str]) -> s.Loop:
        line = self.next().line
        var = self.name().text
        self.expect("=")
        start = self.expression()
        self.expect("TO")
        stop = self.expression()
        if self.at("BY"):
            raise self.m.error(line, "FROM ... BY is not supported")
        return s.Loop(var, start, stop, self.body(local_names), line)

    def if_statement(self, local_names: list[str]) -> s.If:
        line = self.next().line
        self.expect("(")
        condition = self.expression()
        self.expect(")")
        then = self.body(local_names)
        otherwise: tuple[s.Statement, ...] = ()
        if self.accept("else") or self.accept("ELSE"):
            otherwise = ((self.if_statement(local_names),) if self.at("if") or self.at("IF")
                         else self.body(local_names))
        return s.If(condition, then, otherwise, line)
