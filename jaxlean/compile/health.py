"""Is a cache directory able to serve and take entries? The checks behind ``jaxlean cache info``.

A persistent cache fails quietly: JAX logs a warning and compiles as if there
were no cache. The failures users meet, each reported here with its fix:

- the directory cannot be written (a file in the way, no permission): nothing is
  stored; an existing directory with entries is still served read-only;
- an entry without its ``-atime`` companion: with JAX's own size limit
  (``jax_compilation_cache_max_size``) every write first runs JAX's eviction,
  which reads every entry's ``-atime`` and fails on the first missing one, so
  one orphaned entry (copied in, or left by a killed writer) stops every write;
- an empty or undecodable entry (a truncated write): JAX's own store never
  replaces an existing entry, so that program is compiled again on every run;
- temporary files of killed writers: space that is never reclaimed;
- the size limit reached: every new entry evicts an old one (a cache that thrashes),
  and an entry larger than the limit is never stored.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

from jaxlean._units import format_bytes
from jaxlean.compile import _jax_private
from jaxlean.compile.directory import ATIME_SUFFIX, ENTRY_SUFFIX, METADATA_SUFFIX, list_entries

__all__ = ["Finding", "check_directory", "repair", "unwritable_reason"]

_TEMPORARY = (".tmp",)


@dataclasses.dataclass(frozen=True)
class Finding:
    """One problem found in a cache directory.

    Attributes:
        severity: ``"error"`` (the cache does not work), ``"warning"`` (it works
            worse than it should) or ``"note"``.
        problem: what is wrong and what it does to the cache.
        fix: what to do about it.
        paths: the files concerned (removed by :func:`repair` when ``repairable``).
        repairable: deleting ``paths`` fixes it.
    """

    severity: str
    problem: str
    fix: str
    paths: tuple[Path, ...] = ()
    repairable: bool = False


def unwritable_reason(directory: Path, create: bool = False) -> str | None:
    """Why entries cannot be written into ``directory``, or ``None`` if they can.

    With ``create`` the directory is created when missing (what enabling the
    cache does); without, a missing directory is writable when its nearest
    existing parent is a writable directory.
    """
    if not create and not directory.exists():
        parent = next((p for p in directory.parents if p.exists()), None)
        if parent is None or not parent.is_dir():
            return f"{parent} is not a directory"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"cannot create directories in {parent} (permission denied)"
        return None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".jaxlean-probe-"):
            pass
    except OSError as err:
        return f"{type(err).__name__}: {err}"
    return None


def _readable(path: Path, verify: bool) -> bool:
    """Whether the entry can be read and, with ``verify``, decompressed."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if not data:
        return False
    if not verify:
        return True
    try:
        _jax_private.get("jax._src.compilation_cache.decompress_executable")(data)
    except Exception:  # zstd and zlib raise their own error types on damaged data
        return False
    return True


def check_directory(directory: Path, max_bytes: int | None = None,
                    verify: bool = False) -> list[Finding]:
    """Every problem :mod:`this module <jaxlean.compile.health>` knows, found in ``directory``.

    Args:
        directory: the cache directory.
        max_bytes: the size limit the cache runs with (``None``: no limit to check).
        verify: read and decompress every entry (slow on a large cache); without
            it only empty entries are reported as damaged.

    Returns:
        Findings, most severe first; empty when the cache is healthy.
    """
    findings = []
    entries = list_entries(directory)
    if reason := unwritable_reason(directory):
        fix = ("point the cache elsewhere (JAXLEAN_CACHE_DIR or enable_compilation_cache(path)) "
               "or fix the permissions")
        if entries:
            findings.append(Finding(
                "warning", f"the directory cannot be written ({reason}): its {len(entries)} "
                "entries are used read-only, new compiles are not stored",
                f"{fix} if new programs should be cached"))
        else:
            findings.append(Finding(
                "error", f"the directory cannot be written ({reason}) and holds no entries: "
                "the cache stores and serves nothing", fix))
    if not directory.is_dir():
        return findings
    with_atime = [e for e in entries if e.path.with_name(e.key + ATIME_SUFFIX).exists()]
    if with_atime and len(with_atime) < len(entries):
        orphans = tuple(e.path for e in entries if e not in with_atime)
        findings.append(Finding(
            "error", f"{len(orphans)} entries have no {ATIME_SUFFIX} file: with JAX's size "
            "limit (jax_compilation_cache_max_size) on, eviction fails on them and no new "
            "entry is written", "remove them (`jaxlean cache info --repair`)", orphans, True))
    damaged = tuple(e.path for e in entries if not _readable(e.path, verify))
    if damaged:
        findings.append(Finding(
            "warning", f"{len(damaged)} entries are empty, unreadable or damaged: JAX's own "
            "store keeps them and recompiles those programs on every run",
            "remove them (`jaxlean cache info --repair`)", damaged, True))
    keys = {e.key for e in entries}
    stale = tuple(p for suffix in (ATIME_SUFFIX, METADATA_SUFFIX)
                  for p in directory.glob(f"*{suffix}") if p.name.removesuffix(suffix) not in keys)
    stale += tuple(p for p in directory.glob(".*") if p.suffix in _TEMPORARY and p.is_file())
    if stale:
        findings.append(Finding(
            "note", f"{len(stale)} leftover files ({ATIME_SUFFIX} and {METADATA_SUFFIX} files "
            "without an entry, "
            "temporary files of interrupted writes) take space",
            "remove them (`jaxlean cache info --repair`)", stale, True))
    if max_bytes is not None:
        total = sum(e.size for e in entries)
        too_big = tuple(e.path for e in entries if e.size > max_bytes)
        if total >= 0.9 * max_bytes:
            used = f"{format_bytes(total)} of the {format_bytes(max_bytes)} allowed"
            findings.append(Finding(
                "warning", f"the size limit is (nearly) reached, {used}: each new entry "
                "evicts the least recently used ones",
                "raise the limit or `jaxlean cache prune` the entries of old experiments"))
        if too_big:
            findings.append(Finding(
                "warning", f"{len(too_big)} entries are larger than the size limit alone",
                "raise the limit above the largest program", too_big))
    order = {"error": 0, "warning": 1, "note": 2}
    return sorted(findings, key=lambda f: order[f.severity])


def repair(findings: list[Finding]) -> int:
    """Delete the files of every repairable finding (an entry with its ``-atime``
    companion); returns how many files of the findings were removed."""
    removed = 0
    for path in (p for f in findings if f.repairable for p in f.paths):
        path.unlink(missing_ok=True)
        if path.name.endswith(ENTRY_SUFFIX):
            key = path.name.removesuffix(ENTRY_SUFFIX)
            path.with_name(key + ATIME_SUFFIX).unlink(missing_ok=True)
            path.with_name(key + METADATA_SUFFIX).unlink(missing_ok=True)
        removed += 1
    return removed
