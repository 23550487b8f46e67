"""Compile once across runs: JAX's persistent compilation cache, made safe and observable.

:func:`enable_compilation_cache` points JAX's persistent cache at a directory
shared by every run (and every process of a multi-process run);
:func:`cache_stats` says how often it hit; :func:`compile_report` times one
function's trace, lower and compile stages and says whether the cache served it.
"""

from __future__ import annotations

import atexit
import dataclasses
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
from jax._src import compilation_cache as _jax_cache
from jax._src import distributed as _jax_distributed
from rich.table import Table

from jaxlean import _cache_key
from jaxlean._cache_dir import default_cache_dir, prune
from jaxlean._cache_stats import CacheStats, FunctionCacheStats, install_listeners, snapshot
from jaxlean._cache_store import SafeFileCache
from jaxlean._units import format_bytes
from jaxlean.errors import CacheError

__all__ = [
    "CacheStats",
    "CompileReport",
    "FunctionCacheStats",
    "cache_stats",
    "compile_report",
    "enable_compilation_cache",
]

_summary_registered = False


def _process_id() -> int:
    """The process index JAX's cache-write gate reads (0 before ``jax.distributed.initialize``)."""
    return int(_jax_distributed.global_state.process_id or 0)


def _unwritable_reason(directory: Path) -> str | None:
    """Why process 0 cannot write cache entries into ``directory``, or ``None`` if it can."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".jaxlean-probe-"):
            pass
    except OSError as err:
        return f"{type(err).__name__}: {err}"
    return None


_JAX_INTERNALS = ("reset_cache", "_cache", "_cache_initialized", "_cache_initialized_mutex")


def _install_store(store: SafeFileCache | None) -> None:
    """Forget JAX's cache state (so an earlier compile cannot pin it) and use ``store``."""
    if missing := [name for name in _JAX_INTERNALS if not hasattr(_jax_cache, name)]:
        raise CacheError(
            f"jax {jax.__version__} has no jax._src.compilation_cache.{', '.join(missing)}: "
            "jaxlean's cache setup was written against jax 0.10; set "
            "jax.config.update('jax_compilation_cache_dir', path) yourself instead")
    _jax_cache.reset_cache()
    jax.config.update("jax_compilation_cache_dir", str(store.path) if store else None)
    if store is None:
        return
    jax.config.update("jax_enable_compilation_cache", True)
    with _jax_cache._cache_initialized_mutex:
        _jax_cache._cache = store
        _jax_cache._cache_initialized = True


def _print_summary() -> None:
    print(snapshot().summary(), file=sys.stderr)


def enable_compilation_cache(path: str | Path | None = None, *, min_compile_secs: float = 1.0,
                             max_size_bytes: int | None = None,
                             xla_caches: str = "xla_gpu_per_fusion_autotune_cache_dir",
                             summary_at_exit: bool = False) -> Path | None:
    """Cache compiled executables on disk so the next run loads them instead of compiling.

    Call it once, early; after ``jax.distributed.initialize()`` in a multi-process
    run (the write gate reads the process index). Calling it after something was
    compiled works: JAX's "is the cache set up" state is reset, so every later
    compile uses the new directory (functions already compiled in this process
    are cached the next time they are compiled).

    Multi-process rule, checked in the installed jax (0.10.2): ``jax/_src/compiler.py``
    ``_cache_write`` returns early when ``distributed.global_state.process_id != 0``
    ("Only write cache entries from the first process. Otherwise we create problems
    with contention for writes on some filesystems, e.g., GCS."), and
    ``get_compile_options`` sets the XLA GPU autotune sub-cache to ``UPDATE`` on
    process 0 and ``READ`` elsewhere. So every process reads and only process 0
    writes; here only process 0 creates the directory, so use a shared filesystem.
    On CPU, jax 0.10.2 puts a per-process topology fingerprint into every cache
    key, so the other processes would never find process 0's entries; jaxlean
    replaces that part of the key for multi-process CPU runs (see
    :mod:`jaxlean._cache_key`), so every process hits on the next launch.

    Entries are written atomically and an entry that cannot be loaded (truncated,
    corrupted) is recompiled and replaced instead of crashing (see
    :mod:`jaxlean._cache_store`). An unwritable directory warns and leaves the
    program running without a persistent cache.

    Args:
        path: cache directory; default ``$JAXLEAN_CACHE_DIR``, else ``~/.cache/jaxlean/xla``.
        min_compile_secs: only compiles at least this long are written (small
            ones are cheaper to redo than to store).
        max_size_bytes: keep the directory under this size by deleting least
            recently used entries (process 0, at start and after each write).
        xla_caches: JAX's ``jax_persistent_cache_enable_xla_caches``: XLA
            sub-caches kept next to the entries ("all", a comma list, or "none").
        summary_at_exit: print :meth:`CacheStats.summary` to stderr at exit.

    Returns:
        The directory in use, or ``None`` when the cache could not be enabled.
    """
    if min_compile_secs < 0:
        raise CacheError(f"min_compile_secs must be >= 0, got {min_compile_secs}")
    if max_size_bytes is not None and max_size_bytes <= 0:
        raise CacheError(f"max_size_bytes must be positive (or None for no limit), "
                         f"got {max_size_bytes}")
    directory = Path(path).expanduser() if path is not None else default_cache_dir()
    install_listeners()
    if not _cache_key.install():
        warnings.warn("jaxlean: this jax has no jax._src.cache_key._hash_accelerator_config; "
                      "in multi-process CPU runs only process 0 will find cache entries",
                      stacklevel=2)
    if _process_id() == 0:
        if reason := _unwritable_reason(directory):
            warnings.warn(f"jaxlean: cannot write the compilation cache at {directory} "
                          f"({reason}); running without a persistent cache", stacklevel=2)
            _install_store(None)
            return None
        if max_size_bytes is not None:
            prune(directory, max_size_bytes)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_secs))
    jax.config.update("jax_persistent_cache_enable_xla_caches", xla_caches)
    _install_store(SafeFileCache(directory, max_size_bytes))
    global _summary_registered
    if summary_at_exit and not _summary_registered:
        atexit.register(_print_summary)
        _summary_registered = True
    return directory


