"""A tiny model directory built here with the ``tokenizers`` library: no download."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

WORDS = ["what", "is", "two", "plus", "three", "five", "the", "sky", "blue", "ok", "yes", "no",
         "hello", "world", "one", "four", "six", "seven", "a", "b", "c", "d", "e"]
SPECIALS = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>"]
# ChatML-like, with the {% generation %} markers transformers turns into assistant masks.
TEMPLATE = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} "
    "{% if m['role'] == 'assistant' %}{% generation %}{{ m['content'] }} <|im_end|>"
    "{% endgeneration %}{% else %}{{ m['content'] }} <|im_end|>{% endif %} {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}")


def write_tokenizer(directory: Path, template: str | None = TEMPLATE) -> Path:
    """A word-level tokenizer (``tokenizer.json``) and its ``tokenizer_config.json``."""
    tokenizers = pytest.importorskip("tokenizers")
    directory.mkdir(parents=True, exist_ok=True)
    vocab = {w: i for i, w in enumerate([*SPECIALS, "user", "assistant", "system", *WORDS])}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(SPECIALS)
    tok.save(str(directory / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
              "pad_token": "<pad>", "unk_token": "<unk>", "model_max_length": 512}
    if template is not None:
        config["chat_template"] = template
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    return directory


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    return write_tokenizer(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def tokenizer(model_dir):
    pytest.importorskip("transformers")
    from jaxlean.models.lm.data import load_tokenizer
    return load_tokenizer(model_dir)
