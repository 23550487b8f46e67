"""The bench framework: registry, targets computed from values, report files, CLI."""

import io
import json
import math

import pytest
from rich.console import Console

from jaxlean.bench import BenchContext, Benchmark, BenchResult, Plot, Target, available
from jaxlean.bench._measure import Timing
from jaxlean.bench._registry import EXACT
from jaxlean.bench._report import (
    closing_lines,
    comparison_tables,
    format_value,
    markdown,
    rich_report,
    write_outputs,
)
from jaxlean.cli import _summary, main

LONG_CASE = "random branched tree, 10,000 nodes, float64, sequential schedule (Hines)"
LONG_METRIC = "tree_solve gradient through the implicit-differentiation rule"


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


def wide_result(quick=False):
    """Long names, three sides (two baselines), a side not measured, a full-size-only target."""
    result = BenchResult("solver_with_a_long_name", "a title that is long enough to need wrapping "
                         "in an eighty-column terminal window", quick=quick)
    for baseline, value in (("autodiff through the elimination loop", float("nan")),
                            ("jaxley 0.14 dendritic Hines solver", 0.031)):
        result.compare(LONG_CASE, LONG_METRIC, "s", value, 0.0021, "jaxlean tree_solve", baseline)
    result.compare(LONG_CASE, "temp memory", "bytes", 2**30, 2**20, "jaxlean tree_solve",
                   "jaxley 0.14 dendritic Hines solver")
    result.target("tree_solve gradient/forward at 10k, float64 (jaxley's fix: 3.8)", 2.5, 3.0)
    result.target("speed-up over the loop at 100k nodes, which quick mode does not reach",
                  1.0, 10.0, ">=", quick=False)
    result.notes.append('jaxley is not installed (`pip install "jaxlean[peers]"`): jaxlean only')
    return result


def render(result, width=80):
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=False, color_system=None).print(
        rich_report(result))
    return out.getvalue()


def test_ratio_and_target_pass_follow_values():
    result = sample_result()
    assert result.comparisons[0].ratio == pytest.approx(0.25)
    assert [t.passed for t in result.targets] == [True, False]
    assert not Target("x", float("nan"), 1.0).passed
    assert math.isnan(wide_result().comparisons[0].ratio)


def test_format_value_units():
    assert format_value(3 * 2**30, "bytes") == "3.00 GiB"
    assert format_value(0.0021, "s") == "2.10 ms"
    assert format_value(12.5, "steps") == "12.5 steps"
    assert format_value(float("nan"), "s") == "-"


