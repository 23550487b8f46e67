"""Parity with Hugging Face ``transformers``: committed fixtures (no torch) and a live check.

``scripts/make_hf_fixtures.py`` wrote each family's tiny random checkpoint with
``transformers`` itself, in the 5.x config layout (``config.json``) and the 4.x
one (``config_4x.json``), with the logits, log-probs and greedy tokens that
``transformers`` computed on a left-padded batch, and (``loss.npz``) its causal-LM loss
from unshifted ``labels`` and an ``attention_mask`` on a right-padded batch.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from jaxlean.errors import CheckpointError
from jaxlean.models.lm.generate import generate
from jaxlean.models.lm.hf import config_from_hf, load_pretrained, save_pretrained
from jaxlean.models.lm.transformer import Transformer, TransformerConfig, logprobs, loss

FIXTURES = Path(__file__).parent / "fixtures"
FAMILIES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.npz").is_file())


def checkpoint(tmp_path: Path, family: str, layout: str) -> Path:
    """A copy of the family's fixture whose ``config.json`` is in ``layout``."""
    folder = tmp_path / family
    shutil.copytree(FIXTURES / family, folder)
    if layout == "4.x":
        shutil.copy(folder / "config_4x.json", folder / "config.json")
    return folder


def test_fixtures_cover_every_family_and_stay_small():
    assert {"llama", "llama31", "llama_linear", "qwen2", "qwen3_tied", "mistral"} <= set(FAMILIES)
    total = sum(f.stat().st_size for f in FIXTURES.rglob("*") if f.is_file())
    assert total < 2 * 2**20, total


@pytest.mark.parametrize("layout", ["5.x", "4.x"])
@pytest.mark.parametrize("family", FAMILIES)
def test_logits_logprobs_and_greedy_tokens_equal_hugging_face(tmp_path, family, layout):
    model, config, _ = load_pretrained(checkpoint(tmp_path, family, layout))
    assert config == config_from_hf(FIXTURES / family / "config_4x.json")  # layouts agree
    want = np.load(FIXTURES / family / "expected.npz")
    tokens, mask = jnp.asarray(want["tokens"]), jnp.asarray(want["mask"])

    @jax.jit
    def outputs(model):
        return (model(tokens, attention_mask=mask),
                logprobs(model, tokens[:, :-1], targets=tokens[:, 1:], attention_mask=mask[:, :-1]))

    logits, logp = outputs(model)
    real = np.asarray(mask)
    np.testing.assert_allclose(np.asarray(logits)[real], want["logits"][real], atol=1e-4,
                               rtol=1e-4)
    np.testing.assert_allclose(np.asarray(logp)[real[:, :-1]],
                               want["logprobs"][real[:, :-1]], atol=1e-4, rtol=1e-4)
    greedy = generate(model, tokens, attention_mask=mask, max_new_tokens=want["greedy"].shape[1],
                      length_buckets="exact").tokens
    np.testing.assert_array_equal(np.asarray(greedy), want["greedy"])


