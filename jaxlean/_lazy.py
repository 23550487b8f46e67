"""Names a package exports on first use (PEP 562), shared by every lazy ``__init__``.

A package's ``__init__`` lists its public names and the module that defines each
(``_EXPORTS``), and its public submodules (``_SUBMODULES``); :func:`lazy_exports`
turns them into the module's ``__getattr__`` and ``__dir__``, so importing the
package imports nothing until a name is used, as SciPy's subpackages do. The
``__init__`` repeats the table in an ``if TYPE_CHECKING:`` block for type checkers
and IDEs (``tests/test_public_api.py`` checks that the two agree).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str], submodules: Collection[str] = (),
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, loading ``exports`` and ``submodules``.

    ``exports`` maps a public name to the module that defines it; the value is
    imported on first access and kept in the package's namespace. Each of
    ``submodules`` (a module of ``package``) is imported on first access.
    """
    clash = set(exports) & set(submodules)
    if clash:  # a submodule's import would overwrite the exported name
        raise ValueError(f"{package}: {sorted(clash)} name both a submodule and an export")

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports, *submodules})

    return __getattr__, __dir__
