"""Hugging Face safetensors round trips and the errors that name the bad tensor."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from jaxlean.errors import CheckpointError
from jaxlean.models.lm.hf import config_from_hf, load_safetensors, save_safetensors
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


def test_unexpected_tensor_is_named(llama_file):
    path, tensors = llama_file
    tensors["model.layers.2.input_layernorm.weight"] = np.ones(16, np.float32)
    save_file(tensors, str(path))
    with pytest.raises(CheckpointError, match=r"unexpected .*'model\.layers\.2\.input_layernorm"):
        load_safetensors(path, LLAMA)
    # A tied config does not expect an lm_head tensor.
    tied = TransformerConfig(**{**LLAMA.__dict__, "tie_embeddings": True})
    del tensors["model.layers.2.input_layernorm.weight"]
    save_file(tensors, str(path))
    with pytest.raises(CheckpointError, match=r"unexpected .*'lm_head\.weight'"):
        load_safetensors(path, tied)


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
    with pytest.raises(CheckpointError, match="rope_scaling"):
        config_from_hf({"vocab_size": 3, "rope_scaling": {"rope_type": "llama3"}})
