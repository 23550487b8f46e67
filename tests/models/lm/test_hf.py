"""Hugging Face safetensors round trips and the errors that name the bad tensor."""

from __future__ import annotations

import json
import re
import shutil

import equinox as eqx
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.models.lm.hf import (
    config_from_hf,
    load_pretrained,
    load_safetensors,
    save_pretrained,
    save_safetensors,
)
from jaxlean.models.lm.hf_config import GenerationSettings, generation_settings
from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.peft import merge_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

QWEN = TransformerConfig(vocab_size=29, hidden_size=16, intermediate_size=24, num_layers=3,
                         num_heads=4, num_kv_heads=2, head_dim=8, qk_norm=True,
                         tie_embeddings=True)
LLAMA = TransformerConfig(vocab_size=29, hidden_size=16, intermediate_size=24, num_layers=2,
                          num_heads=4, num_kv_heads=1)


@pytest.mark.parametrize("config", [QWEN, LLAMA], ids=["qwen3-tied", "llama"])
def test_round_trip_with_hugging_face_layout(tmp_path, config):
    model = Transformer(config, key=jax.random.key(0))
    path = tmp_path / "model.safetensors"
    save_safetensors(model, path)
    raw = load_file(str(path))
    # Hugging Face keeps one [out, in] tensor per layer.
    q = raw["model.layers.1.self_attn.q_proj.weight"]
    assert q.shape == (config.num_heads * config.head_dim, config.hidden_size)
    np.testing.assert_array_equal(q, np.asarray(model.layers.attn.q_proj.weight[1]).T)
    assert ("lm_head.weight" in raw) == (not config.tie_embeddings)
    assert ("model.layers.0.self_attn.q_norm.weight" in raw) == config.qk_norm
    loaded = load_safetensors(path, config)
    for got, want in zip(jax.tree.leaves(loaded), jax.tree.leaves(model), strict=True):
        np.testing.assert_array_equal(got, want)
    assert jax.tree.structure(loaded) == jax.tree.structure(model)


def test_sharded_directory_and_bfloat16(tmp_path):
    model = Transformer(LLAMA, key=jax.random.key(1), dtype=jnp.bfloat16)
    save_safetensors(model, tmp_path / "all.safetensors")
    tensors = load_file(str(tmp_path / "all.safetensors"))
    assert tensors["model.norm.weight"].dtype == ml_dtypes.bfloat16
    (tmp_path / "all.safetensors").unlink()
    names = sorted(tensors)
    save_file({n: tensors[n] for n in names[::2]}, str(tmp_path / "model-00001.safetensors"))
    save_file({n: tensors[n] for n in names[1::2]}, str(tmp_path / "model-00002.safetensors"))
    loaded = load_safetensors(tmp_path, LLAMA, dtype=jnp.float32)
    assert loaded.embed.dtype == jnp.float32
    np.testing.assert_array_equal(loaded.layers.mlp.down_proj.weight,
                                  model.layers.mlp.down_proj.weight.astype(jnp.float32))


@pytest.fixture
def llama_file(tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors(Transformer(LLAMA, key=jax.random.key(2)), path)
    return path, load_file(str(path))


def test_missing_tensor_is_named(llama_file):
    path, tensors = llama_file
    del tensors["model.layers.1.mlp.up_proj.weight"]
    save_file(tensors, str(path))
    with pytest.raises(CheckpointError,
                       match=r"missing tensor 'model.layers.1.mlp.up_proj.weight' .*\[24, 16\]"):
        load_safetensors(path, LLAMA)


def test_misshaped_tensor_is_named(llama_file):
    path, tensors = llama_file
    tensors["model.layers.0.self_attn.k_proj.weight"] = np.zeros((8, 16), np.float32)
    save_file(tensors, str(path))
    with pytest.raises(CheckpointError, match=r"'model.layers.0.self_attn.k_proj.weight' has "
                                              r"shape \[8, 16\], expected \[4, 16\]"):
        load_safetensors(path, LLAMA)


def test_layers_of_mixed_dtypes_need_an_explicit_dtype(llama_file):
    path, tensors = llama_file
    name = "model.layers.1.mlp.gate_proj.weight"
    tensors[name] = tensors[name].astype(ml_dtypes.bfloat16)
    save_file(tensors, str(path))
    with pytest.raises(CheckpointError, match=rf"'{name}' is bfloat16 but "
                                              r"'model\.layers\.0\.mlp\.gate_proj.weight' is "
                                              r"float32; pass dtype="):
        load_safetensors(path, LLAMA)
    loaded = load_safetensors(path, LLAMA, dtype=jnp.float32)
    np.testing.assert_array_equal(loaded.layers.mlp.gate_proj.weight[1],
                                  tensors[name].astype(np.float32).T)


def test_each_tensor_is_cast_to_the_requested_dtype(llama_file):
    path, tensors = llama_file
    loaded = load_safetensors(path, LLAMA, dtype=jnp.bfloat16)
    leaves = jax.tree.leaves(loaded)
    assert {leaf.dtype for leaf in leaves} == {jnp.dtype(jnp.bfloat16)}
    for i in range(LLAMA.num_layers):
        want = tensors[f"model.layers.{i}.self_attn.o_proj.weight"].T.astype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(loaded.layers.attn.o_proj.weight[i], want)
    np.testing.assert_array_equal(loaded.lm_head.weight,
                                  tensors["lm_head.weight"].T.astype(ml_dtypes.bfloat16))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="host buffers are adopted on CPU only")
