"""The cache health check: each failure users meet is found, reported and repaired."""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from jaxlean.cli import main
from jaxlean.compile import _jax_private
from jaxlean.compile.cache import enable_compilation_cache
from jaxlean.compile.directory import ATIME_SUFFIX, ENTRY_SUFFIX, METADATA_SUFFIX, list_entries
from jaxlean.compile.health import check_directory, repair, unwritable_reason


def _entry(directory: Path, name: str, data: bytes, atime: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{abs(hash(name)):064x}{ENTRY_SUFFIX}"
    path.write_bytes(data)
    if atime:
        key = path.name.removesuffix(ENTRY_SUFFIX)
        (directory / f"{key}{ATIME_SUFFIX}").write_bytes(time.time_ns().to_bytes(8, "little"))
    return path


_CONFIG = ("jax_compilation_cache_dir", "jax_enable_compilation_cache",
           "jax_persistent_cache_min_compile_time_secs", "jax_persistent_cache_enable_xla_caches")


@pytest.fixture(scope="module")
def real_entry(tmp_path_factory) -> bytes:
    """What the persistent cache stores for a small program (compressed, as on disk)."""
    saved = {name: getattr(jax.config, name) for name in _CONFIG}
    directory = tmp_path_factory.mktemp("real")
    enable_compilation_cache(directory, min_compile_secs=0)
    jax.jit(lambda x: jnp.sin(x) * 3 + 1).lower(jnp.ones(3)).compile()
    for name, value in saved.items():
        jax.config.update(name, value)
    _jax_private.reset_persistent_cache()
    return list_entries(directory)[-1].path.read_bytes()  # any of the programs compiled


def test_healthy_directory_has_no_findings(tmp_path):
    _entry(tmp_path, "jit_a", b"x" * 10, atime=True)
    _entry(tmp_path, "jit_b", b"y" * 10, atime=True)
    assert check_directory(tmp_path) == []
    assert check_directory(tmp_path / "not_yet") == []  # created on first write


def test_unwritable_directory_is_an_error(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("in the way")
    assert "not a directory" in unwritable_reason(blocker / "cache")
    (finding,) = check_directory(blocker / "cache")
    assert finding.severity == "error" and "cannot be written" in finding.problem
    assert main(["cache", "info", str(blocker / "cache")]) == 1
    assert "the cache stores and serves nothing" in capsys.readouterr().out


def test_read_only_directory_with_entries_is_a_warning(tmp_path, capsys, monkeypatch):
    _entry(tmp_path, "jit_a", b"x" * 10, atime=False)
    monkeypatch.setattr("jaxlean.compile.health.unwritable_reason",
                        lambda directory, create=False: "EROFS (test)")
    (finding,) = check_directory(tmp_path)
    assert finding.severity == "warning" and "1 entries are used read-only" in finding.problem
    assert main(["cache", "info", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "warning: the directory cannot be written (EROFS (test))" in out
    assert "error" not in out


def test_entry_without_atime_stops_writes_under_jax_size_limit(tmp_path, capsys):
    _entry(tmp_path, "jit_kept", b"x" * 10, atime=True)
    orphan = _entry(tmp_path, "jit_orphan", b"y" * 10, atime=False)
    (finding,) = check_directory(tmp_path)
    assert finding.severity == "error" and finding.paths == (orphan,)
    assert "no new entry is written" in finding.problem
    assert main(["cache", "info", str(tmp_path)]) == 1
    assert orphan.name in capsys.readouterr().out
    assert main(["cache", "info", str(tmp_path), "--repair"]) == 0
    assert "removed 1 files" in capsys.readouterr().out
    assert [e.function for e in list_entries(tmp_path)] == ["jit_kept"]


def test_entries_without_any_atime_are_fine(tmp_path):
    _entry(tmp_path, "jit_a", b"x" * 10, atime=False)  # jaxlean's store and JAX without limit
    assert check_directory(tmp_path) == []


def test_damaged_entries_found_by_verify(tmp_path, real_entry):
    good = _entry(tmp_path, "jit_good", real_entry, atime=False)
    empty = _entry(tmp_path, "jit_empty", b"", atime=False)
    truncated = _entry(tmp_path, "jit_cut", good.read_bytes()[:40], atime=False)
    (quick,) = check_directory(tmp_path)
    assert quick.paths == (empty,) and quick.severity == "warning"
    (verified,) = check_directory(tmp_path, verify=True)
    assert set(verified.paths) == {empty, truncated}
    assert repair([verified]) == 2
    assert [e.path for e in list_entries(tmp_path)] == [good]


def test_leftovers_are_notes(tmp_path):
    _entry(tmp_path, "jit_a", b"x", atime=False)
    (tmp_path / ".jit_b-0.abc.tmp").write_bytes(b"partial")
    (tmp_path / f"jit_gone-{0:064x}{ATIME_SUFFIX}").write_bytes(b"\0" * 8)
    (tmp_path / f"jit_gone-{0:064x}{METADATA_SUFFIX}").write_text('{"compile_s": 0.5}')
    kept = list_entries(tmp_path)[0]
    kept.path.with_name(kept.key + METADATA_SUFFIX).write_text('{"compile_s": 0.5}')
    (finding,) = check_directory(tmp_path)
    assert finding.severity == "note" and len(finding.paths) == 3
    repair([finding])
    assert sorted(p.name for p in tmp_path.iterdir()) == [kept.path.name,
                                                           kept.key + METADATA_SUFFIX]


def test_size_limit_reached(tmp_path, capsys, monkeypatch):
    _entry(tmp_path, "jit_a", b"x" * 600, atime=False)
    _entry(tmp_path, "jit_b", b"x" * 300, atime=False)
    assert check_directory(tmp_path, max_bytes=10_000) == []
    findings = check_directory(tmp_path, max_bytes=500)
    assert [f.severity for f in findings] == ["warning", "warning"]
    assert "limit is (nearly) reached" in findings[0].problem
    assert len(findings[1].paths) == 1  # jit_a alone is larger than the limit
    monkeypatch.setenv("JAX_COMPILATION_CACHE_MAX_SIZE", "950")
    assert main(["cache", "info", str(tmp_path)]) == 0  # warnings only
    assert "limit is (nearly) reached" in capsys.readouterr().out
    assert main(["cache", "info", str(tmp_path), "--max-size", "lots"]) == 2


@pytest.mark.parametrize("args", [[], ["--verify"]])
def test_info_reports_healthy(tmp_path, capsys, args, real_entry):
    _entry(tmp_path, "jit_a", real_entry, atime=False)
    assert main(["cache", "info", str(tmp_path), *args]) == 0
    assert "healthy" in capsys.readouterr().out