def cache_stats(reset: bool = False) -> CacheStats:
    """Persistent-cache hits, misses, writes and compile seconds saved, total and per function.

    Counting starts at the first call of this function, :func:`enable_compilation_cache`
    or :func:`compile_report`.

    Args:
        reset: start counting from zero after taking this snapshot.

    Returns:
        A :class:`CacheStats` copy; ``.functions`` maps a compiled function name to its counts.
    """
    return snapshot(reset)


_HLO_INSTRUCTION = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?%[\w.\-]+[ \t]*=[ \t]", re.MULTILINE)
_STABLEHLO_OP = re.compile(r'^[ \t]*(?:%[^=\n]*=[ \t]*)?"?(?:stablehlo|chlo|mhlo)\.', re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class CompileReport:
    """Where one function's compile time and memory go; see :func:`compile_report`."""

    name: str
    trace_s: float
    lower_s: float
    compile_s: float
    stablehlo_ops: int
    hlo_instructions: int
    flops: float | None
    argument_bytes: int | None
    output_bytes: int | None
    temp_bytes: int | None
    persistent_cache: str
    saved_s: float

    @property
    def total_s(self) -> float:
        return self.trace_s + self.lower_s + self.compile_s

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "total_s": self.total_s}

    def _rows(self) -> list[tuple[str, str]]:
        def size(value: int | None) -> str:
            return "n/a" if value is None else format_bytes(value)

        return [
            ("trace", f"{self.trace_s:.3f} s"), ("lower", f"{self.lower_s:.3f} s"),
            ("compile", f"{self.compile_s:.3f} s"), ("total", f"{self.total_s:.3f} s"),
            ("StableHLO ops (lowered)", str(self.stablehlo_ops)),
            ("HLO instructions (optimized)", str(self.hlo_instructions)),
            ("flops", "n/a" if self.flops is None else f"{self.flops:.4g}"),
            ("argument bytes", size(self.argument_bytes)),
            ("output bytes", size(self.output_bytes)),
            ("temp bytes", size(self.temp_bytes)),
            ("persistent cache", self.persistent_cache
             + (f" (saved {self.saved_s:.1f} s)" if self.persistent_cache == "hit" else "")),
        ]

    def __rich__(self) -> Table:
        table = Table(title=f"compile report: {self.name}", title_justify="left")
        table.add_column("stage / quantity")
        table.add_column("value", justify="right")
        for row in self._rows():
            table.add_row(*row)
        return table

    def __str__(self) -> str:
        return "\n".join([f"compile report: {self.name}"]
                         + [f"  {key:<30}{value}" for key, value in self._rows()])


def _memory(compiled: Any) -> Any:
    try:
        return compiled.memory_analysis()
    except Exception:  # not every backend implements it
        return None


def _flops(compiled: Any) -> float | None:
    try:
        cost = compiled.cost_analysis()
    except Exception:  # not every backend implements it
        return None
    if isinstance(cost, list | tuple):
        cost = cost[0] if cost else None
    return float(cost["flops"]) if cost and "flops" in cost else None


def _cache_outcome(compiles: int, requests: int, hits: int) -> str:
    if compiles == 0:
        return "in-memory"
    if requests == 0:
        return "off"
    return "hit" if hits == requests else "miss"


def compile_report(fn: Callable, *args: Any, **kwargs: Any) -> CompileReport:
    """Trace, lower and compile ``fn(*args, **kwargs)`` ahead of time and report each stage.

    ``fn`` may be a plain function (wrapped in a fresh ``jax.jit``) or an already
    jitted one (to pass ``static_argnums`` and the like). The persistent cache
    column is ``hit``/``miss`` when the persistent cache was asked, ``off`` when
    the compile did not use it (cache disabled), and ``in-memory`` when JAX's
    in-process caches answered without a backend compile (the same function
    reported twice; ``jax.clear_caches()`` first to measure a real compile).

    Returns:
        A :class:`CompileReport`; print it (rich renders a table) or ``.to_dict()`` it.
    """
    install_listeners()
    jitted = fn if hasattr(fn, "trace") else jax.jit(fn)
    start = time.perf_counter()
    traced = jitted.trace(*args, **kwargs)
    traced_at = time.perf_counter()
    lowered = traced.lower()
    lowered_at = time.perf_counter()
    before = snapshot()
    compiled = lowered.compile()
    compiled_at = time.perf_counter()
    after = snapshot()
    requests, hits = after.requests - before.requests, after.hits - before.hits
    memory = _memory(compiled)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return CompileReport(
        name=name,
        trace_s=traced_at - start,
        lower_s=lowered_at - traced_at,
        compile_s=compiled_at - lowered_at,
        stablehlo_ops=len(_STABLEHLO_OP.findall(lowered.as_text())),
        hlo_instructions=len(_HLO_INSTRUCTION.findall(compiled.as_text() or "")),
        flops=_flops(compiled),
        argument_bytes=getattr(memory, "argument_size_in_bytes", None),
        output_bytes=getattr(memory, "output_size_in_bytes", None),
        temp_bytes=getattr(memory, "temp_size_in_bytes", None),
        persistent_cache=_cache_outcome(after.compiles - before.compiles, requests, hits),
        saved_s=after.saved_s - before.saved_s,
    )
