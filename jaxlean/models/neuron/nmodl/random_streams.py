"""A ``POINTER`` to a NEURON ``Random``, drawn from in VERBATIM C: Blue Brain's published
idiom (``ProbAMPANMDA2.mod``, ``ProbUDFsyn2.mod``), read as one NMODL call.

The files declare ``POINTER rng`` and two blocks of C around it::

    PROCEDURE setRNG() { VERBATIM ... *pv = nrn_random_arg(1); ... ENDVERBATIM }
    FUNCTION erand() { VERBATIM double value; if (_p_rng) { value =
        nrn_random_pick(RANDCAST _p_rng); return value; } else { ENDVERBATIM
        erand = exprand(1) VERBATIM } ENDVERBATIM erand = value }

``setRNG(r)`` (called from hoc) points ``rng`` at a ``Random``; ``erand()`` returns its next
value (with ``rng`` never set it returns an uninitialised C ``value``: undefined). Exactly
these texts (C comments and NMODL ``:`` comments aside, any function and pointer names)
become ``FUNCTION erand() { erand = nrn_random_pick(rng) }`` and nothing (``setRNG``), the
other lines left blank so every line keeps its number; any other C stays refused.

In NET_RECEIVE, jaxlean's ``nrn_random_pick(rng)`` draws what NEURON's would: the next
value of the ``Random`` given to ``setRNG``, in its distribution
(:mod:`~.neuron_random`, value for value). The POINTER ``rng`` of point process ``sfx``
takes that Random as parameters ``rng_sfx.<field>`` (one Random per instance, no default,
as NEURON's pointer must be set; :func:`~.neuron_random.random_parameters` makes them),
and each instance keeps how many values it has drawn (the state ``rng_sfx.picks``), so a
draw in a branch NEURON does not take draws nothing here either. Elsewhere than
NET_RECEIVE the call is refused.
"""

from __future__ import annotations

import re

__all__ = ["random_pointers", "rewrite_random_idioms"]

_C = r"[\s;]*"
_PICK = re.compile(
    r"FUNCTION\s+(?P<f>\w+)\s*\(\s*\)\s*\{\s*VERBATIM\s+double\s+value\s*;\s*"
    r"if\s*\(\s*_p_(?P<p>\w+)\s*\)\s*\{\s*value\s*=\s*nrn_random_pick\s*\(\s*(?:RANDCAST\s*)?"
    r"_p_(?P=p)\s*\)\s*;\s*return\s+value\s*;\s*\}\s*else\s*\{\s*ENDVERBATIM\s+"
    r"(?P=f)\s*=\s*exprand\s*\(\s*1\s*\)\s*VERBATIM\s+\}\s*ENDVERBATIM\s+"
    r"(?P=f)\s*=\s*value\s*\}")
_SET = re.compile(
    r"PROCEDURE\s+\w+\s*\(\s*\)\s*\{\s*VERBATIM\s+\{\s*void\s*\*\*\s*pv\s*=\s*"
    r"\(\s*void\s*\*\*\s*\)\s*\(\s*&\s*_p_(?P<p>\w+)\s*\)\s*;\s*if\s*\(\s*ifarg\s*\(\s*1\s*\)\s*"
    r"\)\s*\{\s*\*\s*pv\s*=\s*nrn_random_arg\s*\(\s*1\s*\)\s*;\s*\}\s*else\s*\{\s*\*\s*pv\s*=\s*"
    r"\(\s*void\s*\*\s*\)\s*0\s*;\s*\}\s*\}\s*ENDVERBATIM\s+\}")


def _blank_comments(text: str) -> str:
    """``text`` with C comments everywhere and NMODL ``:`` comments outside VERBATIM
    replaced by spaces (newlines kept): the same offsets, for matching."""
    def spaces(match: re.Match) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    text = re.sub(r"/\*.*?\*/|//[^\n]*", spaces, text, flags=re.S)
    out, verbatim = [], False
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("VERBATIM"):
            verbatim = True
        elif stripped.startswith("ENDVERBATIM"):
            verbatim = False
        elif not verbatim and ":" in line:
            cut = line.index(":")
            line = line[:cut] + " " * (len(line) - cut)
        out.append(line)
    return "\n".join(out)


def rewrite_random_idioms(text: str) -> str:
    """``text`` with the two idioms of the module docstring as NMODL (lines kept)."""
    clean = _blank_comments(text)
    edits = []
    for match in _PICK.finditer(clean):
        body = f"FUNCTION {match['f']}() {{ {match['f']} = nrn_random_pick({match['p']}) }}"
        edits.append((match.start(), match.end(), body))
    for match in _SET.finditer(clean):
        edits.append((match.start(), match.end(), ""))
    for start, end, body in sorted(edits, reverse=True):
        text = text[:start] + body + "\n" * text[start:end].count("\n") + text[end:]
    return text


def random_pointers(text: str) -> list[str]:
    """The POINTERs the idiom's ``erand()`` draws from, in the order of the file."""
    return [match["p"] for match in _PICK.finditer(_blank_comments(text))]
