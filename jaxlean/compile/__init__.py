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

The public submodules and the names below load on first use (PEP 562;
``jaxlean.compile.cache`` after ``import jaxlean`` works).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxlean._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see of the lazy names below
    from jaxlean.compile import cache as cache
    from jaxlean.compile import check as check
    from jaxlean.compile import cli as cli
    from jaxlean.compile import cpu_collectives as cpu_collectives
    from jaxlean.compile import directory as directory
    from jaxlean.compile import file_cache as file_cache
    from jaxlean.compile import health as health
    from jaxlean.compile import multiprocess_key as multiprocess_key
    from jaxlean.compile import program_cost as program_cost
    from jaxlean.compile import quick as quick
    from jaxlean.compile import report as report
    from jaxlean.compile import stats as stats
    from jaxlean.compile.cache import CacheStats as CacheStats
    from jaxlean.compile.cache import FunctionCacheStats as FunctionCacheStats
    from jaxlean.compile.cache import cache_stats as cache_stats
    from jaxlean.compile.cache import enable_compilation_cache as enable_compilation_cache
    from jaxlean.compile.cpu_collectives import check_cache_is_safe as check_cache_is_safe
    from jaxlean.compile.cpu_collectives import (
        keep_collectives_in_order as keep_collectives_in_order,
    )
    from jaxlean.compile.directory import CacheEntry as CacheEntry
    from jaxlean.compile.directory import default_cache_dir as default_cache_dir
    from jaxlean.compile.directory import list_entries as list_entries
    from jaxlean.compile.file_cache import SafeFileCache as SafeFileCache
    from jaxlean.compile.health import check_directory as check_directory
    from jaxlean.compile.quick import quick_compile_options as quick_compile_options
    from jaxlean.compile.report import CompileReport as CompileReport
    from jaxlean.compile.report import compile_report as compile_report

_SUBMODULES = ("cache", "check", "cli", "cpu_collectives", "directory", "file_cache", "health",
               "multiprocess_key", "program_cost", "quick", "report", "stats")

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "CacheStats": "jaxlean.compile.cache",
    "FunctionCacheStats": "jaxlean.compile.cache",
    "cache_stats": "jaxlean.compile.cache",
    "enable_compilation_cache": "jaxlean.compile.cache",
    "check_cache_is_safe": "jaxlean.compile.cpu_collectives",
    "keep_collectives_in_order": "jaxlean.compile.cpu_collectives",
    "CacheEntry": "jaxlean.compile.directory",
    "default_cache_dir": "jaxlean.compile.directory",
    "list_entries": "jaxlean.compile.directory",
    "SafeFileCache": "jaxlean.compile.file_cache",
    "check_directory": "jaxlean.compile.health",
    "quick_compile_options": "jaxlean.compile.quick",
    "CompileReport": "jaxlean.compile.report",
    "compile_report": "jaxlean.compile.report",
}

__all__ = ["CacheEntry", "CacheStats", "CompileReport", "FunctionCacheStats", "SafeFileCache",
           "cache", "cache_stats", "check", "check_cache_is_safe", "check_directory", "cli",
           "compile_report", "cpu_collectives", "default_cache_dir", "directory",
           "enable_compilation_cache", "file_cache", "health", "keep_collectives_in_order",
           "list_entries", "multiprocess_key", "program_cost", "quick", "quick_compile_options",
           "report", "stats"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, _SUBMODULES)
