"""A digest of a Python function that changes whenever the program it traces to may change.

The executable cache must know, without tracing, that a function still traces
to the same program. :func:`fingerprint` hashes what tracing reads:

- a function's code, its defaults, the values in its closure and the globals it
  names (recursively: functions it calls are hashed the same way; the globals
  of installed distributions' functions are fixed by their version);
- the source file of every module such a function is defined in, so an edit
  anywhere in that file changes the digest; modules of installed distributions
  (jax, optax, ...) are hashed by distribution name and version instead;
- for a module a function names (``config.lr``), the attributes of it the
  function names, by value, since they may be set at run time;
- code without a source file (``python -c``, a notebook): each function by its
  code, each class by its bases and methods;
- values by content: arrays (dtype, shape, bytes), numbers, strings, containers,
  dataclasses, pytree nodes and plain objects by their type and fields.

Anything else (an open file, a lock, an object from a C extension) cannot be
hashed safely: :class:`Unkeyable` says which value and where, and the caller
falls back to tracing. The digest is stable across processes (no ``id`` or
address enters it).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import importlib.metadata
import inspect
import sys
import types
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxlean.errors import CacheError

__all__ = ["Unkeyable", "fingerprint"]

_SCALARS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))


class Unkeyable(CacheError):
    """A value reached from the function cannot be hashed safely; names it and its path."""


@functools.cache
def _distribution_of(top_level: str) -> str | None:
    """``name==version`` of the installed distribution providing a top-level package
    (looked up by name first: scanning every distribution takes most of a second)."""
    try:
        return f"{top_level}=={importlib.metadata.version(top_level)}"
    except importlib.metadata.PackageNotFoundError:
        pass
    for dist in importlib.metadata.packages_distributions().get(top_level, []):
        try:
            return f"{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@functools.cache
def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _installed(module: types.ModuleType) -> str | None:
    """``name==version`` when ``module`` comes from an installed (not editable) distribution."""
    file = getattr(module, "__file__", None)
    if file is None or not {"site-packages", "dist-packages"} & set(Path(file).parts):
        return None
    return _distribution_of(module.__name__.split(".")[0])


def _module_identity(module: types.ModuleType) -> str:
    """Distribution and version for installed code, else a hash of the module's source
    file (editable installs and scripts change between runs). Without a file, the
    functions and classes reached are hashed one by one instead."""
    name = module.__name__
    if dist := _installed(module):
        return f"{name}@{dist}"
    file = getattr(module, "__file__", None)
    if file is None:  # built in, or code typed into ``python -c``, a REPL or a notebook
        return f"no file:{name}"
    return f"{name}@{_file_digest(file)}"


def _has_source_file(module: types.ModuleType | None) -> bool:
    return module is None or module.__name__ in sys.builtin_module_names or bool(
        getattr(module, "__file__", None))


def _code_names(code: types.CodeType) -> set[str]:
    """Every global or attribute name a code object (and the code nested in it) uses."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


