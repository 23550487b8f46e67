"""``save_pretrained`` writes back every ``config.json`` / ``generation_config.json`` field that
``load_pretrained`` read, unless jaxlean changed it (issue 42: max_position_embeddings, sampling
defaults)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

from jaxlean.models.lm.hf import load_pretrained, save_pretrained
from jaxlean.models.lm.hf_config import GenerationSettings
from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.transformer import Transformer

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLING = {"bos_token_id": 1, "eos_token_id": [2, 3], "pad_token_id": 0, "do_sample": True,
            "temperature": 0.6, "top_p": 0.9, "max_length": 64,
            "transformers_version": "5.23.0"}


def source(tmp_path: Path, family: str = "llama", layout: str = "5.x") -> Path:
    """A copy of the fixture ``family`` with a ``generation_config.json`` of sampling defaults."""
    folder = tmp_path / f"{family}-{layout}"
    shutil.copytree(FIXTURES / family, folder)
    if layout == "4.x":
        shutil.copy(folder / "config_4x.json", folder / "config.json")
    (folder / "generation_config.json").write_text(json.dumps(SAMPLING, indent=2))
    return folder


def fields(directory: Path, name: str) -> dict:
    return json.loads((directory / name).read_text())


def assert_kept(original: dict, written: dict, changed: dict) -> None:
    """Every field of ``original`` is in ``written`` with its value, except those in ``changed``."""
    for key, value in original.items():
        assert key in written, f"{key} was dropped"
        assert written[key] == changed.get(key, value), key
    assert {k: written[k] for k in changed} == changed


@pytest.mark.parametrize("family, layout", [("llama", "5.x"), ("llama", "4.x"),
                                            ("qwen3_tied", "4.x"), ("mistral", "5.x")])
def test_a_loaded_checkpoint_saves_every_field_it_was_read_with(tmp_path, family, layout):
    folder = source(tmp_path, family, layout)
    model, _, generation = load_pretrained(folder, progress=False)
    save_pretrained(model, tmp_path / "out")
    assert_kept(fields(folder, "config.json"), fields(tmp_path / "out", "config.json"), {})
    assert fields(tmp_path / "out", "generation_config.json") == SAMPLING
    assert fields(tmp_path / "out", "config.json")["max_position_embeddings"] == 64
    # The ids handed back unchanged keep the fields as written (eos 2 stays 2, not [2]).
    save_pretrained(model, tmp_path / "ids", generation=generation)
    assert_kept(fields(folder, "config.json"), fields(tmp_path / "ids", "config.json"), {})
    assert fields(tmp_path / "ids", "generation_config.json") == SAMPLING


def test_fields_survive_options_adapters_and_merging_and_changes_are_written(tmp_path):
    folder = source(tmp_path)
    model, config, generation = load_pretrained(folder, dtype=jnp.bfloat16, progress=False)
    model = add_lora(model.with_options(remat="full"), rank=2, key=jax.random.key(1))
    save_pretrained(model, tmp_path / "out", merge_adapter=0,
                    generation=generation._replace(eos_ids=(5,)))
    assert_kept(fields(folder, "config.json"), fields(tmp_path / "out", "config.json"),
                {"dtype": "bfloat16", "eos_token_id": [5]})
    assert_kept(SAMPLING, fields(tmp_path / "out", "generation_config.json"),
                {"eos_token_id": [5]})
    _, again_config, settings = load_pretrained(tmp_path / "out", progress=False)
    assert again_config == config and settings == GenerationSettings((5,), 0, 1)


def test_a_composite_checkpoint_saves_its_language_models_fields(tmp_path):
    folder = tmp_path / "llava"
    shutil.copytree(FIXTURES / "composite" / "llava", folder)
    model, config, _ = load_pretrained(folder, progress=False)
    save_pretrained(model, tmp_path / "out")
    written = fields(tmp_path / "out", "config.json")
    assert_kept(fields(folder, "config.json")["text_config"], written, {})
    assert written["architectures"] == ["LlamaForCausalLM"] and "vision_config" not in written
    assert load_pretrained(tmp_path / "out", progress=False)[1] == config


def test_a_model_of_another_architecture_keeps_nothing_of_the_source(tmp_path):
    folder = source(tmp_path)
    _, config, _ = load_pretrained(folder, progress=False)
    other = Transformer(config.__class__(**{**config.__dict__, "num_layers": 1}),
                        key=jax.random.key(0))
    save_pretrained(other, tmp_path / "out")
    written = fields(tmp_path / "out", "config.json")
    assert "max_position_embeddings" not in written and written["num_hidden_layers"] == 1
    assert not (tmp_path / "out" / "generation_config.json").exists()


def test_two_sources_of_one_architecture_each_keep_their_own_through_options_and_jit(tmp_path):
    first = source(tmp_path)
    second = tmp_path / "second"
    shutil.copytree(first, second)
    hf = fields(second, "config.json")
    (second / "config.json").write_text(json.dumps({**hf, "max_position_embeddings": 128}))
    model, _, _ = load_pretrained(first, progress=False)
    other, _, _ = load_pretrained(second, progress=False)
    same_step = eqx.filter_jit(lambda m: jax.tree.map(lambda x: x, m))  # one trace per source
    for loaded, length in [(model, 64), (other, 128)]:
        for copy in (loaded, loaded.with_options(remat="full"), same_step(loaded)):
            save_pretrained(copy, tmp_path / "each")
            assert fields(tmp_path / "each", "config.json")["max_position_embeddings"] == length
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        save_pretrained(model.with_options(remat="full"), tmp_path / "named",
                        tokenizer_from=_with_tokenizer(second))
    assert fields(tmp_path / "named", "config.json")["max_position_embeddings"] == 128


def _with_tokenizer(folder: Path) -> Path:
    (folder / "tokenizer.json").write_text("{}")
    return folder
