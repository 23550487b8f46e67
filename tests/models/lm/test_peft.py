"""PEFT-layout adapters: save, load and merge against the model's own adapter path."""

from __future__ import annotations

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file

from jaxlean._random import normal
from jaxlean.errors import ConfigError
from jaxlean.models.lm.lora import add_lora
from jaxlean.models.lm.peft import load_lora, merge_lora, save_lora
from jaxlean.models.lm.transformer import Transformer, TransformerConfig

CONFIG = TransformerConfig(vocab_size=40, hidden_size=16, intermediate_size=24, num_layers=2,
                           num_heads=4, num_kv_heads=2)
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


@pytest.mark.parametrize("field, value", [("use_rslora", True), ("use_dora", True),
                                          ("bias", "all"), ("rank_pattern", {"q_proj": 8})])
def test_refused_peft_options_are_named(tmp_path, trained, field, value):
    base, model = trained
    save_lora(model, tmp_path)
    config = json.loads((tmp_path / "adapter_config.json").read_text())
    (tmp_path / "adapter_config.json").write_text(json.dumps({**config, field: value}))
    with pytest.raises(ConfigError, match=f"{field}="):
        load_lora(base, tmp_path)


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
