"""Comparing pytrees by structure: the first place two trees differ, in the user's terms.

Two layers can be stacked when they have the same pytree structure, the same
shape and dtype at every array leaf, and equal values at every other leaf
(activation functions, sizes, Equinox static fields). :func:`first_difference`
walks both trees one level at a time and says where that fails, as a pytree
path (``.mlp.weight``, ``['blocks'][2]``). It is the one structural comparison
of the library: stacking layers, grouping modules into runs, and checking that
a layer keeps the shape of its input (``jax.ShapeDtypeStruct`` leaves compare
like arrays) all use it.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import numpy as np


def is_array(leaf: Any) -> bool:
    """Array leaves are stacked; everything else is static and must be equal."""
    return isinstance(leaf, (jax.Array, np.ndarray, np.generic))


def _is_array_like(leaf: Any) -> bool:
    return is_array(leaf) or isinstance(leaf, jax.ShapeDtypeStruct)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _static_equal(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or a == b)
    except Exception:  # an uncomparable object is simply "not equal"
        return False


def _one_level(tree: Any) -> tuple[list[tuple[Any, Any]], Any]:
    """Children of ``tree`` with their keys, and the node's treedef (static data included)."""
    return jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda node: node is not tree)


def first_difference(a: Any, b: Any, path: tuple = ()) -> str | None:
    """Where ``a`` and ``b`` stop being stackable, described in words; ``None`` if they match."""
    where = jax.tree_util.keystr(path) or "<root>"
    if type(a) is not type(b):
        if _is_array_like(a) or _is_array_like(b):
            return f"at {where}: type {type(a).__name__} vs {type(b).__name__}"
        return f"at {where}: {_describe(a)} vs {_describe(b)}"
    if _is_array_like(a):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"at {where}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
        return None
    children_a, treedef_a = _one_level(a)
    children_b, treedef_b = _one_level(b)
    if len(children_a) == 1 and children_a[0][1] is a:
        return None if _static_equal(a, b) else f"at {where}: {_describe(a)} vs {_describe(b)}"
    keys_a = [key for key, _ in children_a]
    keys_b = [key for key, _ in children_b]
    if keys_a != keys_b:
        only_a = [jax.tree_util.keystr(k) for k in keys_a if k not in keys_b]
        only_b = [jax.tree_util.keystr(k) for k in keys_b if k not in keys_a]
        return f"at {where}: children differ (only in first: {only_a}, only in second: {only_b})"
    for (key, child_a), (_, child_b) in zip(children_a, children_b, strict=True):
        found = first_difference(child_a, child_b, (*path, *key))
        if found:
            return found
    if treedef_a != treedef_b:
        return f"at {where}: static fields of {type(a).__name__} differ{_static_fields(a, b)}"
    return None


def _static_fields(a: Any, b: Any) -> str:
    if not isinstance(a, eqx.Module):
        return ""
    names = [
        name for name in getattr(type(a), "__dataclass_fields__", {})
        if not _static_equal(getattr(a, name, None), getattr(b, name, None))
    ]
    return f" ({', '.join(names)})" if names else ""
