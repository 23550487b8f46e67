"""Preference records (prompt / chosen / rejected) to DPO batches, TRL's rules (issue 50:
``tokenize_records`` refused these records and users wrote TRL's tokenization by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from jaxlean.errors import ConfigError, DataError
from jaxlean.models.lm.data import (
    IGNORE_INDEX,
    PreferenceBatches,
    collate_preferences,
    load_tokenizer,
    tokenize_preferences,
)


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    pytest.importorskip("transformers")
    return load_tokenizer(model_dir)


def test_plain_pairs_get_eos_and_the_prompt_is_not_learned(tokenizer):
    pairs = [{"prompt": "what is two plus three", "chosen": " five", "rejected": " six no"}]
    (example,) = tokenize_preferences(pairs, tokenizer)
    eos = tokenizer.eos_token_id
    prompt = tokenizer.encode("what is two plus three")
    np.testing.assert_array_equal(example.prompt_ids, prompt)
    np.testing.assert_array_equal(
        example.chosen_ids, [*tokenizer.encode("what is two plus three five")[len(prompt):], eos])
    assert example.rejected_ids[-1] == eos and len(example.rejected_ids) == 3
    batch = collate_preferences([example], tokenizer.pad_token_id)
    assert batch["input_ids"].shape == (2, len(prompt) + 3)  # chosen row, then rejected row
    x = IGNORE_INDEX
    np.testing.assert_array_equal(batch["labels"][0], [x] * len(prompt)
                                  + list(example.chosen_ids) + [x])
    np.testing.assert_array_equal(batch["attention_mask"][0], [1] * (len(prompt) + 2) + [0])


def test_conversational_pairs_with_an_implicit_prompt(tokenizer):
    user = {"role": "user", "content": "what is two plus three"}
    record = {"chosen": [user, {"role": "assistant", "content": "five"}],
              "rejected": [user, {"role": "assistant", "content": "six"}]}
    explicit = {"prompt": [user], "chosen": record["chosen"][1:],
                "rejected": record["rejected"][1:]}
    implicit, given = tokenize_preferences([record, explicit], tokenizer)
    prompt = tokenizer.apply_chat_template([user], add_generation_prompt=True)["input_ids"]
    full = tokenizer.apply_chat_template(record["chosen"])["input_ids"]
    for example in (implicit, given):
        np.testing.assert_array_equal(example.prompt_ids, prompt)
        np.testing.assert_array_equal(example.chosen_ids, full[len(prompt):])


def test_truncation_as_trl(tokenizer):
    pairs = [{"prompt": "a b c d e", "chosen": " yes", "rejected": " no"},
             {"prompt": "a", "chosen": " one two three four", "rejected": " no"}]
    kept = tokenize_preferences(pairs, tokenizer, max_length=5)  # the first prompt fills it
    assert len(kept) == 1 and len(kept[0].prompt_ids) == 1
    assert len(tokenize_preferences(pairs, tokenizer, max_length=5,
                                    truncation_mode="keep_end")) == 2
    start = collate_preferences(kept, 0, max_length=3)
    end = collate_preferences(kept, 0, max_length=3, truncation_mode="keep_end")
    np.testing.assert_array_equal(start["input_ids"][0], np.r_[kept[0].prompt_ids,
                                                               kept[0].chosen_ids][:3])
    np.testing.assert_array_equal(end["input_ids"][0], kept[0].chosen_ids[-3:])
    with pytest.raises(ConfigError, match="truncation_mode"):
        tokenize_preferences(pairs, tokenizer, truncation_mode="left")
    with pytest.raises(DataError, match="seq_length"):
        collate_preferences(kept, 0, seq_length=2)


def test_bad_records_are_named(tokenizer):
    with pytest.raises(DataError, match=r"dataset\[0\].*'rejected'"):
        tokenize_preferences([{"prompt": "a", "chosen": "b"}], tokenizer)
    with pytest.raises(DataError, match="no 'prompt'"):
        tokenize_preferences([{"chosen": "a b", "rejected": "a c"}], tokenizer)


def test_preference_batches_have_one_shape(tokenizer):
    pairs = [{"prompt": "what is " + w, "chosen": " yes", "rejected": " no no"}
             for w in ("one", "two", "three")]
    batches = PreferenceBatches(tokenize_preferences(pairs, tokenizer), batch_size=2,
                                max_length=8, pad_id=tokenizer.pad_token_id, seed=0)
    first, second = next(batches), next(batches)
    assert first["input_ids"].shape == second["input_ids"].shape == (4, 8)
    assert (second["labels"][[1, 3]] == IGNORE_INDEX).all()  # the filler pair learns nothing
    assert batches.state.epoch == 1
