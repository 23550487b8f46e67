"""The suite's own persistent compilation cache: one directory per clone, shared by the
xdist workers, so a second run loads what the first compiled.

Every test process enables jaxlean's cache (:func:`jaxlean.compile.enable_compilation_cache`)
in ``.cache/test-xla/jax<version>-jaxlib<version>/`` (``$JAXLEAN_TEST_XLA_CACHE`` replaces
``.cache/test-xla``; ``off`` runs without a cache), small programs included. The key of an
entry is JAX's: the lowered program, jaxlib's version, the platform, ``XLA_FLAGS`` and the
compile options, so programs compiled with other flags or another jaxlib never meet.

Tests that set up a cache of their own (``tests/compile/``) keep doing so; after each test
whose process no longer uses the suite's store, the store is installed again, and that
test's compiles are left out of the counts. Each worker hands its counts to the controller
(``workeroutput``), which prints a summary at the end of the run. At the start of a
run, the least recently used entries beyond ``MAX_BYTES`` are removed.

``run_on_devices`` children (one process with several CPU devices), the examples' own
processes (``tests/test_examples.py``) and the docs pages (``tests/test_docs.py``) use the
cache too, through ``tests/xla_cache_child.py``, and their counts join their test process's.
Other child processes compile for themselves: the multi-process runs (one that loads cached
collectives needs jaxlean's checks, ``jaxlean/compile/cpu_collectives.py``); jaxlean has no
environment variable that turns its cache on, and JAX's own (``JAX_COMPILATION_CACHE_DIR``)
would bring JAX's store (entries written in place).
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = "JAXLEAN_TEST_XLA_CACHE"
OUTPUT_KEY = "jaxlean_xla_cache"
REPORT_ENV = "JAXLEAN_TEST_XLA_CACHE_REPORT"
CHILD = Path(__file__).with_name("xla_cache_child.py")
MAX_BYTES = 2 * 10**9  # least recently used entries beyond this go at the start of a run
FIELDS = ("compiles", "compile_s", "requests", "hits", "uncacheable", "saved_s")


def cache_dir() -> Path | None:
    """Where this process's tests cache: a directory per jax and jaxlib version (``None``: off)."""
    base = os.environ.get(ENV, "").strip()
    if base.lower() in ("off", "0", "false", "no"):
        return None
    path = Path(base).expanduser() if base else ROOT / ".cache" / "test-xla"
    if not path.is_absolute():
        path = ROOT / path
    return path / f"jax{version('jax')}-jaxlib{version('jaxlib')}"  # read without importing jax


@dataclasses.dataclass
class Counts:
    """Sums of the cache counts over the tests that ran on the suite's store."""

    compiles: int = 0
    compile_s: float = 0.0
    requests: int = 0
    hits: int = 0
    uncacheable: int = 0
    saved_s: float = 0.0
    own_cache_tests: int = 0
    child_processes: int = 0

    @property
    def misses(self) -> int:
        return max(self.requests - self.hits - self.uncacheable, 0)

    def add(self, other: dict) -> None:
        for field in (*FIELDS, "own_cache_tests", "child_processes"):
            setattr(self, field, getattr(self, field) + other.get(field, 0))


