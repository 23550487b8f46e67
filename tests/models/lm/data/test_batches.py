"""Batches: the same from the same seed, every row once per epoch, resumable mid-epoch."""

from __future__ import annotations

import numpy as np
import pytest

from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.data import IGNORE_INDEX, Batches, BatchState, Example


def examples(count=10, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        ids = rng.integers(1, 50, int(rng.integers(1, 7))).astype(np.int32)
        ids[0] = 100 + i  # tags the example
        out.append(Example(ids, ids.copy(), f"record {i}"))
    return out


def tags(batch):
    ids = batch["input_ids"]
    return sorted(int(t) - 100 for t in ids[ids >= 100])


def epoch(batches, steps):
    return [tags(next(batches)) for _ in range(steps)]


@pytest.mark.parametrize("packing", [False, True])
def test_every_example_once_per_epoch_and_the_same_from_the_same_seed(packing):
    data = examples(10)
    run = Batches(data, 3, 8, pad_id=0, packing=packing, seed=1)
    steps = run.steps_per_epoch
    first, second = epoch(run, steps), epoch(run, steps)
    assert sorted(t for b in first for t in b) == list(range(10))
    assert sorted(t for b in second for t in b) == list(range(10))
    assert first != second  # a new order each epoch
    assert epoch(Batches(data, 3, 8, pad_id=0, packing=packing, seed=1), steps) == first
    assert epoch(Batches(data, 3, 8, pad_id=0, packing=packing, seed=2), steps) != first
    assert run.state == BatchState(epoch=2, position=0, seed=1)


def test_resuming_mid_epoch_gives_the_very_next_batches():
    data = examples(10)
    run = Batches(data, 4, 8, pad_id=0, seed=3)
    reference = [next(run) for _ in range(6)]
    run = Batches(data, 4, 8, pad_id=0, seed=3)
    next(run)
    saved = run.state.to_dict()
    assert saved == {"epoch": 0, "position": 4, "seed": 3}
    resumed = Batches(data, 4, 8, pad_id=0, state=saved)
    for expected in reference[1:]:
        got = next(resumed)
        for key in expected:
            np.testing.assert_array_equal(got[key], expected[key])


def test_the_short_last_batch_is_filled_with_empty_rows_or_dropped():
    data = examples(10)
    run = Batches(data, 4, 8, pad_id=0, shuffle=False, epochs=1)
    batches = list(run)
    assert [b["input_ids"].shape for b in batches] == [(4, 8)] * 3
    last = batches[-1]
    assert tags(last) == [8, 9]
    assert (last["labels"][2:] == IGNORE_INDEX).all() and not last["attention_mask"][2:].any()
    dropped = list(Batches(data, 4, 8, pad_id=0, shuffle=False, epochs=2, drop_last=True))
    assert [tags(b) for b in dropped] == [[0, 1, 2, 3], [4, 5, 6, 7]] * 2


def test_bad_states_and_long_examples_are_refused_by_name():
    data = examples(10)
    with pytest.raises(ConfigError, match="seed=4 but the state to resume was saved with seed=3"):
        Batches(data, 4, 8, pad_id=0, seed=4, state={"epoch": 0, "position": 4, "seed": 3})
    with pytest.raises(DataError, match=r"state\.position=12 but an epoch has 10 rows"):
        Batches(data, 4, 8, pad_id=0, state={"epoch": 0, "position": 12, "seed": 0})
    with pytest.raises(ConfigError, match=r"unknown keys \['step'\]"):
        Batches(data, 4, 8, pad_id=0, state={"step": 1})
    long = [*data, Example(np.ones(9, np.int32), np.ones(9, np.int32), "train.jsonl line 11")]
    with pytest.raises(DataError, match=r"train\.jsonl line 11 has 9 tokens > seq_length=8"):
        Batches(long, 4, 8, pad_id=0)
    assert Batches(long, 4, 8, pad_id=0, packing=True).efficiency > 0.5
