"""The file store jaxlean gives JAX's persistent cache: atomic writes, self-healing reads.

JAX's default file cache writes an entry in place and never replaces an existing
one, so a truncated or corrupted entry (a killed writer, a full disk) is read,
fails, is recompiled and kept, costing a full compile on every later run. This
store is the same file layout with two changes:

- ``put`` writes to a temporary file and renames it into place, so readers see a
  whole entry or none, and several processes writing the same key all succeed;
- a ``put`` for a key this store just served means JAX could not load what it
  read (JAX only writes after a miss or a failed load), so the bad entry is
  replaced instead of kept.

Size limits are enforced by :func:`jaxlean.compile.directory.prune` after each write.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path

from jaxlean.compile._jax_private import CacheInterface
from jaxlean.compile.directory import ENTRY_SUFFIX, prune


class SafeFileCache(CacheInterface):
    """A directory of ``<key>-cache`` files that JAX reads and (process 0) writes.

    Args:
        path: the cache directory; created on first write if missing.
        max_bytes: prune least recently used entries after a write to stay under
            this many bytes; ``None`` for no limit.
    """

    def __init__(self, path: Path, max_bytes: int | None = None):
        self.path = self._path = Path(path)  # JAX logs ``_path`` when it resets the cache
        self.max_bytes = max_bytes
        self._served: set[str] = set()
        self._lock = threading.Lock()

    def _entry(self, key: str) -> Path:
        return self.path / f"{key}{ENTRY_SUFFIX}"

    def get(self, key: str) -> bytes | None:
        """The stored bytes for ``key``, or ``None``; a hit refreshes the entry's last use."""
        entry = self._entry(key)
        try:
            value = entry.read_bytes()
        except OSError:
            return None
        with self._lock:
            self._served.add(key)
        with contextlib.suppress(OSError):  # a read-only directory still serves reads
            os.utime(entry)
        return value

    def put(self, key: str, value: bytes) -> None:
        """Store ``value`` atomically unless a good entry exists (a served one was unusable)."""
        entry = self._entry(key)
        with self._lock:
            replace = key in self._served
            self._served.discard(key)
        if entry.exists() and not replace:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=f".{key[:40]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(value)
            os.replace(tmp, entry)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        if self.max_bytes is not None:
            prune(self.path, self.max_bytes)
