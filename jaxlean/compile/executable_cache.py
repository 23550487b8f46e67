"""An opt-in cache of compiled executables: a restarted process runs without tracing.

The persistent compilation cache skips XLA's compile but a restarted process
still traces and lowers its functions to find the cache key. This cache keys a
compiled executable on what the program is made of, computed without tracing,
and stores the serialized executable; a new process with the same key
deserializes it and runs it directly.

The key is the hash of

- the function: its code, the values it closes over and the globals it uses,
  the source files it is defined in (:func:`jaxlean.compile.fingerprint.fingerprint`),
  and the ``jax.jit`` options;
- the arguments: pytree structure, and per leaf shape, dtype, weak type and sharding
  (which names the mesh);
- the environment: jax and jaxlib versions, backend and its version, the
  devices, process index and count, every jax config value that can change
  a program, ``XLA_FLAGS``/``LIBTPU_INIT_ARGS``, and this host's CPU.

When the key cannot be computed safely (the function reaches a value that cannot
be hashed) or the executable cannot be serialized, the call takes the normal
path (``jax.jit``, which the persistent compilation cache still serves) and the
reason is warned once and kept in :attr:`ExecutableCache.stats`. Like ``jax.jit``,
the function is assumed to trace the same way for the same key: a function that
reads files or environment variables while tracing is not supported.

Only load executables from a directory you trust: deserializing runs code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import platform
import tempfile
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jaxlib
from jax.experimental import serialize_executable

from jaxlean.compile import _jax_private
from jaxlean.compile.directory import default_cache_dir
from jaxlean.compile.fingerprint import Unkeyable, fingerprint
from jaxlean.compile.multiprocess_key import host_cpu_signature
from jaxlean.errors import ConfigError

__all__ = ["CachedFunction", "ExecutableCache", "ExecutableCacheStats", "cached_jit"]

SUFFIX = ".jaxexec"
_SIDECAR = ".json"  # next to each entry: the function's name and the key's ingredients
_LAPACK = "jax._src.lax.linalg.initialize_lapack"
_FORMAT = 1
# jax config values that change how jax runs or reports, never the compiled program.
_NEUTRAL_CONFIG = ("compilation_cache", "persistent_cache", "log", "dump", "traceback",
                   "debug_log", "explain_cache_misses", "raise_persistent_cache_errors",
                   "timeout_minutes", "distributed_debug", "tracer_error_num")
_ENVIRONMENT = ("XLA_FLAGS", "LIBTPU_INIT_ARGS")


def default_executable_dir() -> Path:
    """``executables/`` next to the persistent compilation cache's default directory."""
    return default_cache_dir().parent / "executables"


@dataclasses.dataclass
class ExecutableCacheStats:
    """What the executable cache did: disk hits, misses (compiled, each with what
    differs from the nearest stored entry of the same function), entries written,
    and calls that took the normal path, with the reason of each."""

    hits: int = 0
    misses: int = 0
    writes: int = 0
    fallbacks: list[str] = dataclasses.field(default_factory=list)
    miss_reasons: list[str] = dataclasses.field(default_factory=list)


def _environment() -> dict[str, str]:
    """Digests of everything outside the function and its arguments that changes a
    program, by what a user would change (so a miss can name it)."""
    config = {name: value for name, value in jax.config.values.items()
              if not any(word in name for word in _NEUTRAL_CONFIG)}
    devices = [(d.id, d.platform, d.device_kind, d.process_index) for d in jax.devices()]
    backend = jax.devices()[0].client
    return {
        "jax, jaxlib and python versions": fingerprint(jax.__version__, jaxlib.__version__,
                                                       platform.python_version()),
        "backend": fingerprint(backend.platform, backend.platform_version),
        "devices and processes": fingerprint(devices, jax.process_index(),
                                             jax.process_count()),
        "jax config": fingerprint(config),
        "XLA_FLAGS / LIBTPU_INIT_ARGS": fingerprint({k: os.environ.get(k)
                                                     for k in _ENVIRONMENT}),
        "host CPU": fingerprint(host_cpu_signature()),
    }


def commit(args: tuple) -> tuple:
    """``args`` with every array placed where it is, committed.

    A freshly created array is uncommitted, the same array restored from a
    checkpoint or returned by a step is committed; committing both makes the
    first run and a resumed run look up the same executable.
    """
    return jax.tree.map(lambda x: jax.device_put(x, x.sharding)
                        if isinstance(x, jax.Array) and not x.committed else x, args)


