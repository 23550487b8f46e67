"""The rollout benchmark's plan and its same-result check, without running the model."""

import numpy as np
import pytest

from jaxlean.bench import available
from jaxlean.bench._measure import SidesDisagreeError
from jaxlean.bench.rollout import BATCH, PROMPTS, _check_same, expected_compiles, workload
from jaxlean.models.lm.generate import Rollout


def test_workload_mixes_lengths_and_buckets_cut_the_compiles():
    assert {"rollout", "grpo"} <= set(available())
    calls = workload(quick=True, vocab=512)
    assert sum(len(prompts) for prompts, _ in calls) == PROMPTS
    assert all(len(prompts) == BATCH for prompts, _ in calls)
    assert len({len(p) for prompts, _ in calls for p in prompts}) > 20
    assert expected_compiles(calls, "exact shapes") == len(calls)
    assert 1 < expected_compiles(calls, "buckets") < len(calls)


def test_sides_that_differ_are_refused():
    tokens = np.arange(8, dtype=np.int32).reshape(2, 4)
    a = Rollout(tokens, np.zeros((2, 4), np.float32), np.array([4, 2]), np.zeros(2, np.int32),
                tokens, tokens > 0)
    _check_same([a], [a._replace(tokens=tokens.copy())])
    changed = tokens.copy()
    changed[1, 1] += 1
    with pytest.raises(SidesDisagreeError, match="call 0 row 1: greedy tokens"):
        _check_same([a], [a._replace(tokens=changed)])
    changed[1, 1] -= 1
    changed[1, 3] += 1  # past the row's length: not compared
    _check_same([a], [a._replace(tokens=changed)])
