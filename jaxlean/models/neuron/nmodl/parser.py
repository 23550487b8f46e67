"""A recursive-descent parser for the NMODL that published channel files use.

Why not Blue Brain's ``nmodl`` package (the NMODL framework, whose parser gives a
full AST with Python bindings)? Its only release on the package index (0.5)
ships wheels for CPython up to 3.11 and none for 3.12 or 3.13, which jaxlean
supports; the subset channel files use is small enough to parse here (about 300
lines), with errors naming the file and line.

Accepted: ``NEURON`` (``SUFFIX``, ``POINT_PROCESS``, ``USEION ... READ ... WRITE
... VALENCE``, ``NONSPECIFIC_CURRENT``, ``ELECTRODE_CURRENT``, ``POINTER``, ``RANGE``, ``GLOBAL``,
``THREADSAFE``),
``UNITS`` (unit aliases, ``FARADAY``/``R``/``PI`` constants), ``PARAMETER``,
``CONSTANT``, ``ASSIGNED``, ``STATE``, ``INDEPENDENT`` (ignored), ``DEFINE``,
``INCLUDE "file"`` (spliced from the file's folder), file-level ``LOCAL``,
``BREAKPOINT``, ``INITIAL``, ``DERIVATIVE``, ``PROCEDURE``, ``FUNCTION``,
``NET_RECEIVE``, ``BEFORE``/``AFTER`` blocks; statements: ``LOCAL``, assignments,
``x' = ...``, ``if/else`` (``IF/ELSE``), nested ``{ }`` blocks, procedure calls,
``SOLVE ... METHOD``, ``TABLE`` (skipped: rates are computed exactly, as NEURON does
with ``usetable_<suffix> = 0``), ``UNITSON/UNITSOFF``; a
file without a NEURON block is named after the file, as NEURON names it. (Those beyond
assignments and SOLVE: :mod:`~jaxlean.models.neuron.nmodl.statements`.)
Refused constructs (``VERBATIM`` C code, ``WATCH``, ``while`` loops,
...) are recorded with their line and skipped, so one error names them all
(:class:`~jaxlean.models.neuron.nmodl.model.ModFileError`); a syntax error stops
the parse, naming its line.
"""

from __future__ import annotations

from pathlib import Path

from jaxlean.models.neuron.nmodl import syntax as s
from jaxlean.models.neuron.nmodl.geometry import refuse_geometry
from jaxlean.models.neuron.nmodl.lexer import Token, tokenize
from jaxlean.models.neuron.nmodl.model import Ion, Model
from jaxlean.models.neuron.nmodl.random_streams import (
    random_pointers,
    rewrite_random_idioms,
)
from jaxlean.models.neuron.nmodl.statements import StatementParser
from jaxlean.models.neuron.nmodl.units import unit_constant
from jaxlean.models.neuron.nmodl.verbatim import resolve_ion_reads

__all__ = ["parse"]

VECTOR_FROM = 64
"""A POINT_PROCESS's ASSIGNED array of more elements is kept whole (``tspike[5000]``)."""

_STATEMENT_BLOCKS = ("BREAKPOINT", "INITIAL", "DERIVATIVE", "KINETIC", "PROCEDURE", "FUNCTION",
                     "NET_RECEIVE")
_REFUSED_BLOCKS = {name: f"{name} blocks are not supported" for name in (
    "LINEAR", "NONLINEAR", "DISCRETE", "PARTIAL", "FUNCTION_TABLE", "CONSTRUCTOR",
    "DESTRUCTOR")}
_REFUSED_NEURON = {
    "BBCOREPOINTER": "BBCOREPOINTER variables are not supported",
    "ARTIFICIAL_CELL": "ARTIFICIAL_CELL is not supported",
    "EXTERNAL": "EXTERNAL variables are not supported",
}
_REFUSED_STATEMENTS = {
    "WATCH": "WATCH statements are not supported",
    "WHILE": "while loops are not supported", "while": "while loops are not supported",
    "for": "for loops are not supported",
    "net_event": "net_event is not supported", "LAG": "LAG is not supported",
    "VERBATIM": "VERBATIM blocks (C code) are not supported",
    "LONGITUDINAL_DIFFUSION": "LONGITUDINAL_DIFFUSION is not supported",
    "FOR_NETCONS": "FOR_NETCONS is not supported", "MUTEXLOCK": "MUTEXLOCK is not supported",
}


