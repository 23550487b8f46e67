"""The persistent cache across processes, its robustness, and compile reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlean.compile import _jax_private
from jaxlean.compile.cache import cache_stats, enable_compilation_cache
from jaxlean.compile.directory import (
    ENTRY_SUFFIX,
    default_cache_dir,
    list_entries,
    parse_size,
    prune,
)
from jaxlean.compile.file_cache import SafeFileCache
from jaxlean.compile.report import compile_report
from jaxlean.errors import CacheError
from tests.compile.conftest import CHAIN_CHILD
from tests.conftest import child_env

# A child process: enables the cache, runs a small chain of matmuls, prints JSON.
_CHILD = CHAIN_CHILD + textwrap.dedent("""
    value = float(chain(jnp.arange(64.0).reshape(8, 8) / 64))
    stats = cache_stats().functions.get("jit(chain)")
    print(json.dumps({"value": value, "hits": stats.hits, "misses": stats.misses,
                      "writes": stats.writes}))
""")


def _reference_chain() -> float:
    x = np.arange(64.0).reshape(8, 8) / 64
    for i in range(12):
        x = np.tanh(x @ x.T + i)
    return float(x.sum())


def _start_child(tmp_path: Path, cache: Path) -> subprocess.Popen:
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    return subprocess.Popen([sys.executable, str(script), str(cache)], env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> tuple[dict, str]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def _run_child(tmp_path: Path, cache: Path) -> tuple[dict, str]:
    return _finish(_start_child(tmp_path, cache))


def test_parse_size():
    assert parse_size("10GB") == 10 * 10**9
    assert parse_size("512 MiB") == 512 * 2**20
    assert parse_size("2k") == 2048
    assert parse_size("1e3") == 1000
    with pytest.raises(CacheError, match="cannot read size"):
        parse_size("ten gigs")


def test_default_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("JAXLEAN_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("JAXLEAN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "jaxlean" / "xla"


def test_invalid_arguments_raise(restore_jax_cache_config, tmp_path):
    with pytest.raises(CacheError, match="min_compile_secs"):
        enable_compilation_cache(tmp_path, min_compile_secs=-1)
    with pytest.raises(CacheError, match="max_size_bytes"):
        enable_compilation_cache(tmp_path, max_size_bytes=0)


def test_enable_after_a_compile_still_takes_effect(restore_jax_cache_config, tmp_path):
    # With the cache disabled, JAX decides once per process that the cache is unused.
    jax.config.update("jax_enable_compilation_cache", False)
    assert float(jax.jit(lambda x: x * 3.0 + 1.0)(2.0)) == 7.0
    assert enable_compilation_cache(tmp_path / "cache", min_compile_secs=0) == tmp_path / "cache"
    before = cache_stats()

    def after_enable(x):
        return jnp.sin(x) * 5.0 - 2.0

    assert np.isclose(float(jax.jit(after_enable)(0.5)), np.sin(0.5) * 5 - 2, rtol=1e-6)
    stats = cache_stats().functions["jit(after_enable)"]
    previous = before.functions.get("jit(after_enable)")
    assert stats.writes - (previous.writes if previous else 0) == 1
    assert [e.function for e in list_entries(tmp_path / "cache")].count("jit_after_enable") == 1


def test_only_process_zero_writes(restore_jax_cache_config, tmp_path, monkeypatch):
    monkeypatch.setattr("jax._src.distributed.global_state.process_id", 1)
    cache = tmp_path / "shared"
    enable_compilation_cache(cache, min_compile_secs=0)
    assert not cache.exists()  # only process 0 creates the directory

    def on_process_one(x):
        return jnp.cos(x) * 7.0

    assert np.isclose(float(jax.jit(on_process_one)(0.25)), np.cos(0.25) * 7, rtol=1e-6)
    assert not cache.exists()
    assert cache_stats().functions["jit(on_process_one)"].misses >= 1


def test_unwritable_directory_warns_and_runs_without_cache(restore_jax_cache_config, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.warns(UserWarning, match="running without a persistent cache"):
        assert enable_compilation_cache(blocker / "cache") is None
    assert jax.config.jax_compilation_cache_dir is None
    assert float(jax.jit(lambda x: x - 1.5)(4.0)) == 2.5


def test_compile_report_stages_and_cache_column(restore_jax_cache_config, tmp_path):
    def mlp(w, x):
        return jnp.tanh(x @ w).sum()

    w, x = jnp.ones((16, 32)), jnp.ones((4, 16))
    jax.config.update("jax_enable_compilation_cache", False)
    _jax_private.reset_persistent_cache()
    off = compile_report(mlp, w, x)
    assert off.persistent_cache == "off"
    assert off.trace_s > 0 and off.lower_s > 0 and off.compile_s > 0
    assert off.stablehlo_ops >= 3 and off.hlo_instructions >= 3
    assert off.flops is not None and off.flops >= 2 * 4 * 16 * 32  # the matmul alone
    assert off.argument_bytes == (16 * 32 + 4 * 16) * 4 and off.output_bytes == 4
    assert json.loads(json.dumps(off.to_dict()))["name"] == "mlp"
    assert "HLO instructions" in str(off)

    assert compile_report(mlp, w, x).persistent_cache == "in-memory"
    enable_compilation_cache(tmp_path, min_compile_secs=0)
    jax.clear_caches()
    assert compile_report(mlp, w, x).persistent_cache == "miss"
    # A fresh store (what a new process sees) is served from disk.
    enable_compilation_cache(tmp_path, min_compile_secs=0)
    jax.clear_caches()
    assert compile_report(jax.jit(mlp), w, x).persistent_cache == "hit"


def test_safe_store_keeps_good_entries_and_replaces_served_bad_ones(tmp_path):
    store = SafeFileCache(tmp_path / "store")
    assert store.get("jit_f-abc") is None
    store.put("jit_f-abc", b"first")
    store.put("jit_f-abc", b"second")  # a good entry is kept, as JAX's own cache does
    assert store.get("jit_f-abc") == b"first"
    store.put("jit_f-abc", b"third")  # put after serving it: JAX could not load it
    assert (tmp_path / "store" / f"jit_f-abc{ENTRY_SUFFIX}").read_bytes() == b"third"
    assert not [p for p in (tmp_path / "store").iterdir() if p.suffix == ".tmp"]


def test_prune_removes_least_recently_used_first(tmp_path):
    for age, name in enumerate(["jit_new", "jit_mid", "jit_old"]):
        path = tmp_path / f"{name}-{age:064x}{ENTRY_SUFFIX}"
        path.write_bytes(b"x" * 100)
        stamp = time.time() - 1000 * age
        os.utime(path, (stamp, stamp))
    removed = prune(tmp_path, 150)
    assert [e.function for e in removed] == ["jit_old", "jit_mid"]
    assert [e.function for e in list_entries(tmp_path)] == ["jit_new"]


@pytest.mark.parametrize("damage", ["truncate", "corrupt"])
def test_damaged_entry_is_recompiled_replaced_then_hit(tmp_path, damage):
    cache = tmp_path / "cache"
    cold, _ = _run_child(tmp_path, cache)
    assert np.isclose(cold["value"], _reference_chain(), rtol=1e-5)
    assert (cold["hits"], cold["misses"], cold["writes"]) == (0, 1, 1)
    (entry,) = [e.path for e in list_entries(cache) if e.function == "jit_chain"]
    good = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(good[: len(good) // 2])
    else:
        middle = len(good) // 2
        entry.write_bytes(good[:middle] + bytes(b ^ 0xFF for b in good[middle:middle + 64])
                          + good[middle + 64:])
    repaired, err = _run_child(tmp_path, cache)
    assert np.isclose(repaired["value"], _reference_chain(), rtol=1e-5)
    assert (repaired["hits"], repaired["misses"], repaired["writes"]) == (0, 1, 1)
    assert "Error reading persistent compilation cache entry" in err
    decompress = _jax_private.get("jax._src.compilation_cache.decompress_executable")
    decompress(entry.read_bytes())  # a whole entry again
    warm, _ = _run_child(tmp_path, cache)  # a new process loads the repaired entry
    assert (warm["hits"], warm["misses"], warm["writes"]) == (1, 0, 0)
    assert warm["value"] == repaired["value"]


def test_concurrent_processes_share_one_directory(tmp_path):
    cache = tmp_path / "cache"
    procs = [_start_child(tmp_path, cache) for _ in range(3)]
    results = [_finish(proc)[0] for proc in procs]
    assert all(np.isclose(r["value"], _reference_chain(), rtol=1e-5) for r in results)
    assert [e.function for e in list_entries(cache)].count("jit_chain") == 1
    assert not [p for p in cache.iterdir() if p.suffix == ".tmp"]
    warm, _ = _run_child(tmp_path, cache)
    assert (warm["hits"], warm["misses"]) == (1, 0)
