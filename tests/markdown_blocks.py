"""The ```python blocks of a Markdown file, with their test markers (README and docs tests).

A block that needs an optional extra says so in an HTML comment on the line before it,
which Markdown renderers do not show:

    <!-- readme-test: needs flax -->            skipped, naming the module, when it is missing
    <!-- readme-test: skip <reason> -->        never run here, with the reason shown
    <!-- docs-test: figure <name>.png -->       draws <name>.png (into the working directory)
                                                with matplotlib; left out where it is missing

(``docs-test:`` is the same marker under the documentation's name.)
"""

from __future__ import annotations

import dataclasses
import re

FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```", re.S | re.M)
MARKER = re.compile(r"<!--\s*(?:readme|docs)-test:\s*(needs|skip|figure)\s+(.*?)\s*-->")

__all__ = ["FENCE", "MARKER", "Block", "blocks"]


@dataclasses.dataclass(frozen=True)
class Block:
    line: int
    code: str
    needs: tuple[str, ...] = ()
    skip: str | None = None
    figure: str | None = None


def blocks(text: str) -> list[Block]:
    """Every ```python block of ``text``, in order, with the line it starts on."""
    found, end = [], 0
    for match in FENCE.finditer(text):
        before = text[end:match.start()].strip().splitlines()
        marker = MARKER.fullmatch(before[-1].strip()) if before else None
        line = text.count("\n", 0, match.start()) + 1
        needs: tuple[str, ...] = ()
        skip = figure = None
        if marker and marker.group(1) == "needs":
            needs = tuple(name.strip() for name in marker.group(2).split(",") if name.strip())
        elif marker and marker.group(1) == "figure":
            figure = marker.group(2)
        elif marker:
            skip = marker.group(2)
        found.append(Block(line, match.group(1), needs, skip, figure))
        end = match.end()
    return found
