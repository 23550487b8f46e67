"""Best-fit-decreasing packing, segment ids, restarting positions and the labels at boundaries."""

from __future__ import annotations

import numpy as np
import pytest

from jaxlean.errors import DataError
from jaxlean.models.lm.data import (
    IGNORE_INDEX,
    Example,
    best_fit_decreasing,
    collate,
    pack,
    packing_efficiency,
)


def example(ids, where=""):
    ids = np.asarray(ids, np.int32)
    return Example(ids, ids.copy(), where)


def long_tailed_lengths(count: int, seq_length: int, seed: int = 0) -> np.ndarray:
    """Lengths of a chat-like mix: mostly short, a long tail, a few over ``seq_length``."""
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(np.log(seq_length / 8), 1.0, count).astype(int), 1,
                   2 * seq_length)


def test_trls_documented_example_packs_the_same():
    # trl.pack_dataset's docstring: [[1..5], [6, 7], [8, 9, 10], [11]] at seq_length=4 with
    # "bfd" gives rows [1, 2, 3, 4], [8, 9, 10, 11], [6, 7] (the first truncated).
    packed = pack([example([1, 2, 3, 4, 5]), example([6, 7]), example([8, 9, 10]),
                   example([11])], seq_length=4)
    rows = [np.concatenate([packed.examples[i].input_ids for i in row]).tolist()
            for row in packed.rows]
    assert rows == [[1, 2, 3, 4], [8, 9, 10, 11], [6, 7]]
    assert packed.efficiency == pytest.approx(10 / 12)


def test_best_fit_places_every_item_once_within_capacity():
    lengths = long_tailed_lengths(3000, 512).clip(max=512)
    bins = best_fit_decreasing(lengths, 512)
    assert sorted(i for b in bins for i in b) == list(range(len(lengths)))
    assert max(int(lengths[b].sum()) for b in bins) <= 512
    lower_bound = -(-int(lengths.sum()) // 512)  # no packing can use fewer rows
    assert len(bins) <= lower_bound * 1.02
    # best fit: the item goes to the bin it fills most tightly, not the first that fits
    # (first fit would put the 1 beside the 8: [[2, 3], [0, 4], [1]])
    assert best_fit_decreasing([5, 3, 8, 1, 4], 10) == [[2], [0, 4, 3], [1]]
    with pytest.raises(DataError, match=r"item 1 has length 9, outside 1\.\.8"):
        best_fit_decreasing([3, 9], 8)


def test_packing_is_far_tighter_than_padding_on_a_long_tailed_mix():
    seq_length = 1024
    lengths = long_tailed_lengths(5000, seq_length, seed=1)
    packed = pack([example(np.ones(n)) for n in lengths], seq_length)
    padded = packing_efficiency(lengths.clip(max=seq_length), len(lengths), seq_length)
    assert packed.efficiency > 0.97 > 0.3 > padded


def test_collate_restarts_positions_and_masks_each_segment_start():
    examples = [example([5, 6, 7], "a"), example([8, 9], "b"), example([4], "c")]
    batch = collate(examples, [[0, 1], [2], []], 6, pad_id=0, packed=True)
    np.testing.assert_array_equal(batch["input_ids"],
                                  [[5, 6, 7, 8, 9, 0], [4, 0, 0, 0, 0, 0], [0] * 6])
    np.testing.assert_array_equal(batch["segment_ids"],
                                  [[1, 1, 1, 2, 2, 0], [1, 0, 0, 0, 0, 0], [0] * 6])
    np.testing.assert_array_equal(batch["positions"],
                                  [[0, 1, 2, 0, 1, 0], [0] * 6, [0] * 6])
    x = IGNORE_INDEX
    np.testing.assert_array_equal(batch["labels"], [[x, 6, 7, x, 9, x], [x] * 6, [x] * 6])
    assert "attention_mask" not in batch  # packed: segment_ids keep the sequences apart
    padded = collate(examples, [[0], [1]], 4, pad_id=0, packed=False)
    np.testing.assert_array_equal(padded["attention_mask"], [[1, 1, 1, 0], [1, 1, 0, 0]])
    assert "segment_ids" not in padded  # one example per row: Hugging Face's three arrays
    np.testing.assert_array_equal(padded["labels"], [[5, 6, 7, x], [8, 9, x, x]])
    with pytest.raises(DataError, match="a: row 0 needs 5 tokens but seq_length=4"):
        collate(examples, [[1, 0]], 4, pad_id=0, packed=True)
