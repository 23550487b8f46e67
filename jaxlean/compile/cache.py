"""Compile once across runs: JAX's persistent compilation cache, made safe and observable.

:func:`enable_compilation_cache` points JAX's persistent cache at a directory
shared by every run (and every process of a multi-process run);
:func:`cache_stats` says how often it hit.
"""

from __future__ import annotations

import atexit
import sys
import warnings
from pathlib import Path

import jax

from jaxlean.compile import _jax_private, cpu_collectives, health, multiprocess_key
from jaxlean.compile.directory import default_cache_dir, prune
from jaxlean.compile.file_cache import SafeFileCache
from jaxlean.compile.stats import (
    CacheStats,
    FunctionCacheStats,
    install_listeners,
    set_inactive_reason,
    snapshot,
)
from jaxlean.errors import CacheError

__all__ = ["CacheStats", "FunctionCacheStats", "cache_stats", "enable_compilation_cache",
           "use_compilation_cache"]

_summary_registered = False


def _install_store(store: SafeFileCache | None) -> None:
    """Forget JAX's cache state (so an earlier compile cannot pin it) and use ``store``."""
    jax.config.update("jax_compilation_cache_dir", str(store.path) if store else None)
    if store is None:
        _jax_private.reset_persistent_cache()
        return
    jax.config.update("jax_enable_compilation_cache", True)
    _jax_private.set_persistent_store(store)


def use_compilation_cache(enabled: bool) -> None:
    """Turn the persistent cache on or off for every later compile of this process.

    Unlike setting ``jax_enable_compilation_cache`` alone, this takes effect after the
    process has compiled: JAX decides once per process whether it uses the cache, and
    this makes it decide again (the store and directory set up stay). ``jaxlean bench``
    turns the cache off this way so that compile times are measured, not loaded.
    """
    _jax_private.set_cache_enabled(enabled)


def _print_summary() -> None:
    print(snapshot().summary(), file=sys.stderr)


def _no_cache(message: str) -> None:
    """Warn that the run goes on without a persistent cache, and keep why for the summary."""
    set_inactive_reason(message)
    warnings.warn(f"jaxlean: {message}; running without a persistent cache", stacklevel=4)


def _read_only(directory: Path, asked: bool) -> bool | None:
    """Whether to use ``directory`` read-only (``None``: not at all), warning when not as asked.

    Process 0 probes by writing a file (permissions, read-only mounts and quotas
    all answer truthfully that way, also for root); the other processes never
    write, so they use the directory as it is.
    """
    if asked or _jax_private.process_index() != 0:
        if asked and not directory.is_dir():
            _no_cache(f"no compilation cache at {directory} to read")
            return None
        return asked
    reason = health.unwritable_reason(directory, create=True)
    if reason is None:
        return False
    if not directory.is_dir():
        _no_cache(f"cannot create the compilation cache at {directory} ({reason})")
        return None
    warnings.warn(f"jaxlean: the compilation cache at {directory} is read-only ({reason}): "
                  "its entries are used, new compiles are not stored", stacklevel=3)
    return True


