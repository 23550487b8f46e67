"""Differentiable tridiagonal and tree (Hines) solvers sharing one implicit-diff rule.

- ``tridiagonal``: :func:`tridiagonal_solve`;
- ``tree``: :class:`Tree` (a forest's structure, built once) and :func:`tree_solve`,
  :func:`tree_solve_in_layout`, solved sequentially or level by level
  (:func:`default_schedule`);
- :func:`implicit_linear_solve`: the derivative rule both use (one transposed solve).

The names below are imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxlean._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean.linalg import tree as tree
    from jaxlean.linalg import tridiagonal as tridiagonal
    from jaxlean.linalg._implicit import implicit_linear_solve as implicit_linear_solve
    from jaxlean.linalg.tree import SCHEDULES as SCHEDULES
    from jaxlean.linalg.tree import Tree as Tree
    from jaxlean.linalg.tree import default_schedule as default_schedule
    from jaxlean.linalg.tree import tree_solve as tree_solve
    from jaxlean.linalg.tree import tree_solve_in_layout as tree_solve_in_layout
    from jaxlean.linalg.tridiagonal import tridiagonal_solve as tridiagonal_solve

_SUBMODULES = ("tree", "tridiagonal")

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "implicit_linear_solve": "jaxlean.linalg._implicit",
    "SCHEDULES": "jaxlean.linalg.tree",
    "Tree": "jaxlean.linalg.tree",
    "default_schedule": "jaxlean.linalg.tree",
    "tree_solve": "jaxlean.linalg.tree",
    "tree_solve_in_layout": "jaxlean.linalg.tree",
    "tridiagonal_solve": "jaxlean.linalg.tridiagonal",
}

__all__ = ["SCHEDULES", "Tree", "default_schedule", "implicit_linear_solve", "tree",
           "tree_solve", "tree_solve_in_layout", "tridiagonal", "tridiagonal_solve"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)