class _Hasher:
    """Feeds a value into a sha256, recursively; functions already seen hash by order."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.seen: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps ids in ``seen`` valid while hashing

    def put(self, *parts: Any) -> None:
        for part in parts:
            self.digest.update(repr(part).encode())
            self.digest.update(b"\0")

    def value(self, obj: Any, path: str) -> None:
        if isinstance(obj, _SCALARS):
            self.put(type(obj).__name__, obj)
        elif isinstance(obj, enum.Enum | np.dtype | np.generic):
            self.put(type(obj).__qualname__, repr(obj))
        elif isinstance(obj, np.ndarray | jax.Array):
            try:
                array = np.asarray(obj)
            except Exception as err:  # e.g. an array spread over several processes
                raise Unkeyable(f"{path}: cannot read the array's values ({err})") from None
            self.put("array", array.dtype.str, array.shape)
            self.digest.update(np.ascontiguousarray(array).tobytes())
            if isinstance(obj, jax.Array):
                self.put(repr(obj.sharding))
        elif isinstance(obj, jax.sharding.Sharding | jax.sharding.Mesh):
            self.put(type(obj).__qualname__, repr(obj))
        elif isinstance(obj, inspect.Signature):
            if " at 0x" in str(obj):
                raise Unkeyable(f"{path}: a signature with a default that names an address")
            self.put("signature", str(obj))
        elif isinstance(obj, types.ModuleType):
            self.put("module", _module_identity(obj))
        elif id(obj) in self.seen:
            self.put("seen", self.seen[id(obj)])
        else:
            self.seen[id(obj)] = len(self.seen)
            self.keep.append(obj)
            self._compound(obj, path)

    def _compound(self, obj: Any, path: str) -> None:
        if isinstance(obj, types.FunctionType):
            self._function(obj, path)
        elif isinstance(obj, functools.partial):
            self.put("partial")
            self.value(obj.func, f"{path}.func")
            self.value(obj.args, f"{path}.args")
            self.value(obj.keywords, f"{path}.keywords")
        elif isinstance(obj, types.MethodType):
            self.put("method")
            self.value(obj.__func__, f"{path}.__func__")
            self.value(obj.__self__, f"{path}.__self__")
        elif isinstance(obj, types.BuiltinFunctionType | np.ufunc | type):
            module = sys.modules.get(getattr(obj, "__module__", None) or "")
            self.put("named", getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj))))
            self.value(module, f"{path}.__module__")
            if isinstance(obj, type) and not _has_source_file(module):
                self._class_body(obj, path)
        elif hasattr(obj, "__wrapped__") and callable(obj):  # jax.jit, custom_jvp, wraps
            self._wrapped(obj, path)
        elif isinstance(obj, list | tuple):
            self.put(type(obj).__qualname__, len(obj))
            if type(obj) not in (list, tuple):  # a NamedTuple: its class matters
                self.value(type(obj), f"{path}.__class__")
            for i, item in enumerate(obj):
                self.value(item, f"{path}[{i}]")
        elif isinstance(obj, dict):
            self.put(type(obj).__qualname__, len(obj))
            for key in sorted(obj, key=repr):
                self.value(key, path)
                self.value(obj[key], f"{path}[{key!r}]")
        elif isinstance(obj, set | frozenset):
            self.put(type(obj).__qualname__, sorted(repr(item) for item in obj))
            if any(not isinstance(item, _SCALARS) for item in obj):
                raise Unkeyable(f"{path}: a set of non-scalar values has no stable order")
        elif isinstance(obj, jax.tree_util.PyTreeDef):
            self._treedef(obj, path)
        elif dataclasses.is_dataclass(obj) or hasattr(obj, "__dict__"):
            self.value(type(obj), f"{path}.__class__")
            fields = (getattr(obj, "__dict__", {}) if not dataclasses.is_dataclass(obj) else
                      {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)})
            for name in sorted(fields):
                self.put(name)
                self.value(fields[name], f"{path}.{name}")
        else:
            raise Unkeyable(f"{path}: cannot hash a {type(obj).__module__}."
                            f"{type(obj).__qualname__} safely")

    def _function(self, fn: types.FunctionType, path: str) -> None:
        code = fn.__code__
        self.put("function", fn.__qualname__)
        self._code(code)
        self.value(sys.modules.get(fn.__module__), f"{path}.__module__")
        self.value(fn.__defaults__, f"{path}.__defaults__")
        self.value(fn.__kwdefaults__, f"{path}.__kwdefaults__")
        names = _code_names(code)
        for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell: a name assigned later in the outer function
                contents = None
            self.put(name)
            self.value(contents, f"{path}.<closure {name}>")
            self._module_members(contents, names)
        module = sys.modules.get(fn.__module__)
        if module is not None and _installed(module):
            return  # its globals are the distribution's own code, fixed by its version
        for name in sorted(names & fn.__globals__.keys()):
            value = fn.__globals__[name]
            self.put(name)
            self.value(value, f"{fn.__module__}.{name}")
            self._module_members(value, names)

    def _module_members(self, module: Any, names: set[str]) -> None:
        """The values of a user module's attributes that ``names`` may read (set at run time)."""
        if not isinstance(module, types.ModuleType) or _installed(module):
            return
        for attribute in sorted(names & set(vars(module))):
            member = getattr(module, attribute)
            if not isinstance(member, types.ModuleType):
                self.put(attribute)
                self.value(member, f"{module.__name__}.{attribute}")

    def _wrapped(self, obj: Any, path: str) -> None:
        """A decorated function: the function, and unless it comes from an installed
        distribution (whose version fixes them) the decorator's own fields (a
        ``jax.jit``'s options, a ``custom_jvp``'s rule)."""
        self.put("wrapped", type(obj).__qualname__)
        self.value(obj.__wrapped__, f"{path}.__wrapped__")
        module = sys.modules.get(getattr(obj.__wrapped__, "__module__", None) or "")
        if module is not None and _installed(module):
            return
        for name, member in sorted(getattr(obj, "__dict__", {}).items()):
            if not name.startswith("__"):
                self.put(name)
                self.value(member, f"{path}.{name}")

    def _class_body(self, cls: type, path: str) -> None:
        """A class typed in without a source file: its bases and its own attributes."""
        self.value(cls.__bases__, f"{path}.__bases__")
        for name, member in sorted(vars(cls).items()):
            if name in ("__dict__", "__weakref__", "__doc__", "__module__", "__qualname__"):
                continue
            if isinstance(member, staticmethod | classmethod):
                member = member.__func__
            elif isinstance(member, property):
                member = (member.fget, member.fset, member.fdel)
            self.put(name)
            self.value(member, f"{path}.{name}")

    def _code(self, code: types.CodeType) -> None:
        self.put(code.co_code, code.co_names, code.co_varnames)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self._code(const)
            else:
                self.put(type(const).__name__, const)

    def _treedef(self, treedef: jax.tree_util.PyTreeDef, path: str) -> None:
        node_type, node_data = treedef.node_data() or (None, None)
        self.put("treedef", treedef.num_leaves, len(treedef.children()))
        self.value(node_type, f"{path}.<node type>")
        self.value(node_data, f"{path}.<node data>")
        for i, child in enumerate(treedef.children()):
            self._treedef(child, f"{path}.<child {i}>")


def fingerprint(*values: Any) -> str:
    """A hex digest of ``values`` (functions, pytrees, arrays, options) stable across processes.

    Raises:
        Unkeyable: a value reached cannot be hashed safely; the message names its path.
    """
    hasher = _Hasher()
    for i, value in enumerate(values):
        hasher.value(value, f"<argument {i}>")
    return hasher.digest.hexdigest()
