"""Tests of ``jaxlean cache info|clear|prune|check`` and the log analysis behind ``check``."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jaxlean.cli import main
from jaxlean.compile.check import Compile, Run, compare, parse_log
from jaxlean.compile.directory import ENTRY_SUFFIX, list_entries

REPO = Path(__file__).resolve().parents[2]
_COMPONENTS = ["computation", "jax_lib version", "backend version", "XLA flags",
               "compile_options", "accelerator_config", "compression", "custom_hook"]


def _make_cache(directory: Path, entries: list[tuple[str, int, float]]) -> None:
    """Fake entries ``(function, size, age in seconds)``; the layout is all that matters."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, (function, size, age) in enumerate(entries):
        path = directory / f"{function}-{i:064x}{ENTRY_SUFFIX}"
        path.write_bytes(b"\0" * size)
        stamp = time.time() - age
        os.utime(path, (stamp, stamp))


def test_info_counts_entries_per_function(tmp_path, capsys):
    _make_cache(tmp_path, [("jit_step", 1000, 30), ("jit_step", 3000, 20), ("jit_eval", 500, 10)])
    assert main(["cache", "info", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "3 entries, 4.39 KiB" in out
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if "│" in line}
    assert "2" in lines["jit_step"].split("│")[2] and "1" in lines["jit_eval"].split("│")[2]


def test_info_on_missing_directory(tmp_path, capsys):
    assert main(["cache", "info", str(tmp_path / "nowhere")]) == 0
    assert "no cache entries" in capsys.readouterr().out


def test_prune_removes_oldest_until_under_the_limit(tmp_path, capsys):
    _make_cache(tmp_path, [("jit_old", 600, 300), ("jit_mid", 600, 200), ("jit_new", 600, 100)])
    assert main(["cache", "prune", str(tmp_path), "--max-size", "1.3KB"]) == 0
    assert [e.function for e in list_entries(tmp_path)] == ["jit_mid", "jit_new"]
    assert "removed 1 least recently used entries" in capsys.readouterr().out
    assert main(["cache", "prune", str(tmp_path), "--max-size", "lots"]) == 2


def test_clear_removes_only_cache_files(tmp_path, capsys):
    _make_cache(tmp_path, [("jit_a", 10, 1), ("jit_b", 10, 1)])
    (tmp_path / "xla_gpu_per_fusion_autotune_cache_dir").mkdir()
    (tmp_path / "xla_gpu_per_fusion_autotune_cache_dir" / "x").write_text("tuned")
    (tmp_path / "notes.txt").write_text("keep me")
    assert main(["cache", "clear", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert "removed 2 entries" in capsys.readouterr().out


def _log(name: str, key: str, hit: bool, components: dict[str, str], flags=()) -> str:
    lines = []
    for flag in flags:
        lines.append(f"DEBUG:t:jax._src.cache_key:364: Including XLA flag in cache key: {flag}")
    for component in _COMPONENTS:
        value = components.get(component, "0" * 64)
        lines.append(f"DEBUG:t:jax._src.cache_key:157: get_cache_key hash of serialized "
                     f"{component}: {value}")
        lines.append(f"DEBUG:t:jax._src.cache_key:163: get_cache_key hash after serializing "
                     f"{component}: {'f' * 64}")
    outcome = ("Persistent compilation cache hit" if hit else "PERSISTENT COMPILATION CACHE MISS")
    lines.append(f"DEBUG:t:jax._src.compiler:125: {outcome} for '{name}' with key '{key}'")
    # JAX attaches two handlers to a debug-enabled logger: every line comes twice.
    return "\n".join(line for line in lines for _ in range(2))


def test_parse_log_reads_each_compile_once():
    text = "\n".join([
        _log("jit_f", "jit_f-1", False, {"computation": "a" * 64}, flags=["--xla_x=1"]),
        "DEBUG:t:jax._src.compiler:815: Not writing persistent cache entry for 'jit_f' "
        "because it took < 1.00 seconds to compile (0.02s)",
        _log("jit_f", "jit_f-2", True, {"computation": "b" * 64}),
    ])
    first, second = parse_log(text)
    assert (first.name, first.key, first.hit) == ("jit_f", "jit_f-1", False)
    assert first.components["computation"] == "a" * 64 and first.xla_flags == ["--xla_x=1"]
    assert first.not_written.startswith("because it took < 1.00 seconds")
    assert (second.key, second.hit, second.xla_flags) == ("jit_f-2", True, [])


def _compile(name: str, key: str, hit: bool, xla_flags: str = "") -> Compile:
    components = {c: "0" for c in _COMPONENTS}
    components["XLA flags"] = xla_flags
    return Compile(name, key, hit, components, xla_flags.split())


def test_compare_names_the_changed_key_component():
    first = Run(0, [
        _compile("jit_a", "jit_a-1", False),
        _compile("jit_b", "jit_b-1", False, "--xla_a=1"),
        _compile("jit_c", "jit_c-1", False),
    ], Path("o"), Path("e"))
    first.compiles[2].not_written = "because it took < 1.00 seconds to compile (0.10s)"
    second = Run(0, [
        _compile("jit_a", "jit_a-1", True),
        _compile("jit_b", "jit_b-2", False, "--xla_a=2"),
        _compile("jit_c", "jit_c-1", False),
        _compile("jit_d", "jit_d-1", False),
    ], Path("o"), Path("e"))
    a, b, c, d = compare(first, second)
    assert (a.first, a.second, a.causes) == ("miss", "hit", [])
    assert b.second == "MISS" and b.causes[0].startswith("key changed: XLA flags")
    assert "run 1: --xla_a=1; in run 2: --xla_a=2" in b.causes[1]
    assert c.causes == ["key unchanged, but run 1 did not write the entry "
                        "(because it took < 1.00 seconds to compile (0.10s))"]
    assert d.first == "-" and "not compiled in run 1" in d.causes[0]


_PROGRAM = textwrap.dedent("""
    import os, pathlib, sys
    counter = pathlib.Path(sys.argv[1])
    run = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(run + 1))
    if sys.argv[2] == "flags" and run == 1:
        os.environ["XLA_FLAGS"] = "--xla_cpu_enable_fast_math=false"
    import jax, jax.numpy as jnp

    @jax.jit
    def stable(x):
        return jnp.tanh(x @ x.T).sum()

    @jax.jit
    def drifting(x):
        return (x * (run + 2.0)).sum()

    x = jnp.ones((4, 4))
    print(float(stable(x)), float(drifting(x)) if sys.argv[2] == "drift" else 0.0)
""")


def _check(tmp_path: Path, mode: str, capsys, monkeypatch) -> tuple[int, str]:
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    code = main(["cache", "check", "--keep", str(tmp_path / "work"), "--",
                 sys.executable, str(script), str(tmp_path / "counter"), mode])
    return code, capsys.readouterr().out


def _row(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"│ {name} "))


def test_check_explains_a_changed_computation_with_a_diff(tmp_path, capsys, monkeypatch):
    code, out = _check(tmp_path, "drift", capsys, monkeypatch)
    assert code == 1
    assert "hit" in _row(out, "jit_stable") and "MISS" not in _row(out, "jit_stable")
    assert "MISS" in _row(out, "jit_drifting") and "computation" in _row(out, "jit_drifting")
    assert "-    %cst = stablehlo.constant dense<2.000000e+00>" in out
    assert "+    %cst = stablehlo.constant dense<3.000000e+00>" in out


@pytest.mark.slow
def test_check_reports_changed_xla_flags(tmp_path, capsys, monkeypatch):
    code, out = _check(tmp_path, "flags", capsys, monkeypatch)
    assert code == 1
    assert "XLA flags" in _row(out, "jit_stable")
    assert "--xla_cpu_enable_fast_math=false" in out


def _refuse_unlink(self, missing_ok=False):
    raise PermissionError(13, "Permission denied", str(self))


def _refuse_rmtree(path, ignore_errors=False):
    if not ignore_errors:
        raise PermissionError(13, "Permission denied", str(path))


@pytest.mark.parametrize("case", ["info-file", "clear-file", "prune-file", "prune-size",
                                  "info-size", "check-empty", "clear-read-only",
                                  "repair-read-only", "info-unlistable", "clear-subcache",
                                  "check-timeout", "check-no-such-program"])
def test_every_error_exits_non_zero(tmp_path, capsys, monkeypatch, case):
    """Whatever goes wrong, a subcommand that prints ``error:`` does not exit 0."""
    a_file = tmp_path / "a_file"
    a_file.write_text("not a cache")
    cache = tmp_path / "cache"
    _make_cache(cache, [("jit_a", 10, 1)])
    (cache / f"jit_gone-{0:064x}-atime").write_bytes(b"\0" * 8)  # something to repair
    if case.endswith("read-only"):
        monkeypatch.setattr(Path, "unlink", _refuse_unlink)
    if case == "info-unlistable":
        monkeypatch.setattr(os, "access", lambda path, mode: False)
    if case == "clear-subcache":  # an XLA sub-cache that cannot be removed
        (cache / "xla_gpu_per_fusion_autotune_cache_dir").mkdir()
        monkeypatch.setattr(shutil, "rmtree", _refuse_rmtree)
    argv = {"info-file": ["info", str(a_file)], "clear-file": ["clear", str(a_file)],
            "prune-file": ["prune", str(a_file), "--max-size", "1GB"],
            "prune-size": ["prune", str(cache), "--max-size", "lots"],
            "info-size": ["info", str(cache), "--max-size", "lots"], "check-empty": ["check"],
            "clear-read-only": ["clear", str(cache)],
            "repair-read-only": ["info", str(cache), "--repair"],
            "info-unlistable": ["info", str(cache)], "clear-subcache": ["clear", str(cache)],
            "check-timeout": ["check", "--timeout", "0.5", "--", sys.executable, "-c",
                              "import time; time.sleep(30)"],
            "check-no-such-program": ["check", "--", str(tmp_path / "no-such-program")]}[case]
    code = main(["cache", *argv])
    out = capsys.readouterr().out
    assert "error: " in out and code != 0, out
    assert "Traceback" not in out
    assert a_file.read_text() == "not a cache"


def test_check_without_a_command_is_an_error(capsys):
    assert main(["cache", "check"]) == 2
    assert "after `--`" in capsys.readouterr().out
