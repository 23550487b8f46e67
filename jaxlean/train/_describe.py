"""A structural description of an optimizer (or any closure tree), for comparing two runs.

An optax transformation is a pair of closures; what it computes is fixed by
the functions and the values they close over. :func:`describe` walks that
tree (closure cells, defaults and the plain-value globals a function reads,
``functools.partial``, bound methods, ``__wrapped__``, containers, named
tuples, dataclasses and the attributes of other objects, so nested
transformations and schedules are followed) and returns a flat
``{path: text}`` dict of JSON strings:

- a function by module, qualified name and a hash of its code and constants
  (an edited lambda, another optax or Python version read as different);
- numbers, strings, bools and None by value; arrays up to 16 elements by
  value, larger ones by shape, dtype and a content hash;
- anything else (objects without attributes: modules, C extension types) by
  its type only: its contents are not compared.

A subtree equal to one described before (the same schedule or transformation
reached through ``init`` and ``update``) is recorded as ``same as <path>``.

:func:`array_text` is the fingerprint of one array: shape, dtype, content hash.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import types
from typing import Any

import jax
import numpy as np

_SCALARS = (bool, int, float, complex, str, type(None))
_SMALL = 16


def content_hash(value: np.ndarray) -> str:
    """A blake2b hash of an array's bytes (C order), 32 hex digits."""
    flat = np.ascontiguousarray(value).reshape(-1)
    return hashlib.blake2b(flat.view(np.uint8), digest_size=16).hexdigest()


def array_text(leaf: Any, *, by_value: bool = False) -> str:
    """``dtype[shape] hash`` of one array (its values instead when ``by_value`` and small).

    An array spread over several processes is described by shape and dtype only.
    """
    if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        leaf = jax.random.key_data(leaf)
    head = f"{np.dtype(leaf.dtype)}{list(np.shape(leaf))}"
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
        return f"{head} (spans processes: values not hashed)"
    value = np.asarray(leaf)
    if by_value and value.size <= _SMALL:
        return f"{head} {value.tolist()}"
    return f"{head} hash {content_hash(value)}"


def _const_text(const: Any) -> str:
    """A constant's text, the same in every process (a frozenset's order follows string hashing)."""
    if isinstance(const, frozenset):
        return "frozenset" + repr(sorted(map(_const_text, const)))
    if isinstance(const, tuple):
        return "(" + ", ".join(map(_const_text, const)) + ")"
    return repr(const)


def _code_hash(code: types.CodeType) -> str:
    """Hash of a code object's bytecode, names and constants (nested code included)."""
    digest = hashlib.blake2b(digest_size=8)

    def feed(code: types.CodeType) -> None:
        digest.update(code.co_code)
        digest.update(repr(code.co_names).encode())
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                feed(const)
            else:
                digest.update(_const_text(const).encode())

    feed(code)
    return digest.hexdigest()


def _factory(function: types.FunctionType) -> str:
    """What a closure is known by: ``scale_by_adam`` for ``scale_by_adam.<locals>.update_fn``."""
    return function.__qualname__.split(".<locals>")[0]