def _leaf_signature(leaf: Any, path: str) -> tuple:
    if isinstance(leaf, jax.Array):
        return ("array", leaf.shape, str(leaf.dtype), leaf.weak_type, leaf.sharding,
                leaf.committed)
    if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
        return ("host", tuple(leaf.shape), str(leaf.dtype))
    if isinstance(leaf, bool | int | float | complex):
        return ("scalar", type(leaf).__name__)
    raise Unkeyable(f"argument leaf {path} is a {type(leaf).__qualname__}, not an array")


def _skeleton(treedef: jax.tree_util.PyTreeDef) -> Any:
    """A picklable pytree of ``treedef``'s structure (leaves numbered)."""
    return jax.tree.unflatten(treedef, list(range(treedef.num_leaves)))


def _encode_outputs(out_tree: jax.tree_util.PyTreeDef, in_tree: jax.tree_util.PyTreeDef) -> Any:
    """The output structure in a form that survives pickling: each part of an output
    tuple that has the structure of an argument (a train step's new model and
    optimizer state) is stored as that argument's index, the rest as a skeleton.
    Pytree nodes whose static data does not pickle equal (plans, sentinels) then
    come back from the arguments of the call that loads the entry."""
    arguments = in_tree.children()[0].children()
    node_type, _ = out_tree.node_data() or (None, None)
    if node_type is not tuple:
        return ("skeleton", _skeleton(out_tree))
    parts = []
    for child in out_tree.children():
        index = next((i for i, arg in enumerate(arguments) if arg == child), None)
        parts.append(("argument", index) if index is not None else ("skeleton", _skeleton(child)))
    return ("tuple", parts)


def _decode_outputs(encoded: Any, in_tree: jax.tree_util.PyTreeDef) -> jax.tree_util.PyTreeDef:
    """The output treedef :func:`_encode_outputs` described, for a call with ``in_tree``."""
    kind, content = encoded
    if kind == "skeleton":
        return jax.tree.structure(content)
    arguments = in_tree.children()[0].children()
    return jax.tree_util.treedef_tuple(
        [arguments[value] if part == "argument" else jax.tree.structure(value)
         for part, value in content])


