"""The documentation site's sources: every page runs, the API reference is complete.

Each page under ``docs/`` (tutorials, guides, "coming from" pages; not the API reference)
is one script: its ```python blocks run top to bottom in one fresh interpreter, in an
empty directory, with this checkout's jaxlean. A block may carry the README's markers
(``<!-- docs-test: needs tokenizers -->``, ``skip <reason>``; see
``tests/markdown_blocks.py``): a missing module skips the whole page, a skipped block is
left out of the script. A block marked ``<!-- docs-test: figure loss.png -->`` draws
``loss.png`` with matplotlib: where matplotlib is missing it is left out and the rest of
the page runs; where it is installed the run must write the file. The page shows the
committed copy, ``figures/loss.png`` beside it, which ``python tests/test_docs.py
--figures`` (``make docs-figures``) draws again from the pages' own code. A page's code
should run within ``PAGE_CPU_BUDGET_S`` CPU seconds: a page over it is reported as a
``PageOverBudget`` warning in the run's summary, not failed (speed is measured by ``jaxlean
bench``, never asserted by a test: CPU time moves with the machine, its load and the XLA
version). The pages run on the suite's compilation cache (``tests/xla_cache.py``), so a
second ``make test`` loads what the first compiled.
``make docs-figures`` runs them without it (the compile-once page plots compile times).

The API reference (``docs/api/*.md``) must name every public module of jaxlean in a
mkdocstrings ``::: module`` directive, and its index every name ``jaxlean`` exports; every
public module, class and function has a docstring. ``mkdocs build --strict`` itself runs
only where the ``docs`` extra is installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import resource
import shutil
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest
from markdown_blocks import blocks

try:
    from tests import xla_cache
except ModuleNotFoundError:  # run as a script (`make docs-figures`): pages run uncached
    xla_cache = None

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXCLUDED = ("api", "benchmarks", "hooks")  # the API reference; mkdocs.yml's exclude_docs
TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))
API_PAGES = sorted((DOCS / "api").glob("*.md"))
PAGES = sorted(path for path in DOCS.rglob("*.md")
               if path.relative_to(DOCS).parts[0] not in EXCLUDED)
RUNNABLE = [path for path in PAGES if blocks(path.read_text())]
_DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.M)
# A page's code runs in under 30 s on an idle 2-core machine; measured in CPU seconds (the
# page's process and its threads), with room for a slower CPU. Over it: a warning to act on.
PAGE_CPU_BUDGET_S = 40.0


class PageOverBudget(UserWarning):
    """A documentation page's code took more CPU time than ``PAGE_CPU_BUDGET_S``."""


def page_id(path: Path) -> str:
    return str(path.relative_to(DOCS).with_suffix(""))


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


def page_script(path: Path, figures: bool = True) -> tuple[str, tuple[str, ...], list[str]]:
    """The page's blocks joined into one script, the modules it needs and the figures it
    draws; with ``figures=False`` (no matplotlib) the figure blocks are left out."""
    found = blocks(path.read_text())
    needs = tuple(name for block in found for name in block.needs)
    kept = [block for block in found
            if block.skip is None and (figures or block.figure is None)]
    code = "\n".join(f"# {path.name} line {block.line}\n{block.code}" for block in kept)
    return code, needs, [block.figure for block in kept if block.figure]


def run_page(path: Path, where: Path, counts: Path | None = None,
             ) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run the page's script in the directory ``where`` with this checkout's jaxlean; with
    ``counts``, on the suite's compilation cache (its counts written there)."""
    figures = importlib.util.find_spec("matplotlib") is not None
    code, _, drawn = page_script(path, figures)
    script = where / f"{path.stem}.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")  # this checkout's jaxlean
    command = [sys.executable, str(script)]
    if counts is not None:
        command, env = xla_cache.child_command(command, env, counts)
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=where,
                          env=env)
    return done, drawn


def test_every_page_has_runnable_blocks_with_reasons():
    assert [path.stem for path in TUTORIALS] == [
        "compile-once", "fine-tune-llm", "fit-neuron", "long-sequences"]
    for path in PAGES:
        text = path.read_text()
        found = blocks(text)
        fences = len(re.findall(r"^```python", text, re.M))
        assert fences == len(found), path.name
        assert all(block.skip is None or len(block.skip) > 10 for block in found), path.name
    for path in [*TUTORIALS, *sorted((DOCS / "coming-from").glob("*.md"))]:
        assert len(blocks(path.read_text())) >= 1, path.name


