"""A cache that cannot be written is used read-only: hits counted, nothing written, one warning."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from jaxlean.compile import _jax_private, health
from jaxlean.compile.cache import cache_stats, enable_compilation_cache
from jaxlean.compile.directory import ENTRY_SUFFIX, list_entries
from jaxlean.compile.file_cache import SafeFileCache
from tests.conftest import child_env

# Root ignores permission bits; without these capabilities it obeys them like any user.
_UNPRIVILEGED = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]

# Compiles `cached` (and, with "more", `uncached`), prints counts and jaxlean's warnings.
_CHILD = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        import jax, jax.numpy as jnp
        from jaxlean.compile.cache import cache_stats, enable_compilation_cache
        enable_compilation_cache(sys.argv[1], min_compile_secs=0)
        cached = jax.jit(lambda x: jnp.tanh(x @ x.T).sum())
        value = float(cached(jnp.ones((8, 8))))
        if sys.argv[2] == "more":
            float(jax.jit(lambda x: jnp.cos(x).prod())(jnp.ones(8)))
    stats = cache_stats()
    print(json.dumps({"value": value, "hits": stats.hits, "misses": stats.misses,
                      "writes": stats.writes,
                      "warnings": [str(w.message) for w in caught if "jaxlean" in str(w.message)]}))
""")


def _run(tmp_path: Path, cache: Path, mode: str, prefix: list[str] = ()) -> dict:
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    proc = subprocess.run([*prefix, sys.executable, str(script), str(cache), mode],
                          env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _listing(directory: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.iterdir()}


def _read_only_prefix(directory: Path) -> list[str]:
    """A command prefix under which ``directory`` really is read-only, or skip the test."""
    prefix = _UNPRIVILEGED if os.geteuid() == 0 else []
    if prefix and not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: permission bits cannot be enforced")
    probe = subprocess.run([*prefix, "touch", str(directory / "probe")], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("cannot make a directory read-only here")
    return prefix


def test_read_only_directory_is_served_and_never_written(tmp_path):
    cache = tmp_path / "cache"
    cold = _run(tmp_path, cache, "one")
    assert cold["writes"] >= 1 and cold["warnings"] == []
    for path in [cache, *cache.iterdir()]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        before = _listing(cache)
        warm = _run(tmp_path, cache, "more", _read_only_prefix(cache))
        assert _listing(cache) == before  # nothing written, renamed or touched
    finally:
        cache.chmod(0o755)
    assert warm["value"] == cold["value"]
    assert warm["hits"] >= 1 and warm["misses"] >= 1  # the new function could not be stored
    assert warm["writes"] == 0
    (warning,) = warm["warnings"]
    assert str(cache) in warning and "read-only" in warning and "Permission denied" in warning


@pytest.mark.parametrize("how", ["option", "probe"])
def test_read_only_by_option_or_by_probe(restore_jax_cache_config, tmp_path, monkeypatch, how):
    cache = tmp_path / "cache"
    enable_compilation_cache(cache, min_compile_secs=0)

    def stored(x):
        return jnp.sin(x) * 2.0 + 1.0

    jax.jit(stored).lower(jnp.ones(4)).compile()
    before = _listing(cache)
    if how == "probe":  # what a read-only filesystem answers (root's chmod would not)
        monkeypatch.setattr(health, "unwritable_reason", lambda d, create=False: "EROFS (test)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert enable_compilation_cache(cache, min_compile_secs=0,
                                        read_only=how == "option") == cache
        assert _jax_private.persistent_store().read_only
        jax.clear_caches()
        start = cache_stats()

        def not_stored(x):
            return jnp.cos(x) * 3.0

        jax.jit(stored).lower(jnp.ones(4)).compile()
        jax.jit(not_stored).lower(jnp.ones(4)).compile()
    end = cache_stats()

    def delta(name: str, field: str) -> int:
        was = start.functions.get(name)
        return getattr(end.functions[name], field) - (getattr(was, field) if was else 0)

    assert delta("jit(stored)", "hits") == 1 and delta("jit(not_stored)", "misses") == 1
    assert end.writes == start.writes and _listing(cache) == before
    messages = [str(w.message) for w in caught if "jaxlean" in str(w.message)]
    if how == "option":
        assert messages == []  # asked for: nothing to warn about
    else:
        (message,) = messages
        assert str(cache) in message and "EROFS (test)" in message


def test_read_only_option_without_directory_runs_without_cache(restore_jax_cache_config,
                                                                tmp_path):
    with pytest.warns(UserWarning, match="no compilation cache at .* to read"):
        assert enable_compilation_cache(tmp_path / "missing", read_only=True) is None
    assert not (tmp_path / "missing").exists()


def test_failed_write_warns_once_and_stops_writing(tmp_path, monkeypatch):
    store = SafeFileCache(tmp_path)
    start = cache_stats().writes

    def full_disk(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.warns(UserWarning, match="No space left") as caught:
        store.put("jit_a-1", b"a")
        store.put("jit_b-2", b"b")
    assert len(caught) == 1 and str(tmp_path) in str(caught[0].message)
    assert store.read_only and cache_stats().writes == start
    assert list(tmp_path.iterdir()) == []  # no entry, no temporary file left


def test_entries_are_readable_by_others_sharing_the_cache(tmp_path):
    SafeFileCache(tmp_path).put("jit_a-1", b"a")
    mask = os.umask(0o022)
    os.umask(mask)
    mode = stat.S_IMODE((tmp_path / f"jit_a-1{ENTRY_SUFFIX}").stat().st_mode)
    assert mode == 0o666 & ~mask


def test_unreadable_entry_is_a_miss_said_once(tmp_path):
    (tmp_path / f"jit_a-1{ENTRY_SUFFIX}").mkdir()  # exists, cannot be read (even by root)
    store = SafeFileCache(tmp_path)
    with pytest.warns(UserWarning, match="cannot read compilation cache entries") as caught:
        assert store.get("jit_a-1") is None
        assert store.get("jit_a-1") is None
    assert len(caught) == 1
    assert list_entries(tmp_path)[0].key == "jit_a-1"


def test_size_limit_that_cannot_be_enforced_warns(restore_jax_cache_config, tmp_path,
                                                  monkeypatch):
    (tmp_path / f"jit_a-1{ENTRY_SUFFIX}").write_bytes(b"x" * 100)

    def refuse(self, missing_ok=False):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "unlink", refuse)
    with pytest.warns(UserWarning, match="cannot trim the compilation cache"):
        assert enable_compilation_cache(tmp_path, max_size_bytes=10) == tmp_path
