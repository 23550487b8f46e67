"""The persistent compilation cache on disk: where it lives, what is in it, how to trim it.

JAX stores one file per compiled executable, named ``<module>-<sha256>-cache``
(``<module>`` is the lowered module's name, e.g. ``jit_train_step``), and, when
its own LRU eviction is on, a ``<module>-<sha256>-atime`` file with the last
access time. XLA's GPU sub-caches live in sub-directories. jaxlean's store keeps a
``<module>-<sha256>-jaxlean.json`` beside each entry it writes, with the exact
compile time (JAX's entry records whole seconds). This module reads
that layout for ``jaxlean cache info|clear|prune`` and for
:func:`jaxlean.compile.cache.enable_compilation_cache`'s size limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
from pathlib import Path

from jaxlean.errors import CacheError

__all__ = ["ATIME_SUFFIX", "ENTRY_SUFFIX", "METADATA_SUFFIX", "XLA_SUBCACHES", "CacheEntry",
           "clear", "default_cache_dir", "function_of_key", "list_entries", "parse_size", "prune",
           "remove_entry"]

ENTRY_SUFFIX = "-cache"
ATIME_SUFFIX = "-atime"
METADATA_SUFFIX = "-jaxlean.json"
XLA_SUBCACHES = ("xla_gpu_per_fusion_autotune_cache_dir", "xla_gpu_kernel_cache_file")

_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,
               "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def default_cache_dir() -> Path:
    """``$JAXLEAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/jaxlean/xla`` (``~/.cache/jaxlean/xla``)."""
    if explicit := os.environ.get("JAXLEAN_CACHE_DIR"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "jaxlean" / "xla"


def parse_size(text: str) -> int:
    """Bytes from a size such as ``"10GB"``, ``"512 MiB"`` or ``"1e9"``.

    ``KB/MB/GB/TB`` are powers of 1000; ``K/M/G/T`` and ``KiB/MiB/GiB/TiB`` powers of 1024.
    """
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if not match or match.group(2) not in _SIZE_UNITS:
        raise CacheError(f"cannot read size {text!r}: use a number with an optional unit "
                         "such as 500MB, 10GB or 2GiB")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])


@dataclasses.dataclass(frozen=True)
class CacheEntry:
    """One cached executable: its file, key, compiled function name, size and last use."""

    path: Path
    key: str
    function: str
    size: int
    last_used: float


def function_of_key(key: str) -> str:
    """The module name a cache key starts with (``jit_f-<hash>`` -> ``jit_f``)."""
    return key.rsplit("-", 1)[0]


def list_entries(directory: Path) -> list[CacheEntry]:
    """Every executable in the cache directory, least recently used first.

    Last use is the ``-atime`` file JAX's LRU writes when present, else the
    entry's modification time (jaxlean's store refreshes it on every hit). A
    missing directory has no entries.

    Raises:
        CacheError: the path is not a directory, or it cannot be listed (listing
            would otherwise look empty).
    """
    entries = []
    if not directory.exists():
        return entries
    if not directory.is_dir():
        raise CacheError(f"{directory} is not a directory, so it cannot be a compilation cache")
    if not os.access(directory, os.R_OK | os.X_OK):
        raise CacheError(f"cannot list the compilation cache at {directory} (permission denied)")
    for path in directory.glob(f"*{ENTRY_SUFFIX}"):
        key = path.name.removesuffix(ENTRY_SUFFIX)
        try:
            stat = path.stat()
        except FileNotFoundError:  # removed by another process meanwhile
            continue
        last_used = stat.st_mtime
        atime = directory / f"{key}{ATIME_SUFFIX}"
        if atime.is_file():
            with contextlib.suppress(OSError):
                last_used = max(last_used, int.from_bytes(atime.read_bytes(), "little") / 1e9)
        entries.append(CacheEntry(path, key, function_of_key(key), stat.st_size, last_used))
    return sorted(entries, key=lambda e: e.last_used)


def remove_entry(entry: CacheEntry) -> None:
    """Delete an entry and its ``-atime`` and metadata companions; already-gone files are fine."""
    for suffix in (ENTRY_SUFFIX, ATIME_SUFFIX, METADATA_SUFFIX):
        entry.path.with_name(entry.key + suffix).unlink(missing_ok=True)


def clear(directory: Path) -> tuple[int, int]:
    """Remove every cache entry and XLA sub-cache; returns ``(entries removed, bytes freed)``.

    Only files of the cache's own layout are touched, so pointing this at the
    wrong directory cannot delete anything else. A file that cannot be removed
    raises (``OSError``) rather than being reported as removed.
    """
    entries = list_entries(directory)
    for entry in entries:
        remove_entry(entry)
    for path in directory.glob(f"*{METADATA_SUFFIX}"):
        path.unlink(missing_ok=True)
    for name in XLA_SUBCACHES:
        sub = directory / name
        if sub.is_dir():
            shutil.rmtree(sub)
        elif sub.is_file():
            sub.unlink(missing_ok=True)
    return len(entries), sum(e.size for e in entries)


def prune(directory: Path, max_bytes: int) -> list[CacheEntry]:
    """Remove least recently used entries until the entries total at most ``max_bytes``.

    Returns:
        The entries removed, oldest first.
    """
    entries = list_entries(directory)
    total = sum(e.size for e in entries)
    removed = []
    for entry in entries:
        if total <= max_bytes:
            break
        remove_entry(entry)
        total -= entry.size
        removed.append(entry)
    return removed
