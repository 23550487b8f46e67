"""Per-leaf settings from a prefix pytree or a function: which leaves train, which group each is in.

``trainable`` and ``param_labels`` follow optax's conventions for masks and
``multi_transform``'s ``param_labels``: a pytree with the structure of the params (or a
prefix of it, one entry covering a whole subtree), or a function. Errors name
the pytree path of the entry that does not fit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import numpy as np

from jaxlean.errors import StructureError

Trainable = Any | Callable[[tuple], bool] | None
"""A pytree of bools (a prefix of the params tree), a predicate on a leaf's key path, or None."""

Labels = Any | Callable[[Any], Any] | None
"""A pytree of group names (a prefix of the params tree), a function of the params giving
one, or None (every leaf in one group)."""


def _is_function(value: Any) -> bool:
    # An Equinox module is callable and still a pytree (a mask built with ``eqx.tree_at``).
    return callable(value) and not isinstance(value, bool | eqx.Module)


def _from_prefix(paths: list[tuple], tree: Any, what: str, check: Callable[[Any], bool],
                 expected: str) -> list[Any]:
    """One value per leaf path, read from ``tree`` (the params structure or a prefix of it)."""
    entries = dict(jax.tree_util.tree_flatten_with_path(tree)[0])
    for path, value in entries.items():
        if not check(value):
            raise StructureError(
                f"{what}{jax.tree_util.keystr(path)} is {value!r}; expected {expected}")
    out, used = [], set()
    for path in paths:
        covering = [path[:k] for k in range(len(path) + 1) if path[:k] in entries]
        if not covering:
            raise StructureError(
                f"params{jax.tree_util.keystr(path)} has no entry in `{what}` "
                "(it must be a pytree with the structure of params, or a prefix of it)")
        used.add(covering[-1])
        out.append(entries[covering[-1]])
    extra = [p for p in entries if p not in used]
    if extra:
        raise StructureError(f"{what}{jax.tree_util.keystr(extra[0])} does not match any leaf "
                             "of params")
    return out


def trainable_flags(paths: list[tuple], trainable: Trainable) -> list[bool]:
    """One bool per leaf path from a bool pytree (prefix of params), a predicate, or None."""
    if trainable is None:
        return [True] * len(paths)
    if _is_function(trainable):
        return [bool(trainable(path)) for path in paths]
    flags = _from_prefix(paths, trainable, "trainable",
                         lambda v: isinstance(v, (bool, np.bool_)), "True or False")
    return [bool(flag) for flag in flags]


def describe_trainable(trainable: Trainable) -> str:
    """``trainable`` in words, for errors: the predicate's name, a mask, or every leaf."""
    if trainable is None:
        return "trainable=None (every floating-point array leaf)"
    if _is_function(trainable):
        return f"trainable={getattr(trainable, '__qualname__', None) or repr(trainable)}"
    return "the trainable mask"


def leaf_labels(paths: list[tuple], params: Any, param_labels: Labels) -> list[str | None]:
    """One group name per leaf path from a label pytree or a function of the params."""
    if param_labels is None:
        return [None] * len(paths)
    tree = param_labels(params) if _is_function(param_labels) else param_labels
    return _from_prefix(paths, tree, "param_labels", lambda v: isinstance(v, str),
                        "a group name (str)")