class _Walker:
    def __init__(self) -> None:
        self.out: dict[str, str] = {}
        self._active: set[int] = set()

    def walk(self, value: Any, path: str) -> None:
        if isinstance(value, _SCALARS):
            self.out[path] = repr(value)
            return
        if isinstance(value, enum.Enum):
            self.out[path] = f"{type(value).__qualname__}.{value.name}"
            return
        if isinstance(value, np.dtype | type):
            self.out[path] = getattr(value, "__qualname__", str(value))
            return
        if isinstance(value, np.generic | np.ndarray | jax.Array):
            self.out[path] = array_text(value, by_value=True)
            return
        if id(value) in self._active:  # a cycle: the path already describes it
            self.out[path] = "(cycle)"
            return
        self._active.add(id(value))
        try:
            self._walk_compound(value, path)
        finally:
            self._active.discard(id(value))

    def _walk_compound(self, value: Any, path: str) -> None:
        if isinstance(value, types.FunctionType):
            self._function(value, path)
        elif isinstance(value, types.MethodType):
            self.out[path] = f"method {value.__func__.__qualname__}"
            self.walk(value.__self__, f"{path}.__self__")
            self.walk(value.__func__, f"{path}.__func__")
        elif isinstance(value, functools.partial):
            self.out[path] = "partial"
            self.walk(value.func, f"{path}.func")
            for i, arg in enumerate(value.args):
                self.walk(arg, f"{path}.args[{i}]")
            for name, arg in value.keywords.items():
                self.walk(arg, f"{path}.{name}")
        elif isinstance(value, tuple) and hasattr(value, "_fields"):
            self.out[path] = type(value).__qualname__
            for name in value._fields:
                self.walk(getattr(value, name), f"{path}.{name}")
        elif dataclasses.is_dataclass(value):
            self.out[path] = type(value).__qualname__
            for field in dataclasses.fields(value):
                self.walk(getattr(value, field.name, None), f"{path}.{field.name}")
        elif isinstance(value, list | tuple):
            self.out[path] = f"{type(value).__name__} of {len(value)}"
            for i, item in enumerate(value):
                self.walk(item, f"{path}[{i}]")
        elif isinstance(value, dict):
            self.out[path] = f"dict of {len(value)}"
            for name, item in value.items():
                self.walk(item, f"{path}[{name!r}]")
        elif callable(value) and hasattr(value, "__wrapped__"):
            self.out[path] = f"{type(value).__qualname__} of"
            self.walk(value.__wrapped__, f"{path}.__wrapped__")
        elif hasattr(value, "__dict__") and not isinstance(value, types.ModuleType):
            self.out[path] = f"{type(value).__module__}.{type(value).__qualname__}"
            for name, item in vars(value).items():
                self.walk(item, f"{path}.{name}")
        else:
            name = getattr(value, "__qualname__", None) if callable(value) else None
            self.out[path] = f"{type(value).__qualname__} {name}" if name else \
                f"{type(value).__module__}.{type(value).__qualname__} (compared by type only)"

    def _function(self, function: types.FunctionType, path: str) -> None:
        code = function.__code__
        self.out[path] = (f"function {function.__module__}.{function.__qualname__} "
                          f"code {_code_hash(code)}")
        factory = _factory(function)
        for name, cell in zip(code.co_freevars, function.__closure__ or (), strict=True):
            try:
                content = cell.cell_contents
            except ValueError:  # a cell not yet assigned
                content = None
            self.walk(content, f"{path} > {factory}.{name}")
        for i, default in enumerate(function.__defaults__ or ()):
            self.walk(default, f"{path} > {factory}.defaults[{i}]")
        for name, default in (function.__kwdefaults__ or {}).items():
            self.walk(default, f"{path} > {factory}.{name}")
        for name in code.co_names:
            value = function.__globals__.get(name)
            if isinstance(value, _SCALARS) and value is not None:
                self.walk(value, f"{path} > {factory}.{name}")


def _collapse_repeats(flat: dict[str, str]) -> dict[str, str]:
    """``flat`` with each repeat of an already described subtree as one ``same as`` entry.

    Subtrees are compared by content (paths relative to their root), so the
    result does not depend on whether two equal transformations are one object.
    """
    items = list(flat.items())
    seen: dict[tuple, str] = {}
    out: dict[str, str] = {}
    i = 0
    while i < len(items):
        path = items[i][0]
        end = i + 1
        while end < len(items) and items[end][0].startswith((f"{path} > ", f"{path}.",
                                                              f"{path}[")):
            end += 1
        subtree = tuple((key[len(path):], text) for key, text in items[i:end])
        if end - i > 2 and subtree in seen:
            out[path] = f"same as {seen[subtree]}"
            i = end
            continue
        seen.setdefault(subtree, path)
        out[path] = items[i][1]
        i += 1
    return out


def describe(value: Any, root: str) -> dict[str, str]:
    """The flat ``{path: text}`` description of ``value`` (see the module docstring)."""
    walker = _Walker()
    walker.walk(value, root)
    return _collapse_repeats(walker.out)


def setting_name(path: str) -> str:
    """The last ``factory.setting`` of a description path, in words: ``scale_by_adam b1``."""
    last = path.rsplit(" > ", 1)[-1]
    return last.replace(".", " ", 1) if " > " in path else last
