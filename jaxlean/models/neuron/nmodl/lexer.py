"""Tokens of an NMODL file, each with its line; comments, ``TITLE`` lines and
``COMMENT ... ENDCOMMENT`` spans are dropped.

NMODL is free-format (``a = ainf b = binf`` on one line is two statements), so
newlines are not tokens.
"""

from __future__ import annotations

import dataclasses
import re

from jaxlean.errors import ConfigError

__all__ = ["Token", "tokenize"]

_TOKEN = re.compile(r"""
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||<=|>=|==|!=|[-+*/^(){},<>=!'~%:?\[\]])
""", re.VERBOSE)


@dataclasses.dataclass(frozen=True)
class Token:
    """``kind`` is ``"number"``, ``"name"``, ``"op"`` or ``"end"``; ``line`` counts from 1."""

    kind: str
    text: str
    line: int


def tokenize(text: str, where: str) -> list[Token]:
    """The tokens of ``text``; ``where`` names the file in errors."""
    tokens: list[Token] = []
    in_comment = False
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if in_comment:
            if stripped.startswith("ENDCOMMENT"):
                in_comment = False
            continue
        if stripped.startswith("COMMENT"):
            in_comment = True
            continue
        if stripped.startswith("TITLE"):
            continue
        if stripped.startswith("VERBATIM"):
            raise ConfigError(f"{where}:{number}: VERBATIM blocks (C code) are not supported")
        line = re.split(r"[:?]", raw, maxsplit=1)[0]
        position = 0
        while position < len(line):
            if line[position].isspace():
                position += 1
                continue
            match = _TOKEN.match(line, position)
            if match is None:
                raise ConfigError(f"{where}:{number}: unexpected character "
                                  f"{line[position]!r}")
            kind = match.lastgroup
            tokens.append(Token(kind, match.group(kind), number))
            position = match.end()
    if in_comment:
        raise ConfigError(f"{where}: COMMENT without ENDCOMMENT")
    tokens.append(Token("end", "", len(text.splitlines()) + 1))
    return tokens
