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
"""

from __future__ import annotations

import copy
import dataclasses
import threading

import jax

from jaxlean.compile import _jax_private

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
REQUEST_EVENT = "/jax/compilation_cache/compile_requests_use_cache"
HIT_EVENT = "/jax/compilation_cache/cache_hits"
WRITE_EVENT = "/jax/compilation_cache/cache_misses"
SAVED_EVENT = "/jax/compilation_cache/compile_time_saved_sec"
UNKNOWN_FUNCTION = "<unknown>"


@dataclasses.dataclass
class FunctionCacheStats:
    """Counts for one compiled function name (summed over its compiles)."""

    traces: int = 0
    compiles: int = 0
    requests: int = 0
    hits: int = 0
    writes: int = 0
    compile_s: float = 0.0
    saved_s: float = 0.0

    @property
    def misses(self) -> int:
        """Compiles that looked in the cache and had to compile."""
        return self.requests - self.hits

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "misses": self.misses}


@dataclasses.dataclass
class CacheStats(FunctionCacheStats):
    """Process totals plus ``functions``: the same counts per compiled function name.

    ``traces`` counts the functions traced for ``jax.jit``, ``compiles`` every
    backend compile (cache or not), ``compile_s`` the seconds they took (loading
    from the cache included), ``saved_s`` the compile seconds the cache saved.
    """

    functions: dict[str, FunctionCacheStats] = dataclasses.field(default_factory=dict)

    def summary(self) -> str:
        """One line: hits, misses, entries written, compile seconds saved and spent."""
        miss = "miss" if self.misses == 1 else "misses"
        return (f"jaxlean compilation cache: {self.hits} hits, {self.misses} {miss} "
                f"({self.writes} written), {self.saved_s:.1f} s compile saved; "
                f"{self.compiles} compiles took {self.compile_s:.1f} s")

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
        if field is not None:
            self.count(field)

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
        elif event == SAVED_EVENT:
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
        jax.monitoring.register_scalar_listener(self.on_scalar)
        jax.monitoring.register_event_listener(self.on_event)
        jax.monitoring.register_event_duration_secs_listener(self.on_duration)


_RECORDER = _Recorder()


def install_listeners() -> None:
    """Start counting (idempotent); events before the first call are not seen."""
    _RECORDER.install()


def record_write() -> None:
    """Count one entry written, for the function this thread is compiling (called by a store)."""
    _RECORDER.count("writes")


def snapshot(reset: bool = False) -> CacheStats:
    """A copy of the counts so far; ``reset=True`` starts counting from zero again."""
    install_listeners()
    with _RECORDER.lock:
        out = copy.deepcopy(_RECORDER.stats)
        if reset:
            _RECORDER.stats = CacheStats()
    return out

