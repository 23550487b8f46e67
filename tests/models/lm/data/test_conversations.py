"""input_ids and labels as TRL's SFTTrainer prepares them, from each record format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxlean.errors import DataError
from jaxlean.models.lm.data import IGNORE_INDEX, load_tokenizer, tokenize_records
from tests.models.lm.data.conftest import write_tokenizer

USER = {"role": "user", "content": "what is two plus three"}
REPLY = {"role": "assistant", "content": "five"}
CHAT = {"messages": [USER, REPLY, {"role": "user", "content": "the sky"},
                     {"role": "assistant", "content": "blue ok"}]}


def tokens(tokenizer, ids):
    return tokenizer.hf.convert_ids_to_tokens([int(i) for i in ids])


def learned(tokenizer, example):
    return tokens(tokenizer, example.labels[example.labels != IGNORE_INDEX])


def test_conversation_labels_all_tokens_or_only_the_assistants(tokenizer):
    [full] = tokenize_records([CHAT], tokenizer)
    ref = tokenizer.hf.apply_chat_template(CHAT["messages"], tokenize=True, return_dict=True,
                                           return_assistant_tokens_mask=True)
    assert full.input_ids.tolist() == list(ref["input_ids"])
    assert np.array_equal(full.labels, full.input_ids)
    [only] = tokenize_records([CHAT], tokenizer, assistant_only_loss=True)
    assert np.array_equal(only.input_ids, full.input_ids)
    assert np.array_equal(only.labels != IGNORE_INDEX, np.asarray(ref["assistant_masks"], bool))
    assert learned(tokenizer, only) == ["five", "<|im_end|>", "blue", "ok", "<|im_end|>"]
    assert only.where == "dataset[0]"


def test_conversational_prompt_completion_learns_the_completion(tokenizer):
    record = {"prompt": [USER], "completion": [REPLY]}
    [example] = tokenize_records([record], tokenizer)
    assert tokens(tokenizer, example.input_ids)[-3:] == ["assistant", "five", "<|im_end|>"]
    assert learned(tokenizer, example) == ["five", "<|im_end|>"]
    [everything] = tokenize_records([record], tokenizer, completion_only_loss=False)
    assert np.array_equal(everything.labels, everything.input_ids)
    [both] = tokenize_records([record], tokenizer, assistant_only_loss=True)
    assert learned(tokenizer, both) == ["five", "<|im_end|>"]


def test_plain_text_gets_the_eos_token_as_trl_appends_it(tokenizer):
    [pc, text, already] = tokenize_records(
        [{"prompt": "hello ", "completion": "world"}, {"text": "blue sky"},
         {"text": "blue sky <|im_end|>"}], tokenizer)
    assert tokens(tokenizer, pc.input_ids) == ["hello", "world", "<|im_end|>"]
    assert learned(tokenizer, pc) == ["world", "<|im_end|>"]
    assert tokens(tokenizer, text.input_ids) == ["blue", "sky", "<|im_end|>"]
    assert np.array_equal(already.input_ids, text.input_ids)
    assert np.array_equal(text.labels, text.input_ids)
    with pytest.warns(UserWarning, match=r"dataset\[0\]: the tokenized prompt is not a prefix"):
        tokenize_records([{"prompt": "hello", "completion": "world"}], tokenizer)


def test_max_length_keeps_the_start_and_drops_examples_left_unlabelled(tokenizer):
    records = [CHAT, {"prompt": [USER], "completion": [REPLY]}]
    kept = tokenize_records(records, tokenizer, max_length=6)
    assert len(kept) == 1 and kept[0].where == "dataset[0]" and len(kept[0]) == 6
    whole = tokenize_records(records[:1], tokenizer)[0]
    assert np.array_equal(kept[0].input_ids, whole.input_ids[:6])


def test_reads_files_and_names_the_line_of_a_bad_record(tokenizer, tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(CHAT) + "\n" + json.dumps({"messages": [USER]}) + "\n")
    assert len(tokenize_records(path, tokenizer)) == 2
    with pytest.raises(DataError, match=r"train\.jsonl line 2: assistant_only_loss=True but "
                                        r"no token is marked"):
        tokenize_records(path, tokenizer, assistant_only_loss=True)
    with pytest.raises(DataError, match=r"dataset\[0\]: assistant_only_loss=True needs "
                                        r"conversational records"):
        tokenize_records([{"text": "a"}], tokenizer, assistant_only_loss=True)


def test_a_template_without_generation_markers_is_refused_for_assistant_only(tmp_path):
    pytest.importorskip("transformers")
    plain = ("{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} "
             "<|im_end|> {% endfor %}")
    tokenizer = load_tokenizer(write_tokenizer(tmp_path / "plain", template=plain))
    with pytest.raises(DataError, match=r"dataset\[0\].*\{% generation %\}"):
        tokenize_records([CHAT], tokenizer, assistant_only_loss=True)
