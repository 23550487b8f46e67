"""Hit/miss accounting for the persistent compilation cache, from ``jax.monitoring`` events.

JAX reports:

- ``/jax/core/compile/jaxpr_trace_duration``: a function was traced, with ``fun_name``
  (counted as ``traces`` of ``jit(<fun_name>)``);
- ``/jax/core/compile/backend_compile_duration``: a scalar (start time) when a
  backend compile starts and a duration when it ends, both with ``fun_name``;
- ``/jax/compilation_cache/compile_requests_use_cache``: a compile looked in the cache;
- ``/jax/compilation_cache/cache_hits``: ... and found a loadable executable;
- ``/jax/compilation_cache/compile_time_saved_sec``: duration, the original compile
  time minus the time to load it (JAX stores whole seconds, so small compiles save "0 s");
- ``/jax/compilation_cache/cache_misses``: despite its name, fired when an entry
  is handed to the store for writing (process 0, compile above the threshold);
  misses are ``requests - hits``. It fires before the store writes, so a store
  that may skip or fail a write (jaxlean's: read-only, full disk) reports its
  writes itself (:func:`record_write`) and this event is ignored for it; for
  other stores it is counted as a write.

The cache events carry no function name; they fire on the thread that runs the
compile, between the start and the end of its ``backend_compile_duration``, so
they are attributed to the ``fun_name`` that thread is compiling.

Where this JAX lets jaxlean watch the lookups and writes themselves
(:func:`jaxlean.compile._jax_private.watch_cache_io`), those replace the
request, hit and saved events:

- a lookup counts only when a persistent cache is in use (JAX asks even when no
  cache directory could be set up), so a run without a cache reports no misses;
- the compile seconds a hit saved are the exact compile time recorded when the
  entry was written (jaxlean's store keeps it beside the entry) minus the load time;
- a program the cache refuses to store (host callbacks: ``jax.debug.print``,
  ``jax.debug.callback``, ``io_callback``, a progress callback) counts as
  ``uncacheable``, not as a miss, and is warned about once per function. JAX 0.10
  refuses such programs; JAX 0.12 stores them, and there nothing is uncacheable
  (:func:`~jaxlean.compile._jax_private.cache_refuses_host_callbacks` tells which).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import jax

from jaxlean.compile import _jax_private

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
REQUEST_EVENT = "/jax/compilation_cache/compile_requests_use_cache"
HIT_EVENT = "/jax/compilation_cache/cache_hits"
WRITE_EVENT = "/jax/compilation_cache/cache_misses"
SAVED_EVENT = "/jax/compilation_cache/compile_time_saved_sec"
UNKNOWN_FUNCTION = "<unknown>"

__all__ = ["CacheStats", "FunctionCacheStats", "install_listeners", "pending_compile_seconds",
           "record_write", "set_inactive_reason", "snapshot"]


@dataclasses.dataclass
class FunctionCacheStats:
    """Counts for one compiled function name (summed over its compiles)."""

    traces: int = 0
    compiles: int = 0
    requests: int = 0
    hits: int = 0
    writes: int = 0
    uncacheable: int = 0
    compile_s: float = 0.0
    saved_s: float = 0.0

    @property
    def misses(self) -> int:
        """Compiles that looked in the cache and had to compile, though the cache could
        have stored them (``uncacheable`` ones are not misses)."""
        return max(self.requests - self.hits - self.uncacheable, 0)

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "misses": self.misses}


@dataclasses.dataclass
class CacheStats(FunctionCacheStats):
    """Process totals plus ``functions``: the same counts per compiled function name.

    ``traces`` counts the functions traced for ``jax.jit``, ``compiles`` every
    backend compile (cache or not), ``compile_s`` the seconds they took (loading
    from the cache included), ``saved_s`` the compile seconds the cache saved,
    ``uncacheable`` the compiles the cache refused to store. ``active`` says
    whether a persistent cache was in use; when it is not, ``inactive_reason``
    says why where it is known (a directory that could not be created).
    """

    functions: dict[str, FunctionCacheStats] = dataclasses.field(default_factory=dict)
    active: bool = False
    inactive_reason: str | None = None

    def summary(self) -> str:
        """One line: hits, misses, entries written, uncacheable compiles, compile seconds
        saved and spent; without a persistent cache, that there is none and why."""
        spent = f"{self.compiles} compiles took {self.compile_s:.2f} s"
        if not self.active:
            reason = self.inactive_reason or "enable_compilation_cache() was not called"
            return f"jaxlean compilation cache: not in use ({reason}); {spent}"
        miss = "miss" if self.misses == 1 else "misses"
        refused = f", {self.uncacheable} uncacheable" if self.uncacheable else ""
        return (f"jaxlean compilation cache: {self.hits} hits, {self.misses} {miss} "
                f"({self.writes} written){refused}, {self.saved_s:.2f} s compile saved; "
                f"{spent}")

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["functions"] = {name: f.to_dict() for name, f in self.functions.items()}
        return out


class _Recorder:
    """The listeners and the counts they update (one per process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stats = CacheStats()
        self.current = threading.local()
        self.installed = False
        self.watching = False  # lookups and writes seen directly, not through events
        self.inactive_reason: str | None = None
        self.warned: set[str] = set()

    def _rows(self) -> tuple[CacheStats, FunctionCacheStats]:
        name = getattr(self.current, "name", None) or UNKNOWN_FUNCTION
        return self.stats, self.stats.functions.setdefault(name, FunctionCacheStats())

    def on_scalar(self, event: str, value: float, **kwargs) -> None:
        if event == COMPILE_EVENT:
            self.current.name = str(kwargs.get("fun_name", UNKNOWN_FUNCTION))

    def on_event(self, event: str, **kwargs) -> None:
        field = {REQUEST_EVENT: "requests", HIT_EVENT: "hits", WRITE_EVENT: "writes"}.get(event)
        if field == "writes" and getattr(_jax_private.persistent_store(), "counts_writes", False):
            return  # the store counts what it really wrote
        if field in ("requests", "hits") and self.watching:
            return  # counted by on_read
        if field is not None:
            self.count(field)

    def on_read(self, module_name: str, cache_key: str, compile_time: float | None,
                seconds: float) -> None:
        """One lookup: counted when a cache is in use; a hit adds the compile time saved."""
        store = _jax_private.persistent_store()
        if store is None:
            return  # JAX looked, but no cache directory is set up
        self.count("requests")
        if compile_time is None:
            return
        self.count("hits")
        recorded = getattr(store, "compile_seconds", lambda key: None)(cache_key)
        compiled = float(compile_time) if recorded is None else recorded
        with self.lock:
            for row in self._rows():
                row.saved_s += max(compiled - seconds, 0.0)

    def on_write(self, module_name: str, cache_key: str, compile_time_secs: float,
                 host_callbacks: Sequence[Any]) -> None:
        """A program offered to the cache: refused ones are counted and warned about."""
        self.current.pending = None
        if _jax_private.persistent_store() is None:
            return
        if not host_callbacks:
            self.current.pending = (cache_key, float(compile_time_secs))
            return
        self.count("uncacheable")
        name = getattr(self.current, "name", None) or module_name
        with self.lock:
            if name in self.warned:
                return
            self.warned.add(name)
        count = len(host_callbacks)
        warnings.warn(
            f"jaxlean: {name} is uncacheable: it uses {count} host callback"
            f"{'' if count == 1 else 's'} (jax.debug.print, jax.debug.callback, io_callback, "
            "pure_callback or a progress callback), and JAX's persistent compilation cache "
            "does not store programs with host callbacks, so every new process compiles it "
            f"again; move the callbacks out of {name} to have it cached",
            UserWarning, stacklevel=_caller_outside_jax())

    def count(self, field: str) -> None:
        """Add one to ``field`` in the totals and in the row of the function being compiled."""
        with self.lock:
            for row in self._rows():
                setattr(row, field, getattr(row, field) + 1)

    def on_duration(self, event: str, duration: float, **kwargs) -> None:
        if event == TRACE_EVENT:
            name = f"jit({kwargs.get('fun_name', UNKNOWN_FUNCTION)})"
            with self.lock:
                self.stats.traces += 1
                self.stats.functions.setdefault(name, FunctionCacheStats()).traces += 1
        elif event == SAVED_EVENT and not self.watching:
            with self.lock:
                for row in self._rows():
                    row.saved_s += max(float(duration), 0.0)
        elif event == COMPILE_EVENT:
            self.current.name = str(kwargs.get("fun_name", UNKNOWN_FUNCTION))
            with self.lock:
                for row in self._rows():
                    row.compiles += 1
                    row.compile_s += float(duration)
            self.current.name = None

    def install(self) -> None:
        with self.lock:
            if self.installed:
                return
            self.installed = True
        self.watching = _jax_private.watch_cache_io(self.on_read, self.on_write)
        jax.monitoring.register_scalar_listener(self.on_scalar)
        jax.monitoring.register_event_listener(self.on_event)
        jax.monitoring.register_event_duration_secs_listener(self.on_duration)


def _caller_outside_jax() -> int:
    """The ``stacklevel`` (counted from the caller) of the first frame outside JAX and this
    package: the line that called the compiled function, for a warning raised in a compile."""
    skip = (os.path.dirname(jax.__file__) + os.sep, os.path.dirname(__file__) + os.sep)
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame, level = frame.f_back, level + 1
    return level


_RECORDER = _Recorder()


def install_listeners() -> None:
    """Start counting (idempotent); events before the first call are not seen."""
    _RECORDER.install()


def record_write() -> None:
    """Count one entry written, for the function this thread is compiling (called by a store)."""
    _RECORDER.count("writes")


def pending_compile_seconds(key: str) -> float | None:
    """The exact compile seconds of the entry ``key`` this thread is about to store (for
    the store to keep beside the entry), or ``None`` when not known."""
    pending = getattr(_RECORDER.current, "pending", None)
    return pending[1] if pending is not None and pending[0] == key else None


def set_inactive_reason(reason: str | None) -> None:
    """Why no persistent cache is in use (``None``: a cache was set up, or no reason known)."""
    _RECORDER.inactive_reason = reason


def snapshot(reset: bool = False) -> CacheStats:
    """A copy of the counts so far; ``reset=True`` starts counting from zero again."""
    install_listeners()
    active = _jax_private.persistent_store() is not None
    with _RECORDER.lock:
        out = copy.deepcopy(_RECORDER.stats)
        if reset:
            _RECORDER.stats = CacheStats()
    out.active = active or (_RECORDER.watching and out.requests > 0)
    out.inactive_reason = None if out.active else _RECORDER.inactive_reason
    return out

