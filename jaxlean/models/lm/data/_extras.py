"""Optional dependencies of the text path, imported where used and refused by name."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]

INSTALL = 'pip install "jaxlean[text]"'


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module``, or raise ``ModuleNotFoundError`` naming it, ``purpose`` and the extra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        top = module.partition(".")[0]
        if error.name is None or error.name.partition(".")[0] != top:
            raise
        raise ModuleNotFoundError(
            f"{purpose} needs the {top!r} package, which is not installed: {INSTALL} "
            f"(or pip install {top})", name=top) from None
