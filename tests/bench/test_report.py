"""The bench framework: registry, targets computed from values, report files, CLI."""

import json

import pytest

from jaxlean.bench import BenchResult, Plot, Target, available
from jaxlean.bench._report import format_value, markdown, write_outputs
from jaxlean.cli import main


def sample_result():
    result = BenchResult("demo", "a demo")
    result.compare("n=4", "compile", "s", 2.0, 0.5, "scan", "loop")
    result.compare("n=4", "temp", "bytes", 3 * 2**30, 2**20)
    result.target("compile ratio", 0.25, 0.5)
    result.target("speed-up", 4.0, 5.0, ">=")
    result.plots.append(Plot("compile", "compile s", "n", "s", {"loop": ([1, 2], [1.0, 2.0])}))
    result.plots.append(Plot("warm", "cold vs warm", "workload", "s",
                             {"cold": (["a", "b"], [2.0, 3.0]), "warm": (["a", "b"], [0.1, 0.2])}))
    return result


def test_ratio_and_target_pass_follow_values():
    result = sample_result()
    assert result.comparisons[0].ratio == pytest.approx(0.25)
    assert [t.passed for t in result.targets] == [True, False]
    assert not Target("x", float("nan"), 1.0).passed


def test_format_value_units():
    assert format_value(3 * 2**30, "bytes") == "3.00 GiB"
    assert format_value(0.0021, "s") == "2.10 ms"
    assert format_value(12.5, "steps") == "12.5 steps"


def test_write_outputs(tmp_path):
    paths = write_outputs([sample_result()], tmp_path, "jaxlean bench demo")
    names = sorted(p.name for p in paths)
    assert names == ["demo_compile.png", "demo_warm.png", "results.json", "results.md"]
    payload = json.loads((tmp_path / "results.json").read_text())
    bench = payload["benchmarks"][0]
    assert bench["comparisons"][0]["ratio"] == pytest.approx(0.25)
    assert [t["passed"] for t in bench["targets"]] == [True, False]
    text = markdown([sample_result()], "cmd")
    assert "| n=4 | compile | loop | 2.00 s | scan | 500.00 ms | 0.25 |" in text
    assert "| speed-up | 4 | >= 5 | FAIL |" in text


def test_registry_discovers_layers_benchmark():
    assert "layers" in available()


def test_cli_list_and_unknown(capsys):
    assert main(["bench", "--list"]) == 0
    assert "layers" in capsys.readouterr().out
    assert main(["bench", "no-such-benchmark"]) == 2
