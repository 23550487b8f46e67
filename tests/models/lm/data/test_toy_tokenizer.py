"""The examples' toy tokenizer: a real BPE with the ChatML template, read back by transformers."""

from __future__ import annotations

import pytest

from jaxlean.models.lm.data import load_tokenizer
from jaxlean.models.lm.data.toy_tokenizer import CHATML_TEMPLATE, write_toy_tokenizer

pytest.importorskip("transformers")
CORPUS = [f"What is {a} + {b}?" for a in range(5) for b in range(5)] + [
    "user\n", "assistant\n", "0123456789"]


@pytest.mark.parametrize("all_bytes", [True, False])
def test_chat_round_trip_and_assistant_mask(tmp_path, all_bytes):
    tokenizer = load_tokenizer(write_toy_tokenizer(tmp_path, CORPUS, all_bytes=all_bytes,
                                                   vocab_size=320 if all_bytes else 48))
    assert tokenizer.chat_template == CHATML_TEMPLATE
    assert (len(tokenizer) > 256) == all_bytes and len(tokenizer) <= (320 if all_bytes else 48)
    messages = [{"role": "user", "content": "What is 3 + 4?"},
                {"role": "assistant", "content": "7"}]
    out = tokenizer.apply_chat_template(messages, assistant_mask=True)
    text = tokenizer.decode(out["input_ids"], skip_special_tokens=False)
    assert text == ("<|im_start|>user\nWhat is 3 + 4?<|im_end|>\n"
                    "<|im_start|>assistant\n7<|im_end|>\n")
    learned = [i for i, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    assert tokenizer.decode(learned, skip_special_tokens=False) == "7<|im_end|>"
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.decode(tokenizer.encode("12 + 30")) == "12 + 30"
    assert len(tokenizer.encode("1234")) == 4  # digits one by one


def test_all_bytes_encodes_unseen_characters(tmp_path):
    tokenizer = load_tokenizer(write_toy_tokenizer(tmp_path, CORPUS))
    assert tokenizer.decode(tokenizer.encode("Zürich!")) == "Zürich!"
