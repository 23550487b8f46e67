"""The ``scale`` benchmark in quick mode: its child process, report structure and targets."""

import pytest

from jaxlean.bench import BenchContext, available
from jaxlean.bench.scale import DEVICE_COUNTS


@pytest.mark.slow
def test_scale_quick_reports_every_device_count_and_meets_targets():
    steps = []
    result = available()["scale"].run(BenchContext(quick=True, step=steps.append))
    assert steps[0].startswith("child process") and "8 devices: step time" in steps

    cases = {row.case for row in result.comparisons}
    assert cases == {"1 device", "2 devices", "4 devices", "8 devices"}
    assert len(result.comparisons) == 5 * len(DEVICE_COUNTS)
    assert {row.variant for row in result.comparisons} == {"FSDP + packed"}
    state = {row.case: row for row in result.comparisons
             if row.metric == "param+opt bytes/device"}
    assert all(row.baseline == state["1 device"].baseline for row in state.values())
    assert state["8 devices"].ratio == pytest.approx(1 / 8, rel=0.1)
    assert all(row.value > 0 for row in result.comparisons)

    assert len(result.targets) == 7
    assert all(target.passed for target in result.targets), [
        (t.description, t.value) for t in result.targets if not t.passed]
    plot = result.plots[0]
    assert plot.series["FSDP"][0] == list(DEVICE_COUNTS) and plot.logx and plot.logy
    assert any("forced host devices" in note for note in result.notes)
