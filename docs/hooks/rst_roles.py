"""A griffe extension for the API reference: Sphinx roles in docstrings as code spans.

jaxlean's docstrings name other objects with Sphinx roles (``:func:`~jaxlean.fit.fit```),
which Markdown would print as typed. This writes each as inline code: the last name of
the path where Sphinx would shorten it (a leading ``~``), else the path as written.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const|type):`(~?)([^`]+)`")


def without_roles(text: str) -> str:
    """``text`` with every Sphinx cross-reference role replaced by a code span."""
    return _ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`",
                     text)


class RstRoles(griffe.Extension):
    """Rewrite each object's docstring as it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = without_roles(obj.docstring.value)
