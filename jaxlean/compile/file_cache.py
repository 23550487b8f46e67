"""The file store jaxlean gives JAX's persistent cache: atomic writes, self-healing reads.

JAX's default file cache writes an entry in place and never replaces an existing
one, so a truncated or corrupted entry (a killed writer, a full disk) is read,
fails, is recompiled and kept, costing a full compile on every later run. This
store is the same file layout with these changes:

- ``put`` writes to a temporary file and renames it into place, so readers see a
  whole entry or none, and several processes writing the same key all succeed;
  the entry gets the permissions the umask allows (others sharing the cache can read it);
- a ``put`` for a key this store just served means JAX could not load what it
  read (JAX only writes after a miss or a failed load), so the bad entry is
  replaced instead of kept;
- a read-only store (asked for, or a directory that cannot be written) serves
  its entries and skips writes; a write that fails (full disk, permissions
  changed) warns once and makes the store read-only instead of failing each compile.

- beside each entry it writes, a ``<key>-jaxlean.json`` records the exact compile
  time (JAX's entry keeps whole seconds), so a hit's saved time is true to the
  millisecond (:meth:`SafeFileCache.compile_seconds`).

Size limits are enforced by :func:`jaxlean.compile.directory.prune` after each write.
Writes are counted here (:func:`jaxlean.compile.stats.record_write`), where it is
known whether they happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
import warnings
from pathlib import Path

from jaxlean.compile import stats
from jaxlean.compile._jax_private import CacheInterface
from jaxlean.compile.directory import ENTRY_SUFFIX, METADATA_SUFFIX, prune
from jaxlean.errors import CacheError


def _read_umask() -> int:
    mask = os.umask(0)  # the only portable way to read it; done once, at import
    os.umask(mask)
    return mask


_ENTRY_MODE = 0o666 & ~_read_umask()

__all__ = ["SafeFileCache"]


class SafeFileCache(CacheInterface):
    """A directory of ``<key>-cache`` files that JAX reads and (process 0) writes.

    Args:
        path: the cache directory; created on first write if missing.
        max_bytes: prune least recently used entries after a write to stay under
            this many bytes; ``None`` for no limit.
        read_only: serve entries, never write, rename or delete anything.
    """

    counts_writes = True  # stats ignore JAX's "about to write" event for this store

    def __init__(self, path: Path, max_bytes: int | None = None, read_only: bool = False):
        self.path = self._path = Path(path)  # JAX logs ``_path`` when it resets the cache
        self.max_bytes = max_bytes
        self.read_only = read_only
        self._served: set[str] = set()
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def _entry(self, key: str) -> Path:
        return self.path / f"{key}{ENTRY_SUFFIX}"

    def _warn_once(self, kind: str, message: str) -> None:
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        warnings.warn(f"jaxlean: {message}", stacklevel=3)

    def get(self, key: str) -> bytes | None:
        """The stored bytes for ``key``, or ``None``; a hit refreshes the entry's last use."""
        entry = self._entry(key)
        try:
            value = entry.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:  # an entry that exists but cannot be read is a miss, said once
            self._warn_once("read", f"cannot read compilation cache entries in {self.path} "
                            f"({type(err).__name__}: {err}); those programs are compiled again")
            return None
        with self._lock:
            self._served.add(key)
        if not self.read_only:
            with contextlib.suppress(OSError):  # last use is a hint; never fail a hit for it
                os.utime(entry)
        return value

    def put(self, key: str, value: bytes) -> None:
        """Store ``value`` atomically unless a good entry exists (a served one was unusable).

        Skipped when read-only; a failed write warns once and makes the store read-only.
        """
        entry = self._entry(key)
        with self._lock:
            replace = key in self._served
            self._served.discard(key)
        if self.read_only or (entry.exists() and not replace):
            return
        try:
            self._write(entry, key, value)
        except OSError as err:
            self.read_only = True
            self._warn_once("write", f"cannot write the compilation cache at {self.path} "
                            f"({type(err).__name__}: {err}); its entries are still used, "
                            "new compiles are no longer stored")
            return
        stats.record_write()
        seconds = stats.pending_compile_seconds(key)
        if seconds is not None:
            with contextlib.suppress(OSError):  # without it, a hit saves JAX's whole seconds
                self._write(self.path / f"{key}{METADATA_SUFFIX}", key,
                            json.dumps({"compile_s": seconds}).encode())
        if self.max_bytes is not None:
            try:
                prune(self.path, self.max_bytes)
            except (OSError, CacheError) as err:
                self._warn_once("prune", f"cannot trim the compilation cache at {self.path} "
                                f"to {self.max_bytes} bytes ({type(err).__name__}: {err}); "
                                "it may grow past the limit")

    def compile_seconds(self, key: str) -> float | None:
        """The compile time recorded when entry ``key`` was written, or ``None`` when this
        store did not record it (written by another store or an older jaxlean)."""
        try:
            value = json.loads((self.path / f"{key}{METADATA_SUFFIX}").read_text())["compile_s"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return float(value) if isinstance(value, int | float) else None

    def _write(self, entry: Path, key: str, value: bytes) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=f".{key[:40]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(value)
            os.chmod(tmp, _ENTRY_MODE)  # mkstemp makes it private (0600)
            os.replace(tmp, entry)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