@pytest.mark.slow
@pytest.mark.parametrize("path", RUNNABLE, ids=[page_id(path) for path in RUNNABLE])
def test_page_runs(path, tmp_path):
    _, needs, _ = page_script(path)
    for name in needs:
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{page_id(path)} needs {name}, which is not installed")
    counts = tmp_path / "xla_cache_counts.json"  # the page's process: the suite's cache
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done, drawn = run_page(path, tmp_path, counts)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    xla_cache.add_child_counts(counts)
    assert done.returncode == 0, f"{page_id(path)}:\n{done.stderr[-3000:]}"
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if cpu >= PAGE_CPU_BUDGET_S:
        message = (f"{page_id(path)} took {cpu:.0f} CPU seconds: make its sizes smaller "
                   f"(budget {PAGE_CPU_BUDGET_S:.0f})")
        warnings.warn(PageOverBudget(message), stacklevel=1)
    for name in drawn:
        assert (tmp_path / name).is_file(), f"{page_id(path)} did not draw {name}"


def test_every_figure_is_drawn_by_its_page_committed_and_shown():
    """A figure block's PNG is committed in ``figures/`` beside its page, which shows it."""
    drawn = 0
    for path in PAGES:
        text = path.read_text()
        for block in blocks(text):
            if block.figure is None:
                continue
            drawn += 1
            assert re.fullmatch(r"[\w-]+\.png", block.figure), (path.name, block.figure)
            assert "savefig" in block.code and block.figure in block.code, (path.name, block.line)
            assert (path.parent / "figures" / block.figure).is_file(), (
                f"{path.name}: docs/{path.parent.relative_to(DOCS)}/figures/{block.figure} "
                f"is missing: python tests/test_docs.py --figures")
            assert f"](figures/{block.figure})" in text, (path.name, block.figure)
    assert drawn >= 4


def test_markers_name_figures():
    text = "<!-- docs-test: figure loss.png -->\n```python\nprint(1)\n```\n"
    (block,) = blocks(text)
    assert block.figure == "loss.png" and block.skip is None and not block.needs


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
            if inspect.ismodule(value) and value.__name__.startswith(f"{package}."):
                continue  # a submodule, maybe of a subpackage (`neuron.swc` is
                # `neuron.morphology.swc`): test_every_public_module_is_in_the_api_reference
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
    """Every page is in mkdocs.yml's nav (other helpers' guides are added there by hand);
    every relative link and image of every page, and of the README, names a file."""
    config = (ROOT / "mkdocs.yml").read_text()
    nav = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", config, re.M))
    pages = {str(path.relative_to(DOCS)) for path in [*PAGES, *API_PAGES]}
    assert nav == pages, (f"pages missing from mkdocs.yml's nav: {sorted(pages - nav)}; "
                          f"nav entries with no page: {sorted(nav - pages)}")
    link = re.compile(r"\]\(([^)#:\s]+)(?:#[\w-]+)?\)")
    code = re.compile(r"^```.*?^```|`[^`\n]*`", re.S | re.M)  # fenced blocks, code spans
    for path in [*PAGES, *API_PAGES, ROOT / "README.md"]:
        for target in link.findall(code.sub("", path.read_text())):
            assert path.parent.joinpath(target).resolve().exists(), (path.name, target)


def test_autorefs_name_objects_that_exist():
    """Each ``[text][jaxlean.path]`` link of a page names a module, or an object reachable
    from one by attributes (``mkdocs build --strict`` also checks that it is rendered)."""
    autoref = re.compile(r"\]\[(jaxlean(?:\.\w+)+)\]")
    found = 0
    for path in PAGES:
        for target in autoref.findall(path.read_text()):
            found += 1
            parts = target.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    value = importlib.import_module(".".join(parts[:cut]))
                except ModuleNotFoundError:
                    continue
                for name in parts[cut:]:
                    assert hasattr(value, name), f"{page_id(path)}: {target} does not exist"
                    value = getattr(value, name)
                break
    assert found >= 40


def _own_docstring(value: object) -> str | None:
    """The docstring written for ``value``: not one inherited, nor a dataclass's generated
    signature."""
    doc = value.__dict__.get("__doc__") if isinstance(value, type) else value.__doc__
    if isinstance(value, type) and doc and re.match(rf"{re.escape(value.__name__)}\(", doc):
        return None  # dataclasses write "Name(field: type, ...)" where there is none
    return doc.strip() if isinstance(doc, str) and doc.strip() else None


