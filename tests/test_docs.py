"""The documentation site's sources: every tutorial runs, the API reference is complete.

Each tutorial (``docs/tutorials/*.md``) is one script: its ```python blocks run top to
bottom in one fresh interpreter, in an empty directory, with this checkout's jaxlean.
A block may carry the README's markers (``<!-- docs-test: needs tokenizers -->``, ``skip
<reason>``; see ``tests/markdown_blocks.py``): a missing module skips the whole tutorial,
a skipped block is left out of the script.

The API reference (``docs/api/*.md``) must name every public module of jaxlean in a
mkdocstrings ``::: module`` directive, and its index every name ``jaxlean`` exports.
``mkdocs build --strict`` itself runs only where the ``docs`` extra is installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_blocks import blocks

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))
API_PAGES = sorted((DOCS / "api").glob("*.md"))
_DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.M)


def public_modules() -> set[str]:
    """Every module and package under jaxlean/ with no ``_`` name on its path."""
    found = set()
    for path in (ROOT / "jaxlean").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts):
            found.add(".".join(parts))
    return found


def directives() -> list[tuple[str, str, object]]:
    """``(page, module, members)`` for every ``:::`` directive of the API pages; ``members``
    is None (the module's public members), False (none) or the list the directive names."""
    found = []
    for page in API_PAGES:
        text = page.read_text()
        for match in _DIRECTIVE.finditer(text):
            options = re.match(r"(?:\n[ \t]+.*)*", text[match.end():]).group(0)
            listed = re.search(r"members:\s*(false|\[[^\]]*\])", options)
            members: object = None
            if listed and listed.group(1) == "false":
                members = False
            elif listed:
                members = [name.strip() for name in listed.group(1)[1:-1].split(",")]
            found.append((page.name, match.group(1), members))
    return found


def documented_modules() -> dict[str, list[str]]:
    """Module -> the API pages whose ``:::`` directives render it."""
    where: dict[str, list[str]] = {}
    for page, module, _ in directives():
        where.setdefault(module, []).append(page)
    return where


def tutorial_script(path: Path) -> tuple[str, tuple[str, ...]]:
    """The tutorial's blocks joined into one script, and the modules it needs."""
    found = blocks(path.read_text())
    needs = tuple(name for block in found for name in block.needs)
    code = "\n".join(f"# {path.name} line {block.line}\n{block.code}" for block in found
                     if block.skip is None)
    return code, needs


def test_there_is_a_tutorial_per_kind_of_user():
    assert [path.stem for path in TUTORIALS] == [
        "compile-once", "fine-tune-llm", "fit-neuron", "long-sequences"]
    for path in TUTORIALS:
        found = blocks(path.read_text())
        fences = len(re.findall(r"^```python", path.read_text(), re.M))
        assert fences == len(found) >= 3, path.name
        assert all(block.skip is None or len(block.skip) > 10 for block in found), path.name


@pytest.mark.slow
@pytest.mark.parametrize("path", TUTORIALS, ids=[path.stem for path in TUTORIALS])
def test_tutorial_runs(path, tmp_path):
    code, needs = tutorial_script(path)
    for name in needs:
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{path.name} needs {name}, which is not installed")
    script = tmp_path / f"{path.stem}.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))  # this checkout's jaxlean
    assert done.returncode == 0, f"{path.name}:\n{done.stderr[-3000:]}"


def test_every_public_module_is_in_the_api_reference():
    documented = documented_modules()
    missing = sorted(public_modules() - set(documented))
    assert not missing, f"public modules with no ::: directive in docs/api/: {missing}"
    stale = sorted(set(documented) - public_modules())
    assert not stale, f"docs/api/ renders modules that are not public modules: {stale}"
    twice = {module: pages for module, pages in documented.items() if len(pages) > 1}
    assert not twice, f"modules rendered on more than one page: {twice}"


def test_the_api_index_lists_every_top_level_name_where_it_is_defined():
    import jaxlean

    index = (DOCS / "api" / "index.md").read_text()
    for name in jaxlean.__all__:
        defined_in = getattr(jaxlean, name).__module__
        assert f"[`{name}`][{defined_in}.{name}]" in index, name
        assert defined_in in documented_modules(), defined_in
    rows = re.findall(r"^\| \[`(\w+)`\]", index, re.M)
    assert sorted(rows) == sorted(jaxlean.__all__)


def test_every_package_name_is_rendered_where_it_is_defined():
    """Each name of a package's ``__all__`` (not a submodule) is rendered: by its public home
    module, or, when it lives in a private module, in the package directive's ``members``."""
    members = {module: listed for _, module, listed in directives()}
    for package in sorted(public_modules()):
        module = importlib.import_module(package)
        if not hasattr(module, "__path__"):
            continue
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if getattr(value, "__name__", "") == f"{package}.{name}":
                continue  # a submodule: test_every_public_module_is_in_the_api_reference
            listed = members.get(package)
            if isinstance(listed, list) and name in listed:
                continue
            home = getattr(value, "__module__", None)
            if callable(value) and isinstance(home, str) and home.startswith("jaxlean."):
                homes = [home]  # a class or function: where it is defined
            else:  # a constant or a type alias: the public modules that export it
                homes = [home for home in public_modules() if home.startswith(f"{package}.")
                         and name in getattr(importlib.import_module(home), "__all__", ())]
            rendered = [home for home in homes if members.get(home, False) is None]
            assert rendered, (f"{package}.{name} (defined in {homes}) is rendered nowhere: name "
                              f"it in the members of ::: {package}")


def test_pages_are_in_the_navigation_and_relative_links_resolve():
    config = (ROOT / "mkdocs.yml").read_text()
    nav = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", config, re.M))
    pages = {str(path.relative_to(DOCS)) for path in [DOCS / "index.md", *TUTORIALS,
                                                        *API_PAGES]}
    assert nav == pages
    for page in pages:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[\w-]+)?\)", (DOCS / page).read_text()):
            assert (DOCS / page).parent.joinpath(target).resolve().is_file(), (page, target)


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec(
            "mkdocstrings_handlers") is None:
        pytest.skip('the site needs the docs extra: pip install -e ".[docs]"')
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-5000:]


def test_sphinx_roles_become_code_spans_in_the_reference():
    pytest.importorskip("griffe", reason='the site needs the docs extra: pip install -e ".[docs]"')
    spec = importlib.util.spec_from_file_location("rst_roles", DOCS / "hooks" / "rst_roles.py")
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    text = "see :func:`~jaxlean.train.fit.fit` and :class:`jaxlean.nn.graph.Graph`, ``x``"
    assert roles.without_roles(text) == "see `fit` and `jaxlean.nn.graph.Graph`, ``x``"
