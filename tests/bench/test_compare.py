"""`jaxlean bench --compare`: figures against committed results, on synthetic results."""

import json

import pytest

from jaxlean.bench._compare import DEFAULT_BAND, compare_results, figures, load_results
from jaxlean.bench._measure import Timing
from jaxlean.bench._registry import EXACT, BenchResult
from jaxlean.bench._report import results_payload
from jaxlean.cli import main
from jaxlean.errors import ConfigError

CPU = {"cpu": "Test CPU 9000", "cores": 2, "l2_bytes": None, "l3_bytes": None}


def run(wall_ours=1.0, speedup=5.0, temp_ours=100, with_speedup=True, quick=False, cpu=CPU):
    """A benchmark result: a timed comparison, a byte comparison and two targets."""
    result = BenchResult("demo", "a demo", quick=quick, machine=dict(cpu))
    result.compare("T=8", "wall time", "s", Timing((2.0, 2.02, 1.98)),
                   Timing((wall_ours, wall_ours * 1.01, wall_ours * 0.99)),
                   baseline_name="peer")
    result.compare("T=8", "temp bytes", "bytes", 1000, temp_ours, baseline_name="peer")
    result.target("ours / peer wall time", wall_ours / 2.0, 1.0, noise=0.10)
    if with_speedup:
        result.target("peer / ours first epoch", speedup, 3.0, ">=", noise=0.05)
    return results_payload([result], "jaxlean bench demo")


def by_name(report):
    return {m.name: m for m in report.moves}


def test_figures_inside_their_band_pass():
    report = compare_results(run(), run(wall_ours=1.05, speedup=5.2))
    assert not report.flagged and not report.moved
    assert {m.status for m in report.moves} == {"within band"}
    assert len(report.moves) == 4


def test_a_figure_outside_its_band_is_flagged_in_its_own_direction():
    worse = compare_results(run(), run(speedup=4.0))  # higher is better for this target
    moved = by_name(worse)["target: peer / ours first epoch"]
    assert moved.status == "worse" and moved.flagged
    assert moved.change == pytest.approx(-0.2)
    better = compare_results(run(), run(wall_ours=0.8))  # a lower ratio is better
    assert {m.status for m in better.moved} == {"better"} and not better.flagged
    assert "wall time" in " ".join(better.lines())


def test_bytes_are_exact_and_timed_ratios_get_at_least_the_default_band():
    report = compare_results(run(), run(temp_ours=101))
    assert by_name(report)["T=8, temp bytes: jaxlean / peer"].status == "worse"
    bands = {f.name: f.band for f in figures(run()["benchmarks"][0])}
    assert bands["T=8, temp bytes: jaxlean / peer"] == EXACT
    assert bands["T=8, wall time: jaxlean / peer"] == DEFAULT_BAND  # spreads of 1 % each


def test_a_missing_figure_is_reported_and_a_new_one_is_not_flagged():
    missing = compare_results(run(), run(with_speedup=False))
    move = by_name(missing)["target: peer / ours first epoch"]
    assert move.status == "missing" and move.flagged
    assert "missing (was 5)" in "\n".join(missing.lines())
    new = compare_results(run(with_speedup=False), run())
    assert by_name(new)["target: peer / ours first epoch"].status == "new"
    assert not new.flagged


def test_other_sizes_are_not_compared_and_another_cpu_is_named():
    quick = compare_results(run(), run(quick=True, speedup=1.0))
    assert not quick.moves and "not compared" in quick.warnings[0]
    other = compare_results(run(), run(cpu={**CPU, "cpu": "Other CPU"}))
    assert "Test CPU 9000" in other.warnings[0] and "Other CPU" in other.warnings[0]


def test_cli_compares_a_written_run_and_exits_1_when_a_figure_got_worse(tmp_path, capsys):
    baseline, same, slower = (tmp_path / f"{n}.json" for n in ("baseline", "same", "slower"))
    baseline.write_text(json.dumps(run()))
    same.write_text(json.dumps(run(wall_ours=1.02)))
    slower.write_text(json.dumps(run(wall_ours=1.5)))
    assert main(["bench", "--compare", str(baseline), "--results", str(same)]) == 0
    assert main(["bench", "--compare", str(baseline), "--results", str(slower)]) == 1
    out = capsys.readouterr().out
    assert "ours / peer wall time: 0.5 -> 0.75 (+50.0%, band ±10%): worse" in out


def test_unreadable_results_are_refused_by_name(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"command": "x"}')
    with pytest.raises(ConfigError, match=r"bad\.json is not a results\.json"):
        load_results(bad)
    with pytest.raises(ConfigError, match="cannot read benchmark results"):
        load_results(tmp_path / "absent.json")