def parse(text: str, where: str = "<mod text>", folder: Path | None = None,
          default_suffix: str = "") -> Model:
    """The :class:`Model` of the NMODL source ``text`` (``where`` names it in errors).

    ``folder``: where ``INCLUDE "file"`` looks (the file's own folder, as ``nrnivmodl``);
    its tokens count as the INCLUDE line's in errors. ``default_suffix``: the mechanism's
    name when the file has no SUFFIX (NEURON names it after the file).
    """
    tokens, problems = tokenize(rewrite_random_idioms(text), where)
    model = Model(where, problems=problems, random_pointers=random_pointers(text))
    return refuse_geometry(resolve_ion_reads(_Parser(tokens, model, folder,
                                                     default_suffix).model()))


class _Parser(StatementParser):
    def __init__(self, tokens: list[Token], model: Model, folder: Path | None = None,
                 default_suffix: str = ""):
        super().__init__(tokens, model)
        self.folder, self.default_suffix = folder, default_suffix

    # -- file ----------------------------------------------------------------
    def model(self) -> Model:
        while self.peek().kind != "end":
            token = self.name()
            keyword = token.text
            if keyword in _REFUSED_BLOCKS:
                self.m.refuse(token.line, _REFUSED_BLOCKS[keyword])
                self.skip_block()
                continue
            if keyword == "NEURON":
                self.neuron_block()
            elif keyword == "UNITS":
                self.units_block()
            elif keyword in ("PARAMETER", "CONSTANT", "ASSIGNED", "STATE"):
                self.declarations(keyword)
            elif keyword == "INDEPENDENT":
                self.skip_braces()
            elif keyword == "DEFINE":
                name = self.name().text
                self.m.constants[name] = self.number()
            elif keyword in ("UNITSON", "UNITSOFF", "THREADSAFE"):
                continue
            elif keyword == "INCLUDE":
                self.include(token.line)
            elif keyword == "LOCAL":  # file-level: kept per compartment (see variables)
                self.file_local(token.line)
            elif keyword in ("BEFORE", "AFTER"):
                self.before_after(keyword, token.line)
            elif keyword in _STATEMENT_BLOCKS:
                self.statement_block(keyword, token.line)
            elif self.skip_block():
                self.m.refuse(token.line, f"{keyword} is not a supported NMODL block")
            else:
                raise self.m.error(token.line, f"{keyword} is not a supported NMODL block")
        for name, size in self.m.arrays.items():  # kept whole (see loops)
            if self.m.point and size > VECTOR_FROM and f"{name}[0]" in self.m.assigned:
                first = self.m.assigned[f"{name}[0]"]
                for k in range(size):
                    del self.m.assigned[f"{name}[{k}]"]
                self.m.assigned[name] = s.Variable(name, first.default, first.unit, first.line)
                self.m.vectors.add(name)
        if not self.m.suffix and self.default_suffix:
            self.m.suffix, self.m.suffix_line = self.default_suffix, 1
        if not self.m.suffix:
            raise self.m.error(1, "no SUFFIX or POINT_PROCESS in the NEURON block")
        return self.m

    def include(self, line: int) -> None:
        """``INCLUDE "file"``: the file's tokens in place, counted as this line's."""
        token = self.next()
        if token.kind != "string":
            raise self.m.error(line, "INCLUDE needs a quoted file name")
        name = token.text.strip('"')
        path = None if self.folder is None else self.folder / name
        if path is None or not path.is_file():
            self.m.refuse(line, f"INCLUDE {name!r}: no such file beside the .mod file"
                          + ("" if self.folder else " (load the file by its path)"))
            return
        tokens, problems = tokenize(path.read_text(errors="replace"), str(path))
        self.m.problems.extend((line, f"in {name}: {message}") for _, message in problems)
        spliced = [Token(t.kind, t.text, line) for t in tokens[:-1]]
        self.tokens[self.i:self.i] = spliced

    def skip_block(self) -> bool:
        """Skip a refused block: its header up to ``{`` on the same line, then the braces.
        False (nothing skipped) when no ``{`` follows on that line."""
        line = self.tokens[self.i - 1].line
        ahead = 0
        while self.peek(ahead).line == line and self.peek(ahead).text != "{":
            if self.peek(ahead).kind == "end":
                return False
            ahead += 1
        if self.peek(ahead).text != "{" or self.peek(ahead).line != line:
            return False
        self.i += ahead
        self.skip_braces()
        return True

    def skip_statement(self, line: int) -> None:
        """Skip the rest of a refused statement: the tokens of its line, braces included."""
        while self.peek().kind != "end" and self.peek().line == line and not self.at("}"):
            if self.at("{"):
                self.skip_braces()
            else:
                self.next()

    def skip_braces(self) -> None:
        self.expect("{")
        depth = 1
        while depth:
            token = self.next()
            if token.kind == "end":
                raise self.m.error(token.line, "unclosed '{'")
            depth += (token.text == "{") - (token.text == "}")

    def name_list(self) -> list[str]:
        names = [self.name().text]
        while self.accept(","):
            names.append(self.name().text)
        return names

    def neuron_block(self) -> None:
        self.expect("{")
        while not self.accept("}"):
            token = self.name()
            keyword = token.text
            if keyword in _REFUSED_NEURON:
                self.m.refuse(token.line, _REFUSED_NEURON[keyword])
                self.name_list()
                continue
            if keyword in ("SUFFIX", "POINT_PROCESS"):
                self.m.suffix, self.m.suffix_line = self.name().text, token.line
                self.m.point = keyword == "POINT_PROCESS"
            elif keyword == "USEION":
                self.useion(token.line)
            elif keyword == "POINTER":  # a value set from outside (see variables)
                self.m.pointers.extend(self.name_list())
            elif keyword in ("NONSPECIFIC_CURRENT", "ELECTRODE_CURRENT"):
                names = self.name_list()
                self.m.nonspecific.extend(names)
                if keyword == "ELECTRODE_CURRENT":  # inward-positive (see generated)
                    self.m.electrode.extend(names)
            elif keyword == "RANGE":
                self.m.range.extend(self.name_list())
            elif keyword == "GLOBAL":
                self.m.globals.extend(self.name_list())
            elif keyword != "THREADSAFE":
                raise self.m.error(token.line, f"{keyword} in the NEURON block is not supported")

    def useion(self, line: int) -> None:
        ion, read, write, valence = self.name().text, [], [], None
        while True:
            if self.accept("READ"):
                read.extend(self.name_list())
            elif self.accept("WRITE"):
                write.extend(self.name_list())
            elif self.accept("VALENCE"):
                valence = self.number()
            else:
                break
        self.m.ions.append(Ion(ion, tuple(read), tuple(write), valence, line))

    def units_block(self) -> None:
        self.expect("{")
        while not self.accept("}"):
            if self.at("("):
                self.units()
                self.expect("=")
                self.units()
                continue
            token = self.name()
            self.expect("=")
            if self.at("("):
                definition = self.units()
                value = unit_constant(definition, self.units(), self.m.where, token.line)
            else:
                value = self.number()
                self.units()
            self.m.constants[token.text] = value

    def declarations(self, keyword: str) -> None:
        table = {"PARAMETER": self.m.parameters, "CONSTANT": self.m.parameters,
                 "ASSIGNED": self.m.assigned, "STATE": self.m.states}[keyword]
        self.expect("{")
        while not self.accept("}"):
            token = self.name()
            size = None
            if self.accept("["):
                size = self.size()
                self.expect("]")
            default = None
            if self.accept("="):
                default = self.number()
            unit = self.units()
            if self.accept("<"):  # <low, high> range, or a STATE's <tolerance>
                self.number()
                if self.accept(","):
                    self.number()
                self.expect(">")
            if self.accept("FROM"):  # STATE ... FROM a TO b
                self.number()
                self.expect("TO")
                self.number()
            if keyword == "CONSTANT":
                if default is None:
                    raise self.m.error(token.line, f"CONSTANT {token.text} has no value")
                self.m.constants[token.text] = default
                continue
            if size is None:
                table[token.text] = s.Variable(token.text, default, unit, token.line)
                continue
            self.m.arrays[token.text] = size
            for k in range(size):
                name = f"{token.text}[{k}]"
                table[name] = s.Variable(name, default, unit, token.line)

    def size(self) -> int:
        """An array's size: a number or a DEFINE'd name."""
        token = self.next()
        value = (self.m.constants.get(token.text) if token.kind == "name"
                 else float(token.text) if token.kind == "number" else None)
        if value is None or value != int(value) or value < 1:
            raise self.m.error(token.line, f"array size {token.text!r} is not a positive "
                               f"whole number or a DEFINE'd name")
        return int(value)

    # -- statements ----------------------------------------------------------
    def statement_block(self, kind: str, line: int) -> None:
        name, args = kind, ()
        if kind in ("DERIVATIVE", "KINETIC", "PROCEDURE", "FUNCTION"):
            name = self.name().text
        if kind in ("PROCEDURE", "FUNCTION", "NET_RECEIVE"):
            args = self.arguments()
            if kind == "FUNCTION":
                self.units()
        local_names: list[str] = []
        body = self.body(local_names)
        if kind != "NET_RECEIVE" and any(isinstance(x, s.Block) for x in body):
            self.m.refuse(line, f"INITIAL inside {kind} (only NET_RECEIVE may hold one)")
        block = s.Block(kind, name, args, tuple(local_names), body, line)
        if kind == "BREAKPOINT":
            self.m.breakpoint = block
        elif kind == "INITIAL":
            if self.m.initial is not None:  # nocmodl runs them in order, one C block each
                block = self.m.initial_after(block)
            self.m.initial = block
        elif kind == "NET_RECEIVE":
            self.m.net_receive = block
        else:
            if name in self.m.blocks:
                raise self.m.error(line, f"{name} is defined twice")
            self.m.blocks[name] = block

    def arguments(self) -> tuple[str, ...]:
        self.expect("(")
        names = []
        while not self.accept(")"):
            names.append(self.name().text)
            self.units()
            self.accept(",")
        return tuple(names)

    def body(self, local_names: list[str]) -> tuple[s.Statement, ...]:
        self.expect("{")
        statements: list[s.Statement] = []
        while not self.accept("}"):
            if self.at("{"):  # a nested block: its statements in place (see statements)
                statements.extend(self.nested(local_names))
                continue
            statement = self.statement(local_names)
            if statement is not None:
                statements.append(statement)
        return tuple(statements)

    def statement(self, local_names: list[str]) -> s.Statement | None:
        token = self.peek()
        if token.text == "~":
            return self.reaction()
        if token.text == "CONSERVE":
            self.next()
            terms = self.species(float)
            self.expect("=")
            return s.Conserve(terms, self.expression(), token.line)
        if token.text == "COMPARTMENT":
            self.next()
            volume = self.expression()
            if self.accept(","):  # COMPARTMENT i, vol[i] {ca}: over an array's index
                self.m.refuse(token.line, "COMPARTMENT over an index (COMPARTMENT i, "
                              "expression { arrays }) is not supported")
                self.expression()
            self.expect("{")
            names = []
            while not self.accept("}"):
                names.append(self.name().text)
            return s.Compartment(volume, tuple(names), token.line)
        if token.kind != "name":
            if token.text == "{":
                raise self.m.error(token.line, "nested '{' blocks are not supported")
            raise self.m.error(token.line, f"unexpected {token.text or 'end of file'!r}")
        word = token.text
        if word in _REFUSED_STATEMENTS:
            self.m.refuse(token.line, _REFUSED_STATEMENTS[word])
            self.skip_statement(token.line)
            return None
        if word == "LOCAL":
            self.next()
            local_names.extend(self.name_list())
            return None
        if word == "INITIAL":  # in NET_RECEIVE: per connection as a run starts (net_receive)
            self.next()
            return s.Block("INITIAL", "INITIAL", (), (), self.body(local_names), token.line)
        if word in ("UNITSON", "UNITSOFF"):
            self.next()
            return None
        if word == "TABLE":
            self.table()
            return None
        if word == "SOLVE":
            self.next()
            block = self.name().text
            method = ""
            if self.accept("METHOD"):
                method = self.name().text
            elif self.accept("STEADYSTATE"):
                method = "steadystate"
                if self.name().text != "sparse":
                    self.m.refuse(token.line, "SOLVE ... STEADYSTATE needs the method sparse")
            return s.Solve(block, method, token.line)
        if word in ("if", "IF"):
            return self.if_statement(local_names)
        if word == "FROM":
            return self.loop(local_names)
        self.next()
        index = None
        if self.accept("["):
            index = self.expression()
            self.expect("]")
        if self.accept("'"):
            self.expect("=")
            return s.Derivative(word, self.expression(), token.line, index)
        if self.accept("="):
            return s.Assign(word, self.expression(), token.line, index)
        if self.at("("):
            return s.CallStatement(self.call(token), token.line)
        if self.at("~"):
            self.m.refuse(token.line, "reaction statements (~) are not supported")
            self.skip_statement(token.line)
            return None
        raise self.m.error(token.line, f"unexpected {word!r}: expected an assignment, "
                           f"a derivative or a call")