def test_loaded_parameters_are_adopted_by_jax_without_a_copy(llama_file, monkeypatch):
    from jaxlean.models.lm import _safetensors

    filled = []

    def recording(shape, dtype):
        array = aligned(shape, dtype)
        filled.append(array)
        return array

    aligned = _safetensors.aligned_empty
    monkeypatch.setattr(_safetensors, "aligned_empty", recording)
    loaded = load_safetensors(llama_file[0], LLAMA)
    pointers = {leaf.unsafe_buffer_pointer() for leaf in jax.tree.leaves(loaded)}
    assert len(filled) == len(pointers) == 12
    assert all(array.ctypes.data % 64 == 0 for array in filled)
    assert {array.ctypes.data for array in filled} == pointers


def test_unexpected_tensor_is_named(llama_file):
    path, tensors = llama_file
    tensors["model.layers.2.input_layernorm.weight"] = np.ones(16, np.float32)
    save_file(tensors, str(path))
    with pytest.raises(CheckpointError, match=r"unexpected .*'model\.layers\.2\.input_layernorm"):
        load_safetensors(path, LLAMA)
    # A tied config ignores a stored lm_head tensor, as Hugging Face does.
    tied = TransformerConfig(**{**LLAMA.__dict__, "tie_embeddings": True})
    del tensors["model.layers.2.input_layernorm.weight"]
    save_file(tensors, str(path))
    loaded = load_safetensors(path, tied)
    assert loaded.lm_head.weight is None
    np.testing.assert_array_equal(loaded.embed, tensors["model.embed_tokens.weight"])


def test_config_from_hugging_face_json():
    config = config_from_hf({
        "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 2560,
        "intermediate_size": 9728, "num_hidden_layers": 36, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 128, "rope_theta": 1000000,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
    })
    assert config.qk_norm and config.tie_embeddings and config.group_size == 4
    assert config.head_dim == 128 and config.rope_theta == 1e6
    with pytest.raises(CheckpointError, match="'hidden_size'"):
        config_from_hf({"vocab_size": 3})
    with pytest.raises(ConfigError, match="rope_type='yarn'"):
        config_from_hf({"vocab_size": 3, "rope_scaling": {"rope_type": "yarn"}})


BASE = {"model_type": "llama", "vocab_size": 10, "hidden_size": 16, "intermediate_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 2}


@pytest.mark.parametrize("fields, named", [
    ({"model_type": "gemma"}, r"model_type='gemma' .*supported: \['llama', 'mistral', "),
    ({"hidden_act": "gelu"}, r"hidden_act='gelu' .*\['silu'\]"),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4}},
     r"rope_parameters\.rope_type='yarn' .*'llama3'"),
    ({"rope_scaling": {"type": "dynamic", "factor": 2.0}}, r"rope_scaling\.rope_type='dynamic'"),
    ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 1e4, "factor": 8.0}},
     r"rope_type='llama3' needs \['low_freq_factor'"),
    ({"attention_bias": True}, r"attention_bias=True .*\[False\]"),
    ({"mlp_bias": True}, r"mlp_bias=True"),
    ({"attention_dropout": 0.1}, r"attention_dropout=0\.1"),
    ({"model_type": "qwen3", "use_sliding_window": True}, r"use_sliding_window=True"),
    ({"model_type": "qwen2", "layer_types": ["sliding_attention"]},
     r"layer_types=\['sliding_attention'\] .*\['full_attention'\]"),
])
def test_refused_config_names_field_value_and_supported(fields, named):
    with pytest.raises(ConfigError, match=named):
        config_from_hf({**BASE, **fields})


