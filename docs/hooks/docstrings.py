"""A griffe extension for the API reference: a public name without a docstring is a warning.

mkdocstrings lists a name with no docstring silently (``show_if_no_docstring``); with this
extension every public module, and every class and function a public module's ``__all__``
names, must have one, or ``mkdocs build --strict`` fails naming it.
``tests/test_docs.py::test_every_public_name_has_a_docstring`` makes the same check
without the ``docs`` extra.
"""

from __future__ import annotations

from typing import Any

import griffe


def undocumented(package: griffe.Module) -> list[str]:
    """The public modules of ``package``, and the classes and functions their ``__all__``
    names, that have no docstring (a name imported from another library is not checked)."""
    missing = []
    for module in [package, *_submodules(package)]:
        if any(part.startswith("_") for part in module.path.split(".")):
            continue
        if module.docstring is None:
            missing.append(module.path)
        for export in module.exports or ():
            member = module.members.get(str(export))
            if member is None:
                continue
            try:
                target = member.final_target if member.is_alias else member
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue  # another library's name
            if target.kind in (griffe.Kind.CLASS, griffe.Kind.FUNCTION) and (
                    target.docstring is None or not target.docstring.value.strip()):
                missing.append(f"{module.path}.{export}")
    return missing


def _submodules(module: griffe.Module) -> list[griffe.Module]:
    found = []
    for member in module.members.values():
        if not member.is_alias and member.is_module:
            found.extend([member, *_submodules(member)])
    return found


class Docstrings(griffe.Extension):
    """Warn, once the package is loaded, about each public name without a docstring."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for path in undocumented(pkg):
            griffe.logger.warning(f"{path}: a public name without a docstring")