@pytest.mark.parametrize("width", [80, 60])
def test_terminal_report_fits_the_width(width):
    text = render(wide_result(), width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text and "nan" not in text


def test_terminal_report_keeps_every_name_whole_at_80_columns():
    words = " ".join(render(wide_result(), 80).split())
    for name in (LONG_CASE, LONG_METRIC, "jaxley 0.14 dendritic Hines solver",
                 "jaxlean tree_solve", "autodiff through the elimination loop",
                 "tree_solve gradient/forward at 10k, float64 (jaxley's fix: 3.8)"):
        assert all(word in words for word in name.split()), name
    assert 'pip install "jaxlean[peers]"' in words


def test_not_measured_shows_a_dash():
    table = comparison_tables(wide_result())[0]
    assert table.sides == ["autodiff through the elimination loop",
                           "jaxley 0.14 dendritic Hines solver", "jaxlean tree_solve"]
    first, memory = table.rows
    assert first.values == ("-", "31.00 ms", "2.10 ms")
    assert first.ratios == ("-", "0.0677")
    assert memory.values == ("-", "1.00 GiB", "1.00 MiB") and memory.ratios[0] == "-"
    text = markdown([wide_result()], "cmd")
    assert "| - | 31.00 ms | 2.10 ms | - | 0.0677 |" in text and "nan" not in text


def test_quick_mode_claims_only_targets_that_hold_at_quick_sizes():
    full, quick = wide_result(quick=False), wide_result(quick=True)
    assert len(full.claimed_targets) == 2 and not full.full_size_targets
    assert [t.description for t in quick.claimed_targets] == [
        "tree_solve gradient/forward at 10k, float64 (jaxley's fix: 3.8)"]
    assert len(quick.full_size_targets) == 1
    text = " ".join(render(quick).split())
    assert "FAIL" not in text and "full sizes only" in text
    assert "FAIL" in " ".join(render(full).split())
    payload = quick.to_dict()
    assert [t["claimed"] for t in payload["targets"]] == [True, False]
    assert "| speed-up over the loop" not in markdown([quick], "cmd")


def test_summary_counts_claimed_targets_and_sets_exit_status(capsys):
    quick = wide_result(quick=True)
    assert _summary([quick], strict=True) == 0
    out = capsys.readouterr().out
    assert "1 met, 0 missed" in out and "1 more hold at full sizes only" in out
    assert _summary([wide_result(quick=False)], strict=True) == 1
    assert "target missed solver_with_a_long_name: speed-up" in capsys.readouterr().out


def test_benchmark_measure_records_the_size_setting():
    bench = Benchmark("demo", "a demo", lambda ctx: wide_result())
    assert bench.measure(BenchContext(quick=True)).quick
    assert not bench.measure(BenchContext(quick=False)).quick


def test_write_outputs(tmp_path):
    paths = write_outputs([sample_result()], tmp_path, "jaxlean bench demo")
    names = sorted(p.name for p in paths)
    assert names == ["demo_compile.png", "demo_warm.png", "results.json", "results.md"]
    payload = json.loads((tmp_path / "results.json").read_text())
    bench = payload["benchmarks"][0]
    assert bench["comparisons"][0]["ratio"] == pytest.approx(0.25)
    assert [t["passed"] for t in bench["targets"]] == [True, False]
    text = markdown([sample_result()], "cmd")
    assert "| n=4 | compile | loop | scan | ratio |" not in text
    assert "| case | metric | loop | scan | ratio |" in text
    assert "| n=4 | compile | 2.00 s | 500.00 ms | 0.25 |" in text
    assert "| speed-up | 4 | >= 5 | - | FAIL |" in text


def test_registry_discovers_layers_benchmark():
    assert "layers" in available()


def test_cli_list_and_unknown(capsys):
    assert main(["bench", "--list"]) == 0
    assert "layers" in capsys.readouterr().out
    assert main(["bench", "no-such-benchmark"]) == 2


@pytest.mark.parametrize(("value", "op", "noise", "spread", "verdict"), [
    (0.80, "<=", 0.1, float("nan"), "met"),
    (0.95, "<=", 0.1, float("nan"), "within noise"),
    (1.05, "<=", 0.1, float("nan"), "within noise"),
    (1.20, "<=", 0.1, float("nan"), "missed"),
    (1.20, "<=", 0.1, 0.25, "within noise"),   # the measured spread widens the band
    (1.20, "<=", 0.1, 0.05, "missed"),         # ... and never narrows the stated one
    (1.00, "<=", 0.0, float("nan"), "met"),    # exact: the goal itself
    (1.01, "<=", 0.0, float("nan"), "missed"),
    (1.01, "<=", float("nan"), float("nan"), "missed"),  # no band stated: the goal decides
    (1.01, "<=", float("nan"), 0.05, "within noise"),    # ... unless a spread was measured
    (4.60, ">=", 0.1, float("nan"), "within noise"),
    (4.40, ">=", 0.1, float("nan"), "missed"),
    (6.00, ">=", 0.1, float("nan"), "met"),
    (float("nan"), "<=", 0.1, float("nan"), "missed"),
])
def test_verdict_is_within_noise_inside_the_band_around_the_goal(value, op, noise, spread,
                                                                 verdict):
    limit = 5.0 if op == ">=" else 1.0
    target = Target("t", value, limit, op, noise=noise, spread=spread)
    assert target.verdict == verdict


def test_ratio_spread_is_the_spread_of_per_round_ratios():
    a, b = Timing((1.0, 2.0, 3.0)), Timing((1.0, 1.0, 1.0))
    assert a.ratio_spread(b) == pytest.approx(0.5)
    assert Timing((2.0, 4.0)).ratio_spread(Timing((1.0, 2.0))) == 0.0  # load hit both alike
    five = Timing((1.0, 1.1, 1.2, 1.3, 3.0)).ratio_spread(Timing((1.0,) * 5))
    assert five == pytest.approx(0.1 / 1.2)  # the outlying round is left out


def noisy_result(quick=True):
    result = BenchResult("noisy", "timed ratios", quick=quick)
    result.target("parity of two timed sides", 1.04, 1.0, noise=0.1)
    result.target("exact bytes", 0.2, 0.5, noise=EXACT)
    result.target("no band stated", 0.9, 1.0)
    result.headline = "Noisy: the figures of this run."
    return result


def test_target_rows_state_each_band_and_within_noise_is_not_a_miss(capsys):
    text = " ".join(render(noisy_result()).split())
    assert "within noise" in text and "±10%" in text and "exact" in text
    assert "FAIL" not in text
    assert _summary([noisy_result()], strict=True) == 0
    out = capsys.readouterr().out
    assert "2 met, 0 missed, 1 within noise" in out and "target missed" not in out
    payload = noisy_result().to_dict()
    assert [t["verdict"] for t in payload["targets"]] == ["within noise", "met", "met"]
    assert payload["targets"][0]["band"] == 0.1 and payload["targets"][1]["band"] == 0.0
    assert math.isnan(payload["targets"][2]["band"])
    rows = markdown([noisy_result()], "cmd")
    assert "| exact bytes | 0.2 | <= 0.5 | exact | pass |" in rows
    assert "| no band stated | 0.9 | <= 1 | - | pass |" in rows


def test_closing_lines_give_each_headline_then_the_full_run_command(capsys):
    assert closing_lines([noisy_result(), wide_result(quick=True)]) == [
        "Noisy: the figures of this run.",
        "full sizes, every target: jaxlean bench noisy solver_with_a_long_name"]
    assert closing_lines([noisy_result(quick=False)]) == ["Noisy: the figures of this run."]
    _summary([noisy_result()], strict=False)
    assert "full sizes, every target: jaxlean bench noisy" in capsys.readouterr().out


def test_closing_lines_say_when_the_machine_was_busy():
    busy, idle = noisy_result(), noisy_result()
    busy.load, idle.load = 10_000.0, 0.0
    assert not any("busy" in line for line in closing_lines([idle]))
    assert "load average up to 10000.0" in closing_lines([idle, busy])[-2]
    measured = Benchmark("demo", "a demo", lambda ctx: wide_result()).measure(BenchContext())
    assert math.isfinite(measured.load)