def test_both_rope_layouts_read_the_same_theta_and_scaling():
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    old = config_from_hf({**BASE, "rope_theta": 500000.0, "rope_scaling": scaling})
    new = config_from_hf({**BASE, "rope_parameters": {**scaling, "rope_theta": 500000.0}})
    assert old == new and new.rope_theta == 500000.0 and new.rope_scaling[0] == "llama3"


def test_generation_settings_and_missing_config(tmp_path):
    (tmp_path / "config.json").write_text('{"eos_token_id": 5}')
    (tmp_path / "generation_config.json").write_text('{"eos_token_id": [7, 8], "bos_token_id": 1}')
    assert generation_settings(tmp_path, {"eos_token_id": 5}) == GenerationSettings((7, 8), None,
                                                                                    1)
    with pytest.raises(CheckpointError, match=r"no such directory '.*nothing'"):
        config_from_hf(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match=r"no config\.json in '.*empty'"):
        config_from_hf(tmp_path / "empty")


@pytest.fixture(scope="module")
def llama():
    return Transformer(LLAMA, key=jax.random.key(4))


@pytest.fixture(scope="module")
def saved_llama(tmp_path_factory, llama):
    directory = tmp_path_factory.mktemp("llama")
    save_pretrained(llama, directory)
    return directory


def test_path_errors_name_the_path_the_user_gave(tmp_path, saved_llama):
    missing = tmp_path / "not-there" / "model"
    with pytest.raises(CheckpointError, match=f"no such directory '{re.escape(str(missing))}'$"):
        load_pretrained(missing)  # a model id ("Qwen/Qwen3-0.6B"): test_hf_hub.py
    config = saved_llama / "config.json"
    holder = re.escape(str(saved_llama))
    with pytest.raises(CheckpointError, match=rf"'{re.escape(str(config))}' is a file: pass the "
                                              rf"model directory that holds it \('{holder}'\)"):
        load_pretrained(config)
    assert load_pretrained(saved_llama / "model.safetensors")[1] == LLAMA  # one file is fine


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_safetensors_file_is_named(tmp_path, saved_llama, damage):
    shutil.copytree(saved_llama, tmp_path / "model")
    file = tmp_path / "model" / "model.safetensors"
    data = file.read_bytes()
    file.write_bytes(data[:-100] if damage == "truncated" else b"not a safetensors file" * 8)
    with pytest.raises(CheckpointError, match=f"{re.escape(str(file))} is not a readable "
                                              f"safetensors file"):
        load_pretrained(tmp_path / "model")


@pytest.fixture(scope="module")
def source_checkpoint(tmp_path_factory, saved_llama):
    """A model directory as a hub download has it: tokenizer, chat templates, generation config."""
    source = tmp_path_factory.mktemp("source")
    shutil.copytree(saved_llama, source, dirs_exist_ok=True)
    files = {"tokenizer.json": '{"model": {"type": "BPE"}}\n',
             "tokenizer_config.json": '{"chat_template": "{{ messages }}", "eos_token": "<e>"}',
             "special_tokens_map.json": '{"eos_token": "<e>"}', "vocab.json": '{"a": 0}',
             "merges.txt": "#version: 0.2\na b\n", "chat_template.jinja": "{% for m in x %}",
             "generation_config.json": '{"eos_token_id": [3, 4], "temperature": 0.6}'}
    for name, text in files.items():
        (source / name).write_text(text)
    (source / "additional_chat_templates").mkdir()
    (source / "additional_chat_templates" / "tool_use.jinja").write_text("{{ tools }}")
    return source, files


def test_save_pretrained_copies_tokenizer_and_chat_template_files_unchanged(
        tmp_path, source_checkpoint, llama):
    source, files = source_checkpoint
    model = llama
    save_pretrained(model, tmp_path / "out", tokenizer_from=source)
    for name in files:
        assert (tmp_path / "out" / name).read_bytes() == (source / name).read_bytes(), name
    assert (tmp_path / "out" / "additional_chat_templates" / "tool_use.jinja").is_file()
    # Settings given explicitly replace the source's ids and keep its other fields.
    save_pretrained(model, tmp_path / "ids", tokenizer_from=source,
                    generation=GenerationSettings((7,), 0, 1))
    written = json.loads((tmp_path / "ids" / "generation_config.json").read_text())
    assert written == {"eos_token_id": [7], "temperature": 0.6, "pad_token_id": 0,
                       "bos_token_id": 1}
    _, _, loaded = load_pretrained(tmp_path / "ids")
    assert loaded == GenerationSettings((7,), 0, 1)


