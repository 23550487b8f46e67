"""The package order of the design notes, checked on the code's own imports.

A package imports only from packages below it (bottom up: the root utilities ->
compile, linalg, nn -> parallel -> loss, train -> models -> bench -> cli), never
from its own floor's neighbours or from above, and never a private name (``_x``)
of another package. Function-level imports count: a lazy import that runs up
the order is still a cycle waiting to happen.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxlean"

# Floor of each package; the root's own modules (errors, _args, _units, ...) are floor 0.
FLOORS = {
    "compile": 1, "linalg": 1, "nn": 1,
    "parallel": 2,
    "loss": 3, "train": 3,
    "models": 4,
    "bench": 5,
    "cli": 6,
}
TOP = 7  # jaxlean/__init__.py maps every public name to its module


def package_of(module: str) -> str:
    """``jaxlean.models.lm.hf`` -> ``models.lm``; root modules -> ``""``."""
    parts = module.split(".")[1:]
    if not parts or (len(parts) == 1 and parts[0] not in FLOORS):
        return ""
    if parts[0] == "models" and len(parts) > 1:
        return "models." + parts[1]
    return parts[0]


def floor_of(package: str) -> int:
    if package == "":
        return 0
    return FLOORS[package.split(".")[0]]


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, root: Path = PACKAGE) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every ``jaxlean`` import in ``path``."""
    module = module_name(path, root)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("jaxlean")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                if path.name != "__init__.py":
                    anchor = anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            if base.startswith("jaxlean"):
                found.append((node.lineno, base, [a.name for a in node.names]))
    return found


