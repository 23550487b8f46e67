"""Every private JAX internal jaxlean uses, checked once when this module is imported.

JAX's persistent compilation cache has no public hooks for what jaxlean does
(swap in a safer file store, reset the "cache initialised" state, make cache
keys process-invariant on multi-process CPU runs, see each lookup and write with
its key, exact compile time and host callbacks), and JAX runs XLA's cost
analysis only on a whole program (``compile_report`` needs it per loop body), so
jaxlean reaches into ``jax._src``. Those names move between JAX releases, so
they are all listed here, in :data:`INTERNALS`, with the shape jaxlean relies on
(an attribute, a callable with given parameters, a class with given methods).
Each is resolved and checked at import; nothing else in jaxlean imports ``jax._src``.

A missing or reshaped internal never breaks ``import jaxlean``. Using a feature
that needs it raises :class:`jaxlean.errors.CacheError` naming the installed JAX
version and the internal (:func:`require`); an optional feature is skipped with
a warning instead (see :func:`jaxlean.compile.multiprocess_key.install`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import time
from collections.abc import Callable
from typing import Any

import jax

from jaxlean.errors import CacheError

__all__ = [
    "CACHE_IO_INTERNALS",
    "INTERNALS",
    "STORE_INTERNALS",
    "CacheInterface",
    "Internal",
    "cache_refuses_host_callbacks",
    "get",
    "hlo_cost",
    "optimized_hlo",
    "persistent_store",
    "problems",
    "process_index",
    "refresh",
    "replace_accelerator_hash",
    "require",
    "reset_persistent_cache",
    "set_persistent_store",
    "watch_cache_io",
]


@dataclasses.dataclass(frozen=True)
class Internal:
    """One private JAX name jaxlean uses and the shape it must have.

    Attributes:
        path: dotted path, module then attributes
            (``jax._src.distributed.global_state.process_id``).
        use: what jaxlean does with it, for the error message.
        params: for a callable, the names of its leading parameters, in order.
        extra: parameters some JAX versions add after ``params`` (in this order): the
            callable may take them, required or not.
        methods: for a class or object, the methods it must have.
        optional: the feature that needs it is skipped (with a warning) when it is missing.
    """

    path: str
    use: str
    params: tuple[str, ...] | None = None
    methods: tuple[str, ...] = ()
    optional: bool = False
    extra: tuple[str, ...] = ()


INTERNALS: tuple[Internal, ...] = (
    Internal("jax._src.compilation_cache.reset_cache", "forget the cache JAX set up", params=()),
    Internal("jax._src.compilation_cache._cache", "install jaxlean's file store"),
    Internal("jax._src.compilation_cache._cache_initialized", "install jaxlean's file store"),
    Internal("jax._src.compilation_cache._cache_initialized_mutex",
             "install jaxlean's file store", methods=("__enter__", "__exit__")),
    Internal("jax._src.compilation_cache._cache_checked",
             "make turning the cache off take effect after a compile", optional=True),
    Internal("jax._src.compilation_cache._cache_used",
             "make turning the cache off take effect after a compile", optional=True),
    Internal("jax._src.compilation_cache.decompress_executable",
             "read a stored cache entry", params=("executable",)),
    Internal("jax._src.compilation_cache_interface.CacheInterface",
             "the base class of jaxlean's file store", methods=("get", "put")),
    Internal("jax._src.distributed.global_state.process_id",
             "know which process JAX lets write cache entries", optional=True),
    Internal("jax._src.cache_key._hash_accelerator_config",
             "make multi-process CPU cache keys process-invariant",
             params=("hash_obj", "accelerators"), optional=True),
    Internal("jax._src.lib.hlo.HloPrintOptions",
             "print a compiled program without metadata to find its loops", optional=True),
    Internal("jax._src.lib.hlo.hlo_module_from_text",
             "read one loop body back as an HLO module to estimate its cost", optional=True),
    Internal("jax._src.lib._jax.hlo_module_cost_analysis",
             "estimate the cost of one loop body", optional=True),
    Internal("jax._src.compiler._cache_read",
             "see each persistent-cache lookup, its key and how long the load took",
             params=("module_name", "cache_key", "compile_options", "backend",
                     "executable_devices"), extra=("host_callbacks",), optional=True),
    Internal("jax._src.compiler._cache_write",
             "see each program offered to the persistent cache, its exact compile time and "
             "whether the cache refuses it (host callbacks)",
             params=("cache_key", "compile_time_secs", "module_name", "backend", "executable"),
             extra=("host_callbacks",), optional=True),
)

_MISSING = object()
_found: dict[str, Any] = {}
_problems: dict[str, str] = {}


def _resolve(path: str) -> Any:
    """The object at ``path``: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            value = getattr(value, name, _MISSING)
            if value is _MISSING:
                return _MISSING
        return value
    return _MISSING


