"""`jaxlean bench`: a benchmark that fails is reported and the others' results are still written."""

import json

from jaxlean.bench._registry import REGISTRY, Benchmark, BenchResult, Comparison
from jaxlean.cli import main


def broken(ctx):
    raise RuntimeError("child process died")


def fine(ctx):
    result = BenchResult("zz_fine", "a fine benchmark")
    result.comparisons.append(Comparison("case", "metric", "s", 2.0, 1.0))
    return result


def test_a_failing_benchmark_does_not_lose_the_others(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(REGISTRY, "zz_broken", Benchmark("zz_broken", "always fails", broken))
    monkeypatch.setitem(REGISTRY, "zz_fine", Benchmark("zz_fine", "always works", fine))
    code = main(["bench", "zz_broken", "zz_fine", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "zz_broken failed: RuntimeError('child process died')" in out
    assert "benchmark(s) failed: zz_broken" in out
    written = json.loads((tmp_path / "results.json").read_text())
    assert [b["name"] for b in written["benchmarks"]] == ["zz_fine"]
