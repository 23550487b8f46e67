"""Compile once across runs.

- ``cache``: :func:`enable_compilation_cache` and :func:`cache_stats`, JAX's
  persistent compilation cache made safe for many processes and observable;
- ``file_cache``: the store it installs (atomic writes, damaged entries replaced,
  read-only directories served without writes);
- ``directory``: the cache directory on disk (listing, clearing, pruning);
- ``health``: what stops a cache directory from working (``jaxlean cache info``);
- ``multiprocess_key``: cache keys that every process of a CPU run shares;
- ``stats``: trace, hit, miss and uncacheable accounting, from ``jax.monitoring`` events
  and the cache lookups and writes themselves;
- ``report``: :func:`compile_report`, one function's compile stage by stage;
- ``program_cost``: flops and bytes of a compiled program, loops times their trip counts;
- ``check``: explain the misses of a command run twice (``jaxlean cache check``);
- ``cli``: ``jaxlean cache info|clear|prune|check``;
- ``_jax_private``: every JAX internal the above uses, checked at import.

The public submodules load on first use (``jaxlean.compile.cache`` after ``import
jaxlean`` works).
"""

from __future__ import annotations

import importlib
from types import ModuleType

_SUBMODULES = ("cache", "check", "cli", "cpu_collectives", "directory", "file_cache", "health",
               "multiprocess_key", "program_cost", "quick", "report", "stats")

__all__ = list(_SUBMODULES)


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES})