@pytest.mark.parametrize("family", FAMILIES)
def test_loss_from_labels_equals_hugging_face(family):
    """``loss(model, input_ids, labels=, attention_mask=)`` is transformers' causal-LM loss:
    labels shifted inside, -100 (prompts, right padding) ignored, padding not attended to."""
    model, _, _ = load_pretrained(FIXTURES / family)
    want = np.load(FIXTURES / family / "loss.npz")
    ids, attention, labels = (jnp.asarray(want[k]) for k in ("input_ids", "attention_mask",
                                                             "labels"))
    assert (want["labels"] == -100).any() and not want["attention_mask"].all()
    eager = loss(model, ids, labels=labels, attention_mask=attention)
    jitted = jax.jit(lambda m, i, a, y: loss(m, i, labels=y, attention_mask=a))(
        model, ids, attention, labels)
    for got in (eager, jitted):
        np.testing.assert_allclose(got, want["loss"], rtol=1e-5, atol=1e-5)
    # The same loss through the shifted convention: targets are labels[:, 1:].
    shifted = jnp.concatenate([labels[:, 1:], jnp.full((3, 1), -100, labels.dtype)], axis=1)
    np.testing.assert_allclose(loss(model, ids, targets=shifted, attention_mask=attention),
                               want["loss"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["llama", "qwen3_tied"])
def test_live_loss_from_labels_equals_transformers(family):
    """With transformers installed: other right-padded batches, other labels, same loss."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        FIXTURES / family, attn_implementation="eager", dtype=torch.float32).eval()
    model, config, _ = load_pretrained(FIXTURES / family)
    rng = np.random.default_rng(7)
    for batch, length in [(2, 7), (4, 12)]:
        ids = rng.integers(1, config.vocab_size, (batch, length))
        attention = np.arange(length)[None] < rng.integers(2, length + 1, (batch, 1))
        ids[~attention] = 0
        labels = np.where(attention & (rng.random((batch, length)) < 0.8), ids, -100)
        with torch.no_grad():
            want = float(hf(input_ids=torch.tensor(ids),
                            attention_mask=torch.tensor(attention.astype(np.int64)),
                            labels=torch.tensor(labels)).loss)
        got = loss(model, jnp.asarray(ids), labels=jnp.asarray(labels),
                   attention_mask=jnp.asarray(attention))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["qwen2", "qwen3_tied", "llama31"])
def test_save_pretrained_round_trip_single_and_sharded(tmp_path, family):
    model, config, _ = load_pretrained(FIXTURES / family)
    for name, shard_bytes in [("single", 5 * 2**30), ("sharded", 20_000)]:
        out = tmp_path / name
        save_pretrained(model, out, max_shard_bytes=shard_bytes)
        assert (out / "model.safetensors.index.json").is_file() == (name == "sharded")
        again, again_config, _ = load_pretrained(out)
        assert again_config == config
        for got, ref in zip(jax.tree.leaves(again), jax.tree.leaves(model), strict=True):
            np.testing.assert_array_equal(got, ref)
    # Same tensor names as Hugging Face wrote (a tied head is not written).
    written = set(load_file(str(tmp_path / "single" / "model.safetensors")))
    stored = set(load_file(str(FIXTURES / family / "model.safetensors")))
    assert written == stored - ({"lm_head.weight"} if config.tie_embeddings else set())


LIVE = [
    TransformerConfig(vocab_size=50, hidden_size=32, intermediate_size=40, num_layers=2,
                      num_heads=4, num_kv_heads=2, rope_theta=500000.0,
                      rope_scaling=("llama3", (("factor", 8.0), ("low_freq_factor", 1.0),
                                               ("high_freq_factor", 4.0),
                                               ("original_max_position_embeddings", 8.0)))),
    TransformerConfig(vocab_size=50, hidden_size=32, intermediate_size=40, num_layers=2,
                      num_heads=4, num_kv_heads=2, qkv_bias=True),
    TransformerConfig(vocab_size=50, hidden_size=32, intermediate_size=40, num_layers=2,
                      num_heads=4, num_kv_heads=1, head_dim=16, qk_norm=True,
                      tie_embeddings=True),
    TransformerConfig(vocab_size=50, hidden_size=32, intermediate_size=40, num_layers=2,
                      num_heads=4, sliding_window=3),
]


@pytest.mark.parametrize("config", LIVE, ids=["llama3", "qwen2", "qwen3", "mistral"])
def test_live_transformers_loads_what_we_save(tmp_path, config):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = Transformer(config, key=jax.random.key(0))
    if config.qkv_bias:
        model = jax.tree.map(lambda x: x + 0.1, model)
    save_pretrained(model, tmp_path, max_shard_bytes=30_000)
    hf, info = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, output_loading_info=True, attn_implementation="eager")
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    tokens = np.random.default_rng(0).integers(0, config.vocab_size, (2, 9))
    with torch.no_grad():
        want = hf(input_ids=torch.tensor(tokens)).logits.float().numpy()
    np.testing.assert_allclose(np.asarray(model(jnp.asarray(tokens))), want, atol=1e-4,
                               rtol=1e-4)


@pytest.mark.parametrize("name, tied", [("llava", False), ("mistral3", True)])
def test_composite_checkpoint_loads_its_language_model(name, tied):
    """A vision-language checkpoint loads as its text model: logits equal transformers' on text."""
    folder = FIXTURES / "composite" / name
    model, config, _ = load_pretrained(folder)
    assert config.tie_embeddings == tied  # transformers 5 ties by the top-level field
    want = np.load(folder / "expected.npz")
    logits = jax.jit(lambda m, t: m(t))(model, jnp.asarray(want["tokens"]))
    np.testing.assert_allclose(np.asarray(logits), want["logits"], atol=1e-5, rtol=1e-5)


def test_composite_in_memory_layout_and_stray_text_tensors(tmp_path):
    """transformers' in-memory names (``model.language_model.``) load the same model; a
    tensor under the language model that this config lacks is refused by name."""
    source = FIXTURES / "composite" / "llava"
    folder = tmp_path / "llava"
    shutil.copytree(source, folder)
    tensors = load_file(str(source / "model.safetensors"))
    renamed = {name.replace("language_model.model.", "model.language_model.")
                   .replace("language_model.lm_head.", "lm_head.")
                   .replace("vision_tower.", "model.vision_tower."): value
               for name, value in tensors.items()}
    save_file(renamed, str(folder / "model.safetensors"))
    want, _, _ = load_pretrained(source)
    got, _, _ = load_pretrained(folder)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_array_equal(a, b)
    save_file({**renamed, "model.language_model.layers.2.mlp.up_proj.weight": np.ones((24, 16),
                                                                                    np.float32)},
              str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"unexpected .*'model\.language_model\.layers\.2\."):
        load_pretrained(folder)
