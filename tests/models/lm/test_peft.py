"""PEFT-layout adapters: save, load and merge against the model's own adapter path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from jaxlean._random import normal
from jaxlean.errors import CheckpointError, ConfigError
from jaxlean.models.lm.hf import load_pretrained
from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.peft import load_lora, merge_lora, save_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

CONFIG = TransformerConfig(vocab_size=40, hidden_size=16, intermediate_size=24, num_layers=2,
                           num_heads=4, num_kv_heads=2)
PEFT_FIXTURES = Path(__file__).parent / "fixtures" / "peft"
TARGETS = ("q_proj", "v_proj", "down_proj", "lm_head")


@pytest.fixture(scope="module")
def trained():
    base = Transformer(CONFIG, key=jax.random.key(0))
    model = add_lora(base, rank=3, num_adapters=2, alpha=6.0, targets=TARGETS,
                     key=jax.random.key(1))
    # "Trained": random b, so every adapter changes the output.
    getters = [lambda m: m.layers.attn.q_proj.lora.b, lambda m: m.layers.attn.v_proj.lora.b,
               lambda m: m.layers.mlp.down_proj.lora.b, lambda m: m.lm_head.lora.b]
    keys = jax.random.split(jax.random.key(2), len(getters))
    values = [0.3 * normal(k, g(model).shape) for k, g in zip(keys, getters,
                                                                          strict=True)]
    model = eqx.tree_at(lambda m: [g(m) for g in getters], model, values)
    return base, model


def test_save_load_and_merge_compute_the_adapter(tmp_path, trained):
    base, model = trained
    tokens = jax.random.randint(jax.random.key(3), (2, 6), 0, CONFIG.vocab_size)
    want = model(tokens, adapter_ids=jnp.array([1, 1]))
    assert not np.allclose(want, base(tokens), atol=1e-3)
    save_lora(model, tmp_path, adapter=1, base_model="tiny")
    config = json.loads((tmp_path / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], config["peft_type"]) == (3, 6.0, "LORA")
    assert set(config["target_modules"]) == set(TARGETS)
    tensors = load_file(str(tmp_path / "adapter_model.safetensors"))
    name = "base_model.model.model.layers.1.self_attn.q_proj.lora_{}.weight"
    assert tensors[name.format("A")].shape == (3, 16)  # [r, in]
    assert tensors[name.format("B")].shape == (16, 3)  # [out, r]
    np.testing.assert_array_equal(tensors[name.format("B")],
                                  np.asarray(model.layers.attn.q_proj.lora.b[1, 1]).T)
    assert tensors["base_model.model.lm_head.lora_B.weight"].shape == (40, 3)
    assert len(tensors) == 2 * (3 * CONFIG.num_layers + 1)

    loaded = load_lora(base, tmp_path)
    np.testing.assert_allclose(loaded(tokens), want, rtol=1e-5, atol=1e-5)
    merged = merge_lora(model, adapter=1)
    assert merged.layers.attn.q_proj.lora is None
    np.testing.assert_allclose(merged(tokens), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("field, value", [
    ("use_dora", True), ("bias", "all"), ("alora_invocation_tokens", [5]),
    ("rank_pattern", {"model.layers.0.self_attn.q_proj": 8}), ("layers_to_transform", [0]),
    ("init_lora_weights", "pissa"), ("modules_to_save", ["norm"]),
    ("target_modules", ["q_proj", "embed_tokens"]),
    ("target_modules", r"model\.layers\.0\.self_attn\.q_proj"),
])
def test_refused_peft_options_are_named(tmp_path, trained, field, value):
    base, model = trained
    save_lora(model, tmp_path)
    config = json.loads((tmp_path / "adapter_config.json").read_text())
    (tmp_path / "adapter_config.json").write_text(json.dumps({**config, field: value}))
    with pytest.raises(ConfigError, match=f"{field}=" + re.escape(repr(value))):
        load_lora(base, tmp_path)


def test_unknown_adapter_field_is_refused_by_name(tmp_path, trained):
    base, model = trained
    save_lora(model, tmp_path)
    config = json.loads((tmp_path / "adapter_config.json").read_text())
    (tmp_path / "adapter_config.json").write_text(json.dumps({**config, "use_magic": True}))
    with pytest.raises(ConfigError, match=r"unknown field\(s\) \['use_magic'\]"):
        load_lora(base, tmp_path)


@pytest.fixture(scope="module")
def peft_base():
    return load_pretrained(PEFT_FIXTURES.parent / "llama")[0]


@eqx.filter_jit
def _logits(model, tokens):
    return model(tokens)


@pytest.mark.parametrize("name", ["rslora", "patterns", "lm_head", "all_linear"])
def test_adapters_saved_by_peft_load_and_compute_what_peft_computes(peft_base, name):
    folder = PEFT_FIXTURES / name
    want = np.load(folder / "expected.npz")
    got = _logits(load_lora(peft_base, folder), jnp.asarray(want["tokens"]))
    np.testing.assert_allclose(np.asarray(got), want["logits"], rtol=1e-5, atol=1e-5)
    unadapted = _logits(peft_base, jnp.asarray(want["tokens"]))
    assert np.abs(np.asarray(unadapted) - want["logits"]).max() > 0.1


def test_peft_adapter_settings_are_read_as_peft_reads_them(peft_base):
    rslora = load_lora(peft_base, PEFT_FIXTURES / "rslora")  # r=4, alpha=6: scale 6 / sqrt(4)
    assert rslora.layers.attn.q_proj.lora.scale == 3.0
    patterns = load_lora(peft_base, PEFT_FIXTURES / "patterns")
    attn, mlp = patterns.layers.attn, patterns.layers.mlp
    assert (attn.q_proj.lora.a.shape[-1], attn.q_proj.lora.scale) == (2, 2.0)
    assert (attn.v_proj.lora.a.shape[-1], attn.v_proj.lora.scale) == (4, 1.0)
    assert (mlp.down_proj.lora.a.shape[-1], mlp.down_proj.lora.scale) == (3, 3.0)
    head = load_lora(peft_base, PEFT_FIXTURES / "lm_head")  # PEFT loads the stored head weight
    stored = load_file(str(PEFT_FIXTURES / "lm_head" / "adapter_model.safetensors"))
    np.testing.assert_array_equal(head.lm_head.weight,
                                  stored["base_model.model.lm_head.base_layer.weight"].T)


@pytest.mark.parametrize("name, field", [("dora", "use_dora=True"),
                                         ("alora", r"alora_invocation_tokens=\[5, 7\]"),
                                         ("per_layer_rank", "rank_pattern=")])
def test_adapters_saved_by_peft_that_compute_differently_are_refused(peft_base, name, field):
    with pytest.raises(ConfigError, match=field):
        load_lora(peft_base, PEFT_FIXTURES / name)


def test_head_base_weight_of_a_tied_head_must_equal_the_embedding(tmp_path):
    tied = TransformerConfig(**{**CONFIG.__dict__, "tie_embeddings": True})
    tied_base = Transformer(tied, key=jax.random.key(5))
    save_lora(add_lora(tied_base, rank=2, targets=["lm_head"], key=jax.random.key(6)), tmp_path)
    tensors = load_file(str(tmp_path / "adapter_model.safetensors"))
    head = "base_model.model.lm_head.base_layer.weight"
    save_file({**tensors, head: np.asarray(tied_base.embed)},
              str(tmp_path / "adapter_model.safetensors"))
    assert load_lora(tied_base, tmp_path).lm_head.weight is None  # equal: PEFT's default save
    save_file({**tensors, head: np.asarray(tied_base.embed) + 1},
              str(tmp_path / "adapter_model.safetensors"))
    with pytest.raises(CheckpointError, match="differs from the tied embedding"):
        load_lora(tied_base, tmp_path)
    with pytest.raises(CheckpointError, match=r"no such directory '.*not-saved'"):
        load_lora(tied_base, tmp_path / "not-saved")


def test_live_peft_loads_the_adapter(tmp_path, trained):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    from jaxlean.models.lm.hf import save_pretrained

    base, model = trained
    save_pretrained(base, tmp_path / "base")
    save_lora(model, tmp_path / "adapter", adapter=1)
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "base",
                                                           attn_implementation="eager")
    hf = peft.PeftModel.from_pretrained(hf, tmp_path / "adapter")
    tokens = np.random.default_rng(0).integers(0, CONFIG.vocab_size, (2, 6))
    with torch.no_grad():
        want = hf(input_ids=torch.tensor(tokens)).logits.float().numpy()
    got = model(jnp.asarray(tokens), adapter_ids=jnp.array([1, 1]))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


def test_per_projection_ranks_and_scales_round_trip(tmp_path, peft_base):
    loaded = load_lora(peft_base, PEFT_FIXTURES / "patterns")
    save_lora(loaded, tmp_path)
    config = json.loads((tmp_path / "adapter_config.json").read_text())
    assert (config["rank_pattern"], config["alpha_pattern"]) == ({"v_proj": 4, "down_proj": 3},
                                                                 {"down_proj": 9.0})
    again = load_lora(peft_base, tmp_path)
    assert jax.tree.structure(again) == jax.tree.structure(loaded)
    for got, want in zip(jax.tree.leaves(again), jax.tree.leaves(loaded), strict=True):
        np.testing.assert_array_equal(got, want)
