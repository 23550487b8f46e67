"""The public surface: each public module lists its names, lazy exports are visible to checkers.

A public module is a file under ``jaxlean/`` whose name has no leading underscore
(``__init__.py`` included). Each one has an ``__all__`` whose names all resolve,
and every public top-level ``def`` / ``class`` of the module is in it. Each lazy
package ``__init__`` (one with an ``_EXPORTS`` table) repeats that table, and its
``_SUBMODULES``, in an ``if TYPE_CHECKING:`` block, which this test reads with
``ast``: type checkers and IDEs see exactly the names the package loads on first use.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxlean"

# Public modules of packages being reworked that do not comply yet (no __all__, or one
# missing a public def/class). TODO(issue 43): this set must shrink to empty; a module
# that complies fails `test_the_todo_set_only_holds_modules_that_do_not_comply` until it
# is removed from here.
TODO: set[str] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def public_modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        inside = path.relative_to(PACKAGE).parts
        if any(p.startswith("_") and p != "__init__.py" for p in inside):
            continue
        found[module_name(path)] = path
    return found


MODULES = public_modules()


def defined_names(path: Path) -> set[str]:
    """Public top-level functions and classes defined in the file itself."""
    tree = ast.parse(path.read_text(), str(path))
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and not node.name.startswith("_")}


def problems(name: str) -> list[str]:
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    if names is None:
        return [f"{name} has no __all__"]
    found = []
    if len(set(names)) != len(names):
        found.append(f"{name}.__all__ repeats a name")
    if private := [n for n in names if n.startswith("_")]:
        found.append(f"{name}.__all__ lists private names {private}")
    if unresolved := [n for n in names if not hasattr(module, n)]:
        found.append(f"{name}.__all__ lists names that do not resolve: {unresolved}")
    if missing := sorted(defined_names(MODULES[name]) - set(names)):
        found.append(f"{name} defines public {missing} missing from its __all__")
    return found


@pytest.mark.parametrize("name", sorted(set(MODULES) - TODO))
def test_every_public_module_lists_its_public_names(name):
    assert problems(name) == []


@pytest.mark.parametrize("name", sorted(TODO))
def test_the_todo_set_only_holds_modules_that_do_not_comply(name):
    assert name in MODULES, f"{name} is no public module any more: remove it from TODO"
    assert problems(name), f"{name} complies now: remove it from TODO"


def test_the_check_finds_a_missing_name(tmp_path, monkeypatch):
    (tmp_path / "planted_surface.py").write_text(
        "__all__ = ['listed', 'gone']\n\ndef listed(): ...\n\nclass Unlisted: ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(MODULES, "planted_surface", tmp_path / "planted_surface.py")
    assert problems("planted_surface") == [
        "planted_surface.__all__ lists names that do not resolve: ['gone']",
        "planted_surface defines public ['Unlisted'] missing from its __all__"]


def literal(tree: ast.Module, name: str):
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"no literal {name}")


def type_checking_imports(tree: ast.Module) -> list[tuple[str, str, str | None]]:
    """``(module, name, asname)`` of each import in the ``if TYPE_CHECKING:`` block."""
    blocks = [node for node in tree.body if isinstance(node, ast.If)
              and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    assert len(blocks) == 1, "one `if TYPE_CHECKING:` block"
    found = []
    for node in blocks[0].body:
        assert isinstance(node, ast.ImportFrom) and node.level == 0, ast.unparse(node)
        found += [(node.module, a.name, a.asname) for a in node.names]
    return found


LAZY = sorted(name for name, path in MODULES.items()
              if path.name == "__init__.py" and "_EXPORTS" in path.read_text())


def test_the_lazy_packages_are_the_expected_ones():
    assert {"jaxlean", "jaxlean.compile", "jaxlean.linalg", "jaxlean.models",
            "jaxlean.models.lm", "jaxlean.nn", "jaxlean.parallel"} <= set(LAZY)


@pytest.mark.parametrize("name", LAZY)
def test_type_checkers_see_exactly_the_lazy_exports(name):
    tree = ast.parse(MODULES[name].read_text())
    exports, submodules = literal(tree, "_EXPORTS"), literal(tree, "_SUBMODULES")
    imports = type_checking_imports(tree)
    assert [i for i in imports if i[1] != i[2]] == []  # `import x as x`: an explicit re-export
    seen = [n for _, n, _ in imports]
    assert len(seen) == len(set(seen)), "a name imported twice"
    assert {n: m for m, n, _ in imports if m != name} == exports
    assert {n for m, n, _ in imports if m == name} == set(submodules)
    listed = literal(tree, "__all__")
    # The root lists no subpackage: `from jaxlean import *` would bind `compile`.
    assert set(listed) == (set(exports) if name == "jaxlean" else {*exports, *submodules})


@pytest.mark.parametrize("name", LAZY)
def test_lazy_exports_are_the_defining_modules_objects(name):
    package = importlib.import_module(name)
    for export, module in package._EXPORTS.items():
        assert getattr(package, export) is getattr(importlib.import_module(module), export)
    for sub in package._SUBMODULES:
        assert getattr(package, sub) is importlib.import_module(f"{name}.{sub}")
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match="no_such_name"):
        package.no_such_name  # noqa: B018


PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in ("jax", "numpy", "equinox") if m in sys.modules)))
"""


def test_importing_the_lazy_packages_imports_no_jax():
    done = subprocess.run([sys.executable, "-c", PROBE, *LAZY], capture_output=True, text=True,
                          timeout=120, check=True)
    assert json.loads(done.stdout) == []
