"""Differentiable tridiagonal and tree (Hines) solvers sharing one implicit-diff rule."""

from jaxlean.linalg._implicit import implicit_linear_solve
from jaxlean.linalg.tree import Tree, default_schedule, tree_solve, tree_solve_in_layout
from jaxlean.linalg.tridiagonal import tridiagonal_solve

__all__ = ["Tree", "default_schedule", "implicit_linear_solve", "tree_solve",
           "tree_solve_in_layout", "tridiagonal_solve"]
