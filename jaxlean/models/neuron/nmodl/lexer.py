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
  | (?P<string>"[^"]*")
  | (?P<op>&&|\|\||<=|>=|==|!=|[-+*/^(){},<>=!'~%:?\[\]])
""", re.VERBOSE)


@dataclasses.dataclass(frozen=True)
class Token:
    """``kind`` is ``"number"``, ``"name"``, ``"string"``, ``"op"`` or ``"end"``; ``line``
    counts from 1."""

    kind: str
    text: str
    line: int


VERBATIM_IDIOMS = (
    re.compile(r"return\s*\(?\s*0\s*\)?\s*;"),  # closing a FUNCTION: its value is set
    re.compile(r"#\s*include\s*[<\"][a-z]+\.h[>\"]"),  # <math.h>, <stdlib.h>: C headers
    re.compile(r"(printf|fprintf)\s*\(.*\)\s*;"),  # messages: no effect on the values
    re.compile(r"([a-z]+[io])\s*=\s*_ion_\1\s*;"),  # cai = _ion_cai; NEURON does it anyway
    re.compile(r"//.*|/\*.*\*/"),  # a C comment
    re.compile(r"#\s*(ifndef|else|endif)\b.*"),  # around the next two
    re.compile(r"#\s*define\s+RANDCAST\b.*"),  # a cast in nrn_random_pick's argument
    re.compile(r"(double|void\s*\*)\s*nrn_random_(pick|arg)\s*\([\w\s*]*\)\s*;"),  # declared
)
"""VERBATIM lines that change nothing jaxlean computes (C idioms of published files)."""

ION_READ = re.compile(r"([A-Za-z_]\w*)\s*=\s*_ion_([a-z]+[io])\s*;")
"""``carest = _ion_cai;``: a VERBATIM line read as the NMODL ``carest = _ion_cai``, the name
``_ion_cai`` resolved after parsing (:mod:`~jaxlean.models.neuron.nmodl.verbatim`)."""


def tokenize(text: str, where: str) -> tuple[list[Token], list[tuple[int, str]]]:
    """The tokens of ``text`` and the problems met (``[(line, message)]``: VERBATIM C code
    other than :data:`VERBATIM_IDIOMS`); ``where`` names the file in errors."""
    tokens: list[Token] = []
    problems: list[tuple[int, str]] = []
    in_comment, verbatim = False, 0
    text = text.replace("\x1a", "")  # a DOS end-of-file byte, which nocmodl ignores
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if in_comment:
            if stripped.startswith("ENDCOMMENT"):
                in_comment = False
            continue
        if verbatim:
            if stripped.startswith("ENDVERBATIM"):
                verbatim = 0
            elif (read := ION_READ.fullmatch(stripped)) and not VERBATIM_IDIOMS[3].fullmatch(
                    stripped):
                tokens += [Token("name", read[1], number), Token("op", "=", number),
                           Token("name", f"_ion_{read[2]}", number)]
            elif (stripped and not any(idiom.fullmatch(stripped) for idiom in VERBATIM_IDIOMS)
                  and not any(line == verbatim for line, _ in problems)):
                problems.append((verbatim, f"VERBATIM C code is not supported (line "
                                           f"{number}: {stripped[:60]!r})"))
            continue
        if stripped.startswith("COMMENT"):
            in_comment = True
            continue
        if stripped.startswith("TITLE"):
            continue
        if stripped.startswith("VERBATIM"):
            verbatim = number
            continue
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
    if verbatim:
        raise ConfigError(f"{where}:{verbatim}: VERBATIM without ENDVERBATIM")
    tokens.append(Token("end", "", len(text.splitlines()) + 1))
    return tokens, problems