def signature(args: tuple) -> tuple:
    """What identifies the arguments' structure and types (hashable, cheap)."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(args)
    return treedef, tuple(_leaf_signature(leaf, jax.tree_util.keystr(path))
                          for path, leaf in leaves)


class ExecutableCache:
    """A directory of serialized executables shared by the runs of a program.

    Args:
        directory: where entries live; default ``executables/`` next to the
            persistent cache's default directory. In a multi-process run each
            process keeps its own entries (the process index is part of the key:
            a loaded executable is that process's part of the program).
    """

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory).expanduser() if directory else default_executable_dir()
        self.stats = ExecutableCacheStats()
        self._lock = threading.Lock()
        self._environment: dict[str, str] | None = None
        self._warned: set[str] = set()

    def ingredients(self, program: str, signature: tuple) -> dict[str, str]:
        """The digest of each part of the key, by name."""
        if self._environment is None:
            self._environment = _environment()
        return {"function": program,
                "argument shapes, dtypes and shardings": fingerprint(signature),
                **self._environment}

    def _explain_miss(self, name: str, ingredients: dict[str, str]) -> str:
        """What differs between this call and the nearest entry stored for ``name``."""
        nearest: list[str] | None = None
        for sidecar in self.directory.glob(f"*{_SIDECAR}"):
            try:
                stored = json.loads(sidecar.read_text())
            except (OSError, ValueError):
                continue
            if stored.get("name") != name:
                continue
            differ = [part for part, digest in ingredients.items()
                      if stored.get("ingredients", {}).get(part) != digest]
            if nearest is None or len(differ) < len(nearest):
                nearest = differ
        if nearest is None:
            return f"{name}: first compile of this function in {self.directory}"
        return f"{name}: changed since the nearest stored entry: {', '.join(nearest)}"

    def _fallback(self, reason: str) -> None:
        with self._lock:
            self.stats.fallbacks.append(reason)
            first = reason not in self._warned
            self._warned.add(reason)
        if first:
            warnings.warn(f"jaxlean executable cache: {reason}; tracing and compiling normally",
                          stacklevel=4)

    def _load(self, path: Path, args: tuple) -> Callable | None:
        try:
            entry = pickle.loads(path.read_bytes())
            if entry.get("format") != _FORMAT:
                return None
            in_tree = jax.tree.structure((args, {}))
            out_tree = _decode_outputs(entry["outputs"], in_tree)
            return serialize_executable.deserialize_and_load(entry["executable"], in_tree,
                                                             out_tree)
        except FileNotFoundError:
            return None
        except Exception as err:  # a damaged or foreign entry is recompiled and replaced
            warnings.warn(f"jaxlean executable cache: cannot load {path.name} "
                          f"({type(err).__name__}: {err}); compiling again", stacklevel=4)
            return None

    def _store(self, path: Path, compiled: jax.stages.Compiled, args: tuple,
               description: dict) -> None:
        try:
            executable, in_tree, out_tree = serialize_executable.serialize(compiled)
            outputs = _encode_outputs(out_tree, in_tree)
            if _decode_outputs(pickle.loads(pickle.dumps(outputs)), in_tree) != out_tree:
                raise ValueError("the output structure does not survive pickling")
            data = pickle.dumps({"format": _FORMAT, "executable": executable,
                                 "outputs": outputs})
        except Exception as err:
            self._fallback(f"cannot serialize the executable ({type(err).__name__}: {err})")
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
            path.with_suffix(_SIDECAR).write_text(json.dumps(description))
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        with self._lock:
            self.stats.writes += 1

    def executable(self, jitted: Any, program: Any, args: tuple) -> Callable:
        """The compiled ``jitted`` for ``args``: loaded from disk, else compiled and stored.

        Args:
            jitted: a ``jax.jit`` function (used only on a miss).
            program: values that, with the arguments' signature, identify what
                ``jitted`` computes (the Python function and its jit options).
            args: the positional arguments it will be called with.

        Returns:
            A callable taking ``*args``: the loaded or compiled executable, or
            ``jitted`` itself when the key cannot be computed.
        """
        try:
            ingredients = self.ingredients(fingerprint(program), signature(args))
        except Unkeyable as err:
            self._fallback(f"cannot key the function safely: {err}")
            return jitted
        key = hashlib.sha256(json.dumps(ingredients, sort_keys=True).encode()).hexdigest()
        path = self.directory / f"{key}{SUFFIX}"
        if jax.default_backend() == "cpu" and not _jax_private.initialize_cpu_kernels():
            self._fallback("this JAX cannot register its CPU kernels before loading an "
                           f"executable ({_jax_private.problems()[_LAPACK]})")
            return jitted
        loaded = self._load(path, args)
        if loaded is not None:
            with self._lock:
                self.stats.hits += 1
            return loaded
        name = getattr(jitted, "__name__", "function")
        reason = self._explain_miss(name, ingredients)
        compiled = jitted.lower(*args).compile()
        with self._lock:
            self.stats.misses += 1
            self.stats.miss_reasons.append(reason)
        self._store(path, compiled, args, {"name": name, "ingredients": ingredients})
        return compiled


class CachedFunction:
    """``jax.jit(fn, **jit_options)`` whose executables come from an :class:`ExecutableCache`.

    Each distinct argument signature is looked up once per process; later calls
    run the executable directly.
    """

    def __init__(self, fn: Callable, cache: ExecutableCache, jit_options: dict[str, Any]):
        self.fn = fn
        self.cache = cache
        self._jitted = jax.jit(fn, **jit_options)
        self._program = (fn, jit_options)
        self._executables: dict[tuple, Callable] = {}

    def __call__(self, *args: Any) -> Any:
        args = commit(args)
        try:
            known = signature(args)
        except Unkeyable as err:
            self.cache._fallback(str(err))
            return self._jitted(*args)
        executable = self._executables.get(known)
        if executable is None:
            executable = self._executables[known] = self.cache.executable(
                self._jitted, self._program, args)
        return executable(*args)


def cached_jit(fn: Callable, cache: ExecutableCache | str | Path | None = None,
               **jit_options: Any) -> CachedFunction:
    """``jax.jit(fn, **jit_options)`` that a restarted process runs without tracing.

    The first process to call it with given argument shapes compiles as usual
    and stores the executable; later processes load it (see the module
    docstring for what the key covers). Positional arguments only; bind
    static values with ``functools.partial`` (they become part of the key).

    Args:
        fn: the function to compile.
        cache: an :class:`ExecutableCache` or its directory (default directory when ``None``).
        jit_options: ``jax.jit`` options such as ``donate_argnums`` or ``out_shardings``.
    """
    for name in ("static_argnums", "static_argnames"):
        if name in jit_options:
            raise ConfigError(f"cached_jit does not take {name}: bind static arguments with "
                              "functools.partial (their values then enter the key)")
    if not isinstance(cache, ExecutableCache):
        cache = ExecutableCache(cache)
    return CachedFunction(fn, cache, jit_options)