def violations(root: Path = PACKAGE) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        here = module_name(path, root)
        if here == "jaxlean":
            continue  # the lazy export table may name any module
        mine = package_of(here)
        for line, target, names in imports(path, root):
            # `from jaxlean.loss import chunked` imports a module: count it as that module.
            theirs = package_of(target)
            where = f"{path.relative_to(root.parent)}:{line}"
            if theirs == mine or (theirs == "" and not mine):
                continue
            if theirs and theirs.split(".")[0] == mine.split(".")[0] and mine.startswith("models"):
                problems.append(f"{where}: {here} imports {target} (sibling model packages)")
                continue
            if floor_of(theirs) >= floor_of(mine) and theirs != "":
                problems.append(f"{where}: {here} (floor {floor_of(mine)}) imports {target} "
                                f"(floor {floor_of(theirs)}): up or across the package order")
            private = [p for p in target.split(".")[1:] if p.startswith("_")]
            if theirs == "":
                private = []  # the root's utilities (_args, _units, ...) are the bottom floor
            private += [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                problems.append(f"{where}: {here} reaches private {private} of {target}")
    return problems


def test_imports_follow_the_package_order():
    problems = violations()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("package, planted, expect", [
    ("nn", "from jaxlean.train import fit\n", "up or across"),
    ("train", "from jaxlean.compile._jax_private import x\n", "private"),
    ("train", "from jaxlean.compile.cache import _stats\n", "private"),
    ("nn", "def f():\n    from jaxlean.bench import memory\n", "up or across"),
    ("models", "from ..lm import hf\n", "sibling"),
])
def test_a_planted_import_is_caught(tmp_path, package, planted, expect):
    tree = tmp_path / "jaxlean"
    folder = tree / package / ("neuron" if package == "models" else "")
    folder.mkdir(parents=True)
    for init in (tree, tree / package, folder):
        (init / "__init__.py").write_text("")
    (folder / "planted.py").write_text(planted)
    problems = violations(tree)
    assert len(problems) == 1 and expect in problems[0], problems


# The neuron package's floor plan: its modules import one another without a cycle (a
# function-level import counts: one that only breaks a cycle at import time hides it),
# and each file stays small.
NEURON = ("models", "neuron")
MAX_LINES = 450


def module_graph(root: Path = PACKAGE, under: tuple[str, ...] = NEURON) -> dict[str, set[str]]:
    """Each module under ``root/under`` -> the modules under it that it imports.

    ``from package import name`` imports the module ``package.name`` when there is one,
    else ``package`` itself (its ``__init__``); a package's ``__init__`` run as the parent
    of a module imported from it is not an arrow (it is no choice of the importer).
    """
    modules = {module_name(p, root): p for p in sorted(root.joinpath(*under).rglob("*.py"))}
    graph = {}
    for here, path in modules.items():
        arrows = set()
        for _, target, names in imports(path, root):
            submodules = {f"{target}.{n}" for n in names if f"{target}.{n}" in modules}
            arrows |= submodules
            if target in modules and (not names or len(submodules) < len(names)):
                arrows.add(target)
        graph[here] = arrows - {here}
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` as ``[a, b, ..., a]``, or ``[]`` when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def long_files(root: Path = PACKAGE, under: tuple[str, ...] = NEURON) -> list[str]:
    return [f"{path.relative_to(root.parent)}: {n} lines (at most {MAX_LINES})"
            for path in sorted(root.joinpath(*under).rglob("*.py"))
            if (n := len(path.read_text().splitlines())) > MAX_LINES]


def test_the_neuron_modules_import_one_another_without_a_cycle():
    graph = module_graph()
    assert len(graph) > 30 and sum(map(len, graph.values())) > 60  # the graph was read
    assert cycle(graph) == [], " -> ".join(cycle(graph))


def subpackage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` with each module replaced by its subpackage of ``models.neuron``: eager
    subpackage ``__init__``s are safe to import in any order only if this one is acyclic."""
    def sub(module: str) -> str:
        return ".".join(module.split(".")[:4])
    collapsed: dict[str, set[str]] = {}
    for here, arrows in graph.items():
        collapsed.setdefault(sub(here), set()).update(sub(a) for a in arrows if sub(a) != sub(here))
    return collapsed


def test_the_neuron_subpackages_import_one_another_without_a_cycle():
    graph = subpackage_graph(module_graph())
    assert {"jaxlean.models.neuron.morphology", "jaxlean.models.neuron.cell"} <= set(graph)
    assert cycle(graph) == [], " -> ".join(cycle(graph))


def test_no_neuron_module_is_over_the_size_limit():
    assert long_files() == []


@pytest.mark.parametrize("planted, expect", [
    ({"a.py": "from jaxlean.models.neuron import b\n", "b.py": "def f():\n    from . import a\n"},
     ["jaxlean.models.neuron.a", "jaxlean.models.neuron.b", "jaxlean.models.neuron.a"]),
    ({"sub/__init__.py": "from jaxlean.models.neuron.sub.x import X\n",
      "sub/x.py": "X = 1\n", "sub/y.py": "from jaxlean.models.neuron.sub import X\n",
      "z.py": "from .sub import y\n"}, []),
    ({"sub/__init__.py": "from .y import Y\n", "sub/y.py": "from ..sub import X\nY = 1\n"},
     ["jaxlean.models.neuron.sub", "jaxlean.models.neuron.sub.y", "jaxlean.models.neuron.sub"]),
])
def test_a_planted_neuron_cycle_is_caught(tmp_path, planted, expect):
    folder = tmp_path / "jaxlean" / "models" / "neuron"
    folder.mkdir(parents=True)
    for name, text in {"__init__.py": "", **planted}.items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)
    assert cycle(module_graph(tmp_path / "jaxlean")) == expect


def test_a_planted_subpackage_cycle_is_caught(tmp_path):
    folder = tmp_path / "jaxlean" / "models" / "neuron"
    for name, text in {"__init__.py": "", "a/__init__.py": "", "b/__init__.py": "",
                       "a/x.py": "from jaxlean.models.neuron.b import y\n", "b/y.py": "",
                       "b/z.py": "def f():\n    from ..a import w\n", "a/w.py": ""}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    graph = module_graph(tmp_path / "jaxlean")
    assert cycle(graph) == []  # no module cycle, but a and b import each other
    assert cycle(subpackage_graph(graph)) == [
        "jaxlean.models.neuron.a", "jaxlean.models.neuron.b", "jaxlean.models.neuron.a"]


def test_a_planted_long_neuron_file_is_caught(tmp_path):
    folder = tmp_path / "jaxlean" / "models" / "neuron" / "sub"
    folder.mkdir(parents=True)
    (folder / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (folder / "short.py").write_text("x = 1\n" * MAX_LINES)
    assert long_files(tmp_path / "jaxlean") == [
        f"jaxlean/models/neuron/sub/long.py: {MAX_LINES + 1} lines (at most {MAX_LINES})"]