def enable_compilation_cache(path: str | Path | None = None, *, min_compile_secs: float = 1.0,
                             max_size_bytes: int | None = None,
                             xla_caches: str = "xla_gpu_per_fusion_autotune_cache_dir",
                             summary_at_exit: bool = False,
                             read_only: bool = False) -> Path | None:
    """Cache compiled executables on disk so the next run loads them instead of compiling.

    Call it once, early; after ``jax.distributed.initialize()`` in a multi-process
    run (the write gate reads the process index). Calling it after something was
    compiled works: JAX's "is the cache set up" state is reset, so every later
    compile uses the new directory (functions already compiled in this process
    are cached the next time they are compiled).

    In a multi-process run every process reads the cache and only process 0
    writes it (JAX's own rule, which avoids write contention on shared
    filesystems); only process 0 creates the directory, so put it on a
    filesystem every process sees. On CPU, JAX puts a per-process topology
    fingerprint into every cache key, so the other processes would never find
    process 0's entries; jaxlean replaces that part of the key for
    multi-process CPU runs (see :mod:`jaxlean.compile.multiprocess_key`), so every process
    hits on the next launch.

    Entries are written atomically and an entry that cannot be loaded (truncated,
    corrupted) is recompiled and replaced instead of crashing (see
    :mod:`jaxlean.compile.file_cache`).

    A directory that exists but cannot be written (a shared cache on a read-only
    filesystem, another user's directory) is used read-only: its entries are hit,
    nothing is written, renamed or deleted, and one warning names the directory
    and the reason. ``read_only=True`` asks for that without the probe or the
    warning; asking for a directory that does not exist warns and runs without
    a cache. A write that fails later (a full disk) warns once and turns the cache
    read-only. A directory that does not exist and cannot be created warns and
    leaves the program running without a persistent cache.

    Args:
        path: cache directory; default ``$JAXLEAN_CACHE_DIR``, else ``~/.cache/jaxlean/xla``.
        min_compile_secs: only compiles at least this long are written (small
            ones are cheaper to redo than to store).
        max_size_bytes: keep the directory under this size by deleting least
            recently used entries (process 0, at start and after each write;
            never in a read-only cache).
        xla_caches: JAX's ``jax_persistent_cache_enable_xla_caches``: XLA
            sub-caches kept next to the entries ("all", a comma list, or "none").
        summary_at_exit: print :meth:`CacheStats.summary` to stderr at exit.
        read_only: use the entries already in ``path``, never write to it.

    Returns:
        The directory in use (also when read-only), or ``None`` when no cache could
        be enabled.

    Raises:
        CacheError: on invalid arguments, when the installed JAX lacks an
            internal the cache setup needs (the message names it and the version),
            or in a multi-process CPU run with XLA:CPU's concurrency-optimized
            scheduler on (see :mod:`jaxlean.compile.cpu_collectives`).
    """
    if min_compile_secs < 0:
        raise CacheError(f"min_compile_secs must be >= 0, got {min_compile_secs}")
    if max_size_bytes is not None and max_size_bytes <= 0:
        raise CacheError(f"max_size_bytes must be positive (or None for no limit), "
                         f"got {max_size_bytes}")
    directory = Path(path).expanduser() if path is not None else default_cache_dir()
    install_listeners()
    _jax_private.require("enable_compilation_cache", *_jax_private.STORE_INTERNALS)
    cpu_collectives.check_cache_is_safe()
    if not multiprocess_key.install():
        problem = _jax_private.problems().get(multiprocess_key.INTERNAL, "")
        warnings.warn(f"jaxlean: {problem}; skipped: in multi-process CPU runs only "
                      "process 0 will find cache entries", stacklevel=2)
    read_only = _read_only(directory, read_only)
    if read_only is None:
        _install_store(None)
        return None
    if max_size_bytes is not None and not read_only and _jax_private.process_index() == 0:
        try:
            prune(directory, max_size_bytes)
        except (OSError, CacheError) as err:
            warnings.warn(f"jaxlean: cannot trim the compilation cache at {directory} to "
                          f"{max_size_bytes} bytes ({type(err).__name__}: {err}); it may "
                          "stay above the limit", stacklevel=2)
    set_inactive_reason(None)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_secs))
    jax.config.update("jax_persistent_cache_enable_xla_caches", xla_caches)
    _install_store(SafeFileCache(directory, max_size_bytes, read_only=read_only))
    global _summary_registered
    if summary_at_exit and not _summary_registered:
        atexit.register(_print_summary)
        _summary_registered = True
    return directory


def cache_stats(reset: bool = False) -> CacheStats:
    """Persistent-cache hits, misses, writes and compile seconds saved, total and per function.

    Counting starts at the first call of this function, :func:`enable_compilation_cache`
    or :func:`compile_report`. A compile the cache refuses to store (a program with
    host callbacks) counts as ``uncacheable``, not as a miss, and is warned about
    once per function. ``saved_s`` is the compile time recorded when each hit entry
    was written (to the millisecond, for entries jaxlean's store wrote) minus the
    time to load it. Without a persistent cache in use, ``active`` is false and
    :meth:`CacheStats.summary` says so (and why) instead of giving hits and misses.

    Args:
        reset: start counting from zero after taking this snapshot.

    Returns:
        A :class:`CacheStats` copy; ``.functions`` maps a compiled function name to its counts.
    """
    return snapshot(reset)
