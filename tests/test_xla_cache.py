"""The suite's own compilation cache (``tests/xla_cache.py``): in use in every test process,
small programs stored, a program compiled again loaded, a child's counts added."""

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import jaxlib
import pytest

from jaxlean.compile import _jax_private
from jaxlean.compile.cache import cache_stats, use_compilation_cache
from tests import xla_cache

on_the_suite_cache = pytest.mark.skipif(xla_cache._SUITE is None,
                                        reason=f"${xla_cache.ENV}=off: no suite cache")


@on_the_suite_cache
def test_each_test_runs_on_the_suite_store_keyed_by_versions():
    suite = xla_cache._SUITE
    assert _jax_private.persistent_store() is suite.store and suite.in_use()
    assert suite.directory.name == f"jax{jax.__version__}-jaxlib{jaxlib.__version__}"


@on_the_suite_cache
def test_a_small_program_lowered_again_is_loaded_from_the_cache():
    x = jnp.arange(5.0)

    def program():  # a new function each time: nothing in memory, the same lowered program
        return jax.jit(lambda v: jnp.cumsum(v * 3.0) - 1.0)

    program().lower(x).compile()  # written, if no earlier run did
    before = cache_stats()
    compiled = program().lower(x).compile()  # found on disk
    after = cache_stats()
    assert (after.requests - before.requests, after.hits - before.hits) == (1, 1)
    assert compiled(x).tolist() == (jnp.cumsum(x * 3.0) - 1.0).tolist()


@on_the_suite_cache
def test_a_childs_counts_join_the_process_counts(tmp_path):
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps({"compiles": 3, "requests": 3, "hits": 2, "saved_s": 1.5}))
    suite = xla_cache._SUITE
    saved = dataclasses.replace(suite.counts)
    try:
        xla_cache.add_child_counts(counts)
        added = suite.counts.hits - saved.hits, suite.counts.child_processes - saved.child_processes
    finally:
        suite.counts = saved  # the made-up counts stay out of the run's summary
    assert added == (2, 1)
    assert not counts.exists()


@on_the_suite_cache
def test_turning_the_cache_off_is_honoured():
    """``jaxlean bench`` turns the cache off to time compiles: with the suite's store
    installed, nothing is served then, even in a process that has already used the cache
    (JAX memoises that decision per process; ``use_compilation_cache`` makes it read the
    flag again). The program is on disk before the switch, in a cold run as in a warm one."""
    x = jnp.arange(4.0)
    program = lambda: jax.jit(lambda v: jnp.cumprod(v + 2.0))
    program().lower(x).compile()  # on disk now
    use_compilation_cache(False)
    try:
        before = cache_stats()
        program().lower(x).compile()
        after = cache_stats()
    finally:
        use_compilation_cache(True)
    assert after.hits == before.hits
    assert cache_stats().hits == after.hits  # the switch back took effect too:
    program().lower(x).compile()
    assert cache_stats().hits == after.hits + 1


def test_the_report_appends_one_line_per_test_with_its_own_counts(tmp_path):
    """``$JAXLEAN_TEST_XLA_CACHE_REPORT``'s lines: the differences of the counts over each
    test, appended (two workers share the file), marked when not counted."""
    path = str(tmp_path / "report.jsonl")
    zero = dict.fromkeys(xla_cache.FIELDS, 0)
    xla_cache._report(path, "a.py::one", zero, {**zero, "compiles": 3, "compile_s": 0.5},
                      counted=True)
    xla_cache._report(path, "a.py::two", {**zero, "compiles": 3}, {**zero, "compiles": 3},
                      counted=False)
    lines = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert [(r["test"], r["compiles"], r["compile_s"], r["counted"]) for r in lines] == [
        ("a.py::one", 3, 0.5, True), ("a.py::two", 0, 0, False)]
