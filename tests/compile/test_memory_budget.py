"""The budget search: Pareto pruning, fastest fit first, calibration by compiles, refusal."""

from __future__ import annotations

import pytest

from jaxlean.compile.memory_budget import (
    Candidate,
    StepMemory,
    device_memory,
    pareto_front,
    search_budget,
)
from jaxlean.errors import ConfigError, MemoryBudgetError

FIXED = 10


def _candidates() -> list[Candidate[str]]:
    """Faster candidates need more memory; "slow-fat" is beaten by "mid" on both counts."""
    return [Candidate("fast", 1.0, FIXED, 100), Candidate("mid", 2.0, FIXED, 50),
            Candidate("slow-fat", 3.0, FIXED, 80), Candidate("lean", 4.0, FIXED, 10)]


def _measure(factor: float, compiled: list[str]):
    """A fake compile whose true footprint is ``factor`` times the modelled bytes."""
    modelled = {c.option: c.variable_bytes for c in _candidates()}

    def measure(option: str) -> StepMemory:
        compiled.append(option)
        return StepMemory(arguments=FIXED, outputs=0, aliased=0,
                          temp=int(factor * modelled[option]))

    return measure


def test_the_front_keeps_only_candidates_nothing_beats_on_both_counts():
    assert [c.option for c in pareto_front(_candidates())] == ["fast", "mid", "lean"]


def test_the_fastest_candidate_predicted_to_fit_is_compiled_first_and_chosen():
    compiled: list[str] = []
    found = search_budget(_candidates(), _measure(1.0, compiled), budget=120, progress=False)
    assert found.chosen.candidate.option == "fast" and compiled == ["fast"]
    assert found.chosen.memory.total == 110 and found.candidates == 4


def test_a_model_that_underestimates_is_corrected_by_the_first_compile():
    compiled: list[str] = []
    found = search_budget(_candidates(), _measure(2.0, compiled), budget=115, progress=False)
    # "fast" was predicted to fit (110) but needs 210; rescaled, "mid" predicts 110
    assert compiled == ["fast", "mid"]
    assert found.chosen.candidate.option == "mid" and found.chosen.memory.total == 110


def test_a_model_that_overestimates_goes_back_to_faster_candidates():
    compiled: list[str] = []
    found = search_budget(_candidates(), _measure(0.5, compiled), budget=61, progress=False)
    # "fast" predicted 110 > 61 * 1.1: "mid" is compiled (35); rescaled, "fast" predicts 60
    assert compiled == ["mid", "fast"]
    assert found.chosen.candidate.option == "fast" and found.chosen.memory.total == 60


def test_nothing_fitting_names_the_smallest_footprint_compiled():
    compiled: list[str] = []
    progress: list[str] = []
    with pytest.raises(MemoryBudgetError, match=r"smallest footprint compiled is 20 B") as err:
        search_budget(_candidates(), _measure(1.0, compiled), budget=15, progress=progress.append,
                      describe=lambda option: f"option {option}")
    assert err.value.smallest == 20 and err.value.option == "lean" and err.value.budget == 15
    assert "option lean" in str(err.value)
    assert compiled == ["lean"]  # predicted over the budget: compiled only to name the least
    assert any("compiling option lean" in line for line in progress)


def test_max_compiles_bounds_the_search():
    compiled: list[str] = []
    with pytest.raises(MemoryBudgetError):
        search_budget(_candidates(), _measure(3.0, compiled), budget=100, max_compiles=1,
                      progress=False)
    assert compiled == ["fast", "lean"]  # one search compile, then the leanest to report


@pytest.mark.parametrize("bad", [dict(budget=0), dict(max_compiles=0)])
def test_bad_search_arguments_are_named(bad):
    arguments = dict(budget=100, max_compiles=6) | bad
    with pytest.raises(ConfigError, match="budget and max_compiles"):
        search_budget(_candidates(), _measure(1.0, []), progress=False, **arguments)


def test_the_cpu_does_not_report_its_memory():
    assert device_memory() is None or device_memory() > 0
