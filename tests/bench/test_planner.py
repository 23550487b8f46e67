"""``jaxlean bench planner`` at a tiny size: plans within budget, timed beside hand-picked."""

from __future__ import annotations

import pytest

from jaxlean.bench import BenchContext, available
from jaxlean.bench import planner as bench_planner

TINY = dict(config=dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_layers=16,
                        num_heads=2, num_kv_heads=1), shape=(2, 128))


@pytest.mark.slow
def test_the_planner_case_reports_memory_against_budget_and_time_beside_hand_picked(
        monkeypatch):
    assert "planner" in available()
    monkeypatch.setitem(bench_planner.QUICK, "config", TINY["config"])
    monkeypatch.setitem(bench_planner.QUICK, "shape", TINY["shape"])
    monkeypatch.setattr(bench_planner, "FRACTIONS", (0.25, 1.0))
    steps: list[str] = []
    result = bench_planner.run(BenchContext(quick=True, step=steps.append))
    budget_targets = [t for t in result.targets if "compiled memory / budget" in t.description
                      or "refusal" in t.description]
    assert len(budget_targets) == len(bench_planner.FRACTIONS)
    assert all(t.verdict == "met" and t.band == 0 for t in budget_targets)
    memory_rows = [c for c in result.comparisons if c.metric == "compiled memory"]
    assert all(row.value <= row.baseline for row in memory_rows)
    walls = [c for c in result.comparisons if c.metric == "wall time"]
    assert {c.baseline_name for c in walls} == {'remat="full"', "remat=None"}
    assert all(c.spread == c.spread for c in walls)  # timed in alternation: a spread
    assert any("hidden 32" in note for note in result.notes)
    assert any(step.startswith("plan_memory: [1/") for step in steps)
    timed = [t for t in result.targets if "fastest hand-picked step that fits" in t.description]
    assert len(timed) == len(budget_targets) and all(t.band >= 0.1 for t in timed)