def test_save_pretrained_builds_generation_config_from_the_source_config(tmp_path, llama,
                                                                         saved_llama):
    source = tmp_path / "source"
    shutil.copytree(saved_llama, source)
    (source / "tokenizer.json").write_text("{}")
    hf = json.loads((source / "config.json").read_text())
    (source / "config.json").write_text(json.dumps({**hf, "eos_token_id": 2,
                                                    "bos_token_id": 1}))
    save_pretrained(llama, tmp_path / "out", tokenizer_from=source)
    written = json.loads((tmp_path / "out" / "generation_config.json").read_text())
    assert written == {"eos_token_id": [2], "pad_token_id": None, "bos_token_id": 1}


def test_tokenizer_source_without_tokenizer_files_is_named(tmp_path, llama, saved_llama):
    model = llama
    with pytest.raises(CheckpointError, match=rf"tokenizer_from='{re.escape(str(saved_llama))}' "
                                              r"holds no tokenizer file"):
        save_pretrained(model, tmp_path / "out", tokenizer_from=saved_llama)
    with pytest.raises(CheckpointError, match=r"no such directory 'Qwen/Qwen3-0\.6B' .*hub id"):
        save_pretrained(model, tmp_path / "out", tokenizer_from="Qwen/Qwen3-0.6B")


def test_attached_adapters_are_merged_or_refused_by_name(tmp_path, llama):
    base = llama
    model = add_lora(base, rank=2, num_adapters=2, targets=["q_proj", "lm_head"],
                     key=jax.random.key(5))
    model = eqx.tree_at(lambda m: [m.layers.attn.q_proj.lora.b, m.lm_head.lora.b], model,
                        [jnp.ones_like(model.layers.attn.q_proj.lora.b),
                         jnp.ones_like(model.lm_head.lora.b)])
    with pytest.raises(ConfigError, match=r"LoRA adapters on \['\.layers\.attn\.q_proj', "
                                          r"'\.lm_head'\].*merge_adapter"):
        save_pretrained(model, tmp_path / "refused")
    assert not (tmp_path / "refused" / "model.safetensors").exists()
    with pytest.raises(ConfigError, match="LoRA adapters on"):
        save_safetensors(model, tmp_path / "model.safetensors")
    with pytest.raises(ConfigError, match="merge_adapter=0 but the model has no LoRA adapters"):
        save_pretrained(base, tmp_path / "none", merge_adapter=0)
    save_pretrained(model, tmp_path / "merged", merge_adapter=1)
    loaded, _, _ = load_pretrained(tmp_path / "merged")
    merged = merge_lora(model, 1)  # computes adapter 1 (tested in test_peft)
    assert not np.array_equal(merged.lm_head.weight, base.lm_head.weight)
    for got, want in zip(jax.tree.leaves(loaded), jax.tree.leaves(merged), strict=True):
        np.testing.assert_array_equal(got, want)


TEXT = {**BASE, "num_key_value_heads": 2}


@pytest.mark.parametrize("hf, named", [
    ({"model_type": "gemma3", "text_config": {**TEXT, "model_type": "gemma3_text"}},
     r"text_config\.model_type='gemma3_text' \(the language model of model_type='gemma3'\) "
     r"is not supported \(supported: \['llama'"),
    ({"model_type": "idefics3", "text_config": TEXT},
     r"model_type='idefics3' is not supported .*composite model among \['llava', "),
    ({"model_type": "llava", "text_config": {**TEXT, "hidden_act": "gelu"}},
     r"text_config\.hidden_act='gelu'"),
    ({"model_type": "mistral3", "text_config": {**TEXT, "model_type": "mistral"}},
     r"text_config\.sliding_window is absent and transformers' mistral default"),
    ({**BASE, "model_type": "qwen3", "head_dim": 8},
     r"num_key_value_heads is absent and transformers' qwen3 default"),
])
def test_composite_and_unstated_configs_are_refused_by_name(hf, named):
    with pytest.raises(ConfigError, match=named):
        config_from_hf(hf)


def test_composite_config_reads_its_text_model_and_its_ids():
    hf = {"model_type": "llava", "tie_word_embeddings": True,
          "text_config": {**TEXT, "tie_word_embeddings": False, "eos_token_id": 2}}
    assert config_from_hf(hf) == config_from_hf({**TEXT, "tie_word_embeddings": True})
    assert generation_settings(None, hf).eos_ids == (2,)
    with pytest.raises(CheckpointError, match=r"lacks the field 'text_config\.vocab_size'"):
        config_from_hf({"model_type": "llava", "text_config": {"model_type": "llama"}})
