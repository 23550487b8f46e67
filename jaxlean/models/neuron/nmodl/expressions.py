"""The token cursor and the expressions of an NMODL file: the base of its parser
(:mod:`~jaxlean.models.neuron.nmodl.parser`). Precedence, loosest first: ``||``, ``&&``,
comparisons, ``+ -``, ``* /``, unary ``- ! +``, ``^`` (right-associative)."""

from __future__ import annotations

from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.lexer import Token
from jaxlean.models.neuron.nmodl.model import Model

__all__ = ["ExpressionParser"]


class ExpressionParser:
    """Reads ``tokens`` for ``model`` (whose ``error`` names the file and line)."""

    def __init__(self, tokens: list[Token], model: Model):
        self.tokens, self.i, self.m = tokens, 0, model

    # -- tokens --------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.peek()
        self.i += 1
        return token

    def at(self, text: str) -> bool:
        token = self.peek()
        return token.kind in ("op", "name") and token.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> Token:
        token = self.next()
        if token.text != text or token.kind not in ("op", "name"):
            got = token.text or "end of file"
            raise self.m.error(token.line, f"expected {text!r}, got {got!r}")
        return token

    def name(self) -> Token:
        token = self.next()
        if token.kind != "name":
            raise self.m.error(token.line, f"expected a name, got {token.text or 'end of file'!r}")
        return token

    def number(self) -> float:
        sign = -1.0 if self.accept("-") else 1.0
        self.accept("+")
        token = self.next()
        if token.kind != "number":
            raise self.m.error(token.line, f"expected a number, got {token.text!r}")
        return sign * float(token.text)

    def units(self) -> str:
        """``(mV)``-style units after a declaration or a number (``""`` when absent)."""
        if not self.at("("):
            return ""
        self.next()
        depth, parts = 1, []
        while True:
            token = self.next()
            if token.kind == "end":
                raise self.m.error(token.line, "unclosed units parenthesis")
            depth += token.text == "("
            depth -= token.text == ")"
            if depth == 0:
                return "".join(parts)
            parts.append(token.text)


    # -- expressions: || < && < comparisons < + - < * / < unary < ^ ----------
    def expression(self) -> s.Expr:
        return self.binary(0)

    _LEVELS = (("||",), ("&&",), ("<", ">", "<=", ">=", "==", "!="), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> s.Expr:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek().kind == "op" and self.peek().text in self._LEVELS[level]:
            token = self.next()
            if token.text == "%":
                raise self.m.error(token.line, "the % operator is not supported")
            left = s.Binary(token.text, left, self.binary(level + 1), token.line)
        return left

    def unary(self) -> s.Expr:
        token = self.peek()
        if token.kind == "op" and token.text in ("-", "!", "+"):
            self.next()
            operand = self.unary()
            return operand if token.text == "+" else s.Unary(token.text, operand, token.line)
        return self.power()

    def power(self) -> s.Expr:
        base = self.primary()
        if self.at("^"):
            token = self.next()
            return s.Binary("^", base, self.unary(), token.line)  # right-associative
        return base

    def primary(self) -> s.Expr:
        token = self.next()
        if token.kind == "number":
            self.units()  # 10 (degC), 1 (/ms): units of a literal
            return s.Number(float(token.text), token.line)
        if token.kind == "name":
            if self.at("("):
                return self.call(token)
            if self.accept("["):
                index = self.expression()
                self.expect("]")
                return s.Index(token.text, index, token.line)
            return s.Name(token.text, token.line)
        if token.text == "(":
            inner = self.expression()
            self.expect(")")
            return inner
        raise self.m.error(token.line, f"unexpected {token.text or 'end of file'!r} in an "
                           f"expression")

    def call(self, token: Token) -> s.Call:
        self.expect("(")
        args = []
        while not self.accept(")"):
            args.append(self.expression())
            if not self.at(")"):
                self.expect(",")
        return s.Call(token.text, tuple(args), token.line)
