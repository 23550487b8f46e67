"""Run a test's check script in a child process on the suite's compilation cache.

``python tests/xla_cache_child.py SCRIPT`` enables jaxlean's cache in
``$JAXLEAN_TEST_XLA_CACHE_DIR`` (as ``tests/xla_cache.py`` does in the test processes),
runs ``SCRIPT`` as ``__main__`` and, at exit, writes the cache counts to
``$JAXLEAN_TEST_XLA_CACHE_STATS`` for the test process to add to the run's summary.
Only single-process children use it (``run_on_devices``): a multi-process CPU run must
not share entries this way (see ``jaxlean/compile/cpu_collectives.py``).
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys

STATS_FIELDS = ("compiles", "compile_s", "requests", "hits", "uncacheable", "saved_s")


def _start(directory: str, stats_path: str | None) -> None:
    import jax

    from jaxlean.compile import _jax_private, stats
    from jaxlean.compile.cache import enable_compilation_cache

    enable_compilation_cache(directory, min_compile_secs=0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    store = _jax_private.persistent_store()
    if stats_path is None:
        return

    def write() -> None:  # counts since the script last reset them, if it did
        if _jax_private.persistent_store() is not store:
            return  # the script set up a cache of its own: its counts are not the suite's
        with open(stats_path, "w") as f:
            json.dump({f: getattr(stats._RECORDER.stats, f) for f in STATS_FIELDS}, f)

    atexit.register(write)


if __name__ == "__main__":
    script = sys.argv[1]
    if directory := os.environ.get("JAXLEAN_TEST_XLA_CACHE_DIR"):
        _start(directory, os.environ.get("JAXLEAN_TEST_XLA_CACHE_STATS"))
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
