"""Optional dependencies of the text path, imported where used and refused by name."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, purpose: str, extra: str = "text") -> ModuleType:
    """Import ``module``, or raise ``ModuleNotFoundError`` naming it, ``purpose`` and the extra
    that installs it (``text``: tokenizers, transformers, jinja2; ``datasets``: datasets,
    pyarrow)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        top = module.partition(".")[0]
        if error.name is None or error.name.partition(".")[0] != top:
            raise
        raise ModuleNotFoundError(
            f"{purpose} needs the {top!r} package, which is not installed: "
            f'pip install "jaxlean[{extra}]" (or pip install {top})', name=top) from None
