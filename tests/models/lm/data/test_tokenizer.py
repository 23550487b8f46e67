"""The model directory's tokenizer and chat template, applied as transformers applies them."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.models.lm.data import load_tokenizer
from tests.models.lm.data.conftest import write_tokenizer

CHAT = [{"role": "user", "content": "what is two plus three"},
        {"role": "assistant", "content": "five"},
        {"role": "user", "content": "the sky"},
        {"role": "assistant", "content": "blue ok"}]


def test_encode_decode_round_trip(tokenizer):
    ids = tokenizer.encode("hello world two")
    assert ids == tokenizer.hf("hello world two")["input_ids"] and len(ids) == 3
    assert tokenizer.decode(ids) == "hello world two"
    assert tokenizer.decode(np.asarray([*ids, tokenizer.eos_token_id])) == "hello world two"
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token_id == 0


def test_chat_template_and_assistant_mask_as_transformers_gives_them(tokenizer):
    out = tokenizer.apply_chat_template(CHAT, assistant_mask=True)
    ref = tokenizer.hf.apply_chat_template(CHAT, tokenize=True, return_dict=True,
                                           return_assistant_tokens_mask=True)
    assert out["input_ids"] == list(ref["input_ids"])
    assert out["assistant_masks"] == list(ref["assistant_masks"])
    marked = [t for t, m in zip(tokenizer.hf.convert_ids_to_tokens(out["input_ids"]),
                                out["assistant_masks"], strict=True) if m]
    assert marked == ["five", "<|im_end|>", "blue", "ok", "<|im_end|>"]


def test_generation_prompt_ends_with_the_assistant_header(tokenizer):
    text = tokenizer.apply_chat_template(CHAT[:1], add_generation_prompt=True, tokenize=False)
    assert text.endswith("<|im_start|> assistant ")
    ids = tokenizer.apply_chat_template(CHAT[:1], add_generation_prompt=True)["input_ids"]
    assert tokenizer.hf.convert_ids_to_tokens(ids[-2:]) == ["<|im_start|>", "assistant"]


def test_decode_batch_cuts_each_row_at_its_length(tokenizer):
    rows = np.asarray([tokenizer.encode("blue ok yes"), tokenizer.encode("five no no")])
    assert tokenizer.decode_batch(rows, [2, 1]) == ["blue ok", "five"]
    rollout = SimpleNamespace(tokens=rows, lengths=np.asarray([3, 2]))
    assert tokenizer.decode_batch(rollout) == ["blue ok yes", "five no"]


def test_missing_paths_and_template_are_refused_by_name(tmp_path, model_dir):
    with pytest.raises(CheckpointError, match="no such directory"):
        load_tokenizer(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match=r"neither tokenizer\.json"):
        load_tokenizer(tmp_path / "empty")
    with pytest.raises(CheckpointError, match="is a file"):
        load_tokenizer(model_dir / "tokenizer.json")
    pytest.importorskip("transformers")
    bare = load_tokenizer(write_tokenizer(tmp_path / "bare", template=None))
    with pytest.raises(ConfigError, match="no chat template"):
        bare.apply_chat_template(CHAT)


def test_a_missing_extra_is_refused_with_the_install_line(tmp_path, monkeypatch):
    (tmp_path / "tokenizer.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ModuleNotFoundError, match=r"load_tokenizer needs the 'transformers'.*"
                                                  r"pip install \"jaxlean\[text\]\""):
        load_tokenizer(tmp_path)


def test_importing_the_data_package_imports_no_text_library_nor_jax():
    code = ("import sys, jaxlean.models.lm.data as d; d.synthetic_batch(0, 1, 2, 3); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'transformers', 'tokenizers', 'datasets', 'pyarrow', 'jinja2', 'jax'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