def test_every_public_name_has_a_docstring():
    """mkdocstrings lists a name without a docstring silently; this is the check that
    ``mkdocs build --strict`` makes too (``docs/hooks/rst_roles.py``'s ``Docstrings``)."""
    missing = []
    for name in sorted(public_modules()):
        module = importlib.import_module(name)
        if _own_docstring(module) is None:
            missing.append(name)
        for member in getattr(module, "__all__", ()):
            value = getattr(module, member)
            if isinstance(value, types.ModuleType):
                continue  # a submodule: checked as a module
            if not (inspect.isclass(value) or inspect.isfunction(value)):
                continue  # constants and type aliases have no docstring of their own
            if not getattr(value, "__module__", "").startswith("jaxlean"):
                continue  # a re-exported name of another library
            if _own_docstring(value) is None:
                missing.append(f"{name}.{member}")
    assert not missing, f"public names without a docstring: {sorted(set(missing))}"


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec(
            "mkdocstrings_handlers") is None:
        pytest.skip('the site needs the docs extra: pip install -e ".[docs]"')
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-5000:]


def test_the_site_build_names_public_names_without_a_docstring(tmp_path):
    """``docs/hooks/docstrings.py`` (run by ``mkdocs build``) finds what this test file's
    ``test_every_public_name_has_a_docstring`` finds, on a package made for the test."""
    griffe = pytest.importorskip("griffe",
                                 reason='the site needs the docs extra: pip install -e ".[docs]"')
    spec = importlib.util.spec_from_file_location("docstrings", DOCS / "hooks" / "docstrings.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    package = tmp_path / "pkg"
    (package / "_private").mkdir(parents=True)
    (package / "__init__.py").write_text('"""A package."""\nfrom pkg.mod import f, g\n'
                                         '__all__ = ["f", "g"]\n')
    (package / "mod.py").write_text('"""A module."""\n__all__ = ["f", "g", "K"]\nK = 1\n'
                                    'def f():\n    """Documented."""\ndef g():\n    pass\n'
                                    'def h():\n    pass\n')
    (package / "_private" / "__init__.py").write_text("def x():\n    pass\n")
    loaded = griffe.load("pkg", search_paths=[str(tmp_path)])
    assert sorted(hook.undocumented(loaded)) == ["pkg.g", "pkg.mod.g"]


def test_sphinx_roles_become_code_spans_in_the_reference():
    pytest.importorskip("griffe", reason='the site needs the docs extra: pip install -e ".[docs]"')
    spec = importlib.util.spec_from_file_location("rst_roles", DOCS / "hooks" / "rst_roles.py")
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    text = "see :func:`~jaxlean.train.fit.fit` and :class:`jaxlean.nn.graph.Graph`, ``x``"
    assert roles.without_roles(text) == "see `fit` and `jaxlean.nn.graph.Graph`, ``x``"


def draw_figures(only: list[str]) -> None:
    """Run every page with a figure block (or the pages named, as ``tutorials/fit-neuron``)
    and copy what it draws into ``figures/`` beside the page (``make docs-figures``)."""
    import tempfile

    unknown = set(only) - {page_id(path) for path in RUNNABLE}
    if unknown:
        sys.exit(f"no runnable pages {sorted(unknown)}")
    for path in RUNNABLE:
        if not any(block.figure for block in blocks(path.read_text())):
            continue
        if only and page_id(path) not in only:
            continue
        with tempfile.TemporaryDirectory() as where:
            done, drawn = run_page(path, Path(where))
            if done.returncode != 0:
                sys.exit(f"{page_id(path)} failed:\n{done.stderr[-3000:]}")
            if not drawn:
                sys.exit("drawing the figures needs matplotlib: pip install -e '.[docs]'")
            (path.parent / "figures").mkdir(exist_ok=True)
            for name in drawn:
                shutil.copyfile(Path(where) / name, path.parent / "figures" / name)
                print(f"docs/{path.parent.relative_to(DOCS)}/figures/{name}")


if __name__ == "__main__":
    if sys.argv[1:2] != ["--figures"]:
        sys.exit("usage: python tests/test_docs.py --figures [page ...]  (page: tutorials/x)")
    draw_figures(sys.argv[2:])