def _shape_problem(internal: Internal, value: Any) -> str | None:
    """Why ``value`` does not have the shape ``internal`` expects, or ``None``."""
    if internal.params is not None:
        if not callable(value):
            return "is not callable"
        try:
            parameters = list(inspect.signature(value).parameters)
        except (TypeError, ValueError):
            return "has no readable signature"
        required = [name for name, p in inspect.signature(value).parameters.items()
                    if p.default is inspect.Parameter.empty
                    and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        known = [*internal.params, *internal.extra]
        allowed = [name for name in parameters if name in known]
        if (parameters[:len(internal.params)] != list(internal.params)
                or allowed != known[:len(allowed)]
                or any(name not in known for name in required)):
            return (f"takes ({', '.join(parameters)}), jaxlean expects "
                    f"({', '.join(internal.params)})")
    if missing := [m for m in internal.methods if not callable(getattr(value, m, None))]:
        return f"has no method {', '.join(missing)}"
    return None


def refresh() -> dict[str, str]:
    """Resolve and check every internal again; returns :func:`problems`."""
    _found.clear()
    _problems.clear()
    for internal in INTERNALS:
        value = _resolve(internal.path)
        problem = "does not exist" if value is _MISSING else _shape_problem(internal, value)
        if problem is None:
            _found[internal.path] = value
        else:
            _problems[internal.path] = (f"jax {jax.__version__}: {internal.path} {problem} "
                                        f"(jaxlean uses it to {internal.use})")
    return problems()


def problems() -> dict[str, str]:
    """Each internal that is missing or reshaped in the installed JAX, with the reason."""
    return dict(_problems)


def require(feature: str, *paths: str) -> None:
    """Raise :class:`CacheError` naming every one of ``paths`` this JAX lacks.

    Args:
        feature: what the caller was about to do, in the user's terms.
        paths: dotted paths from :data:`INTERNALS`.
    """
    if bad := [_problems[p] for p in paths if p in _problems]:
        raise CacheError(f"{feature} needs JAX internals this JAX does not have: "
                         + "; ".join(bad)
                         + ". jaxlean is tested with jax 0.10 to 0.12; pin one, or upgrade jaxlean")


def get(path: str) -> Any:
    """The checked internal at ``path``; :class:`CacheError` when it is missing or reshaped."""
    require(f"using {path}", path)
    if path not in _found:
        raise CacheError(f"{path} is not one of jaxlean's checked JAX internals")
    return _found[path]


#: What :func:`set_persistent_store` needs; callers check them before changing any state.
STORE_INTERNALS = ("jax._src.compilation_cache.reset_cache",
                      "jax._src.compilation_cache._cache",
                      "jax._src.compilation_cache._cache_initialized",
                      "jax._src.compilation_cache._cache_initialized_mutex",
                      "jax._src.compilation_cache_interface.CacheInterface")


def reset_persistent_cache() -> None:
    """Return JAX's persistent cache to "not set up": the next compile reads the config again."""
    get("jax._src.compilation_cache.reset_cache")()


def set_persistent_store(store: Any) -> None:
    """Make ``store`` (a :data:`CacheInterface`) the persistent cache every later compile uses.

    JAX sets its cache up once per process from the config; resetting that state
    and installing the store directly lets the store be jaxlean's own class and
    lets a call after the first compile still take effect.
    """
    require("enabling jaxlean's compilation cache", *STORE_INTERNALS)
    module = importlib.import_module("jax._src.compilation_cache")
    module.reset_cache()
    with module._cache_initialized_mutex:
        module._cache = store
        module._cache_initialized = True


def set_cache_enabled(enabled: bool) -> None:
    """Turn JAX's persistent cache on or off for every later compile of this process.

    JAX decides once per process, at its first compile, whether it uses the cache
    (``is_cache_used`` is memoised), so flipping ``jax_enable_compilation_cache`` after a
    compile changes nothing by itself: a benchmark that turns the cache off to time
    compiles would still be served. Forgetting that decision (not the installed store)
    makes JAX read the flag again at the next compile.
    """
    jax.config.update("jax_enable_compilation_cache", enabled)
    names = ("jax._src.compilation_cache._cache_checked",
             "jax._src.compilation_cache._cache_used")
    if any(name in _problems for name in names):
        return  # this JAX keeps the decision elsewhere (or not at all): the flag is all
    module = importlib.import_module("jax._src.compilation_cache")
    with module._cache_initialized_mutex:
        module._cache_checked = False
        module._cache_used = False


def persistent_store() -> Any:
    """The store JAX's persistent cache uses now (``None`` when none is set up or this
    JAX keeps it elsewhere)."""
    if "jax._src.compilation_cache._cache" in _problems:
        return None
    return importlib.import_module("jax._src.compilation_cache")._cache


def process_index() -> int:
    """The process index JAX's cache-write gate reads (0 before ``jax.distributed.initialize``).

    Falls back to :func:`jax.process_index` when JAX keeps it elsewhere.
    """
    path = "jax._src.distributed.global_state.process_id"
    if path in _problems:
        return jax.process_index()
    state = importlib.import_module("jax._src.distributed").global_state
    return int(state.process_id or 0)


def process_count() -> int:
    """How many processes ``jax.distributed.initialize`` joined (1 before it), read
    without starting a backend; :func:`jax.process_count` when JAX keeps it elsewhere."""
    path = "jax._src.distributed.global_state.process_id"
    if path in _problems:
        return jax.process_count()
    state = importlib.import_module("jax._src.distributed").global_state
    return int(getattr(state, "num_processes", None) or 1)


def replace_accelerator_hash(make: Callable[[Callable], Callable]) -> bool:
    """Replace the accelerator part of JAX's cache key by ``make(original)``.

    Returns ``False`` (nothing replaced) when this JAX has no such function or
    it takes other parameters than ``(hash_obj, accelerators)``.
    """
    path = "jax._src.cache_key._hash_accelerator_config"
    if path in _problems:
        return False
    module = importlib.import_module("jax._src.cache_key")
    module._hash_accelerator_config = _found[path] = make(module._hash_accelerator_config)
    return True


#: What :func:`watch_cache_io` wraps.
CACHE_IO_INTERNALS = ("jax._src.compiler._cache_read", "jax._src.compiler._cache_write")


def cache_refuses_host_callbacks() -> bool:
    """Whether this JAX's persistent cache refuses programs that use host callbacks
    (JAX 0.10 does; JAX 0.12 stores them): read off ``_cache_write``'s parameters."""
    module = importlib.import_module("jax._src.compiler")
    write = getattr(module, "_cache_write", None)
    write = getattr(write, "__wrapped__", write)
    try:
        return write is not None and "host_callbacks" in inspect.signature(write).parameters
    except (TypeError, ValueError):
        return True


def watch_cache_io(on_read: Callable[..., None], on_write: Callable[..., None]) -> bool:
    """Have JAX's persistent-cache lookups and writes reported (once per process).

    ``on_read(module_name, cache_key, compile_time, seconds)`` runs after each
    lookup: ``compile_time`` is what the entry recorded (JAX stores whole seconds),
    ``None`` on a miss, and ``seconds`` the time the lookup and load took.
    ``on_write(module_name, cache_key, compile_time_secs, host_callbacks)`` runs
    before JAX decides whether to store a freshly compiled program (it refuses
    programs with host callbacks). Both run on the compiling thread.

    Returns ``False`` (nothing watched) when this JAX lacks either function or
    reshaped it.
    """
    if any(path in _problems for path in CACHE_IO_INTERNALS):
        return False
    module = importlib.import_module("jax._src.compiler")
    read, write = module._cache_read, module._cache_write
    if getattr(read, "_jaxlean_watched", False):
        return True

    @functools.wraps(read)
    def watched_read(module_name, cache_key, *args, **kwargs):
        start = time.monotonic()
        executable, compile_time = read(module_name, cache_key, *args, **kwargs)
        on_read(module_name, cache_key, None if executable is None else compile_time,
                time.monotonic() - start)
        return executable, compile_time

    # JAX 0.10 passes the program's host callbacks and refuses to store a program that has
    # any; JAX 0.12 no longer takes them (it stores such programs), so none are reported.
    refuses_callbacks = "host_callbacks" in inspect.signature(write).parameters

    @functools.wraps(write)
    def watched_write(cache_key, compile_time_secs, module_name, backend, executable,
                      *args, **kwargs):
        callbacks = (args[0] if args else kwargs.get("host_callbacks", ())) if (
            refuses_callbacks) else ()
        on_write(module_name, cache_key, compile_time_secs, callbacks)
        return write(cache_key, compile_time_secs, module_name, backend, executable,
                     *args, **kwargs)

    watched_read._jaxlean_watched = watched_write._jaxlean_watched = True
    module._cache_read, module._cache_write = watched_read, watched_write
    _found[CACHE_IO_INTERNALS[0]], _found[CACHE_IO_INTERNALS[1]] = watched_read, watched_write
    return True


def optimized_hlo(compiled: Any) -> list[str]:
    """The optimized HLO modules of ``compiled`` (a ``jax.stages.Compiled``) as parsable
    text without metadata (op names could hold any text); :class:`CacheError` when this
    JAX lacks the printer."""
    require("printing the optimized program", "jax._src.lib.hlo.HloPrintOptions")
    options = _found["jax._src.lib.hlo.HloPrintOptions"]()
    options.print_metadata = False
    return [module.to_string(options) for module in compiled.runtime_executable().hlo_modules()]


def hlo_cost(compiled: Any, text: str) -> dict[str, float]:
    """XLA's cost analysis (the one ``compiled.cost_analysis()`` runs) of the HLO module
    ``text`` on ``compiled``'s backend; :class:`CacheError` when this JAX lacks it."""
    require("estimating a loop body's cost", "jax._src.lib.hlo.hlo_module_from_text",
            "jax._src.lib._jax.hlo_module_cost_analysis")
    module = _found["jax._src.lib.hlo.hlo_module_from_text"](text)
    client = compiled.runtime_executable().client
    return dict(_found["jax._src.lib._jax.hlo_module_cost_analysis"](client, module))


def _cache_interface() -> type:
    """JAX's cache-store base class, or ``object`` when this JAX has none (then
    :func:`set_persistent_store` is refused by :func:`require` before any use)."""
    return _found.get("jax._src.compilation_cache_interface.CacheInterface", object)


refresh()
CacheInterface: type = _cache_interface()
