"""The ``tensor`` benchmark in quick mode: its child process, report and targets.

Quick mode compiles and runs the loss + gradient at tensor = 1 and 4 (2 compiles): the
per-device temp memory at tensor = 4 must be at most 0.35x that at tensor = 1, with the
loss and gradient norm equal, as in the full run.
"""

import pytest

from jaxlean.bench import BenchContext, available
from jaxlean.bench.tensor import TEMP_RATIO_GOAL, tensor_sizes


@pytest.mark.slow
def test_tensor_quick_meets_the_memory_goal_with_equal_results():
    steps = []
    result = available()["tensor"].run(BenchContext(quick=True, step=steps.append))
    assert steps[0].startswith("child process") and "tensor=4: compile and run" in steps
    assert tensor_sizes(quick=True) == (1, 4)
    temp = {row.case: row for row in result.comparisons if row.metric == "temp bytes/device"}
    assert set(temp) == {"tensor=1", "tensor=4"}
    assert temp["tensor=4"].ratio <= TEMP_RATIO_GOAL
    assert len(result.targets) == 2 and all(target.passed for target in result.targets), [
        (t.description, t.value) for t in result.targets]
    assert any("forced host devices" in note for note in result.notes)