class SuiteCache:
    """The suite's store in this process, and the counts of the tests that used it."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.counts = Counts()
        self.store = None
        self._seen = None  # the recorder's stats object at the last reading
        self._last = dict.fromkeys(FIELDS, 0)
        self._lock = threading.Lock()

    def install(self) -> None:
        """Enable the cache at ``directory`` for every program, however small or quick."""
        import jax

        from jaxlean.compile import _jax_private
        from jaxlean.compile.cache import enable_compilation_cache

        enable_compilation_cache(self.directory, min_compile_secs=0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        self.store = _jax_private.persistent_store()

    def in_use(self) -> bool:
        """Whether JAX's persistent cache is still this suite's store, configured as installed."""
        import jax

        from jaxlean.compile import _jax_private

        return (self.store is not None and _jax_private.persistent_store() is self.store
                and jax.config.jax_enable_compilation_cache
                and jax.config.jax_persistent_cache_min_compile_time_secs == 0
                and jax.config.jax_persistent_cache_min_entry_size_bytes == -1)

    def account(self, counted: bool) -> None:
        """Add the counts since the last reading to the totals (``counted``) or drop them.

        A test that resets the statistics (``cache_stats(reset=True)``) replaces the
        recorder's stats object; the old one keeps its final counts, so nothing is lost.
        """
        from jaxlean.compile import stats

        with self._lock:
            current = stats._RECORDER.stats
            now = {f: getattr(current, f) for f in FIELDS}
            if current is self._seen or self._seen is None:
                delta = {f: now[f] - self._last[f] for f in FIELDS}
            else:
                delta = {f: getattr(self._seen, f) - self._last[f] + now[f] for f in FIELDS}
            self._seen, self._last = current, now
            if counted:
                self.counts.add(delta)


_SUITE: SuiteCache | None = None
_TOTALS = Counts()
_WORKERS: list[str] = []
_ENTRIES_AT_START: list[int] = []


def configure(config: pytest.Config) -> None:
    """Enable the cache in a process that runs tests (not in an xdist controller)."""
    global _SUITE
    directory = cache_dir()
    if directory is None:
        return
    if not hasattr(config, "workerinput"):  # the process that prints the summary
        from jaxlean.compile.directory import prune  # imports no jax

        if directory.is_dir():
            prune(directory, MAX_BYTES)  # entries of programs that no longer exist
        _ENTRIES_AT_START.append(_entry_count(directory))
    if getattr(config.option, "dist", "no") != "no" and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Controller(), "jaxlean-xla-cache-controller")
        return
    _SUITE = SuiteCache(directory)
    _SUITE.install()
    _SUITE.account(counted=False)  # start from the counts at this point


@pytest.fixture(autouse=True)
def _suite_xla_cache(request):
    """Count each test's compiles on the suite's cache; put the store back after a test
    that replaced it (such a test's compiles are not counted)."""
    if _SUITE is None:
        yield
        return
    before = _SUITE.in_use()
    _SUITE.account(counted=before)  # module fixtures' compiles, since the last test
    report = os.environ.get(REPORT_ENV)
    start = dataclasses.asdict(_SUITE.counts) if report else None
    yield
    after = _SUITE.in_use()
    _SUITE.account(counted=before and after)
    if report:
        _report(report, request.node.nodeid, start, dataclasses.asdict(_SUITE.counts),
                counted=before and after)
    if not (before and after):
        _SUITE.counts.own_cache_tests += 1
    if not after:
        _SUITE.install()


def _report(path: str, nodeid: str, start: dict, end: dict, counted: bool) -> None:
    """Append one JSON line for a test to ``path`` (``$JAXLEAN_TEST_XLA_CACHE_REPORT``): its
    compiles, their seconds, hits and misses, where a run's compile time goes. Compiles of
    module fixtures are in no test's line; ``counted`` is false for a test that used a cache
    of its own (its figures are then zeros). Each line is one short append, so the xdist
    workers can share the file."""
    delta = {f: round(end[f] - start[f], 3) for f in FIELDS}
    with open(path, "a") as out:
        out.write(json.dumps({"test": nodeid, "pid": os.getpid(), "counted": counted,
                              **delta}) + "\n")


def child_command(command: list[str], env: dict[str, str],
                  counts: Path) -> tuple[list[str], dict[str, str]]:
    """``[python, script]`` and its environment, changed to run the script on the suite's
    cache (``tests/xla_cache_child.py``), its counts written to ``counts``. Only for a child
    that is one process: a multi-process CPU run must not load entries this way."""
    if _SUITE is None:
        return command, env
    return [command[0], str(CHILD), *command[1:]], {
        **env, "JAXLEAN_TEST_XLA_CACHE_DIR": str(_SUITE.directory),
        "JAXLEAN_TEST_XLA_CACHE_STATS": str(counts)}


def add_child_counts(counts: Path) -> None:
    """Add what a child wrote with :func:`child_command` to this process's counts."""
    if _SUITE is None or not counts.is_file():
        return
    try:
        reported = json.loads(counts.read_text())
    except (OSError, ValueError):
        return
    _SUITE.counts.add({**reported, "child_processes": 1})
    counts.unlink(missing_ok=True)


def session_finish(session: pytest.Session) -> None:
    """A worker hands its counts to the controller; a single process keeps them."""
    if _SUITE is None:
        return
    counts = dataclasses.asdict(_SUITE.counts)
    config = session.config
    if hasattr(config, "workeroutput"):
        config.workeroutput[OUTPUT_KEY] = {**counts, "directory": str(_SUITE.directory)}
    else:
        _TOTALS.add(counts)
        _WORKERS.append(str(_SUITE.directory))


class _Controller:
    """xdist's controller: sums what the workers report."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        reported = getattr(node, "workeroutput", {}).get(OUTPUT_KEY)
        if reported:
            _TOTALS.add(reported)
            _WORKERS.append(reported["directory"])


def _entry_count(directory: Path) -> int:
    """Entries in ``directory`` (JAX's ``<key>-cache`` files), without importing jax."""
    return sum(1 for _ in directory.glob("*-cache")) if directory.is_dir() else 0


def summary_lines() -> list[str]:
    """What the run's tests compiled and what the cache saved them, summed over processes."""
    if not _WORKERS:
        return []
    directory = Path(_WORKERS[0])
    shown = directory.relative_to(ROOT) if directory.is_relative_to(ROOT) else directory
    t = _TOTALS
    count = _entry_count(directory)
    size = sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
    new = count - _ENTRIES_AT_START[0] if _ENTRIES_AT_START else 0
    return [f"{shown} ({len(_WORKERS)} process{'es' if len(_WORKERS) > 1 else ''}): "
            f"{t.hits} hits, {t.misses} misses, {t.uncacheable} uncacheable; "
            f"{t.saved_s:.1f} s of compiling saved; {t.compiles} compiles took "
            f"{t.compile_s:.1f} s",
            f"{count} entries ({new} new), {size / 1e6:.0f} MB; {t.child_processes} child "
            f"process{'' if t.child_processes == 1 else 'es'} included; tests with a cache "
            f"of their own, not counted: {t.own_cache_tests}; ${ENV}=off runs without it"]
