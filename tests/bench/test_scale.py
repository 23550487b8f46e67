"""The ``scale`` benchmark in quick mode: its child process, report structure and targets.

Quick mode measures a tiny model on 1 and 4 devices (4 compiles): per-device state
falling as 1/n and the loss equal to one device's are checked as in the full run.
"""

import pytest

from jaxlean.bench import BenchContext, available
from jaxlean.bench.scale import device_counts


@pytest.mark.slow
def test_scale_quick_reports_every_device_count_and_meets_targets():
    counts, steps = device_counts(quick=True), []
    result = available()["scale"].run(BenchContext(quick=True, step=steps.append))
    assert steps[0].startswith("child process") and "4 devices: step time" in steps

    cases = {row.case for row in result.comparisons}
    assert counts == (1, 4) and cases == {"1 device", "4 devices"}
    assert len(result.comparisons) == 5 * len(counts)
    assert {row.variant for row in result.comparisons} == {"FSDP + packed"}
    state = {row.case: row for row in result.comparisons
             if row.metric == "param+opt bytes/device"}
    assert all(row.baseline == state["1 device"].baseline for row in state.values())
    assert state["4 devices"].ratio == pytest.approx(1 / 4, rel=0.1)
    assert all(row.value > 0 for row in result.comparisons)

    assert len(result.targets) == 2 * (len(counts) - 1) + 1
    assert all(target.passed for target in result.targets), [
        (t.description, t.value) for t in result.targets if not t.passed]
    plot = result.plots[0]
    assert plot.series["FSDP"][0] == list(counts) and plot.logx and plot.logy
    assert any("forced host devices" in note for note in result.notes)
